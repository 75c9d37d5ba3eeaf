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
only when the session's zone is UTC, as icepark reads zone-less literals there). Floating-point
columns are left to Spark (NaN orders differently). Anything else is not pushed.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlglot import exp

from icepark.errors import ValidationError
from icepark.expressions import BooleanExpression, and_, bind, col, not_, or_
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)

__all__ = ["conjuncts_for", "from_clause", "to_filter", "split_and", "literal_value"]


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


def _number(text: str) -> Any:
    if any(c in text for c in "eEdDfFlLsSyY"):  # doubles and typed literals (1L, 1D, 1BD)
        raise _NoPush
    if "." in text:
        try:
            return Decimal(text)
        except InvalidOperation:
            raise _NoPush from None
    return int(text)


def _literal(node: exp.Expr) -> tuple[Any, str]:
    """A literal's value and kind: ``num``, ``str``, ``bool``, ``date``, ``ts``, ``ts_ntz``."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal):
        return (str(node.this), "str") if node.is_string else (_number(str(node.this)), "num")
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return -_number(str(node.this.this)), "num"
    if isinstance(node, exp.Boolean):
        return bool(node.this), "bool"
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        to = node.to.this if isinstance(node.to, exp.DataType) else None
        kinds = {
            exp.DataType.Type.DATE: "date",
            exp.DataType.Type.TIMESTAMP: "ts",
            exp.DataType.Type.TIMESTAMPLTZ: "ts",
            exp.DataType.Type.TIMESTAMPNTZ: "ts_ntz",
        }
        if to in kinds:
            return str(node.this.this), kinds[to]
    raise _NoPush


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
    return False


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
        return value

    def compare(self, node: exp.Binary) -> BooleanExpression:
        ops: dict[type, Callable[[Any, Any], BooleanExpression]] = {
            exp.EQ: lambda c, v: c == v,
            exp.NEQ: lambda c, v: c != v,
            exp.GT: lambda c, v: c > v,
            exp.GTE: lambda c, v: c >= v,
            exp.LT: lambda c, v: c < v,
            exp.LTE: lambda c, v: c <= v,
        }
        flipped = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE}
        left, right, kind = node.this, node.expression, type(node)
        try:
            f = self.column(left)
        except _NoPush:
            f = self.column(right)
            left, right = right, left
            kind = flipped.get(kind, kind)
        return ops[kind](col(f.name), self.value(f, right))

    def __call__(self, node: exp.Expr) -> BooleanExpression:
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And):
            return and_(self(node.this), self(node.expression))
        if isinstance(node, exp.Or):
            return or_(self(node.this), self(node.expression))
        if isinstance(node, exp.Not):
            inner = node.this
            while isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Is):
                return self.null_test(inner, negated=True)
            return not_(self(inner))
        if isinstance(node, exp.EQ | exp.NEQ | exp.GT | exp.GTE | exp.LT | exp.LTE):
            return self.compare(node)
        if isinstance(node, exp.Is):
            return self.null_test(node, negated=False)
        if isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
                raise _NoPush
            f = self.column(node.this)
            values = [self.value(f, v) for v in node.expressions]
            if not values:
                raise _NoPush
            return col(f.name).isin(values)
        if isinstance(node, exp.Between):
            f = self.column(node.this)
            low = self.value(f, node.args["low"])
            high = self.value(f, node.args["high"])
            return and_(col(f.name) >= low, col(f.name) <= high)
        if isinstance(node, exp.Like) and not node.args.get("escape"):
            f = self.column(node.this)
            pattern, kind = _literal(node.expression)
            if kind != "str" or not isinstance(f.field_type, StringType):
                raise _NoPush
            prefix = pattern[:-1]
            if not pattern.endswith("%") or any(c in prefix for c in "%_\\"):
                raise _NoPush
            return col(f.name).starts_with(prefix)
        raise _NoPush

    def null_test(self, node: exp.Is, negated: bool) -> BooleanExpression:
        if not isinstance(node.expression, exp.Null):
            raise _NoPush
        f = self.column(node.this)
        return col(f.name).not_null() if negated else col(f.name).is_null()


def to_filter(
    conjuncts: list[exp.Expr],
    schema: Schema,
    owns: Callable[[exp.Column], bool],
    utc: bool,
) -> tuple[BooleanExpression | None, list[str]]:
    """The icepark conjunction of the conjuncts that translate (None: none did) and their
    SQL text."""
    fields = {f.name.lower(): f for f in schema.fields}
    translate = _Translator(fields, owns, utc)
    taken: list[BooleanExpression] = []
    texts: list[str] = []
    for c in conjuncts:
        if c.find(exp.Subquery, exp.Select, exp.AggFunc, exp.Window) is not None:
            continue
        try:
            expr = translate(c)
            bind(schema, expr, True)
        except Exception:
            continue
        taken.append(expr)
        texts.append(c.sql(dialect="spark"))
    return (and_(*taken) if taken else None), texts
