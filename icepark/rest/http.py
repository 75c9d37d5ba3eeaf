"""The REST catalog's transport: one ``requests`` session, JSON bodies through the models,
errors mapped to icepark's typed errors, and retries only where they are safe.

How a request flows (:meth:`RestClient.call`):

1. the URL is ``{uri}/v1/{prefix}/...`` (path segments percent-encoded; a namespace's levels
   joined by the unit separator ``%1F``, as the spec and Java encode them);
2. the session's headers (``header.<Name>`` properties, ``X-Iceberg-Access-Delegation:
   vended-credentials`` unless a ``header.X-Iceberg-Access-Delegation`` property says
   otherwise, as PyIceberg does) are set, then the auth adds its header or signs the request
   (:mod:`icepark.rest.auth`);
3. the answer: 2xx is parsed into the response model; 429 and 503 are retried with
   exponential backoff that honours ``Retry-After`` (bounded by ``rest.client.max-retries``
   and ``rest.client.max-retry-wait-ms``), except that a commit answered 503 is not retried:
   its outcome is unknown; a 401 lets the auth refresh its token and the request is sent once
   more; every other error status maps to a typed error by the operation's error kind
   (:data:`ErrorKind`, as Java's ``ErrorHandlers``);
4. a connection error is retried only when the request is idempotent (GET, HEAD) or was
   surely never sent (the connection could not be opened); a commit whose connection broke
   after sending, or that was answered 500/502/503/504, raises
   :class:`~icepark.errors.CommitStateUnknownError`: the commit may have landed, so the
   caller must delete nothing it wrote for it;
5. unless the server advertises ``idempotency-key-lifetime`` in its config
   (:attr:`RestClient.idempotency_lifetime`, as Java's client): then every mutation carries an
   ``Idempotency-Key`` (a fresh UUIDv7 per operation, the same on each of its retries), and a
   mutation whose connection broke or timed out after sending, or that a gateway answered
   502/503/504, or whose first attempt the server still runs (409
   ``IdempotencyKeyInProgressException``), is sent again with its key, within the retry
   budget and the key's lifetime: the server answers a repeat with the first outcome and never
   applies it twice. Only when the budget is spent is a commit's state unknown. A 500 is not
   retried (the server itself does not know the outcome, and does not keep it).

No header value is logged or put in an error message: only the method, the path and the
server's own error message are.
"""

from __future__ import annotations

import email.utils
import logging
import os
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import quote

import requests

from icepark.errors import (
    BadRequestError,
    CommitFailedError,
    CommitStateUnknownError,
    ForbiddenError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    NotAuthorizedError,
    RestError,
    ServerError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    UnsupportedOperationError,
    ViewAlreadyExistsError,
)
from icepark.rest.models import IDEMPOTENCY_KEY, ErrorResponse, RestModel, duration_seconds

if TYPE_CHECKING:
    from icepark.rest.auth import RestAuth

__all__ = ["RestClient", "ErrorKind", "encode_namespace", "RetrySettings", "uuid7"]

log = logging.getLogger(__name__)

M = TypeVar("M", bound=RestModel)

ErrorKind = Literal[
    "default",
    "namespace",
    "drop-namespace",
    "table",
    "create-table",
    "commit",
    "create-commit",
    "view",
    "view-commit",
]
"""How an operation's error statuses read (Java's ``ErrorHandlers``): ``namespace`` (404 no
such namespace, 409 it exists), ``drop-namespace`` (409 not empty), ``table`` (404 no such
table or namespace by the error's type, 409 the table exists), ``create-table`` (as ``table``,
404 meaning the namespace), ``commit`` (404 no such table, 409 commit failed, 500/502/503/504
state unknown; also the multi-table commit), ``create-commit`` (a stage-create's commit: 404
no such namespace, 409 the table exists, 5xx state unknown), ``view`` (404 no such view or
namespace by the error's type, 409 the view exists), ``view-commit`` (404 no such view, 409
commit failed, 5xx state unknown)."""

ACCESS_DELEGATION = "X-Iceberg-Access-Delegation"
_IDEMPOTENT = frozenset({"GET", "HEAD"})
_COMMIT_UNKNOWN = frozenset({500, 502, 503, 504})
_NAMESPACE_KINDS = ("namespace", "drop-namespace", "create-table", "create-commit")
_COMMIT_KINDS = frozenset({"commit", "create-commit", "view-commit"})
# answers to a keyed mutation that a retry with its key may resolve: a gateway's (the server's
# answer may be lost behind it) and the server's own "the first request still runs"
_KEYED_RETRY = frozenset({502, 503, 504})
KEY_IN_PROGRESS = "IdempotencyKeyInProgressException"
KEY_REUSED = "IdempotencyKeyReusedException"


