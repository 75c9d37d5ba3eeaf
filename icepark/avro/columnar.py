"""Decoding Avro records straight into Arrow columns, without a Python object per value.

fastavro decodes a record into a dict, every nested record and array item into more dicts and
lists: a manifest entry with its six metric maps becomes some fifty Python objects, which
cost far more than the bytes they come from. :func:`decode_columns` instead runs a decoder
generated (and compiled once) for the writer schema, in two steps:

1. A Python function walks the records of the decompressed blocks in order and appends, per
   column, only what it must: ints and longs decoded inline, the *positions* of strings,
   bytes, fixed values and floating-point numbers, item counts of arrays and maps, and
   validity of nullable unions. Arrays whose items are nothing but ints and longs (the metric
   maps of manifests: ``column_sizes``, ``value_counts``, ...) are not walked item by item:
   a regular expression steps over their varints in one call and only the byte range is kept.
2. numpy and Arrow build the columns from that: strings and bytes are gathered from the
   buffer by position, floating-point numbers reinterpreted, and the byte ranges of int
   arrays decoded as varints all at once (see :func:`decode_varints`).

The result is a :class:`pyarrow.StructArray` in the writer schema's shape, with Avro's field
names and physical types: ``int`` -> int32, ``long`` -> int64, ``float``/``double``,
``boolean``, ``string`` -> string, ``bytes`` -> binary, ``fixed`` -> fixed_size_binary,
``enum`` -> string (the symbol), ``record`` -> struct, ``array`` -> list, ``map`` -> map of
string keys, a union of ``null`` and one type -> that type with nulls. Logical types are
ignored (a date stays its int), as in the rest of icepark's Avro reading.
:func:`avro_arrow_type` gives that type, so that records decoded by fastavro can be turned
into the same Arrow shape (``pa.array(records, type=avro_arrow_type(...))``), which is what
callers fall back to when :func:`decode_columns` raises
:class:`~icepark.avro.blocks.UnsupportedAvroError` (a union of several non-null types,
a corrupt block).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.avro.blocks import UnsupportedAvroError, read_long, resolve_named, varints

__all__ = ["ColumnarDecoder", "avro_arrow_type", "compile_decoder", "decode_varints"]

_PAD = bytes(16)  # read past the end by placeholders of null fixed-size values
_LONG_KINDS = ("int", "long")
# values whose nulls go into their own list: None for numbers, position -1 for the others
_INLINE_NULLS = frozenset(
    {"int", "long", "enum", "string", "bytes", "fixed", "float", "double"}
    | {"array", "map", "varints", "flat"}  # a count of -1
)


def _fail(what: str) -> None:
    raise UnsupportedAvroError(what)


# -- the schema as a tree of nodes -------------------------------------------------------------


@dataclass
class _Node:
    """One value of the writer schema and the column lists it fills (indexes into ``L``)."""

    kind: str  # null, boolean, int, long, float, double, string, bytes, fixed, enum,
    # record, array, varints (an array of int/long-only items), map, nullable
    lists: list[int] = field(default_factory=list)
    children: list[_Node] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # record field names
    size: int = 0  # fixed size; varint width of a varints array
    symbols: list[str] = field(default_factory=list)  # enum symbols
    null_first: bool = True  # nullable: the null branch comes first
    inline: bool = False  # nullable: nulls are kept in the inner value's own list


def _varint_only(avro: Any, named: Mapping[str, Any]) -> bool:
    avro = resolve_named(avro, named)
    kind = avro.get("type") if isinstance(avro, dict) else avro
    if kind in _LONG_KINDS:
        return True
    if kind == "record" and isinstance(avro, dict):
        fields = avro.get("fields", [])
        return bool(fields) and all(_varint_only(f["type"], named) for f in fields)
    return False


class _Builder:
    def __init__(self, named: Mapping[str, Any]) -> None:
        self.named = named
        self.count = 0

    def lists(self, n: int) -> list[int]:
        out = list(range(self.count, self.count + n))
        self.count += n
        return out

    def node(self, avro: Any) -> _Node:
        avro = resolve_named(avro, self.named)
        if isinstance(avro, list):
            branches = [resolve_named(b, self.named) for b in avro]
            nulls = [i for i, b in enumerate(branches) if b in ("null", {"type": "null"})]
            if len(branches) == 1:
                return self.node(branches[0])
            if len(branches) != 2 or len(nulls) != 1:
                raise UnsupportedAvroError(f"union {avro!r}")
            inner = self.node(branches[1 - nulls[0]])
            if inner.kind in _INLINE_NULLS:
                return _Node("nullable", [], [inner], null_first=nulls[0] == 0, inline=True)
            return _Node("nullable", self.lists(1), [inner], null_first=nulls[0] == 0)
        kind = avro.get("type") if isinstance(avro, dict) else avro
        if kind == "null":
            return _Node("null")
        if kind in ("boolean", "int", "long", "float", "double", "enum"):
            symbols = list(avro.get("symbols", [])) if kind == "enum" else []
            return _Node(kind, self.lists(1), symbols=symbols)
        if kind in ("string", "bytes"):
            return _Node(kind, self.lists(1))
        if kind == "fixed":
            return _Node(kind, self.lists(1), size=int(avro["size"]))
        if kind == "record":
            fields = avro.get("fields", [])
            children = [self.node(f["type"]) for f in fields]
            # a record without fields counts its values in a list of its own
            lists = [] if fields else self.lists(1)
            return _Node(kind, lists, children, names=[str(f["name"]) for f in fields])
        if kind == "array":
            items = avro["items"]
            if _varint_only(items, self.named):
                return self._varints(items)
            flat = self._flat(items)
            if flat is not None:
                return flat
            return _Node("array", self.lists(1), [self.node(items)])
        if kind == "map":
            key = _Node("string", self.lists(1))
            return _Node("map", self.lists(1), [key, self.node(avro["values"])])
        raise UnsupportedAvroError(f"Avro type {kind!r}")

    def _varints(self, items: Any) -> _Node:
        """An array of int/long-only items: counts and byte ranges, and leaf nodes that
        phase two fills from the decoded varints (in item order)."""
        lists = self.lists(3)  # counts, range starts, range ends
        leaf = self._varint_leaves(items)
        width = sum(1 for _ in _leaves(leaf))
        return _Node("varints", lists, [leaf], size=width)

    def _flat(self, items: Any) -> _Node | None:
        """An array of records of ints, longs, strings and bytes only (a metric bounds map):
        phase one keeps where each item starts, phase two reads the fields of all items at
        once. None for other items."""
        record = resolve_named(items, self.named)
        if not isinstance(record, dict) or record.get("type") != "record":
            return None
        kinds = []
        for f in record.get("fields", []):
            t = resolve_named(f["type"], self.named)
            kind = t.get("type") if isinstance(t, dict) else t
            if not isinstance(kind, str) or kind not in ("int", "long", "string", "bytes"):
                return None
            kinds.append(kind)
        if not kinds:
            return None
        leaf = _Node(
            "record",
            [],
            [_Node(k) for k in kinds],
            names=[str(f["name"]) for f in record["fields"]],
        )
        return _Node("flat", self.lists(2), [leaf])  # counts, item starts

    def _varint_leaves(self, avro: Any) -> _Node:
        avro = resolve_named(avro, self.named)
        kind = avro.get("type") if isinstance(avro, dict) else avro
        if kind in _LONG_KINDS:
            return _Node(kind)
        fields = avro.get("fields", [])
        return _Node(
            "record",
            [],
            [self._varint_leaves(f["type"]) for f in fields],
            names=[str(f["name"]) for f in fields],
        )


def _leaves(node: _Node) -> list[_Node]:
    if node.kind == "record":
        return [leaf for child in node.children for leaf in _leaves(child)]
    return [node]


# -- phase one: generated code ---------------------------------------------------------------


class _Gen:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.env: dict[str, Any] = {
            "read_long": read_long,
            "_fail": _fail,
            "_matcher": _matcher,
        }
        self.uid = 0

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def fresh(self, prefix: str) -> str:
        self.uid += 1
        return f"{prefix}{self.uid}"

    def read_long(self, indent: int, target: str) -> None:
        self.emit(indent, "b = data[pos]")
        self.emit(indent, "if b < 0x80:")
        self.emit(indent + 1, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "elif data[pos + 1] < 0x80:")
        self.emit(indent + 1, "b = (b & 0x7F) | (data[pos + 1] << 7)")
        self.emit(indent + 1, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(indent + 1, "pos += 2")
        self.emit(indent, "else:")  # longer: a loop here costs less than a call
        self.emit(indent + 1, "u = b & 0x7F")
        self.emit(indent + 1, "s = 7")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent + 1, "while True:")
        self.emit(indent + 2, "b = data[pos]")
        self.emit(indent + 2, "pos += 1")
        self.emit(indent + 2, "u |= (b & 0x7F) << s")
        self.emit(indent + 2, "if b < 0x80:")
        self.emit(indent + 3, "break")
        self.emit(indent + 2, "s += 7")
        self.emit(indent + 2, "if s > 63:")
        self.emit(indent + 3, "_fail('a varint longer than ten bytes')")
        self.emit(indent + 1, f"{target} = (u >> 1) ^ -(u & 1)")

    def value(self, indent: int, node: _Node) -> None:
        """Code reading one value of ``node`` at ``pos`` into its columns."""
        kind, ls = node.kind, node.lists
        if kind == "null":
            return
        if kind in _LONG_KINDS or kind == "enum":
            self.emit(indent, f"A{ls[0]}(pos)")  # where it is: phase two decodes them all
            self.skip_varint(indent)
        elif kind == "boolean":
            self.emit(indent, f"A{ls[0]}(data[pos])")
            self.emit(indent, "pos += 1")
        elif kind in ("float", "double"):
            self.emit(indent, f"A{ls[0]}(pos)")
            self.emit(indent, f"pos += {4 if kind == 'float' else 8}")
        elif kind in ("string", "bytes"):
            self.emit(indent, f"A{ls[0]}(pos)")  # where the length is: phase two reads it
            self.skip_bytes(indent)
        elif kind == "fixed":
            self.emit(indent, f"A{ls[0]}(pos)")
            self.emit(indent, f"pos += {node.size}")
        elif kind == "record":
            if ls:
                self.emit(indent, f"A{ls[0]}(0)")
            for child in node.children:
                self.value(indent, child)
        elif kind == "nullable":
            inner = node.children[0]
            null_code, value_code = (0, 2) if node.null_first else (2, 0)
            self.emit(indent, "b = data[pos]")
            self.emit(indent, "pos += 1")
            self.emit(indent, f"if b == {value_code}:")
            if not node.inline:
                self.emit(indent + 1, f"A{ls[0]}(True)")
            self.value(indent + 1, inner)
            self.emit(indent, f"elif b == {null_code}:")
            if node.inline:
                self.inline_null(indent + 1, inner)
            else:
                self.emit(indent + 1, f"A{ls[0]}(False)")
                self.placeholder(indent + 1, inner)
            self.emit(indent + 1, "pass")
            self.emit(indent, "else:")
            self.emit(indent + 1, "_fail('union branch out of range')")
        elif kind in ("array", "map", "varints", "flat"):
            self.blocks(indent, node)
        else:  # pragma: no cover - the builder makes no other kinds
            raise UnsupportedAvroError(kind)

    def skip_bytes(self, indent: int) -> None:
        self.emit(indent, "b = data[pos]")
        self.emit(indent, "if b < 0x80 and not b & 1:")  # a short length: one byte
        self.emit(indent + 1, "pos += 1 + (b >> 1)")
        self.emit(indent, "elif b & 0x80 and data[pos + 1] < 0x80:")
        self.emit(indent + 1, "b = (b & 0x7F) | (data[pos + 1] << 7)")
        self.emit(indent + 1, "if b & 1:")
        self.emit(indent + 2, "_fail('negative length')")
        self.emit(indent + 1, "pos += 2 + (b >> 1)")
        self.emit(indent, "else:")
        self.emit(indent + 1, "n, pos = read_long(data, pos)")
        self.emit(indent + 1, "if n < 0:")
        self.emit(indent + 2, "_fail('negative length')")
        self.emit(indent + 1, "pos += n")

    def skip_varint(self, indent: int) -> None:
        self.emit(indent, "if data[pos] < 0x80:")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "else:")
        self.emit(indent + 1, "while data[pos] >= 0x80:")
        self.emit(indent + 2, "pos += 1")
        self.emit(indent + 1, "pos += 1")

    def blocks(self, indent: int, node: _Node) -> None:
        if node.kind == "varints":
            self.varint_blocks(indent, node)
            return
        total, items = self.fresh("c"), self.fresh("n")
        self.emit(indent, f"{total} = 0")
        self.emit(indent, "while True:")
        self.read_long(indent + 1, items)
        self.emit(indent + 1, f"if {items} == 0:")
        self.emit(indent + 2, "break")
        self.emit(indent + 1, f"if {items} < 0:")  # a block with its byte size: skip the size
        self.emit(indent + 2, f"{items} = -{items}")
        self.read_long(indent + 2, "v")
        self.emit(indent + 1, f"{total} += {items}")
        self.emit(indent + 1, f"for _ in range({items}):")
        if node.kind == "flat":
            self.emit(indent + 2, f"A{node.lists[1]}(pos)")
            for leaf in node.children[0].children:
                if leaf.kind in ("string", "bytes"):
                    self.skip_bytes(indent + 2)
                else:
                    self.skip_varint(indent + 2)
        else:
            for child in node.children:
                self.value(indent + 2, child)
        self.emit(indent, f"A{node.lists[0]}({total})")

    def varint_blocks(self, indent: int, node: _Node) -> None:
        """An int array: the usual single block of fewer than 64 items is matched in one
        regular expression call with its terminating zero; anything else block by block."""
        ls = node.lists
        short = self.fresh("M")
        self.env[short] = [varints(i * node.size).match for i in range(64)]
        self.emit(indent, "b = data[pos]")
        self.emit(indent, "if b == 0:")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent + 1, f"A{ls[0]}(0)")
        self.emit(indent, "else:")
        self.emit(indent + 1, "m = None")
        self.emit(indent + 1, "if b < 0x80 and not b & 1:")
        self.emit(indent + 2, f"m = {short}[b >> 1](data, pos + 1)")
        self.emit(indent + 2, "e = -1 if m is None else m.end()")
        self.emit(indent + 2, "if e >= 0 and data[e] == 0:")
        self.emit(indent + 3, f"A{ls[1]}(pos + 1)")
        self.emit(indent + 3, f"A{ls[2]}(e)")
        self.emit(indent + 3, "pos = e + 1")
        self.emit(indent + 3, f"A{ls[0]}(b >> 1)")
        self.emit(indent + 2, "else:")
        self.emit(indent + 3, "m = None")
        self.emit(indent + 1, "if m is None:")
        total, items = self.fresh("c"), self.fresh("n")
        inner = indent + 2
        self.emit(inner, f"{total} = 0")
        self.emit(inner, "while True:")
        self.read_long(inner + 1, items)
        self.emit(inner + 1, f"if {items} == 0:")
        self.emit(inner + 2, "break")
        self.emit(inner + 1, f"if {items} < 0:")
        self.emit(inner + 2, f"{items} = -{items}")
        self.read_long(inner + 2, "v")
        self.emit(inner + 1, f"{total} += {items}")
        self.emit(inner + 1, f"m = _matcher({items} * {node.size})(data, pos)")
        self.emit(inner + 1, "if m is None:")
        self.emit(inner + 2, "_fail('truncated int array')")
        self.emit(inner + 1, f"A{ls[1]}(pos)")
        self.emit(inner + 1, "pos = m.end()")
        self.emit(inner + 1, f"A{ls[2]}(pos)")
        self.emit(inner, f"A{ls[0]}({total})")

    def inline_null(self, indent: int, node: _Node) -> None:
        """Code appending a null to the list of an inline-null value."""
        ls = node.lists
        self.emit(indent, f"A{ls[0]}(-1)")  # a position or a count of -1

    def placeholder(self, indent: int, node: _Node) -> None:
        """Code appending a null's stand-in to the columns of ``node``."""
        kind, ls = node.kind, node.lists
        if kind in ("enum", *_LONG_KINDS):
            self.emit(indent, f"A{ls[0]}(-1)")
        elif kind == "boolean":
            self.emit(indent, f"A{ls[0]}(0)")
        elif kind in ("float", "double", "fixed"):
            self.emit(indent, f"A{ls[0]}(0)")
        elif kind in ("string", "bytes"):
            self.emit(indent, f"A{ls[0]}(-1)")
        elif kind == "record":
            if ls:
                self.emit(indent, f"A{ls[0]}(0)")
            for child in node.children:
                self.placeholder(indent, child)
        elif kind == "nullable" and node.inline:
            self.inline_null(indent, node.children[0])
        elif kind == "nullable":
            self.emit(indent, f"A{ls[0]}(False)")
            self.placeholder(indent, node.children[0])
        elif kind in ("array", "map", "varints", "flat"):
            self.emit(indent, f"A{ls[0]}(0)")


