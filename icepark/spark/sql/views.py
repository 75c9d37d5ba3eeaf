"""Iceberg views through SQL, stored with the catalog's view operations
(:mod:`icepark.catalog.views`) so that Java's Spark sees them.

``CREATE [OR REPLACE] VIEW [IF NOT EXISTS] v [(col [COMMENT c], ...)] [COMMENT c]
[TBLPROPERTIES (...)] AS query``: the query's result schema comes from Spark analysing it
(icepark tables read as in :mod:`~icepark.spark.sql.query`, nothing is run), the columns
renamed as listed; the stored ``spark`` SQL is the query, with the view's namespace as its
default namespace and this catalog as its default catalog. ``ALTER VIEW v SET|UNSET
TBLPROPERTIES``, ``DROP VIEW [IF EXISTS]``, ``DESCRIBE [EXTENDED] v``, ``SHOW TBLPROPERTIES v``
and ``SHOW CREATE TABLE v`` (:mod:`~icepark.spark.sql.view_show`). The stored properties are
Java's: the engine (``create_engine_version``, ``engine_version``) and the query's own column
names (``spark.query-column-names``) besides the given ones; a ``location`` given is the view's
location. Selecting from a view expands it
(:func:`~icepark.spark.sql.query.prepare_query`). A catalog that cannot hold views (the
file-system catalog, like Java's Hadoop catalog) raises its own error on ``CREATE VIEW``; it
holds no view to drop (``DROP VIEW IF EXISTS`` does nothing, ``DROP VIEW`` raises
``NoSuchViewError``) or show, as in Java.
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T
from sqlglot import exp

from icepark.errors import NoSuchViewError, ValidationError
from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.errors import UnsupportedSqlError
from icepark.spark.sql.query import prepare_query, table_parts
from icepark.spark.sql.script import Statement
from icepark.spark.sql.view_show import QUERY_COLUMN_NAMES, describe_view
from icepark.spark.types import iceberg_schema_from_spark

__all__ = ["run_view", "alter_view"]


def _ident(ctx: SqlContext, node: exp.Expr) -> tuple[str, ...]:
    table = node.this if isinstance(node, exp.Schema) else node
    if not isinstance(table, exp.Table):
        raise UnsupportedSqlError("a view statement without a view name", ctx.statement)
    ident = ctx.identifier(table_parts(table))
    if ident is None:
        raise UnsupportedSqlError("views of Spark's session catalog", ctx.statement)
    return ident


def run_view(ctx: SqlContext, stmt: Statement, tree: exp.Expr) -> DataFrame:
    if isinstance(tree, exp.Create):
        return _create_view(ctx, tree)
    if isinstance(tree, exp.Drop):
        for node in tree.args.get("tables") or [tree.this]:
            parts = table_parts(node) if isinstance(node, exp.Table) else []
            if len(parts) == 1:  # a temporary view: Spark's
                if not ctx.spark.catalog.dropTempView(parts[0]) and not tree.args.get("exists"):
                    raise NoSuchViewError(f"View does not exist: {parts[0]}")
                continue
            ident = _ident(ctx, node)
            # a catalog that cannot hold views holds none (Java's Hadoop catalog: the same)
            exists = ctx.catalog.supports_views and ctx.catalog.view_exists(ident)
            if not exists and tree.args.get("exists"):
                continue
            if not exists:
                raise NoSuchViewError(f"View does not exist: {'.'.join(ident)}")
            ctx.catalog.drop_view(ident)
        return ctx.empty()
    if isinstance(tree, exp.Describe):
        view = ctx.catalog.load_view(_ident(ctx, tree.this))
        extended = str(tree.args.get("style") or "").upper() == "EXTENDED"
        return describe_view(ctx, view, extended)
    raise UnsupportedSqlError(f"view statement {type(tree).__name__}", stmt.text)


def _temporary(tree: exp.Create) -> bool:
    props = tree.args.get("properties")
    items = props.expressions if isinstance(props, exp.Properties) else []
    return any(isinstance(p, exp.TemporaryProperty) for p in items)


def _create_temporary_view(ctx: SqlContext, tree: exp.Create) -> DataFrame:
    """``CREATE [OR REPLACE] TEMPORARY VIEW v AS query``: Spark's own temporary view over
    the query's DataFrame (icepark tables in it read as they are now)."""
    node = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    query = tree.args.get("expression")
    if not isinstance(node, exp.Table) or not isinstance(query, exp.Query):
        raise UnsupportedSqlError("CREATE TEMPORARY VIEW without a name and a query")
    name = table_parts(node)[-1]
    prepared = prepare_query(ctx, query)
    df = ctx.sql(prepared.sql(dialect="spark"))
    if isinstance(tree.this, exp.Schema):
        df = df.toDF(*[c.name for c in tree.this.expressions])
    if tree.args.get("replace"):
        df.createOrReplaceTempView(name)
    elif tree.args.get("exists"):
        if not ctx.spark.catalog.tableExists(name):
            df.createTempView(name)
    else:
        df.createTempView(name)
    return ctx.empty()


