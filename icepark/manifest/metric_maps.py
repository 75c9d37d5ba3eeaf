"""Reading the metric maps of manifest entries without decoding them whole.

A data file's metrics are Avro arrays of ``{key: int, value: long | bytes}`` records, one per
column: the column sizes, value, null and NaN counts, then the lower and upper bounds. A
pruning scan (:mod:`icepark.manifest.pruned`) needs only the bounds of the filtered columns,
and of the count maps only where they start (they are decoded if an evaluator asks).

:func:`metric_map_reader` reads one map, for the entries the scanner reads field by field;
most entries are read with one pattern match for all their fields after the file path
(:mod:`icepark.avro.pattern_run`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from icepark.avro.blocks import (
    VARINT,
    UnsupportedAvroError,
    compile_skipper,
    read_long,
    resolve_named,
)
from icepark.avro.file import write_long
from icepark.avro.scanner import Reader
from icepark.errors import InvalidAvroFileError

__all__ = ["count_map_reader", "metric_map_reader"]

_PAIR = b"(?:" + VARINT + VARINT + b")"


@lru_cache(maxsize=1024)
def _pairs_with_keys(n: int, keys: tuple[bytes, ...]) -> re.Pattern[bytes]:
    """A pattern matching ``n`` pairs of ints or longs; group ``i + 1`` is the value of the
    last pair whose key is encoded as ``keys[i]`` (unset when there is none)."""
    find = b"".join(
        b"(?=(?:" + _PAIR + b"{0,%d}" % (n - 1) + re.escape(k) + b"(" + VARINT + b"))?)"
        for k in keys
    )
    return re.compile(find + _PAIR + b"{%d}" % n)


def _block_count(data: bytes, pos: int) -> tuple[int, int]:
    """The item count of the array block at ``pos`` and where its items start (a block
    written with its size in bytes gives a negative count, then the size)."""
    n, pos = read_long(data, pos)
    if n < 0:
        n = -n
        _, pos = read_long(data, pos)
    return n, pos


@lru_cache(maxsize=256)
def count_map_reader(field_ids: frozenset[int]) -> Reader:
    """Reads an array of ``{key: int, value: long}`` records into a dict of the keys in
    ``field_ids``. A map written as one block of fewer than 64 items (the usual case) is
    matched by one regular expression that also captures the wanted values."""
    fids = sorted(field_ids)
    keys = tuple(write_long(fid) for fid in fids)
    groups = list(enumerate(fids, 1))

    def read_slow(data: bytes, pos: int) -> tuple[Any, int]:
        out: dict[int, int] = {}
        while True:
            n, pos = _block_count(data, pos)
            if n == 0:
                return out, pos
            m = _pairs_with_keys(n, keys).match(data, pos)
            if m is None:
                raise InvalidAvroFileError("truncated block")
            for g, fid in groups:
                start = m.start(g)
                if start >= 0:
                    out[fid] = read_long(data, start)[0]
            pos = m.end()

    matchers: list[Callable[[bytes, int], re.Match[bytes] | None] | None] = [None] * 64

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        b = data[pos]
        if b == 0:
            return {}, pos + 1
        if b < 0x80 and not b & 1:
            match = matchers[b >> 1]
            if match is None:
                match = matchers[b >> 1] = _pairs_with_keys(b >> 1, keys).match
            m = match(data, pos + 1)
            if m is not None:
                end = m.end()
                if data[end] == 0:
                    out: dict[int, int] = {}
                    for g, fid in groups:
                        start = m.start(g)
                        if start >= 0:
                            out[fid] = read_long(data, start)[0]
                    return out, end + 1
        return read_slow(data, pos)

    return read


def _bounds_map_reader(field_ids: frozenset[int]) -> Reader:
    """Reads an array of ``{key: int, value: bytes}`` records into a dict of the keys in
    ``field_ids``."""
    one_byte = {fid << 1: fid for fid in field_ids if 0 <= fid < 64}  # zig-zag encodings

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        out: dict[int, bytes] = {}
        while True:
            n, pos = _block_count(data, pos)
            if n == 0:
                return out, pos
            for _ in range(n):
                key = data[pos]
                size = data[pos + 1]
                if key < 0x80 and not size & 0x81:  # one-byte key and length
                    size = (size >> 1) + pos + 2
                    if key in one_byte:
                        out[one_byte[key]] = data[pos + 2 : size]
                    pos = size
                    continue
                key, pos = read_long(data, pos)
                size, pos = read_long(data, pos)
                if size < 0:
                    raise InvalidAvroFileError("negative length")
                if key in field_ids:
                    out[key] = data[pos : pos + size]
                pos += size

    return read


def _map_values(avro: Any, named: Mapping[str, Any]) -> str | None:
    """``long`` or ``bytes`` for an array of ``{key: int, value: long | bytes}`` records."""
    if not (isinstance(avro, dict) and avro.get("type") == "array"):
        return None
    item = resolve_named(avro["items"], named)
    fields = item.get("fields", []) if isinstance(item, dict) else []
    kinds = [resolve_named(f["type"], named) for f in fields]
    kinds = [k.get("type") if isinstance(k, dict) else k for k in kinds]
    if len(kinds) != 2 or kinds[0] != "int" or kinds[1] not in ("long", "bytes"):
        return None
    return str(kinds[1])


def metric_map_reader(
    avro: Any, named: dict[str, Any], field_ids: frozenset[int], values: str
) -> Reader:
    """A reader for a metrics map: an array of ``k_v`` records with an int key. A bounds map
    (``values`` is ``bytes``) is read into a dict of the wanted keys; of a count map only its
    position is kept (:func:`count_map_reader` decodes it later)."""
    if _map_values(avro, named) != values:
        raise UnsupportedAvroError(f"unexpected metrics map {avro!r}")
    if values == "bytes":
        return _bounds_map_reader(field_ids)
    skip = compile_skipper(avro, named)

    def position(data: bytes, pos: int) -> tuple[Any, int]:
        return pos, skip(data, pos)

    return position
