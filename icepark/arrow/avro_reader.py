"""Avro data files as Arrow record batches of their own columns (used by
:mod:`icepark.arrow.reader`, which projects them to the table's schema).

An :class:`AvroDataFile` reads the file's header, resolves its writer schema to Iceberg
field ids (:func:`~icepark.avro.file_schema.resolve_file_schema`: the file's ``field-id``
properties, or the table's name mapping) and gives :attr:`~AvroDataFile.arrow_schema`, the
file's columns as Arrow fields carrying their ids (``PARQUET:field_id``), so that the one
projection planner of :mod:`icepark.arrow._projection` matches them to the projected schema
exactly as it matches Parquet columns. :meth:`~AvroDataFile.batches` then decodes only the
selected fields (:func:`plan_selection` turns the projection plan into a selection by id) with
a decoder compiled for the file's schema (:mod:`icepark.avro.decoder`) and builds each Arrow
column from its list of values at once.

Arrow types of Avro values: ``boolean``, ``int``/``long``, ``float``/``double`` as such;
``string`` and ``enum`` as ``string``; ``bytes`` as ``binary``, ``fixed`` as
``fixed_size_binary``; logical types as their Arrow types (``date32``, ``time32('ms')`` /
``time64('us')``, ``timestamp`` in ms, us or ns, with zone ``UTC`` where ``adjust-to-utc``
is true, ``decimal128``, ``arrow.uuid`` for 16-byte fixed or string uuids); a complex union
as ``struct<tag: int32, field0, ...>``. Every field is nullable here (a required field may
hold placeholders under a null struct); the projection casts to the projected types.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.arrow._projection import ListNode, MapNode, Node, Prim, Read, StructNode
from icepark.arrow.schema import FIELD_ID_KEY, field_id_of
from icepark.avro.blocks import AvroHeader, iter_avro_blocks, read_avro_header
from icepark.avro.decoder import Column, Decoder, Selection, compile_decoder
from icepark.avro.file_schema import (
    TAG_NAME,
    AvroChild,
    AvroFileSchema,
    AvroNode,
    resolve_file_schema,
)
from icepark.errors import InvalidAvroFileError, NoSuchFileError
from icepark.io.fileio import FileIO
from icepark.spec.name_mapping import NameMapping

__all__ = ["AvroDataFile", "plan_selection", "avro_arrow_type"]


# -- Arrow types -----------------------------------------------------------------------------


def _is_true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def avro_arrow_type(node: AvroNode) -> pa.DataType:
    """The Arrow type a resolved Avro node is read as (see the module docstring)."""
    kind, logical, props = node.kind, node.logical, node.props
    if kind == "record":
        return pa.struct([_arrow_field(c) for c in node.children if c.field_id is not None])
    if kind == "union":
        assert node.tag is not None
        fields = [_arrow_field(c) for c in node.children if c.field_id is not None]
        if node.tag.field_id is not None:
            fields.insert(0, _arrow_field(node.tag))
        return pa.struct(fields)
    if kind == "array":
        return pa.list_(_arrow_field(node.children[0]))
    if kind in ("map", "kvmap"):
        key, value = node.children
        key_field = _arrow_field(key).with_nullable(False)
        return pa.map_(key_field, _arrow_field(value))
    if logical == "decimal" and kind in ("fixed", "bytes"):
        return pa.decimal128(int(props["precision"]), int(props.get("scale", 0)))
    if logical == "uuid" and (kind == "string" or (kind == "fixed" and props.get("size") == 16)):
        return pa.uuid()
    utc = "UTC" if _is_true(props.get("adjust-to-utc")) else None
    if kind == "int":
        if logical == "date":
            return pa.date32()
        if logical == "time-millis":
            return pa.time32("ms")
        return pa.int32()
    if kind == "long":
        if logical == "time-micros":
            return pa.time64("us")
        for unit in ("millis", "micros", "nanos"):
            short = {"millis": "ms", "micros": "us", "nanos": "ns"}[unit]
            if logical == f"timestamp-{unit}":
                return pa.timestamp(short, tz=utc)
            if logical == f"local-timestamp-{unit}":
                return pa.timestamp(short)
        return pa.int64()
    simple = {
        "null": pa.null(),
        "boolean": pa.bool_(),
        "float": pa.float32(),
        "double": pa.float64(),
        "string": pa.string(),
        "enum": pa.string(),
        "bytes": pa.binary(),
    }
    if kind == "fixed":
        return pa.binary(int(node.schema["size"]))
    return simple[kind]


def _arrow_field(child: AvroChild) -> pa.Field:
    metadata = None if child.field_id is None else {FIELD_ID_KEY: str(child.field_id).encode()}
    return pa.field(child.name, avro_arrow_type(child.node), nullable=True, metadata=metadata)


def _file_arrow_schema(schema: AvroFileSchema) -> pa.Schema:
    return pa.schema([_arrow_field(c) for c in schema.root.children if c.field_id is not None])


# -- selection -------------------------------------------------------------------------------


def _merge(into: dict[int, Any], field_id: int, sub: Any) -> None:
    if field_id not in into:
        into[field_id] = sub
    elif into[field_id] is None or sub is None:
        into[field_id] = None
    else:
        for k, v in sub.items():
            _merge(into[field_id], k, v)


def _node_selection(node: Node, t: pa.DataType) -> dict[int, Any] | None:
    if isinstance(node, Prim):
        return None
    out: dict[int, Any] = {}
    if isinstance(node, StructNode):
        for c in node.children:
            if isinstance(c, Read):
                f = t.field(c.name)
                fid = field_id_of(f)
                if fid is not None:
                    _merge(out, fid, _node_selection(c.node, f.type))
        return out
    if isinstance(node, ListNode):
        element = t.value_field
        fid = field_id_of(element)
        if fid is not None:
            out[fid] = _node_selection(node.element, element.type)
        return out
    assert isinstance(node, MapNode)
    for f, sub in ((t.key_field, node.key), (t.item_field, node.value)):
        fid = field_id_of(f)
        if fid is not None:
            out[fid] = _node_selection(sub, f.type)
    return out


def plan_selection(
    plan: list[Any], file_schema: pa.Schema, filter_paths: set[tuple[str, ...]]
) -> Selection:
    """The field ids a projection plan (:class:`~icepark.arrow._projection.Read` items over
    ``file_schema``) and the filter's column paths read, as a decoder selection."""
    out: dict[int, Any] = {}
    for item in plan:
        if isinstance(item, Read):
            f = file_schema.field(item.name)
            fid = field_id_of(f)
            if fid is not None:
                _merge(out, fid, _node_selection(item.node, f.type))
    for path in filter_paths:
        fields = list(file_schema)
        chain: list[int] = []
        for name in path:
            f = next(x for x in fields if x.name == name)
            fid = field_id_of(f)
            assert fid is not None
            chain.append(fid)
            fields = list(f.type) if pa.types.is_struct(f.type) else []
        sub: Any = None
        for fid in reversed(chain[1:]):
            sub = {fid: sub}
        _merge(out, chain[0], sub)
    return out