def uuid7() -> uuid.UUID:
    """A UUIDv7 (RFC 9562): 48 bits of Unix time in milliseconds, then random bits, so keys
    sort by time (what the REST spec asks of an ``Idempotency-Key``)."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # variant 10
    return uuid.UUID(int=value)


def encode_namespace(namespace: Sequence[str]) -> str:
    """A namespace as one path segment: levels percent-encoded, joined by ``%1F``."""
    return "%1F".join(quote(level, safe="") for level in namespace)


class RetrySettings:
    """``rest.client.max-retries`` (5), ``rest.client.max-retry-wait-ms`` (30 s: the longest
    single wait, ``Retry-After`` included) and ``rest.client.base-retry-wait-ms`` (100)."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        self.max_retries = int(properties.get("rest.client.max-retries", "5"))
        self.max_wait = int(properties.get("rest.client.max-retry-wait-ms", "30000")) / 1000
        self.base_wait = int(properties.get("rest.client.base-retry-wait-ms", "100")) / 1000

    def wait(self, attempt: int, retry_after: str | None) -> float:
        """Seconds to wait before retry ``attempt`` (1-based): the server's ``Retry-After``
        when it gives one, else exponential backoff with jitter; never above the bound."""
        advised = _parse_retry_after(retry_after)
        if advised is None:
            backoff = self.base_wait * (2 ** (attempt - 1))
            advised = backoff * (0.5 + random.random() / 2)
        return max(0.0, min(advised, self.max_wait))


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class RestClient:
    """Requests to one REST catalog; ``prefix`` is set once the catalog's config is known."""

    def __init__(
        self,
        uri: str,
        properties: Mapping[str, str],
        auth: RestAuth | None = None,
        session: requests.Session | None = None,
    ) -> None:
        self.uri = uri.rstrip("/")
        self.prefix = ""
        self.auth = auth
        self.retry = RetrySettings(properties)
        connect = int(properties.get("rest.client.connection-timeout-ms", "10000")) / 1000
        read = int(properties.get("rest.client.socket-timeout-ms", "120000")) / 1000
        self.timeout = (connect, read)
        self.session = session or requests.Session()
        self.session.headers.update(_headers(properties))
        self.last_etag: str | None = None  # the ETag of the last answer of ``call``
        # seconds a mutation's Idempotency-Key may be reused (the server's advertised lifetime);
        # None: the server keeps no outcomes, no keys are sent
        self.idempotency_lifetime: float | None = None

    def __repr__(self) -> str:
        return f"RestClient({self.uri!r}, prefix={self.prefix!r})"

    def close(self) -> None:
        self.session.close()

    def use_key_lifetime(self, advertised: str | None) -> None:
        """Send ``Idempotency-Key`` with every change, reusable for ``advertised`` (the
        server's ``idempotency-key-lifetime``); none when the server advertises none or one
        that does not parse."""
        self.idempotency_lifetime = None
        if advertised is not None:
            try:
                self.idempotency_lifetime = duration_seconds(advertised)
            except ValueError as exc:
                log.warning("REST catalog at %s: idempotency ignored: %s", self.uri, exc)

    # -- URLs ------------------------------------------------------------------------------

    def url(self, *segments: str, prefixed: bool = True) -> str:
        """``{uri}/v1/{prefix}/{segments...}``; segments must be encoded already."""
        parts = [self.uri, "v1"]
        if prefixed and self.prefix:
            parts.append("/".join(quote(p, safe="") for p in self.prefix.split("/") if p))
        parts.extend(segments)
        return "/".join(parts)

    # -- calls -----------------------------------------------------------------------------

    def call(
        self,
        method: str,
        url: str,
        operation: str,
        *,
        body: RestModel | Mapping[str, Any] | None = None,
        query: Mapping[str, str] | None = None,
        response: type[M] | None = None,
        errors: ErrorKind = "default",
        headers: Mapping[str, str] | None = None,
        mutation: bool = False,
    ) -> M | None:
        """Send one request and return its parsed answer (None for 204, 304 or no model).

        ``operation`` names the call in errors ("load table db.t"); ``headers`` are sent
        with this request only (``If-None-Match``: a 304 answer returns None). A
        ``mutation`` (a catalog change: create, commit, drop, rename, register, namespace
        and view changes) carries an ``Idempotency-Key`` when the server keeps outcomes."""
        answer = self._send(
            method, url, operation, body, query, errors, headers=headers, mutation=mutation
        )
        self.last_etag = answer.headers.get("ETag")
        if response is None or answer.status_code in (204, 304) or not answer.content:
            return None
        try:
            return response.model_validate(answer.json())
        except ValueError as exc:
            raise RestError(
                f"Cannot {operation}: the REST catalog's answer is not a valid "
                f"{response.__name__}: {exc}",
                status=answer.status_code,
            ) from exc

    def change(
        self,
        method: str,
        url: str,
        operation: str,
        *,
        body: RestModel | Mapping[str, Any] | None = None,
        query: Mapping[str, str] | None = None,
        response: type[M] | None = None,
        errors: ErrorKind = "default",
    ) -> M | None:
        """:meth:`call` for a catalog change (create, commit, drop, rename, register, namespace
        and view changes): it carries an ``Idempotency-Key`` when the server keeps outcomes."""
        return self.call(
            method, url, operation, body=body, query=query, response=response, errors=errors,
            mutation=True,
        )  # fmt: skip

    def exists(self, url: str, operation: str, errors: ErrorKind) -> bool:
        """A HEAD request: True on 2xx, False on 404, a typed error otherwise."""
        answer = self._send("HEAD", url, operation, None, None, errors, allow_404=True)
        return answer.status_code != 404

    def _send(
        self,
        method: str,
        url: str,
        operation: str,
        body: RestModel | Mapping[str, Any] | None,
        query: Mapping[str, str] | None,
        errors: ErrorKind,
        allow_404: bool = False,
        headers: Mapping[str, str] | None = None,
        mutation: bool = False,
    ) -> requests.Response:
        payload = body.dump() if isinstance(body, RestModel) else body
        commit = errors in _COMMIT_KINDS
        attempt = 0
        refreshed = False
        sent_headers = dict(headers or {})
        keyed = _Keyed.start(self.idempotency_lifetime) if mutation else None
        if keyed is not None:
            sent_headers[IDEMPOTENCY_KEY] = keyed.key
        while True:
            request = requests.Request(
                method, url, params=query, json=payload, headers=sent_headers
            )
            prepared = self.session.prepare_request(request)
            if self.auth is not None:
                self.auth.apply(prepared)
            log.debug("REST %s %s", method, url)
            try:
                answer = self.session.send(prepared, timeout=self.timeout)
            except requests.RequestException as exc:
                unsent = _surely_not_sent(exc)
                if keyed is not None and not unsent:
                    wait = self.retry.wait(attempt + 1, None)
                    if keyed.may_retry(attempt, self.retry.max_retries, wait):
                        attempt += 1
                        name = type(exc).__name__
                        log.info(
                            "REST %s %s: %s, retry %d with its key", method, url, name, attempt
                        )
                        time.sleep(wait)
                        continue
                if commit and not unsent:
                    tried = (
                        f", sent {attempt + 1} times with one {IDEMPOTENCY_KEY}" if keyed else ""
                    )
                    raise CommitStateUnknownError(
                        f"Cannot tell whether {operation} landed: the connection to the REST "
                        f"catalog failed after the request was sent ({type(exc).__name__}"
                        f"{tried})"
                    ) from None
                attempt += 1
                if (unsent or method in _IDEMPOTENT) and attempt <= self.retry.max_retries:
                    time.sleep(self.retry.wait(attempt, None))
                    continue
                raise RestError(
                    f"Cannot {operation}: the REST catalog at {self.uri} did not answer "
                    f"({type(exc).__name__}: {_first_line(exc)})"
                ) from None
            status = answer.status_code
            if status < 300 or status == 304 or (allow_404 and status == 404):
                return answer
            if status == 401 and not refreshed and self.auth is not None and self.auth.refresh():
                refreshed = True
                continue
            retryable = status == 429 or (status == 503 and not commit)
            if keyed is not None and (status in _KEYED_RETRY or _in_progress(answer)):
                wait = self.retry.wait(attempt + 1, answer.headers.get("Retry-After"))
                retryable = keyed.may_retry(attempt, self.retry.max_retries, wait)
            if retryable and attempt < self.retry.max_retries:
                attempt += 1
                wait = self.retry.wait(attempt, answer.headers.get("Retry-After"))
                log.info(
                    "REST %s %s: HTTP %d, retry %d in %.2fs", method, url, status, attempt, wait
                )
                answer.close()
                time.sleep(wait)
                continue
            raise _error(answer, operation, errors)


