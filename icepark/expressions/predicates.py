"""Column references and predicates, unbound and bound (see :mod:`icepark.expressions.model`).

An unbound predicate names a column and holds plain Python literals; a bound one holds a
:class:`BoundReference` (field, id, full name, accessor) and literals in the column type's
internal representation. ``BoundPredicate.test(value)`` applies the null and NaN rules of the
model docstring.
"""

from __future__ import annotations

import datetime
import math
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from icepark.errors import ValidationError
from icepark.expressions.model import Expression, Operation, _Immutable
from icepark.spec.types import IcebergType, NestedField

__all__ = [
    "Term",
    "Reference",
    "BoundReference",
    "Accessor",
    "Predicate",
    "UnboundPredicate",
    "UnaryPredicate",
    "LiteralPredicate",
    "SetPredicate",
    "BoundPredicate",
    "BoundUnaryPredicate",
    "BoundLiteralPredicate",
    "BoundSetPredicate",
    "col",
    "predicate",
    "format_literal",
]


# -- terms -------------------------------------------------------------------------------------

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_KEYWORDS = frozenset(
    {
        "and",
        "or",
        "not",
        "in",
        "is",
        "null",
        "nan",
        "like",
        "true",
        "false",
        "between",
        "starts_with",
        "not_starts_with",
        "date",
        "timestamp",
        "timestamptz",
    }
)


def _format_name(name: str) -> str:
    if _PLAIN_NAME.match(name) and not any(p.lower() in _KEYWORDS for p in name.split(".")):
        return name
    return "`" + name.replace("`", "``") + "`"


class Term(_Immutable):
    """Base of references (unbound and bound)."""

    __slots__ = ()
    name: str


def _literal_key(value: Any) -> tuple[Any, ...]:
    return (type(value).__name__, value)


class Reference(Term):
    """An unbound reference to a column by its (dotted) name: ``Reference("location.lat")``.

    Comparison operators and the methods below build predicates on the column.
    """

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValidationError(f"A column name must be a non-empty string: {name!r}")
        self._set("name", name)

    def _key(self) -> tuple[Any, ...]:
        return (self.name,)

    def __str__(self) -> str:
        return _format_name(self.name)

    # predicate builders (these shadow the value-class __eq__/__ne__ on purpose)
    def __eq__(self, value: Any) -> LiteralPredicate:  # type: ignore[override]
        return LiteralPredicate(Operation.EQ, self, value)

    def __ne__(self, value: Any) -> LiteralPredicate:  # type: ignore[override]
        return LiteralPredicate(Operation.NOT_EQ, self, value)

    def __lt__(self, value: Any) -> LiteralPredicate:
        return LiteralPredicate(Operation.LT, self, value)

    def __le__(self, value: Any) -> LiteralPredicate:
        return LiteralPredicate(Operation.LT_EQ, self, value)

    def __gt__(self, value: Any) -> LiteralPredicate:
        return LiteralPredicate(Operation.GT, self, value)

    def __ge__(self, value: Any) -> LiteralPredicate:
        return LiteralPredicate(Operation.GT_EQ, self, value)

    def __hash__(self) -> int:
        return hash(("Reference", self.name))

    def same_as(self, other: object) -> bool:
        """Value equality (``==`` builds a predicate instead)."""
        return isinstance(other, Reference) and other.name == self.name

    def is_null(self) -> UnaryPredicate:
        return UnaryPredicate(Operation.IS_NULL, self)

    def not_null(self) -> UnaryPredicate:
        return UnaryPredicate(Operation.NOT_NULL, self)

    def is_nan(self) -> UnaryPredicate:
        return UnaryPredicate(Operation.IS_NAN, self)

    def not_nan(self) -> UnaryPredicate:
        return UnaryPredicate(Operation.NOT_NAN, self)

    def isin(self, values: Iterable[Any]) -> SetPredicate:
        return SetPredicate(Operation.IN, self, values)

    is_in = isin

    def not_in(self, values: Iterable[Any]) -> SetPredicate:
        return SetPredicate(Operation.NOT_IN, self, values)

    def starts_with(self, prefix: str) -> LiteralPredicate:
        return LiteralPredicate(Operation.STARTS_WITH, self, prefix)

    def not_starts_with(self, prefix: str) -> LiteralPredicate:
        return LiteralPredicate(Operation.NOT_STARTS_WITH, self, prefix)


