"""Vended storage credentials on the wire: :func:`vended` adds them to a table's
``LoadTableResult`` (when the request asks with ``X-Iceberg-Access-Delegation:
vended-credentials`` and the server has a vendor) and ``GET .../tables/{table}/credentials``
answers a ``LoadCredentialsResponse`` for a client refreshing them.

Both answer with one ``StorageCredential`` whose prefix is the table's location; the same
keys also go into the result's ``config`` for clients that read only that (older Java and
PyIceberg), with ``client.refresh-credentials-endpoint`` naming where to refresh them when
they expire (``s3.session-token-expires-at-ms``).
Access follows the grants: ``write`` on the namespace gets read/write credentials, ``read``
read-only ones (the STS vendor scopes them; the static vendor cannot).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from icepark.rest.models import LoadCredentialsResponse, StorageCredential
from icepark.rest.server.context import caller, require, state_of
from icepark.rest.server.credentials import (
    REFRESH_CREDENTIALS_ENDPOINT,
    S3_SESSION_TOKEN_EXPIRES_AT_MS,
)
from icepark.rest.server.names import check_name, parse_namespace
from icepark.rest.server.security import READ, WRITE, Principal

__all__ = ["router", "ENDPOINTS", "vended"]

router = APIRouter()
Caller = Annotated[Principal | None, Depends(caller)]

ENDPOINTS = ["GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"]
_DELEGATION = "x-iceberg-access-delegation"


def _may_write(principal: Principal | None, namespace: tuple[str, ...]) -> bool:
    return principal is None or principal.level(namespace) >= WRITE


def _credential(
    request: Request, principal: Principal | None, ident: tuple[str, ...], location: str
) -> StorageCredential | None:
    vendor = state_of(request).credentials
    if vendor is None:
        return None
    prefix = location.rstrip("/")
    config = vendor.vend(prefix, _may_write(principal, ident[:-1]))
    return StorageCredential(prefix=prefix, config=config) if config else None


def vended(
    request: Request, principal: Principal | None, ident: tuple[str, ...], location: str
) -> tuple[dict[str, str], list[StorageCredential] | None]:
    """``(config, storage-credentials)`` for a load or create answer: empty unless the
    request asks for vended credentials and the server has a vendor."""
    asked = request.headers.get(_DELEGATION, "")
    if "vended-credentials" not in [p.strip() for p in asked.split(",")]:
        return {}, None
    credential = _credential(request, principal, ident, location)
    if credential is None:
        return {}, None
    config = dict(credential.config)
    if S3_SESSION_TOKEN_EXPIRES_AT_MS in config:
        # only for credentials that expire: Java's client then refreshes through it (and it
        # insists on a session token and an expiry from the refresh, which static keys lack)
        state = state_of(request)
        base = f"v1/{quote(state.prefix, safe='')}/" if state.prefix else "v1/"
        namespace = quote("\x1f".join(ident[:-1]), safe="")
        table = quote(ident[-1], safe="")
        config[REFRESH_CREDENTIALS_ENDPOINT] = (
            f"{base}namespaces/{namespace}/tables/{table}/credentials"
        )
    return config, [credential]


@router.get("/namespaces/{namespace}/tables/{table}/credentials", name="load_credentials")
def load_credentials(
    request: Request, principal: Caller, namespace: str, table: str
) -> JSONResponse:
    ident = (*parse_namespace(namespace), check_name(table))
    require(principal, ident[:-1], READ)
    catalog = state_of(request).catalog
    location = catalog.load_table(ident).metadata.location
    credential = _credential(request, principal, ident, location)
    body = LoadCredentialsResponse(storage_credentials=[credential] if credential else [])
    return JSONResponse(body.dump(), headers={"Cache-Control": "no-store"})
