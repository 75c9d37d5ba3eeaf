"""Arrow data as Avro data files, encoded column by column.

:func:`encode_rows` turns a batch of a table's file schema (as
:func:`~icepark.arrow.conform.conform_batch` gives it) into one binary value per row, the
row's Avro binary encoding under :func:`~icepark.avro.schema.schema_to_avro` of that schema
(Iceberg's Avro schema: field ids, ``["null", T]`` for optional fields, logical types).
Every column is encoded at once with numpy and Arrow kernels, never value by value: ints
and longs as zig-zag varints, floats and doubles as little-endian IEEE, strings and binary
as a varint length and the bytes, decimals as big-endian two's complement in the fewest
bytes of their precision, uuids as 16 bytes; a struct is its fields' encodings joined, a
list or map one block of items (``count, items..., 0``), an optional value the union index
(0 null, 1 value) and the value. The rows of a batch then make Avro blocks of about
:data:`BLOCK_BYTES` (Avro's default sync interval) written by
:class:`~icepark.avro.file.AvroBlockWriter`.

:class:`AvroOpenFile` is what :mod:`icepark.arrow.writer` writes an Avro data file through
(the Parquet writer's counterpart). Avro files carry only a record count: Java's
``AvroMetrics`` records no column metrics for them, and neither does this.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.avro.file import AvroBlockWriter
from icepark.avro.schema import decimal_required_bytes, schema_to_avro
from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.spec import properties as P
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BinaryType,
    BooleanType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    StringType,
    StructType,
    UnknownType,
    UUIDType,
)

__all__ = ["BLOCK_BYTES", "AvroOpenFile", "avro_codec_and_level", "encode_rows"]

BLOCK_BYTES = 64_000
"""Uncompressed bytes per block (Avro's ``DataFileConstants.DEFAULT_SYNC_INTERVAL``)."""

_GZIP_LEVEL = 9  # Java's Avro.GZIP_COMPRESSION_LEVEL_DEFAULT
_ZSTD_LEVEL = 1  # Java's Avro.ZSTD_COMPRESSION_LEVEL_DEFAULT
_B = pa.large_binary()


@functools.cache
def _scalar(value: bytes) -> pa.Scalar:
    # made on first use: building Arrow scalars imports pandas when it is installed
    return pa.scalar(value, _B)


def avro_codec_and_level(properties: Mapping[str, str], delete: bool = False) -> tuple[str, int]:
    """The Avro container codec and level Java uses for a table's data files
    (``write.avro.compression-codec`` / ``-level``: gzip = deflate at level 9 by default,
    zstd at 1, snappy, uncompressed)."""
    codec = P.avro_codec(properties)
    if codec not in ("null", "deflate", "zstd", "zstandard", "snappy"):
        raise ValidationError(f"Unsupported Avro compression codec: {codec!r}")
    codec = "zstandard" if codec == "zstd" else codec
    level = P.AVRO_COMPRESSION_LEVEL.get(properties)
    if level is None:
        level = _ZSTD_LEVEL if codec == "zstandard" else _GZIP_LEVEL
    return codec, int(level)


# -- encoding --------------------------------------------------------------------------------


def _binary(offsets: np.ndarray, data: np.ndarray | bytes) -> pa.Array:
    n = len(offsets) - 1
    buf = data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
    return pa.Array.from_buffers(
        _B, n, [None, pa.py_buffer(offsets.astype(np.int64).tobytes()), pa.py_buffer(buf)]
    )


def _fixed_width(raw: np.ndarray, width: int, n: int) -> pa.Array:
    """Each row's ``width`` bytes of a contiguous (n * width) byte buffer."""
    return _binary(np.arange(n + 1, dtype=np.int64) * width, raw)


def _varints(values: np.ndarray, zigzag: bool = True) -> pa.Array:
    """Avro varints of int64 values (zig-zag encoded unless ``zigzag`` is False)."""
    v = values.astype(np.int64, copy=False)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64) if zigzag else v.view(np.uint64)
    n = len(z)
    groups = np.empty((n, 10), dtype=np.uint8)
    lengths = np.ones(n, dtype=np.int64)
    rest = z.copy()
    used = 10
    for j in range(10):
        more = (rest >> np.uint64(7)) != 0
        groups[:, j] = (rest & np.uint64(0x7F)).astype(np.uint8) | (more.astype(np.uint8) << 7)
        rest >>= np.uint64(7)
        if j < 9:
            lengths += more
        if not more.any():
            used = j + 1
            break
    mask = np.arange(used) < lengths[:, None]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return _binary(offsets, groups[:, :used][mask])


