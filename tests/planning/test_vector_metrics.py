"""The column-at-a-time metrics evaluators answer as the inclusive and strict metrics
evaluators do.

For random data files (counts present, missing, zero, negative; bounds of every type: valid,
of the wrong length, NaN, not UTF-8, truncated strings) written to a manifest and decoded into
arrays, and random filters over every predicate kind and type (comparisons, in with few and
many values, null and NaN checks, prefixes, decimals, combinations with and/or/not),
:func:`metrics_might_match` gives, for every entry, exactly
``InclusiveMetricsEvaluator(schema, filter).eval(file)`` of the same file, and
:func:`metrics_must_match` exactly ``StrictMetricsEvaluator(schema, filter).eval(file)``.
"""

from __future__ import annotations

import math
import uuid
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.avro.compiled import kernel_available
from icepark.expressions import (
    InclusiveMetricsEvaluator,
    StrictMetricsEvaluator,
    and_,
    not_,
    or_,
    referenced_field_ids,
)
from icepark.expressions.model import Operation
from icepark.expressions.predicates import predicate
from icepark.io import PyArrowFileIO
from icepark.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    write_manifest,
)
from icepark.manifest.entry_columns import read_entry_columns
from icepark.planning.vector_metrics import metrics_might_match, metrics_must_match
from icepark.spec.conversions import to_bytes
from icepark.spec.partitioning import UNPARTITIONED
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    UUIDType,
)

pytestmark = pytest.mark.skipif(not kernel_available(), reason="numba is not importable")

SCHEMA = Schema(
    NestedField(1, "i", IntegerType()),
    NestedField(2, "l", LongType(), required=True),
    NestedField(3, "d", DateType()),
    NestedField(4, "ts", TimestampType()),
    NestedField(5, "f", FloatType()),
    NestedField(6, "g", DoubleType()),
    NestedField(7, "s", StringType()),
    NestedField(8, "b", BinaryType()),
    NestedField(9, "x", FixedType(3)),
    NestedField(10, "u", UUIDType()),
    NestedField(11, "t", BooleanType()),
    NestedField(12, "m", DecimalType(9, 2)),
)

_FLOATS = st.floats(width=32, allow_nan=True) | st.sampled_from([0.0, -0.0, 1.5, math.nan])
VALUES = {
    1: st.integers(-(2**31), 2**31 - 1) | st.integers(-5, 5),
    2: st.integers(-(2**63), 2**63 - 1) | st.integers(-5, 5),
    3: st.integers(-1000, 30000),
    4: st.integers(-(2**62), 2**62) | st.integers(-5, 5),
    5: _FLOATS,
    6: st.floats(allow_nan=True) | st.sampled_from([0.0, 2.5, -1.0, math.nan]),
    7: st.text(max_size=4) | st.sampled_from(["", "a", "ab", "b", "é", "\U0001f600"]),
    8: st.binary(max_size=4),
    9: st.binary(min_size=3, max_size=3),
    10: st.uuids(),
    11: st.booleans(),
    12: st.decimals(-9999999, 9999999, places=2, allow_nan=False, allow_infinity=False),
}


@st.composite
def _bound(draw: st.DrawFn, fid: int) -> bytes:
    t = SCHEMA.find_field(fid).field_type
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return draw(st.binary(max_size=9))  # any bytes: maybe the wrong length, not UTF-8
    if choice == 1 and fid == 2:
        return to_bytes(IntegerType(), draw(VALUES[1]))  # a long promoted from an int
    if choice == 1 and fid == 6:
        return to_bytes(FloatType(), draw(_FLOATS))  # a double promoted from a float
    return to_bytes(t, draw(VALUES[fid]))  # type: ignore[arg-type]


COUNT = st.sampled_from([-1, 0, 1, 2, 5, 10])


@st.composite
def _file(draw: st.DrawFn, n: int) -> DataFile:
    ids = st.sets(st.sampled_from(sorted(VALUES)), max_size=12)

    def counts() -> dict[int, int] | None:
        keys = draw(ids)
        return None if draw(st.booleans()) and not keys else {k: draw(COUNT) for k in keys}

    def bounds() -> dict[int, bytes] | None:
        keys = draw(ids)
        return {k: draw(_bound(k)) for k in keys} if keys or draw(st.booleans()) else None

    return DataFile(
        FileContent.DATA,
        f"/d/{n}.parquet",
        FileFormat.PARQUET,
        (),
        draw(st.sampled_from([-1, 0, 1, 10, 1000])),
        100,
        value_counts=counts(),
        null_value_counts=counts(),
        nan_value_counts=counts(),
        lower_bounds=bounds(),
        upper_bounds=bounds(),
    )