_MATCHERS: dict[int, Callable[[bytes, int], Any]] = {}


def _matcher(n: int) -> Callable[[bytes, int], Any]:
    found = _MATCHERS.get(n)
    if found is None:
        found = _MATCHERS[n] = varints(n).match
    return found


def _compile(root: _Node, list_count: int) -> Callable[[bytes, int, list[list[Any]]], int]:
    gen = _Gen()
    gen.emit(0, "def decode(data, count, L):")
    gen.emit(1, "pos = 0")
    for i in range(list_count):
        gen.emit(1, f"A{i} = L[{i}].append")
    gen.emit(1, "for _ in range(count):")
    gen.value(2, root)
    gen.emit(1, "return pos")
    namespace = dict(gen.env)
    exec(compile("\n".join(gen.lines) + "\n", "<icepark avro columnar decoder>", "exec"), namespace)
    decode: Callable[[bytes, int, list[list[Any]]], int] = namespace["decode"]
    return decode


# -- phase two: columns ------------------------------------------------------------------------


def decode_varints(data: np.ndarray) -> np.ndarray:
    """The zig-zag varints that ``data`` (uint8, whole varints back to back) holds, as int64."""
    if data.size == 0:
        return np.zeros(0, dtype=np.int64)
    if data[-1] >= 0x80:
        raise UnsupportedAvroError("truncated varint")
    more = data >= 0x80
    if not more.any():
        raw = data.astype(np.uint64)
    else:
        ends = np.flatnonzero(~more)
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        owner = np.repeat(np.arange(ends.size), ends - starts + 1)
        shift = ((np.arange(data.size) - starts[owner]) * 7).astype(np.uint64)
        parts = (data & 0x7F).astype(np.uint64) << shift
        raw = np.add.reduceat(parts, starts)
    one = np.uint64(1)
    return ((raw >> one) ^ (np.uint64(0) - (raw & one))).view(np.int64)


