"""The Iceberg REST catalog server over any icepark catalog: :func:`create_app` makes the ASGI
app (needs ``icepark[server]``: FastAPI and uvicorn), :class:`Principals` says who may call it
and :func:`hash_secret` hashes a client secret for the principals file (these two need no
FastAPI, so ``icepark serve hash-secret`` runs without the extra)."""

from typing import TYPE_CHECKING, Any

from icepark.rest.server.security import Principals, hash_secret

if TYPE_CHECKING:
    from icepark.rest.server.app import create_app

__all__ = ["create_app", "Principals", "hash_secret"]

MISSING_EXTRA = "The REST catalog server needs FastAPI and uvicorn: pip install 'icepark[server]'"


def __getattr__(name: str) -> Any:
    if name == "create_app":
        try:
            from icepark.rest.server.app import create_app
        except ImportError as exc:
            if exc.name in ("fastapi", "starlette", "pydantic"):
                raise ImportError(MISSING_EXTRA) from exc
            raise
        return create_app
    raise AttributeError(f"module 'icepark.rest.server' has no attribute {name!r}")
