"""Reading the metric maps of manifest entries without decoding them whole.

A data file's metrics are Avro arrays of ``{key: int, value: long | bytes}`` records, one per
column: the column sizes, value, null and NaN counts, then the lower and upper bounds. A
pruning scan (:mod:`icepark.manifest.pruned`) needs only the bounds of the filtered columns,
and of the count maps only where they start (they are decoded if an evaluator asks).

:func:`metric_map_reader` reads one map. :func:`metrics_run` reads a run of these maps that
follow each other in the data file record with one regular expression match per entry.
Entries of one table have the same maps with the same number of items (their "shape"), so a
pattern is compiled per shape and tried first on the next entry: the item counts are literal
bytes in it and each item has a fixed form (two varints, or a varint key and a bounds value of
up to 63 bytes), so a match is the exact parse. An entry the pattern does not fit (another
shape, a bound of 64 bytes or more, a map written in several blocks) is read map by map.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from icepark.avro.blocks import (
    VARINT,
    Skipper,
    UnsupportedAvroError,
    compile_skipper,
    read_long,
    resolve_named,
)
from icepark.avro.scanner import Reader, Run
from icepark.errors import InvalidAvroFileError

__all__ = ["BOUNDS", "COUNTS", "SKIPPED", "count_map_reader", "metric_map_reader", "metrics_run"]

COUNTS = "counts"
"""A count map (``long`` values) whose start is wanted."""
BOUNDS = "bounds"
"""A bounds map (``bytes`` values) whose wanted keys are read."""
SKIPPED = "skipped"
"""A count map stepped over."""

_PAIR = b"(?:" + VARINT + VARINT + b")"
_MAX_SHAPES = 64
_MAX_FAILURES = 64


@lru_cache(maxsize=1024)
def _pairs_with_keys(n: int, keys: tuple[bytes, ...]) -> re.Pattern[bytes]:
    """A pattern matching ``n`` pairs of ints or longs; group ``i + 1`` is the value of the
    last pair whose key is encoded as ``keys[i]`` (unset when there is none)."""
    find = b"".join(
        b"(?=(?:" + _PAIR + b"{0,%d}" % (n - 1) + re.escape(k) + b"(" + VARINT + b"))?)"
        for k in keys
    )
    return re.compile(find + _PAIR + b"{%d}" % n)


def _encode_long(value: int) -> bytes:
    n = value << 1 if value >= 0 else (-value << 1) - 1
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@lru_cache(maxsize=256)
def count_map_reader(field_ids: frozenset[int]) -> Reader:
    """Reads an array of ``{key: int, value: long}`` records into a dict of the keys in
    ``field_ids``. A map written as one block of fewer than 64 items (the usual case) is
    matched by one regular expression that also captures the wanted values."""
    fids = sorted(field_ids)
    keys = tuple(_encode_long(fid) for fid in fids)
    groups = list(enumerate(fids, 1))

    def read_slow(data: bytes, pos: int) -> tuple[Any, int]:
        out: dict[int, int] = {}
        while True:
            n, pos = read_long(data, pos)
            if n == 0:
                return out, pos
            if n < 0:
                n = -n
                _, pos = read_long(data, pos)
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
            n, pos = read_long(data, pos)
            if n == 0:
                return out, pos
            if n < 0:
                n = -n
                _, pos = read_long(data, pos)
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


@lru_cache(maxsize=256)
def _bound_value(lengths: frozenset[int]) -> bytes:
    """A pattern of a bounds value of one of ``lengths`` (each under 64 bytes) with its
    one-byte length."""
    return (
        b"(?:"
        + b"|".join(re.escape(bytes([2 * n])) + b"(?s:.{%d})" % n for n in sorted(lengths))
        + b")"
    )


_Shape = tuple[tuple[int | None, ...], frozenset[int]]
"""Each map's item count (None for a null map) and the lengths of the bounds values."""


