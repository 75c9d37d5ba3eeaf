"""Writes: ``INSERT INTO/OVERWRITE``, ``DELETE``, ``UPDATE`` and ``MERGE INTO`` through the
existing operations (one path: :func:`icepark.spark.write.writer.write` and
:mod:`icepark.spark.write.row_level`).

- ``INSERT INTO [TABLE] t [(cols)] VALUES ... | query``: the rows (a query runs as
  :mod:`~icepark.spark.sql.query` runs it) matched to the table's columns by position (or to
  the listed columns, the others null), cast to the columns' types as Spark's store assignment
  does (a string is not cast to a number, date or boolean: an error naming the column);
  appended. ``INSERT OVERWRITE`` replaces the whole table, or with
  ``spark.sql.sources.partitionOverwriteMode=dynamic`` the partitions the rows fall in; a
  ``PARTITION (p = v, ...)`` clause gives those columns and replaces the rows where they hold.
- ``DELETE FROM t [WHERE c]`` / ``UPDATE t SET col = e, ... [WHERE c]``: the condition goes
  to the operation as an icepark filter when every conjunct translates exactly (so whole
  files are dropped from metadata, as Java's delete does), else as Spark SQL; a condition
  with subqueries (scalar, ``IN``, ``EXISTS``, correlated to ``t`` by its alias or name) as a
  query over the table's rows (:class:`~icepark.spark.write.row_level.RowsWhere`).
- ``MERGE INTO t USING s ON c WHEN ...``: every clause form, in order, as
  :class:`~icepark.spark.write.row_level.MergeClause` (qualifiers rewritten to ``t`` and
  ``s``).
- ``t`` may be ``db.t.branch_b`` (the write goes to branch ``b``). On a table with
  ``write.wap.enabled=true`` (Java ignores both settings otherwise), a write (insert, delete,
  update, merge) with ``spark.wap.id`` set is staged under that id as Java stages it, and one
  with ``spark.wap.branch`` set goes to that branch (created from the current snapshot when it
  does not exist), which queries of the table then read (:mod:`~icepark.spark.sql.query`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from icepark.errors import ValidationError
from icepark.expressions import BooleanExpression, and_, col
from icepark.spark.runtime import session_settings
from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.errors import UnsupportedSqlError
from icepark.spark.sql.identifiers import Resolved
from icepark.spark.sql.pushdown import literal_value, split_and, to_filter
from icepark.spark.sql.query import WAP_BRANCH, prepare_query, session_is_utc, table_parts
from icepark.spark.sql.script import Statement
from icepark.spark.types import to_spark_schema
from icepark.spec import properties as P
from icepark.spec.snapshots import MAIN_BRANCH

if TYPE_CHECKING:
    from icepark.spark.write.row_level import RowsWhere

__all__ = ["run_write"]

_WAP_ID = "spark.wap.id"  # Java's Spark session setting (SparkSQLProperties.WAP_ID)


def _target(ctx: SqlContext, node: exp.Expr) -> tuple[exp.Table, Resolved]:
    table = node.this if isinstance(node, exp.Schema) else node
    if not isinstance(table, exp.Table):
        raise UnsupportedSqlError(f"write target {node.sql('spark')}", ctx.statement)
    resolved = ctx.resolve(table_parts(table), views=False)
    return table, resolved


def _branch(resolved: Resolved) -> str:
    if resolved.ref_kind == "tag":
        raise ValidationError(f"Cannot write to tag {resolved.ref!r} of table {resolved.name}")
    return resolved.ref or MAIN_BRANCH


def _frame(ctx: SqlContext, query: exp.Expr) -> DataFrame:
    prepared = prepare_query(ctx, query)
    return ctx.sql(prepared.sql(dialect="spark"))


def run_write(ctx: SqlContext, stmt: Statement, tree: exp.Expr) -> DataFrame:
    target = tree.this
    table_node, resolved = _target(ctx, target)
    if resolved.kind == "spark":
        return ctx.spark.sql(stmt.text)  # Spark's own table or view
    if resolved.kind != "table":
        raise UnsupportedSqlError(f"writing to {resolved.kind} {resolved.name}", stmt.text)
    if isinstance(tree, exp.Insert):
        _insert(ctx, tree, table_node, resolved)
    elif isinstance(tree, exp.Delete):
        _delete(ctx, tree, table_node, resolved)
    elif isinstance(tree, exp.Update):
        _update(ctx, tree, table_node, resolved)
    else:
        assert isinstance(tree, exp.Merge)
        _merge(ctx, tree, table_node, resolved)
    return ctx.empty()


# -- insert ------------------------------------------------------------------------------------

_NOT_FROM_STRING = (
    T.NumericType,
    T.BooleanType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
    T.BinaryType,
)


def _cast(name: str, table: str, source: T.DataType, target: T.DataType, c: Column) -> Column:
    if source == target:
        return c
    bad = isinstance(source, T.StringType) and isinstance(target, _NOT_FROM_STRING)
    bad = bad or (isinstance(source, T.BooleanType) and isinstance(target, T.NumericType))
    bad = bad or (isinstance(source, T.NumericType) and isinstance(target, T.BooleanType))
    if bad:
        raise ValidationError(
            f"Cannot write incompatible data to table {table}: cannot safely cast "
            f"column {name!r} from {source.simpleString()} to {target.simpleString()}"
        )
    return c.cast(target)


def _aligned(
    df: DataFrame, resolved: Resolved, listed: list[str] | None, static: dict[str, Any]
) -> DataFrame:
    table = resolved.table
    assert table is not None
    schema = to_spark_schema(table.schema(), with_ids=False)
    fields = {f.name.lower(): f for f in schema.fields}
    if listed is None:
        listed = [f.name for f in schema.fields if f.name.lower() not in static]
    names = []
    for given in listed:
        found = fields.get(given.lower())
        if found is None:
            raise ValidationError(f"Cannot write to table {resolved.name}: no column {given!r}")
        names.append(found.name)
    if len(df.columns) != len(names):
        raise ValidationError(
            f"Cannot write to table {resolved.name}: the data has {len(df.columns)} "
            f"columns, the table expects {len(names)} ({', '.join(names)})"
        )
    # matched by position: the data's own names may repeat (SELECT id, CAST(id AS INT) ...)
    positional = [f"__icepark_c{i}" for i in range(len(df.columns))]
    types = [f.dataType for f in df.schema.fields]
    df = df.toDF(*positional)
    by_name = dict(zip(names, zip(positional, types, strict=True), strict=True))
    out = []
    for f in schema.fields:
        if f.name in by_name:
            column, data_type = by_name[f.name]
            value = _cast(f.name, resolved.name, data_type, f.dataType, F.col(column))
        elif f.name.lower() in static:
            value = F.lit(static[f.name.lower()]).cast(f.dataType)
        else:
            value = F.lit(None).cast(f.dataType)
        out.append(value.alias(f.name))
    return df.select(*out)


def _insert(ctx: SqlContext, tree: exp.Insert, node: exp.Table, resolved: Resolved) -> None:
    from icepark.spark.write.writer import write

    target = tree.this
    listed = [e.name for e in target.expressions] if isinstance(target, exp.Schema) else None
    static: dict[str, Any] = {}
    partition = node.args.get("partition")
    if isinstance(partition, exp.Partition):
        for item in partition.expressions:
            if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
                raise UnsupportedSqlError(
                    f"PARTITION clause {partition.sql('spark')} without values", ctx.statement
                )
            static[item.this.name.lower()] = literal_value(item.expression)
    source = tree.expression
    if source is None:
        raise UnsupportedSqlError("INSERT without VALUES or a query", ctx.statement)
    df = _aligned(_frame(ctx, source), resolved, listed, static)
    overwrite = bool(tree.args.get("overwrite"))
    mode = "append"
    row_filter: BooleanExpression | None = None
    if overwrite:
        dynamic = (
            str(ctx.spark.conf.get("spark.sql.sources.partitionOverwriteMode") or "").lower()
            == "dynamic"
        )
        if static:
            assert resolved.table is not None
            names = {f.name.lower(): f.name for f in resolved.table.schema().fields}
            row_filter = and_(*[col(names[k]) == v for k, v in static.items()])
            mode = "overwrite"
        else:
            mode = "overwrite-partitions" if dynamic else "overwrite"
    branch, wap_id = _write_ref(ctx, resolved)
    write(
        df,
        resolved.table,  # type: ignore[arg-type]
        mode,  # type: ignore[arg-type]
        row_filter,
        branch=branch,
        wap_id=wap_id,
    )


# -- delete and update -------------------------------------------------------------------------


def _unqualified(expr: exp.Expr, qualifiers: set[str]) -> exp.Expr:
    """``expr`` with column qualifiers naming the target removed."""
    out = expr.copy()
    for column in out.find_all(exp.Column):
        table = column.args.get("table")
        if isinstance(table, exp.Identifier) and table.name.lower() in qualifiers:
            column.set("table", None)
            column.set("db", None)
            column.set("catalog", None)
    return out


def _qualifiers(node: exp.Table) -> set[str]:
    parts = table_parts(node)
    return {node.alias_or_name.lower(), parts[-1].lower()}


def _rows_where(ctx: SqlContext, cond: exp.Expr, alias: str) -> RowsWhere:
    """A condition with subqueries, as Spark runs it: ``SELECT * FROM rows AS alias WHERE
    cond``, the subqueries' icepark tables read as in a query. The target's qualifier stays
    (a correlated subquery refers to the outer row by it)."""
    from icepark.spark.write.row_level import RowsWhere

    def select(rows: DataFrame) -> DataFrame:
        prepared = prepare_query(ctx, exp.select("*").where(cond.copy()))
        name = ctx.register(rows, "rows")
        prepared.set(
            "from_",
            exp.From(
                this=exp.Table(
                    this=exp.to_identifier(name, quoted=True),
                    alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)),
                )
            ),
        )
        return ctx.sql(prepared.sql(dialect="spark"))

    return RowsWhere(select)


def _condition(
    ctx: SqlContext, where: exp.Expr | None, resolved: Resolved, node: exp.Table
) -> BooleanExpression | Column | RowsWhere | None:
    if where is None:
        return None
    quals = _qualifiers(node)
    alias = node.alias_or_name
    cond = where.this if isinstance(where, exp.Where) else where
    if cond.find(exp.Subquery, exp.Select, exp.Exists) is not None:
        return _rows_where(ctx, cond, alias)
    cond = _unqualified(cond, quals)
    conjuncts = split_and(cond)
    assert resolved.table is not None
    utc = session_is_utc(ctx)
    expr, texts = to_filter(conjuncts, resolved.table.schema(), lambda c: True, utc)
    if expr is not None and len(texts) == len(conjuncts):
        return expr
    return F.expr(_over_target(ctx, cond.sql(dialect="spark"), resolved))


def _over_target(
    ctx: SqlContext, sql: str, resolved: Resolved, source: DataFrame | None = None
) -> str:
    """``sql`` over the target's columns (and the MERGE source's, as ``t`` and ``s``) with
    Iceberg's system functions in it computed (:mod:`icepark.spark.sql.functions`)."""
    if "system" not in sql.lower():
        return sql
    from icepark.spark.sql.functions import with_iceberg_functions_over

    assert resolved.table is not None
    schema = to_spark_schema(resolved.table.schema(), with_ids=False)
    target = ctx.spark.createDataFrame([], schema)
    sources = {"t": target, "s": source} if source is not None else {"t": target}
    return with_iceberg_functions_over(ctx, sql, sources)


