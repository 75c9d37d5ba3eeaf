"""The expression model: references, predicates and the boolean connectives, unbound and bound.

An *unbound* expression names columns (``col("ts") >= "2024-01-01"``) and holds literals as
plain Python values; :func:`icepark.expressions.bind` resolves it against a schema (or any
struct type, such as a partition type) into a *bound* expression whose references know the
field, its id and how to get the value out of a row, and whose literals are converted to the
column type's internal representation (see :mod:`icepark.spec.types`).

Every expression is immutable, hashable and comparable. ``&``, ``|`` and ``~`` combine
expressions (with the simplifications of :func:`and_`, :func:`or_` and :func:`not_`); ``str``
gives a readable form that :func:`icepark.expressions.parse_filter` reads back for unbound
expressions whose literals are numbers, strings, booleans or bytes.

Null and NaN semantics (shared by all evaluators): a comparison, ``in`` or ``starts_with``
with a null or NaN value is false; ``!=``, ``not in`` and ``not starts_with`` are true for
null and NaN values. ``Not`` is evaluated by pushing the negation down to the predicates
(:func:`icepark.expressions.visitors.rewrite_not`), as Java does, so ``not (x < 5)`` is
``x >= 5`` and does not match null rows.
"""

from __future__ import annotations

import datetime
import enum
import math
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, ClassVar

from icepark.errors import ValidationError
from icepark.spec.types import IcebergType, NestedField

__all__ = [
    "Operation",
    "Expression",
    "AlwaysTrue",
    "AlwaysFalse",
    "And",
    "Or",
    "Not",
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
    "and_",
    "or_",
    "not_",
    "predicate",
    "format_literal",
    "BooleanExpression",
]


class Operation(enum.Enum):
    """A predicate's operation."""

    IS_NULL = "is_null"
    NOT_NULL = "not_null"
    IS_NAN = "is_nan"
    NOT_NAN = "not_nan"
    LT = "lt"
    LT_EQ = "lt_eq"
    GT = "gt"
    GT_EQ = "gt_eq"
    EQ = "eq"
    NOT_EQ = "not_eq"
    IN = "in"
    NOT_IN = "not_in"
    STARTS_WITH = "starts_with"
    NOT_STARTS_WITH = "not_starts_with"

    @property
    def is_unary(self) -> bool:
        return self in _UNARY

    @property
    def is_set(self) -> bool:
        return self in (Operation.IN, Operation.NOT_IN)

    @property
    def is_literal(self) -> bool:
        return not self.is_unary and not self.is_set

    def negate(self) -> Operation:
        """The operation matching exactly the rows this one does not (given Not-rewriting)."""
        return _NEGATED[self]

    def flip(self) -> Operation:
        """The operation with its operands swapped: ``5 < x`` is ``x > 5``."""
        return _FLIPPED.get(self, self)

    @property
    def symbol(self) -> str:
        return _SYMBOLS[self]


_UNARY = frozenset(
    {Operation.IS_NULL, Operation.NOT_NULL, Operation.IS_NAN, Operation.NOT_NAN}
)
_NEGATED = {
    Operation.IS_NULL: Operation.NOT_NULL,
    Operation.NOT_NULL: Operation.IS_NULL,
    Operation.IS_NAN: Operation.NOT_NAN,
    Operation.NOT_NAN: Operation.IS_NAN,
    Operation.LT: Operation.GT_EQ,
    Operation.LT_EQ: Operation.GT,
    Operation.GT: Operation.LT_EQ,
    Operation.GT_EQ: Operation.LT,
    Operation.EQ: Operation.NOT_EQ,
    Operation.NOT_EQ: Operation.EQ,
    Operation.IN: Operation.NOT_IN,
    Operation.NOT_IN: Operation.IN,
    Operation.STARTS_WITH: Operation.NOT_STARTS_WITH,
    Operation.NOT_STARTS_WITH: Operation.STARTS_WITH,
}
_FLIPPED = {
    Operation.LT: Operation.GT,
    Operation.LT_EQ: Operation.GT_EQ,
    Operation.GT: Operation.LT,
    Operation.GT_EQ: Operation.LT_EQ,
}
_SYMBOLS = {
    Operation.IS_NULL: "is null",
    Operation.NOT_NULL: "is not null",
    Operation.IS_NAN: "is nan",
    Operation.NOT_NAN: "is not nan",
    Operation.LT: "<",
    Operation.LT_EQ: "<=",
    Operation.GT: ">",
    Operation.GT_EQ: ">=",
    Operation.EQ: "=",
    Operation.NOT_EQ: "!=",
    Operation.IN: "in",
    Operation.NOT_IN: "not in",
    Operation.STARTS_WITH: "starts with",
    Operation.NOT_STARTS_WITH: "not starts with",
}


