"""DDL: tables and namespaces, ``SHOW`` and ``DESCRIBE``, with Java's Spark output shapes.

- ``CREATE TABLE [IF NOT EXISTS] t (cols) USING iceberg [PARTITIONED BY (...)] [LOCATION]
  [COMMENT] [TBLPROPERTIES]``: columns with ``NOT NULL`` (required) and ``COMMENT`` (doc) as
  Spark parses their types; partition terms ``col``, ``years|months|days|hours(col)``,
  ``bucket(N, col)``, ``truncate(W, col)`` through the one spec builder; the table comment as
  property ``comment`` (as Java stores it).
- ``CREATE TABLE ... AS SELECT``: one create transaction
  (:meth:`~icepark.catalog.Catalog.create_table_transaction`) holding the write, so the table
  appears with its rows or not at all; columns optional, as Spark's CTAS makes them.
- ``CREATE OR REPLACE TABLE`` / ``REPLACE TABLE [AS SELECT]``: creates the table when it does
  not exist (``CREATE OR REPLACE``), else one replace commit
  (:mod:`~icepark.spark.sql.replace_table`).
- ``DROP TABLE [IF EXISTS] t [PURGE]``, ``CREATE NAMESPACE|DATABASE|SCHEMA [IF NOT EXISTS]``,
  ``DROP NAMESPACE ... [IF EXISTS] [CASCADE]``.
- ``SHOW NAMESPACES|DATABASES|SCHEMAS [IN ns]``, ``SHOW TABLES [IN ns]``, ``SHOW VIEWS``
  (see :mod:`~icepark.spark.sql.views`), ``SHOW TBLPROPERTIES t [('key')]``, ``SHOW CREATE
  TABLE t``, ``DESCRIBE [TABLE] [EXTENDED] t`` (one column's:
  :mod:`~icepark.spark.sql.describe_column`).
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T
from sqlglot import exp

from icepark.errors import NoSuchNamespaceError, NoSuchTableError, ValidationError
from icepark.spark.runtime import spark_summary
from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.errors import UnsupportedSqlError
from icepark.spark.sql.ext_ast import quote_name
from icepark.spark.sql.identifiers import SPARK_CATALOG
from icepark.spark.sql.query import prepare_query, table_parts
from icepark.spark.sql.script import Statement, parse_statement
from icepark.spark.sql.view_show import show_create_view, show_view_properties
from icepark.spark.types import iceberg_schema_from_spark, to_spark_schema, to_spark_type
from icepark.spec import properties as P
from icepark.spec.snapshots import MAIN_BRANCH

__all__ = [
    "run_ddl",
    "show",
    "use",
    "create_namespace",
    "replace_table",
]

_NAMESPACE_KINDS = ("NAMESPACE", "DATABASE", "SCHEMA")


def run_ddl(ctx: SqlContext, stmt: Statement, tree: exp.Expr) -> DataFrame:
    kind = str(tree.args.get("kind") or "").upper()
    if isinstance(tree, exp.Describe):
        return _describe(ctx, tree)
    if isinstance(tree, exp.Create) and kind == "TABLE":
        return _create_table(ctx, stmt, tree, replace_only=False)
    if isinstance(tree, exp.Drop) and kind in _NAMESPACE_KINDS:
        return _drop_namespace(ctx, tree)
    if isinstance(tree, exp.Drop) and kind == "TABLE":
        return _drop_tables(ctx, stmt, tree)
    raise UnsupportedSqlError(f"{type(tree).__name__.upper()} {kind}".strip(), stmt.text)


# -- create ------------------------------------------------------------------------------------


def _column_ddl(coldef: exp.ColumnDef) -> str:
    kind = coldef.args.get("kind")
    if kind is None:
        raise ValidationError(f"Column {coldef.name!r} has no type")
    text = f"`{coldef.name.replace('`', '``')}` {kind.sql(dialect='spark')}"
    for constraint in coldef.args.get("constraints") or []:
        inner = (
            constraint.args.get("kind") if isinstance(constraint, exp.ColumnConstraint) else None
        )
        if isinstance(inner, exp.NotNullColumnConstraint) and not inner.args.get("allow_null"):
            text += " NOT NULL"
        elif isinstance(inner, exp.CommentColumnConstraint):
            text += f" COMMENT {inner.this.sql(dialect='spark')}"
        elif inner is not None:
            raise UnsupportedSqlError(f"column constraint {constraint.sql('spark')}")
    return text


def _partition_term(node: exp.Expr) -> str:
    if isinstance(node, exp.Identifier | exp.Column):
        return node.name
    if isinstance(node, exp.PartitionedByBucket):
        return f"bucket({node.expression.sql(dialect='spark')}, {node.this.name})"
    if isinstance(node, exp.PartitionByTruncate):
        return f"truncate({node.expression.sql(dialect='spark')}, {node.this.name})"
    if isinstance(node, exp.Func):
        name = (node.sql_name() if not isinstance(node, exp.Anonymous) else str(node.this)).lower()
        args = [a for a in node.args.values() if isinstance(a, exp.Expr)]
        args += [a for a in node.expressions if a not in args]
        texts = [a.name if isinstance(a, exp.Column) else a.sql(dialect="spark") for a in args]
        aliases = {"years": "year", "months": "month", "days": "day", "hours": "hour"}
        return f"{aliases.get(name, name)}({', '.join(texts)})"
    raise UnsupportedSqlError(f"partition term {node.sql('spark')}")


def _properties(tree: exp.Create) -> dict[str, Any]:
    out: dict[str, Any] = {"partition_by": [], "properties": {}, "location": None}
    props = tree.args.get("properties")
    for p in props.expressions if isinstance(props, exp.Properties) else []:
        if isinstance(p, exp.FileFormatProperty):
            fmt = p.this.name if isinstance(p.this, exp.Expr) else str(p.this)
            if fmt.lower() != "iceberg":
                raise UnsupportedSqlError(f"USING {fmt} (icepark's catalog holds Iceberg tables)")
        elif isinstance(p, exp.PartitionedByProperty):
            terms = p.this.expressions if isinstance(p.this, exp.Schema | exp.Tuple) else [p.this]
            out["partition_by"] = [_partition_term(t) for t in terms]
        elif isinstance(p, exp.LocationProperty):
            out["location"] = p.this.name
        elif isinstance(p, exp.SchemaCommentProperty):
            out["properties"]["comment"] = p.this.name
        elif isinstance(p, exp.Property):
            key = p.this.name if isinstance(p.this, exp.Expr) else str(p.this)
            value = p.args.get("value")
            out["properties"][key] = value.name if isinstance(value, exp.Expr) else str(value)
        else:
            raise UnsupportedSqlError(f"CREATE TABLE clause {p.sql('spark')}")
    return out


def replace_table(ctx: SqlContext, stmt: Statement) -> DataFrame:
    """``REPLACE TABLE ...`` (sqlglot parses only ``CREATE OR REPLACE``): read as that."""
    offset = stmt.text.upper().index("REPLACE")
    text = stmt.text[:offset] + "CREATE OR " + stmt.text[offset:]
    tree = parse_statement(Statement(text, stmt.line, stmt.column))
    if not isinstance(tree, exp.Create):
        raise UnsupportedSqlError("REPLACE of something other than a table", stmt.text)
    return _create_table(ctx, stmt, tree, replace_only=True)


def _create_table(
    ctx: SqlContext, stmt: Statement, tree: exp.Create, *, replace_only: bool
) -> DataFrame:
    target = tree.this
    table_node = target.this if isinstance(target, exp.Schema) else target
    if not isinstance(table_node, exp.Table):
        raise UnsupportedSqlError("CREATE TABLE without a table name", stmt.text)
    ident = ctx.identifier(table_parts(table_node))
    if ident is None:
        return ctx.spark.sql(stmt.text)
    name = ".".join(ident)
    exists = ctx.catalog.table_exists(ident)
    if replace_only and not exists:
        raise NoSuchTableError(f"Cannot replace table {name}: it does not exist")
    replacing = exists and bool(tree.args.get("replace"))
    if exists and not replacing and tree.args.get("exists"):
        return ctx.empty()
    opts = _properties(tree)
    query = tree.args.get("expression")
    df = None
    if isinstance(target, exp.Schema) and target.expressions:
        if query is not None:
            raise ValidationError("CREATE TABLE AS SELECT takes no column list")
        ddl = ", ".join(_column_ddl(c) for c in target.expressions if isinstance(c, exp.ColumnDef))
        spark_schema = T._parse_datatype_string(ddl)
        assert isinstance(spark_schema, T.StructType)
    elif query is not None:
        prepared = prepare_query(ctx, query)
        df = ctx.sql(prepared.sql(dialect="spark"))
        spark_schema = df.schema
    else:
        raise ValidationError(f"CREATE TABLE {name} needs columns or AS SELECT")
    properties = {"owner": getpass.getuser(), **opts["properties"]}  # Spark sets the owner
    if replacing:
        from icepark.spark.sql.replace_table import replace_table

        table = ctx.catalog.load_table(ident)
        schema = iceberg_schema_from_spark(spark_schema, optional=df is not None)
        replace_table(table, schema, opts["partition_by"], opts["location"], properties, df)
        return ctx.empty()
    staged = ctx.catalog.create_table_transaction(
        ident,
        iceberg_schema_from_spark(spark_schema, optional=df is not None),
        partition_by=opts["partition_by"],
        location=opts["location"],
        properties=properties,
    )
    if df is None:
        staged.commit_transaction()
        return ctx.empty()
    from icepark.expressions import AlwaysTrue
    from icepark.spark.write.writer import write_action, write_files

    staged_table: Any = staged
    files = write_files(df.select(*[df[c] for c in df.columns]), staged_table)
    props = spark_summary(df.sparkSession, None)
    action = write_action(staged_table, files, "append", AlwaysTrue(), MAIN_BRANCH, props, True)
    try:
        staged.transaction().add_action(action)
    except BaseException:
        action.abort(staged.io)
        raise
    staged.commit_transaction()
    return ctx.empty()


# -- drop --------------------------------------------------------------------------------------


def _drop_tables(ctx: SqlContext, stmt: Statement, tree: exp.Drop) -> DataFrame:
    for node in tree.args.get("tables") or [tree.this]:
        if not isinstance(node, exp.Table):
            continue
        ident = ctx.identifier(table_parts(node))
        if ident is None:
            return ctx.spark.sql(stmt.text)
        if not ctx.catalog.table_exists(ident):
            if tree.args.get("exists"):
                continue
            raise NoSuchTableError(f"Table does not exist: {'.'.join(ident)}")
        ctx.catalog.drop_table(ident, purge=bool(tree.args.get("purge")))
    return ctx.empty()


def _drop_namespace(ctx: SqlContext, tree: exp.Drop) -> DataFrame:
    node = (tree.args.get("tables") or [tree.this])[0]
    parts = table_parts(node) if isinstance(node, exp.Table) else []
    if isinstance(node, exp.Table) and not parts and node.args.get("db"):
        parts = [node.args["db"].name]
    ns = ctx.namespace(parts)
    if not ctx.catalog.namespace_exists(ns):
        if tree.args.get("exists"):
            return ctx.empty()
        raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(ns)}")
    if tree.args.get("cascade"):
        for ident in ctx.catalog.list_tables(ns):
            ctx.catalog.drop_table(ident, purge=True)
        if getattr(ctx.catalog, "supports_views", False):
            for ident in ctx.catalog.list_views(ns):
                ctx.catalog.drop_view(ident)
    ctx.catalog.drop_namespace(ns)
    return ctx.empty()


# -- show and describe -------------------------------------------------------------------------

_IN = re.compile(r"^\s*(?:IN|FROM)\s+(?P<ns>[`\w.]+)(?:\s+LIKE\s+'(?P<like>[^']*)')?\s*$", re.I)


def _names(text: str) -> list[str]:
    return [p.strip("`") for p in re.findall(r"`[^`]*`|[^.]+", text.strip())]


def _like(pattern: str | None) -> Any:
    if pattern is None:
        return lambda _name: True
    alts = [
        re.compile("^" + re.escape(p.strip()).replace(r"\*", ".*") + "$", re.I)
        for p in pattern.split("|")
    ]
    return lambda name: any(a.match(name) for a in alts)


def _temporary_views(ctx: SqlContext) -> list[str]:
    """The names of the session's temporary views (Spark's ``SHOW VIEWS`` rows marked
    temporary)."""
    rows = ctx.spark.sql("SHOW VIEWS IN spark_catalog.default").collect()
    return [str(r["viewName"]) for r in rows if r["isTemporary"]]


def show(ctx: SqlContext, stmt: Statement) -> DataFrame:
    m = re.match(r"\s*SHOW\s+(?P<what>\w+)(?P<rest>.*)$", stmt.text, re.I | re.S)
    assert m is not None
    what, rest = m["what"].upper(), m["rest"]
    if what in ("NAMESPACES", "DATABASES", "SCHEMAS"):
        parent: tuple[str, ...] = ()
        like = None
        if rest.strip():
            found = _IN.match(rest) or re.match(r"^\s*LIKE\s+'(?P<like>[^']*)'\s*$", rest, re.I)
            if found is None:
                raise stmt.error(f"cannot read SHOW {what}{rest}", len(stmt.text) - len(rest))
            parent = ctx.namespace(_names(found["ns"])) if "ns" in found.groupdict() else ()
            like = found["like"]
        match = _like(like)
        rows: list[tuple[Any, ...]] = [
            (".".join(ns),)
            for ns in ctx.catalog.list_namespaces(parent)  # full names, as Java
        ]
        rows = [r for r in rows if match(r[0])]
        return ctx.spark.createDataFrame(rows, "namespace string")
    if what in ("TABLES", "VIEWS"):
        found = _IN.match(rest)
        bare = re.match(r"^\s*(?:LIKE\s+'(?P<like>[^']*)')?\s*$", rest, re.I)
        if found is None and (bare is None or (what == "TABLES" and not ctx.current_namespace)):
            raise UnsupportedSqlError(
                f"SHOW {what} without IN <namespace> (and no USE <namespace> before)", stmt.text
            )
        ns = ctx.namespace(_names(found["ns"])) if found else ctx.current_namespace
        chosen = found or bare
        match = _like(chosen["like"] if chosen is not None else None)
        if what == "TABLES":
            idents = ctx.catalog.list_tables(ns)
            schema = "namespace string, tableName string, isTemporary boolean"
        else:
            # the current namespace's (none in the root of icepark's catalogs), and Spark's
            # temporary views, as Java's SHOW VIEWS lists them
            holds = ctx.catalog.supports_views and ns
            idents = ctx.catalog.list_views(ns) if holds else []
            schema = "namespace string, viewName string, isTemporary boolean"
        rows = [(".".join(i[:-1]), i[-1], False) for i in idents if match(i[-1])]
        if what == "VIEWS":
            rows += [("", name, True) for name in _temporary_views(ctx) if match(name)]
        return ctx.spark.createDataFrame(sorted(rows), schema)
    if what == "TBLPROPERTIES":
        pm = re.match(r"\s*(?P<t>[`\w.]+)\s*(?:\(\s*'(?P<key>[^']*)'\s*\))?\s*$", rest)
        if pm is None:
            raise stmt.error("cannot read SHOW TBLPROPERTIES", len(stmt.text) - len(rest))
        view = _view(ctx, _names(pm["t"]))
        if view is not None:
            return show_view_properties(ctx, view, pm["key"])
        table = _load(ctx, _names(pm["t"]))
        props = _shown_properties(table)
        if pm["key"] is not None:
            key = pm["key"]
            missing = f"Table {ctx.catalog_name}.{table.name} does not have property: {key}"
            value = props.get(key, missing)
            return ctx.spark.createDataFrame([(key, value)], "key string, value string")
        return ctx.spark.createDataFrame(sorted(props.items()), "key string, value string")
    if what == "CREATE":
        cm = re.match(r"\s*TABLE\s+(?P<t>[`\w.]+)\s*$", rest, re.I)
        if cm is None:
            raise stmt.error("cannot read SHOW CREATE TABLE", len(stmt.text) - len(rest))
        view = _view(ctx, _names(cm["t"]))
        if view is not None:
            return show_create_view(ctx, view)
        table = _load(ctx, _names(cm["t"]))
        return ctx.spark.createDataFrame(
            [(_create_statement(ctx, table),)], "createtab_stmt string"
        )
    raise UnsupportedSqlError(f"SHOW {what}", stmt.text)


_CREATE_NS = re.compile(
    r"\s*CREATE\s+(?:NAMESPACE|DATABASE|SCHEMA)\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?"
    r"(?P<n>[`\w.]+)(?P<rest>.*)$",
    re.I | re.S,
)
_NS_CLAUSE = re.compile(
    r"\s*(?:COMMENT\s+'(?P<comment>[^']*)'|LOCATION\s+'(?P<location>[^']*)'"
    r"|WITH\s+(?:DB)?PROPERTIES\s*\((?P<props>[^)]*)\))",
    re.I,
)
_KV = re.compile(r"\s*'(?P<k>[^']*)'\s*=\s*'(?P<v>[^']*)'\s*(?:,|$)")


def create_namespace(ctx: SqlContext, stmt: Statement) -> DataFrame:
    """``CREATE NAMESPACE|DATABASE|SCHEMA [IF NOT EXISTS] ns [COMMENT c] [LOCATION l]
    [WITH DBPROPERTIES (...)]``: the comment and location as properties ``comment`` and
    ``location``, as Java's Spark passes them to the catalog."""
    m = _CREATE_NS.match(stmt.text)
    if m is None:
        raise stmt.error("cannot read CREATE NAMESPACE", 0)
    props: dict[str, str] = {}
    rest, at = m["rest"], m.start("rest")
    while rest.strip():
        clause = _NS_CLAUSE.match(rest)
        if clause is None:
            raise stmt.error(
                f"unexpected {rest.strip()[:20]!r}", at + len(rest) - len(rest.lstrip())
            )
        if clause["comment"] is not None:
            props["comment"] = clause["comment"]
        elif clause["location"] is not None:
            props["location"] = clause["location"]
        else:
            props.update({x["k"]: x["v"] for x in _KV.finditer(clause["props"]) if x.group(0)})
        at += clause.end()
        rest = rest[clause.end() :]
    ns = ctx.namespace(_names(m["n"]))
    if m["ine"] and ctx.catalog.namespace_exists(ns):
        return ctx.empty()
    ctx.catalog.create_namespace(ns, props or None)
    return ctx.empty()


