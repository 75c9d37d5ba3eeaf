"""Inclusive and strict projections through every transform (Java's projection test vectors).

Expected values are written as partition paths print them (``2017-12``, ``1969-12-31``,
``2017-12-01-10``); sets are sorted. Where Java keeps duplicates in a projected set (``[abcde,
abcde]``) icepark keeps a set, and a one-value set becomes ``=`` / ``!=``.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest

from icepark.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    Expression,
    LiteralPredicate,
    Operation,
    Reference,
    SetPredicate,
    UnaryPredicate,
    and_,
    col,
    inclusive_projection,
    strict_projection,
    to_literal,
)
from icepark.spec.partitioning import build_partition_spec
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampNanoType,
    TimestampType,
    UUIDType,
)

Op = Operation
LT, LT_EQ, GT, GT_EQ = Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ
EQ, NOT_EQ, IN, NOT_IN = Op.EQ, Op.NOT_EQ, Op.IN, Op.NOT_IN


def _project(source: IcebergType, term: str, expr: Expression, strict: bool) -> Any:
    """The projection as ``"true"``, ``"false"``, or ``(op, human value(s))``."""
    schema = Schema(NestedField(1, "value", source))
    spec = build_partition_spec(schema, [term])
    project = strict_projection if strict else inclusive_projection
    result = project(schema, spec)(expr)
    if isinstance(result, AlwaysTrue):
        return "true"
    if isinstance(result, AlwaysFalse):
        return "false"
    field = spec.fields[0]
    result_type = spec.partition_type(schema).fields[0].field_type

    def human(v: Any) -> str:
        return field.transform.to_human_string(result_type, v)

    if isinstance(result, SetPredicate):
        assert result.term.name == field.name
        return result.op, sorted(human(v) for v in sorted(result.literals))
    if isinstance(result, LiteralPredicate):
        assert result.term.name == field.name
        return result.op, human(result.literal)
    return result


def _check(
    source: IcebergType, term: str, value: Any, other: Any, strict: bool, expected: list[Any]
) -> None:
    """expected: results for <, <=, >, >=, then = and != (inclusive) or != and = (strict, as
    Java's tests list them), then in (value, other) and not in (value, other)."""
    v = col("value")
    eq_ne = [v != value, v == value] if strict else [v == value, v != value]
    exprs = [
        v < value,
        v <= value,
        v > value,
        v >= value,
        *eq_ne,
        v.isin([value, other]),
        v.not_in([value, other]),
    ]
    actual = [_project(source, term, e, strict) for e in exprs]
    assert actual == expected


def _lit(text: str, t: IcebergType) -> Any:
    return to_literal(text, t)


# -- dates ---------------------------------------------------------------------------------------

D = DateType()


@pytest.mark.parametrize(
    ("term", "value", "other", "strict", "expected"),
    [
        (
            "month(value)",
            "2017-01-01",
            "2017-12-02",
            True,
            [
                (LT, "2017-01"),
                (LT, "2017-01"),
                (GT, "2017-01"),
                (GT, "2016-12"),
                (NOT_EQ, "2017-01"),
                "false",
                "false",
                (NOT_IN, ["2017-01", "2017-12"]),
            ],
        ),
        (
            "month(value)",
            "1969-01-01",
            "1969-12-31",
            True,
            [
                (LT, "1969-01"),
                (LT, "1969-01"),
                (GT, "1969-02"),
                (GT, "1969-01"),
                (NOT_IN, ["1969-01", "1969-02"]),
                "false",
                "false",
                (NOT_IN, ["1969-01", "1969-02", "1969-12", "1970-01"]),
            ],
        ),
        (
            "month(value)",
            "2017-12-31",
            "2017-01-01",
            True,
            [
                (LT, "2017-12"),
                (LT, "2018-01"),
                (GT, "2017-12"),
                (GT, "2017-12"),
                (NOT_EQ, "2017-12"),
                "false",
                "false",
                (NOT_IN, ["2017-01", "2017-12"]),
            ],
        ),
        (
            "month(value)",
            "1969-12-31",
            "1969-11-01",
            True,
            [
                (LT, "1969-12"),
                (LT, "1970-01"),
                (GT, "1970-01"),
                (GT, "1970-01"),
                (NOT_IN, ["1969-12", "1970-01"]),
                "false",
                "false",
                (NOT_IN, ["1969-11", "1969-12", "1970-01"]),
            ],
        ),
        (
            "month(value)",
            "2017-12-01",
            "2017-01-01",
            False,
            [
                (LT_EQ, "2017-11"),
                (LT_EQ, "2017-12"),
                (GT_EQ, "2017-12"),
                (GT_EQ, "2017-12"),
                (EQ, "2017-12"),
                "true",
                (IN, ["2017-01", "2017-12"]),
                "true",
            ],
        ),
        (
            "month(value)",
            "1969-01-01",
            "1969-12-31",
            False,
            [
                (LT_EQ, "1969-01"),
                (LT_EQ, "1969-02"),
                (GT_EQ, "1969-01"),
                (GT_EQ, "1969-01"),
                (IN, ["1969-01", "1969-02"]),
                "true",
                (IN, ["1969-01", "1969-02", "1969-12", "1970-01"]),
                "true",
            ],
        ),
        (
            "month(value)",
            "2017-12-31",
            "2017-01-01",
            False,
            [
                (LT_EQ, "2017-12"),
                (LT_EQ, "2017-12"),
                (GT_EQ, "2018-01"),
                (GT_EQ, "2017-12"),
                (EQ, "2017-12"),
                "true",
                (IN, ["2017-01", "2017-12"]),
                "true",
            ],
        ),
        (
            "month(value)",
            "1969-12-31",
            "1969-01-01",
            False,
            [
                (LT_EQ, "1970-01"),
                (LT_EQ, "1970-01"),
                (GT_EQ, "1970-01"),
                (GT_EQ, "1969-12"),
                (IN, ["1969-12", "1970-01"]),
                "true",
                (IN, ["1969-01", "1969-02", "1969-12", "1970-01"]),
                "true",
            ],
        ),
        (
            "day(value)",
            "2017-01-01",
            "2017-12-31",
            True,
            [
                (LT, "2017-01-01"),
                (LT, "2017-01-02"),
                (GT, "2017-01-01"),
                (GT, "2016-12-31"),
                (NOT_EQ, "2017-01-01"),
                "false",
                "false",
                (NOT_IN, ["2017-01-01", "2017-12-31"]),
            ],
        ),
        (
            "day(value)",
            "1969-12-30",
            "1969-12-28",
            True,
            [
                (LT, "1969-12-30"),
                (LT, "1969-12-31"),
                (GT, "1969-12-30"),
                (GT, "1969-12-29"),
                (NOT_EQ, "1969-12-30"),
                "false",
                "false",
                (NOT_IN, ["1969-12-28", "1969-12-30"]),
            ],
        ),
        (
            "day(value)",
            "2017-01-01",
            "2017-12-31",
            False,
            [
                (LT_EQ, "2016-12-31"),
                (LT_EQ, "2017-01-01"),
                (GT_EQ, "2017-01-02"),
                (GT_EQ, "2017-01-01"),
                (EQ, "2017-01-01"),
                "true",
                (IN, ["2017-01-01", "2017-12-31"]),
                "true",
            ],
        ),
        (
            "day(value)",
            "1969-12-30",
            "1969-12-28",
            False,
            [
                (LT_EQ, "1969-12-29"),
                (LT_EQ, "1969-12-30"),
                (GT_EQ, "1969-12-31"),
                (GT_EQ, "1969-12-30"),
                (EQ, "1969-12-30"),
                "true",
                (IN, ["1969-12-28", "1969-12-30"]),
                "true",
            ],
        ),
        (
            "year(value)",
            "2017-01-01",
            "2016-12-31",
            True,
            [
                (LT, "2017"),
                (LT, "2017"),
                (GT, "2017"),
                (GT, "2016"),
                (NOT_EQ, "2017"),
                "false",
                "false",
                (NOT_IN, ["2016", "2017"]),
            ],
        ),
        (
            "year(value)",
            "1970-01-01",
            "1969-12-31",
            True,
            [
                (LT, "1970"),
                (LT, "1970"),
                (GT, "1971"),
                (GT, "1970"),
                (NOT_EQ, "1970"),
                "false",
                "false",
                (NOT_IN, ["1969", "1970"]),
            ],
        ),
        (
            "year(value)",
            "2017-12-31",
            "2016-01-01",
            True,
            [
                (LT, "2017"),
                (LT, "2018"),
                (GT, "2017"),
                (GT, "2017"),
                (NOT_EQ, "2017"),
                "false",
                "false",
                (NOT_IN, ["2016", "2017"]),
            ],
        ),
        (
            "year(value)",
            "2017-01-01",
            "2016-12-31",
            False,
            [
                (LT_EQ, "2016"),
                (LT_EQ, "2017"),
                (GT_EQ, "2017"),
                (GT_EQ, "2017"),
                (EQ, "2017"),
                "true",
                (IN, ["2016", "2017"]),
                "true",
            ],
        ),
        (
            "year(value)",
            "2017-12-31",
            "2016-01-01",
            False,
            [
                (LT_EQ, "2017"),
                (LT_EQ, "2017"),
                (GT_EQ, "2018"),
                (GT_EQ, "2017"),
                (EQ, "2017"),
                "true",
                (IN, ["2016", "2017"]),
                "true",
            ],
        ),
    ],
)
def test_dates(term: str, value: str, other: str, strict: bool, expected: list[Any]) -> None:
    _check(D, term, _lit(value, D), _lit(other, D), strict, expected)


# -- timestamps ----------------------------------------------------------------------------------

TS = TimestampType()


@pytest.mark.parametrize(
    ("term", "value", "other", "strict", "expected"),
    [
        (
            "month(value)",
            "2017-12-01T00:00:00",
            "2017-12-02T00:00:00",
            True,
            [
                (LT, "2017-12"),
                (LT, "2017-12"),
                (GT, "2017-12"),
                (GT, "2017-11"),
                (NOT_EQ, "2017-12"),
                "false",
                "false",
                (NOT_EQ, "2017-12"),
            ],
        ),
        (
            "month(value)",
            "1969-01-01T00:00:00",
            "1969-03-01T00:00:00",
            True,
            [
                (LT, "1969-01"),
                (LT, "1969-01"),
                (GT, "1969-02"),
                (GT, "1969-01"),
                (NOT_IN, ["1969-01", "1969-02"]),
                "false",
                "false",
                (NOT_IN, ["1969-01", "1969-02", "1969-03", "1969-04"]),
            ],
        ),
        (
            "month(value)",
            "1969-12-31T23:59:59.999999",
            "1970-01-01T00:00:00",
            False,
            [
                (LT_EQ, "1970-01"),
                (LT_EQ, "1970-01"),
                (GT_EQ, "1970-01"),
                (GT_EQ, "1969-12"),
                (IN, ["1969-12", "1970-01"]),
                "true",
                (IN, ["1969-12", "1970-01"]),
                "true",
            ],
        ),
        (
            "day(value)",
            "2017-12-01T00:00:00",
            "2017-12-02T00:00:00",
            True,
            [
                (LT, "2017-12-01"),
                (LT, "2017-12-01"),
                (GT, "2017-12-01"),
                (GT, "2017-11-30"),
                (NOT_EQ, "2017-12-01"),
                "false",
                "false",
                (NOT_IN, ["2017-12-01", "2017-12-02"]),
            ],
        ),
        (
            "day(value)",
            "1969-01-01T00:00:00",
            "1969-01-02T00:00:00",
            True,
            [
                (LT, "1969-01-01"),
                (LT, "1969-01-01"),
                (GT, "1969-01-02"),
                (GT, "1969-01-01"),
                (NOT_IN, ["1969-01-01", "1969-01-02"]),
                "false",
                "false",
                (NOT_IN, ["1969-01-01", "1969-01-02", "1969-01-03"]),
            ],
        ),
        (
            "day(value)",
            "2017-12-01T23:59:59.999999",
            "2017-11-02T00:00:00",
            True,
            [
                (LT, "2017-12-01"),
                (LT, "2017-12-02"),
                (GT, "2017-12-01"),
                (GT, "2017-12-01"),
                (NOT_EQ, "2017-12-01"),
                "false",
                "false",
                (NOT_IN, ["2017-11-02", "2017-12-01"]),
            ],
        ),
        (
            "day(value)",
            "1969-12-31T23:59:59.999999",
            "1970-01-01T00:00:00",
            True,
            [
                (LT, "1969-12-31"),
                (LT, "1970-01-01"),
                (GT, "1970-01-01"),
                (GT, "1970-01-01"),
                (NOT_IN, ["1969-12-31", "1970-01-01"]),
                "false",
                "false",
                (NOT_IN, ["1969-12-31", "1970-01-01"]),
            ],
        ),
        (
            "day(value)",
            "2017-12-01T00:00:00",
            "2017-12-02T00:00:00",
            False,
            [
                (LT_EQ, "2017-11-30"),
                (LT_EQ, "2017-12-01"),
                (GT_EQ, "2017-12-01"),
                (GT_EQ, "2017-12-01"),
                (EQ, "2017-12-01"),
                "true",
                (IN, ["2017-12-01", "2017-12-02"]),
                "true",
            ],
        ),
        (
            "day(value)",
            "1969-01-01T00:00:00",
            "1969-01-02T00:00:00",
            False,
            [
                (LT_EQ, "1969-01-01"),
                (LT_EQ, "1969-01-02"),
                (GT_EQ, "1969-01-01"),
                (GT_EQ, "1969-01-01"),
                (IN, ["1969-01-01", "1969-01-02"]),
                "true",
                (IN, ["1969-01-01", "1969-01-02", "1969-01-03"]),
                "true",
            ],
        ),
        (
            "day(value)",
            "1969-12-31T23:59:59.999999",
            "1970-01-01T00:00:00",
            False,
            [
                (LT_EQ, "1970-01-01"),
                (LT_EQ, "1970-01-01"),
                (GT_EQ, "1970-01-01"),
                (GT_EQ, "1969-12-31"),
                (IN, ["1969-12-31", "1970-01-01"]),
                "true",
                (IN, ["1969-12-31", "1970-01-01"]),
                "true",
            ],
        ),
        (
            "year(value)",
            "2017-01-01T00:00:00",
            "2016-12-02T00:00:00",
            True,
            [
                (LT, "2017"),
                (LT, "2017"),
                (GT, "2017"),
                (GT, "2016"),
                (NOT_EQ, "2017"),
                "false",
                "false",
                (NOT_IN, ["2016", "2017"]),
            ],
        ),
        (
            "year(value)",
            "2017-12-31T23:59:59.999999",
            "2016-12-31T23:59:59.999999",
            True,
            [
                (LT, "2017"),
                (LT, "2018"),
                (GT, "2017"),
                (GT, "2017"),
                (NOT_EQ, "2017"),
                "false",
                "false",
                (NOT_IN, ["2016", "2017"]),
            ],
        ),
        (
            "year(value)",
            "2017-01-01T00:00:00",
            "2016-12-02T00:00:00",
            False,
            [
                (LT_EQ, "2016"),
                (LT_EQ, "2017"),
                (GT_EQ, "2017"),
                (GT_EQ, "2017"),
                (EQ, "2017"),
                "true",
                (IN, ["2016", "2017"]),
                "true",
            ],
        ),
        (
            "hour(value)",
            "2017-12-01T10:00:00",
            "2017-12-02T00:00:00",
            True,
            [
                (LT, "2017-12-01-10"),
                (LT, "2017-12-01-10"),
                (GT, "2017-12-01-10"),
                (GT, "2017-12-01-09"),
                (NOT_EQ, "2017-12-01-10"),
                "false",
                "false",
                (NOT_IN, ["2017-12-01-10", "2017-12-02-00"]),
            ],
        ),
        (
            "hour(value)",
            "2017-12-01T10:59:59.999999",
            "2017-12-02T00:00:00",
            False,
            [
                (LT_EQ, "2017-12-01-10"),
                (LT_EQ, "2017-12-01-10"),
                (GT_EQ, "2017-12-01-11"),
                (GT_EQ, "2017-12-01-10"),
                (EQ, "2017-12-01-10"),
                "true",
                (IN, ["2017-12-01-10", "2017-12-02-00"]),
                "true",
            ],
        ),
        (
            "hour(value)",
            "1969-12-31T23:00:00",
            "1970-01-01T00:00:00",
            False,
            [
                (LT_EQ, "1969-12-31-23"),
                (LT_EQ, "1970-01-01-00"),
                (GT_EQ, "1969-12-31-23"),
                (GT_EQ, "1969-12-31-23"),
                (IN, ["1969-12-31-23", "1970-01-01-00"]),
                "true",
                (IN, ["1969-12-31-23", "1970-01-01-00"]),
                "true",
            ],
        ),
    ],
)
def test_timestamps(term: str, value: str, other: str, strict: bool, expected: list[Any]) -> None:
    _check(TS, term, _lit(value, TS), _lit(other, TS), strict, expected)


def test_timestamp_ns_day() -> None:
    t = TimestampNanoType()
    value = _lit("2017-12-01T00:00:00", t)
    assert _project(t, "day(value)", col("value") < value, False) == (LT_EQ, "2017-11-30")
    assert _project(t, "day(value)", col("value") >= value, True) == (GT, "2017-11-30")


# -- truncate ------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [IntegerType(), LongType()])
@pytest.mark.parametrize(
    ("value", "strict", "expected"),
    [
        (
            100,
            True,
            [
                (LT, "100"),
                (LT, "100"),
                (GT, "100"),
                (GT, "90"),
                (NOT_EQ, "100"),
                "false",
                "false",
                (NOT_IN, ["100", "90"]),
            ],
        ),
        (
            99,
            True,
            [
                (LT, "90"),
                (LT, "100"),
                (GT, "90"),
                (GT, "90"),
                (NOT_EQ, "90"),
                "false",
                "false",
                (NOT_EQ, "90"),
            ],
        ),
        (
            100,
            False,
            [
                (LT_EQ, "90"),
                (LT_EQ, "100"),
                (GT_EQ, "100"),
                (GT_EQ, "100"),
                (EQ, "100"),
                "true",
                (IN, ["100", "90"]),
                "true",
            ],
        ),
        (
            99,
            False,
            [
                (LT_EQ, "90"),
                (LT_EQ, "90"),
                (GT_EQ, "100"),
                (GT_EQ, "90"),
                (EQ, "90"),
                "true",
                (EQ, "90"),
                "true",
            ],
        ),
        (
            -5,
            False,
            [
                (LT_EQ, "-10"),
                (LT_EQ, "-10"),
                (GT_EQ, "-10"),
                (GT_EQ, "-10"),
                (EQ, "-10"),
                "true",
                (EQ, "-10"),
                "true",
            ],
        ),
    ],
)
def test_truncate_integers(
    source: IcebergType, value: int, strict: bool, expected: list[Any]
) -> None:
    other = value - 1 if value == 100 else value - 2
    _check(source, "truncate(10, value)", value, other, strict, expected)


@pytest.mark.parametrize(
    ("value", "strict", "expected"),
    [
        (
            "100.00",
            True,
            [
                (LT, "100.00"),
                (LT, "100.00"),
                (GT, "100.00"),
                (GT, "99.90"),
                (NOT_EQ, "100.00"),
                "false",
                "false",
                (NOT_IN, ["100.00", "99.00"]),
            ],
        ),
        (
            "99.99",
            True,
            [
                (LT, "99.90"),
                (LT, "100.00"),
                (GT, "99.90"),
                (GT, "99.90"),
                (NOT_EQ, "99.90"),
                "false",
                "false",
                (NOT_IN, ["98.90", "99.90"]),
            ],
        ),
        (
            "100.00",
            False,
            [
                (LT_EQ, "99.90"),
                (LT_EQ, "100.00"),
                (GT_EQ, "100.00"),
                (GT_EQ, "100.00"),
                (EQ, "100.00"),
                "true",
                (IN, ["100.00", "99.00"]),
                "true",
            ],
        ),
        (
            "99.99",
            False,
            [
                (LT_EQ, "99.90"),
                (LT_EQ, "99.90"),
                (GT_EQ, "100.00"),
                (GT_EQ, "99.90"),
                (EQ, "99.90"),
                "true",
                (IN, ["98.90", "99.90"]),
                "true",
            ],
        ),
    ],
)
def test_truncate_decimals(value: str, strict: bool, expected: list[Any]) -> None:
    t = DecimalType(9, 2)
    _check(t, "truncate(10, value)", Decimal(value), Decimal(value) - 1, strict, expected)


def test_truncate_strings() -> None:
    s = StringType()
    _check(
        s,
        "truncate(5, value)",
        "abcdefg",
        "abcdefgabc",
        True,
        [
            (LT, "abcde"),
            (LT, "abcde"),
            (GT, "abcde"),
            (GT, "abcde"),
            (NOT_EQ, "abcde"),
            "false",
            "false",
            (NOT_EQ, "abcde"),
        ],
    )
    _check(
        s,
        "truncate(5, value)",
        "abcdefg",
        "abcdefgabc",
        False,
        [
            (LT_EQ, "abcde"),
            (LT_EQ, "abcde"),
            (GT_EQ, "abcde"),
            (GT_EQ, "abcde"),
            (EQ, "abcde"),
            "true",
            (EQ, "abcde"),
            "true",
        ],
    )
    # values shorter than the width are their own partition values
    _check(
        s,
        "truncate(5, value)",
        "ab",
        "abc",
        True,
        [
            (LT, "ab"),
            (LT, "ab"),
            (GT, "ab"),
            (GT, "ab"),
            (NOT_EQ, "ab"),
            (EQ, "ab"),
            (IN, ["ab", "abc"]),
            (NOT_IN, ["ab", "abc"]),
        ],
    )
    _check(
        s,
        "truncate(5, value)",
        "ab",
        "abc",
        False,
        [
            (LT_EQ, "ab"),
            (LT_EQ, "ab"),
            (GT_EQ, "ab"),
            (GT_EQ, "ab"),
            (EQ, "ab"),
            (NOT_EQ, "ab"),
            (IN, ["ab", "abc"]),
            (NOT_IN, ["ab", "abc"]),
        ],
    )
    v = col("value")
    term = "truncate(5, value)"
    assert _project(s, term, v.starts_with("abcdefg"), False) == (Op.STARTS_WITH, "abcde")
    assert _project(s, term, v.starts_with("abc"), False) == (Op.STARTS_WITH, "abc")
    assert _project(s, term, v.starts_with("abcdefg"), True) == "false"
    assert _project(s, term, v.starts_with("abcde"), True) == (EQ, "abcde")
    assert _project(s, term, v.starts_with("abc"), True) == (Op.STARTS_WITH, "abc")
    assert _project(s, term, v.not_starts_with("abc"), False) == (Op.NOT_STARTS_WITH, "abc")
    assert _project(s, term, v.not_starts_with("abcde"), False) == (NOT_EQ, "abcde")
    assert _project(s, term, v.not_starts_with("abcdefg"), False) == "true"
    assert _project(s, term, v.not_starts_with("abcdefg"), True) == (Op.NOT_STARTS_WITH, "abcde")


def test_truncate_binary() -> None:
    b = BinaryType()
    _check(
        b,
        "truncate(5, value)",
        b"abcdefg",
        b"abcdehij",
        False,
        [
            (LT_EQ, "YWJjZGU="),
            (LT_EQ, "YWJjZGU="),
            (GT_EQ, "YWJjZGU="),
            (GT_EQ, "YWJjZGU="),
            (EQ, "YWJjZGU="),
            "true",
            (EQ, "YWJjZGU="),
            "true",
        ],
    )
    _check(
        b,
        "truncate(5, value)",
        b"abcdefg",
        b"abcdehij",
        True,
        [
            (LT, "YWJjZGU="),
            (LT, "YWJjZGU="),
            (GT, "YWJjZGU="),
            (GT, "YWJjZGU="),
            (NOT_EQ, "YWJjZGU="),
            "false",
            "false",
            (NOT_EQ, "YWJjZGU="),
        ],
    )


# -- bucket --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "value", "other", "bucket", "both"),
    [
        (IntegerType(), 100, 101, "6", ["6", "8"]),
        (LongType(), 100, 99, "6", ["6", "7"]),
        (DecimalType(9, 2), Decimal("100.00"), Decimal("99.00"), "2", ["2", "6"]),
        (StringType(), "abcdefg", "abcdefgabc", "4", ["4", "9"]),
        (BinaryType(), b"abcdefg", b"abcdehij", "4", ["4", "6"]),
        (
            UUIDType(),
            uuid.UUID(int=(123 << 64) | 456),
            uuid.UUID(int=(456 << 64) | 123),
            "4",
            ["4", "6"],
        ),
    ],
)
def test_bucket(source: IcebergType, value: Any, other: Any, bucket: str, both: list[str]) -> None:
    term = "bucket(10, value)"
    _check(
        source,
        term,
        value,
        other,
        True,
        ["false", "false", "false", "false", (NOT_EQ, bucket), "false", "false", (NOT_IN, both)],
    )
    _check(
        source,
        term,
        value,
        other,
        False,
        ["true", "true", "true", "true", (EQ, bucket), "true", (IN, both), "true"],
    )


