"""Decoding Avro records straight into Arrow columns, without a Python object per value.

fastavro decodes a record into a dict, every nested record and array item into more dicts and
lists: a manifest entry with its six metric maps becomes some fifty Python objects, which
cost far more than the bytes they come from. :class:`ColumnarDecoder` instead runs a walker
generated (and compiled once) for the writer schema (:mod:`icepark.avro.columnar_walk`), in
two phases:

1. The walker steps through the records of the decompressed blocks in order and appends,
   per column, only what it must: the *positions* of ints, longs, strings, bytes, fixed
   values and floating-point numbers (-1 for a null), item counts of arrays and maps
   (-1 for a null one), and validity of nullable records. Arrays whose items are nothing
   but ints and longs (the metric maps of manifests: ``column_sizes``, ``value_counts``,
   ...) are not walked item by item: a regular expression steps over their varints in one
   call and only the byte range is kept; arrays of flat records of ints and bytes (the
   bounds maps) keep where each item starts.
2. numpy and Arrow build the columns from that, each column at once: varints decoded at
   their positions (:func:`decode_varints` for the ranges of int arrays), the fields of
   flat array items read for all items together, strings and bytes cut out of the buffer
   by Arrow, floating-point numbers reinterpreted.

The result is a :class:`pyarrow.StructArray` in the writer schema's shape, with Avro's field
names and physical types: ``int`` -> int32, ``long`` -> int64, ``float``/``double``,
``boolean``, ``string`` -> string, ``bytes`` -> binary, ``fixed`` -> fixed_size_binary,
``enum`` -> string (the symbol), ``record`` -> struct, ``array`` -> list, ``map`` -> map of
string keys, a union of ``null`` and one type -> that type with nulls. Logical types are
ignored (a date stays its int), as in the rest of icepark's Avro reading.
:func:`avro_arrow_type` gives that type, so that records decoded by fastavro can be turned
into the same Arrow shape (``pa.array(records, type=avro_arrow_type(...))``), which is what
callers fall back to when :meth:`ColumnarDecoder.decode` raises
:class:`~icepark.avro.blocks.UnsupportedAvroError` (a union of several non-null types,
a corrupt block).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.avro.blocks import UnsupportedAvroError
from icepark.avro.columnar_walk import LONG_KINDS, Node, SchemaNodes, compile_walker, leaves

__all__ = ["ColumnarDecoder", "avro_arrow_type", "compile_decoder", "decode_varints"]

_PAD = bytes(16)  # read past the end by placeholders of null fixed-size values

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

    def array(self, node: Node, mask: np.ndarray | None) -> pa.Array:
        kind, ls = node.kind, node.lists
        if kind == "nullable" and node.inline:
            return self.array(node.children[0], None)
        if kind == "nullable":
            valid = np.array(self.lists[ls[0]], dtype=bool)
            inner_mask = ~valid if mask is None else (mask | ~valid)
            return self.array(node.children[0], inner_mask)
        if kind in LONG_KINDS:
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

    def flat(self, node: Node, mask: np.ndarray | None) -> pa.Array:
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

    def _enum(self, node: Node, index: pa.Array, mask: np.ndarray | None) -> pa.Array:
        symbols = pa.array(node.symbols, pa.string())
        if len(index) and (pc.max(index).as_py() >= len(symbols) or pc.min(index).as_py() < 0):
            raise UnsupportedAvroError("enum index out of range")
        taken = symbols.take(index)
        if mask is None or not mask.any():
            return taken
        return pc.if_else(pa.array(mask), pa.nulls(len(taken), pa.string()), taken)

    def record(self, node: Node, mask: np.ndarray | None, length: int | None = None) -> pa.Array:
        if not node.children:
            n = length if length is not None else len(self.lists[node.lists[0]])
            return (
                pa.StructArray.from_arrays([], fields=[], mask=None)
                if n == 0
                else pa.array([{}] * n, pa.struct([]), mask=None if mask is None else mask)
            )
        arrays = [self.array(child, None) for child in node.children]
        return pa.StructArray.from_arrays(arrays, node.names, mask=_mask_array(mask))

    def varints(self, node: Node, mask: np.ndarray | None) -> pa.Array:
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
            for i, leaf in enumerate(leaves(node.children[0]))
        )
        items = _assemble(node.children[0], leaf_arrays)
        return pa.ListArray.from_arrays(_offsets(counts), items, mask=_mask_array(mask))


def _assemble(node: Node, leaves: Any) -> pa.Array:
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
        builder = SchemaNodes(named)
        self._root = builder.node(record)
        if self._root.kind != "record":
            raise UnsupportedAvroError("the top level is not a record")
        self._lists = builder.count
        self._decode = compile_walker(self._root, self._lists)
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


def _node_type(node: Node) -> pa.DataType:
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
    return _node_type(SchemaNodes(named).node(avro))
