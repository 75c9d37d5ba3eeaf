"""Skipping data files by their column metrics (Java's Inclusive/StrictMetricsEvaluator).

:class:`InclusiveMetricsEvaluator` tells whether a file *might* hold rows matching a filter
(false only when no row can match); :class:`StrictMetricsEvaluator` whether *every* row of
the file matches (true only when that is certain). Both read the file's ``record_count``,
``value_counts``, ``null_value_counts``, ``nan_value_counts`` and ``lower_bounds`` /
``upper_bounds`` (binary single values, decoded with the current schema's column type).

Bounds never include NaN (a NaN bound is ignored as unreliable) and may be truncated: a
string or binary lower bound is a prefix of the smallest value and an upper bound is at
least the largest value, so every check here only relies on ``lower <= values <= upper``.
Missing metrics never lead to skipping a file. Unlike Java, the strict evaluator assumes a
float column may hold NaN when its NaN count is unknown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from icepark.errors import InvalidValueError
from icepark.expressions.binding import bind
from icepark.expressions.manifest_evaluator import IN_PREDICATE_LIMIT
from icepark.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    Operation,
    Or,
)
from icepark.expressions.predicates import (
    BoundLiteralPredicate,
    BoundPredicate,
    BoundReference,
    BoundSetPredicate,
)
from icepark.expressions.visitors import BoundPredicateVisitor, rewrite_not, visit
from icepark.spec.conversions import from_bytes, from_bytes_reader
from icepark.spec.manifests import DataFile
from icepark.spec.schema import Schema
from icepark.spec.types import DoubleType, FloatType, PrimitiveType

__all__ = [
    "InclusiveMetricsEvaluator",
    "StrictMetricsEvaluator",
    "inclusive_metrics_match",
    "strict_metrics_match",
]


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


class _Metrics(BoundPredicateVisitor[bool]):
    """Shared access to one file's metrics."""

    def __init__(self, data_file: DataFile) -> None:
        self.value_counts: Mapping[int, int] = data_file.value_counts or {}
        self.null_counts: Mapping[int, int] = data_file.null_value_counts or {}
        self.nan_counts: Mapping[int, int] = data_file.nan_value_counts or {}
        self.lower_bounds: Mapping[int, bytes] = data_file.lower_bounds or {}
        self.upper_bounds: Mapping[int, bytes] = data_file.upper_bounds or {}

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_and(self, left: bool, right: bool) -> bool:
        return left and right

    def visit_or(self, left: bool, right: bool) -> bool:
        return left or right

    def nulls_only(self, fid: int) -> bool:
        values, nulls = self.value_counts.get(fid), self.null_counts.get(fid)
        return values is not None and nulls is not None and values - nulls == 0

    def nans_only(self, fid: int) -> bool:
        values, nans = self.value_counts.get(fid), self.nan_counts.get(fid)
        return values is not None and nans is not None and nans == values

    def no_nulls(self, ref: BoundReference) -> bool:
        return not ref.produces_null or self.null_counts.get(ref.field_id) == 0

    def no_nans(self, ref: BoundReference) -> bool:
        if not isinstance(ref.type, FloatType | DoubleType):
            return True
        return self.nan_counts.get(ref.field_id) == 0

    def _decode(self, ref: BoundReference, raw: bytes | None) -> Any:
        if raw is None or not isinstance(ref.type, PrimitiveType):
            return None
        try:
            value = from_bytes(ref.type, raw)
        except InvalidValueError:
            return None
        return None if _is_nan(value) else value

    def lower(self, ref: BoundReference) -> Any:
        return self._decode(ref, self.lower_bounds.get(ref.field_id))

    def upper(self, ref: BoundReference) -> Any:
        return self._decode(ref, self.upper_bounds.get(ref.field_id))


# -- inclusive -----------------------------------------------------------------------------------


