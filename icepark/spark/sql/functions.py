"""Iceberg's Spark SQL functions in the ``system`` namespace, as Java's Spark resolves them
(``system.bucket(16, id)``, or ``<catalog>.system.bucket(16, id)``):

=============================  ==========================================================
``system.iceberg_version()``   ``'icepark <version>'`` (Java's gives its Iceberg library's
                               version, e.g. ``1.10.2``; icepark names itself, honestly)
``system.years(v)``            int: years from 1970 of a date or timestamp
``system.months(v)``           int: months from 1970-01
``system.days(v)``             date: the day of a date or timestamp
``system.hours(v)``            int: hours from 1970-01-01T00:00 of a timestamp
``system.bucket(n, v)``        int: Iceberg's ``bucket[n]`` of a tinyint, smallint, int,
                               bigint, date, timestamp (with or without zone), decimal,
                               string or binary
``system.truncate(w, v)``      ``truncate[w]`` of a tinyint, smallint, int, bigint,
                               decimal, string or binary, of ``v``'s own type
=============================  ==========================================================

A timestamp (with the session's zone) is Iceberg's ``timestamptz``: its day and hour are
UTC's whatever the session's zone, as in Java; a ``timestamp_ntz`` is Iceberg's ``timestamp``.
``n`` and ``w`` are positive constants (Java also takes a column there).

How: Spark would look ``system.days`` up as a function of Spark's session catalog, which has
none; :func:`with_iceberg_functions` replaces each call in a statement's SQL before Spark
sees it, by Spark's own functions where they compute Iceberg's values
(:func:`icepark.spark.transforms.transform_sql`: years, months, days, hours, truncate of
numbers, strings and binary), else by icepark's Arrow implementation registered as a
temporary function of the session (:func:`icepark.spark.transforms.transform_function`:
bucket, truncate of decimals). Which one depends on the argument's Spark type, which Spark's
analyser gives: each ``SELECT`` holding calls is asked for its arguments' types once
(``SELECT <arguments> FROM <the same FROM and joins>``, analysed only), innermost calls
first. A call that is a ``SELECT``'s output column keeps its own text as its name
(``system.bucket(16, id)``; Java's Spark 3.5 names it ``staticinvoke(...)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import sqlglot
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from sqlglot import exp

from icepark.arrow.transforms import apply_transform
from icepark.errors import InvalidTransformError
from icepark.spark.sql.errors import SqlAnalysisError, UnsupportedSqlError
from icepark.spark.transforms import transform_function, transform_sql
from icepark.spark.types import to_spark_type
from icepark.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
)
from icepark.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

if TYPE_CHECKING:
    from icepark.spark.sql.context import SqlContext

__all__ = [
    "with_iceberg_functions",
    "with_iceberg_functions_over",
    "iceberg_version",
    "FUNCTIONS",
]

#: Java's functions of the ``system`` namespace and the number of arguments each takes
FUNCTIONS = {
    "iceberg_version": 0,
    "years": 1,
    "months": 1,
    "days": 1,
    "hours": 1,
    "bucket": 2,
    "truncate": 2,
}
_TIME = {"years": YearTransform(), "months": MonthTransform(), "days": DayTransform()}
_WIDTH_TYPES = (T.ByteType, T.ShortType, T.IntegerType)
_SMALL_INTS = (T.ByteType, T.ShortType)


def iceberg_version() -> str:
    """What ``system.iceberg_version()`` returns: ``'icepark <version>'``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"icepark {version('icepark')}"
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "icepark (unknown version)"


def _function_name(node: exp.Expr, catalog_name: str) -> str | None:
    """The function's name when ``node`` is a call of one of Iceberg's system functions
    (``system.f(...)`` or ``<catalog>.system.f(...)``), else None."""
    if not isinstance(node, exp.Dot) or not isinstance(node.expression, exp.Func):
        return None
    func = node.expression
    name = (func.name if isinstance(func, exp.Anonymous) else func.sql_name()).lower()
    if name not in FUNCTIONS:
        return None
    qualifier = node.this
    if isinstance(qualifier, exp.Identifier) and qualifier.name.lower() == "system":
        return name
    if (
        isinstance(qualifier, exp.Dot)
        and isinstance(qualifier.this, exp.Identifier)
        and isinstance(qualifier.expression, exp.Identifier)
        and qualifier.expression.name.lower() == "system"
        and catalog_name
        and qualifier.this.name.lower() == catalog_name.lower()
    ):
        return name
    return None