def use(ctx: SqlContext, stmt: Statement) -> DataFrame:
    """``USE [NAMESPACE|DATABASE|SCHEMA] ns``: single-part names then resolve in ``ns`` (kept
    in the session, per catalog). ``USE <catalog name>`` clears it; ``USE spark_catalog...``
    is Spark's own."""
    m = re.match(
        r"\s*USE\s+(?:(?:NAMESPACE|DATABASE|SCHEMA)\s+)?(?P<n>[`\w.]+)\s*$", stmt.text, re.I
    )
    if m is None:
        raise stmt.error("cannot read USE <namespace>", 0)
    parts = _names(m["n"])
    if parts[0].lower() == SPARK_CATALOG:
        ctx.use_namespace(())
        return ctx.spark.sql(stmt.text)
    ns = ctx.namespace(parts) if parts != [ctx.catalog_name] else ()
    if ns and not ctx.catalog.namespace_exists(ns):
        raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(ns)}")
    ctx.use_namespace(ns)
    return ctx.empty()


def _view(ctx: SqlContext, parts: Sequence[str]) -> Any:
    """The view ``parts`` names, or None (no such view, or a catalog without views)."""
    ident = ctx.identifier(parts)
    if ident is None or not ctx.catalog.supports_views or not ctx.catalog.view_exists(ident):
        return None
    return ctx.catalog.load_view(ident)