def _varints_at(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The zig-zag varints that start at positions ``at`` of ``buf`` and their widths."""
    raw = (buf[at] & 0x7F).astype(np.uint64)
    width = np.ones(at.size, dtype=np.int64)
    more = np.flatnonzero(buf[at] >= 0x80)
    shift = 7
    while more.size:
        if shift > 63:
            raise UnsupportedAvroError("a varint longer than ten bytes")
        b = buf[at[more] + width[more]]
        raw[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        width[more] += 1
        more = more[b >= 0x80]
        shift += 7
    one = np.uint64(1)
    return ((raw >> one) ^ (np.uint64(0) - (raw & one))).view(np.int64), width


def _bytes_at(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The byte ranges of the strings or bytes whose lengths start at ``at`` (-1: none)."""
    present = at >= 0
    safe = np.where(present, at, 0)
    lengths, width = _varints_at(buf, safe)
    starts = np.where(present, safe + width, 0)
    ends = np.where(present, starts + lengths, 0)
    if (ends < starts).any():
        raise UnsupportedAvroError("negative length")
    return starts, ends


def _gather(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of ranges ``[starts, ends)`` back to back, and the offsets of each range."""
    lengths = ends - starts
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return np.zeros(0, dtype=np.uint8), offsets
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(total)
    return buf[index], offsets


def _with_nulls(mask: np.ndarray | None, positions: np.ndarray) -> np.ndarray | None:
    """``mask`` with the inline nulls (position -1) of ``positions`` added."""
    nulls = positions < 0
    if not nulls.any():
        return mask
    return nulls if mask is None else (mask | nulls)


def _null_counts(
    counts: np.ndarray, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Counts with the inline nulls (-1) made empty, and ``mask`` with them added."""
    nulls = counts < 0
    if not nulls.any():
        return counts, mask
    return np.where(nulls, 0, counts), nulls if mask is None else (mask | nulls)


def _validity(mask: np.ndarray | None) -> pa.Buffer | None:
    if mask is None or not mask.any():
        return None
    return pa.py_buffer(np.packbits(~mask, bitorder="little"))


class _Columns:
    """Builds the Arrow arrays of a tree of nodes from the lists phase one filled."""

    def __init__(self, lists: list[list[Any]], buf: np.ndarray, data: pa.Buffer) -> None:
        self.lists = lists
        self.buf = buf
        self.data = data

    def array(self, node: _Node, mask: np.ndarray | None) -> pa.Array:
        kind, ls = node.kind, node.lists
        if kind == "nullable" and node.inline:
            return self.array(node.children[0], None)
        if kind == "nullable":
            valid = np.array(self.lists[ls[0]], dtype=bool)
            inner_mask = ~valid if mask is None else (mask | ~valid)
            return self.array(node.children[0], inner_mask)
        if kind in _LONG_KINDS:
            values = self.varints_at(ls[0], mask)
            if kind == "int":
                return pa.array(values[0].astype(np.int32), mask=values[1])
            return pa.array(values[0], mask=values[1])
        if kind == "boolean":
            return pa.array(np.array(self.lists[ls[0]], dtype=np.uint8) != 0, mask=mask)
        if kind == "enum":
            index, nulls = self.varints_at(ls[0], mask)
            if nulls is not None:
                index = np.where(nulls, 0, index)
            return self._enum(node, pa.array(index.astype(np.int32)), nulls)
        if kind in ("float", "double"):
            width = 4 if kind == "float" else 8
            pos = np.array(self.lists[ls[0]], dtype=np.int64)
            mask = _with_nulls(mask, pos)
            raw = self.buf[pos[:, None] + np.arange(width)].reshape(-1)
            values = raw.view("<f4" if width == 4 else "<f8")
            return pa.array(values, mask=mask)
        if kind in ("string", "bytes"):
            at = np.array(self.lists[ls[0]], dtype=np.int64)
            mask = _with_nulls(mask, at)
            starts, ends = _bytes_at(self.buf, at)
            return self.binary(kind, starts, ends, mask)
        if kind == "fixed":
            pos = np.array(self.lists[ls[0]], dtype=np.int64)
            mask = _with_nulls(mask, pos)
            raw = self.buf[pos[:, None] + np.arange(node.size)].reshape(-1)
            return pa.Array.from_buffers(
                pa.binary(node.size), pos.size, [_validity(mask), pa.py_buffer(raw)]
            )
        if kind == "null":
            raise UnsupportedAvroError("a null outside a union")
        if kind == "record":
            return self.record(node, mask)
        if kind == "array":
            counts = np.array(self.lists[ls[0]], dtype=np.int64)
            counts, mask = _null_counts(counts, mask)
            items = self.array(node.children[0], None)
            return pa.ListArray.from_arrays(_offsets(counts), items, mask=_mask_array(mask))
        if kind == "map":
            counts = np.array(self.lists[ls[0]], dtype=np.int64)
            counts, mask = _null_counts(counts, mask)
            keys = self.array(node.children[0], None)
            values = self.array(node.children[1], None)
            return pa.MapArray.from_arrays(_offsets(counts), keys, values, mask=_mask_array(mask))
        if kind == "varints":
            return self.varints(node, mask)
        if kind == "flat":
            return self.flat(node, mask)
        raise UnsupportedAvroError(kind)  # pragma: no cover

    def varints_at(self, list_index: int, mask: np.ndarray | None) -> tuple[Any, Any]:
        """The ints at the positions in a list (-1: null) and the nulls, ``mask`` added."""
        at = np.array(self.lists[list_index], dtype=np.int64)
        mask = _with_nulls(mask, at)
        values, _ = _varints_at(self.buf, np.where(at < 0, 0, at))
        return values, mask

    def binary(
        self, kind: str, starts: np.ndarray, ends: np.ndarray, mask: np.ndarray | None
    ) -> pa.Array:
        """Strings or bytes from the byte ranges ``[starts, ends)`` of the buffer (in buffer
        order; ranges of nulls may be anything).

        The ranges are cut out by Arrow, not by an index per byte: the whole buffer becomes a
        binary array whose elements alternate between the gap before a range and the range
        itself (the ranges are in order and do not overlap, so the offsets ascend), and
        taking every second element copies just the values."""
        n = starts.size
        valid = ends >= starts if mask is None else (~mask & (ends >= starts))
        if not valid.all():  # nulls become empty ranges where the previous one ended
            last_end = np.maximum.accumulate(np.where(valid, ends, 0))
            before = np.concatenate([[0], last_end[:-1]])
            starts = np.where(valid, starts, before)
            ends = np.where(valid, ends, before)
        offsets = np.empty(2 * n + 1, dtype=np.int64)
        offsets[0] = 0
        offsets[1::2] = starts
        offsets[2::2] = ends
        if n and (np.diff(offsets) < 0).any():
            raise UnsupportedAvroError("string ranges out of order")
        large = offsets[-1] >= 2**31 if n else False
        arrow_type = pa.large_binary() if large else pa.binary()
        whole = pa.Array.from_buffers(
            arrow_type,
            2 * n,
            [None, pa.py_buffer(offsets.astype(np.int64 if large else np.int32)), self.data],
        )
        taken = whole.take(pa.array(np.arange(1, 2 * n, 2, dtype=np.int64)))
        buffers = taken.buffers()
        arr = pa.Array.from_buffers(arrow_type, n, [_validity(mask), buffers[1], buffers[2]])
        if kind == "string":
            target = pa.large_string() if large else pa.string()
            try:
                return arr.cast(target)  # validates UTF-8
            except pa.ArrowInvalid as exc:
                raise UnsupportedAvroError(f"invalid UTF-8 in a string: {exc}") from exc
        return arr

    def flat(self, node: _Node, mask: np.ndarray | None) -> pa.Array:
        """The items of a flat array, read field by field for all items at once."""
        counts = np.array(self.lists[node.lists[0]], dtype=np.int64)
        counts, mask = _null_counts(counts, mask)
        at = np.array(self.lists[node.lists[1]], dtype=np.int64)
        record = node.children[0]
        children = []
        for leaf in record.children:
            values, width = _varints_at(self.buf, at)
            at = at + width
            if leaf.kind in ("string", "bytes"):
                if (values < 0).any():
                    raise UnsupportedAvroError("negative length")
                children.append(self.binary(leaf.kind, at, at + values, None))
                at = at + values
            elif leaf.kind == "int":
                children.append(pa.array(values.astype(np.int32)))
            else:
                children.append(pa.array(values))
        items = pa.StructArray.from_arrays(children, record.names)
        return pa.ListArray.from_arrays(_offsets(counts), items, mask=_mask_array(mask))

    def _enum(self, node: _Node, index: pa.Array, mask: np.ndarray | None) -> pa.Array:
        symbols = pa.array(node.symbols, pa.string())
        if len(index) and (pc.max(index).as_py() >= len(symbols) or pc.min(index).as_py() < 0):
            raise UnsupportedAvroError("enum index out of range")
        taken = symbols.take(index)
        if mask is None or not mask.any():
            return taken
        return pc.if_else(pa.array(mask), pa.nulls(len(taken), pa.string()), taken)

    def record(self, node: _Node, mask: np.ndarray | None, length: int | None = None) -> pa.Array:
        if not node.children:
            n = length if length is not None else len(self.lists[node.lists[0]])
            return (
                pa.StructArray.from_arrays([], fields=[], mask=None)
                if n == 0
                else pa.array([{}] * n, pa.struct([]), mask=None if mask is None else mask)
            )
        arrays = [self.array(child, None) for child in node.children]
        return pa.StructArray.from_arrays(arrays, node.names, mask=_mask_array(mask))

    def varints(self, node: _Node, mask: np.ndarray | None) -> pa.Array:
        counts = np.array(self.lists[node.lists[0]], dtype=np.int64)
        counts, mask = _null_counts(counts, mask)
        starts = np.array(self.lists[node.lists[1]], dtype=np.int64)
        ends = np.array(self.lists[node.lists[2]], dtype=np.int64)
        data, _ = _gather(self.buf, starts, ends)
        values = decode_varints(data)
        total = int(counts.sum())
        width = node.size
        if values.size != total * width:
            raise UnsupportedAvroError("int array lengths do not add up")
        table = values.reshape(total, width) if width else values.reshape(total, 0)
        leaf_arrays = iter(
            pa.array(table[:, i], pa.int32() if leaf.kind == "int" else pa.int64())
            for i, leaf in enumerate(_leaves(node.children[0]))
        )
        items = _assemble(node.children[0], leaf_arrays)
        return pa.ListArray.from_arrays(_offsets(counts), items, mask=_mask_array(mask))


def _assemble(node: _Node, leaves: Any) -> pa.Array:
    if node.kind == "record":
        children = [_assemble(child, leaves) for child in node.children]
        return pa.StructArray.from_arrays(children, node.names)
    arr: pa.Array = next(leaves)
    return arr


def _offsets(counts: np.ndarray) -> pa.Array:
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if offsets[-1] < 2**31:
        return pa.array(offsets.astype(np.int32))
    raise UnsupportedAvroError("array too large")


def _mask_array(mask: np.ndarray | None) -> pa.Array | None:
    if mask is None or not mask.any():
        return None
    return pa.array(mask)


# -- public ------------------------------------------------------------------------------------


class ColumnarDecoder:
    """Decodes records of one writer record schema into a :class:`pyarrow.StructArray`."""

    def __init__(self, record: Any, named: Mapping[str, Any]) -> None:
        builder = _Builder(named)
        self._root = builder.node(record)
        if self._root.kind != "record":
            raise UnsupportedAvroError("the top level is not a record")
        self._lists = builder.count
        self._decode = _compile(self._root, self._lists)
        self.arrow_type = _node_type(self._root)

    def decode(self, blocks: Sequence[tuple[int, bytes]]) -> pa.StructArray:
        """The records of ``blocks`` (each a record count and its decompressed bytes).

        Raises :class:`UnsupportedAvroError` (or :class:`IndexError`) on data that does not
        decode: a corrupt or truncated block."""
        count = sum(c for c, _ in blocks)
        data = b"".join(d for _, d in blocks)
        lists: list[list[Any]] = [[] for _ in range(self._lists)]
        end = self._decode(data, count, lists)
        if end != len(data):
            raise UnsupportedAvroError(f"{len(data) - end} bytes left after the last record")
        padded = data + _PAD
        buf = np.frombuffer(padded, dtype=np.uint8)
        arr = _Columns(lists, buf, pa.py_buffer(padded)).record(self._root, None, count)
        assert isinstance(arr, pa.StructArray)
        return arr


def compile_decoder(record: Any, named: Mapping[str, Any]) -> ColumnarDecoder:
    """A :class:`ColumnarDecoder` for the (writer) record schema ``record``."""
    return ColumnarDecoder(record, named)


def _node_type(node: _Node) -> pa.DataType:
    kind = node.kind
    simple = {
        "null": pa.null(),
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "string": pa.string(),
        "bytes": pa.binary(),
        "enum": pa.string(),
    }
    if kind in simple:
        return simple[kind]
    if kind == "fixed":
        return pa.binary(node.size)
    if kind == "nullable":
        return _node_type(node.children[0])
    if kind == "record":
        return pa.struct([pa.field(n, _node_type(c)) for n, c in zip(node.names, node.children)])
    if kind in ("array", "varints", "flat"):
        return pa.list_(_node_type(node.children[0]))
    if kind == "map":
        return pa.map_(pa.string(), _node_type(node.children[1]))
    raise UnsupportedAvroError(kind)  # pragma: no cover


def avro_arrow_type(avro: Any, named: Mapping[str, Any]) -> pa.DataType:
    """The Arrow type :class:`ColumnarDecoder` gives values of the Avro schema ``avro``."""
    return _node_type(_Builder(named).node(avro))