def col(name: str) -> Reference:
    """A reference to a column, to build filters with Python operators instead of a filter
    string: ``col("id") == 5``, ``(col("ts") >= "2024-01-01") & ~col("x").is_null()``,
    ``col("p").isin(["a", "b"])``, ``col("name").starts_with("ab")``. The expression is
    bound to a schema (and its literals converted) when a scan uses it.

    Args:
        name: the column's name, dotted for a nested struct field (``"point.x"``).

    Returns:
        A ``Reference``; its comparisons and methods (``is_null``, ``not_null``,
        ``is_nan``, ``isin``, ``not_in``, ``starts_with``) give predicates.
    """
    return Reference(name)


class Accessor(_Immutable):
    """Gets a (possibly nested) field's value out of a row.

    A row is a tuple (or any sequence) by position, or a mapping keyed by field id; a nested
    struct value is again either. ``positions`` is the path of positions from the top-level
    struct; ``field_ids`` the matching field ids. A null struct on the path gives None.
    """

    __slots__ = ("field_ids", "positions")
    positions: tuple[int, ...]
    field_ids: tuple[int, ...]

    def __init__(self, positions: Sequence[int], field_ids: Sequence[int]) -> None:
        if len(positions) != len(field_ids) or not positions:
            raise ValidationError("An accessor needs one position per field id")
        self._set("positions", tuple(positions))
        self._set("field_ids", tuple(field_ids))

    def _key(self) -> tuple[Any, ...]:
        return (self.positions, self.field_ids)

    def get(self, row: Any) -> Any:
        value = row
        for pos, fid in zip(self.positions, self.field_ids):
            if value is None:
                return None
            if isinstance(value, Mapping):
                value = value.get(fid)
            else:
                value = value[pos]
        return value

    __call__ = get


class BoundReference(Term):
    """A reference resolved against a struct: the field, its id, full name and accessor.

    ``produces_null`` is true when the value can be null (the field or a struct containing
    it is optional).
    """

    __slots__ = ("accessor", "field", "field_id", "name", "produces_null")
    field: NestedField
    field_id: int
    name: str
    accessor: Accessor
    produces_null: bool

    def __init__(
        self,
        field: NestedField,
        field_id: int,
        name: str,
        accessor: Accessor,
        produces_null: bool | None = None,
    ) -> None:
        self._set("field", field)
        self._set("field_id", field_id)
        self._set("name", name)
        self._set("accessor", accessor)
        self._set("produces_null", field.optional if produces_null is None else produces_null)

    @property
    def type(self) -> IcebergType:
        return self.field.field_type

    def _key(self) -> tuple[Any, ...]:
        return (self.field_id, self.name, self.field.field_type, self.accessor)

    def eval(self, row: Any) -> Any:
        return self.accessor.get(row)

    def __str__(self) -> str:
        return _format_name(self.name)


# -- literal formatting --------------------------------------------------------------------------


