"""Column metrics of Parquet data files, computed as the Java implementation (1.10) does.

The mode of each column comes from :class:`~icepark.arrow.metrics_config.MetricsConfig`
(re-exported here). :class:`MetricsCollector` takes the rows of each row group as they are
written and, with the file's Parquet footer, gives the :class:`Metrics` Java reports:

* columns nested in a list or a map get a column size only (no counts, no bounds);
* value counts include nulls; a value under a null struct counts as a null;
* floats and doubles are counted as Java's writers count them: a value under a null struct is
  not counted at all (neither as a value nor as a null); NaN counts are kept; bounds ignore NaN
  and order -0.0 below 0.0; in ``counts`` mode they get no bounds;
* ``truncate(N)`` truncates strings to N code points (the upper bound with its last code point
  incremented, dropped when no code point can be) and binary to N bytes likewise; other types
  (fixed included) keep exact bounds;
* bounds of a file with several row groups are merged from per-row-group bounds as Java does
  (so uuids compare as ``java.util.UUID`` does across row groups, bytewise within one);
* column sizes are the compressed sizes of the column chunks, for columns whose mode is not
  ``none``; split offsets are the row groups' start offsets.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.arrow.footer import sizes_and_offsets
from icepark.arrow.metrics_config import (
    MetricsConfig,
    MetricsMode,
    parse_metrics_mode,
    truncate_binary_max,
    truncate_binary_min,
    truncate_bounds,
    truncate_string_max,
    truncate_string_min,
)
from icepark.spec.conversions import to_bytes
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DateType,
    DoubleType,
    FloatType,
    PrimitiveType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = [
    "MetricsMode",
    "parse_metrics_mode",
    "MetricsConfig",
    "Metrics",
    "MetricsCollector",
    "compute_metrics",
    "truncate_string_min",
    "truncate_string_max",
    "truncate_binary_min",
    "truncate_binary_max",
]


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metrics:
    """What a data file's manifest entry reports about its columns."""

    record_count: int
    column_sizes: dict[int, int]
    value_counts: dict[int, int]
    null_value_counts: dict[int, int]
    nan_value_counts: dict[int, int]
    lower_bounds: dict[int, bytes]
    upper_bounds: dict[int, bytes]
    split_offsets: tuple[int, ...] | None = None


# -- collection --------------------------------------------------------------------------------


_INT32_VIEW = (DateType,)
_INT64_VIEW = (
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNanoType,
    TimestamptzNanoType,
)


@dataclass
class _Leaf:
    """A primitive column reachable through structs only, with what is gathered for it."""

    field_id: int
    field_type: PrimitiveType
    positions: tuple[int, ...]  # child index at each struct level, top level first
    mode: MetricsMode
    value_count: int = 0
    null_count: int = 0
    nan_count: int = 0
    lower: Any = None
    upper: Any = None

    @property
    def is_float(self) -> bool:
        return isinstance(self.field_type, FloatType | DoubleType)


def _float_key(x: float) -> tuple[float, bool]:
    return (x, math.copysign(1.0, x) > 0)  # Float.compare: -0.0 < 0.0


def _uuid_key(b: bytes) -> tuple[int, int]:
    # java.util.UUID.compareTo: the two halves as signed longs
    return (int.from_bytes(b[:8], "big", signed=True), int.from_bytes(b[8:], "big", signed=True))


def _identity_key(x: Any) -> Any:
    return x


def _file_order_key(t: PrimitiveType) -> Callable[[Any], Any]:
    """How Java orders per-row-group bounds of type ``t`` when merging them."""
    if isinstance(t, FloatType | DoubleType):
        return _float_key
    if isinstance(t, UUIDType):
        return _uuid_key
    return _identity_key