class _Keyed:
    """One mutation's ``Idempotency-Key`` and how long it may be sent again."""

    def __init__(self, lifetime: float) -> None:
        self.key = str(uuid7())
        self.lifetime = lifetime
        self.started = time.monotonic()

    @classmethod
    def start(cls, lifetime: float | None) -> _Keyed | None:
        return cls(lifetime) if lifetime is not None else None

    def may_retry(self, attempt: int, max_retries: int, wait: float) -> bool:
        """Whether retry ``attempt + 1`` may go out after ``wait`` seconds: within the retry
        budget and before the key's lifetime ends (the server may have forgotten it then)."""
        within = time.monotonic() + wait - self.started < self.lifetime
        return attempt < max_retries and within


def _in_progress(answer: requests.Response) -> bool:
    """409 saying the key's first request still runs at the server (not a failed commit)."""
    if answer.status_code != 409:
        return False
    try:
        return bool(ErrorResponse.model_validate(answer.json()).error.type == KEY_IN_PROGRESS)
    except ValueError:
        return False


def client_version() -> str:
    """icepark's version, as the client names itself (``User-Agent``, reports)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("icepark")
    except PackageNotFoundError:
        return "unknown"


def _headers(properties: Mapping[str, str]) -> dict[str, str]:
    agent = f"icepark/{client_version()}"
    headers = {
        "Content-Type": "application/json",
        "User-Agent": agent,
        "X-Client-Version": agent,
        ACCESS_DELEGATION: "vended-credentials",
    }
    for key, value in properties.items():
        if key.startswith("header."):
            headers[key[len("header.") :]] = value
    return {k: v for k, v in headers.items() if v != ""}


def _surely_not_sent(exc: requests.RequestException) -> bool:
    """True when the connection could not be opened: the server never saw the request."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    if not isinstance(exc, requests.exceptions.ConnectionError):
        return False
    from urllib3.exceptions import NewConnectionError

    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, NewConnectionError):
            return True
        reason = getattr(cause, "reason", None)
        if isinstance(reason, BaseException):
            cause = reason
            continue
        args = getattr(cause, "args", ())
        nested = next((a for a in args if isinstance(a, BaseException)), None)
        cause = nested or cause.__cause__ or cause.__context__
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()
    return text[0][:200] if text else type(exc).__name__