def format_literal(value: Any) -> str:
    """A literal as the filter parser reads it back (strings quoted, bytes as X'..')."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes | bytearray | memoryview):
        return "X'" + bytes(value).hex() + "'"
    if isinstance(value, float):
        text = repr(value)
        if math.isfinite(value) and "e" not in text and "." not in text:
            text += ".0"
        return text
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime.datetime):
        return "timestamp '" + value.isoformat() + "'"
    if isinstance(value, datetime.date):
        return "date '" + value.isoformat() + "'"
    if isinstance(value, datetime.time | uuid.UUID):
        return "'" + str(value) + "'"
    return str(value)


def _check_literal(value: Any, op: Operation) -> Any:
    if value is None:
        hint = "is null" if op != Operation.NOT_EQ else "is not null"
        raise ValidationError(
            f"Cannot compare with null ({op.symbol} null): use '{hint}' "
            f"(col(...).{'is_null' if hint == 'is null' else 'not_null'}()) instead"
        )
    if isinstance(value, float) and math.isnan(value):
        raise ValidationError(
            f"Cannot compare with NaN ({op.symbol} NaN): use 'is nan' / 'is not nan' instead"
        )
    if isinstance(value, Decimal) and value.is_nan():
        raise ValidationError("Cannot compare with a NaN decimal: use 'is nan' instead")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, Expression | Term):
        raise ValidationError(f"A literal cannot be an expression or column: {value!r}")
    try:
        hash(value)
    except TypeError:
        raise ValidationError(f"A literal must be a hashable value: {value!r}"[:300]) from None
    return value


# -- predicates --------------------------------------------------------------------------------


class Predicate(Expression):
    """Base of predicates: an operation on a term, with zero, one or a set of literals."""

    __slots__ = ("op", "term")
    op: Operation
    term: Term

    def __init__(self, op: Operation, term: Term) -> None:
        self._set("op", op)
        self._set("term", term)

    def __str__(self) -> str:
        return f"{self.term} {self.op.symbol}"


class UnboundPredicate(Predicate):
    """A predicate on a column by name; literals are plain Python values."""

    __slots__ = ()
    term: Reference

    @property
    def is_bound(self) -> bool:
        return False


class UnaryPredicate(UnboundPredicate):
    """``is null``, ``is not null``, ``is nan``, ``is not nan``."""

    __slots__ = ()

    def __init__(self, op: Operation, term: Reference | str) -> None:
        if not op.is_unary:
            raise ValidationError(f"Not a unary operation: {op.value}")
        super().__init__(op, _ref(term))

    def _key(self) -> tuple[Any, ...]:
        return (self.op, self.term.name)

    def negate(self) -> Expression:
        return UnaryPredicate(self.op.negate(), self.term)


class LiteralPredicate(UnboundPredicate):
    """A comparison (``< <= > >= = !=``) or ``starts_with`` against one literal."""

    __slots__ = ("literal",)
    literal: Any

    def __init__(self, op: Operation, term: Reference | str, literal: Any) -> None:
        if not op.is_literal:
            raise ValidationError(f"Not a comparison operation: {op.value}")
        super().__init__(op, _ref(term))
        literal = _check_literal(literal, op)
        prefix_op = op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH)
        if prefix_op and not isinstance(literal, str):
            raise ValidationError(f"{op.value} needs a string prefix: {literal!r}"[:300])
        self._set("literal", literal)

    def _key(self) -> tuple[Any, ...]:
        return (self.op, self.term.name, _literal_key(self.literal))

    def negate(self) -> Expression:
        return LiteralPredicate(self.op.negate(), self.term, self.literal)

    def __str__(self) -> str:
        if self.op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
            return _like(self.term, self.op, self.literal)
        return f"{self.term} {self.op.symbol} {format_literal(self.literal)}"


class SetPredicate(UnboundPredicate):
    """``in`` / ``not in`` a set of literals (kept as a frozenset)."""

    __slots__ = ("literals",)
    literals: frozenset[Any]

    def __init__(self, op: Operation, term: Reference | str, literals: Iterable[Any]) -> None:
        if not op.is_set:
            raise ValidationError(f"Not a set operation: {op.value}")
        if isinstance(literals, str | bytes):
            raise ValidationError(f"{op.value} needs a collection of values, got {literals!r}")
        super().__init__(op, _ref(term))
        values = frozenset(_check_literal(v, op) for v in literals)
        self._set("literals", values)

    def _key(self) -> tuple[Any, ...]:
        return (self.op, self.term.name, self.literals)

    def negate(self) -> Expression:
        return SetPredicate(self.op.negate(), self.term, self.literals)

    def __str__(self) -> str:
        return f"{self.term} {self.op.symbol} {_format_set(self.literals)}"


def _format_set(values: Iterable[Any]) -> str:
    try:
        ordered = sorted(values)
    except TypeError:
        ordered = sorted(values, key=repr)
    return "(" + ", ".join(format_literal(v) for v in ordered) + ")"


def _like(term: Term, op: Operation, prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    word = "like" if op == Operation.STARTS_WITH else "not like"
    return f"{term} {word} {format_literal(escaped + '%')}"


def _ref(term: Reference | str) -> Reference:
    if isinstance(term, str):
        return Reference(term)
    if not isinstance(term, Reference):
        raise ValidationError(f"An unbound predicate needs a column reference, got {term!r}")
    return term


def predicate(op: Operation, term: Reference | str, value: Any = None) -> UnboundPredicate:
    """Build an unbound predicate: ``value`` is the literal, or the values for in/not in."""
    if op.is_unary:
        return UnaryPredicate(op, term)
    if op.is_set:
        return SetPredicate(op, term, value)
    return LiteralPredicate(op, term, value)


class BoundPredicate(Predicate):
    """A predicate bound to a field; literals are in the field type's internal form."""

    __slots__ = ()
    term: BoundReference

    @property
    def ref(self) -> BoundReference:
        return self.term

    def test(self, value: Any) -> bool:
        """Whether a value of the field matches (null and NaN rules as the module says)."""
        raise NotImplementedError


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


