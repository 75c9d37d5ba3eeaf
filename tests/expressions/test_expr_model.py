"""The expression model: builders, simplification, negation, equality and str."""

from __future__ import annotations

import pytest

from icepark.errors import ValidationError
from icepark.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    LiteralPredicate,
    Not,
    Operation,
    Or,
    SetPredicate,
    UnaryPredicate,
    and_,
    col,
    not_,
    or_,
    parse_filter,
    predicate,
)


def test_column_operators_build_predicates() -> None:
    assert (col("x") == 5) == LiteralPredicate(Operation.EQ, "x", 5)
    assert (col("x") != 5).op == Operation.NOT_EQ
    assert (col("x") < 5).op == Operation.LT
    assert (col("x") <= 5).op == Operation.LT_EQ
    assert (col("x") > 5).op == Operation.GT
    assert (col("x") >= 5).op == Operation.GT_EQ
    assert (5 < col("x")).op == Operation.GT  # reflected
    assert col("x").is_null() == UnaryPredicate(Operation.IS_NULL, "x")
    assert col("x").not_null().op == Operation.NOT_NULL
    assert col("x").is_nan().op == Operation.IS_NAN
    assert col("x").not_nan().op == Operation.NOT_NAN
    expected = SetPredicate(Operation.IN, "x", {1, 2})
    assert col("x").isin([1, 2]) == expected
    assert col("x").is_in((2, 1)) == expected
    assert col("x").not_in([1]).op == Operation.NOT_IN
    assert col("s").starts_with("ab").op == Operation.STARTS_WITH
    assert col("s").not_starts_with("ab").op == Operation.NOT_STARTS_WITH


def test_connectives_and_simplification() -> None:
    a, b = col("a") == 1, col("b") == 2
    assert isinstance(a & b, And)
    assert isinstance(a | b, Or)
    assert isinstance(~a, Not)
    assert a & AlwaysTrue() == a
    assert a & AlwaysFalse() == AlwaysFalse()
    assert a | AlwaysTrue() == AlwaysTrue()
    assert a | AlwaysFalse() == a
    assert ~~a == a
    assert not_(AlwaysTrue()) == AlwaysFalse()
    assert and_() == AlwaysTrue()
    assert or_() == AlwaysFalse()
    assert and_(a, b, a) == And(And(a, b), a)
    assert AlwaysTrue() is AlwaysTrue()


def test_negate_every_predicate() -> None:
    pairs = [
        (Operation.IS_NULL, Operation.NOT_NULL),
        (Operation.IS_NAN, Operation.NOT_NAN),
        (Operation.LT, Operation.GT_EQ),
        (Operation.LT_EQ, Operation.GT),
        (Operation.EQ, Operation.NOT_EQ),
        (Operation.IN, Operation.NOT_IN),
        (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH),
    ]
    for op, neg in pairs:
        value = {"a", "b"} if op.is_set else "a"
        p = predicate(op, "x", value)
        assert p.negate() == predicate(neg, "x", value)
        assert p.negate().negate() == p
    expr = (col("a") < 1) & (col("b") > 2)
    assert expr.negate() == (col("a") >= 1) | (col("b") <= 2)


def test_immutable_hashable_equal() -> None:
    p = col("a") == 1
    with pytest.raises(AttributeError):
        p.op = Operation.LT  # type: ignore[misc]
    assert hash(p) == hash(col("a") == 1)
    assert len({p, col("a") == 1, col("a") == 2}) == 2
    assert (col("a") == 1) != (col("a") == "1")
    assert (col("a") == 1) != (col("a") == True)  # noqa: E712


def test_str_is_readable_and_parses_back() -> None:
    expr = (col("ts") >= "2024-01-01") & col("category").isin(["b", "a"]) & col(
        "name"
    ).not_null() & ~(col("x") < 5) | col("s").starts_with("a%b") & (col("q") == "it's")
    text = str(expr)
    assert "category in ('a', 'b')" in text
    assert "name is not null" in text
    assert parse_filter(text) == expr
    assert str(col("select") == 1) == "`select` = 1" or str(col("select") == 1) == "select = 1"
    assert str(col("a b") == 1) == "`a b` = 1"
    assert parse_filter(str(col("a b") == b"\x01")) == (col("a b") == b"\x01")


def test_null_and_nan_literals_refused() -> None:
    with pytest.raises(ValidationError, match="is null"):
        col("x") == None  # noqa: B015, E711
    with pytest.raises(ValidationError, match="is not null"):
        col("x") != None  # noqa: B015, E711
    with pytest.raises(ValidationError, match="is nan"):
        col("x") < float("nan")  # noqa: B015
    with pytest.raises(ValidationError):
        col("x").isin([1, None])
    with pytest.raises(ValidationError):
        col("x").starts_with(5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        col("x").isin("abc")


def test_no_truth_value() -> None:
    with pytest.raises(TypeError, match="&"):
        bool(col("x") == 1)
    with pytest.raises(TypeError):
        1 < col("x") < 5  # type: ignore[operator]  # noqa: B015