# -- building arrays -------------------------------------------------------------------------


def _mask(valid: pa.Array) -> pa.Array | None:
    """The null mask of a validity array (None when nothing is null)."""
    if not valid.false_count:
        return None
    return pc.invert(valid)


def _decimals(values: list[Any], t: pa.Decimal128Type, fixed: int | None) -> pa.Array:
    """Big-endian two's complement (fixed-size or variable) bytes as decimal128."""
    n = len(values)
    present = [v is not None for v in values]
    if fixed is not None and fixed <= 16:
        raw = pa.array(values, pa.binary(fixed))
        data = np.frombuffer(raw.buffers()[1], dtype=np.uint8, count=n * fixed, offset=0)
        be = data.reshape(n, fixed) if n else np.zeros((0, fixed), dtype=np.uint8)
    else:
        padded = []
        for v in values:
            if v is None:
                padded.append(b"\x00" * 16)
                continue
            if len(v) > 16:
                raise ValueError(f"a decimal of {len(v)} bytes does not fit decimal128")
            fill = b"\xff" if v and v[0] & 0x80 else b"\x00"
            padded.append(bytes(v).rjust(16, fill))
        be = np.frombuffer(b"".join(padded), dtype=np.uint8).reshape(n, 16)
        fixed = 16
    if fixed < 16:
        sign = np.where(be[:, :1] & 0x80, np.uint8(0xFF), np.uint8(0)) if n else be[:, :1]
        be = np.concatenate([np.repeat(sign, 16 - fixed, axis=1), be], axis=1)
    le = np.ascontiguousarray(be[:, ::-1])
    validity = None
    if not all(present):
        validity = pa.array(present, pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(le.tobytes())])


def _leaf(node: AvroNode, values: list[Any], t: pa.DataType) -> pa.Array:
    kind = node.kind
    if kind == "null":
        return pa.nulls(len(values))
    if pa.types.is_decimal(t):
        size = int(node.schema["size"]) if kind == "fixed" else None
        return _decimals(values, t, size)
    if isinstance(t, pa.BaseExtensionType):  # uuid
        if kind == "string":
            values = [None if v is None else uuid.UUID(bytes(v).decode()).bytes for v in values]
        return pa.ExtensionArray.from_storage(t, pa.array(values, pa.binary(16)))
    if kind in ("float", "double"):
        width = 4 if kind == "float" else 8
        return pa.array(values, pa.binary(width)).view(t)
    if kind == "string":
        return pa.array(values, pa.binary()).cast(pa.string())
    if kind == "enum":
        symbols = pa.array(node.schema.get("symbols", []), pa.string())
        return symbols.take(pa.array(values, pa.int32()))
    return pa.array(values, t)