class BoundUnaryPredicate(BoundPredicate):
    """A bound ``is null`` / ``is not null`` / ``is nan`` / ``is not nan``."""

    __slots__ = ()

    def __init__(self, op: Operation, term: BoundReference) -> None:
        if not op.is_unary:
            raise ValidationError(f"Not a unary operation: {op.value}")
        super().__init__(op, term)

    def _key(self) -> tuple[Any, ...]:
        return (self.op, self.term)

    def negate(self) -> Expression:
        return BoundUnaryPredicate(self.op.negate(), self.term)

    def test(self, value: Any) -> bool:
        op = self.op
        if op == Operation.IS_NULL:
            return value is None
        if op == Operation.NOT_NULL:
            return value is not None
        if op == Operation.IS_NAN:
            return _is_nan(value)
        return not _is_nan(value)


_COMPARE: dict[Operation, Callable[[Any, Any], bool]] = {
    Operation.LT: lambda v, lit: bool(v < lit),
    Operation.LT_EQ: lambda v, lit: bool(v <= lit),
    Operation.GT: lambda v, lit: bool(v > lit),
    Operation.GT_EQ: lambda v, lit: bool(v >= lit),
    Operation.EQ: lambda v, lit: bool(v == lit),
    Operation.STARTS_WITH: lambda v, lit: isinstance(v, str) and v.startswith(lit),
}
_NEGATIVE_OPS = frozenset(
    {
        Operation.NOT_EQ,
        Operation.NOT_IN,
        Operation.NOT_STARTS_WITH,
        Operation.NOT_NULL,
        Operation.NOT_NAN,
    }
)


class BoundLiteralPredicate(BoundPredicate):
    """A bound comparison or ``starts_with``; ``literal`` is in internal representation."""

    __slots__ = ("literal",)
    literal: Any

    def __init__(self, op: Operation, term: BoundReference, literal: Any) -> None:
        if not op.is_literal:
            raise ValidationError(f"Not a comparison operation: {op.value}")
        super().__init__(op, term)
        self._set("literal", literal)

    def _key(self) -> tuple[Any, ...]:
        return (self.op, self.term, _literal_key(self.literal))

    def negate(self) -> Expression:
        return BoundLiteralPredicate(self.op.negate(), self.term, self.literal)

    def test(self, value: Any) -> bool:
        if value is None:
            return False
        if _is_nan(value):
            return self.op in _NEGATIVE_OPS
        if self.op in _NEGATIVE_OPS:
            return not _COMPARE[self.op.negate()](value, self.literal)
        return _COMPARE[self.op](value, self.literal)

    def __str__(self) -> str:
        if self.op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
            return _like(self.term, self.op, self.literal)
        return f"{self.term} {self.op.symbol} {format_literal(self.literal)}"


class BoundSetPredicate(BoundPredicate):
    """A bound ``in`` / ``not in``; ``literals`` is a frozenset in internal representation."""

    __slots__ = ("literals",)
    literals: frozenset[Any]

    def __init__(self, op: Operation, term: BoundReference, literals: Iterable[Any]) -> None:
        if not op.is_set:
            raise ValidationError(f"Not a set operation: {op.value}")
        super().__init__(op, term)
        self._set("literals", frozenset(literals))

    def _key(self) -> tuple[Any, ...]:
        return (self.op, self.term, self.literals)

    def negate(self) -> Expression:
        return BoundSetPredicate(self.op.negate(), self.term, self.literals)

    def test(self, value: Any) -> bool:
        if value is None:
            return False
        if _is_nan(value):
            return self.op == Operation.NOT_IN
        found = value in self.literals
        return found if self.op == Operation.IN else not found

    def __str__(self) -> str:
        return f"{self.term} {self.op.symbol} {_format_set(self.literals)}"