def _create_view(ctx: SqlContext, tree: exp.Create) -> DataFrame:
    if _temporary(tree):
        return _create_temporary_view(ctx, tree)
    ident = _ident(ctx, tree.this)
    query = tree.args.get("expression")
    if not isinstance(query, exp.Query):
        raise UnsupportedSqlError("CREATE VIEW without AS query", ctx.statement)
    replace = bool(tree.args.get("replace"))
    if tree.args.get("exists") and ctx.catalog.view_exists(ident):
        return ctx.empty()
    if ctx.catalog.table_exists(ident):
        raise ValidationError(f"Cannot create view {'.'.join(ident)}: a table has that name")
    text = query.sql(dialect="spark")
    try:
        prepared = prepare_query(ctx, query.copy())
        schema = ctx.sql(prepared.sql(dialect="spark")).schema
    finally:
        ctx.drop_views()
    columns: list[tuple[str, str | None]] = []
    if isinstance(tree.this, exp.Schema):
        for c in tree.this.expressions:
            doc = None
            for constraint in c.args.get("constraints") or []:
                inner = constraint.args.get("kind")
                if isinstance(inner, exp.CommentColumnConstraint):
                    doc = inner.this.name
            columns.append((c.name, doc))
        if len(columns) != len(schema.fields):
            raise ValidationError(
                f"Cannot create view {'.'.join(ident)}: {len(columns)} column names for a "
                f"query of {len(schema.fields)} columns"
            )
    fields = [
        T.StructField(
            columns[i][0] if columns else f.name,
            f.dataType,
            True,
            {"comment": columns[i][1]} if columns and columns[i][1] else {},
        )
        for i, f in enumerate(schema.fields)
    ]
    view_schema = iceberg_schema_from_spark(T.StructType(fields))
    # as Java's CreateV2ViewExec and SparkCatalog.createView: the engine, and the query's
    # own column names (a column list renames them)
    engine = f"Spark {ctx.spark.version}"
    props: dict[str, str] = {"create_engine_version": engine, "engine_version": engine}
    p = tree.args.get("properties")
    for item in p.expressions if isinstance(p, exp.Properties) else []:
        if isinstance(item, exp.SchemaCommentProperty):
            props["comment"] = item.this.name
        elif isinstance(item, exp.Property):
            value: Any = item.args.get("value")
            props[item.this.name] = value.name if isinstance(value, exp.Expr) else str(value)
        else:
            raise UnsupportedSqlError(f"CREATE VIEW clause {item.sql('spark')}", ctx.statement)
    props[QUERY_COLUMN_NAMES] = ",".join(f.name for f in schema.fields)
    props.pop("provider", None)  # Java keeps neither: the location is the view's own
    location = props.pop("location", None)
    ctx.catalog.create_view(
        ident,
        view_schema,
        text,
        dialect="spark",
        default_namespace=list(ident[:-1]),
        default_catalog=ctx.catalog_name or None,
        properties=props,
        location=location,
        replace=replace,
    )
    return ctx.empty()


_ALTER = re.compile(
    r"^\s*ALTER\s+VIEW\s+(?P<v>[`\w.]+)\s+(?P<op>SET|UNSET)\s+TBLPROPERTIES\s*"
    r"(?P<ife>IF\s+EXISTS\s*)?\((?P<items>.*)\)\s*$",
    re.I | re.S,
)
_PAIR = re.compile(r"\s*'(?P<k>[^']*)'\s*(?:=\s*'(?P<v>[^']*)')?\s*(?:,|$)")


def alter_view(ctx: SqlContext, stmt: Statement) -> DataFrame:
    """``ALTER VIEW v SET TBLPROPERTIES ('k' = 'v', ...)`` / ``UNSET TBLPROPERTIES [IF
    EXISTS] ('k', ...)`` (Java refuses ``ALTER VIEW ... AS``: use ``CREATE OR REPLACE VIEW``)."""
    m = _ALTER.match(stmt.text)
    if m is None:
        raise UnsupportedSqlError(
            "ALTER VIEW other than SET/UNSET TBLPROPERTIES",
            stmt.text,
            "use CREATE OR REPLACE VIEW to change the query",
        )
    parts = [p.strip("`") for p in re.findall(r"`[^`]*`|[^.]+", m["v"])]
    ident = ctx.identifier(parts)
    if ident is None:
        raise UnsupportedSqlError("views of Spark's session catalog", stmt.text)
    pairs = [(x["k"], x["v"]) for x in _PAIR.finditer(m["items"]) if x.group(0).strip()]
    view = ctx.catalog.load_view(ident)
    if m["op"].upper() == "SET":
        if any(v is None for _, v in pairs):
            raise stmt.error("SET TBLPROPERTIES needs 'key' = 'value' pairs", m.start("items"))
        view.set_properties({k: v for k, v in pairs})
    else:
        keys = [k for k, _ in pairs]
        missing = [k for k in keys if k not in view.properties]
        if missing and not m["ife"]:
            raise ValidationError(f"Cannot unset properties {missing} of view {view.name}: not set")
        present = [k for k in keys if k in view.properties]
        if present:
            view.remove_properties(*present)
    return ctx.empty()