def _numbers(arr: pa.Array, dtype: Any) -> np.ndarray:
    storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
    if pa.types.is_boolean(storage.type):
        storage = storage.cast(pa.uint8())
    if storage.null_count:
        storage = pc.fill_null(storage, pa.scalar(0, storage.type))
    if pa.types.is_temporal(storage.type):
        unit = {4: pa.int32(), 8: pa.int64()}[storage.type.bit_width // 8]
        storage = storage.view(unit)
    return np.asarray(storage.to_numpy(zero_copy_only=False)).astype(dtype, copy=False)


def _join(parts: list[pa.Array], n: int) -> pa.Array:
    if not parts:
        return _binary(np.zeros(n + 1, dtype=np.int64), b"")
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, _scalar(b""))


def _bytes_values(arr: pa.Array) -> pa.Array:
    """The bytes of string/binary values as large_binary, nulls as empty."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    out = arr.cast(_B)
    return pc.fill_null(out, _scalar(b"")) if out.null_count else out


def _encode_primitive(arr: pa.Array, t: IcebergType) -> pa.Array:
    n = len(arr)
    if isinstance(t, BooleanType):
        return _fixed_width(_numbers(arr, np.uint8), 1, n)
    if isinstance(t, FloatType):
        return _fixed_width(_numbers(arr, "<f4").view(np.uint8), 4, n)
    if isinstance(t, DoubleType):
        return _fixed_width(_numbers(arr, "<f8").view(np.uint8), 8, n)
    if isinstance(t, StringType | BinaryType):
        values = _bytes_values(arr)
        lengths = pc.binary_length(values).to_numpy(zero_copy_only=False)
        return pc.binary_join_element_wise(_varints(lengths), values, _scalar(b""))
    if isinstance(t, UUIDType | FixedType):
        width = 16 if isinstance(t, UUIDType) else t.length
        storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
        if storage.null_count:
            storage = pc.fill_null(storage, pa.scalar(b"\x00" * width, storage.type))
        raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8)
        raw = raw[storage.offset * width : (storage.offset + n) * width]
        return _fixed_width(raw, width, n)
    if isinstance(t, DecimalType):
        width = decimal_required_bytes(t.precision)
        filled = pc.fill_null(arr, pa.scalar(0, arr.type)) if arr.null_count else arr
        filled = filled.cast(pa.decimal128(38, t.scale)) if filled.type.bit_width != 128 else filled
        le = np.frombuffer(filled.buffers()[1], dtype=np.uint8)
        le = le[filled.offset * 16 : (filled.offset + n) * 16].reshape(n, 16)
        be = le[:, ::-1][:, 16 - width :]
        return _fixed_width(be, width, n)
    if isinstance(t, UnknownType):
        return _binary(np.zeros(n + 1, dtype=np.int64), b"")
    # int, long, date, time, timestamps: zig-zag varints of their int values
    return _varints(_numbers(arr, np.int64))


def _repeated(arr: pa.Array, items: pa.Array) -> pa.Array:
    """One block per row of a list or map array: ``count, items..., 0`` (``0`` when empty
    or null). ``items`` are the encodings of the child values from the first offset on."""
    n = len(arr)
    bounds = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    bounds = bounds - bounds[0] if n else np.zeros(1, dtype=np.int64)
    counts = np.diff(bounds)
    if arr.null_count:  # null rows may still span values: drop them
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        keep = np.repeat(valid, counts)
        items = items.slice(0, int(bounds[-1])).filter(pa.array(keep))
        counts = np.where(valid, counts, 0)
        bounds = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
    joined = pc.binary_join(pa.LargeListArray.from_arrays(pa.array(bounds), items), _scalar(b""))
    body = pc.binary_join_element_wise(_varints(counts), joined, _scalar(b"\x00"), _scalar(b""))
    return pc.if_else(pa.array(counts == 0), _scalar(b"\x00"), body)


def _encode(arr: pa.Array, t: IcebergType) -> pa.Array:
    """The encodings of the values of ``arr`` (of type ``t``; null slots give arbitrary
    bytes: the caller decides what a null is)."""
    if isinstance(t, StructType):
        children = [_encode_field(arr.field(i), f.field_type, f.optional) for i, f in _live(t)]
        return _join(children, len(arr))
    if isinstance(t, ListType):
        values = arr.values.slice(arr.offsets[0].as_py()) if len(arr) else arr.values
        items = _encode_field(values, t.element_type, not t.element_required)
        return _repeated(arr, items)
    if isinstance(t, MapType):
        start = arr.offsets[0].as_py() if len(arr) else 0
        keys = arr.keys.slice(start) if len(arr) else arr.keys
        values = arr.items.slice(start) if len(arr) else arr.items
        pairs = pc.binary_join_element_wise(
            _encode_field(keys, t.key_type, False),
            _encode_field(values, t.value_type, not t.value_required),
            _scalar(b""),
        )
        return _repeated(arr, pairs)
    return _encode_primitive(arr, t)


def _live(t: StructType) -> list[tuple[int, Any]]:
    """The struct's fields that are written (fields of type unknown are left out)."""
    return [(i, f) for i, f in enumerate(t.fields) if not isinstance(f.field_type, UnknownType)]


