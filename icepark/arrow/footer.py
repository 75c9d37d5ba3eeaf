"""What a Parquet file's footer tells about its columns: leaf columns by field id, column
chunk sizes and row-group offsets, and (for files icepark did not write itself) the metrics
and partition values of a whole data file, as Java's ``ParquetUtil.fileMetrics`` reads them.

* :func:`parquet_leaves` walks a file's Arrow schema (with ``PARQUET:field_id``) to its leaf
  columns in file order: structs by their fields, list elements, map keys then values.
* :func:`sizes_and_offsets` gives the compressed size of each leaf column (summed over row
  groups) and the split offsets (row-group starts): the writer's metrics use it for the files
  it writes.
* :func:`data_file_from_footer` makes the manifest entry of a file written by another writer
  (Spark's native Parquet writer through icepark, or files added to a table) from its footer
  alone: per column the value and null counts and the bounds from each row group's
  statistics, truncated per the table's metrics config; a column whose statistics are missing
  from a row group gets no null count and no bounds, floats whose statistics hold NaN no
  bounds, and no NaN counts are reported (footers have none; Iceberg allows that); zero
  bounds of floats are read as parquet-java reads them (lower -0.0, upper +0.0). The
  partition tuple is computed from the statistics of the partition source columns: a file
  holds rows of one partition when ``transform(min) == transform(max)``, which is checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icepark.arrow._parquet_thrift import check_statistics
from icepark.arrow.metrics_config import MetricsConfig, MetricsMode, truncate_bounds
from icepark.arrow.read_errors import unreadable
from icepark.arrow.schema import apply_name_mapping, field_id_of
from icepark.errors import IceparkError, ValidationError
from icepark.io import FileIO
from icepark.spec.conversions import to_bytes
from icepark.spec.manifests import DataFile, FileContent, FileFormat
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

__all__ = ["Leaf", "chunk_start", "data_file_from_footer", "parquet_leaves", "sizes_and_offsets"]


class Leaf(NamedTuple):
    """A leaf column of a Parquet file: ``repeated`` when it is inside a list or a map (Java
    keeps only its column size)."""

    field_id: int | None
    path: str
    repeated: bool
    arrow_type: pa.DataType


def parquet_leaves(arrow_schema: pa.Schema) -> list[Leaf]:
    """The leaf columns of a file's Arrow schema, in file order (dotted paths)."""
    out: list[Leaf] = []

    def walk(f: pa.Field, path: str, repeated: bool) -> None:
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), f"{path}.{t.field(i).name}", repeated)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(t.value_field, f"{path}.element", True)
        elif pa.types.is_map(t):
            walk(t.key_field, f"{path}.key", True)
            walk(t.item_field, f"{path}.value", True)
        else:
            out.append(Leaf(field_id_of(f), path, repeated, t))

    for f in arrow_schema:
        walk(f, f.name, False)
    return out


def chunk_start(chunk: Any) -> int:
    """Where a column chunk starts: its dictionary page, else its first data page."""
    if chunk.has_dictionary_page and chunk.dictionary_page_offset:
        return int(min(chunk.dictionary_page_offset, chunk.data_page_offset))
    return int(chunk.data_page_offset)


def sizes_and_offsets(
    metadata: pq.FileMetaData,
    keep: Callable[[int], bool],
    arrow_schema: pa.Schema | None = None,
) -> tuple[dict[int, int], tuple[int, ...] | None]:
    """Compressed size per leaf column (those whose field id ``keep`` accepts) and the
    row groups' start offsets, sorted. ``arrow_schema``: the file's schema with field ids
    (when a name mapping gave them), else the footer's."""
    leaves = parquet_leaves(arrow_schema or metadata.schema.to_arrow_schema())
    if metadata.num_columns != len(leaves):
        raise ValidationError(
            f"Parquet footer lists {metadata.num_columns} columns but its schema has "
            f"{len(leaves)} leaves"
        )
    sizes: dict[int, int] = {}
    offsets: list[int] = []
    for r in range(metadata.num_row_groups):
        rg = metadata.row_group(r)
        for c, (field_id, *_) in enumerate(leaves):
            chunk = rg.column(c)
            if c == 0:
                offsets.append(chunk_start(chunk))
            if field_id is not None and keep(field_id):
                sizes[field_id] = sizes.get(field_id, 0) + chunk.total_compressed_size
    return sizes, (tuple(sorted(offsets)) if offsets else None)


# -- metrics of a file written elsewhere -----------------------------------------------------


@dataclass
class _Column:
    field_id: int
    field_type: PrimitiveType
    path: str
    values: int = 0
    nulls: int | None = 0
    low: Any = None
    high: Any = None
    stats_ok: bool = True
    seen: list[Any] = field(default_factory=list)
    scale: tuple[int, int] = (1, 1)  # (multiply, divide) raw statistics into microseconds


def _scale(arrow_type: pa.DataType) -> tuple[int, int]:
    """How to bring a timestamp's raw value to microseconds."""
    if pa.types.is_timestamp(arrow_type):
        units = {"s": (1_000_000, 1), "ms": (1000, 1), "us": (1, 1), "ns": (1, 1000)}
        return units.get(arrow_type.unit, (1, 1))
    return (1, 1)