def _build(col: Column, lists: list[list[Any]], t: pa.DataType) -> pa.Array:
    kind = col.node.kind
    if kind in ("record", "union"):
        valid = pa.array(lists[col.valid], pa.bool_())
        n = len(valid)
        children, fields = [], []
        by_name = {t.field(i).name: t.field(i) for i in range(t.num_fields)}
        if kind == "union" and col.values >= 0:
            children.append(pa.array(lists[col.values], pa.int32()))
            fields.append(by_name[TAG_NAME])
        for c in col.children:
            f = by_name[c.child.name]
            child = _build(c, lists, f.type)
            children.append(child)
            fields.append(f.with_type(child.type))
        mask = _mask(valid)
        if not children:
            validity = None if mask is None else valid.buffers()[1]
            return pa.StructArray.from_buffers(pa.struct([]), n, [validity])
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if kind in ("array", "map", "kvmap"):
        mask = _mask(pa.array(lists[col.valid], pa.bool_()))
        offsets = pa.array(lists[col.offsets], pa.int32())
        if kind == "array":
            (element,) = col.children
            values = _build(element, lists, t.value_type)
            list_type = pa.list_(t.value_field.with_type(values.type))
            return pa.ListArray.from_arrays(offsets, values, type=list_type, mask=mask)
        key, value = col.children
        keys = _build(key, lists, t.key_type)
        items = _build(value, lists, t.item_type)
        map_type = pa.map_(t.key_field.with_type(keys.type), t.item_field.with_type(items.type))
        return pa.MapArray.from_arrays(offsets, keys, items, type=map_type, mask=mask)
    return _leaf(col.node, lists[col.values], t)


# -- the file --------------------------------------------------------------------------------


class AvroDataFile:
    """An open Avro data file: its schema with ids and its selected columns in batches.

    Use as a context manager (closes the stream)."""

    def __init__(self, io: FileIO, location: str, name_mapping: NameMapping | None) -> None:
        self.location = location
        try:
            self._stream = io.new_input(location).open()
        except FileNotFoundError as e:
            raise NoSuchFileError(f"Data file not found: {location}") from e
        try:
            self.header: AvroHeader = read_avro_header(location, self._stream)
            self.schema = resolve_file_schema(location, self.header.writer_schema, name_mapping)
            self.arrow_schema = _file_arrow_schema(self.schema)
        except BaseException:
            self._stream.close()
            raise

    def __enter__(self) -> AvroDataFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()

    def batches(
        self, selection: Selection, batch_size: int, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        """The selected top-level columns of the blocks starting in ``[start, end)``, in
        batches of at most ``batch_size`` rows, each with the file position of its first
        row."""
        decoder = compile_decoder(self.schema, selection)
        types = {f.name: f for f in self.arrow_schema}
        lists = decoder.new_lists()
        first: int | None = None
        rows = 0
        blocks = iter_avro_blocks(self.header, self._stream, start=start, end=end)
        for block_first, block in blocks:
            if first is not None and block_first != first + rows:
                yield from self._flush(decoder, lists, types, first, rows, batch_size)
                lists, first, rows = decoder.new_lists(), None, 0
            if first is None:
                first = block_first
            decoder.decode(self.location, block.offset, block.data, block.count, lists)
            rows += block.count
            if rows >= batch_size:
                yield from self._flush(decoder, lists, types, first, rows, batch_size)
                lists, first, rows = decoder.new_lists(), None, 0
        if rows and first is not None:
            yield from self._flush(decoder, lists, types, first, rows, batch_size)

    def _flush(
        self,
        decoder: Decoder,
        lists: list[list[Any]],
        types: Mapping[str, pa.Field],
        first: int,
        rows: int,
        batch_size: int,
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        try:
            arrays = [_build(c, lists, types[c.child.name].type) for c in decoder.columns]
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowIndexError, ValueError) as e:
            raise InvalidAvroFileError(
                f"Cannot read Avro file {self.location}: bad values in the rows from "
                f"position {first}: {e}"
            ) from e
        lists.clear()
        if arrays:
            fields = [
                types[c.child.name].with_type(a.type) for c, a in zip(decoder.columns, arrays)
            ]
            batch = pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))
        else:
            empty = pa.StructArray.from_buffers(pa.struct([]), rows, [None])
            batch = pa.RecordBatch.from_struct_array(empty)
        for offset in range(0, rows, batch_size):
            yield first + offset, batch.slice(offset, batch_size)