def _encode_field(arr: pa.Array, t: IcebergType, optional: bool) -> pa.Array:
    value = _encode(arr, t)
    if not optional:
        return value
    with_branch = pc.binary_join_element_wise(_scalar(b"\x02"), value, _scalar(b""))
    if not arr.null_count:
        return with_branch
    return pc.if_else(arr.is_valid(), with_branch, _scalar(b"\x00"))


def encode_rows(batch: pa.RecordBatch | pa.Table, schema: Schema) -> pa.Array:
    """The Avro encoding of each row of ``batch`` (columns in the order of ``schema``'s
    fields, as a conformed batch has them) under ``schema_to_avro(schema)``."""
    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else None
        if batch is None:
            return _binary(np.zeros(1, dtype=np.int64), b"")
    parts = [
        _encode_field(batch.column(i), f.field_type, f.optional)
        for i, f in enumerate(schema.fields)
        if not isinstance(f.field_type, UnknownType)
    ]
    return _join(parts, batch.num_rows)


def _blocks(rows: pa.Array, block_bytes: int) -> list[tuple[int, bytes]]:
    """Rows grouped into blocks as Avro's writer groups them (a block ends with the record
    that brings it to ``block_bytes``): (record count, encoded records)."""
    n = len(rows)
    if n == 0:
        return []
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int64)[rows.offset : rows.offset + n + 1]
    data = memoryview(rows.buffers()[2])
    out = []
    a = 0
    while a < n:
        b = int(np.searchsorted(offsets, offsets[a] + block_bytes, side="left"))
        b = min(max(b, a + 1), n)
        out.append((b - a, bytes(data[int(offsets[a]) : int(offsets[b])])))
        a = b
    return out


# -- one open file ---------------------------------------------------------------------------


class AvroOpenFile:
    """An Avro data file being written: rows go in as Arrow tables of the file schema."""

    def __init__(
        self,
        io: FileIO,
        location: str,
        schema: Schema,
        properties: Mapping[str, str],
        *,
        metadata: Mapping[str, str] | None = None,
        avro_schema: Mapping[str, Any] | None = None,
        block_bytes: int = BLOCK_BYTES,
    ) -> None:
        """``avro_schema`` replaces ``schema_to_avro(schema)`` in the header (it must encode
        the same way: e.g. without ids, for tests of files other writers make)."""
        self.location = location
        self.schema = schema
        self.block_bytes = block_bytes
        codec, level = avro_codec_and_level(properties)
        header_schema = avro_schema if avro_schema is not None else schema_to_avro(schema)
        self._writer = AvroBlockWriter(
            io.new_output(location), header_schema, codec, level, metadata or {}
        )
        self.record_count = 0
        self.chunks: set[int] = set()
        self.row_groups = 0

    @property
    def position(self) -> int:
        return self._writer.position

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        rows = encode_rows(table, self.schema)
        for count, data in _blocks(rows, self.block_bytes):
            self._writer.write_block(count, data)
        self.record_count += table.num_rows
        self.row_groups += 1

    def close(self) -> int:
        """Publish the file; its length in bytes."""
        return self._writer.close()

    def abort(self) -> None:
        self._writer.abort()