def _arguments(node: exp.Dot) -> list[exp.Expr]:
    func = node.expression
    if isinstance(func, exp.Anonymous):
        return list(func.expressions)
    return [v for v in func.args.values() if isinstance(v, exp.Expr)]


def _calls(tree: exp.Expr, catalog_name: str) -> list[tuple[exp.Dot, str]]:
    return [
        (node, name)
        for node in tree.find_all(exp.Dot)
        if (name := _function_name(node, catalog_name)) is not None
    ]


def with_iceberg_functions(ctx: SqlContext, text: str) -> str:
    """``text`` (a statement's SQL, Spark's dialect) with every call of Iceberg's system
    functions replaced (see the module docstring); ``text`` itself when it has none."""
    if "system" not in text.lower() or text.lstrip()[:7].upper() == "EXPLAIN":
        return text
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError:
        return text  # not sqlglot's (EXPLAIN ...): Spark says what is wrong with it
    if tree is None or not _calls(tree, ctx.catalog_name):
        return text
    return _rewrite(ctx, tree).sql(dialect="spark")


def with_iceberg_functions_over(ctx: SqlContext, sql: str, sources: dict[str, DataFrame]) -> str:
    """An expression's SQL (a DML statement's condition or value, over the columns of
    ``sources``: DataFrames by the alias the expression names them by) with every call of
    Iceberg's system functions replaced, as :func:`with_iceberg_functions` does."""
    if "system" not in sql.lower():
        return sql
    try:
        expression = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.SqlglotError:
        return sql
    if not _calls(expression, ctx.catalog_name):
        return sql
    names = {alias: ctx.register(df, alias) for alias, df in sources.items()}
    try:
        tables = [
            exp.Table(
                this=exp.to_identifier(name, quoted=True),
                alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)),
            )
            for alias, name in names.items()
        ]
        select = exp.Select(expressions=[exp.Paren(this=expression)])
        if tables:
            select.set("from_", exp.From(this=tables[0]))
            select.set("joins", [exp.Join(this=t, kind="CROSS") for t in tables[1:]])
        rewritten = _rewrite(ctx, select)
        assert isinstance(rewritten, exp.Select)
        return str(rewritten.expressions[0].sql(dialect="spark"))
    finally:
        for name in names.values():
            ctx.frames.pop(name, None)


def _rewrite(ctx: SqlContext, tree: exp.Expr) -> exp.Expr:
    catalog = ctx.catalog_name
    names = {
        id(node): node.sql(dialect="spark")
        for node, _ in _calls(tree, catalog)
        if isinstance(node.parent, exp.Select) and node.arg_key == "expressions"
    }
    while True:
        calls = _calls(tree, catalog)
        if not calls:
            return tree
        # calls over the same sources: one analysis
        groups: dict[str, list[tuple[exp.Dot, str]]] = {}
        probes: dict[str, exp.Select] = {}
        for node, name in calls:
            if any(_calls(a, catalog) for a in _arguments(node)):
                continue  # its arguments' calls first
            probe = _probe(node)
            if _calls(probe, catalog):
                continue  # the calls its sources hold first
            key = probe.sql(dialect="spark")
            groups.setdefault(key, []).append((node, name))
            probes.setdefault(key, probe)
        assert groups, "a call of Iceberg's functions that no other call waits on"
        for key, group in groups.items():
            types = _argument_types(ctx, probes[key], [node for node, _ in group])
            for (node, name), arg_types in zip(group, types, strict=True):
                new = _replacement(ctx, node, name, arg_types)
                if id(node) in names:
                    new = exp.alias_(new, names[id(node)], quoted=True)
                node.replace(new)