def _value(t: PrimitiveType, raw: Any, scale: tuple[int, int] = (1, 1)) -> Any:
    """A Parquet physical statistics value in icepark's internal representation."""
    if scale != (1, 1) and isinstance(raw, int):
        return raw * scale[0] // scale[1]
    if isinstance(t, StringType):
        return bytes(raw).decode("utf-8") if not isinstance(raw, str) else raw
    if isinstance(t, DecimalType):
        if isinstance(raw, bytes | bytearray):
            return Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-t.scale)
        return Decimal(int(raw)).scaleb(-t.scale)
    if isinstance(t, BinaryType):
        return bytes(raw)
    if isinstance(t, FloatType | DoubleType):
        return float(raw)
    return raw


def _bounds(
    t: PrimitiveType, mode: MetricsMode, low: Any, high: Any
) -> tuple[bytes | None, bytes | None]:
    if isinstance(t, FloatType | DoubleType) and (math.isnan(low) or math.isnan(high)):
        return None, None
    lower, upper = truncate_bounds(t, mode, low, high)
    return (
        to_bytes(t, lower) if lower is not None else None,
        to_bytes(t, upper) if upper is not None else None,
    )


def _scan_columns(
    md: pq.FileMetaData, arrow_schema: pa.Schema, schema: Schema, location: str
) -> dict[int, _Column]:
    columns: dict[int, _Column] = {}
    index: list[_Column] = []
    leaves = parquet_leaves(arrow_schema)
    for c, (field_id, path, repeated, arrow_type) in enumerate(leaves):
        f = schema.field_or_none(field_id) if field_id is not None else None
        if f is None or not isinstance(f.field_type, PrimitiveType):
            raise ValidationError(
                f"Parquet column {path} of {location} has no field id of the table schema"
            )
        if repeated:
            raise ValidationError(
                f"Cannot take the metrics of {location} from its footer: column {path} is "
                "inside a list or a map"
            )
        index.append(_Column(f.field_id, f.field_type, path, scale=_scale(arrow_type)))
        columns[f.field_id] = index[-1]
        if md.schema.column(c).physical_type == "INT96":
            index[-1].stats_ok = False  # legacy timestamps: statistics are not comparable
    for r in range(md.num_row_groups):
        rg = md.row_group(r)
        for c, col in enumerate(index):
            chunk = rg.column(c)
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
                if isinstance(col.field_type, FloatType | DoubleType):
                    # as parquet-java reads float statistics (PARQUET-1222): a zero lower bound
                    # is -0.0 and a zero upper bound +0.0, whatever sign the writer stored
                    low = -0.0 if low == 0 else low
                    high = 0.0 if high == 0 else high
                col.low = low if col.low is None else min(col.low, low)
                col.high = high if col.high is None else max(col.high, high)
            elif stats.null_count != chunk.num_values:
                col.stats_ok = False  # values without bounds
    return columns


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
    """The manifest entry of a Parquet data file (structs and primitives) from its footer,
    its columns matched to ``schema`` by field id (or through ``name_mapping`` for columns
    without one). Partition values come from ``partition_values`` (by partition field id)
    where given, else from the statistics of their source columns; see the module docstring.
    A footer that cannot be read is an error naming the file (see
    :mod:`icepark.arrow.read_errors`: a ValidationError when corrupt, truncated or not
    Parquet)."""
    try:
        return _from_footer(
            io, location, size, schema, spec, sort_order, config, name_mapping, partition_values
        )
    except IceparkError:
        raise
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise unreadable(io, location, "the footer of Parquet file", exc) from exc


def _from_footer(
    io: FileIO,
    location: str,
    size: int,
    schema: Schema,
    spec: PartitionSpec,
    sort_order: SortOrder | None,
    config: MetricsConfig,
    name_mapping: NameMapping | None,
    partition_values: Mapping[int, Any] | None,
) -> DataFile:
    with io.new_input(location).open() as stream:
        md = pq.ParquetFile(stream).metadata
        check_statistics(stream, location)  # before pyarrow decodes them (it may abort)
    arrow_schema = md.schema.to_arrow_schema()
    if name_mapping is not None:
        arrow_schema = apply_name_mapping(arrow_schema, name_mapping)
    columns = _scan_columns(md, arrow_schema, schema, location)
    rows = md.num_rows
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    modes = {fid: config.mode_for(fid, schema) for fid in columns}
    for field_id, col in columns.items():
        mode = modes[field_id]
        if not mode.has_counts:
            continue
        values[field_id] = col.values
        if col.nulls is not None:
            nulls[field_id] = col.nulls
        if mode.has_bounds and col.stats_ok and col.low is not None:
            lo, hi = _bounds(col.field_type, mode, col.low, col.high)
            if lo is not None:
                lower[field_id] = lo
            if hi is not None:
                upper[field_id] = hi
    sizes, offsets = sizes_and_offsets(
        md, lambda fid: fid in modes and modes[fid].has_counts, arrow_schema
    )
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
        split_offsets=offsets,
        sort_order_id=sort_order.order_id if sort_order is not None else None,
        spec_id=spec.spec_id,
    )
