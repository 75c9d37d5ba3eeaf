"""The Iceberg REST catalog protocol: the request and response models (:mod:`.models`) that
icepark's client and server share, and the server (:func:`create_app`, :class:`Principals`,
:func:`hash_secret`), imported on first use so that importing this package needs no FastAPI."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from icepark.rest.server import Principals, create_app, hash_secret

__all__ = ["create_app", "Principals", "hash_secret"]

_SERVER_NAMES = frozenset(__all__)


def __getattr__(name: str) -> Any:
    if name in _SERVER_NAMES:
        from icepark.rest import server

        return getattr(server, name)
    raise AttributeError(f"module 'icepark.rest' has no attribute {name!r}")
