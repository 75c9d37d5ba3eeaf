"""The web page's addresses, without FastAPI: a table's page path and the full URL that
``icepark ui`` (and ``make demo``) print."""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["DEFAULT_PORT", "page_url", "table_path"]

DEFAULT_PORT = 8765


def table_path(name: str, page: str = "") -> str:
    """The URL path of a table's page (``page`` one of ``history``, ``files``, ``query``,
    ``health``, ``badge.svg``, or empty for the overview)."""
    base = "/t/" + quote(name, safe="")
    return f"{base}/{page}" if page else base


def page_url(host: str = "127.0.0.1", port: int = DEFAULT_PORT, table: str | None = None) -> str:
    """The address of the catalog page, or of ``table``'s page."""
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    return base + table_path(table) if table else base + "/"
