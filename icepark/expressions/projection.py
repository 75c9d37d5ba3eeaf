"""Projecting a row filter to a partition filter (Java's ``Projections``).

``inclusive_projection(schema, spec)(row_filter)`` gives a filter on partition values that
every partition holding a matching row satisfies (use it to skip partitions and manifests);
``strict_projection(schema, spec)(row_filter)`` gives a filter that only partitions whose rows
all match satisfy (use it to find files that a delete removes whole, or residuals). Both are
unbound expressions naming the partition fields; bind them to ``spec.partition_type(schema)``.

Negations are pushed down first. With several partition fields on one source column, an
inclusive projection ands their projections and a strict one ors them. A predicate with no
projection becomes ``true`` (inclusive) or ``false`` (strict).
"""

from __future__ import annotations

from collections.abc import Callable

from icepark.errors import ValidationError
from icepark.expressions.binding import bind
from icepark.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    Expression,
    and_,
    or_,
)
from icepark.expressions.predicates import (
    BoundPredicate,
)
from icepark.expressions.transform_projection import project_predicate
from icepark.expressions.visitors import ExpressionVisitor, rewrite_not, visit
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema

__all__ = ["inclusive_projection", "strict_projection"]


class _Projector(ExpressionVisitor[Expression]):
    def __init__(self, spec: PartitionSpec, strict: bool) -> None:
        self.spec = spec
        self.strict = strict

    def visit_true(self) -> Expression:
        return AlwaysTrue()

    def visit_false(self) -> Expression:
        return AlwaysFalse()

    def visit_not(self, child: Expression) -> Expression:
        raise ValidationError("Cannot project a filter with 'not': rewrite it first")

    def visit_and(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def visit_or(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)

    def visit_bound_predicate(self, pred: BoundPredicate) -> Expression:
        result: Expression = AlwaysFalse() if self.strict else AlwaysTrue()
        for field in self.spec.fields_by_source_id(pred.term.field_id):
            projected = project_predicate(field.transform, field.name, pred, self.strict)
            if projected is not None:
                result = or_(result, projected) if self.strict else and_(result, projected)
        return result


def _projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool, strict: bool
) -> Callable[[Expression], Expression]:
    def project(expr: Expression) -> Expression:
        bound = rewrite_not(bind(schema, expr, case_sensitive))
        return visit(bound, _Projector(spec, strict))

    return project


def inclusive_projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
) -> Callable[[Expression], Expression]:
    """A function projecting row filters to partition filters that keep every partition
    holding a matching row."""
    return _projection(schema, spec, case_sensitive, strict=False)


def strict_projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
) -> Callable[[Expression], Expression]:
    """A function projecting row filters to partition filters that only partitions whose
    rows all match satisfy."""
    return _projection(schema, spec, case_sensitive, strict=True)
