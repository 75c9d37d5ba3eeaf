"""Metrics modes and data file metrics, as Java's MetricsConfig and ParquetMetrics give them."""

from __future__ import annotations

import io
import math
import struct
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.arrow.footer import parquet_leaves
from icepark.arrow.metrics import (
    MetricsCollector,
    MetricsConfig,
    MetricsMode,
    compute_metrics,
    parse_metrics_mode,
    truncate_binary_max,
    truncate_binary_min,
    truncate_string_max,
    truncate_string_min,
)
from icepark.arrow.schema import schema_to_arrow
from icepark.errors import ValidationError
from icepark.spec.conversions import to_bytes
from icepark.spec.schema import Schema
from icepark.spec.sorting import build_sort_order
from icepark.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

TRUNC16 = MetricsMode.truncate(16)
NONE = MetricsMode.none()
COUNTS = MetricsMode.counts()
FULL = MetricsMode.full()


# -- modes and config --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("none", NONE),
        ("Counts", COUNTS),
        ("FULL", FULL),
        ("truncate(16)", TRUNC16),
        ("Truncate(3)", MetricsMode.truncate(3)),
    ],
)
def test_parse_metrics_mode(text: str, mode: MetricsMode) -> None:
    assert parse_metrics_mode(text) == mode
    assert parse_metrics_mode(str(mode)) == mode


@pytest.mark.parametrize("text", ["truncate(0)", "truncate(-1)", "truncate()", "bogus", " full"])
def test_parse_metrics_mode_rejects(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_metrics_mode(text)


def _schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "ts", TimestamptzType()),
        NestedField(4, "loc", StructType(NestedField(5, "lat", DoubleType()))),
        NestedField(6, "tags", ListType(7, StringType())),
    )


def test_config_defaults_and_overrides() -> None:
    schema = _schema()
    config = MetricsConfig.from_properties(
        {
            "write.metadata.metrics.default": "counts",
            "write.metadata.metrics.column.name": "full",
            "write.metadata.metrics.column.loc.lat": "truncate(4)",
            "write.metadata.metrics.column.tags.element": "none",
            "write.metadata.metrics.column.ts": "bogus",  # falls back to the default
        },
        schema,
    )
    assert config.default_mode == COUNTS
    assert config.mode_for(1) == COUNTS
    assert config.mode_for(2) == FULL
    assert config.mode_for(5) == MetricsMode.truncate(4)
    assert config.mode_for(7) == NONE
    assert config.mode_for(3) == COUNTS
    assert MetricsConfig.from_properties({}, schema).mode_for(2) == TRUNC16
    # an invalid default falls back to truncate(16)
    assert MetricsConfig.from_properties({"write.metadata.metrics.default": "x"}).default_mode == (
        TRUNC16
    )


def test_sort_columns_get_at_least_truncate_16() -> None:
    schema = _schema()
    order = build_sort_order(schema, ["name", "bucket(4, id)", "day(ts) desc"])
    config = MetricsConfig.from_properties(
        {"write.metadata.metrics.default": "none"}, schema, order
    )
    assert config.mode_for(2) == TRUNC16
    assert config.mode_for(3) == TRUNC16  # day preserves order
    assert config.mode_for(1) == NONE  # bucket does not
    full = MetricsConfig.from_properties({"write.metadata.metrics.default": "full"}, schema, order)
    assert full.mode_for(2) == FULL
    overridden = MetricsConfig.from_properties(
        {
            "write.metadata.metrics.default": "none",
            "write.metadata.metrics.column.name": "counts",
        },
        schema,
        order,
    )
    assert overridden.mode_for(2) == COUNTS


def test_wide_schema_limits_default_metrics() -> None:
    # 102 top-level ints and a struct of two at position 1: the first 100 top-level primitive
    # columns (in field order) keep truncate(16), the rest get none (Java 1.10's rule)
    fields = [
        NestedField(1, "c0", IntegerType()),
        NestedField(
            2,
            "st",
            StructType(NestedField(103, "a", IntegerType()), NestedField(104, "b", IntegerType())),
        ),
    ] + [NestedField(i + 1, f"c{i}", IntegerType()) for i in range(2, 102)]
    schema = Schema(*fields)
    config = MetricsConfig.from_properties({}, schema)
    assert config.default_mode == NONE
    kept = {i for i in [1, *range(3, 103), 103, 104] if config.mode_for(i) == TRUNC16}
    assert kept == {1, *range(3, 102)}
    assert config.mode_for(102) == NONE
    assert config.mode_for(103) == NONE
    # a higher limit, or an explicit default, applies everywhere
    wide = MetricsConfig.from_properties(
        {"write.metadata.metrics.max-inferred-column-defaults": "200"}, schema
    )
    assert wide.mode_for(104) == TRUNC16
    explicit = MetricsConfig.from_properties({"write.metadata.metrics.default": "counts"}, schema)
    assert explicit.mode_for(104) == COUNTS


