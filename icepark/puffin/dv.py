"""Deletion vectors: the ``deletion-vector-v1`` Puffin blob (format/puffin-spec.md).

Blob layout: a 4-byte big-endian length of ``magic + bitmap``, the magic ``D1 D3 39 64``,
a portable 64-bit roaring bitmap, and a 4-byte big-endian CRC-32 of ``magic + bitmap``.

The portable 64-bit roaring format: an 8-byte little-endian count of 32-bit bitmaps, then for
each, in ascending key order, a 4-byte little-endian key (the high 32 bits of its positions)
and the portable serialization of a 32-bit roaring bitmap (the low 32 bits). Positions are
non-negative longs, so keys must be below 2^31. Bitmaps are run-optimised before writing, as
Java does, so serialising a position set reproduces Java's bytes exactly.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable

from pyroaring import BitMap

from icepark.errors import InvalidValueError

__all__ = [
    "DELETION_VECTOR_MAGIC",
    "serialize_roaring64",
    "deserialize_roaring64",
    "serialize_deletion_vector",
    "deserialize_deletion_vector",
    "positions_to_bitmaps",
    "bitmaps_to_positions",
]

DELETION_VECTOR_MAGIC = b"\xd1\xd3\x39\x64"
_MAX_KEY = 2**31 - 1
_LOW_MASK = 0xFFFFFFFF


def positions_to_bitmaps(positions: Iterable[int]) -> dict[int, BitMap]:
    """Split positions into 32-bit bitmaps keyed by their high 32 bits."""
    out: dict[int, BitMap] = {}
    for p in positions:
        p = int(p)
        if p < 0 or (p >> 32) > _MAX_KEY:
            raise InvalidValueError(f"Invalid deleted row position {p}: must be in [0, 2^63)")
        key = p >> 32
        bm = out.get(key)
        if bm is None:
            bm = out[key] = BitMap()
        bm.add(p & _LOW_MASK)
    return out


def bitmaps_to_positions(bitmaps: dict[int, BitMap]) -> list[int]:
    """All positions of keyed 32-bit bitmaps, ascending."""
    out: list[int] = []
    for key in sorted(bitmaps):
        base = key << 32
        out.extend(base + v for v in bitmaps[key])
    return out


def serialize_roaring64(bitmaps: dict[int, BitMap]) -> bytes:
    """The portable 64-bit roaring serialization of keyed 32-bit bitmaps (empty ones dropped)."""
    keys = [k for k in sorted(bitmaps) if len(bitmaps[k])]
    parts = [struct.pack("<Q", len(keys))]
    for key in keys:
        if not 0 <= key <= _MAX_KEY:
            raise InvalidValueError(f"Roaring bitmap key {key} is out of range [0, 2^31)")
        bm = BitMap(bitmaps[key])
        bm.run_optimize()
        parts.append(struct.pack("<I", key))
        parts.append(bm.serialize())
    return b"".join(parts)


def deserialize_roaring64(data: bytes, location: str = "<bytes>") -> dict[int, BitMap]:
    """Keyed 32-bit bitmaps from portable 64-bit roaring bytes; checks keys are sorted,
    distinct and below 2^31 and that no bytes are left over."""
    view = memoryview(data)
    if len(view) < 8:
        raise InvalidValueError(f"Truncated 64-bit roaring bitmap in {location}")
    (count,) = struct.unpack_from("<Q", view, 0)
    if count > len(view):
        raise InvalidValueError(f"Invalid roaring bitmap count {count} in {location}")
    offset = 8
    out: dict[int, BitMap] = {}
    last = -1
    for _ in range(count):
        if offset + 4 > len(view):
            raise InvalidValueError(f"Truncated 64-bit roaring bitmap in {location}")
        (key,) = struct.unpack_from("<I", view, offset)
        if key > _MAX_KEY:
            raise InvalidValueError(f"Invalid unsigned key: Key {key} is too large in {location}")
        if key <= last:
            raise InvalidValueError(
                f"Roaring bitmap keys must be sorted and distinct in {location}: {key} after {last}"
            )
        last = key
        offset += 4
        try:
            bm = BitMap.deserialize(bytes(view[offset:]))
        except (ValueError, OverflowError, IndexError) as e:  # IndexError: a truncated bitmap
            raise InvalidValueError(f"Invalid 32-bit roaring bitmap in {location}: {e}") from None
        # Deserialising keeps the containers as stored, so re-serialising gives the size read.
        offset += len(bm.serialize())
        out[key] = bm
    if offset != len(view):
        raise InvalidValueError(
            f"Invalid 64-bit roaring bitmap in {location}: {len(view) - offset} trailing bytes"
        )
    return out


def serialize_deletion_vector(positions: Iterable[int] | dict[int, BitMap]) -> bytes:
    """The ``deletion-vector-v1`` blob of a set of deleted positions."""
    bitmaps = positions if isinstance(positions, dict) else positions_to_bitmaps(positions)
    body = DELETION_VECTOR_MAGIC + serialize_roaring64(bitmaps)
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def deserialize_deletion_vector(data: bytes, location: str = "<bytes>") -> dict[int, BitMap]:
    """The keyed bitmaps of a ``deletion-vector-v1`` blob, after checking its length, magic
    and CRC-32."""
    if len(data) < 12:
        raise InvalidValueError(f"Truncated deletion vector in {location}: {len(data)} bytes")
    (length,) = struct.unpack_from(">I", data, 0)
    if length != len(data) - 8:
        raise InvalidValueError(
            f"Invalid deletion vector length in {location}: {length}, blob holds {len(data) - 8}"
        )
    body = data[4 : 4 + length]
    if body[:4] != DELETION_VECTOR_MAGIC:
        raise InvalidValueError(f"Invalid deletion vector magic in {location}: {body[:4].hex()}")
    (crc,) = struct.unpack_from(">I", data, 4 + length)
    actual = zlib.crc32(body)
    if crc != actual:
        raise InvalidValueError(
            f"Invalid deletion vector CRC in {location}: "
            f"stored {crc:#010x}, computed {actual:#010x}"
        )
    return deserialize_roaring64(body[4:], location)
