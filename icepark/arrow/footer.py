"""Data file entries for Parquet files from their footers: files written by Spark's own
writer, and existing files registered with ``add_files``.

Java computes the metrics of Parquet files from their footers too (``ParquetUtil``): per
column the compressed size, the value and null counts and the bounds from each row group's
statistics (truncated per the table's metrics config); a column whose statistics are missing
from a row group gets no null count and no bounds, floats whose statistics hold NaN no bounds.
Spark's writer records no NaN counts, so none are reported (which Iceberg allows).

The partition tuple of a file is computed from the statistics of the partition source
columns: Spark's writer got rows of a single Iceberg partition per file (see
:mod:`icepark.spark.writer`), so ``transform(min) == transform(max)`` is the partition
value; this is checked. Values known otherwise (an imported file's Hive-style path) can be
given instead.

Files without field ids are read through a name mapping. Timestamp statistics in
milliseconds or nanoseconds are scaled to microseconds; INT96 timestamps (legacy writers)
have no usable statistics, so they get no bounds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icepark.arrow.metrics import (
    MetricsConfig,
    truncate_binary_max,
    truncate_binary_min,
    truncate_string_max,
    truncate_string_min,
)
from icepark.arrow.schema import apply_name_mapping, field_id_of
from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.manifest import DataFile
from icepark.spec.conversions import to_bytes
from icepark.spec.manifests import FileContent, FileFormat
from icepark.spec.name_mapping import NameMapping
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.sorting import SortOrder
from icepark.spec.types import (
    BinaryType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    PrimitiveType,
    StringType,
)

__all__ = ["data_file_from_footer"]


@dataclass
class _Column:
    field_id: int
    field_type: PrimitiveType
    path: str
    size: int = 0
    values: int = 0
    nulls: int | None = 0
    low: Any = None
    high: Any = None
    stats_ok: bool = True
    seen: list[Any] = field(default_factory=list)
    scale: tuple[int, int] = (1, 1)  # (multiply, divide) raw statistics into the table's unit


def _leaf_ids(arrow_schema: pa.Schema) -> list[tuple[int | None, str]]:
    out: list[tuple[int | None, str]] = []

    def walk(f: pa.Field, prefix: str) -> None:
        path = f"{prefix}{f.name}"
        if pa.types.is_struct(f.type):
            for i in range(f.type.num_fields):
                walk(f.type.field(i), path + ".")
        elif pa.types.is_list(f.type) or pa.types.is_map(f.type) or pa.types.is_large_list(f.type):
            raise ValidationError(f"Cannot compute footer metrics of nested column {path}")
        else:
            out.append((field_id_of(f), path))

    for f in arrow_schema:
        walk(f, "")
    return out


def _leaf_types(arrow_schema: pa.Schema) -> list[pa.DataType]:
    out: list[pa.DataType] = []

    def walk(f: pa.Field) -> None:
        if pa.types.is_struct(f.type):
            for i in range(f.type.num_fields):
                walk(f.type.field(i))
        else:
            out.append(f.type)

    for f in arrow_schema:
        walk(f)
    return out


def _decimal(unscaled: int, scale: int) -> Decimal:
    return Decimal(unscaled).scaleb(-scale)


def _scale(arrow_type: pa.DataType) -> tuple[int, int]:
    """How to bring a timestamp's raw value to microseconds."""
    if pa.types.is_timestamp(arrow_type):
        return {"s": (1_000_000, 1), "ms": (1000, 1), "us": (1, 1), "ns": (1, 1000)}.get(
            arrow_type.unit, (1, 1)
        )
    return (1, 1)


def _value(t: PrimitiveType, raw: Any, scale: tuple[int, int] = (1, 1)) -> Any:
    """A Parquet physical statistics value in icepark's internal representation."""
    if scale != (1, 1) and isinstance(raw, int):
        return raw * scale[0] // scale[1]
    if isinstance(t, StringType):
        return bytes(raw).decode("utf-8") if not isinstance(raw, str) else raw
    if isinstance(t, DecimalType):
        if isinstance(raw, bytes | bytearray):
            return _decimal(int.from_bytes(raw, "big", signed=True), t.scale)
        return _decimal(int(raw), t.scale)
    if isinstance(t, BinaryType):
        return bytes(raw)
    if isinstance(t, FloatType | DoubleType):
        return float(raw)
    return raw


def _bounds(t: PrimitiveType, mode: Any, low: Any, high: Any) -> tuple[bytes | None, bytes | None]:
    if isinstance(t, FloatType | DoubleType) and (math.isnan(low) or math.isnan(high)):
        return None, None
    lower: Any = low
    upper: Any = high
    if mode.kind == "truncate":
        if isinstance(t, StringType):
            lower, upper = (
                truncate_string_min(low, mode.length),
                truncate_string_max(high, mode.length),
            )
        elif isinstance(t, BinaryType):
            lower, upper = (
                truncate_binary_min(low, mode.length),
                truncate_binary_max(high, mode.length),
            )
    return (
        to_bytes(t, lower) if lower is not None else None,
        to_bytes(t, upper) if upper is not None else None,
    )


def _chunk_start(chunk: Any) -> int:
    if chunk.has_dictionary_page and chunk.dictionary_page_offset:
        return int(min(chunk.dictionary_page_offset, chunk.data_page_offset))
    return int(chunk.data_page_offset)


def _read_footer(io: FileIO, location: str) -> pq.FileMetaData:
    with io.new_input(location).open() as stream:
        return pq.ParquetFile(stream).metadata


