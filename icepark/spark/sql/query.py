"""Queries: Spark runs the statement, each icepark table in it read by icepark's planner.

Flow (:func:`run_query`): the parsed query is walked for table names; each one
(:func:`~icepark.spark.sql.identifiers.resolve_name`) that is an icepark table is planned with
the query's own predicates on it (:mod:`icepark.spark.sql.pushdown`), so partitions and files
are pruned before Spark sees any, then read by :func:`icepark.spark.read.reader.read_tasks`
(the native path where it can) and put in the query as a DataFrame under the table's own
alias; a metadata table is read by
:func:`~icepark.spark.read.metadata_tables.read_metadata_table`; an Iceberg view is replaced
by its ``spark`` SQL (expanded the same way, in its default namespace); Spark's own names
stay. Spark then runs the rewritten SQL, the tables' DataFrames passed to it as DataFrame
arguments (:meth:`~icepark.spark.sql.context.SqlContext.sql`). Each scan is reported ("files
planned N of M") in the log and in ``EXPLAIN``'s output.

Time travel: ``FOR VERSION AS OF`` / ``VERSION AS OF`` a snapshot id or a branch or tag name,
``FOR TIMESTAMP AS OF`` / ``TIMESTAMP AS OF`` an expression Spark evaluates as a timestamp
(in the session's time zone, as Java's Spark does); for metadata tables where Java allows it.
A table with ``write.wap.enabled=true`` read without either, while the session's
``spark.wap.branch`` names one of its branches, is read at that branch (Java's
``SparkReadConf.branch()``: the write-audit-publish branch a session writes to is the one it
reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlglot
from pyspark.sql import DataFrame
from sqlglot import exp

from icepark.errors import ValidationError
from icepark.expressions import AlwaysTrue, and_
from icepark.spark.read.metadata_tables import read_metadata_table
from icepark.spark.read.planning import plan_scan
from icepark.spark.read.reader import read_tasks
from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.errors import UnsupportedSqlError
from icepark.spark.sql.identifiers import Resolved
from icepark.spark.sql.pushdown import conjuncts_for, translated
from icepark.spec import properties as P

__all__ = [
    "prepare_query",
    "run_query",
    "explain_query",
    "table_parts",
    "time_travel",
    "owned_columns",
    "session_is_utc",
    "TimeTravel",
    "WAP_BRANCH",
]

TimeTravel = tuple[int | None, int | None, str | None]  # snapshot id, as-of ms, ref

_MAX_VIEW_DEPTH = 32

WAP_BRANCH = "spark.wap.branch"  # Java's Spark session setting (SparkSQLProperties.WAP_BRANCH)


def table_parts(node: exp.Table) -> list[str]:
    """The parts of a table name, outermost first (``cat.db.t.files`` -> four parts)."""
    parts: list[str] = []
    for key in ("catalog", "db"):
        part = node.args.get(key)
        if isinstance(part, exp.Identifier):
            parts.append(part.name)
    this = node.this
    tail: list[str] = []
    while isinstance(this, exp.Dot):
        if isinstance(this.expression, exp.Identifier):
            tail.insert(0, this.expression.name)
        this = this.this
    if isinstance(this, exp.Identifier):
        parts.append(this.name)
    return parts + tail


def time_travel(ctx: SqlContext, version: exp.Expr | None, resolved: Resolved) -> TimeTravel:
    snapshot_id: int | None = None
    as_of: int | None = None
    ref = resolved.ref
    if version is None:
        return None, None, ref if ref is not None else _wap_branch(ctx, resolved)
    if ref is not None:
        raise ValidationError(
            f"Cannot time travel {resolved.name} at {resolved.ref_kind} {ref!r} and AS OF at once"
        )
    what = str(version.this).upper()
    value = version.expression
    if what == "VERSION":
        if isinstance(value, exp.Literal) and not value.is_string:
            snapshot_id = int(str(value.this))
        elif isinstance(value, exp.Literal):
            text = str(value.this)
            table = resolved.table
            if table is not None and text in table.metadata.refs:
                ref = text
            elif text.lstrip("-").isdigit():
                snapshot_id = int(text)
            else:
                raise ValidationError(f"Table {resolved.name} has no branch or tag {text!r}")
        else:
            raise UnsupportedSqlError(f"VERSION AS OF {value.sql('spark')}", ctx.statement)
    else:
        expr = value.sql(dialect="spark")
        row = ctx.spark.sql(f"SELECT unix_micros(CAST({expr} AS TIMESTAMP)) AS us").first()
        if row is None or row[0] is None:
            raise ValidationError(f"TIMESTAMP AS OF {expr} is no timestamp")
        as_of = int(row[0]) // 1000
    return snapshot_id, as_of, ref


def _wap_branch(ctx: SqlContext, resolved: Resolved) -> str | None:
    """The session's ``spark.wap.branch`` when the table enables WAP and has a ref of that
    name (Java checks the refs, not that it is a branch)."""
    table = resolved.table
    if resolved.kind != "table" or table is None:
        return None
    if not P.WRITE_AUDIT_PUBLISH_ENABLED.get(table.metadata.properties):
        return None  # no setting asked: on Spark Connect each is a round trip
    branch = ctx.spark.conf.get(WAP_BRANCH, None) or None
    return branch if branch in table.metadata.refs else None


def owned_columns(qualifier: str, only: bool) -> Any:
    """Whether a column belongs to the table read as ``qualifier`` (``only``: the query's only
    source, so unqualified columns are its own)."""

    def owns(column: exp.Column) -> bool:
        table = column.args.get("table")
        if table is None:
            return only
        return isinstance(table, exp.Identifier) and table.name.lower() == qualifier

    return owns


def session_is_utc(ctx: SqlContext) -> bool:
    zone = (ctx.spark.conf.get("spark.sql.session.timeZone") or "").upper()
    return zone in ("UTC", "Z", "GMT", "ETC/UTC", "+00:00")


def _table_frame(ctx: SqlContext, node: exp.Table, resolved: Resolved) -> DataFrame:
    table = resolved.table
    assert table is not None
    snapshot_id, as_of, ref = time_travel(ctx, node.args.get("version"), resolved)
    if resolved.kind == "metadata":
        assert resolved.metadata is not None
        return read_metadata_table(
            ctx.spark, table, resolved.metadata, snapshot_id=snapshot_id, as_of=as_of, ref=ref
        )
    scan = table.scan(None, None, snapshot_id, as_of, ref)
    conjuncts, only = conjuncts_for(node)
    owns = owned_columns(node.alias_or_name.lower(), only)
    pushed = translated(conjuncts, scan.schema, owns, session_is_utc(ctx))
    texts = [c.sql(dialect="spark") for c, _ in pushed]
    if pushed:
        scan = scan.filter(and_(*[f for _, f in pushed]))
    tasks = list(plan_scan(ctx.spark, scan))
    if only and pushed and all(isinstance(t.residual, AlwaysTrue) for t in tasks):
        # Every row of every planned file keeps the pushed conjuncts (decided by partition
        # values, and each pushed filter keeps exactly its conjunct's rows): Spark need not
        # read their columns to test them again, as ``ispark.read`` does not.
        for c, _ in pushed:
            c.replace(exp.true())
    snap = scan.snapshot
    summary = snap.summary if snap is not None else None
    total = int(summary.get("total-data-files", len(tasks))) if summary is not None else 0
    planned = len({t.file.file_path for t in tasks})
    pushed_text = " AND ".join(texts) if texts else "none"
    at = f" at snapshot {snap.snapshot_id}" if snap is not None else " (no snapshot)"
    ctx.note(
        f"icepark scan {resolved.name}{at}: filter pushed: {pushed_text}; "
        f"files planned {planned} of {total}"
    )
    return read_tasks(ctx.spark, scan, tasks)


def _strip_qualifiers(tree: exp.Expr, parts: Sequence[str]) -> None:
    """``db.t.col`` -> ``t.col`` for table ``db.t`` read without an alias."""
    if len(parts) < 2:
        return
    ns, name = parts[-2].lower(), parts[-1].lower()
    for column in tree.find_all(exp.Column):
        t, d = column.args.get("table"), column.args.get("db")
        if isinstance(t, exp.Identifier) and isinstance(d, exp.Identifier):
            if t.name.lower() == name and d.name.lower() == ns:
                column.set("db", None)
                column.set("catalog", None)


def _view_subquery(ctx: SqlContext, node: exp.Table, resolved: Resolved, depth: int) -> exp.Expr:
    if node.args.get("version") is not None:
        raise ValidationError(f"Cannot time travel view {resolved.name}")
    view = resolved.view
    try:
        text = view.sql("spark")
    except Exception as exc:
        raise UnsupportedSqlError(
            f"view {resolved.name} without a spark representation", ctx.statement
        ) from exc
    version = view.current_version
    namespace = tuple(getattr(version, "default_namespace", ()) or resolved.parts[:-1])
    try:
        inner = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError as exc:
        raise UnsupportedSqlError(
            f"view {resolved.name}'s SQL does not parse: {exc}", ctx.statement
        ) from exc
    expanded = prepare_query(ctx, inner, namespace=namespace, depth=depth + 1)
    columns = [exp.to_identifier(f.name, quoted=True) for f in view.schema.fields]
    alias = node.alias_or_name
    return exp.Subquery(
        this=expanded,
        alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True), columns=columns),
    )


def prepare_query(
    ctx: SqlContext,
    tree: exp.Expr,
    *,
    namespace: Sequence[str] = (),
    depth: int = 0,
) -> exp.Expr:
    """``tree`` with every icepark table and view replaced (see the module docstring)."""
    if depth > _MAX_VIEW_DEPTH:
        raise ValidationError("Views nest too deep (a view that reads itself?)")
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for node in list(tree.find_all(exp.Table)):
        if not isinstance(node.this, exp.Identifier | exp.Dot):
            continue
        parts = table_parts(node)
        if not parts or (len(parts) == 1 and parts[0].lower() in ctes):
            continue
        resolved = ctx.resolve(parts, namespace=namespace)
        if resolved.kind == "spark":
            continue
        if resolved.kind == "view":
            node.replace(_view_subquery(ctx, node, resolved, depth))
            continue
        alias = node.alias_or_name
        if not node.alias:
            _strip_qualifiers(tree, parts)
        df = _table_frame(ctx, node, resolved)
        view_name = ctx.register(df, resolved.parts[-1])
        node.replace(
            exp.Table(
                this=exp.to_identifier(view_name, quoted=True),
                alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)),
            )
        )
    return tree


def run_query(ctx: SqlContext, tree: exp.Expr) -> DataFrame:
    """The rows of a query (see the module docstring)."""
    prepared = prepare_query(ctx, tree)
    try:
        return ctx.sql(prepared.sql(dialect="spark"))
    finally:
        ctx.drop_views()


def explain_query(ctx: SqlContext, tree: exp.Expr, mode: str = "") -> DataFrame:
    """``EXPLAIN [mode] query``: icepark's scan report, then Spark's plan, in one ``plan``
    row as Java's Spark returns it."""
    from icepark.spark.sql.functions import with_iceberg_functions

    prepared = prepare_query(ctx, tree)
    try:
        text = with_iceberg_functions(ctx, prepared.sql(dialect="spark"))
        row = ctx.sql(f"EXPLAIN {mode} {text}").first()
    finally:
        ctx.drop_views()
    spark_plan = str(row[0]) if row is not None else ""
    text = "\n".join(["== icepark scans ==", *ctx.report, "", spark_plan])
    return ctx.spark.createDataFrame([(text,)], "plan string")
