"""A query's own predicates on one table, as an icepark filter that prunes its files.

:func:`conjuncts_for` picks the conjuncts that may be pushed into a table's scan without
changing the query's rows: those of the ``WHERE`` of the ``SELECT`` reading the table and of
its inner joins' ``ON``; for the right side of a ``LEFT`` (or semi/anti) join, only that join's
``ON``; nothing when the ``SELECT`` has a right or full outer join. Spark still evaluates every
predicate: the pushed filter only has to keep every row the predicate keeps.

:func:`to_filter` translates a conjunct when its meaning in icepark is Spark's for every row:
comparisons, ``IN``, ``BETWEEN``, null tests, prefix ``LIKE``, ``NOT``, ``AND``, ``OR`` over
columns of the table (qualified by its alias, or unqualified when the table is the ``SELECT``'s
only source) and literals of the column's own kind (integers for int/long columns, decimals of
at most the column's scale, strings for strings, dates, timestamps without zone; a timestamptz
only when the session's zone is UTC, as icepark reads zone-less literals there), numbers for
float and double columns (see below). Anything else is not pushed.

``NOT`` is pushed down through ``AND``/``OR`` and into each comparison with Spark's own
meaning (``NOT x > v`` is ``x <= v``, ``NOT x IN (..)`` is ``x NOT IN (..)``) before any of it
becomes icepark's, so each translated comparison only has to agree with Spark on its own.

Floating point. Spark orders NaN above every other value and has ``NaN = NaN``; icepark's
comparisons (its evaluators, the Arrow reader) match a NaN with ``!=`` and ``not in`` only,
and ``-0.0 = 0.0`` in both. A comparison of a float/double column ``x`` with a number ``v``
is translated exactly (the same rows, so DELETE/UPDATE may use it as their condition too):
``x > v`` is ``x > v or is_nan(x)``, likewise ``>=``; ``<``, ``<=``, ``=``, ``!=``, ``IN`` and
``NOT IN`` need nothing more (a NaN is not below a number, and is ``!=`` it in both). A NaN
literal (``CAST('NaN' AS DOUBLE)``) is never pushed. Numbers are integers of at most 2**53
in magnitude (2**24 for a float column: Spark compares an integer with a float column as a
float), decimals of at most 15 significant digits and 22 places, and double literals
(``1e3``; ``1.5D`` with at most 15 digits): Spark compares them with a float column as doubles
and each is exact as the double ``d`` that Spark uses. For a double column the pushed literal
is ``d``. For a float (32-bit) column Spark compares ``double(x)`` with ``d`` while icepark
would round ``d`` to a float, so the literal pushed is a float chosen so that the float
comparison keeps exactly Spark's rows: for ``x > d`` and ``x <= d`` the largest float at or
below ``d``, for ``x >= d`` and ``x < d`` the smallest float at or above it; ``x = d`` with a
``d`` that no float equals matches no row (``false``; its ``!=`` matches every non-null row)
and such values are dropped from an ``IN`` list. A ``d`` beyond the float range is not pushed.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlglot import exp

from icepark.errors import ValidationError
from icepark.expressions import AlwaysFalse, BooleanExpression, and_, bind, col, or_
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)

__all__ = [
    "conjuncts_for",
    "from_clause",
    "to_filter",
    "translated",
    "split_and",
    "literal_value",
]


class _NoPush(Exception):
    pass


def split_and(expr: exp.Expr | None) -> list[exp.Expr]:
    """The conjuncts of ``expr`` (parentheses removed)."""
    if expr is None:
        return []
    while isinstance(expr, exp.Paren):
        expr = expr.this
    if isinstance(expr, exp.And):
        return split_and(expr.this) + split_and(expr.expression)
    return [expr]


def from_clause(select: exp.Select) -> exp.From | None:
    """A ``SELECT``'s ``FROM`` (sqlglot 30 names the argument ``from_``)."""
    found = select.args.get("from") or select.args.get("from_")
    return found if isinstance(found, exp.From) else None


