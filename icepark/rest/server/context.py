"""What every route of the server needs: the backing catalog, the principals and the token
signer (:class:`ServerState`, kept on ``app.state.icepark``), and the caller
(:func:`caller`, a FastAPI dependency that answers 401 without a valid bearer token) with the
grant check (:func:`require`, 403 when the caller's grant does not cover the namespace)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastapi import Request

from icepark.catalog.base import Catalog
from icepark.errors import ForbiddenError, NotAuthorizedError
from icepark.rest.server.metadata_cache import MetadataCache
from icepark.rest.server.plans import PlanStore
from icepark.rest.server.security import LEVEL_NAMES, Principal, Principals, TokenSigner

if TYPE_CHECKING:
    from icepark.rest.server.credentials import CredentialVendor
    from icepark.rest.server.idempotency import KeyPolicy

__all__ = ["ServerState", "state_of", "caller", "require"]


@dataclass
class ServerState:
    catalog: Catalog
    principals: Principals | None
    signer: TokenSigner
    prefix: str | None = None
    max_body_bytes: int = 16 * 1024 * 1024
    endpoints: list[str] = field(default_factory=list)
    plans: PlanStore = field(default_factory=PlanStore)
    config_defaults: dict[str, str] = field(default_factory=dict)
    credentials: CredentialVendor | None = None
    metadata: MetadataCache = field(default_factory=MetadataCache)
    idempotency: KeyPolicy | None = None  # outcomes by Idempotency-Key (None: not offered)


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.icepark
    return state


def caller(request: Request) -> Principal | None:
    """The principal the bearer token names (None when the server runs without auth)."""
    state = state_of(request)
    if state.principals is None:
        return None
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise NotAuthorizedError("Not authorized: a bearer token is required")
    client_id = state.signer.verify(token.strip())
    principal = state.principals.get(client_id) if client_id is not None else None
    if principal is None:
        raise NotAuthorizedError("Not authorized: the token is invalid or has expired")
    request.state.principal = principal.client_id
    return principal


def require(principal: Principal | None, namespace: Sequence[str], level: int) -> None:
    """Refuse (403) unless ``principal`` holds ``level`` on ``namespace``."""
    if principal is None:
        return
    if principal.level(namespace) < level:
        raise ForbiddenError(
            f"Forbidden: {principal.client_id} has no {LEVEL_NAMES[level]} grant on "
            f"namespace {'.'.join(namespace)}"
        )
