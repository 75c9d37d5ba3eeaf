"""Row, manifest, metrics and residual evaluators on hand-written cases."""

from __future__ import annotations

import math
from typing import Any

import pytest

from icepark.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    InclusiveMetricsEvaluator,
    StrictMetricsEvaluator,
    bind,
    evaluator,
    manifest_evaluator,
    parse_filter,
    residual_evaluator,
)
from icepark.spec.conversions import to_bytes
from icepark.spec.manifests import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestFile,
    PartitionFieldSummary,
)
from icepark.spec.partitioning import UNPARTITIONED, build_partition_spec
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), required=True),
    NestedField(2, "s", StringType()),
    NestedField(3, "f", DoubleType()),
    NestedField(4, "all_nulls", StringType()),
    NestedField(5, "no_stats", IntegerType()),
    NestedField(6, "st", StructType(NestedField(7, "x", LongType(), required=True))),
)


# -- row evaluator -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "row", "expected"),
    [
        ("id = 1", (1, None, None), True),
        ("id != 1", (2, None, None), True),
        ("s = 'a'", (1, None, None), False),
        ("s != 'a'", (1, None, None), False),  # a null matches no comparison (SQL)
        ("s < 'a'", (1, None, None), False),
        ("s in ('a', 'b')", (1, None, None), False),
        ("s not in ('a', 'b')", (1, None, None), False),
        ("s not in ('a', 'b')", (1, "c", None), True),
        ("s like 'a%'", (1, "abc", None), True),
        ("s not like 'a%'", (1, None, None), False),
        ("s not like 'a%'", (1, "b", None), True),
        ("not (s = 'a')", (1, None, None), False),
        ("not (s = 'a')", (1, "b", None), True),
        ("not (s < 'a')", (1, None, None), False),  # not is pushed down: s >= 'a'
        ("f > 1", (1, None, math.nan), False),  # comparisons with NaN are false
        ("f < 1", (1, None, math.nan), False),
        ("f != 1", (1, None, math.nan), True),
        ("f is nan", (1, None, math.nan), True),
        ("f is not nan", (1, None, None), True),
        ("f is nan", (1, None, None), False),
        ("st.x = 5", (1, None, None, None, None, (5,)), True),
        ("st.x = 5", (1, None, None, None, None, None), False),
        ("st is null", (1, None, None, None, None, None), True),
        ("id = 1 and s is null or f > 0", (2, None, 1.0), True),
    ],
)
def test_row_evaluator(text: str, row: tuple[Any, ...], expected: bool) -> None:
    padded = row + (None,) * (6 - len(row))
    assert evaluator(SCHEMA, parse_filter(text))(padded) is expected


def test_row_evaluator_on_dicts_and_bound_input() -> None:
    bound = bind(SCHEMA, parse_filter("st.x > 1 and id = 3"))
    assert evaluator(SCHEMA, bound)({1: 3, 6: {7: 2}})
    assert not evaluator(SCHEMA, bound)({1: 3, 6: None})
    assert evaluator(SCHEMA.as_struct(), AlwaysTrue())(())
    assert not evaluator(SCHEMA, AlwaysFalse())(())


# -- metrics ---------------------------------------------------------------------------------------


def _b(t: PrimitiveType, v: Any) -> bytes:
    return to_bytes(t, v)


S, D, I4 = StringType(), DoubleType(), IntegerType()
FILE = DataFile(
    content=FileContent.DATA,
    file_path="a.parquet",
    file_format=FileFormat.PARQUET,
    partition=(),
    record_count=50,
    file_size_in_bytes=10,
    value_counts={1: 50, 2: 50, 3: 50, 4: 50},
    null_value_counts={1: 0, 2: 10, 3: 0, 4: 50},
    nan_value_counts={3: 5},
    lower_bounds={1: _b(I4, 30), 2: _b(S, "abc"), 3: _b(D, -1.5)},
    upper_bounds={1: _b(I4, 79), 2: _b(S, "abe"), 3: _b(D, 2.0)},
)


