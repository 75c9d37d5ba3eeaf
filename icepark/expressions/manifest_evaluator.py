"""Skipping manifests by their partition field summaries (Java's ``ManifestEvaluator``).

``manifest_evaluator(spec, schema, row_filter)`` projects the row filter inclusively to the
spec's partition fields and returns a function telling whether a manifest (its
``partitions`` summaries: ``contains_null``, ``contains_nan``, ``lower_bound`` and
``upper_bound`` as binary single values) might hold files with matching rows. A manifest
without summaries might always match. Bounds exclude nulls and NaN; a missing lower bound
means every value is null (or NaN).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from icepark.errors import InvalidValueError
from icepark.expressions.binding import bind
from icepark.expressions.model import (
    Expression,
)
from icepark.expressions.predicates import (
    BoundReference,
)
from icepark.expressions.projection import inclusive_projection
from icepark.expressions.visitors import BoundPredicateVisitor, rewrite_not, visit
from icepark.spec.conversions import from_bytes
from icepark.spec.manifests import ManifestFile, PartitionFieldSummary
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.types import DoubleType, FloatType, PrimitiveType

__all__ = ["manifest_evaluator", "IN_PREDICATE_LIMIT"]

IN_PREDICATE_LIMIT = 200
"""Above this many values an ``in`` is not checked against bounds (as in Java)."""

_MIGHT = True
_CANNOT = False


def manifest_evaluator(
    spec: PartitionSpec, schema: Schema, row_filter: Expression, case_sensitive: bool = True
) -> Callable[[ManifestFile], bool]:
    """A function telling whether a manifest of ``spec`` might hold rows matching the filter."""
    partition_filter = inclusive_projection(schema, spec, case_sensitive)(row_filter)
    bound = rewrite_not(bind(spec.partition_type(schema), partition_filter, True))

    def evaluate(manifest: ManifestFile) -> bool:
        summaries = manifest.partitions
        if not summaries:
            return _MIGHT
        return visit(bound, _SummaryVisitor(summaries))

    return evaluate


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


class _SummaryVisitor(BoundPredicateVisitor[bool]):
    def __init__(self, summaries: Sequence[PartitionFieldSummary]) -> None:
        self.summaries = summaries

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_and(self, left: bool, right: bool) -> bool:
        return left and right

    def visit_or(self, left: bool, right: bool) -> bool:
        return left or right

    # helpers -----------------------------------------------------------------------------------

    def summary(self, ref: BoundReference) -> PartitionFieldSummary | None:
        pos = ref.accessor.positions[0]
        return self.summaries[pos] if pos < len(self.summaries) else None

    def _bound(self, ref: BoundReference, raw: bytes | None) -> Any:
        if raw is None or not isinstance(ref.type, PrimitiveType):
            return None
        try:
            return from_bytes(ref.type, raw)
        except InvalidValueError:
            return None

    def bounds(self, ref: BoundReference) -> tuple[bool, Any, Any]:
        """(known, lower, upper); known is False when the summary is missing or unusable."""
        s = self.summary(ref)
        if s is None:
            return False, None, None
        lower, upper = self._bound(ref, s.lower_bound), self._bound(ref, s.upper_bound)
        if _is_nan(lower) or _is_nan(upper):
            return False, None, None
        return True, lower, upper

    def all_null(self, ref: BoundReference) -> bool:
        s = self.summary(ref)
        if s is None:
            return False
        if not (s.contains_null and s.lower_bound is None):
            return False
        if isinstance(ref.type, FloatType | DoubleType):
            return s.contains_nan is not None and not s.contains_nan
        return True

    # predicates --------------------------------------------------------------------------------

    def is_null(self, ref: BoundReference) -> bool:
        s = self.summary(ref)
        return s is None or bool(s.contains_null)

    def not_null(self, ref: BoundReference) -> bool:
        return not self.all_null(ref)

    def is_nan(self, ref: BoundReference) -> bool:
        s = self.summary(ref)
        return s is None or s.contains_nan is None or bool(s.contains_nan)

    def not_nan(self, ref: BoundReference) -> bool:
        s = self.summary(ref)
        if s is None:
            return _MIGHT
        all_nan = bool(s.contains_nan) and not s.contains_null and s.lower_bound is None
        return not all_nan

    def _range(self, ref: BoundReference, test: Callable[[Any, Any], bool]) -> bool:
        s = self.summary(ref)
        if s is None:
            return _MIGHT
        if s.lower_bound is None:
            return _CANNOT  # all values are null or NaN
        known, lower, upper = self.bounds(ref)
        if not known:
            return _MIGHT
        return test(lower, upper)

    def lt(self, ref: BoundReference, literal: Any) -> bool:
        return self._range(ref, lambda lo, hi: lo is None or lo < literal)

    def lt_eq(self, ref: BoundReference, literal: Any) -> bool:
        return self._range(ref, lambda lo, hi: lo is None or lo <= literal)

    def gt(self, ref: BoundReference, literal: Any) -> bool:
        return self._range(ref, lambda lo, hi: hi is None or hi > literal)

    def gt_eq(self, ref: BoundReference, literal: Any) -> bool:
        return self._range(ref, lambda lo, hi: hi is None or hi >= literal)

    def eq(self, ref: BoundReference, literal: Any) -> bool:
        return self._range(
            ref, lambda lo, hi: (lo is None or lo <= literal) and (hi is None or hi >= literal)
        )

    def not_eq(self, ref: BoundReference, literal: Any) -> bool:
        return _MIGHT

    def in_(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        if len(literals) > IN_PREDICATE_LIMIT:
            s = self.summary(ref)
            return s is None or s.lower_bound is not None

        def test(lo: Any, hi: Any) -> bool:
            return any((lo is None or lo <= v) and (hi is None or v <= hi) for v in literals)

        return self._range(ref, test)

    def not_in(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        return _MIGHT

    def starts_with(self, ref: BoundReference, prefix: Any) -> bool:
        s = self.summary(ref)
        if s is None:
            return _MIGHT
        if s.lower_bound is None:
            return _CANNOT
        p = prefix.encode("utf-8")
        lower = bytes(s.lower_bound)
        if lower[: len(p)] > p:
            return _CANNOT
        if s.upper_bound is not None and bytes(s.upper_bound)[: len(p)] < p:
            return _CANNOT
        return _MIGHT

    def not_starts_with(self, ref: BoundReference, prefix: Any) -> bool:
        s = self.summary(ref)
        if s is None or s.contains_null or s.lower_bound is None or s.upper_bound is None:
            return _MIGHT
        p = prefix.encode("utf-8")
        lower, upper = bytes(s.lower_bound), bytes(s.upper_bound)
        if lower.startswith(p) and upper.startswith(p):
            return _CANNOT
        return _MIGHT
