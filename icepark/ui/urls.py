"""The web page's addresses, without FastAPI: a table's page path and the full URL that
``icepark ui`` (and ``make demo``) print.

A table's identifier goes into one path segment that any name survives: each part keeps
its letters, digits, ``_`` and ``-`` and writes every other byte of its UTF-8 as ``~XX``
(``.`` as ``~2E``, ``/`` as ``~2F``), and the parts are joined by ``.``. The segment holds no
``%``, so it reads the same however often a server or test client percent-decodes the path
before routing. ``("db", "a.b")``, ``("db", "a", "b")`` and ``("db", "x/y")`` each get their
own address (``db.a~2Eb``, ``db.a.b``, ``db.x~2Fy``); :func:`identifier_of` reads it back.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

from icepark.catalog.identifiers import Identifier, to_identifier
from icepark.errors import ValidationError

__all__ = ["DEFAULT_PORT", "identifier_of", "page_url", "table_path"]

DEFAULT_PORT = 8765
_PLAIN = frozenset(string.ascii_letters + string.digits + "_-")


def _escape(part: str) -> str:
    return "".join(ch if ch in _PLAIN else "".join(f"~{b:02X}" for b in ch.encode()) for ch in part)


def _unescape(text: str) -> str:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "~":
            try:
                out += bytes.fromhex(text[i + 1 : i + 3])
            except ValueError:
                raise ValidationError(f"Invalid table address: {text!r}") from None
            i += 3
        else:
            out += text[i].encode()
            i += 1
    try:
        return out.decode()
    except UnicodeDecodeError:
        raise ValidationError(f"Invalid table address: {text!r}") from None


def identifier_of(segment: str) -> Identifier:
    """The identifier a table page's path segment names (the inverse of
    :func:`table_path`'s encoding); a plain ``db.t`` reads as ``("db", "t")``."""
    return to_identifier(tuple(_unescape(part) for part in segment.split(".")))


def table_path(table: str | Sequence[str], page: str = "") -> str:
    """The URL path of a table's page (``page`` one of ``history``, ``files``, ``query``,
    ``health``, ``badge.svg``, or empty for the overview); ``table`` is the identifier's
    parts, or a dotted name as the command line takes it."""
    base = "/t/" + ".".join(_escape(part) for part in to_identifier(table))
    return f"{base}/{page}" if page else base


def page_url(
    host: str = "127.0.0.1", port: int = DEFAULT_PORT, table: str | Sequence[str] | None = None
) -> str:
    """The address of the catalog page, or of ``table``'s page."""
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    return base + table_path(table) if table else base + "/"
