"""Row-level helpers for writing data files: nested columns, partition keys and sort order."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.arrow.transforms import apply_transform
from icepark.errors import ValidationError
from icepark.spec.schema import Schema
from icepark.spec.sorting import NullOrder, SortDirection, SortOrder
from icepark.spec.types import (
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = [
    "iter_batches",
    "nested_column",
    "to_internal_arrow",
    "from_internal_value",
    "hashable",
    "sort_indices",
]


def iter_batches(data: Any) -> Iterator[pa.RecordBatch]:
    if isinstance(data, pa.RecordBatchReader):
        yield from data
        return
    for item in data:
        if isinstance(item, pa.Table):
            yield from item.to_batches()
        elif isinstance(item, pa.RecordBatch):
            yield item
        else:
            raise ValidationError(f"Expected Arrow record batches, got {type(item).__name__}")


def nested_column(data: pa.RecordBatch | pa.Table, schema: Schema, field_id: int) -> Any:
    """The values of the (possibly nested) field ``field_id``; null where a parent is null."""
    chain = [field_id]
    parent = schema.parent_id(field_id)
    while parent is not None:
        chain.append(parent)
        parent = schema.parent_id(parent)
    chain.reverse()
    struct: IcebergType = schema.as_struct()
    column: Any = None
    for fid in chain:
        if not isinstance(struct, StructType):
            raise ValidationError(f"Field id {field_id} is not reachable through structs only")
        index = next(i for i, f in enumerate(struct.fields) if f.field_id == fid)
        column = data.column(index) if column is None else pc.struct_field(column, [index])
        struct = struct.fields[index].field_type
    return column


def to_internal_arrow(values: Any, t: IcebergType) -> Any:
    """Transformed values as Arrow types whose Python values are the internal representation
    (uuids as their 16 bytes)."""
    if isinstance(values.type, pa.BaseExtensionType):
        values = pc.cast(values, values.type.storage_type)
    if isinstance(t, DateType):
        return values.cast(pa.int32())
    if isinstance(
        t,
        TimeType | TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType,
    ):
        return values.cast(pa.int64())
    return values


def from_internal_value(value: Any, ptype: StructType, index: int) -> Any:
    if value is not None and isinstance(ptype.fields[index].field_type, UUIDType):
        return uuid.UUID(bytes=value)
    return value


def hashable(value: Any) -> Any:
    """A dictionary key for a partition value: NaN equal to NaN, -0.0 apart from 0.0."""
    if isinstance(value, float):
        return ("float", "nan" if value != value else value, math.copysign(1.0, value))
    return value


def sort_indices(data: pa.RecordBatch | pa.Table, schema: Schema, order: SortOrder) -> Any:
    """Row order for ``order``: per field direction and null order, NaN above every number."""
    keys: dict[str, Any] = {}
    sort_keys: list[tuple[str, str]] = []
    for i, sf in enumerate(order.fields):
        source = schema.field_or_none(sf.source_id)
        if source is None:
            continue
        column = nested_column(data, schema, sf.source_id)
        values = apply_transform(sf.transform, source.field_type, column)
        if isinstance(values.type, pa.BaseExtensionType):
            values = pc.cast(values, values.type.storage_type)
        ascending = sf.direction is SortDirection.ASC
        direction = "ascending" if ascending else "descending"
        nulls_first = sf.null_order is NullOrder.NULLS_FIRST
        keys[f"n{i}"] = pc.is_valid(values) if nulls_first else pc.is_null(values)
        sort_keys.append((f"n{i}", "ascending"))
        if isinstance(source.field_type, FloatType | DoubleType) and sf.transform.is_identity:
            keys[f"f{i}"] = pc.fill_null(pc.is_nan(values), False)
            sort_keys.append((f"f{i}", direction))
        keys[f"v{i}"] = values
        sort_keys.append((f"v{i}", direction))
    if not keys:
        return pa.array(range(data.num_rows), pa.int64())
    return pc.sort_indices(pa.table(keys), sort_keys=sort_keys)
