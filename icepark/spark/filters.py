"""Row filters between Iceberg and Spark.

:func:`to_spark_column` turns an Iceberg filter, bound to a schema, into a Spark ``Column``
with the same rows selected (Spark then pushes it to Parquet row groups), with the semantics
of :mod:`icepark.arrow.expressions`: SQL's for nulls, and NaN matching no comparison but
``!=`` and ``not in``. Literals are
built so that no session time zone is involved: a timestamptz literal is an instant in
microseconds, a timestamp (without zone) a wall-clock string cast to ``timestamp_ntz``.

:func:`from_spark_filters` turns the filters Spark pushes to a Python data source into one
Iceberg expression, keeping only those whose meaning is the same in both (comparisons with
int, long, float, double, string, boolean, date and decimal literals, ``IN``, null tests,
``NOT`` and prefix tests on data columns); the others are left for Spark to evaluate.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from icepark.errors import UnsupportedOperationError
from icepark.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundLiteralPredicate,
    BoundPredicate,
    BoundSetPredicate,
    BoundUnaryPredicate,
    Not,
    Operation,
    Or,
    and_,
    bind,
    col,
    not_,
)
from icepark.spec.conversions import days_to_civil
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

__all__ = ["to_spark_column", "from_spark_filters", "quote_column"]


def quote_column(path: str) -> str:
    """A dotted field path with each part back-quoted for ``F.col``."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in path.split("."))


def to_spark_column(
    expr: BooleanExpression, schema: Schema, case_sensitive: bool = True
) -> Column | None:
    """The Spark column selecting the rows ``expr`` selects; None for ``AlwaysTrue``."""
    if isinstance(expr, AlwaysTrue):
        return None
    bound = expr if expr.is_bound else bind(schema, expr, case_sensitive)
    return _convert(bound)


def _convert(expr: Any) -> Column:
    if isinstance(expr, AlwaysTrue):
        return F.lit(True)
    if isinstance(expr, AlwaysFalse):
        return F.lit(False)
    if isinstance(expr, And):
        return _convert(expr.left) & _convert(expr.right)
    if isinstance(expr, Or):
        return _convert(expr.left) | _convert(expr.right)
    if isinstance(expr, Not):
        return ~_convert(expr.child)
    if isinstance(expr, BoundPredicate):
        return _predicate(expr)
    raise UnsupportedOperationError(f"Cannot convert {expr} to a Spark filter")


def _literal(t: IcebergType, value: Any) -> Column:
    if isinstance(t, TimestamptzType):
        return F.timestamp_micros(F.lit(int(value)))
    if isinstance(t, TimestampType):
        text = (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value))).isoformat(" ")
        return F.lit(text).cast("timestamp_ntz")
    if isinstance(t, DateType):
        y, m, d = days_to_civil(int(value))
        return F.lit(f"{y:04d}-{m:02d}-{d:02d}").cast("date")
    if isinstance(t, DecimalType):
        return F.lit(Decimal(value)).cast(f"decimal({t.precision},{t.scale})")
    if isinstance(t, FloatType):
        return F.lit(float(value)).cast("float")
    if isinstance(t, DoubleType):
        return F.lit(float(value)).cast("double")
    if isinstance(t, IntegerType):
        return F.lit(int(value)).cast("int")
    if isinstance(t, LongType):
        return F.lit(int(value)).cast("bigint")
    if isinstance(t, UUIDType):
        return F.lit(str(value))
    if isinstance(t, BinaryType | FixedType):
        return F.lit(bytearray(value))
    return F.lit(value)


_COMPARE: dict[Operation, Callable[[Column, Column], Column]] = {
    Operation.LT: lambda c, v: c < v,
    Operation.LT_EQ: lambda c, v: c <= v,
    Operation.GT: lambda c, v: c > v,
    Operation.GT_EQ: lambda c, v: c >= v,
    Operation.EQ: lambda c, v: c == v,
    Operation.NOT_EQ: lambda c, v: c != v,
    Operation.STARTS_WITH: lambda c, v: c.startswith(v),
    Operation.NOT_STARTS_WITH: lambda c, v: ~c.startswith(v),
}