def conjuncts_for(node: exp.Table) -> tuple[list[exp.Expr], bool]:
    """The conjuncts that may be pushed into ``node``'s scan, and whether ``node`` is its
    ``SELECT``'s only source (so unqualified columns are its own)."""
    parent = node.parent
    select = parent.parent if isinstance(parent, exp.From | exp.Join) else None
    if not isinstance(select, exp.Select):
        return [], False
    joins: list[exp.Join] = list(select.args.get("joins") or [])
    only = not joins
    sides = {(j.side or "").upper() for j in joins}
    if sides & {"RIGHT", "FULL"}:
        return [], only
    if isinstance(parent, exp.Join):
        kind = (parent.kind or "").upper()
        if (parent.side or "").upper() == "LEFT" or kind in ("SEMI", "ANTI"):
            return split_and(parent.args.get("on")), only
    where = select.args.get("where")
    out = split_and(where.this if isinstance(where, exp.Where) else None)
    for j in joins:
        if not (j.side or "") and (j.kind or "").upper() not in ("SEMI", "ANTI"):
            out += split_and(j.args.get("on"))
    return out, only


# -- translation -------------------------------------------------------------------------------


def _number(text: str) -> tuple[Any, str]:
    """A numeric literal's value and kind: ``num`` (int or Decimal) or ``dbl`` (``1e3``)."""
    if any(c in text for c in "dDfFlLsSyY"):  # typed literals (1L, 1D, 1BD)
        raise _NoPush
    if "e" in text or "E" in text:
        try:
            value = float(text)
        except ValueError:
            raise _NoPush from None
        if not math.isfinite(value):
            raise _NoPush
        return value, "dbl"
    if "." in text:
        try:
            return Decimal(text), "num"
        except InvalidOperation:
            raise _NoPush from None
    return int(text), "num"


_CASTS = {
    exp.DataType.Type.DATE: "date",
    exp.DataType.Type.TIMESTAMP: "ts",
    exp.DataType.Type.TIMESTAMPTZ: "ts",  # sqlglot reads Spark's TIMESTAMP literal as this
    exp.DataType.Type.TIMESTAMPLTZ: "ts",
    exp.DataType.Type.TIMESTAMPNTZ: "ts_ntz",
}