class MetricsCollector:
    """Gathers the metrics of one Parquet file from the rows of its row groups.

    ``schema`` is the schema of the file as written (unknown-typed columns left out); call
    :meth:`update` with the rows of each row group, in any number of batches per call, then
    :meth:`finish` with the file's footer metadata.
    """

    def __init__(self, schema: Schema, config: MetricsConfig) -> None:
        self._schema = schema
        self._config = config
        self._leaves: list[_Leaf] = []
        self._record_count = 0
        self._collect(schema.as_struct(), ())

    def _collect(self, struct: StructType, positions: tuple[int, ...]) -> None:
        for index, f in enumerate(struct.fields):
            t = f.field_type
            if isinstance(t, StructType):
                self._collect(t, (*positions, index))
            elif isinstance(t, PrimitiveType):
                mode = self._config.mode_for(f.field_id, self._schema)
                if mode.has_counts:
                    self._leaves.append(_Leaf(f.field_id, t, (*positions, index), mode))

    @property
    def record_count(self) -> int:
        return self._record_count

    def update(self, row_group: pa.RecordBatch | pa.Table) -> None:
        """Add the rows of one row group (a batch, or a table of several batches)."""
        batches = row_group.to_batches() if isinstance(row_group, pa.Table) else [row_group]
        self._record_count += row_group.num_rows
        for leaf in self._leaves:
            low: Any = None
            high: Any = None
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                chunk_low, chunk_high = self._update_leaf(leaf, batch)
                if chunk_low is not None:
                    # within one row group Parquet orders values bytewise / numerically
                    key = _chunk_key(leaf)
                    low = chunk_low if low is None else min(low, chunk_low, key=key)
                    high = chunk_high if high is None else max(high, chunk_high, key=key)
            if low is not None:
                order = _file_order_key(leaf.field_type)
                if leaf.lower is None or order(low) < order(leaf.lower):
                    leaf.lower = low
                if leaf.upper is None or order(high) > order(leaf.upper):
                    leaf.upper = high

    def _update_leaf(self, leaf: _Leaf, batch: pa.RecordBatch) -> tuple[Any, Any]:
        arr: pa.Array = batch.column(leaf.positions[0])
        parents_valid: pa.Array | None = None
        for index in leaf.positions[1:]:
            if arr.null_count:
                valid = arr.is_valid()
                parents_valid = valid if parents_valid is None else pc.and_(parents_valid, valid)
            arr = arr.field(index)
        arr = _plain(arr, leaf.field_type)
        if leaf.is_float:
            return _float_stats(leaf, arr, parents_valid)
        n = len(arr)
        leaf.value_count += n
        if parents_valid is None or parents_valid.false_count == 0:
            values = arr
            leaf.null_count += arr.null_count
        else:
            values = arr.filter(parents_valid)
            leaf.null_count += n - (len(values) - values.null_count)
        if not leaf.mode.has_bounds or len(values) == values.null_count:
            return None, None
        result = pc.min_max(values)
        return result["min"].as_py(), result["max"].as_py()

    def finish(self, parquet_metadata: Any = None) -> Metrics:
        """The file's metrics; ``parquet_metadata`` (``pyarrow.parquet.FileMetaData``) gives
        the column sizes and split offsets."""
        value_counts: dict[int, int] = {}
        null_counts: dict[int, int] = {}
        nan_counts: dict[int, int] = {}
        lower_bounds: dict[int, bytes] = {}
        upper_bounds: dict[int, bytes] = {}
        for leaf in self._leaves:
            value_counts[leaf.field_id] = leaf.value_count
            null_counts[leaf.field_id] = leaf.null_count
            if leaf.is_float:
                nan_counts[leaf.field_id] = leaf.nan_count
            if not leaf.mode.has_bounds or leaf.lower is None:
                continue
            lower, upper = truncate_bounds(leaf.field_type, leaf.mode, leaf.lower, leaf.upper)
            if lower is not None:
                lower_bounds[leaf.field_id] = _serialize(leaf.field_type, lower)
            if upper is not None:
                upper_bounds[leaf.field_id] = _serialize(leaf.field_type, upper)
        column_sizes: dict[int, int] = {}
        split_offsets: tuple[int, ...] | None = None
        record_count = self._record_count
        if parquet_metadata is not None:
            column_sizes, split_offsets = self._footer_metrics(parquet_metadata)
            record_count = parquet_metadata.num_rows
        return Metrics(
            record_count=record_count,
            column_sizes=column_sizes,
            value_counts=value_counts,
            null_value_counts=null_counts,
            nan_value_counts=nan_counts,
            lower_bounds=lower_bounds,
            upper_bounds=upper_bounds,
            split_offsets=split_offsets,
        )

    def _footer_metrics(self, metadata: Any) -> tuple[dict[int, int], tuple[int, ...] | None]:
        modes: dict[int, MetricsMode] = {}

        def keep(field_id: int) -> bool:
            if field_id not in modes:
                modes[field_id] = self._config.mode_for(field_id, self._schema)
            return modes[field_id].has_counts

        return sizes_and_offsets(metadata, keep)