def _probe(node: exp.Dot) -> exp.Select:
    """An empty ``SELECT`` over the sources a call's arguments may name: the ``FROM``, joins
    and visible ``WITH`` of the ``SELECT`` holding it; no source when its arguments name no
    column (constants and aggregates of them)."""
    probe = exp.Select()
    if not any(a.find(exp.Column, exp.Var) for a in _arguments(node)):
        return probe  # (a Var is an inner call's replacement, which may name columns)
    scope = node.find_ancestor(exp.Select)
    if not isinstance(scope, exp.Select):
        return probe
    sources = [scope.args.get("from_"), *(scope.args.get("joins") or [])]
    if any(s is not None and node.find_ancestor(type(s)) is s for s in sources):
        return probe  # in the FROM itself (VALUES): no column of it to name
    for key in ("from_", "joins"):
        value = scope.args.get(key)
        if isinstance(value, list):
            probe.set(key, [v.copy() for v in value])
        elif value is not None:
            probe.set(key, value.copy())
    ctes: list[exp.Expr] = []
    chain = _ancestors(scope)
    for ancestor in reversed(chain):
        with_ = ancestor.args.get("with_")
        if not isinstance(with_, exp.With):
            continue
        for cte in with_.expressions:
            if any(cte is a for a in chain):
                break  # the call is in this one: only the ones before it are visible
            ctes.append(cte.copy())
    if ctes:
        probe.set("with_", exp.With(expressions=ctes))
    return probe


def _argument_types(
    ctx: SqlContext, probe: exp.Select, calls: Sequence[exp.Dot]
) -> list[list[T.DataType]]:
    """The Spark types of each call's arguments, in one analysis over ``probe``'s sources."""
    items: list[exp.Expr] = []
    for node in calls:
        items += _arguments(node)
    if not items:
        return [[] for _ in calls]
    probe = probe.copy()
    probe.set("expressions", [a.copy().as_(f"a{i}", quoted=True) for i, a in enumerate(items)])
    from pyspark.errors import AnalysisException

    try:
        schema = ctx.analyse(probe.sql(dialect="spark"))
    except AnalysisException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise SqlAnalysisError(
            f"Cannot type the arguments of {calls[0].sql(dialect='spark')}: {first}",
            ctx.statement,
        ) from exc
    types = [f.dataType for f in schema.fields]
    out: list[list[T.DataType]] = []
    for node in calls:
        count = len(_arguments(node))
        out.append(types[:count])
        types = types[count:]
    return out


def _ancestors(node: exp.Expr) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    current: exp.Expr | None = node
    while current is not None:
        out.append(current)
        current = current.parent
    return out


def _input_error(ctx: SqlContext, name: str, types: Sequence[T.DataType], expected: str) -> None:
    shown = ", ".join(t.simpleString() for t in types)
    raise SqlAnalysisError(
        f"Function '{name}' cannot process input: ({shown}): {expected}", ctx.statement
    )


def _source_type(spark_type: T.DataType) -> IcebergType | None:
    """The Iceberg type of a function argument of this Spark type (Spark's timestamp is
    Iceberg's timestamptz, its timestamp_ntz Iceberg's timestamp)."""
    if isinstance(spark_type, T.ByteType | T.ShortType | T.IntegerType):
        return IntegerType()
    if isinstance(spark_type, T.LongType):
        return LongType()
    if isinstance(spark_type, T.DateType):
        return DateType()
    if isinstance(spark_type, T.TimestampType):
        return TimestamptzType()
    if isinstance(spark_type, T.TimestampNTZType):
        return TimestampType()
    if isinstance(spark_type, T.DecimalType):
        return DecimalType(spark_type.precision, spark_type.scale)
    if isinstance(spark_type, T.StringType | T.CharType | T.VarcharType):
        return StringType()
    if isinstance(spark_type, T.BinaryType):
        return BinaryType()
    return None


def _constant(ctx: SqlContext, node: exp.Dot, name: str, arg: exp.Expr) -> int:
    """The value of a bucket count or truncation width: an integer constant."""
    value: Any = None
    if isinstance(arg, exp.Literal) and not arg.is_string and str(arg.this).isdigit():
        value = int(str(arg.this))
    elif arg.find(exp.Column, exp.Subquery, exp.Select) is None:
        row = ctx.spark.sql(f"SELECT {arg.sql(dialect='spark')}").first()
        value = row[0] if row is not None else None
    else:
        raise UnsupportedSqlError(
            f"{node.sql(dialect='spark')}: a {'bucket count' if name == 'bucket' else 'width'} "
            "that is not a constant",
            ctx.statement,
            "write a positive integer",
        )
    if value is None or int(value) <= 0:
        what = "number of buckets" if name == "bucket" else "truncation width"
        raise SqlAnalysisError(
            f"Function '{name}': the {what} must be a positive integer, not {value}",
            ctx.statement,
        )
    return int(value)