class _Immutable:
    """Base for the immutable value classes: no attribute may be set after __init__."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def __setstate__(self, state: Any) -> None:
        # unpickling (scan tasks carry residuals to Spark executors): restore the slots
        # without the immutable __setattr__
        dict_state, slot_state = state if isinstance(state, tuple) else (state, None)
        for mapping in (dict_state, slot_state):
            for name, value in (mapping or {}).items():
                object.__setattr__(self, name, value)

    def _key(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return (
            type(self) is type(other)
            and isinstance(other, _Immutable)
            and self._key() == other._key()
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(k) for k in self._key())})"


# -- expressions -------------------------------------------------------------------------------


class Expression(_Immutable):
    """Base of all boolean expressions."""

    __slots__ = ()

    def negate(self) -> Expression:
        """The expression matching the rows this one does not (predicates negate their op)."""
        raise NotImplementedError

    def __and__(self, other: Expression) -> Expression:
        return and_(self, other)

    def __or__(self, other: Expression) -> Expression:
        return or_(self, other)

    def __invert__(self) -> Expression:
        return not_(self)

    def __bool__(self) -> bool:
        raise TypeError(
            "An expression has no truth value: combine expressions with &, | and ~ "
            "(not 'and', 'or', 'not'), and compare columns one at a time (no a < x < b)"
        )

    @property
    def is_bound(self) -> bool:
        """Whether the expression holds no unbound predicates."""
        return True


BooleanExpression = Expression
"""Alias of :class:`Expression` (the name PyIceberg uses)."""


class AlwaysTrue(Expression):
    """The expression that matches every row (a singleton)."""

    __slots__ = ()
    _instance: ClassVar[AlwaysTrue | None] = None

    def __new__(cls) -> AlwaysTrue:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def _key(self) -> tuple[Any, ...]:
        return ()

    def negate(self) -> Expression:
        return AlwaysFalse()

    def __str__(self) -> str:
        return "true"


class AlwaysFalse(Expression):
    """The expression that matches no row (a singleton)."""

    __slots__ = ()
    _instance: ClassVar[AlwaysFalse | None] = None

    def __new__(cls) -> AlwaysFalse:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def _key(self) -> tuple[Any, ...]:
        return ()

    def negate(self) -> Expression:
        return AlwaysTrue()

    def __str__(self) -> str:
        return "false"


def _check_expression(value: Any, what: str) -> Expression:
    if not isinstance(value, Expression):
        raise ValidationError(f"{what} expects expressions, got {value!r}"[:300])
    return value


class And(Expression):
    """Both sides match. Build with ``a & b`` or :func:`and_` to get simplifications."""

    __slots__ = ("left", "right")
    left: Expression
    right: Expression

    def __init__(self, left: Expression, right: Expression) -> None:
        self._set("left", _check_expression(left, "And"))
        self._set("right", _check_expression(right, "And"))

    def _key(self) -> tuple[Any, ...]:
        return (self.left, self.right)

    def negate(self) -> Expression:
        return or_(self.left.negate(), self.right.negate())

    @property
    def is_bound(self) -> bool:
        return self.left.is_bound and self.right.is_bound

    def __str__(self) -> str:
        return f"{_paren(self.left, Or)} and {_paren(self.right, Or)}"


class Or(Expression):
    """Either side matches. Build with ``a | b`` or :func:`or_` to get simplifications."""

    __slots__ = ("left", "right")
    left: Expression
    right: Expression

    def __init__(self, left: Expression, right: Expression) -> None:
        self._set("left", _check_expression(left, "Or"))
        self._set("right", _check_expression(right, "Or"))

    def _key(self) -> tuple[Any, ...]:
        return (self.left, self.right)

    def negate(self) -> Expression:
        return and_(self.left.negate(), self.right.negate())

    @property
    def is_bound(self) -> bool:
        return self.left.is_bound and self.right.is_bound

    def __str__(self) -> str:
        return f"{_paren(self.left, And)} or {_paren(self.right, And)}"


class Not(Expression):
    """The child does not match. Build with ``~e`` or :func:`not_` to get simplifications."""

    __slots__ = ("child",)
    child: Expression

    def __init__(self, child: Expression) -> None:
        self._set("child", _check_expression(child, "Not"))

    def _key(self) -> tuple[Any, ...]:
        return (self.child,)

    def negate(self) -> Expression:
        return self.child

    @property
    def is_bound(self) -> bool:
        return self.child.is_bound

    def __str__(self) -> str:
        child = self.child
        if isinstance(child, And | Or):
            return f"not ({child})"
        return f"not {child}" if not isinstance(child, Predicate) else f"not ({child})"


def _paren(e: Expression, other: type) -> str:
    return f"({e})" if isinstance(e, other) else str(e)


def and_(*exprs: Expression) -> Expression:
    """All expressions match; ``true`` operands are dropped, any ``false`` gives ``false``."""
    result: Expression = AlwaysTrue()
    for e in exprs:
        _check_expression(e, "and_")
        if isinstance(e, AlwaysFalse) or isinstance(result, AlwaysFalse):
            result = AlwaysFalse()
        elif isinstance(e, AlwaysTrue):
            continue
        elif isinstance(result, AlwaysTrue):
            result = e
        else:
            result = And(result, e)
    return result


def or_(*exprs: Expression) -> Expression:
    """Any expression matches; ``false`` operands are dropped, any ``true`` gives ``true``."""
    result: Expression = AlwaysFalse()
    for e in exprs:
        _check_expression(e, "or_")
        if isinstance(e, AlwaysTrue) or isinstance(result, AlwaysTrue):
            result = AlwaysTrue()
        elif isinstance(e, AlwaysFalse):
            continue
        elif isinstance(result, AlwaysFalse):
            result = e
        else:
            result = Or(result, e)
    return result


def not_(e: Expression) -> Expression:
    """The negation of ``e``: constants flip, ``not not x`` is ``x``; otherwise ``Not(e)``."""
    _check_expression(e, "not_")
    if isinstance(e, AlwaysTrue):
        return AlwaysFalse()
    if isinstance(e, AlwaysFalse):
        return AlwaysTrue()
    if isinstance(e, Not):
        return e.child
    return Not(e)


# -- terms -------------------------------------------------------------------------------------

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_KEYWORDS = frozenset(
    {"and", "or", "not", "in", "is", "null", "nan", "like", "true", "false", "between",
     "starts_with", "not_starts_with", "date", "timestamp", "timestamptz"}
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
    """A reference to the column ``name`` (dotted for nested struct fields)."""
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
    {Operation.NOT_EQ, Operation.NOT_IN, Operation.NOT_STARTS_WITH, Operation.NOT_NULL,
     Operation.NOT_NAN}
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
        if value is None or _is_nan(value):
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
        if value is None or _is_nan(value):
            return self.op == Operation.NOT_IN
        found = value in self.literals
        return found if self.op == Operation.IN else not found

    def __str__(self) -> str:
        return f"{self.term} {self.op.symbol} {_format_set(self.literals)}"
