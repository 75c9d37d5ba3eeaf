"""Arrow data as ORC data files typed as Java's Iceberg ORC writer types them.

pyarrow's ORC writer turns Arrow field metadata into attributes of the ORC type tree, so the
file carries what Java's ``ORCSchemaUtil.convert`` puts there and what its readers (and
:mod:`icepark.arrow.orc_reader`) match columns by: ``iceberg.id`` and ``iceberg.required`` on
every field; ``time`` as a ``bigint`` marked ``iceberg.long-type=TIME`` (microseconds),
``long`` marked ``LONG``; ``uuid``, ``fixed(L)`` and ``binary`` as ``binary`` marked
``iceberg.binary-type`` ``UUID`` / ``FIXED`` (with ``iceberg.length``) / ``BINARY``;
``timestamp`` as ORC ``timestamp`` and ``timestamptz`` as ``timestamp with local time zone``,
both marked ``iceberg.timestamp-unit`` (``MICROS`` or ``NANOS``); decimals, dates, strings,
structs, lists and maps as themselves.

:class:`OrcOpenFile` is what :mod:`icepark.arrow.writer` writes an ORC data file through:
``write.orc.compression-codec`` (zlib by default, as Java; snappy, lz4, zstd, none) and
``write.orc.stripe-size-bytes``. Its metrics are computed from the rows written, with the
rules of :mod:`icepark.arrow.metrics` (value, null and NaN counts, bounds by metrics mode);
ORC files get no column sizes or split offsets here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc

from icepark.arrow.metrics import Metrics, MetricsCollector
from icepark.arrow.orc_reader import (
    ICEBERG_BINARY_TYPE_ATTRIBUTE,
    ICEBERG_ID_ATTRIBUTE,
    ICEBERG_LENGTH_ATTRIBUTE,
    ICEBERG_LONG_TYPE_ATTRIBUTE,
    ICEBERG_REQUIRED_ATTRIBUTE,
)
from icepark.arrow.schema import primitive_to_arrow
from icepark.arrow.sink import StreamSink
from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.spec import properties as P
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BinaryType,
    FixedType,
    IcebergType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["ICEBERG_TIMESTAMP_UNIT_ATTRIBUTE", "OrcOpenFile", "orc_arrow_schema"]

ICEBERG_TIMESTAMP_UNIT_ATTRIBUTE = b"iceberg.timestamp-unit"
_CODECS = {
    "zlib": "zlib",
    "snappy": "snappy",
    "lz4": "lz4",
    "zstd": "zstd",
    "none": "uncompressed",
    "uncompressed": "uncompressed",
}


def _field(f: NestedField) -> pa.Field:
    meta = {
        ICEBERG_ID_ATTRIBUTE: str(f.field_id).encode(),
        ICEBERG_REQUIRED_ATTRIBUTE: b"true" if f.required else b"false",
    }
    t = _type(f.field_type, meta)
    return pa.field(f.name, t, nullable=True, metadata=meta)


def _type(t: IcebergType, meta: dict[bytes, bytes]) -> pa.DataType:
    if isinstance(t, StructType):
        return pa.struct([_field(c) for c in t.fields])
    if isinstance(t, ListType):
        return pa.list_(_field(t.element_field))
    if isinstance(t, MapType):
        return pa.map_(_field(t.key_field).with_nullable(False), _field(t.value_field))
    if isinstance(t, TimeType):
        meta[ICEBERG_LONG_TYPE_ATTRIBUTE] = b"TIME"
        return pa.int64()
    if isinstance(t, LongType):
        meta[ICEBERG_LONG_TYPE_ATTRIBUTE] = b"LONG"
        return pa.int64()
    if isinstance(t, UUIDType):
        meta[ICEBERG_BINARY_TYPE_ATTRIBUTE] = b"UUID"
        return pa.binary()
    if isinstance(t, FixedType):
        meta[ICEBERG_BINARY_TYPE_ATTRIBUTE] = b"FIXED"
        meta[ICEBERG_LENGTH_ATTRIBUTE] = str(t.length).encode()
        return pa.binary()
    if isinstance(t, BinaryType):
        meta[ICEBERG_BINARY_TYPE_ATTRIBUTE] = b"BINARY"
        return pa.binary()
    if isinstance(t, TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType):
        nanos = isinstance(t, TimestampNanoType | TimestamptzNanoType)
        meta[ICEBERG_TIMESTAMP_UNIT_ATTRIBUTE] = b"NANOS" if nanos else b"MICROS"
        zone = "UTC" if isinstance(t, TimestamptzType | TimestamptzNanoType) else None
        return pa.timestamp("ns" if nanos else "us", tz=zone)
    assert isinstance(t, PrimitiveType)
    return primitive_to_arrow(t)


def orc_arrow_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema pyarrow writes as the ORC type tree Java writes for ``schema``."""
    return pa.schema([_field(f) for f in schema.fields])


