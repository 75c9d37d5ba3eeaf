"""Evaluating a filter on one row (a tuple by position, such as a partition tuple).

``evaluator(struct, expr)`` binds ``expr`` to ``struct`` (a Schema or StructType; a bound
expression is re-bound by name), pushes negations down and compiles it to a function of a
row. Null and NaN values follow the rules in :mod:`icepark.expressions.model`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icepark.errors import ValidationError
from icepark.expressions.binding import bind
from icepark.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    Or,
)
from icepark.expressions.predicates import (
    BoundPredicate,
)
from icepark.expressions.visitors import rewrite_not
from icepark.spec.schema import Schema
from icepark.spec.types import StructType

__all__ = ["evaluator", "compile_bound"]

Row = Any


def evaluator(
    struct: Schema | StructType, expr: Expression, case_sensitive: bool = True
) -> Callable[[Row], bool]:
    """A function telling whether a row of ``struct`` matches ``expr``."""
    return compile_bound(bind(struct, expr, case_sensitive))


def compile_bound(expr: Expression) -> Callable[[Row], bool]:
    """Compile an expression that is already bound to the rows' struct."""
    return _compile(rewrite_not(expr))


def _always_true(row: Row) -> bool:
    return True


def _always_false(row: Row) -> bool:
    return False


def _compile(expr: Expression) -> Callable[[Row], bool]:
    if isinstance(expr, AlwaysTrue):
        return _always_true
    if isinstance(expr, AlwaysFalse):
        return _always_false
    if isinstance(expr, And):
        left, right = _compile(expr.left), _compile(expr.right)
        return lambda row: left(row) and right(row)
    if isinstance(expr, Or):
        left, right = _compile(expr.left), _compile(expr.right)
        return lambda row: left(row) or right(row)
    if isinstance(expr, BoundPredicate):
        get = expr.term.accessor.get
        test = expr.test
        return lambda row: test(get(row))
    raise ValidationError(f"Cannot evaluate an unbound or unknown expression: {expr}")