@pytest.mark.parametrize(
    ("text", "might"),
    [
        ("id < 30", False),
        ("id < 31", True),
        ("id <= 29", False),
        ("id <= 30", True),
        ("id > 79", False),
        ("id > 78", True),
        ("id >= 80", False),
        ("id >= 79", True),
        ("id = 29", False),
        ("id = 80", False),
        ("id = 50", True),
        ("id != 30", True),
        ("id in (1, 2, 80)", False),
        ("id in (1, 31)", True),
        ("id not in (30)", True),
        ("id is null", False),
        ("id is not null", True),
        ("all_nulls is null", True),
        ("all_nulls is not null", False),
        ("all_nulls = 'a'", False),
        ("all_nulls like 'a%'", False),
        ("all_nulls != 'a'", False),
        ("all_nulls not in ('a')", False),
        ("all_nulls not like 'a%'", False),
        ("s like 'ab%'", True),
        ("s like 'abd%'", True),
        ("s like 'abf%'", False),
        ("s like 'abb%'", False),
        ("s like 'a%'", True),
        ("s like 'b%'", False),
        ("s not like 'ab%'", True),  # bounds are not both inside the prefix
        ("f is nan", True),
        ("f is not nan", True),
        ("f > 2", False),
        ("f < -1.5", False),
        ("no_stats = 5", True),
        ("no_stats is null", True),
        ("no_stats is not null", True),
        ("st.x = 1", True),
        ("id < 30 or s like 'abd%'", True),
        ("id < 30 and s like 'abd%'", False),
        ("not (id >= 30)", False),
    ],
)
def test_inclusive_metrics(text: str, might: bool) -> None:
    assert InclusiveMetricsEvaluator(SCHEMA, parse_filter(text)).eval(FILE) is might


def test_inclusive_metrics_special_files() -> None:
    expr = parse_filter("id = 1000")
    empty = FILE.replace(record_count=0)
    assert not InclusiveMetricsEvaluator(SCHEMA, expr).eval(empty)
    assert InclusiveMetricsEvaluator(SCHEMA, expr, include_empty_files=True).eval(empty)
    assert InclusiveMetricsEvaluator(SCHEMA, expr).eval(FILE.replace(record_count=-1))
    assert InclusiveMetricsEvaluator(SCHEMA, expr).eval(FILE.without_stats())
    nan_only = FILE.replace(nan_value_counts={3: 50}, null_value_counts={3: 0})
    assert not InclusiveMetricsEvaluator(SCHEMA, parse_filter("f > 0")).eval(nan_only)
    assert not InclusiveMetricsEvaluator(SCHEMA, parse_filter("f is not nan")).eval(nan_only)
    no_nan = FILE.replace(nan_value_counts={3: 0})
    assert not InclusiveMetricsEvaluator(SCHEMA, parse_filter("f is nan")).eval(no_nan)
    # a NaN bound is unreliable and ignored
    nan_bound = FILE.replace(lower_bounds={3: _b(D, math.nan)})
    assert InclusiveMetricsEvaluator(SCHEMA, parse_filter("f < -2")).eval(nan_bound)


def test_inclusive_not_starts_with_needs_both_bounds_in_prefix() -> None:
    no_nulls = FILE.replace(null_value_counts={2: 0})
    assert not InclusiveMetricsEvaluator(SCHEMA, parse_filter("s not like 'ab%'")).eval(no_nulls)
    wide = no_nulls.replace(upper_bounds={2: _b(S, "b")})
    assert InclusiveMetricsEvaluator(SCHEMA, parse_filter("s not like 'ab%'")).eval(wide)


@pytest.mark.parametrize(
    ("text", "all_match"),
    [
        ("id < 80", True),
        ("id < 79", False),
        ("id <= 79", True),
        ("id > 29", True),
        ("id > 30", False),
        ("id >= 30", True),
        ("id = 30", False),
        ("id != 29", True),
        ("id != 30", False),
        ("id not in (1, 80)", True),
        ("id not in (1, 50)", False),
        ("id in (30, 79)", False),
        ("id is not null", True),
        ("id is null", False),
        ("all_nulls is null", True),
        ("all_nulls != 'a'", False),  # null rows do not match
        ("all_nulls not in ('a', 'b')", False),
        ("all_nulls not like 'a%'", False),
        ("s != 'zzz'", False),  # s has nulls
        ("s like 'ab%'", False),  # s has nulls
        ("s is not null", False),
        ("f < 3", False),  # f has NaN
        ("f is not nan", False),
        ("no_stats is not null", False),
        ("st.x > 0", False),
        ("id < 80 and id > 29", True),
        ("id < 50 or id >= 50", False),
    ],
)
def test_strict_metrics(text: str, all_match: bool) -> None:
    assert StrictMetricsEvaluator(SCHEMA, parse_filter(text)).eval(FILE) is all_match


