"""The REST catalog server: :func:`create_app` serves an icepark catalog over the Iceberg REST
protocol (``rest-catalog-open-api.yaml`` of Iceberg 1.10) as a FastAPI (ASGI) app.

How a request flows: the outer ASGI layer (:class:`_Envelope`) gives it a request id, refuses a
body over ``max_body_bytes`` with 413 and writes one JSON access-log line when it is answered
(no headers, query strings or bodies, so no secrets); the route's ``caller`` dependency checks
the bearer token (401) and ``require`` the grant (403); the route calls the catalog; an icepark
error becomes an ``ErrorResponse`` (:mod:`.errors`).

Routes live under ``/v1/`` or, with ``prefix``, ``/v1/<prefix>/``; ``GET /v1/config`` tells
clients the prefix (in ``overrides``) and lists the endpoints served (views and multi-table
transactions only where the backing catalog can hold them), and
``POST /v1/oauth/tokens`` issues tokens when the server has principals (:mod:`.oauth`). Over a
SQL catalog the config also advertises ``idempotency-key-lifetime``: every mutation sent with an
``Idempotency-Key`` is applied once and its outcome replayed to a retry (:mod:`.idempotency`).
``GET /healthz`` answers without auth.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse

from icepark.catalog.base import Catalog
from icepark.catalog.idempotency_keys import idempotency_keys_for
from icepark.errors import ValidationError
from icepark.rest.models import CatalogConfig, duration_seconds
from icepark.rest.server import (
    oauth,
    routes_credentials,
    routes_namespaces,
    routes_planning,
    routes_tables,
    routes_transactions,
    routes_views,
)
from icepark.rest.server.context import ServerState, caller, state_of
from icepark.rest.server.credentials import CredentialVendor
from icepark.rest.server.errors import install_error_handlers
from icepark.rest.server.idempotency import KeyPolicy
from icepark.rest.server.plans import PlanStore
from icepark.rest.server.security import Principal, Principals, TokenSigner

__all__ = ["create_app", "DEFAULT_MAX_BODY_BYTES"]

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
_access_log = logging.getLogger("icepark.rest.server.access")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def create_app(
    catalog: Catalog,
    auth: Principals | None = None,
    prefix: str | None = None,
    *,
    token_ttl_seconds: int = 3600,
    token_key: bytes | str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    scan_planning_page_size: int = 1000,
    scan_plan_ttl_seconds: float = 600.0,
    scan_planning_default: bool = False,
    credentials: CredentialVendor | None = None,
    idempotency_key_lifetime: str | None = "PT30M",
    idempotency_wait_seconds: float = 10.0,
) -> FastAPI:
    """The ASGI app (FastAPI) serving ``catalog`` over the Iceberg REST protocol, for Java,
    PyIceberg, Spark and icepark clients; run it with any ASGI server
    (``uvicorn.run(create_app(catalog))``) or with ``icepark serve``. Only what the backing
    catalog can do is advertised in ``/v1/config`` (views, multi-table transactions,
    credentials).

    Args:
        catalog: the backing catalog (SQL or file system).
        auth: None serves everyone; :class:`Principals` requires a bearer token from
            ``POST /v1/oauth/tokens`` and checks each principal's grants.
        prefix: put the catalog routes under ``/v1/<prefix>/`` (one path segment),
            announced to clients in the config's ``overrides``.
        token_ttl_seconds: how long a token lasts.
        token_key: the key tokens are signed with (default: the environment variable
            ``ICEPARK_SERVE_TOKEN_KEY``, else a random key of this process); processes
            behind one address need the same key.
        max_body_bytes: the largest request body accepted (a bigger one is answered 413).
        scan_planning_page_size: server-side scan planning answers plans of up to this many
            tasks at once and keeps bigger ones in pages of this many tasks.
        scan_plan_ttl_seconds: how long a kept plan's pages can be fetched.
        scan_planning_default: tell clients in the config's ``defaults`` to plan scans on
            the server (``rest.scan-planning.enabled``, Java's
            ``scan-planning-mode=server``).
        credentials: a vendor (:mod:`icepark.rest.server.credentials`) whose storage
            credentials go with each table loaded or created by a client asking for
            ``vended-credentials``, and from ``GET .../tables/{table}/credentials``.
        idempotency_key_lifetime: an ISO-8601 duration (None turns it off): how long the
            outcome of each mutation sent with an ``Idempotency-Key`` is kept, in the
            catalog's own database, to answer a retry of it (:mod:`.idempotency`); only a
            catalog with a SQL database keeps them.
        idempotency_wait_seconds: how long a retry whose first request still runs waits
            for it.

    Returns:
        The app.

    Raises:
        ValidationError: a prefix that is not one non-empty path segment, or an
            ``idempotency_key_lifetime`` that is not an ISO-8601 duration.
    """
    if prefix is not None:
        prefix = prefix.strip("/")
        if not prefix or "/" in prefix:
            raise ValidationError(f"Invalid prefix {prefix!r}: one non-empty path segment")
    policy = _key_policy(catalog, idempotency_key_lifetime, idempotency_wait_seconds)
    app = FastAPI(
        title="icepark REST catalog",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    endpoints = routes_namespaces.ENDPOINTS + routes_tables.ENDPOINTS + routes_planning.ENDPOINTS
    # what the backing catalog cannot do is served (406) but not advertised
    if catalog.supports_views:
        endpoints = endpoints + routes_views.ENDPOINTS
    if catalog.supports_multi_table_commits:
        endpoints = endpoints + routes_transactions.ENDPOINTS
    if credentials is not None:
        endpoints = endpoints + routes_credentials.ENDPOINTS
    app.state.icepark = ServerState(
        catalog=catalog,
        principals=auth,
        signer=TokenSigner(token_key, token_ttl_seconds),
        prefix=prefix,
        max_body_bytes=max_body_bytes,
        endpoints=endpoints,
        plans=PlanStore(scan_planning_page_size, scan_plan_ttl_seconds),
        config_defaults=(
            {"rest.scan-planning.enabled": "true", "scan-planning-mode": "server"}
            if scan_planning_default
            else {}
        ),
        credentials=credentials,
        idempotency=policy,
    )
    install_error_handlers(app)
    base = f"/v1/{quote(prefix, safe='')}" if prefix else "/v1"
    app.include_router(routes_namespaces.router, prefix=base)
    app.include_router(routes_tables.router, prefix=base)
    app.include_router(routes_planning.router, prefix=base)
    app.include_router(routes_views.router, prefix=base)
    app.include_router(routes_transactions.router, prefix=base)
    if credentials is not None:
        app.include_router(routes_credentials.router, prefix=base)
    app.add_api_route("/v1/config", _config, methods=["GET"], name="get_config")
    app.add_api_route("/v1/oauth/tokens", oauth.token_endpoint, methods=["POST"], name="get_token")
    app.add_api_route("/healthz", _healthz, methods=["GET"], name="healthz")
    app.add_middleware(_Envelope, max_body_bytes=max_body_bytes)
    return app


def _key_policy(catalog: Catalog, lifetime: str | None, wait_s: float) -> KeyPolicy | None:
    if lifetime is None:
        return None
    try:
        seconds = duration_seconds(lifetime)
    except ValueError as exc:
        raise ValidationError(f"Invalid idempotency_key_lifetime: {exc}") from None
    keys = idempotency_keys_for(catalog, catalog.properties)
    if keys is None:
        return None
    return KeyPolicy(keys, lifetime, seconds, wait_s)


def _config(
    request: Request, principal: Annotated[Principal | None, Depends(caller)]
) -> JSONResponse:
    state = state_of(request)
    overrides = {"prefix": state.prefix} if state.prefix else {}
    body = CatalogConfig(
        defaults=dict(state.config_defaults),
        overrides=overrides,
        endpoints=list(state.endpoints),
        idempotency_key_lifetime=state.idempotency.lifetime if state.idempotency else None,
    )
    return JSONResponse(body.dump())


def _healthz() -> JSONResponse:
    return JSONResponse({"status": "ok"})


class _Envelope:
    """Request id, body limit (413) and the access log, around every request."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = uuid.uuid4().hex[:16]
        scope.setdefault("state", {})
        scope["state"]["request_id"] = request_id
        status = {"code": 500}

        async def send_logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode("ascii")))
                message["headers"] = headers
            await send(message)

        try:
            replay = await self._read_body(scope, receive)
            if replay is None:
                await _send_too_large(send_logged, self.max_body_bytes)
            else:
                await self.app(scope, replay, send_logged)
        finally:
            self._log(scope, status["code"], started, request_id)

    async def _read_body(self, scope: Scope, receive: Receive) -> Receive | None:
        """Reads the body (up to the limit) so it can be refused before any work is done;
        returns a ``receive`` that replays it, or None when it is too large."""
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    if int(value) > self.max_body_bytes:
                        return None
                except ValueError:
                    pass
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    @staticmethod
    def _log(scope: Scope, status: int, started: float, request_id: str) -> None:
        if not _access_log.isEnabledFor(logging.INFO):
            return
        route = scope.get("route")
        line = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "request_id": request_id,
            "principal": scope.get("state", {}).get("principal"),
            "method": scope.get("method"),
            "path": scope.get("path"),
            "operation": getattr(route, "name", None),
            "status": status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 2),
        }
        _access_log.info(json.dumps(line, ensure_ascii=True))


async def _send_too_large(send: Send, limit: int) -> None:
    body = json.dumps(
        {
            "error": {
                "message": f"Request body larger than {limit} bytes",
                "type": "BadRequestException",
                "code": 413,
            }
        }
    ).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode("ascii")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