def _load(ctx: SqlContext, parts: Sequence[str]) -> Any:
    ident = ctx.identifier(parts)
    if ident is None:
        raise UnsupportedSqlError(f"{'.'.join(parts)} of Spark's session catalog")
    return ctx.catalog.load_table(ident)


# Spark's reserved table properties: its DESCRIBE and SHOW TBLPROPERTIES leave them out
_RESERVED = frozenset({"comment", "owner", "location", "provider", "external"})


def _shown_properties(table: Any) -> dict[str, str]:
    """What Java's ``SHOW TBLPROPERTIES`` lists: the table's properties and the ones its
    Spark table adds (``format``, ``format-version``, ``current-snapshot-id``)."""
    md = table.metadata
    props = {k: v for k, v in md.properties.items() if k not in _RESERVED}
    fmt = P.DEFAULT_FILE_FORMAT.get(md.properties)
    snap = md.current_snapshot_id
    props.update(
        {
            "format": f"iceberg/{fmt}",
            "format-version": str(md.format_version),
            "current-snapshot-id": "none" if snap is None else str(snap),
        }
    )
    return props


def _literal(text: str) -> str:
    """A string literal as Spark's ``SHOW CREATE TABLE`` prints one (``\\`` and ``'``
    escaped with a backslash, its ``escapeSingleQuotedString``)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _create_statement(ctx: SqlContext, table: Any) -> str:
    """Java's ``SHOW CREATE TABLE`` text (bucket fields as ``CLUSTERED BY ... INTO n BUCKETS``,
    as Spark prints a bucket transform); names back-quoted where needed and literals escaped,
    so the text runs again."""
    schema = to_spark_schema(table.schema(), with_ids=False)
    cols = []
    for f, ice in zip(schema.fields, table.schema().fields, strict=True):
        line = f"  {quote_name((f.name,))} {f.dataType.simpleString().upper()}"
        if not f.nullable:
            line += " NOT NULL"
        if ice.doc:
            line += f" COMMENT {_literal(ice.doc)}"
        cols.append(line)
    name = quote_name((*([ctx.catalog_name] if ctx.catalog_name else []), *table.identifier))
    parts = [f"CREATE TABLE {name} (", ",\n".join(cols) + ")"]
    parts.append("USING iceberg")
    spec = table.metadata.spec()
    buckets = [f for f in spec.fields if str(f.transform).startswith("bucket[")]
    others = [f for f in spec.fields if f not in buckets]
    if others:
        terms = ", ".join(_describe_term(table, f, quoted=True) for f in others)
        parts.append(f"PARTITIONED BY ({terms})")
    for f in buckets:
        n = str(f.transform)[len("bucket[") : -1]
        source = quote_name((table.schema().find_column_name(f.source_id),))
        parts += [f"CLUSTERED BY ({source})", f"INTO {n} BUCKETS"]
    comment = table.metadata.properties.get("comment")
    if comment:
        parts.append(f"COMMENT {_literal(comment)}")
    parts.append(f"LOCATION {_literal(table.metadata.location)}")
    props = ",\n".join(
        f"  {_literal(k)} = {_literal(v)}" for k, v in sorted(_shown_properties(table).items())
    )
    parts.append(f"TBLPROPERTIES (\n{props})")
    return "\n".join(parts) + "\n"


def _describe_term(table: Any, field: Any, *, quoted: bool = False) -> str:
    source = table.schema().find_column_name(field.source_id)
    if quoted:
        source = quote_name((source,))
    t = str(field.transform)
    if t == "identity":
        return str(source)
    if t in ("year", "month", "day", "hour"):
        return f"{t}s({source})"
    m = re.match(r"(bucket|truncate)\[(\d+)\]", t)
    if m:
        return f"{m[1]}({m[2]}, {source})"
    return f"{t}({source})"


def _describe(ctx: SqlContext, tree: exp.Describe) -> DataFrame:
    node = tree.this
    if not isinstance(node, exp.Table):
        raise UnsupportedSqlError("DESCRIBE of something other than a table")
    resolved = ctx.resolve(table_parts(node), views=False)
    if resolved.kind == "spark":
        return ctx.spark.sql(f"DESCRIBE {tree.args.get('style') or ''} {node.sql('spark')}")
    table = resolved.table
    assert table is not None
    if resolved.metadata is not None:  # a metadata table: its columns
        from icepark.spark.read.metadata_tables import metadata_spark_schema

        meta = metadata_spark_schema(table, resolved.metadata)
        return ctx.spark.createDataFrame(
            [(f.name, f.dataType.simpleString(), None) for f in meta.fields],
            "col_name string, data_type string, comment string",
        )
    iceberg_schema = resolved.schema()
    schema = to_spark_schema(iceberg_schema, with_ids=False)
    rows = [
        (f.name, f.dataType.simpleString(), ice.doc)
        for f, ice in zip(schema.fields, iceberg_schema.fields, strict=True)
    ]
    spec = table.metadata.spec()
    if spec.fields:  # Java's Spark shows the section for a partitioned table only
        rows += [("", "", ""), ("# Partitioning", "", "")]
        rows += [(f"Part {i}", _describe_term(table, f), "") for i, f in enumerate(spec.fields)]
    if str(tree.args.get("style") or "").upper() == "EXTENDED":
        props = ",".join(f"{k}={v}" for k, v in sorted(_shown_properties(table).items()))
        partition = to_spark_type(table.scan().partition_type, with_ids=False)
        owner = table.metadata.properties.get("owner")
        rows += [
            ("", "", ""),
            ("# Metadata Columns", "", ""),
            ("_spec_id", "int", ""),
            ("_partition", partition.simpleString(), ""),
            ("_file", "string", ""),
            ("_pos", "bigint", ""),
            ("_deleted", "boolean", ""),
            ("_row_id", "bigint", ""),
            ("_last_updated_sequence_number", "bigint", ""),
            ("", "", ""),
            ("# Detailed Table Information", "", ""),
            ("Name", f"{ctx.catalog_name}.{table.name}", ""),
            ("Type", "MANAGED", ""),
            ("Location", table.metadata.location, ""),
            ("Provider", "iceberg", ""),
            *([("Owner", owner, "")] if owner else []),
            ("Table Properties", f"[{props}]", ""),
        ]
    return ctx.spark.createDataFrame(rows, "col_name string, data_type string, comment string")
