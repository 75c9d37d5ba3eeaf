"""Visitor bases shared by binding, projections and the evaluators, and ``rewrite_not``.

:func:`visit` walks an expression bottom-up, calling the visitor's ``visit_*`` methods with
the children's results. :class:`BoundPredicateVisitor` further dispatches bound predicates by
operation (``lt(ref, literal)``, ``in_(ref, literals)``, ...), which is how the evaluators are
written.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from icepark.errors import ValidationError
from icepark.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    Not,
    Operation,
    Or,
    and_,
    or_,
)
from icepark.expressions.predicates import (
    BoundLiteralPredicate,
    BoundPredicate,
    BoundReference,
    BoundSetPredicate,
    BoundUnaryPredicate,
    UnboundPredicate,
)

__all__ = ["ExpressionVisitor", "BoundPredicateVisitor", "visit", "rewrite_not"]

T = TypeVar("T")


class ExpressionVisitor(Generic[T]):
    """Visit an expression tree bottom-up; override what you need."""

    def visit_true(self) -> T:
        raise NotImplementedError

    def visit_false(self) -> T:
        raise NotImplementedError

    def visit_not(self, child: T) -> T:
        raise NotImplementedError

    def visit_and(self, left: T, right: T) -> T:
        raise NotImplementedError

    def visit_or(self, left: T, right: T) -> T:
        raise NotImplementedError

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> T:
        raise ValidationError(f"Expression is not bound: {pred}")

    def visit_bound_predicate(self, pred: BoundPredicate) -> T:
        raise ValidationError(f"Expression is already bound: {pred}")


def visit(expr: Expression, visitor: ExpressionVisitor[T]) -> T:
    """Apply ``visitor`` to ``expr`` bottom-up and return the root's result."""
    if isinstance(expr, AlwaysTrue):
        return visitor.visit_true()
    if isinstance(expr, AlwaysFalse):
        return visitor.visit_false()
    if isinstance(expr, And):
        return visitor.visit_and(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Or):
        return visitor.visit_or(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Not):
        return visitor.visit_not(visit(expr.child, visitor))
    if isinstance(expr, UnboundPredicate):
        return visitor.visit_unbound_predicate(expr)
    if isinstance(expr, BoundPredicate):
        return visitor.visit_bound_predicate(expr)
    raise ValidationError(f"Not an expression: {expr!r}"[:300])


class BoundPredicateVisitor(ExpressionVisitor[T]):
    """A visitor of bound expressions whose predicates are dispatched by operation."""

    def visit_bound_predicate(self, pred: BoundPredicate) -> T:
        ref = pred.term
        op = pred.op
        if isinstance(pred, BoundUnaryPredicate):
            if op == Operation.IS_NULL:
                return self.is_null(ref)
            if op == Operation.NOT_NULL:
                return self.not_null(ref)
            if op == Operation.IS_NAN:
                return self.is_nan(ref)
            return self.not_nan(ref)
        if isinstance(pred, BoundSetPredicate):
            if op == Operation.IN:
                return self.in_(ref, pred.literals)
            return self.not_in(ref, pred.literals)
        if isinstance(pred, BoundLiteralPredicate):
            method = getattr(self, _LITERAL_METHODS[op])
            result: T = method(ref, pred.literal)
            return result
        raise ValidationError(f"Unknown bound predicate: {pred!r}")

    def is_null(self, ref: BoundReference) -> T:
        raise NotImplementedError

    def not_null(self, ref: BoundReference) -> T:
        raise NotImplementedError

    def is_nan(self, ref: BoundReference) -> T:
        raise NotImplementedError

    def not_nan(self, ref: BoundReference) -> T:
        raise NotImplementedError

    def lt(self, ref: BoundReference, literal: Any) -> T:
        raise NotImplementedError

    def lt_eq(self, ref: BoundReference, literal: Any) -> T:
        raise NotImplementedError

    def gt(self, ref: BoundReference, literal: Any) -> T:
        raise NotImplementedError

    def gt_eq(self, ref: BoundReference, literal: Any) -> T:
        raise NotImplementedError

    def eq(self, ref: BoundReference, literal: Any) -> T:
        raise NotImplementedError

    def not_eq(self, ref: BoundReference, literal: Any) -> T:
        raise NotImplementedError

    def in_(self, ref: BoundReference, literals: frozenset[Any]) -> T:
        raise NotImplementedError

    def not_in(self, ref: BoundReference, literals: frozenset[Any]) -> T:
        raise NotImplementedError

    def starts_with(self, ref: BoundReference, prefix: Any) -> T:
        raise NotImplementedError

    def not_starts_with(self, ref: BoundReference, prefix: Any) -> T:
        raise NotImplementedError


_LITERAL_METHODS = {
    Operation.LT: "lt",
    Operation.LT_EQ: "lt_eq",
    Operation.GT: "gt",
    Operation.GT_EQ: "gt_eq",
    Operation.EQ: "eq",
    Operation.NOT_EQ: "not_eq",
    Operation.STARTS_WITH: "starts_with",
    Operation.NOT_STARTS_WITH: "not_starts_with",
}


class _RewriteNot(ExpressionVisitor[Expression]):
    def visit_true(self) -> Expression:
        return AlwaysTrue()

    def visit_false(self) -> Expression:
        return AlwaysFalse()

    def visit_not(self, child: Expression) -> Expression:
        return child.negate()

    def visit_and(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def visit_or(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        return pred

    def visit_bound_predicate(self, pred: BoundPredicate) -> Expression:
        return pred


def rewrite_not(expr: Expression) -> Expression:
    """``expr`` without ``Not`` nodes: negations are pushed into the predicates."""
    return visit(expr, _RewriteNot())
