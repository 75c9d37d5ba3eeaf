"""The Iceberg REST catalog server over any icepark catalog (needs ``icepark[server]``:
FastAPI and uvicorn): :func:`create_app` makes the ASGI app, :class:`Principals` says who may
call it and :func:`hash_secret` hashes a client secret for the principals file."""

from icepark.rest.server.app import create_app
from icepark.rest.server.security import Principals, hash_secret

__all__ = ["create_app", "Principals", "hash_secret"]
