"""``Idempotency-Key`` on the server: a mutation sent again with its key is answered with the
first outcome, never applied twice (the REST spec's optional header; the model is Java's
``CatalogHandlers.withIdempotency``, with the outcomes kept in the catalog's database instead of
one process's memory, so every server process on that database agrees).

How a keyed mutation flows through :func:`once` (the routes call it after parsing the request
and checking the caller's grant; without a key, or on a server without a key store, the route
just runs):

1. the key must be a UUID in its 36-character form (400 otherwise); it is scoped by the caller
   (the principal's client id), and the request is summed up as a fingerprint (method, path,
   query and the parsed body);
2. :meth:`~icepark.catalog.idempotency_keys.IdempotencyKeys.claim` in the database: the first
   request with the key runs the route's action, which returns an :class:`Outcome` (a table's
   metadata location, a small JSON body, 204, or an error); that outcome is kept (written to
   the database behind the answer) if the spec says to finalize it (2xx and the deterministic
   4xx: 400, 404, 406, 409, 422) and released otherwise (5xx and the rest: a retry runs anew),
   then rendered;
3. a repeat finds the stored outcome and renders it again: a table answer is re-read from the
   metadata file the first request wrote (fresh vended credentials for the caller, none stored;
   if that file is gone, the table's current metadata, which the spec allows), so a replay
   carries what the first answer carried;
4. a repeat whose first request is still running waits up to ``wait_s`` for it, polling the
   database (Java's handlers wait for it too), then gets 409 ``IdempotencyKeyInProgress``
   with ``Retry-After``; a key reused for another request (another fingerprint) gets 409
   ``IdempotencyKeyReused``. The spec is silent on both; a client must not take either for a
   failed commit.

Keys live ``lifetime_s`` from their first use (advertised in ``GET /v1/config`` as
``idempotency-key-lifetime``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError

from icepark.catalog.idempotency_keys import DONE, IdempotencyKeys, KeyEntry
from icepark.errors import BadRequestError
from icepark.rest.models import IDEMPOTENCY_KEY, RestModel
from icepark.rest.server.context import state_of
from icepark.rest.server.errors import error_response, mask_secrets, status_and_type
from icepark.rest.server.security import Principal

__all__ = [
    "Outcome",
    "KeyPolicy",
    "once",
    "render_plain",
    "IN_PROGRESS",
    "REUSED",
]

IN_PROGRESS = "IdempotencyKeyInProgressException"
REUSED = "IdempotencyKeyReusedException"
# what the spec says to finalize and replay: success and the deterministic terminal 4xx
_FINAL = frozenset({200, 201, 204, 400, 404, 406, 409, 422})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_POLL_S = (0.02, 0.05, 0.1, 0.2)

_log = logging.getLogger("icepark.rest.server")


@dataclass(frozen=True)
class Outcome:
    """What a mutation answered, small enough to keep: ``body`` (a JSON answer kept as is),
    ``table`` (a table answer: ``{"location": ...}`` of the metadata file written, or
    ``{"metadata": ...}`` of a stage-create, which writes none), or an error (``error_type``,
    ``message``); a 204 has none of them."""

    status: int
    body: Any = None
    table: dict[str, Any] | None = None
    error_type: str | None = None
    message: str | None = None

    @classmethod
    def error(cls, status: int, error_type: str, message: str) -> Outcome:
        return cls(status, error_type=error_type, message=message)

    def to_json(self) -> str:
        out = {k: v for k, v in vars(self).items() if v is not None}
        return json.dumps(out, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        return cls(**json.loads(text))


def render_plain(outcome: Outcome) -> Response:
    """An outcome without a table: an ``ErrorResponse``, 204, or its JSON body."""
    if outcome.error_type is not None:
        return error_response(outcome.status, outcome.error_type, outcome.message or "")
    if outcome.status == 204:
        return Response(status_code=204)
    return JSONResponse(outcome.body, status_code=outcome.status)


@dataclass(frozen=True)
class KeyPolicy:
    """The server's key store and rules: keys live ``lifetime_s`` (advertised as
    ``lifetime``); a repeat waits up to ``wait_s`` for its first request."""

    keys: IdempotencyKeys
    lifetime: str
    lifetime_s: float
    wait_s: float = 10.0


def once(
    request: Request,
    principal: Principal | None,
    payload: RestModel | None,
    action: Callable[[], Outcome],
    render: Callable[[Outcome], Response] = render_plain,
) -> Response:
    """Run ``action`` once per ``Idempotency-Key`` and render its outcome (see the module)."""
    policy: KeyPolicy | None = state_of(request).idempotency
    sent = request.headers.get(IDEMPOTENCY_KEY)
    if policy is None or sent is None:
        return render(action())
    key = sent.strip().lower()
    if not _UUID.fullmatch(key):
        raise BadRequestError(
            f"Invalid {IDEMPOTENCY_KEY} header ({len(sent)} characters): expected a UUID in "
            "its 36-character form (RFC 9562; clients send a UUIDv7)"
        )
    scope = principal.client_id if principal is not None else ""
    fingerprint = _fingerprint(request, payload)
    deadline = time.monotonic() + policy.wait_s
    while True:
        entry: KeyEntry | None = policy.keys.claim(scope, key, fingerprint, policy.lifetime_s)
        assert entry is not None
        if entry.claim is not None:
            return _first(policy.keys, entry, action, render)
        polls = 0
        while entry is not None:
            if entry.fingerprint != fingerprint:
                return error_response(
                    409,
                    REUSED,
                    f"{IDEMPOTENCY_KEY} {key} was used for another request: a key names one "
                    "operation (send a new key for a new operation)",
                )
            if entry.state == DONE and entry.outcome is not None:
                return render(Outcome.from_json(entry.outcome))
            if time.monotonic() >= deadline:
                answer = error_response(
                    409,
                    IN_PROGRESS,
                    f"The first request with {IDEMPOTENCY_KEY} {key} has not finished: retry "
                    "later with the same key",
                )
                answer.headers["Retry-After"] = "1"
                return answer
            time.sleep(_POLL_S[min(polls, len(_POLL_S) - 1)])
            polls += 1
            entry = policy.keys.get(scope, key)
        # released (its first request failed without an outcome to keep): claim it again


def _first(
    keys: IdempotencyKeys,
    entry: KeyEntry,
    action: Callable[[], Outcome],
    render: Callable[[Outcome], Response],
) -> Response:
    """The first request with the key: run, keep or release the outcome, answer it."""
    try:
        outcome = action()
    except Exception as exc:
        known = status_and_type(exc)
        if known is None or known[0] not in _FINAL:
            _release_quietly(keys, entry)
            raise
        status, name = known
        outcome = Outcome.error(status, name, mask_secrets(str(exc)) or name)
    if outcome.status in _FINAL:
        keys.finish_soon(entry, outcome.to_json())  # written behind the answer
    else:
        _release_quietly(keys, entry)
    return render(outcome)


def _release_quietly(keys: IdempotencyKeys, entry: KeyEntry) -> None:
    try:
        keys.release(entry)
    except DBAPIError as exc:
        _log.warning("idempotency key %s: claim not released: %s", entry.key, exc.orig)


def _fingerprint(request: Request, payload: RestModel | None) -> str:
    """One request's identity: method, path, query and body (as parsed: a retry that
    re-serializes the same body is the same request)."""
    summary = {
        "method": request.method,
        "path": request.url.path,
        "query": sorted(request.query_params.multi_items()),
        "body": payload.dump() if payload is not None else None,
    }
    text = json.dumps(summary, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
