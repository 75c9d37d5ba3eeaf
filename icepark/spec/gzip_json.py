"""Gzip-compressed metadata JSON (``*.gz.metadata.json``), inflated within bounds.

A metadata file of a few kilobytes must not become gigabytes in memory: it may inflate to at
most 256 times its size (at least 64 MiB; JSON of snapshots compresses 5-15x), which is far
above any real metadata file and far below what a crafted one asks for.
"""

from __future__ import annotations

import zlib

from icepark.errors import InvalidMetadataError

__all__ = ["GZIP_MAGIC", "gunzip_metadata"]

GZIP_MAGIC = b"\x1f\x8b"

_RATIO = 256
_FLOOR = 64 * 1024 * 1024


def gunzip_metadata(data: bytes, what: str) -> bytes:
    """The inflated bytes of gzip ``data`` (every member); ``what`` names the file in the
    :class:`~icepark.errors.InvalidMetadataError` raised when it is corrupt or inflates past
    its bound."""
    limit = max(_FLOOR, _RATIO * len(data))
    out = bytearray()
    rest = data
    try:
        while rest:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += inflater.decompress(rest, limit + 1 - len(out))
            if len(out) > limit:
                raise InvalidMetadataError(
                    f"Cannot decompress gzip {what}: it inflates to more than {limit:,} bytes"
                )
            if not inflater.eof:
                raise InvalidMetadataError(f"Cannot decompress gzip {what}: truncated stream")
            rest = inflater.unused_data
    except zlib.error as exc:
        raise InvalidMetadataError(f"Cannot decompress gzip {what}: {exc}") from exc
    return bytes(out)