_OPS = [
    Operation.LT,
    Operation.LT_EQ,
    Operation.GT,
    Operation.GT_EQ,
    Operation.EQ,
    Operation.NOT_EQ,
    Operation.IN,
    Operation.NOT_IN,
    Operation.IS_NULL,
    Operation.NOT_NULL,
    Operation.IS_NAN,
    Operation.NOT_NAN,
    Operation.STARTS_WITH,
    Operation.NOT_STARTS_WITH,
]


@st.composite
def _predicate(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    fid = draw(st.sampled_from(sorted(VALUES)))
    name = SCHEMA.find_field(fid).name
    op = draw(st.sampled_from(_OPS))
    if op in (Operation.IS_NAN, Operation.NOT_NAN) and fid not in (5, 6):
        op = Operation.IS_NULL
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH) and fid != 7:
        op = Operation.EQ
    if op.is_unary:
        return predicate(op, name)
    value = draw(VALUES[fid].filter(lambda v: not (isinstance(v, float) and math.isnan(v))))
    if op in (Operation.IN, Operation.NOT_IN):
        many = draw(st.booleans()) and draw(st.booleans())
        size = 210 if many else draw(st.integers(0, 3))
        values = {value, *draw(st.lists(VALUES[fid], max_size=size, min_size=size))}
        values = {v for v in values if not (isinstance(v, float) and math.isnan(v))}
        return predicate(op, name, values or {value})
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        return predicate(op, name, str(value))
    return predicate(op, name, value)


FILTERS = st.recursive(
    _predicate(),
    lambda inner: st.one_of(
        st.builds(and_, inner, inner), st.builds(or_, inner, inner), st.builds(not_, inner)
    ),
    max_leaves=4,
)


def _manifest(tmp_path: Path, files: list[DataFile]) -> str:
    location = str(tmp_path / "m.avro")
    with write_manifest(
        PyArrowFileIO().new_output(location),
        UNPARTITIONED,
        SCHEMA,
        format_version=2,
        snapshot_id=7,
        overwrite=True,
    ) as writer:
        for f in files:
            writer.write_entry(ManifestEntry(ManifestEntryStatus.ADDED, 7, 1, 1, f))
    return location


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), row_filter=FILTERS)
def test_same_answers_as_the_evaluators(
    tmp_path: Path, data: st.DataObject, row_filter: object
) -> None:
    files = [data.draw(_file(n)) for n in range(data.draw(st.integers(1, 12)))]
    location = _manifest(tmp_path, files)
    raw = Path(location).read_bytes()
    judges = (
        (InclusiveMetricsEvaluator(SCHEMA, row_filter), metrics_might_match),  # type: ignore[arg-type]
        (StrictMetricsEvaluator(SCHEMA, row_filter), metrics_must_match),  # type: ignore[arg-type]
    )
    for evaluator, judge in judges:
        # decoded as a planner decodes: only the metrics of the columns the filter reads
        columns = read_entry_columns(location, raw, metrics_of=referenced_field_ids(evaluator.expr))
        expected = [evaluator.eval(f) for f in files]
        decoded = [evaluator.eval(columns.entry(i).data_file) for i in range(columns.count)]
        assert decoded == expected
        rows = np.arange(columns.count)
        assert judge(evaluator.expr, columns, rows).tolist() == expected
        # subsets of the entries, as a planner asks after partition pruning
        assert judge(evaluator.expr, columns, rows[::2]).tolist() == expected[::2]
        assert judge(evaluator.expr, columns, rows[1::2]).tolist() == expected[1::2]


