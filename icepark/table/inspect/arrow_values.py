"""Values in icepark's internal representation (see :mod:`icepark.spec.types`) as Arrow arrays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from icepark.spec.types import (
    DateType,
    IcebergType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["empty_table", "internal_to_arrow"]


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of no rows (``schema.empty_table()`` fails for nested extension types)."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


def internal_to_arrow(values: Sequence[Any], t: IcebergType, arrow_type: pa.DataType) -> pa.Array:
    """``values`` of Iceberg type ``t`` (internal representation, None for null) as an array
    of ``arrow_type``: dates are days, times and timestamps micro- or nanoseconds, uuids
    :class:`uuid.UUID`."""
    if isinstance(t, DateType):
        return pa.array(values, pa.int32()).cast(pa.date32()).cast(arrow_type)
    if isinstance(
        t, TimeType | TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType
    ):
        return pa.array(values, pa.int64()).cast(arrow_type)
    if isinstance(t, UUIDType):
        storage = pa.array([None if v is None else v.bytes for v in values], pa.binary(16))
        return pa.ExtensionArray.from_storage(arrow_type, storage)
    return pa.array(values, arrow_type)
