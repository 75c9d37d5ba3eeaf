"""The expression model: operations, the expression base and the boolean connectives.

Terms (column references) and predicates live in :mod:`icepark.expressions.predicates`.

An *unbound* expression names columns (``col("ts") >= "2024-01-01"``) and holds literals as
plain Python values; :func:`icepark.expressions.bind` resolves it against a schema (or any
struct type, such as a partition type) into a *bound* expression whose references know the
field, its id and how to get the value out of a row, and whose literals are converted to the
column type's internal representation (see :mod:`icepark.spec.types`).

Every expression is immutable, hashable and comparable. ``&``, ``|`` and ``~`` combine
expressions (with the simplifications of :func:`and_`, :func:`or_` and :func:`not_`); ``str``
gives a readable form that :func:`icepark.expressions.parse_filter` reads back to an equal
expression when the literals are ints, Decimals, strings, booleans or bytes (a float comes
back as a Decimal, which binds to the same value).

Null and NaN semantics (shared by all evaluators, the Arrow reader and Spark alike): a null
value matches no comparison, ``!=``, ``not in`` and ``not starts_with`` included (SQL: the
comparison is unknown and the row is not selected); only ``is null`` selects it. A NaN
matches ``!=``, ``not in`` and ``is nan`` and no other comparison. ``Not`` is evaluated by
pushing the negation down to the predicates (:func:`icepark.expressions.visitors.rewrite_not`),
as Java does, so ``not (x < 5)`` is ``x >= 5`` and does not match null rows; this agrees with
SQL's three-valued logic, where ``not`` of an unknown is unknown.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

from icepark.errors import ValidationError

__all__ = [
    "Operation",
    "Expression",
    "BooleanExpression",
    "AlwaysTrue",
    "AlwaysFalse",
    "And",
    "Or",
    "Not",
    "and_",
    "or_",
    "not_",
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


_UNARY = frozenset({Operation.IS_NULL, Operation.NOT_NULL, Operation.IS_NAN, Operation.NOT_NAN})
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
        return f"not ({self.child})"


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