def _literal(node: exp.Expr) -> tuple[Any, str]:
    """A literal's value and kind: ``num``, ``dbl``, ``str``, ``bool``, ``date``, ``ts``,
    ``ts_ntz``."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal):
        return (str(node.this), "str") if node.is_string else _number(str(node.this))
    if isinstance(node, exp.Neg):
        value, kind = _literal(node.this)
        if kind not in ("num", "dbl"):
            raise _NoPush
        return -value, kind
    if isinstance(node, exp.Boolean):
        return bool(node.this), "bool"
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        to = node.to.this if isinstance(node.to, exp.DataType) else None
        if node.this.is_string and to in _CASTS:
            return str(node.this.this), _CASTS[to]
        if not node.this.is_string and to == exp.DataType.Type.DOUBLE:  # 1.5D
            value, kind = _number(str(node.this.this))
            if kind == "num" and not _exact_as_double(value):
                raise _NoPush
            return float(value), "dbl"
    raise _NoPush


def _exact_as_double(value: int | Decimal) -> bool:
    """Whether Spark's double of this integer or decimal literal is Python's ``float``."""
    if isinstance(value, int):
        return abs(value) <= 2**53
    _, digits, exponent = value.as_tuple()
    return isinstance(exponent, int) and len(digits) <= 15 and -22 <= exponent <= 22


def literal_value(node: exp.Expr) -> Any:
    """The Python value of a literal (a number, string, boolean, or a typed date/timestamp
    literal's text); a :class:`ValidationError` for anything else."""
    try:
        return _literal(node)[0]
    except _NoPush:
        raise ValidationError(f"Not a literal: {node.sql(dialect='spark')}") from None


def _accepts(t: IcebergType, value: Any, kind: str, utc: bool) -> bool:
    if isinstance(t, IntegerType | LongType):
        return kind == "num" and isinstance(value, int)
    if isinstance(t, DecimalType):
        if kind != "num":
            return False
        if isinstance(value, int):
            return True
        exponent = value.as_tuple().exponent
        return isinstance(exponent, int) and -exponent <= t.scale
    if isinstance(t, StringType):
        return kind == "str"
    if isinstance(t, BooleanType):
        return kind == "bool"
    if isinstance(t, DateType):
        return kind in ("str", "date")
    if isinstance(t, TimestampType):
        return kind in ("str", "ts_ntz")
    if isinstance(t, TimestamptzType):
        return utc and kind in ("str", "ts")
    if isinstance(t, FloatType) and kind == "num" and isinstance(value, int):
        return abs(value) <= 2**24  # compared as a float by Spark: exact up to 2**24
    if isinstance(t, FloatType | DoubleType):
        return kind == "dbl" or (kind == "num" and _exact_as_double(value))
    return False


# -- float and double columns (see the module docstring) ---------------------------------------

_F32 = struct.Struct("<f")
_I32 = struct.Struct("<i")
_F32_MAX = 3.4028234663852886e38


def _to_f32(x: float) -> float:
    value: float = _F32.unpack(_F32.pack(x))[0]
    return value


def _next_f32(x: float, up: bool) -> float:
    """The float next to the float ``x``, towards +inf (``up``) or -inf."""
    if x == 0.0:
        tiny: float = _F32.unpack(_I32.pack(1))[0]
        return tiny if up else -tiny
    bits = _I32.unpack(_F32.pack(x))[0]
    bits += 1 if (x > 0) == up else -1
    value: float = _F32.unpack(_I32.pack(bits))[0]
    return value


def _f32_around(d: float) -> tuple[float, float]:
    """The largest float at or below ``d`` and the smallest float at or above it."""
    r = _to_f32(d)
    if r == d:
        return r, r
    return (r, _next_f32(r, True)) if r < d else (_next_f32(r, False), r)


def _plain(x: float) -> float:
    return 0.0 if x == 0.0 else x  # -0.0 is 0.0 to Spark and icepark alike


def _float_compare(f: NestedField, op: str, d: float) -> BooleanExpression:
    """Spark's ``x <op> d`` for a float or double column ``x``, as icepark's (same rows)."""
    c = col(f.name)
    if isinstance(f.field_type, FloatType):
        if abs(d) > _F32_MAX:
            raise _NoPush
        low, high = _f32_around(d)
        exact = low == high
        d = {">": low, "<=": low, ">=": high, "<": high}.get(op, d)
        if op == "=" and not exact:
            return AlwaysFalse()
        if op == "!=" and not exact:
            return c.not_null()
    d = _plain(d)
    if op == ">":
        return or_(c > d, c.is_nan())
    if op == ">=":
        return or_(c >= d, c.is_nan())
    return {"<": c < d, "<=": c <= d, "=": c == d, "!=": c != d}[op]


def _float_in(f: NestedField, values: list[float], negated: bool) -> BooleanExpression:
    if isinstance(f.field_type, FloatType):
        values = [v for v in values if abs(v) <= _F32_MAX and _to_f32(v) == v]
    values = [_plain(v) for v in values]
    c = col(f.name)
    if not values:
        return c.not_null() if negated else AlwaysFalse()
    return c.not_in(values) if negated else c.isin(values)


class _Translator:
    def __init__(
        self, fields: dict[str, NestedField], owns: Callable[[exp.Column], bool], utc: bool
    ) -> None:
        self.fields = fields
        self.owns = owns
        self.utc = utc

    def column(self, node: exp.Expr) -> NestedField:
        while isinstance(node, exp.Paren):
            node = node.this
        if not isinstance(node, exp.Column) or node.args.get("db") or not self.owns(node):
            raise _NoPush
        if not isinstance(node.this, exp.Identifier):
            raise _NoPush
        found = self.fields.get(node.this.name.lower())
        if found is None:
            raise _NoPush
        return found

    def value(self, f: NestedField, node: exp.Expr) -> Any:
        value, kind = _literal(node)
        if not _accepts(f.field_type, value, kind, self.utc):
            raise _NoPush
        if isinstance(f.field_type, FloatType | DoubleType):
            return float(value)  # Spark's double of the literal (exact: see _exact_as_double)
        return value

    def atom(self, f: NestedField, op: str, value: Any) -> BooleanExpression:
        """Spark's ``column <op> value`` as icepark's."""
        if isinstance(f.field_type, FloatType | DoubleType):
            return _float_compare(f, op, value)
        c = col(f.name)
        return {
            "=": lambda: c == value,
            "!=": lambda: c != value,
            ">": lambda: c > value,
            ">=": lambda: c >= value,
            "<": lambda: c < value,
            "<=": lambda: c <= value,
        }[op]()

    def compare(self, node: exp.Binary, negated: bool) -> BooleanExpression:
        ops = {exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
        flipped = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
        opposite = {"=": "!=", "!=": "=", ">": "<=", "<=": ">", "<": ">=", ">=": "<"}
        left, right, op = node.this, node.expression, ops[type(node)]
        try:
            f = self.column(left)
        except _NoPush:
            f = self.column(right)
            left, right = right, left
            op = flipped.get(op, op)
        if negated:  # Spark's orders are total (NaN above all): NOT x > v is x <= v
            op = opposite[op]
        return self.atom(f, op, self.value(f, right))

    def __call__(self, node: exp.Expr, negated: bool = False) -> BooleanExpression:
        """``node`` (``NOT node`` when ``negated``) as icepark's filter."""
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And | exp.Or):
            both = and_ if isinstance(node, exp.And) != negated else or_
            return both(self(node.this, negated), self(node.expression, negated))
        if isinstance(node, exp.Not):
            return self(node.this, not negated)
        if isinstance(node, exp.EQ | exp.NEQ | exp.GT | exp.GTE | exp.LT | exp.LTE):
            return self.compare(node, negated)
        if isinstance(node, exp.Is):
            return self.null_test(node, negated)
        if isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
                raise _NoPush
            f = self.column(node.this)
            values = [self.value(f, v) for v in node.expressions]
            if not values:
                raise _NoPush
            if isinstance(f.field_type, FloatType | DoubleType):
                return _float_in(f, values, negated)
            return col(f.name).not_in(values) if negated else col(f.name).isin(values)
        if isinstance(node, exp.Between):
            f = self.column(node.this)
            low = self.value(f, node.args["low"])
            high = self.value(f, node.args["high"])
            if negated:
                return or_(self.atom(f, "<", low), self.atom(f, ">", high))
            return and_(self.atom(f, ">=", low), self.atom(f, "<=", high))
        if isinstance(node, exp.Like) and not node.args.get("escape"):
            f = self.column(node.this)
            pattern, kind = _literal(node.expression)
            if kind != "str" or not isinstance(f.field_type, StringType):
                raise _NoPush
            prefix = pattern[:-1]
            if not pattern.endswith("%") or any(c in prefix for c in "%_\\"):
                raise _NoPush
            c = col(f.name)
            return c.not_starts_with(prefix) if negated else c.starts_with(prefix)
        raise _NoPush

    def null_test(self, node: exp.Is, negated: bool) -> BooleanExpression:
        if not isinstance(node.expression, exp.Null):
            raise _NoPush
        f = self.column(node.this)
        return col(f.name).not_null() if negated else col(f.name).is_null()


def translated(
    conjuncts: list[exp.Expr],
    schema: Schema,
    owns: Callable[[exp.Column], bool],
    utc: bool,
) -> list[tuple[exp.Expr, BooleanExpression]]:
    """The conjuncts that translate, each with its icepark filter (which keeps exactly the
    rows the conjunct keeps, see the module docstring)."""
    fields = {f.name.lower(): f for f in schema.fields}
    translate = _Translator(fields, owns, utc)
    out: list[tuple[exp.Expr, BooleanExpression]] = []
    for c in conjuncts:
        if c.find(exp.Subquery, exp.Select, exp.AggFunc, exp.Window) is not None:
            continue
        try:
            expr = translate(c)
            bind(schema, expr, True)
        except Exception:
            continue
        out.append((c, expr))
    return out


def to_filter(
    conjuncts: list[exp.Expr],
    schema: Schema,
    owns: Callable[[exp.Column], bool],
    utc: bool,
) -> tuple[BooleanExpression | None, list[str]]:
    """The icepark conjunction of the conjuncts that translate (None: none did) and their
    SQL text."""
    taken = translated(conjuncts, schema, owns, utc)
    texts = [c.sql(dialect="spark") for c, _ in taken]
    return (and_(*[e for _, e in taken]) if taken else None), texts
