"""Binding expressions to a schema (or any struct type, such as a partition type).

:func:`bind` resolves each column name to a :class:`BoundReference` (field, id, full name and
accessor) and converts literals to the column type's internal representation, simplifying on
the way:

* ``is null`` on a column that can never be null is ``false``, ``is not null`` is ``true``;
* a literal beyond the type's range (``int_col < 2**40``) gives a constant, as Java's
  AboveMax/BelowMin: ``true`` for a required column, ``int_col is not null`` (and ``is not
  nan`` for floats) for an optional one, so that null rows never match a comparison;
* an inexact literal (``dec_2 = 1.005``, ``int_col < 2.5``) is rewritten exactly (see
  :mod:`icepark.expressions.literals`);
* ``in`` / ``not in`` drop values that cannot occur; with no value left they are ``false`` /
  ``is not null``; with one value they become ``=`` / ``!=``; ``!=`` a value that cannot
  occur is ``is not null`` too (a null matches no comparison).

Fields inside lists and maps cannot be bound (their values are not one per row).
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from icepark.errors import ValidationError
from icepark.expressions.literals import ABOVE_MAX, BELOW_MIN, Inexact, convert_literal
from icepark.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    Not,
    Operation,
    Or,
    and_,
    not_,
    or_,
)
from icepark.expressions.predicates import (
    Accessor,
    BoundLiteralPredicate,
    BoundPredicate,
    BoundReference,
    BoundSetPredicate,
    BoundUnaryPredicate,
    LiteralPredicate,
    Reference,
    SetPredicate,
    UnaryPredicate,
    UnboundPredicate,
    predicate,
)
from icepark.expressions.visitors import ExpressionVisitor, visit
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
)

__all__ = [
    "bind",
    "bind_reference",
    "unbind",
    "referenced_field_ids",
    "referenced_names",
]


@dataclass(frozen=True)
class _Entry:
    field: NestedField
    positions: tuple[int, ...]
    field_ids: tuple[int, ...]
    produces_null: bool


@dataclass(frozen=True)
class _Index:
    by_name: dict[str, _Entry]
    by_lower: dict[str, list[str]]
    unbindable: frozenset[str]  # fields inside lists or maps


def _build_index(struct: StructType) -> _Index:
    by_name: dict[str, _Entry] = {}
    unbindable: set[str] = set()

    def walk_struct(
        t: StructType, prefix: str, positions: tuple[int, ...], ids: tuple[int, ...], nullable: bool
    ) -> None:
        for pos, f in enumerate(t.fields):
            name = prefix + f.name
            entry = _Entry(f, (*positions, pos), (*ids, f.field_id), nullable or f.optional)
            by_name[name] = entry
            if isinstance(f.field_type, StructType):
                walk_struct(
                    f.field_type, name + ".", entry.positions, entry.field_ids, entry.produces_null
                )
            elif isinstance(f.field_type, ListType | MapType):
                walk_nested(f.field_type, name + ".")

    def walk_nested(t: IcebergType, prefix: str) -> None:
        if isinstance(t, ListType | MapType | StructType):
            for f in t.fields:
                unbindable.add(prefix + f.name)
                walk_nested(f.field_type, prefix + f.name + ".")

    walk_struct(struct, "", (), (), False)
    by_lower: dict[str, list[str]] = {}
    for name in by_name:
        by_lower.setdefault(name.lower(), []).append(name)
    return _Index(by_name, by_lower, frozenset(unbindable))


@functools.lru_cache(maxsize=256)
def _cached_index(struct: StructType) -> _Index:
    return _build_index(struct)


def _index(struct: StructType) -> _Index:
    try:
        return _cached_index(struct)
    except TypeError:  # unhashable field defaults
        return _build_index(struct)


def _as_struct(schema: Schema | StructType) -> StructType:
    if isinstance(schema, Schema):
        return schema.as_struct()
    if isinstance(schema, StructType):
        return schema
    raise ValidationError(f"Can bind only to a Schema or StructType, got {type(schema).__name__}")


def bind_reference(
    schema: Schema | StructType, name: str, case_sensitive: bool = True
) -> BoundReference:
    """Resolve a (dotted) column name against ``schema``; ValidationError if unknown."""
    index = _index(_as_struct(schema))
    full = name
    entry = index.by_name.get(name) if case_sensitive else None
    if not case_sensitive:
        matches = index.by_lower.get(name.lower(), [])
        if len(matches) > 1:
            raise ValidationError(
                f"Column name {name!r} is ambiguous when case-insensitive: {sorted(matches)}"
            )
        if matches:
            full = matches[0]
            entry = index.by_name[full]
    if entry is None:
        lowered = {n.lower() for n in index.unbindable}
        if name in index.unbindable or (not case_sensitive and name.lower() in lowered):
            raise ValidationError(f"Cannot filter on column {name!r}: it is inside a list or map")
        raise ValidationError(f"Cannot find column {name!r}{_suggest(name, index)}")
    accessor = Accessor(entry.positions, entry.field_ids)
    return BoundReference(entry.field, entry.field.field_id, full, accessor, entry.produces_null)


def _suggest(name: str, index: _Index) -> str:
    close = difflib.get_close_matches(name, list(index.by_name), n=3, cutoff=0.6)
    if not close and not name.islower():
        lowered = index.by_lower.get(name.lower())
        close = lowered[:3] if lowered else []
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def bind(schema: Schema | StructType, expr: Expression, case_sensitive: bool = True) -> Expression:
    """Bind ``expr`` to ``schema``; already bound predicates are re-bound by name."""
    return visit(expr, _Binder(_as_struct(schema), case_sensitive))


class _Binder(ExpressionVisitor[Expression]):
    def __init__(self, struct: StructType, case_sensitive: bool) -> None:
        self.struct = struct
        self.case_sensitive = case_sensitive

    def visit_true(self) -> Expression:
        return AlwaysTrue()

    def visit_false(self) -> Expression:
        return AlwaysFalse()

    def visit_not(self, child: Expression) -> Expression:
        return not_(child)

    def visit_and(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def visit_or(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)

    def visit_bound_predicate(self, pred: BoundPredicate) -> Expression:
        unbound = unbind(pred)
        assert isinstance(unbound, UnboundPredicate)
        return self.visit_unbound_predicate(unbound)

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        ref = bind_reference(self.struct, pred.term.name, self.case_sensitive)
        if isinstance(pred, UnaryPredicate):
            return _bind_unary(pred.op, ref)
        if isinstance(ref.type, PrimitiveType) is False:
            raise ValidationError(
                f"Cannot compare column {ref.name!r} of type {ref.type} with literals"
            )
        if isinstance(pred, SetPredicate):
            return _bind_set(pred.op, ref, pred.literals)
        assert isinstance(pred, LiteralPredicate)
        return _bind_literal(pred.op, ref, pred.literal)


def _is_float(t: IcebergType) -> bool:
    return isinstance(t, FloatType | DoubleType)


def _bind_unary(op: Operation, ref: BoundReference) -> Expression:
    if op in (Operation.IS_NAN, Operation.NOT_NAN) and not _is_float(ref.type):
        raise ValidationError(
            f"Cannot use {op.symbol!r} on column {ref.name!r} of type {ref.type}: "
            "only float and double columns hold NaN"
        )
    if not ref.produces_null:
        if op == Operation.IS_NULL:
            return AlwaysFalse()
        if op == Operation.NOT_NULL:
            return AlwaysTrue()
    return BoundUnaryPredicate(op, ref)


def _not_null(ref: BoundReference) -> Expression:
    """Matches every row whose value is not null: what ``!=`` and ``not in`` match when no
    value of the column can equal the literal (NaN is not equal to anything, so it matches)."""
    return BoundUnaryPredicate(Operation.NOT_NULL, ref) if ref.produces_null else AlwaysTrue()


def _all_values(ref: BoundReference) -> Expression:
    """Matches every row whose value is comparable (not null, not NaN)."""
    if _is_float(ref.type):
        return and_(_not_null(ref), BoundUnaryPredicate(Operation.NOT_NAN, ref))
    return _not_null(ref)


_BELOW_TRUE = (Operation.GT, Operation.GT_EQ)
_ABOVE_TRUE = (Operation.LT, Operation.LT_EQ)


def _bind_literal(op: Operation, ref: BoundReference, literal: Any) -> Expression:
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        if not isinstance(ref.type, StringType):
            raise ValidationError(
                f"Cannot use {op.value} on column {ref.name!r} of type {ref.type}: "
                "only string columns"
            )
        return BoundLiteralPredicate(op, ref, literal)
    value = convert_literal(literal, ref.type, ref.name)
    if value is ABOVE_MAX or value is BELOW_MIN:
        if op == Operation.NOT_EQ:
            return _not_null(ref)
        if op in (_ABOVE_TRUE if value is ABOVE_MAX else _BELOW_TRUE):
            return _all_values(ref)
        return AlwaysFalse()
    if isinstance(value, Inexact):
        if op == Operation.EQ:
            return AlwaysFalse()
        if op == Operation.NOT_EQ:
            return _not_null(ref)
        if op in (Operation.LT, Operation.LT_EQ):
            return BoundLiteralPredicate(Operation.LT_EQ, ref, value.floor)
        return BoundLiteralPredicate(Operation.GT, ref, value.floor)
    return BoundLiteralPredicate(op, ref, value)


def _bind_set(op: Operation, ref: BoundReference, literals: Iterable[Any]) -> Expression:
    values = set()
    for lit in literals:
        value = convert_literal(lit, ref.type, ref.name)
        if value is ABOVE_MAX or value is BELOW_MIN or isinstance(value, Inexact):
            continue  # cannot be equal to any value of the column
        values.add(value)
    if not values:
        return AlwaysFalse() if op == Operation.IN else _not_null(ref)
    if len(values) == 1:
        single = Operation.EQ if op == Operation.IN else Operation.NOT_EQ
        return BoundLiteralPredicate(single, ref, next(iter(values)))
    return BoundSetPredicate(op, ref, values)


# -- unbinding and references --------------------------------------------------------------------


def unbind(expr: Expression) -> Expression:
    """The unbound form of ``expr``: references by full name, literals kept (internal form)."""
    if isinstance(expr, And):
        return And(unbind(expr.left), unbind(expr.right))
    if isinstance(expr, Or):
        return Or(unbind(expr.left), unbind(expr.right))
    if isinstance(expr, Not):
        return Not(unbind(expr.child))
    if isinstance(expr, BoundUnaryPredicate):
        return predicate(expr.op, Reference(expr.term.name))
    if isinstance(expr, BoundLiteralPredicate):
        return predicate(expr.op, Reference(expr.term.name), expr.literal)
    if isinstance(expr, BoundSetPredicate):
        return predicate(expr.op, Reference(expr.term.name), expr.literals)
    return expr


def referenced_field_ids(
    expr: Expression, schema: Schema | StructType | None = None, case_sensitive: bool = True
) -> set[int]:
    """The field ids a bound expression uses (an unbound one is bound to ``schema`` first)."""
    if not expr.is_bound:
        if schema is None:
            raise ValidationError(f"Expression is not bound and no schema was given: {expr}")
        expr = bind(schema, expr, case_sensitive)
    ids: set[int] = set()
    _collect(expr, lambda p: ids.add(p.term.field_id) if isinstance(p, BoundPredicate) else None)
    return ids


def referenced_names(expr: Expression) -> set[str]:
    """The column names an expression (bound or unbound) refers to."""
    names: set[str] = set()
    _collect(expr, lambda p: names.add(p.term.name))
    return names


def _collect(expr: Expression, add: Any) -> None:
    if isinstance(expr, And | Or):
        _collect(expr.left, add)
        _collect(expr.right, add)
    elif isinstance(expr, Not):
        _collect(expr.child, add)
    elif isinstance(expr, UnboundPredicate | BoundPredicate):
        add(expr)