def _replacement(ctx: SqlContext, node: exp.Dot, name: str, types: list[T.DataType]) -> exp.Expr:
    args = _arguments(node)
    if len(args) != FUNCTIONS[name]:
        raise SqlAnalysisError(
            f"Function '{name}' takes {FUNCTIONS[name]} argument(s), not {len(args)}: "
            f"{node.sql(dialect='spark')}",
            ctx.statement,
        )
    if name == "iceberg_version":
        return exp.Literal.string(iceberg_version())
    value = args[-1]
    source = _source_type(types[-1])
    if name in ("years", "months", "days", "hours"):
        hours = name == "hours"
        ok = (
            (T.TimestampType, T.TimestampNTZType)
            if hours
            else (T.DateType, T.TimestampType, T.TimestampNTZType)
        )
        if source is None or not isinstance(types[0], ok):
            shown = types[0].simpleString()
            kinds = "timestamp" if hours else "date or timestamp"
            _input_error(ctx, name, types, f"Expected value to be {kinds}: {shown}.")
        assert source is not None
        transform: Transform = HourTransform() if hours else _TIME[name]
        sql = transform_sql(transform, source, value.sql(dialect="spark"))
        assert sql is not None
        if name == "days":
            sql = f"date_from_unix_date({sql})"
        return _parse(sql)
    if not isinstance(types[0], _WIDTH_TYPES):
        expected = (
            "Expected number of buckets to be tinyint, shortint or int."
            if name == "bucket"
            else "Expected truncation width to be tinyint, shortint or int."
        )
        _input_error(ctx, name, types, expected)
    width = _constant(ctx, node, name, args[0])
    if name == "bucket":
        if source is None:
            _input_error(
                ctx,
                name,
                types,
                "Expected column to be date, tinyint, smallint, int, bigint, decimal, "
                "timestamp, string, or binary.",
            )
        assert source is not None
        return _python_call(ctx, BucketTransform(width), source, value)
    truncatable = (IntegerType, LongType, DecimalType, StringType, BinaryType)
    if not isinstance(source, truncatable):
        _input_error(
            ctx,
            name,
            types,
            "Expected truncation col to be tinyint, shortint, int, bigint, decimal, string, "
            "or binary.",
        )
    assert source is not None
    try:
        truncate = TruncateTransform(width)
    except InvalidTransformError as exc:
        raise SqlAnalysisError(str(exc), ctx.statement) from exc
    sql = transform_sql(truncate, source, value.sql(dialect="spark"))
    if sql is None:
        return _python_call(ctx, truncate, source, value)
    if isinstance(types[-1], _SMALL_INTS):  # Java keeps tinyint and smallint
        sql = f"CAST({sql} AS {types[-1].simpleString().upper()})"
    return _parse(sql)


def _python_call(
    ctx: SqlContext, transform: Transform, source: IcebergType, value: exp.Expr
) -> exp.Expr:
    """A call of the transform's Python function; for a constant argument, its result (Spark
    cannot evaluate a Python function in an inline table: ``VALUES (system.bucket(4, 1))``)."""
    if value.find(exp.Column, exp.Var, exp.Subquery, exp.Select, exp.AggFunc) is None:
        arrow = ctx.spark.sql(f"SELECT {value.sql(dialect='spark')} AS v").toArrow()
        result = apply_transform(transform, source, arrow.column(0).combine_chunks())
        got = result[0].as_py()
        spark_type = to_spark_type(transform.result_type(source), with_ids=False)
        shown = "NULL" if got is None else f"'{got}'"
        return exp.Var(this=f"CAST({shown} AS {spark_type.simpleString().upper()})")
    try:
        function = transform_function(ctx.spark, transform, source)
    except InvalidTransformError as exc:
        raise SqlAnalysisError(str(exc), ctx.statement) from exc
    return exp.Anonymous(this=function, expressions=[value.copy()])


def _parse(sql: str) -> exp.Expr:
    """Spark SQL kept as it is written (sqlglot would rewrite ``unix_date`` as a
    ``datediff`` of another type)."""
    return exp.Var(this=f"({sql})")