def _error(answer: requests.Response, operation: str, kind: ErrorKind) -> Exception:
    """The typed error for an error answer (the server's message and type kept)."""
    status = answer.status_code
    error_type, message = "", ""
    try:
        parsed = ErrorResponse.model_validate(answer.json())
        error_type, message = parsed.error.type, parsed.error.message
    except ValueError:
        message = (answer.text or "").strip()[:500]
    detail = (
        f"{message} ({error_type}, HTTP {status})" if error_type else f"{message} (HTTP {status})"
    )
    text = f"Cannot {operation}: {detail}"
    if status == 404:
        if error_type == "NoSuchNamespaceException" or kind in _NAMESPACE_KINDS:
            return NoSuchNamespaceError(text)
        if kind in ("table", "commit"):
            return NoSuchTableError(text)
        if kind in ("view", "view-commit"):
            return NoSuchViewError(text)
    if status == 409 and error_type == KEY_IN_PROGRESS:
        # never a failed commit (whose retry would re-apply it): the first request with the
        # key still runs at the server, so whether it lands is not known yet
        if kind in _COMMIT_KINDS:
            return CommitStateUnknownError(f"Cannot tell whether {operation} landed: {detail}")
        return RestError(text, status, error_type)
    if status == 409 and error_type == KEY_REUSED:  # refused unapplied: a client bug
        return RestError(text, status, error_type)
    if status == 409:
        if kind == "namespace":
            return NamespaceAlreadyExistsError(text)
        if kind == "drop-namespace":
            return NamespaceNotEmptyError(text)
        if kind in ("table", "create-table", "create-commit"):
            return TableAlreadyExistsError(text)
        if kind == "view":
            return ViewAlreadyExistsError(text)
        if kind in ("commit", "view-commit"):
            return CommitFailedError(text)
    if kind in _COMMIT_KINDS and status in _COMMIT_UNKNOWN:
        return CommitStateUnknownError(
            f"Cannot tell whether {operation} landed: the REST catalog answered HTTP {status}"
            f" ({message or error_type or 'no message'})"
        )
    if status == 400:
        if error_type == "NamespaceNotEmptyException":
            return NamespaceNotEmptyError(text)
        return BadRequestError(text, status, error_type)
    if status == 401:
        return NotAuthorizedError(f"Not authorized to {operation}: {detail}", status, error_type)
    if status == 403:
        return ForbiddenError(f"Forbidden to {operation}: {detail}", status, error_type)
    if status in (405, 406, 501):
        return UnsupportedOperationError(text)
    if status == 503:
        return ServiceUnavailableError(
            f"Cannot {operation}: the REST catalog is unavailable: {detail}", status, error_type
        )
    if status >= 500:
        return ServerError(text, status, error_type)
    return RestError(text, status, error_type)