def test_the_strict_comparisons_at_their_bounds(tmp_path: Path) -> None:
    """Every comparison against every literal at, inside and outside small bounds, and the
    null and NaN tests, on a required column, a nullable one and a double, with null and NaN
    counts absent, zero, some or all: the cases where ``<`` and ``<=`` differ, or a NaN
    count decides, which random files rarely hit."""
    files = []
    for lo, hi in [(0, 0), (0, 2), (1, 2), (2, 2)]:
        for nulls in (None, 0, 1, 5):
            for nans in (None, 0, 1, 5):
                files.append(
                    DataFile(
                        FileContent.DATA,
                        f"/d/{len(files)}.parquet",
                        FileFormat.PARQUET,
                        (),
                        5,
                        100,
                        value_counts={2: 5, 1: 5, 6: 5},
                        null_value_counts=None if nulls is None else {1: nulls, 6: nulls},
                        nan_value_counts=None if nans is None else {6: nans},
                        lower_bounds={k: to_bytes(t, lo) for k, t in _SMALL.items()},
                        upper_bounds={k: to_bytes(t, hi) for k, t in _SMALL.items()},
                    )
                )
    location = _manifest(tmp_path, files)
    columns = read_entry_columns(location, Path(location).read_bytes(), metrics_of={1, 2, 6})
    rows = np.arange(len(files))
    filters = [
        predicate(op, name, value)
        for name in ("l", "i", "g")
        for op in (Operation.LT, Operation.LT_EQ, Operation.GT, Operation.GT_EQ, Operation.EQ)
        for value in (-1, 0, 1, 2, 3)
    ]
    filters += [
        predicate(op, name)
        for name in ("l", "i", "g")
        for op in (Operation.IS_NULL, Operation.NOT_NULL)
    ]
    filters += [predicate(op, "g") for op in (Operation.IS_NAN, Operation.NOT_NAN)]
    hits = 0
    for row_filter in filters:
        strict = StrictMetricsEvaluator(SCHEMA, row_filter)
        expected = [strict.eval(f) for f in files]
        got = metrics_must_match(strict.expr, columns, rows).tolist()
        assert got == expected, row_filter
        hits += sum(expected)
    assert hits > 300  # the files where every row matches are among those judged


_SMALL = {2: LongType(), 1: IntegerType(), 6: DoubleType()}


def test_a_boolean_bound_is_true_for_any_byte_but_zero(tmp_path: Path) -> None:
    """The spec reads a boolean's single value as true for any non-zero byte: bounds of 0x02
    (found by the property test above) are judged as bounds of true, both ways (``t = true``
    over them might match; ``t > true`` cannot)."""
    files = [
        DataFile(
            FileContent.DATA,
            f"/d/{n}.parquet",
            FileFormat.PARQUET,
            (),
            5,
            100,
            value_counts={11: 5},
            null_value_counts={11: 0},
            lower_bounds={11: lo},
            upper_bounds={11: hi},
        )
        for n, (lo, hi) in enumerate([(b"\x02", b"\x02"), (b"\x00", b"\xff"), (b"\x00", b"\x00")])
    ]
    location = _manifest(tmp_path, files)
    columns = read_entry_columns(location, Path(location).read_bytes(), metrics_of={11})
    rows = np.arange(len(files))
    for op in (Operation.LT, Operation.LT_EQ, Operation.GT, Operation.GT_EQ, Operation.EQ):
        for value in (True, False):
            row_filter = predicate(op, "t", value)
            for evaluator, judge in (
                (InclusiveMetricsEvaluator(SCHEMA, row_filter), metrics_might_match),
                (StrictMetricsEvaluator(SCHEMA, row_filter), metrics_must_match),
            ):
                expected = [evaluator.eval(f) for f in files]
                assert judge(evaluator.expr, columns, rows).tolist() == expected, row_filter
    might = InclusiveMetricsEvaluator(SCHEMA, predicate(Operation.EQ, "t", True))
    assert metrics_might_match(might.expr, columns, rows).tolist() == [True, True, False]


def test_a_decimal_or_a_prefix_is_judged_per_entry(tmp_path: Path) -> None:
    files = [
        DataFile(
            FileContent.DATA,
            f"/d/{n}.parquet",
            FileFormat.PARQUET,
            (),
            10,
            100,
            lower_bounds={12: to_bytes(DecimalType(9, 2), Decimal(lo)), 7: lo.encode()},
            upper_bounds={12: to_bytes(DecimalType(9, 2), Decimal(hi)), 7: hi.encode()},
        )
        for n, (lo, hi) in enumerate([("1.00", "2.00"), ("3.00", "4.00"), ("5", "6")])
    ]
    location = _manifest(tmp_path, files)
    columns = read_entry_columns(location, Path(location).read_bytes(), metrics_of={2, 7, 12})
    for row_filter in (
        predicate(Operation.GT, "m", Decimal("2.50")),
        predicate(Operation.STARTS_WITH, "s", "3"),
        and_(predicate(Operation.LT, "m", Decimal("5")), predicate(Operation.GT, "l", 3)),
    ):
        evaluator = InclusiveMetricsEvaluator(SCHEMA, row_filter)
        got = metrics_might_match(evaluator.expr, columns, np.arange(3)).tolist()
        assert got == [evaluator.eval(f) for f in files]
        strict = StrictMetricsEvaluator(SCHEMA, row_filter)
        got = metrics_must_match(strict.expr, columns, np.arange(3)).tolist()
        assert got == [strict.eval(f) for f in files]
    assert str(uuid.UUID(int=0))  # (uuid bounds are covered by the property test)