def _scan_columns(
    md: pq.FileMetaData, schema: Schema, location: str, name_mapping: NameMapping | None = None
) -> tuple[dict[int, _Column], list[int]]:
    arrow_schema = md.schema.to_arrow_schema()
    if name_mapping is not None:
        arrow_schema = apply_name_mapping(arrow_schema, name_mapping)
    leaves = _leaf_ids(arrow_schema)
    types = _leaf_types(arrow_schema)
    columns: dict[int, _Column] = {}
    index: list[int] = []
    for c, (field_id, path) in enumerate(leaves):
        f = schema.field_or_none(field_id) if field_id is not None else None
        if f is None or not isinstance(f.field_type, PrimitiveType):
            raise ValidationError(
                f"Parquet column {path} of {location} has no field id of the table schema"
            )
        column = _Column(f.field_id, f.field_type, path, scale=_scale(types[c]))
        if md.schema.column(c).physical_type == "INT96":
            column.stats_ok = False  # legacy timestamps: statistics are not comparable
        columns[f.field_id] = column
        index.append(f.field_id)
    offsets = []
    for r in range(md.num_row_groups):
        rg = md.row_group(r)
        for c, field_id in enumerate(index):
            chunk = rg.column(c)
            col = columns[field_id]
            if c == 0:
                offsets.append(_chunk_start(chunk))
            col.size += chunk.total_compressed_size
            col.values += chunk.num_values
            stats = chunk.statistics if chunk.is_stats_set else None
            if stats is None or not stats.has_null_count:
                col.stats_ok = False
                col.nulls = None
                continue
            if col.nulls is not None:
                col.nulls += stats.null_count
            if stats.has_min_max and col.stats_ok:
                low = _value(col.field_type, stats.min_raw, col.scale)
                high = _value(col.field_type, stats.max_raw, col.scale)
                col.low = low if col.low is None else min(col.low, low)
                col.high = high if col.high is None else max(col.high, high)
            elif stats.null_count != chunk.num_values:
                col.stats_ok = False  # values without bounds
    return columns, sorted(offsets)


def _partition_value(
    io: FileIO, location: str, col: _Column, source: IcebergType, transform: Any, rows: int
) -> Any:
    if col.nulls is not None and col.nulls == rows:
        return None
    low, high = col.low, col.high
    if not col.stats_ok or low is None:
        with io.new_input(location).open() as stream:
            table = pq.read_table(stream, columns=[col.path])
        values = table.column(0).drop_null()
        if len(values) == 0:
            return None
        if table.column(0).null_count:
            raise ValidationError(f"{location} holds null and non-null values of {col.path}")
        scale = (1, 1)
        if pa.types.is_timestamp(values.type):
            scale = _scale(values.type)
            values = values.cast(pa.int64())
        elif pa.types.is_date(values.type):
            values = values.cast(pa.int32())
        mm = pc.min_max(values)
        low = _value(col.field_type, mm["min"].as_py(), scale)
        high = _value(col.field_type, mm["max"].as_py(), scale)
    elif col.nulls:
        raise ValidationError(f"{location} holds null and non-null values of {col.path}")
    fn = transform.bind(source)
    value, other = fn(low), fn(high)
    if value != other:
        raise ValidationError(
            f"{location} holds rows of more than one partition ({transform} of {col.path}: "
            f"{value!r} and {other!r})"
        )
    return value


def data_file_from_footer(
    io: FileIO,
    location: str,
    size: int,
    *,
    schema: Schema,
    spec: PartitionSpec,
    sort_order: SortOrder | None,
    config: MetricsConfig,
    name_mapping: NameMapping | None = None,
    partition_values: Mapping[int, Any] | None = None,
) -> DataFile:
    """The entry of a Parquet data file (structs and primitives only), its columns matched to
    ``schema`` by field id (or through ``name_mapping`` for columns without one). Partition
    values come from ``partition_values`` (by partition field id) where given, else from the
    statistics of their source columns."""
    md = _read_footer(io, location)
    columns, offsets = _scan_columns(md, schema, location, name_mapping)
    rows = md.num_rows
    sizes: dict[int, int] = {}
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    for field_id, col in columns.items():
        mode = config.mode_for(field_id, schema)
        if not mode.has_counts:
            continue
        sizes[field_id] = col.size
        values[field_id] = col.values
        if col.nulls is not None:
            nulls[field_id] = col.nulls
        if mode.has_bounds and col.stats_ok and col.low is not None:
            lo, hi = _bounds(col.field_type, mode, col.low, col.high)
            if lo is not None:
                lower[field_id] = lo
            if hi is not None:
                upper[field_id] = hi
    partition: list[Any] = []
    for pf in spec.fields:
        if partition_values is not None and pf.field_id in partition_values:
            partition.append(partition_values[pf.field_id])
            continue
        if pf.transform.is_void:
            partition.append(None)
            continue
        source = schema.find_field(pf.source_id)
        source_col = columns.get(pf.source_id)
        if source_col is None:
            raise ValidationError(f"{location} lacks partition source column {source.name}")
        partition.append(
            _partition_value(io, location, source_col, source.field_type, pf.transform, rows)
        )
    return DataFile(
        content=FileContent.DATA,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=tuple(partition),
        record_count=rows,
        file_size_in_bytes=size,
        column_sizes=sizes,
        value_counts=values,
        null_value_counts=nulls,
        nan_value_counts=None,
        lower_bounds=lower,
        upper_bounds=upper,
        split_offsets=tuple(offsets) if offsets else None,
        sort_order_id=sort_order.order_id if sort_order is not None else None,
        spec_id=spec.spec_id,
    )
