"""parse_filter: the filter language and its errors."""

from __future__ import annotations

import datetime
import re
from decimal import Decimal

import pytest

from icepark.errors import ValidationError
from icepark.expressions import AlwaysFalse, AlwaysTrue, col, parse_filter


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x = 1", col("x") == 1),
        ("x == 1", col("x") == 1),
        ("x != 1", col("x") != 1),
        ("x <> 1", col("x") != 1),
        ("x < -1", col("x") < -1),
        ("x <= 1.50", col("x") <= Decimal("1.50")),
        ("x > 1e3", col("x") > 1000.0),
        ("x >= .5", col("x") >= Decimal(".5")),
        ("1 < x", col("x") > 1),
        ("'a' = x", col("x") == "a"),
        ("x = 'it''s'", col("x") == "it's"),
        ("x = true", col("x") == True),  # noqa: E712
        ("x = FALSE", col("x") == False),  # noqa: E712
        ("x = X'0aff'", col("x") == b"\x0a\xff"),
        ("x is null", col("x").is_null()),
        ("x IS NOT NULL", col("x").not_null()),
        ("x is nan", col("x").is_nan()),
        ("x is not nan", col("x").not_nan()),
        ("x in (1, 2, 3)", col("x").isin([1, 2, 3])),
        ("x not in ('a')", col("x").not_in(["a"])),
        ("x like 'ab%'", col("x").starts_with("ab")),
        ("x not like 'ab%'", col("x").not_starts_with("ab")),
        ("x like 'ab'", col("x") == "ab"),
        ("x like 'a\\%b\\_%'", col("x").starts_with("a%b_")),
        ("starts_with(x, 'ab')", col("x").starts_with("ab")),
        ("x between 1 and 5", (col("x") >= 1) & (col("x") <= 5)),
        ("x not between 1 and 5", ~((col("x") >= 1) & (col("x") <= 5))),
        ("location.lat > 0", col("location.lat") > 0),
        ("`weird name` = 1", col("weird name") == 1),
        ('"Quoted"."in" = 1', col("Quoted.in") == 1),
        ("true", AlwaysTrue()),
        ("false or x = 1", col("x") == 1),
        ("date = date '2024-01-02'", col("date") == datetime.date(2024, 1, 2)),
        (
            "ts >= timestamp '2024-01-02 10:00:00'",
            col("ts") >= datetime.datetime(2024, 1, 2, 10),
        ),
        (
            "ts >= timestamptz '2024-01-02T10:00:00'",
            col("ts") >= datetime.datetime(2024, 1, 2, 10, tzinfo=datetime.UTC),
        ),
    ],
)
def test_parse(text: str, expected: object) -> None:
    assert parse_filter(text) == expected


def test_precedence_and_parentheses() -> None:
    a, b, c = col("a") == 1, col("b") == 2, col("c") == 3
    assert parse_filter("a = 1 or b = 2 and c = 3") == a | (b & c)
    assert parse_filter("(a = 1 or b = 2) and c = 3") == (a | b) & c
    assert parse_filter("not a = 1 and b = 2") == (~a) & b
    assert parse_filter("NOT (a = 1 AND b = 2)") == ~(a & b)
    assert parse_filter("a = 1 and false") == AlwaysFalse()


def test_example_from_the_brief() -> None:
    expr = parse_filter("ts >= '2024-01-01' and category in ('a', 'b') and name is not null")
    assert (
        expr
        == (col("ts") >= "2024-01-01") & col("category").isin(["a", "b"]) & col("name").not_null()
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty filter"),
        ("x = null", "is null"),
        ("x != null", "is not null"),
        ("x in (1, null)", "null cannot be in a list"),
        ("x = ", "expected a literal"),
        ("x = y", "comparing two columns"),
        ("(x = 1", "expected ')'"),
        ("x = 1)", "unexpected ')'"),
        ("x = 'abc", "unterminated"),
        ("x like '%ab'", "prefix patterns"),
        ("x like 'a_b'", "wildcards"),
        ("x ~ 1", "unexpected character"),
        ("x", "expected an operator"),
        ("x is 5", "expected 'null' or 'nan'"),
        ("and = 1", "expected a column name"),
        ("x = X'zz'", "invalid hex"),
        ("x = date 'nope'", "invalid date"),
        ("x not = 1", "expected 'in', 'like' or 'between'"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        parse_filter(text)


def test_error_shows_position() -> None:
    with pytest.raises(ValidationError) as info:
        parse_filter("a = 1 and b ! 2")
    text = str(info.value)
    assert "position 12" in text
    assert text.splitlines()[-1].index("^") == 2 + 12


def test_not_a_string() -> None:
    with pytest.raises(ValidationError):
        parse_filter(5)  # type: ignore[arg-type]


def test_as_filter_takes_what_the_apis_take() -> None:
    from icepark.expressions import as_filter

    assert as_filter(None) == AlwaysTrue()
    expr = col("x") > 5
    assert as_filter(expr) is expr
    assert as_filter("x > 5") == parse_filter("x > 5")
    with pytest.raises(ValidationError, match="Invalid filter"):
        as_filter("x >")