def _write_ref(ctx: SqlContext, resolved: Resolved) -> tuple[str, str | None]:
    """The branch a write commits to and the WAP id it is staged under, as Java's
    ``SparkWriteConf.branch()``: on a table with ``write.wap.enabled=true``, the session's
    ``spark.wap.branch`` is the branch (created by the write when missing) and its
    ``spark.wap.id`` stages the write; both at once, or a WAP branch with a ``branch_`` name,
    is a :class:`ValidationError`. Without WAP enabled, Java ignores both settings."""
    branch = _branch(resolved)
    assert resolved.table is not None
    if not P.WRITE_AUDIT_PUBLISH_ENABLED.get(resolved.table.metadata.properties):
        return branch, None
    conf = session_settings(ctx.spark, [_WAP_ID, WAP_BRANCH])
    wap_id, wap_branch = conf[_WAP_ID] or None, conf[WAP_BRANCH] or None
    if wap_id is not None and wap_branch is not None:
        raise ValidationError(
            f"Cannot set both WAP ID and branch, but got ID [{wap_id}] and branch "
            f"[{wap_branch}] (table {resolved.name})"
        )
    if wap_branch is None:
        return branch, wap_id
    if resolved.ref is not None:
        raise ValidationError(
            f"Cannot write to both branch and WAP branch, but got branch [{resolved.ref}] and "
            f"WAP branch [{wap_branch}] (table {resolved.name})"
        )
    return wap_branch, None