def test_wide_schema_counts_nested_leaves() -> None:
    # 99 columns, one a list of structs with 3 fields: 102 primitives in all
    fields = [NestedField(i, f"c{i}", IntegerType()) for i in range(1, 99)]
    element = StructType(*(NestedField(200 + i, f"f{i}", IntegerType()) for i in range(3)))
    fields.append(NestedField(99, "l", ListType(100, element)))
    config = MetricsConfig.from_properties({}, Schema(*fields))
    assert config.default_mode == NONE
    assert [config.mode_for(i) for i in (200, 201, 202)] == [TRUNC16, TRUNC16, NONE]


# -- truncation --------------------------------------------------------------------------------


def test_truncate_strings() -> None:
    assert truncate_string_min("abcdef", 3) == "abc"
    assert truncate_string_max("abcdef", 3) == "abd"
    assert truncate_string_max("abc", 3) == "abc"
    assert truncate_string_max("ab\U0010ffffz", 3) == "ac"
    assert truncate_string_max("\U0010ffff" * 4, 3) is None
    assert truncate_string_max("a\ud7ffb", 2) == "a\ue000"
    assert truncate_string_min("\U0001f600\U0001f601x", 2) == "\U0001f600\U0001f601"
    assert truncate_string_max("\U0001f600\U0001f601x", 2) == "\U0001f600\U0001f602"


def test_truncate_binary() -> None:
    assert truncate_binary_min(b"\x01\x02\x03", 2) == b"\x01\x02"
    assert truncate_binary_max(b"\x01\x02\x03", 2) == b"\x01\x03"
    assert truncate_binary_max(b"\x01\xff\x03", 2) == b"\x02"
    assert truncate_binary_max(b"\xff\xff\x03", 2) is None
    assert truncate_binary_max(b"\xff\xff", 2) == b"\xff\xff"


_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), min_codepoint=0, max_codepoint=0x10FFFF),
    min_size=0,
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=20), st.integers(1, 8))
def test_truncated_string_bounds_contain_every_value(values: list[str], length: int) -> None:
    schema = Schema(NestedField(1, "s", StringType()))
    config = MetricsConfig.from_properties(
        {"write.metadata.metrics.default": f"truncate({length})"}
    )
    metrics = compute_metrics(schema, config, pa.table({"s": pa.array(values, pa.string())}))
    lower = metrics.lower_bounds[1]
    assert len(lower.decode()) <= length
    encoded = [v.encode() for v in values]
    assert all(lower <= v for v in encoded)
    upper = metrics.upper_bounds.get(1)
    if upper is None:  # only when no code point of the prefix can be incremented
        assert set(max(values)[:length]) == {"\U0010ffff"}
    else:
        assert len(upper.decode()) <= length
        assert all(v <= upper for v in encoded)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=20), min_size=1, max_size=20), st.integers(1, 6))
def test_truncated_binary_bounds_contain_every_value(values: list[bytes], length: int) -> None:
    schema = Schema(NestedField(1, "b", BinaryType()))
    config = MetricsConfig.from_properties(
        {"write.metadata.metrics.default": f"truncate({length})"}
    )
    metrics = compute_metrics(schema, config, pa.table({"b": pa.array(values, pa.binary())}))
    lower = metrics.lower_bounds[1]
    assert len(lower) <= length and all(lower <= v for v in values)
    upper = metrics.upper_bounds.get(1)
    if upper is None:
        assert set(max(values)[:length]) == {0xFF}
    else:
        assert len(upper) <= length and all(v <= upper for v in values)


# -- collected metrics -------------------------------------------------------------------------


def _f32(x: float) -> bytes:
    return struct.pack("<f", x)


def _f64(x: float) -> bytes:
    return struct.pack("<d", x)