def _serialize(t: PrimitiveType, value: Any) -> bytes:
    if isinstance(t, UUIDType):
        return bytes(value)  # kept as its 16 bytes
    return to_bytes(t, value)


def _chunk_key(leaf: _Leaf) -> Callable[[Any], Any]:
    return _float_key if leaf.is_float else _identity_key


def _plain(arr: pa.Array, t: PrimitiveType) -> pa.Array:
    """The values as Arrow types whose Python values are icepark's internal representation."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(t, _INT32_VIEW):
        return arr.cast(pa.int32())
    if isinstance(t, _INT64_VIEW):
        return arr.cast(pa.int64())
    return arr


def _float_stats(leaf: _Leaf, arr: pa.Array, parents_valid: pa.Array | None) -> tuple[Any, Any]:
    # Java counts floats in its writers, which never see a value under a null struct
    if parents_valid is not None and parents_valid.false_count:
        arr = arr.filter(parents_valid)
    leaf.value_count += len(arr)
    leaf.null_count += arr.null_count
    values = arr.drop_null() if arr.null_count else arr
    if len(values) == 0:
        return None, None
    nan = pc.is_nan(values)
    nan_count = nan.true_count
    leaf.nan_count += nan_count
    if not leaf.mode.has_bounds:
        return None, None
    if nan_count:
        values = values.filter(pc.invert(nan))
        if len(values) == 0:
            return None, None
    result = pc.min_max(values)
    low, high = result["min"].as_py(), result["max"].as_py()
    if low == 0 or high == 0:
        bits = values.view(pa.int64() if pa.types.is_float64(values.type) else pa.int32())
        negative_zero = -(2**63) if pa.types.is_float64(values.type) else -(2**31)
        if low == 0:
            has_negative_zero = pc.any(pc.equal(bits, negative_zero)).as_py()
            low = -0.0 if has_negative_zero else 0.0
        if high == 0:
            has_positive_zero = pc.any(pc.equal(bits, 0)).as_py()
            high = 0.0 if has_positive_zero else -0.0
    return low, high


# -- one call ----------------------------------------------------------------------------------


def compute_metrics(
    schema: Schema,
    config: MetricsConfig,
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch | pa.Table],
    parquet_metadata: Any = None,
) -> Metrics:
    """The metrics of a Parquet file holding ``data`` (typed by ``schema``, unknown-typed
    columns left out).

    ``data`` is the file's rows: a table (split into row groups as ``parquet_metadata`` says,
    when given) or an iterable giving the rows of each row group in turn.
    """
    collector = MetricsCollector(schema, config)
    for row_group in _row_groups(data, parquet_metadata):
        collector.update(row_group)
    return collector.finish(parquet_metadata)


def _row_groups(
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch | pa.Table], metadata: Any
) -> Iterable[pa.RecordBatch | pa.Table]:
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        return data
    if metadata is None or metadata.num_row_groups <= 1:
        return [data]
    groups = []
    offset = 0
    for r in range(metadata.num_row_groups):
        rows = metadata.row_group(r).num_rows
        groups.append(data.slice(offset, rows))
        offset += rows
    return groups