def _delete(ctx: SqlContext, tree: exp.Delete, node: exp.Table, resolved: Resolved) -> None:
    from icepark.spark.write.row_level import delete

    where = _condition(ctx, tree.args.get("where"), resolved, node)
    assert resolved.table is not None
    branch, wap_id = _write_ref(ctx, resolved)
    delete(ctx.spark, resolved.table, where, branch=branch, wap_id=wap_id)


def _update(ctx: SqlContext, tree: exp.Update, node: exp.Table, resolved: Resolved) -> None:
    from icepark.spark.write.row_level import update

    quals = _qualifiers(node)
    values: dict[str, str | Column] = {}
    for item in tree.expressions:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise UnsupportedSqlError(f"UPDATE assignment {item.sql('spark')}", ctx.statement)
        value = _unqualified(item.expression, quals).sql(dialect="spark")
        values[item.this.name] = _over_target(ctx, value, resolved)
    where = _condition(ctx, tree.args.get("where"), resolved, node)
    assert resolved.table is not None
    branch, wap_id = _write_ref(ctx, resolved)
    update(
        ctx.spark,
        resolved.table,
        values,
        where,
        branch=branch,
        case_sensitive=False,
        wap_id=wap_id,
    )


# -- merge -------------------------------------------------------------------------------------