def _predicate(p: BoundPredicate) -> Column:
    ref = p.term
    column = F.col(quote_column(ref.name))
    t = ref.type
    if isinstance(p, BoundUnaryPredicate):
        if p.op == Operation.IS_NULL:
            return column.isNull()
        if p.op == Operation.NOT_NULL:
            return column.isNotNull()
        if p.op == Operation.IS_NAN:
            return F.isnan(column)
        return ~F.isnan(column)
    if isinstance(p, BoundSetPredicate):
        values = [_literal(t, v) for v in sorted(p.literals, key=repr)]
        found = column.isin(*values)
        return found if p.op == Operation.IN else ~found
    if isinstance(p, BoundLiteralPredicate):
        result = _COMPARE[p.op](column, _literal(t, p.literal))
        if isinstance(t, FloatType | DoubleType) and p.op in (Operation.GT, Operation.GT_EQ):
            # Spark orders NaN above every value; in icepark NaN matches no comparison
            result = result & ~F.isnan(column)
        return result
    raise UnsupportedOperationError(f"Cannot convert {p} to a Spark filter")


# -- Spark data source filters -> Iceberg ----------------------------------------------------------

_PUSHABLE_VALUES = (bool, int, float, str, Decimal, dt.date)


def _value_ok(value: Any) -> bool:
    # datetimes carry Spark's session time zone semantics: leave them to Spark
    return isinstance(value, _PUSHABLE_VALUES) and not isinstance(value, dt.datetime)


def _name(attribute: Sequence[str], schema: Schema, metadata_names: set[str]) -> str | None:
    name = ".".join(attribute)
    if attribute and attribute[0] in metadata_names:
        return None
    try:
        found = schema.find_field(name)
    except Exception:
        return None
    return name if found.field_type.is_primitive else None


def _one(f: Any, schema: Schema, metadata_names: set[str]) -> BooleanExpression | None:
    from pyspark.sql import datasource as ds

    if isinstance(f, ds.Not):
        inner = _one(f.child, schema, metadata_names)
        return None if inner is None else not_(inner)
    name = _name(getattr(f, "attribute", ()), schema, metadata_names)
    if name is None:
        return None
    c = col(name)
    if isinstance(f, ds.IsNull):
        return c.is_null()
    if isinstance(f, ds.IsNotNull):
        return c.not_null()
    if isinstance(f, ds.In):
        values = list(f.value)
        if not values or not all(_value_ok(v) for v in values):
            return None
        return c.isin(values)
    value = getattr(f, "value", None)
    if not _value_ok(value):
        return None
    simple: dict[type, Callable[[Any], BooleanExpression]] = {
        ds.EqualTo: lambda v: c == v,
        ds.GreaterThan: lambda v: c > v,
        ds.GreaterThanOrEqual: lambda v: c >= v,
        ds.LessThan: lambda v: c < v,
        ds.LessThanOrEqual: lambda v: c <= v,
        ds.StringStartsWith: lambda v: c.starts_with(v),
    }
    make = simple.get(type(f))
    return None if make is None else make(value)


def from_spark_filters(
    filters: Sequence[Any], schema: Schema, metadata_names: set[str] | None = None
) -> tuple[BooleanExpression, list[Any]]:
    """The Iceberg conjunction of the filters it can take exactly, and the rest (for Spark).

    A filter is taken only if it binds to ``schema``; filters on metadata columns are left.
    """
    taken: list[BooleanExpression] = []
    rest: list[Any] = []
    for f in filters:
        try:
            expr = _one(f, schema, metadata_names or set())
            if expr is not None:
                bind(schema, expr, True)
        except Exception:
            expr = None
        if expr is None:
            rest.append(f)
        else:
            taken.append(expr)
    return (and_(*taken) if taken else AlwaysTrue()), rest