def test_counts_and_bounds_of_every_primitive() -> None:
    u1, u2 = uuid.UUID(int=5), uuid.UUID(int=(0xFF << 120) + 1)
    schema = Schema(
        NestedField(1, "b", BooleanType()),
        NestedField(2, "i", IntegerType()),
        NestedField(3, "l", LongType()),
        NestedField(4, "f", FloatType()),
        NestedField(5, "d", DoubleType()),
        NestedField(6, "dec", DecimalType(20, 2)),
        NestedField(7, "dt", DateType()),
        NestedField(8, "t", TimeType()),
        NestedField(9, "ts", TimestampType()),
        NestedField(10, "tz", TimestamptzType()),
        NestedField(11, "s", StringType()),
        NestedField(12, "u", UUIDType()),
        NestedField(13, "fx", FixedType(20)),
        NestedField(14, "bin", BinaryType()),
    )
    arrow = schema_to_arrow(schema)
    rows = {
        "b": [True, None, False],
        "i": [3, None, -7],
        "l": [2**40, None, -1],
        "f": [1.5, None, float("nan")],
        "d": [float("nan"), float("nan"), -0.0],
        "dec": [Decimal("1.50"), None, Decimal("-123456789012345678.99")],
        "dt": [0, None, -1],
        "t": [1, None, 86_399_999_999],
        "ts": [1_700_000_000_000_000, None, -5],
        "tz": [7, None, 8],
        "s": ["a" * 20, None, "b"],
        "u": [u1.bytes, None, u2.bytes],
        "fx": [b"\xff" * 20, None, b"\x00" * 20],
        "bin": [b"\x00" * 20, None, b"\x01"],
    }
    columns = []
    for f in arrow:
        if isinstance(f.type, pa.BaseExtensionType):
            storage = pa.array(rows[f.name], f.type.storage_type)
            columns.append(pa.ExtensionArray.from_storage(f.type, storage))
        elif pa.types.is_date32(f.type):
            columns.append(pa.array(rows[f.name], pa.int32()).cast(f.type))
        elif pa.types.is_time64(f.type) or pa.types.is_timestamp(f.type):
            columns.append(pa.array(rows[f.name], pa.int64()).cast(f.type))
        else:
            columns.append(pa.array(rows[f.name], f.type))
    table = pa.Table.from_arrays(columns, schema=arrow)
    metrics = compute_metrics(schema, MetricsConfig.from_properties({}, schema), table)
    assert metrics.record_count == 3
    assert metrics.value_counts == dict.fromkeys(range(1, 15), 3)
    assert metrics.null_value_counts == {**dict.fromkeys(range(1, 15), 1), 4: 1, 5: 0}
    assert metrics.nan_value_counts == {4: 1, 5: 2}
    lower, upper = metrics.lower_bounds, metrics.upper_bounds
    assert (lower[1], upper[1]) == (b"\x00", b"\x01")
    assert (lower[2], upper[2]) == (to_bytes(IntegerType(), -7), to_bytes(IntegerType(), 3))
    assert (lower[3], upper[3]) == (to_bytes(LongType(), -1), to_bytes(LongType(), 2**40))
    assert (lower[4], upper[4]) == (_f32(1.5), _f32(1.5))
    assert (lower[5], upper[5]) == (_f64(-0.0), _f64(-0.0))
    dec = DecimalType(20, 2)
    assert lower[6] == to_bytes(dec, Decimal("-123456789012345678.99"))
    assert upper[6] == b"\x00\x96"  # 150 in the fewest bytes
    assert (lower[7], upper[7]) == (to_bytes(DateType(), -1), to_bytes(DateType(), 0))
    assert upper[8] == to_bytes(TimeType(), 86_399_999_999)
    assert lower[9] == to_bytes(TimestampType(), -5)
    assert (lower[10], upper[10]) == (to_bytes(LongType(), 7), to_bytes(LongType(), 8))
    assert (lower[11], upper[11]) == (b"a" * 16, b"b")
    assert (lower[12], upper[12]) == (u1.bytes, u2.bytes)
    assert (lower[13], upper[13]) == (b"\x00" * 20, b"\xff" * 20)  # fixed is never truncated
    assert (lower[14], upper[14]) == (b"\x00" * 16, b"\x01")


