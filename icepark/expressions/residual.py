"""Residual filters: what is left of a row filter for the rows of one partition.

``residual_evaluator(spec, row_filter, schema).residual_for(partition)`` simplifies the
filter using the partition's values (Java's ``ResidualEvaluator``): a predicate whose strict
projection holds for the partition is ``true`` (every row there matches it), one whose
inclusive projection fails is ``false`` (no row there matches it); other predicates are kept.
The result is bound to ``schema`` (or a constant); for an unpartitioned spec it is the bound
filter itself. Negations are pushed down first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icepark.expressions.binding import bind
from icepark.expressions.expression_evaluator import compile_bound
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
from icepark.spec.types import StructType

__all__ = ["ResidualEvaluator", "residual_evaluator"]

_Check = Callable[[Any], bool]


class ResidualEvaluator:
    """Computes residual filters for partitions of one spec (see the module docstring)."""

    def __init__(
        self,
        spec: PartitionSpec,
        row_filter: Expression,
        schema: Schema,
        case_sensitive: bool = True,
    ) -> None:
        self.spec = spec
        self.schema = schema
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self._partition_type: StructType = spec.partition_type(schema)
        self._checks: dict[BoundPredicate, list[tuple[_Check | None, _Check | None]]] = {}

    def residual_for(self, partition: Any) -> Expression:
        """The residual of the filter for rows whose partition tuple is ``partition``."""
        if not self.spec.fields:
            return self.expr
        return visit(self.expr, _Residual(self, partition))

    def _compile(self, projected: Expression | None) -> _Check | None:
        if projected is None:
            return None
        return compile_bound(bind(self._partition_type, projected, True))

    def checks(self, pred: BoundPredicate) -> list[tuple[_Check | None, _Check | None]]:
        """(strict, inclusive) partition checks, one pair per partition field of the column."""
        found = self._checks.get(pred)
        if found is None:
            found = []
            for field in self.spec.fields_by_source_id(pred.term.field_id):
                strict = project_predicate(field.transform, field.name, pred, True)
                inclusive = project_predicate(field.transform, field.name, pred, False)
                found.append((self._compile(strict), self._compile(inclusive)))
            self._checks[pred] = found
        return found


class _Residual(ExpressionVisitor[Expression]):
    def __init__(self, owner: ResidualEvaluator, partition: Any) -> None:
        self.owner = owner
        self.partition = partition

    def visit_true(self) -> Expression:
        return AlwaysTrue()

    def visit_false(self) -> Expression:
        return AlwaysFalse()

    def visit_and(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def visit_or(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)

    def visit_bound_predicate(self, pred: BoundPredicate) -> Expression:
        for strict, inclusive in self.owner.checks(pred):
            if strict is not None and strict(self.partition):
                return AlwaysTrue()
            if inclusive is not None and not inclusive(self.partition):
                return AlwaysFalse()
        return pred


def residual_evaluator(
    spec: PartitionSpec, row_filter: Expression, schema: Schema, case_sensitive: bool = True
) -> ResidualEvaluator:
    """A :class:`ResidualEvaluator` for ``row_filter`` on partitions of ``spec``."""
    return ResidualEvaluator(spec, row_filter, schema, case_sensitive)