# -- identity, void, unary, several fields ---------------------------------------------------------


def test_identity_passes_everything_through() -> None:
    v = col("value")
    for expr in [v < 5, v != 5, v.isin([1, 2]), v.not_in([1, 2]), v.is_null(), v.not_null()]:
        for strict in (True, False):
            projected = _project(LongType(), "value", expr, strict)
            assert projected == expr or projected[0] == expr.op  # type: ignore[attr-defined]
    assert _project(DoubleType(), "value", v.is_nan(), True) == v.is_nan()
    assert _project(StringType(), "value", v.starts_with("a"), False) == (Op.STARTS_WITH, "a")


def test_void_and_unary() -> None:
    v = col("value")
    assert _project(LongType(), "void(value)", v == 5, False) == "true"
    assert _project(LongType(), "void(value)", v == 5, True) == "false"
    assert _project(LongType(), "void(value)", v.is_null(), False) == "true"
    for term in ["bucket(4, value)", "truncate(4, value)"]:
        for strict in (True, False):
            assert _project(LongType(), term, v.is_null(), strict) == UnaryPredicate(
                Op.IS_NULL, "value_" + ("bucket" if "bucket" in term else "trunc")
            )
    assert _project(TS, "day(value)", v.not_null(), True) == UnaryPredicate(
        Op.NOT_NULL, "value_day"
    )