def test_zero_signs_and_nan_only_columns() -> None:
    schema = Schema(
        NestedField(1, "a", DoubleType()),
        NestedField(2, "b", FloatType()),
        NestedField(3, "c", DoubleType()),
        NestedField(4, "d", DoubleType()),
    )
    table = pa.table(
        {
            "a": pa.array([0.0, -0.0, 0.0]),
            "b": pa.array([float("nan"), None, None], pa.float32()),
            "c": pa.array([None, None, None], pa.float64()),
            "d": pa.array([-0.0, float("-inf"), float("inf")]),
        }
    )
    metrics = compute_metrics(schema, MetricsConfig(), table)
    assert (metrics.lower_bounds[1], metrics.upper_bounds[1]) == (_f64(-0.0), _f64(0.0))
    assert 2 not in metrics.lower_bounds and 3 not in metrics.upper_bounds
    assert metrics.nan_value_counts == {1: 0, 2: 1, 3: 0, 4: 0}
    assert metrics.null_value_counts == {1: 0, 2: 2, 3: 3, 4: 0}
    assert metrics.lower_bounds[4] == _f64(-math.inf) and metrics.upper_bounds[4] == _f64(math.inf)


def test_nested_columns_follow_java() -> None:
    schema = Schema(
        NestedField(1, "id", IntegerType()),
        NestedField(
            2,
            "st",
            StructType(
                NestedField(3, "x", IntegerType()),
                NestedField(4, "f", FloatType()),
                NestedField(5, "inner", StructType(NestedField(6, "s", StringType()))),
            ),
        ),
        NestedField(7, "l", ListType(8, IntegerType(), element_required=False)),
        NestedField(9, "m", MapType(10, StringType(), 11, DoubleType(), value_required=False)),
    )
    arrow = schema_to_arrow(schema)
    table = pa.Table.from_pylist(
        [
            {"id": 1, "st": {"x": 1, "f": 1.0, "inner": {"s": "q"}}, "l": [1, 2], "m": {"a": 1.0}},
            {"id": 2, "st": None, "l": None, "m": None},
            {"id": 3, "st": {"x": None, "f": None, "inner": None}, "l": [], "m": {}},
            {"id": 4, "st": {"x": 9, "f": float("nan"), "inner": {"s": None}}, "l": [None]},
        ],
        schema=arrow,
    )
    metrics = compute_metrics(schema, MetricsConfig(), table)
    # leaves under structs: every row counts, a null struct counts as a null ...
    assert metrics.value_counts[3] == 4 and metrics.null_value_counts[3] == 2
    assert metrics.value_counts[6] == 4 and metrics.null_value_counts[6] == 3
    # ... but floats count only rows whose structs are not null (Java's writer metrics)
    assert metrics.value_counts[4] == 3 and metrics.null_value_counts[4] == 1
    assert metrics.nan_value_counts == {4: 1}
    assert (metrics.lower_bounds[3], metrics.upper_bounds[3]) == (
        to_bytes(IntegerType(), 1),
        to_bytes(IntegerType(), 9),
    )
    assert metrics.lower_bounds[6] == b"q" and metrics.lower_bounds[4] == _f32(1.0)
    # nothing for columns in lists and maps
    for field_id in (8, 10, 11):
        assert field_id not in metrics.value_counts
        assert field_id not in metrics.lower_bounds
    assert set(metrics.value_counts) == {1, 3, 4, 6}


def test_modes_none_counts_full() -> None:
    schema = Schema(
        NestedField(1, "a", StringType()),
        NestedField(2, "b", StringType()),
        NestedField(3, "c", StringType()),
        NestedField(4, "f", DoubleType()),
    )
    config = MetricsConfig.from_properties(
        {
            "write.metadata.metrics.column.a": "none",
            "write.metadata.metrics.column.b": "counts",
            "write.metadata.metrics.column.c": "full",
            "write.metadata.metrics.column.f": "counts",
        },
        schema,
    )
    long = "x" * 40
    table = pa.table(
        {"a": [long, None], "b": [long, None], "c": [long, "y"], "f": [1.0, float("nan")]}
    )
    metrics = _write_and_collect(schema, config, [table])
    assert set(metrics.value_counts) == {2, 3, 4}
    assert 1 not in metrics.column_sizes and set(metrics.column_sizes) == {2, 3, 4}
    assert metrics.lower_bounds == {3: long.encode()}
    assert metrics.upper_bounds == {3: b"y"}
    assert metrics.nan_value_counts == {4: 1}  # counts mode keeps NaN counts, no bounds


def _write_and_collect(schema: Schema, config: MetricsConfig, row_groups: list[pa.Table]) -> Any:
    arrow = schema_to_arrow(schema)
    sink = io.BytesIO()
    collector = MetricsCollector(schema, config)
    with pq.ParquetWriter(sink, arrow, store_schema=False) as writer:
        for rg in row_groups:
            rg = rg.cast(arrow)
            writer.write_table(rg, row_group_size=rg.num_rows)
            collector.update(rg)
    metadata = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata
    return collector.finish(metadata)