def _renamed(expr: exp.Expr, names: dict[str, str]) -> exp.Expr:
    out = expr.copy()
    for column in out.find_all(exp.Column):
        table = column.args.get("table")
        if isinstance(table, exp.Identifier) and table.name.lower() in names:
            column.set("table", exp.to_identifier(names[table.name.lower()]))
            column.set("db", None)
            column.set("catalog", None)
    return out


def _merge(ctx: SqlContext, tree: exp.Merge, node: exp.Table, resolved: Resolved) -> None:
    from icepark.spark.write.row_level import MergeClause, merge

    using = tree.args.get("using")
    if isinstance(using, exp.Table):
        source_alias = using.alias_or_name
        plain = using.copy()
        plain.set("alias", None)
        source = _frame(ctx, exp.select("*").from_(plain))
    elif isinstance(using, exp.Subquery):
        source_alias = using.alias_or_name
        source = _frame(ctx, using.this)
    else:
        raise UnsupportedSqlError("MERGE source other than a table or a query", ctx.statement)
    names = {node.alias_or_name.lower(): "t", source_alias.lower(): "s"}
    if not node.alias:
        names[table_parts(node)[-1].lower()] = "t"

    def sql(e: exp.Expr) -> str:
        return _over_target(ctx, _renamed(e, names).sql(dialect="spark"), resolved, source)

    clauses = []
    whens = tree.args.get("whens")
    for when in whens.expressions if whens is not None else []:
        matched = bool(when.args.get("matched"))
        by_source = bool(when.args.get("source"))
        match = "matched" if matched else ("not_matched_by_source" if by_source else "not_matched")
        cond = when.args.get("condition")
        condition = sql(cond) if cond is not None else None
        then = when.args.get("then")
        if isinstance(then, exp.Var) and str(then.this).upper() == "DELETE":
            clauses.append(MergeClause(match, "delete", condition))  # type: ignore[arg-type]
        elif isinstance(then, exp.Update):
            values: Any
            if len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star):
                values = "*"
            else:
                values = {e.this.name: sql(e.expression) for e in then.expressions}
            clauses.append(MergeClause(match, "update", condition, values))  # type: ignore[arg-type]
        elif isinstance(then, exp.Insert):
            if isinstance(then.this, exp.Star):
                values = "*"
            else:
                cols = [c.name for c in then.this.expressions]
                vals = [sql(v) for v in then.expression.expressions]
                if len(cols) != len(vals):
                    raise ValidationError(
                        f"Cannot merge into table {resolved.name}: INSERT lists {len(cols)} "
                        f"columns and {len(vals)} values"
                    )
                values = dict(zip(cols, vals, strict=True))
            clauses.append(MergeClause(match, "insert", condition, values))  # type: ignore[arg-type]
        else:
            raise UnsupportedSqlError(f"MERGE clause {when.sql('spark')}", ctx.statement)
    on = tree.args.get("on")
    if on is None:
        raise UnsupportedSqlError("MERGE without ON", ctx.statement)
    assert resolved.table is not None
    branch, wap_id = _write_ref(ctx, resolved)
    merge(
        ctx.spark,
        resolved.table,
        source,
        sql(on),
        clauses=clauses,
        branch=branch,
        case_sensitive=False,
        wap_id=wap_id,
    )