def _convert(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """A column of icepark's Arrow form as the ORC writer's Arrow type."""
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [_convert(arr.field(i), t.field(i).type) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_list(t) or pa.types.is_map(t):
        offsets = arr.offsets
        start = offsets[0].as_py() if len(offsets) else 0
        end = offsets[-1].as_py() if len(offsets) else 0
        fresh = pc.subtract(offsets, pa.scalar(start, offsets.type))
        if pa.types.is_list(t):
            values = _convert(arr.values.slice(start, end - start), t.value_type)
            return pa.ListArray.from_arrays(fresh, values, type=t, mask=mask)
        keys = _convert(arr.keys.slice(start, end - start), t.key_type)
        items = _convert(arr.items.slice(start, end - start), t.item_type)
        return pa.MapArray.from_arrays(fresh, keys, items, type=t, mask=mask)
    if isinstance(arr.type, pa.BaseExtensionType):  # uuid
        return arr.storage.cast(t)
    if pa.types.is_time64(arr.type):
        return arr.view(pa.int64())
    return arr if arr.type.equals(t) else arr.cast(t)


class OrcOpenFile:
    """An ORC data file being written: rows go in as Arrow tables of the file schema."""

    def __init__(
        self,
        io: FileIO,
        location: str,
        schema: Schema,
        properties: Mapping[str, str],
        collector: MetricsCollector,
    ) -> None:
        self.location = location
        self.collector = collector
        self.arrow_schema = orc_arrow_schema(schema)
        codec_name = P.ORC_COMPRESSION.get(properties)
        codec = _CODECS.get(codec_name)
        if codec is None:
            raise ValidationError(f"Unsupported ORC compression codec: {codec_name!r}")
        self.stream = io.new_output(location).create()
        self._sink = StreamSink(self.stream)
        self.chunks: set[int] = set()
        self.row_groups = 0
        try:
            self.writer = orc.ORCWriter(
                self._sink,
                compression=codec,
                stripe_size=P.ORC_STRIPE_SIZE_BYTES.get(properties),
                file_version="0.12",
            )
        except BaseException:
            self.stream.abort()
            raise

    @property
    def position(self) -> int:
        return self.stream.tell()

    def write(self, table: pa.Table) -> None:
        combined = table.combine_chunks()
        arrays = [
            _convert(c.combine_chunks(), f.type)
            for c, f in zip(combined.columns, self.arrow_schema)
        ]
        self.writer.write(pa.Table.from_arrays(arrays, schema=self.arrow_schema))
        self.collector.update(table)
        self.row_groups += 1

    def close(self) -> tuple[int, Metrics]:
        self.writer.close()
        metrics = self.collector.finish(None)
        size = self.stream.tell()
        self.stream.close()  # publishes the file
        return size, metrics

    def abort(self) -> None:
        self._sink.discard = True
        with contextlib.suppress(Exception):
            self.writer.close()
        self.stream.abort()