def test_column_sizes_and_split_offsets_from_footer() -> None:
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "l", ListType(3, StringType())),
        NestedField(4, "m", MapType(5, StringType(), 6, LongType())),
    )
    rg = pa.table(
        {"id": [1, 2], "l": [["a"], ["b", "c"]], "m": [[("k", 1)], []]},
        schema=schema_to_arrow(schema),
    )
    metrics = _write_and_collect(schema, MetricsConfig(), [rg, rg, rg])
    assert set(metrics.column_sizes) == {1, 3, 5, 6}
    assert metrics.record_count == 6
    assert metrics.split_offsets is not None and len(metrics.split_offsets) == 3
    assert metrics.split_offsets[0] == 4 and list(metrics.split_offsets) == sorted(
        metrics.split_offsets
    )
    with pa.BufferOutputStream() as sink:
        pq.write_table(rg, sink)
    footer = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata
    leaves = parquet_leaves(footer.schema.to_arrow_schema())
    assert [(leaf.field_id, leaf.path, leaf.repeated) for leaf in leaves] == [
        (1, "id", False),
        (3, "l.element", True),
        (5, "m.key", True),
        (6, "m.value", True),
    ]
    assert leaves[0].arrow_type == pa.int64()


def test_uuid_bounds_merge_row_groups_like_java() -> None:
    # Java merges per-row-group bounds with java.util.UUID ordering (signed halves), so a
    # uuid with the top bit set is below one without it across row groups
    schema = Schema(NestedField(1, "u", UUIDType()))
    low, high = uuid.UUID(int=1), uuid.UUID(int=1 << 127)
    arrow = schema_to_arrow(schema)

    def table(*values: uuid.UUID) -> pa.Table:
        storage = pa.array([v.bytes for v in values], pa.binary(16))
        return pa.table({"u": pa.ExtensionArray.from_storage(arrow.field("u").type, storage)})

    one = compute_metrics(schema, MetricsConfig(), table(low, high))
    assert (one.lower_bounds[1], one.upper_bounds[1]) == (low.bytes, high.bytes)
    two = _write_and_collect(schema, MetricsConfig(), [table(low), table(high)])
    assert (two.lower_bounds[1], two.upper_bounds[1]) == (high.bytes, low.bytes)


# -- against the reference engine --------------------------------------------------------------


