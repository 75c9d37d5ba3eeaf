"""The ``readable_metrics`` column of the files and entries tables, built column-wise.

For each primitive column of the table schema (Java's ``MetricsUtil.readableMetricsStruct``):
its size on disk, value, null and NaN counts from the file's metric maps, and its lower and
upper bounds decoded from their single-value binary form to the column's type. A file that
has no metric for a column gets nulls there; the struct itself is never null.

Nothing here loops over files in Python: each metric map is split once into its keys, values
and owning rows, the items of each column are picked out by key, bounds are decoded for all
files at once (fixed-width types by reinterpreting their bytes, strings by a checked cast),
and the values are scattered back to their rows. Only decimals, and bounds whose width is
not the type's (a long column's bound written as an int before the column was promoted), go
through :func:`~icepark.spec.conversions.from_bytes` one value at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from icepark.avro.arrow_nulls import null_array
from icepark.spec.conversions import from_bytes
from icepark.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)
from icepark.table.inspect.arrow_values import internal_to_arrow
from icepark.table.inspect.schemas import MetricColumn

__all__ = ["readable_metrics"]

_COUNT_MAPS = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts")
_BOUND_MAPS = ("lower_bounds", "upper_bounds")


class _MapIndex:
    """A map column split into keys, values and the row of each item, items sorted by key."""

    def __init__(self, column: pa.Array) -> None:
        self.rows = len(column)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        offsets = column.offsets.to_numpy()
        lengths = np.diff(offsets)
        start = int(offsets[0]) if offsets.size else 0
        end = int(offsets[-1]) if offsets.size else 0
        keys = column.keys.slice(start, end - start).to_numpy(zero_copy_only=False)
        self.values = column.items.slice(start, end - start)
        owner = np.repeat(np.arange(self.rows), lengths)
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.order = order
        self.owner = owner

    def pick(self, field_id: int) -> tuple[np.ndarray, pa.Array]:
        """The rows that have ``field_id`` and its values there (the last one per row)."""
        lo = int(np.searchsorted(self.keys, field_id, side="left"))
        hi = int(np.searchsorted(self.keys, field_id, side="right"))
        items = self.order[lo:hi]
        return self.owner[items], self.values.take(pa.array(items))


def _scatter(rows: np.ndarray, values: pa.Array, n: int, arrow_type: pa.DataType) -> pa.Array:
    """``values`` placed at ``rows`` of an array of ``n`` (null elsewhere)."""
    if len(values) == 0:
        return null_array(n, arrow_type)
    position = np.full(n, -1, dtype=np.int64)
    position[rows] = np.arange(rows.size)
    return values.take(pa.array(position, mask=position < 0))


def _fixed(values: pa.Array, width: int) -> np.ndarray | None:
    """The bytes of binary ``values`` (no nulls) as an array of ``width`` bytes per value, or
    None when some value has another width."""
    arr = values.cast(pa.binary()) if values.type != pa.binary() else values
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[arr.offset : arr.offset + len(arr) + 1]
    if offsets.size and not (np.diff(offsets) == width).all():
        return None
    if buffers[2] is None or not len(arr):
        return np.zeros(0, dtype=np.uint8)
    data = np.frombuffer(buffers[2], dtype=np.uint8)
    return data[offsets[0] : offsets[-1]]


_WIDTHS: dict[type[IcebergType], tuple[int, str]] = {
    IntegerType: (4, "<i4"),
    DateType: (4, "<i4"),
    LongType: (8, "<i8"),
    TimeType: (8, "<i8"),
    TimestampType: (8, "<i8"),
    TimestamptzType: (8, "<i8"),
    TimestampNanoType: (8, "<i8"),
    TimestamptzNanoType: (8, "<i8"),
    FloatType: (4, "<f4"),
    DoubleType: (8, "<f8"),
}


def decode_bounds(values: pa.Array, t: IcebergType, arrow_type: pa.DataType) -> pa.Array:
    """Binary single values (no nulls) of type ``t`` as an Arrow array of ``arrow_type``."""
    if isinstance(t, UnknownType) or not isinstance(t, PrimitiveType):
        return pa.nulls(len(values), arrow_type)
    width = _WIDTHS.get(type(t))
    if width is not None:
        raw = _fixed(values, width[0])
        if raw is not None:
            numbers = raw.view(width[1])
            storage = pa.array(numbers)
            if isinstance(t, DateType):
                return storage.cast(pa.date32()).cast(arrow_type)
            return storage.cast(arrow_type)
    elif isinstance(t, BooleanType):
        raw = _fixed(values, 1)
        if raw is not None:
            return pa.array(raw != 0, pa.bool_())
    elif isinstance(t, StringType):
        try:
            return values.cast(arrow_type)
        except pa.ArrowInvalid:
            pass  # not UTF-8: decode value by value below
    elif isinstance(t, UUIDType):
        raw = _fixed(values, 16)
        if raw is not None:
            storage = pa.Array.from_buffers(pa.binary(16), len(values), [None, pa.py_buffer(raw)])
            return pa.ExtensionArray.from_storage(arrow_type, storage)
    elif isinstance(t, FixedType):
        raw = _fixed(values, t.length)
        if raw is not None:
            return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(raw)])
    elif not isinstance(t, DecimalType):
        return values.cast(arrow_type)
    return _one_by_one(values, t, arrow_type)


def _one_by_one(values: pa.Array, t: PrimitiveType, arrow_type: pa.DataType) -> pa.Array:
    decoded: list[Any] = []
    for b in values.to_pylist():
        try:
            decoded.append(from_bytes(t, b))
        except (ValueError, TypeError):
            decoded.append(None)  # a bound this type cannot hold (it stays unreadable)
    return internal_to_arrow(decoded, t, arrow_type)


def readable_metrics(
    maps: dict[str, pa.Array],
    columns: Sequence[MetricColumn],
    arrow_type: pa.StructType,
    n: int,
) -> pa.StructArray:
    """The ``readable_metrics`` struct of ``n`` files from their six metric map columns
    (``column_sizes``, ..., ``upper_bounds``), one struct field per column of ``columns``."""
    index = {name: _MapIndex(maps[name]) for name in (*_COUNT_MAPS, *_BOUND_MAPS)}
    per_column = []
    for column, column_field in zip(columns, arrow_type):
        metric_type = column_field.type
        arrays = []
        for name, metric_field in zip((*_COUNT_MAPS, *_BOUND_MAPS), metric_type):
            rows, values = index[name].pick(column.field.field_id)
            if name in _BOUND_MAPS:
                values = decode_bounds(values, column.field.field_type, metric_field.type)
            elif not values.type.equals(metric_field.type):
                values = values.cast(metric_field.type)
            arrays.append(_scatter(rows, values, n, metric_field.type))
        per_column.append(pa.StructArray.from_arrays(arrays, fields=list(metric_type)))
    if not per_column:
        return pa.array([{}] * n, pa.struct([]))
    return pa.StructArray.from_arrays(per_column, fields=list(arrow_type))