class _Section:
    """Reads a run of optional metric maps (each ``["null", array]``) with one pattern per
    shape; :attr:`read` is the function for the last shape seen. The pattern of a bounds
    value allows the lengths seen so far (a new length compiles a new pattern), which keeps
    the patterns small: compiling one for every length under 64 took milliseconds."""

    def __init__(
        self, roles: Sequence[str], skippers: Sequence[Skipper], field_ids: frozenset[int]
    ) -> None:
        self.roles = tuple(roles)
        self.skippers = tuple(skippers)
        self.keys = [(_encode_long(fid), fid) for fid in sorted(field_ids)]
        self.lengths: frozenset[int] = frozenset()
        self.shapes: dict[_Shape, tuple[Any, Any, Any]] = {}
        self.failures = 0
        self.read: Callable[[bytes, int], tuple[tuple[Any, ...], int] | None] = self.learn

    def shape(self, data: bytes, pos: int) -> _Shape | None:
        """The shape of the maps at ``pos``, or None when a pattern cannot fit them."""
        counts: list[int | None] = []
        lengths: set[int] = set()
        for role, skip in zip(self.roles, self.skippers, strict=True):
            branch = data[pos]
            if branch == 0:
                counts.append(None)
                pos += 1
                continue
            if branch != 2:
                return None
            start = pos + 1
            count, pos = read_long(data, start)
            if count < 0:
                return None
            counts.append(count)
            if role != BOUNDS:
                pos = skip(data, start)
                continue
            for _ in range(count):
                _, pos = read_long(data, pos)  # the key
                size, pos = read_long(data, pos)
                if not 0 <= size < 64:
                    return None
                lengths.add(size)
                pos += size
            if count and data[pos] != 0:  # another block
                return None
            pos += 1 if count else 0
        return tuple(counts), frozenset(lengths)

    def compile(self, shape: _Shape) -> tuple[Any, Any, Any]:
        """The pattern of ``shape``, an ``extract(match, data)`` and a ``read(data, pos)``."""
        counts, lengths = shape
        value = _bound_value(lengths)
        parts: list[bytes] = []
        body: list[str] = ["    s = m.start"]
        values: list[str] = []
        group = 0
        for i, (role, count) in enumerate(zip(self.roles, counts, strict=True)):
            if count is None:
                parts.append(b"\x00")
                if role != SKIPPED:
                    values.append("None")
                continue
            parts.append(b"\x02")
            if role == COUNTS:
                group += 1
                parts.append(b"()")
                values.append(f"s({group})")
            if role == BOUNDS:
                item = b"(?:" + b"|".join(re.escape(k) + b"(" + value + b")" for k, _ in self.keys)
                item += (b"|" if self.keys else b"") + VARINT + value + b")"
                body.append(f"    b{i} = {{}}")
                if count:
                    for _, fid in self.keys:
                        group += 1
                        body.append(f"    x = s({group})")
                        body.append("    if x >= 0:")
                        body.append(f"        b{i}[{fid}] = data[x + 1 : m.end({group})]")
                values.append(f"b{i}")
            else:
                item = _PAIR
            if count:
                parts.append(re.escape(_encode_long(count)) + item + b"{%d}" % count)
            parts.append(b"\x00")
        pattern = re.compile(b"".join(parts))
        result = "    return (" + "".join(f"{v}, " for v in values) + "), m.end()"
        read = ["def read(data, pos):", "    m = match(data, pos)", "    if m is None:"]
        read.append("        return learn(data, pos)")
        source = "\n".join(["def extract(m, data):", *body, result, *read, *body, result])
        namespace: dict[str, Any] = {"match": pattern.match, "learn": self.learn}
        exec(compile(source + "\n", "<icepark metric maps>", "exec"), namespace)
        return pattern.match, namespace["extract"], namespace["read"]

    def learn(self, data: bytes, pos: int) -> tuple[tuple[Any, ...], int] | None:
        """Reads the maps at ``pos`` with the pattern of their shape (compiled if new), which
        becomes the first one tried; None when no pattern fits them."""
        shape = self.shape(data, pos)
        if shape is not None:
            self.lengths = self.lengths | shape[1]  # later entries may have these lengths too
            shape = (shape[0], self.lengths)
            found = self.shapes.get(shape)
            if found is None:
                if len(self.shapes) >= _MAX_SHAPES:
                    self.shapes.clear()
                found = self.shapes[shape] = self.compile(shape)
            match, extract, read = found
            m = match(data, pos)
            if m is not None:
                self.read = read
                return extract(m, data)
        self.failures += 1
        if self.failures >= _MAX_FAILURES:  # entries this does not fit: read map by map
            self.read = _never
        return None


def _never(data: bytes, pos: int) -> None:
    return None


def metrics_run(
    fields: Sequence[dict[str, Any]],
    roles: Sequence[str],
    named: Mapping[str, Any],
    field_ids: frozenset[int],
    slots: Sequence[int],
) -> Run | None:
    """A :class:`~icepark.avro.scanner.Run` reading consecutive record ``fields`` that are
    optional metric maps, with ``roles`` (:data:`COUNTS`, :data:`BOUNDS`, :data:`SKIPPED`).
    Its values are, for each map that is not skipped (``slots`` in order), where a count map
    starts or the wanted bounds as a dict (``{}`` for an empty map), None for a null map.
    None when a field is not a ``["null", array]`` of the expected items."""
    if len(fields) != len(roles) or len(slots) != sum(r != SKIPPED for r in roles):
        raise ValueError("a run needs a role per field and a slot per map read")
    skippers = []
    for f, role in zip(fields, roles, strict=True):
        union = resolve_named(f["type"], named)
        if not (isinstance(union, list) and len(union) == 2):
            return None
        if resolve_named(union[0], named) not in ("null", {"type": "null"}):
            return None
        array = resolve_named(union[1], named)
        if _map_values(array, named) != ("bytes" if role == BOUNDS else "long"):
            return None
        skippers.append(compile_skipper(array, named))
    section = _Section(roles, skippers, field_ids)
    return Run(len(fields), tuple(slots), section)