@pytest.mark.interop
def test_metrics_match_the_reference_engine(refspark: Any, tmp_path: Path) -> None:
    from icepark.arrow.writer import write_data_files
    from icepark.io.pyarrow_fileio import PyArrowFileIO
    from icepark.spec.partitioning import UNPARTITIONED
    from icepark.spec.sorting import UNSORTED_ORDER

    catalog = refspark.catalog_for(tmp_path / "ref")
    columns = (
        "b boolean, i int, l long, f float, d double, dec1 decimal(5,2), dec2 decimal(30,4), "
        "dt date, ts timestamp_ntz, tz timestamp, s string, bin binary, "
        "st struct<x: int, f: float, y: string>, arr array<int>, m map<string, int>"
    )
    values = (
        "(true, 1, 10, CAST(1.5 AS FLOAT), CAST(2.5 AS DOUBLE), 1.25, 12345.6789, "
        "DATE'2024-01-05', TIMESTAMP_NTZ'2024-01-05 10:00:00', TIMESTAMP'2024-01-05 10:00:00', "
        "'abcdefghijklmnopqrstuvwxyz', X'0102', named_struct('x', 1, 'f', CAST(1 AS FLOAT), "
        "'y', 'a'), array(1, NULL), map('a', 1)), "
        "(NULL, NULL, NULL, NULL, CAST('NaN' AS DOUBLE), NULL, NULL, NULL, NULL, NULL, NULL, "
        "NULL, NULL, NULL, NULL), "
        "(false, -5, -10, CAST('-0.0' AS FLOAT), CAST('0.0' AS DOUBLE), -1.00, 0, "
        "DATE'1969-12-31', TIMESTAMP_NTZ'1969-12-31 23:59:59.999999', "
        "TIMESTAMP'1970-01-01 00:00:00', 'ab\\uDBFF\\uDFFF\\uDBFF\\uDFFFcdefghijklmnopq', "
        "X'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF', named_struct('x', NULL, 'f', CAST('NaN' AS FLOAT), "
        "'y', NULL), array(), map())"
    )
    names = "b, i, l, f, d, dec1, dec2, dt, ts, tz, s, bin, st, arr, m"
    refspark.sql(f"CREATE TABLE {catalog}.db.t ({columns}) USING iceberg")
    refspark.sql(
        f"INSERT INTO {catalog}.db.t SELECT /*+ COALESCE(1) */ * FROM VALUES {values} AS v({names})"
    )
    ref = refspark.sql(
        f"SELECT value_counts, null_value_counts, nan_value_counts, lower_bounds, upper_bounds, "
        f"column_sizes FROM {catalog}.db.t.files"
    )
    (row,) = ref["rows"]
    expected = dict(zip(ref["columns"], row))
    rows = refspark.sql(f"SELECT {names} FROM {catalog}.db.t")
    assert len(rows["rows"]) == 3

    schema = Schema(
        NestedField(1, "b", BooleanType()),
        NestedField(2, "i", IntegerType()),
        NestedField(3, "l", LongType()),
        NestedField(4, "f", FloatType()),
        NestedField(5, "d", DoubleType()),
        NestedField(6, "dec1", DecimalType(5, 2)),
        NestedField(7, "dec2", DecimalType(30, 4)),
        NestedField(8, "dt", DateType()),
        NestedField(9, "ts", TimestampType()),
        NestedField(10, "tz", TimestamptzType()),
        NestedField(11, "s", StringType()),
        NestedField(12, "bin", BinaryType()),
        NestedField(
            13,
            "st",
            StructType(
                NestedField(16, "x", IntegerType()),
                NestedField(17, "f", FloatType()),
                NestedField(18, "y", StringType()),
            ),
        ),
        NestedField(14, "arr", ListType(19, IntegerType(), element_required=False)),
        NestedField(15, "m", MapType(20, StringType(), 21, IntegerType(), value_required=False)),
    )
    arrow = schema_to_arrow(schema)
    nan = float("nan")
    data = [
        {
            "b": True, "i": 1, "l": 10, "f": 1.5, "d": 2.5, "dec1": Decimal("1.25"),
            "dec2": Decimal("12345.6789"), "dt": 19727, "ts": 1704448800000000,
            "tz": 1704448800000000, "s": "abcdefghijklmnopqrstuvwxyz", "bin": b"\x01\x02",
            "st": {"x": 1, "f": 1.0, "y": "a"}, "arr": [1, None], "m": [("a", 1)],
        },
        {"d": nan},
        {
            "b": False, "i": -5, "l": -10, "f": -0.0, "d": 0.0, "dec1": Decimal("-1.00"),
            "dec2": Decimal("0"), "dt": -1, "ts": -1, "tz": 0,
            "s": "ab\U0010ffff\U0010ffffcdefghijklmnopq", "bin": b"\xff" * 17,
            "st": {"x": None, "f": nan, "y": None}, "arr": [], "m": [],
        },
    ]  # fmt: skip
    columns_data = {}
    for f in arrow:
        values_ = [r.get(f.name) for r in data]
        if pa.types.is_date32(f.type):
            columns_data[f.name] = pa.array(values_, pa.int32()).cast(f.type)
        elif pa.types.is_timestamp(f.type):
            columns_data[f.name] = pa.array(values_, pa.int64()).cast(f.type)
        else:
            columns_data[f.name] = pa.array(values_, f.type)
    (data_file,) = write_data_files(
        PyArrowFileIO(),
        table_location=str(tmp_path / "mine"),
        schema=schema,
        spec=UNPARTITIONED,
        sort_order=UNSORTED_ORDER,
        properties={},
        data=pa.table(columns_data, schema=arrow),
    )

    def keyed(d: dict[int, Any] | None, hexed: bool = False) -> dict[str, Any]:
        return {str(k): (v.hex() if hexed else v) for k, v in (d or {}).items()}

    assert keyed(data_file.value_counts) == expected["value_counts"]
    assert keyed(data_file.null_value_counts) == expected["null_value_counts"]
    assert keyed(data_file.nan_value_counts) == expected["nan_value_counts"]
    assert keyed(data_file.lower_bounds, True) == expected["lower_bounds"]
    assert keyed(data_file.upper_bounds, True) == expected["upper_bounds"]
    assert set(keyed(data_file.column_sizes)) == set(expected["column_sizes"])