def test_several_fields_and_connectives() -> None:
    schema = Schema(NestedField(1, "ts", TS), NestedField(2, "id", LongType()))
    spec = build_partition_spec(schema, ["day(ts)", "hour(ts)", "bucket(4, id)"])
    value = _lit("2017-12-01T10:00:00", TS)
    inclusive = inclusive_projection(schema, spec)
    strict = strict_projection(schema, spec)
    day, hour = 17501, 17501 * 24 + 10
    assert inclusive(col("ts") >= value) == and_(
        LiteralPredicate(GT_EQ, "ts_day", day), LiteralPredicate(GT_EQ, "ts_hour", hour)
    )
    assert strict(col("ts") >= value) == LiteralPredicate(GT, "ts_day", day) | (
        LiteralPredicate(GT, "ts_hour", hour - 1)
    )
    # not is pushed down: not (id = 5) projects like id != 5
    assert inclusive(~(col("id") == 5)) == AlwaysTrue()
    assert strict(~(col("id") == 5)) == LiteralPredicate(NOT_EQ, "id_bucket", 3)
    # an unpartitioned column projects to true / false
    assert inclusive((col("id") == 5) | (col("ts") < value)) == (
        LiteralPredicate(EQ, "id_bucket", 3)
        | (LiteralPredicate(LT_EQ, "ts_day", day) & LiteralPredicate(LT_EQ, "ts_hour", hour - 1))
    )
    assert isinstance(Reference("x"), Reference)


def test_out_of_range_projection_is_safe() -> None:
    # the hour of this timestamp does not fit an int: no projection rather than an error
    v = col("value")
    assert _project(TS, "hour(value)", v < 2**63 - 1, False) == "true"
    assert _project(TS, "hour(value)", v < 2**63 - 1, True) == "false"


def test_unknown_transform_projects_nothing() -> None:
    from icepark.spec.partitioning import PartitionField, PartitionSpec
    from icepark.spec.transforms import UnknownTransform

    schema = Schema(NestedField(1, "value", LongType()))
    spec = PartitionSpec(0, (PartitionField(1, 1000, UnknownTransform("zorder"), "z"),))
    for expr in [col("value") == 5, col("value").is_null()]:
        assert inclusive_projection(schema, spec)(expr) == AlwaysTrue()
        assert strict_projection(schema, spec)(expr) == AlwaysFalse()