def test_strict_metrics_special_cases() -> None:
    single = FILE.replace(lower_bounds={1: _b(I4, 7)}, upper_bounds={1: _b(I4, 7)})
    assert StrictMetricsEvaluator(SCHEMA, parse_filter("id = 7")).eval(single)
    assert StrictMetricsEvaluator(SCHEMA, parse_filter("id in (7, 8)")).eval(single)
    assert StrictMetricsEvaluator(SCHEMA, parse_filter("id = 1")).eval(FILE.replace(record_count=0))
    no_nulls = FILE.replace(null_value_counts={2: 0, 3: 0}, nan_value_counts={3: 0})
    assert StrictMetricsEvaluator(SCHEMA, parse_filter("s like 'ab%'")).eval(no_nulls)
    assert not StrictMetricsEvaluator(SCHEMA, parse_filter("s like 'abc%'")).eval(no_nulls)
    assert StrictMetricsEvaluator(SCHEMA, parse_filter("s not like 'b%'")).eval(no_nulls)
    assert not StrictMetricsEvaluator(SCHEMA, parse_filter("s not like 'b%'")).eval(FILE)
    assert not StrictMetricsEvaluator(SCHEMA, parse_filter("s not like 'abd%'")).eval(FILE)
    assert StrictMetricsEvaluator(SCHEMA, parse_filter("f is not nan")).eval(no_nulls)
    assert StrictMetricsEvaluator(SCHEMA, parse_filter("f < 3")).eval(no_nulls)
    # unknown NaN count: a float column may hold NaN
    unknown = FILE.replace(nan_value_counts={})
    assert not StrictMetricsEvaluator(SCHEMA, parse_filter("f < 3")).eval(unknown)


# -- manifests -------------------------------------------------------------------------------------

PSCHEMA = Schema(
    NestedField(1, "id", IntegerType()),
    NestedField(2, "s", StringType()),
    NestedField(3, "f", DoubleType()),
)
PSPEC = build_partition_spec(PSCHEMA, ["id", "s", "f"])


def _manifest(*summaries: PartitionFieldSummary | None) -> ManifestFile:
    parts = None if summaries == (None,) else tuple(s for s in summaries if s is not None)
    return ManifestFile("m.avro", 1, 0, partitions=parts)


MANIFEST = _manifest(
    PartitionFieldSummary(False, None, _b(I4, 30), _b(I4, 79)),
    PartitionFieldSummary(True, None, _b(S, "abc"), _b(S, "abe")),
    PartitionFieldSummary(False, True, _b(D, 1.0), _b(D, 2.0)),
)


@pytest.mark.parametrize(
    ("text", "might"),
    [
        ("id < 30", False),
        ("id <= 30", True),
        ("id > 79", False),
        ("id >= 79", True),
        ("id = 80", False),
        ("id = 50", True),
        ("id in (1, 80)", False),
        ("id in (1, 31)", True),
        ("id != 30", True),
        ("id not in (30)", True),
        ("id is null", False),
        ("id is not null", True),
        ("s is null", True),
        ("s like 'abd%'", True),
        ("s like 'abf%'", False),
        ("s like 'ab%'", True),
        ("s not like 'ab%'", True),
        ("f is nan", True),
        ("f is not nan", True),
        ("f > 2", False),
        ("id < 30 or s = 'abd'", True),
        ("not (id < 80)", False),
    ],
)
def test_manifest_evaluator(text: str, might: bool) -> None:
    assert manifest_evaluator(PSPEC, PSCHEMA, parse_filter(text))(MANIFEST) is might


