"""A local, read-only web page over an icepark catalog (``icepark ui``): the catalog's tables,
and per table its schema and history, files and partitions, scan pruning and health.

:func:`create_ui_app` (in :mod:`icepark.ui.app`) builds the FastAPI app; it needs the server
extra (FastAPI, uvicorn, Jinja2) and is imported on first use, so importing this package does
not need them."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from icepark.ui.app import create_ui_app

__all__ = ["create_ui_app"]


def __getattr__(name: str) -> Any:
    if name == "create_ui_app":
        from icepark.ui.app import create_ui_app

        return create_ui_app
    raise AttributeError(f"module 'icepark.ui' has no attribute {name!r}")
