"""Projecting one bound predicate on a source column through one partition transform.

:func:`project_predicate` gives, for a bound predicate on a partition field's source column,
an unbound predicate on the partition field (by its name) or None when the transform allows
no projection:

* inclusive (``strict=False``): if a row matches the predicate, its partition value matches
  the projection;
* strict (``strict=True``): if a partition value matches the projection, every row with
  that partition value matches the predicate.

The rules follow Java's ``Transform.project`` / ``projectStrict``: identity passes the
predicate through; bucket projects ``=``/``in`` (inclusive) and ``!=``/``not in`` (strict);
truncate and the time transforms adjust ``<``/``>`` to ``<=``/``>=`` on the neighbouring
value; time transforms (except ``day`` of a date) widen projections for negative values as
Java does, because old writers rounded pre-1970 values towards zero instead of down. For
strings and binary, truncate also projects ``starts_with`` and, when the literal is shorter
than the width, ``!=``/``not in`` (inclusive) and ``=``/``in`` (strict), which are exact
there. Void and unknown transforms project nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from icepark.errors import InvalidValueError
from icepark.expressions.model import (
    Expression,
    Operation,
)
from icepark.expressions.predicates import (
    BoundLiteralPredicate,
    BoundPredicate,
    BoundSetPredicate,
    UnboundPredicate,
    predicate,
)
from icepark.spec.conversions import decimal_to_unscaled, unscaled_to_decimal
from icepark.spec.transforms import (
    BucketTransform,
    DayTransform,
    IdentityTransform,
    TimeTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
)
from icepark.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
)

__all__ = ["project_predicate"]

_O = Operation


def project_predicate(
    transform: Transform, name: str, pred: BoundPredicate, strict: bool
) -> Expression | None:
    """Project ``pred`` (bound to the source column) to the partition field ``name``."""
    try:
        return _project(transform, name, pred, strict)
    except InvalidValueError:
        # a literal whose transformed value is out of range (hour of a year-10^5 timestamp):
        # projecting nothing is always safe
        return None


def _project(
    transform: Transform, name: str, pred: BoundPredicate, strict: bool
) -> Expression | None:
    source = pred.term.type
    if isinstance(transform, IdentityTransform):
        return _rename(name, pred)
    if isinstance(transform, UnknownTransform) or not transform.can_transform(source):
        return None
    if pred.op.is_unary:
        # every transform but void maps null to null and non-null to non-null; NaN is only
        # possible for float columns, which only identity (handled above) accepts
        if transform.is_void or pred.op in (_O.IS_NAN, _O.NOT_NAN):
            return None
        return predicate(pred.op, name)
    if isinstance(transform, BucketTransform):
        return _bucket(transform.bind(source), name, pred, strict)
    if isinstance(transform, TruncateTransform):
        if isinstance(source, StringType | BinaryType):
            return _truncate_array(transform.width, name, pred, strict)
        if isinstance(source, IntegerType | LongType | DecimalType):
            return _truncate_number(transform.width, source, name, pred, strict)
        return None
    if isinstance(transform, TimeTransform):
        return _time(transform, source, name, pred, strict)
    return None


def _rename(name: str, pred: BoundPredicate) -> UnboundPredicate:
    if isinstance(pred, BoundLiteralPredicate):
        return predicate(pred.op, name, pred.literal)
    if isinstance(pred, BoundSetPredicate):
        return predicate(pred.op, name, pred.literals)
    return predicate(pred.op, name)


def _set(op: Operation, name: str, values: Iterable[Any]) -> UnboundPredicate:
    unique = set(values)
    if len(unique) == 1:
        return predicate(_O.EQ if op == _O.IN else _O.NOT_EQ, name, next(iter(unique)))
    return predicate(op, name, unique)


# -- bucket --------------------------------------------------------------------------------------


def _bucket(
    apply: Callable[[Any], Any], name: str, pred: BoundPredicate, strict: bool
) -> Expression | None:
    wanted = (_O.NOT_EQ, _O.NOT_IN) if strict else (_O.EQ, _O.IN)
    if pred.op not in wanted:
        return None
    if isinstance(pred, BoundSetPredicate):
        return _set(pred.op, name, (apply(v) for v in pred.literals))
    assert isinstance(pred, BoundLiteralPredicate)
    return predicate(pred.op, name, apply(pred.literal))


# -- ordered integer-like projections (truncate of numbers, time transforms) ---------------------


def _ordered(
    apply: Callable[[int], Any], name: str, pred: BoundPredicate, strict: bool
) -> UnboundPredicate | None:
    """Project through a monotone function of integers (``apply``), the value ±1 rules."""
    op = pred.op
    if isinstance(pred, BoundSetPredicate):
        if op == (_O.NOT_IN if strict else _O.IN):
            return _set(op, name, (apply(v) for v in pred.literals))
        return None
    assert isinstance(pred, BoundLiteralPredicate)
    v = pred.literal
    if not strict:
        if op == _O.LT:
            return predicate(_O.LT_EQ, name, apply(v - 1))
        if op == _O.LT_EQ:
            return predicate(_O.LT_EQ, name, apply(v))
        if op == _O.GT:
            return predicate(_O.GT_EQ, name, apply(v + 1))
        if op == _O.GT_EQ:
            return predicate(_O.GT_EQ, name, apply(v))
        if op == _O.EQ:
            return predicate(_O.EQ, name, apply(v))
        return None
    if op == _O.LT:
        return predicate(_O.LT, name, apply(v))
    if op == _O.LT_EQ:
        return predicate(_O.LT, name, apply(v + 1))
    if op == _O.GT:
        return predicate(_O.GT, name, apply(v))
    if op == _O.GT_EQ:
        return predicate(_O.GT, name, apply(v - 1))
    if op == _O.NOT_EQ:
        return predicate(_O.NOT_EQ, name, apply(v))
    return None


def _truncate_number(
    width: int, source: IcebergType, name: str, pred: BoundPredicate, strict: bool
) -> Expression | None:
    # Work on unscaled integers without range checks: a projected value beyond the
    # partition type's range is turned into a constant when the projection is bound.
    if isinstance(source, DecimalType):
        scale = source.scale
        to_int: Callable[[Any], int] = lambda d: decimal_to_unscaled(d, scale)  # noqa: E731
        from_int: Callable[[int], Any] = lambda i: unscaled_to_decimal(i, scale)  # noqa: E731
    else:
        to_int = from_int = _same
    if isinstance(pred, BoundSetPredicate):
        unscaled = BoundSetPredicate(pred.op, pred.term, (to_int(v) for v in pred.literals))
        return _ordered(lambda i: from_int(i - i % width), name, unscaled, strict)
    if pred.op in (_O.STARTS_WITH, _O.NOT_STARTS_WITH):
        return None
    assert isinstance(pred, BoundLiteralPredicate)
    scaled = BoundLiteralPredicate(pred.op, pred.term, to_int(pred.literal))
    return _ordered(lambda i: from_int(i - i % width), name, scaled, strict)


def _same(value: Any) -> Any:
    return value


# -- truncate of strings and binary --------------------------------------------------------------


def _truncate_array(width: int, name: str, pred: BoundPredicate, strict: bool) -> Expression | None:
    op = pred.op
    if isinstance(pred, BoundSetPredicate):
        values = pred.literals
        short = all(len(v) < width for v in values)
        if op == (_O.NOT_IN if strict else _O.IN):
            return _set(op, name, (v[:width] for v in values))
        if short:  # an untruncated value equals its partition value exactly
            return _set(op, name, values)
        return None
    assert isinstance(pred, BoundLiteralPredicate)
    v = pred.literal
    cut = v[:width]
    if not strict:
        if op in (_O.LT, _O.LT_EQ):
            return predicate(_O.LT_EQ, name, cut)
        if op in (_O.GT, _O.GT_EQ):
            return predicate(_O.GT_EQ, name, cut)
        if op in (_O.EQ, _O.STARTS_WITH):
            return predicate(op, name, cut)
        if op == _O.NOT_EQ:
            return predicate(op, name, v) if len(v) < width else None
        if op == _O.NOT_STARTS_WITH:
            if len(v) < width:
                return predicate(op, name, v)
            return predicate(_O.NOT_EQ, name, v) if len(v) == width else None
        return None
    if op in (_O.LT, _O.LT_EQ):
        return predicate(_O.LT, name, cut)
    if op in (_O.GT, _O.GT_EQ):
        return predicate(_O.GT, name, cut)
    if op in (_O.NOT_EQ, _O.NOT_STARTS_WITH):
        return predicate(op, name, cut)
    if op == _O.EQ:
        return predicate(op, name, v) if len(v) < width else None
    if op == _O.STARTS_WITH:
        if len(v) < width:
            return predicate(op, name, v)
        return predicate(_O.EQ, name, v) if len(v) == width else None
    return None


# -- time transforms -----------------------------------------------------------------------------


def _time(
    transform: TimeTransform, source: IcebergType, name: str, pred: BoundPredicate, strict: bool
) -> Expression | None:
    if pred.op in (_O.STARTS_WITH, _O.NOT_STARTS_WITH):
        return None
    projected = _ordered(transform.bind(source), name, pred, strict)
    if projected is None or (isinstance(transform, DayTransform) and isinstance(source, DateType)):
        return projected
    return _fix_strict(projected) if strict else _fix_inclusive(projected)


def _literal(p: UnboundPredicate) -> Any:
    return getattr(p, "literal", None)


def _fix_inclusive(p: UnboundPredicate) -> UnboundPredicate | None:
    """Widen for partition values that old writers rounded towards zero (value + 1)."""
    name = p.term.name
    if p.op in (_O.LT, _O.LT_EQ, _O.EQ):
        v = _literal(p)
        if v < 0:
            if p.op == _O.EQ:
                return predicate(_O.IN, name, {v, v + 1})
            return predicate(p.op, name, v + 1)
        return p
    if p.op == _O.IN:
        values: frozenset[Any] = getattr(p, "literals", frozenset())
        fixed = set(values) | {v + 1 for v in values if v < 0}
        return predicate(_O.IN, name, fixed)
    if p.op in (_O.GT, _O.GT_EQ):
        return p
    return None


def _fix_strict(p: UnboundPredicate) -> UnboundPredicate | None:
    name = p.term.name
    if p.op in (_O.LT, _O.LT_EQ):
        return p
    if p.op in (_O.GT, _O.GT_EQ):
        v = _literal(p)
        return predicate(p.op, name, v + 1) if v <= 0 else p
    if p.op == _O.NOT_EQ:
        v = _literal(p)
        return predicate(_O.NOT_IN, name, {v, v + 1}) if v < 0 else p
    if p.op == _O.NOT_IN:
        values: frozenset[Any] = getattr(p, "literals", frozenset())
        return predicate(_O.NOT_IN, name, set(values) | {v + 1 for v in values if v < 0})
    return None