def test_manifest_special_cases() -> None:
    expr = parse_filter("id = 1000")
    assert manifest_evaluator(PSPEC, PSCHEMA, expr)(_manifest(None))
    all_null = PartitionFieldSummary(True, None, None, None)
    no_nan = PartitionFieldSummary(True, False, None, None)
    nan_only = PartitionFieldSummary(False, True, None, None)
    m = _manifest(all_null, all_null, no_nan)
    assert not manifest_evaluator(PSPEC, PSCHEMA, parse_filter("id is not null"))(m)
    assert not manifest_evaluator(PSPEC, PSCHEMA, parse_filter("id = 1"))(m)
    assert not manifest_evaluator(PSPEC, PSCHEMA, parse_filter("f is not null"))(m)
    assert not manifest_evaluator(PSPEC, PSCHEMA, parse_filter("f is nan"))(m)
    m = _manifest(all_null, all_null, nan_only)
    assert not manifest_evaluator(PSPEC, PSCHEMA, parse_filter("f is not nan"))(m)
    assert manifest_evaluator(PSPEC, PSCHEMA, parse_filter("f is not null"))(m)
    prefixed = _manifest(
        MANIFEST.partitions[0],  # type: ignore[index]
        PartitionFieldSummary(False, None, _b(S, "abc"), _b(S, "abe")),
        MANIFEST.partitions[2],  # type: ignore[index]
    )
    assert not manifest_evaluator(PSPEC, PSCHEMA, parse_filter("s not like 'ab%'"))(prefixed)
    many = parse_filter("id in (" + ", ".join(str(i) for i in range(1000, 1300)) + ")")
    assert manifest_evaluator(PSPEC, PSCHEMA, many)(MANIFEST)  # too many values to check


# -- residuals -------------------------------------------------------------------------------------

RSCHEMA = Schema(
    NestedField(1, "ts", LongType()),
    NestedField(2, "dateint", IntegerType()),
    NestedField(3, "hour", IntegerType()),
    NestedField(4, "s", StringType()),
)


def test_residuals_identity() -> None:
    spec = build_partition_spec(RSCHEMA, ["dateint", "hour"])
    expr = parse_filter(
        "(dateint < 20170815 and dateint > 20170801) or "
        "(dateint = 20170815 and hour < 12) or (dateint = 20170801 and hour > 11)"
    )
    residuals = residual_evaluator(spec, expr, RSCHEMA)
    assert residuals.residual_for((20170815, 0)) == AlwaysTrue()
    assert residuals.residual_for((20170801, 12)) == AlwaysTrue()
    assert residuals.residual_for((20170815, 12)) == AlwaysFalse()
    assert residuals.residual_for((20170816, 0)) == AlwaysFalse()


def test_residuals_keep_what_partitions_cannot_decide() -> None:
    spec = build_partition_spec(RSCHEMA, ["truncate(2, s)", "bucket(4, ts)"])
    residuals = residual_evaluator(spec, parse_filter("s > 'abc' and ts = 5"), RSCHEMA)
    assert residuals.residual_for(("ab", 1)) == AlwaysFalse()  # bucket(4) of 5 is 3
    kept = residuals.residual_for(("ab", 3))
    assert kept == bind(RSCHEMA, parse_filter("s > 'abc' and ts = 5"))
    assert residuals.residual_for(("ac", 3)) == bind(RSCHEMA, parse_filter("ts = 5"))
    assert residuals.residual_for(("aa", 3)) == AlwaysFalse()


def test_residuals_unpartitioned_and_not() -> None:
    expr = parse_filter("not (dateint = 5)")
    assert residual_evaluator(UNPARTITIONED, expr, RSCHEMA).residual_for(()) == bind(
        RSCHEMA, parse_filter("dateint != 5")
    )
    spec = build_partition_spec(RSCHEMA, ["dateint"])
    residuals = residual_evaluator(spec, expr, RSCHEMA)
    assert residuals.residual_for((5,)) == AlwaysFalse()
    assert residuals.residual_for((6,)) == AlwaysTrue()
    assert residuals.residual_for((None,)) == AlwaysFalse()  # a null matches no comparison