class _Inclusive(_Metrics):
    def is_null(self, ref: BoundReference) -> bool:
        return self.null_counts.get(ref.field_id) != 0

    def not_null(self, ref: BoundReference) -> bool:
        return not self.nulls_only(ref.field_id)

    def is_nan(self, ref: BoundReference) -> bool:
        if self.nan_counts.get(ref.field_id) == 0:
            return False
        return not self.nulls_only(ref.field_id)

    def not_nan(self, ref: BoundReference) -> bool:
        return not self.nans_only(ref.field_id)

    def _compare(
        self,
        ref: BoundReference,
        lower_ok: Callable[[Any], bool] | None,
        upper_ok: Callable[[Any], bool] | None,
    ) -> bool:
        fid = ref.field_id
        if self.nulls_only(fid) or self.nans_only(fid):
            return False
        if lower_ok is not None:
            lo = self.lower(ref)
            if lo is not None and not lower_ok(lo):
                return False
        if upper_ok is not None:
            hi = self.upper(ref)
            if hi is not None and not upper_ok(hi):
                return False
        return True

    def lt(self, ref: BoundReference, literal: Any) -> bool:
        return self._compare(ref, lambda lo: lo < literal, None)

    def lt_eq(self, ref: BoundReference, literal: Any) -> bool:
        return self._compare(ref, lambda lo: lo <= literal, None)

    def gt(self, ref: BoundReference, literal: Any) -> bool:
        return self._compare(ref, None, lambda hi: hi > literal)

    def gt_eq(self, ref: BoundReference, literal: Any) -> bool:
        return self._compare(ref, None, lambda hi: hi >= literal)

    def eq(self, ref: BoundReference, literal: Any) -> bool:
        return self._compare(ref, lambda lo: lo <= literal, lambda hi: hi >= literal)

    def not_eq(self, ref: BoundReference, literal: Any) -> bool:
        # a null matches no comparison: an all-null column cannot match
        return not self.nulls_only(ref.field_id)

    def in_(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        fid = ref.field_id
        if self.nulls_only(fid) or self.nans_only(fid):
            return False
        if len(literals) > IN_PREDICATE_LIMIT:
            return True
        lo, hi = self.lower(ref), self.upper(ref)
        return any((lo is None or lo <= v) and (hi is None or v <= hi) for v in literals)

    def not_in(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        return not self.nulls_only(ref.field_id)

    def starts_with(self, ref: BoundReference, prefix: Any) -> bool:
        fid = ref.field_id
        if self.nulls_only(fid):
            return False
        p = prefix.encode("utf-8")
        lower = self.lower_bounds.get(fid)
        if lower is not None and bytes(lower)[: len(p)] > p:
            return False
        upper = self.upper_bounds.get(fid)
        if upper is not None and bytes(upper)[: len(p)] < p:
            return False
        return True

    def not_starts_with(self, ref: BoundReference, prefix: Any) -> bool:
        fid = ref.field_id
        if self.nulls_only(fid):
            return False
        if not self.no_nulls(ref):
            return True
        lower, upper = self.lower_bounds.get(fid), self.upper_bounds.get(fid)
        if lower is None or upper is None:
            return True
        p = prefix.encode("utf-8")
        # values between two bounds that both start with the prefix all start with it
        return not (bytes(lower).startswith(p) and bytes(upper).startswith(p))


def inclusive_metrics_match(expr: Expression, data_file: Any) -> bool:
    """Might ``data_file`` hold rows matching ``expr`` (bound, ``not`` rewritten away) by its
    column metrics? The inclusive rules alone, without those on the record count
    (:meth:`InclusiveMetricsEvaluator.eval` adds them)."""
    return bool(visit(expr, _Inclusive(data_file)))


class InclusiveMetricsEvaluator:
    """``eval(data_file)``: might the file hold rows matching ``row_filter``?

    An empty file (``record_count == 0``) cannot, unless ``include_empty_files``; a negative
    record count (unknown, from imported files) might.
    """

    def __init__(
        self,
        schema: Schema,
        row_filter: Expression,
        case_sensitive: bool = True,
        include_empty_files: bool = False,
    ) -> None:
        self.schema = schema
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self.include_empty_files = include_empty_files

    def eval(self, data_file: DataFile) -> bool:
        count = data_file.record_count
        if count == 0:
            return self.include_empty_files
        if count is not None and count < 0:
            return True
        return visit(self.expr, _Inclusive(data_file))

    @cached_property
    def compiled(self) -> Callable[[Any], bool]:
        """:meth:`eval` as one function, several times faster for filters made of
        comparisons and ``in``: those are compiled to closures, other predicates still go
        through the visitor. Takes a :class:`DataFile` or anything with its record count and
        metric maps."""
        matches = _compile_inclusive(self.expr)
        include_empty = self.include_empty_files

        def might_match(data_file: Any) -> bool:
            count = data_file.record_count
            if count == 0:
                return include_empty
            if count is not None and count < 0:
                return True
            return matches(data_file)

        return might_match


# -- compiled inclusive evaluation ---------------------------------------------------------------

_Check = Callable[[Any], bool]


def _compile_inclusive(expr: Expression) -> _Check:
    """A function of a data file giving ``visit(expr, _Inclusive(data_file))``."""
    if isinstance(expr, AlwaysTrue):
        return lambda f: True
    if isinstance(expr, AlwaysFalse):
        return lambda f: False
    if isinstance(expr, And):
        left, right = _compile_inclusive(expr.left), _compile_inclusive(expr.right)
        return lambda f: left(f) and right(f)
    if isinstance(expr, Or):
        left, right = _compile_inclusive(expr.left), _compile_inclusive(expr.right)
        return lambda f: left(f) or right(f)
    if isinstance(expr, BoundPredicate) and isinstance(expr.term.type, PrimitiveType):
        fast = _compile_predicate(expr)
        if fast is not None:
            return fast
    return lambda f: bool(visit(expr, _Inclusive(f)))


def _bound_decoder(t: PrimitiveType) -> Callable[[bytes], Any]:
    """``_Metrics._decode`` for one type: the bound's value, or None when unusable."""
    read = from_bytes_reader(t)
    floating = isinstance(t, FloatType | DoubleType)

    def decode(raw: bytes) -> Any:
        try:
            value = read(raw)
        except InvalidValueError:
            return None
        return None if floating and _is_nan(value) else value

    return decode


def _compile_predicate(pred: BoundPredicate) -> _Check | None:
    """Comparisons and ``in`` as closures equivalent to :class:`_Inclusive`'s methods. Each
    check can only rule a file out, so their order does not change the answer: the bounds
    come first, as they rule out most files and the counts may cost more to read (a pruned
    manifest scan decodes them only when asked)."""
    op = pred.op
    fid = pred.term.field_id
    decode = _bound_decoder(pred.term.type)  # type: ignore[arg-type]
    if isinstance(pred, BoundSetPredicate) and op == Operation.IN:
        literals = pred.literals
        if len(literals) > IN_PREDICATE_LIMIT:
            return lambda f: not _nulls_or_nans_only(f, fid)
        if not literals:
            return None

        def in_(f: Any) -> bool:
            lo, hi = _bound(f.lower_bounds, fid, decode), _bound(f.upper_bounds, fid, decode)
            if not any((lo is None or lo <= v) and (hi is None or v <= hi) for v in literals):
                return False
            return not _nulls_or_nans_only(f, fid)

        return in_
    if not isinstance(pred, BoundLiteralPredicate):
        return None
    lit = pred.literal
    lower_ok: Callable[[Any], bool] | None = None
    upper_ok: Callable[[Any], bool] | None = None
    if op == Operation.LT:
        lower_ok = lambda lo: lo < lit  # noqa: E731
    elif op == Operation.LT_EQ:
        lower_ok = lambda lo: lo <= lit  # noqa: E731
    elif op == Operation.GT:
        upper_ok = lambda hi: hi > lit  # noqa: E731
    elif op == Operation.GT_EQ:
        upper_ok = lambda hi: hi >= lit  # noqa: E731
    elif op == Operation.EQ:
        lower_ok = lambda lo: lo <= lit  # noqa: E731
        upper_ok = lambda hi: hi >= lit  # noqa: E731
    else:
        return None

    def compare(f: Any) -> bool:
        if lower_ok is not None:
            lo = _bound(f.lower_bounds, fid, decode)
            if lo is not None and not lower_ok(lo):
                return False
        if upper_ok is not None:
            hi = _bound(f.upper_bounds, fid, decode)
            if hi is not None and not upper_ok(hi):
                return False
        return not _nulls_or_nans_only(f, fid)

    return compare


def _bound(bounds: Mapping[int, bytes] | None, fid: int, decode: Callable[[bytes], Any]) -> Any:
    raw = bounds.get(fid) if bounds else None
    return None if raw is None else decode(raw)


def _nulls_or_nans_only(f: Any, fid: int) -> bool:
    """``nulls_only(fid) or nans_only(fid)`` of :class:`_Metrics`."""
    counts = f.value_counts
    values = counts.get(fid) if counts else None
    if values is None:
        return False
    nulls = f.null_value_counts
    n = nulls.get(fid) if nulls else None
    if n is not None and values - n == 0:
        return True
    nans = f.nan_value_counts
    n = nans.get(fid) if nans else None
    return n is not None and n == values


# -- strict --------------------------------------------------------------------------------------


class _Strict(_Metrics):
    def is_null(self, ref: BoundReference) -> bool:
        return self.nulls_only(ref.field_id)

    def not_null(self, ref: BoundReference) -> bool:
        return self.no_nulls(ref)

    def is_nan(self, ref: BoundReference) -> bool:
        return self.nans_only(ref.field_id)

    def not_nan(self, ref: BoundReference) -> bool:
        return self.no_nans(ref) or self.nulls_only(ref.field_id)

    def comparable(self, ref: BoundReference) -> bool:
        """No nulls and no NaN: every value takes part in comparisons."""
        return self.no_nulls(ref) and self.no_nans(ref)

    def lt(self, ref: BoundReference, literal: Any) -> bool:
        hi = self.upper(ref)
        return self.comparable(ref) and hi is not None and hi < literal

    def lt_eq(self, ref: BoundReference, literal: Any) -> bool:
        hi = self.upper(ref)
        return self.comparable(ref) and hi is not None and hi <= literal

    def gt(self, ref: BoundReference, literal: Any) -> bool:
        lo = self.lower(ref)
        return self.comparable(ref) and lo is not None and lo > literal

    def gt_eq(self, ref: BoundReference, literal: Any) -> bool:
        lo = self.lower(ref)
        return self.comparable(ref) and lo is not None and lo >= literal

    def eq(self, ref: BoundReference, literal: Any) -> bool:
        if not self.comparable(ref):
            return False
        lo, hi = self.lower(ref), self.upper(ref)
        return lo is not None and hi is not None and lo == literal and hi == literal

    def not_eq(self, ref: BoundReference, literal: Any) -> bool:
        # a null row does not match, so every row matching needs a column without nulls
        if not self.no_nulls(ref):
            return False
        if self.nans_only(ref.field_id):
            return True
        lo, hi = self.lower(ref), self.upper(ref)
        return (lo is not None and lo > literal) or (hi is not None and hi < literal)

    def in_(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        if not self.comparable(ref):
            return False
        lo, hi = self.lower(ref), self.upper(ref)
        return lo is not None and hi is not None and lo == hi and lo in literals

    def not_in(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        if not self.no_nulls(ref):
            return False
        if self.nans_only(ref.field_id):
            return True
        lo, hi = self.lower(ref), self.upper(ref)
        if lo is None and hi is None:
            return False
        return all((lo is not None and v < lo) or (hi is not None and v > hi) for v in literals)

    def starts_with(self, ref: BoundReference, prefix: Any) -> bool:
        fid = ref.field_id
        if not self.no_nulls(ref):
            return False
        lower, upper = self.lower_bounds.get(fid), self.upper_bounds.get(fid)
        if lower is None or upper is None:
            return False
        p = prefix.encode("utf-8")
        return bytes(lower).startswith(p) and bytes(upper).startswith(p)

    def not_starts_with(self, ref: BoundReference, prefix: Any) -> bool:
        fid = ref.field_id
        if not self.no_nulls(ref):
            return False
        p = prefix.encode("utf-8")
        lower, upper = self.lower_bounds.get(fid), self.upper_bounds.get(fid)
        # every value is outside the interval of strings starting with the prefix
        if lower is not None and bytes(lower)[: len(p)] > p:
            return True
        return upper is not None and bytes(upper)[: len(p)] < p


def strict_metrics_match(expr: Expression, data_file: Any) -> bool:
    """Do all rows of ``data_file`` match ``expr`` (bound, ``not`` rewritten away) by its
    column metrics? The strict rules alone, without the one on an empty file
    (:meth:`StrictMetricsEvaluator.eval` adds it)."""
    return bool(visit(expr, _Strict(data_file)))


class StrictMetricsEvaluator:
    """``eval(data_file)``: do all rows of the file match ``row_filter``?

    True for an empty file (nothing can fail to match).
    """

    def __init__(self, schema: Schema, row_filter: Expression, case_sensitive: bool = True) -> None:
        self.schema = schema
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count == 0:
            return True
        return visit(self.expr, _Strict(data_file))
