"""``DESCRIBE [TABLE] [EXTENDED|FORMATTED] t col``: one column, as Java's Spark describes it.

sqlglot does not read a column after the table name, so :func:`describe_column` reads the
statement's words itself and answers only that form (``None`` for any other ``DESCRIBE``,
which :mod:`~icepark.spark.sql.ddl` answers). What Java's Spark 3.5 gives for an Iceberg
table (its ``DescribeColumnExec``), measured on the reference engine: rows ``(info_name,
info_value)`` ``col_name`` (the name as written), ``data_type`` (Spark's type string) and
``comment`` (the field's doc, or the string ``NULL``); ``EXTENDED`` adds nothing (an Iceberg
table gives Spark no column statistics). Metadata tables (``db.t.files``) and ``branch_`` /
``tag_`` names are described too; an Iceberg view's column is not yet. A nested name
(``s.a``) is refused as Java refuses it; an unknown column is a
:class:`~icepark.spark.sql.errors.SqlAnalysisError` naming it with Spark's error class. A
table Spark owns (a temporary view, ``spark_catalog``) is Spark's to describe.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame

from icepark.spark.read.metadata_tables import metadata_schema
from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.errors import SqlAnalysisError, UnsupportedSqlError
from icepark.spark.sql.ext_lexer import Kind, tokens
from icepark.spark.sql.script import Statement
from icepark.spark.types import to_spark_schema

__all__ = ["describe_column"]

_PART = r"(?:`(?:[^`]|``)*`|[A-Za-z0-9_]+)"
_NAME = rf"{_PART}(?:\s*\.\s*{_PART})*"
_FORM = re.compile(
    r"^\s*DESC(?:RIBE)?\s+(?:TABLE\s+)?(?:(?P<style>EXTENDED|FORMATTED)\s+)?"
    rf"(?P<table>{_NAME})\s+(?P<column>{_NAME})\s*;?\s*$",
    re.I | re.S,
)
# unquoted words the pattern could take for a table name: another DESCRIBE, or a keyword
_OTHER = {
    "TABLE",
    "EXTENDED",
    "FORMATTED",
    "FUNCTION",
    "DATABASE",
    "SCHEMA",
    "NAMESPACE",
    "CATALOG",
    "QUERY",
}


def _parts(name: str) -> list[str]:
    """The parts of a dotted name, back quotes undone (the extensions' tokenizer)."""
    return [t.text for t in tokens(name) if t.kind in (Kind.WORD, Kind.QUOTED)]


def describe_column(ctx: SqlContext, stmt: Statement) -> DataFrame | None:
    """The answer to ``DESCRIBE ... t col``, or None when ``stmt`` is another DESCRIBE."""
    m = _FORM.match(stmt.text)
    if m is None:
        return None
    if m["table"].upper() in _OTHER:  # DESCRIBE FUNCTION f, DESCRIBE TABLE EXTENDED t, ...
        return None
    table_name, column = _parts(m["table"]), _parts(m["column"])
    resolved = ctx.resolve(table_name, views=True)
    if resolved.kind == "spark":
        return ctx.spark.sql(stmt.text)
    shown = ".".join(column)
    if resolved.kind == "view" or resolved.table is None:
        raise UnsupportedSqlError(f"DESCRIBE of a column of view {resolved.name}", stmt.text)
    if len(column) > 1:
        raise SqlAnalysisError(
            f"DESC TABLE COLUMN does not support nested column: {shown}.", stmt.text
        )
    if resolved.metadata is not None:
        schema = metadata_schema(resolved.table, resolved.metadata)
    else:
        schema = resolved.schema()
    spark_schema = to_spark_schema(schema, with_ids=False)
    sensitive = (ctx.spark.conf.get("spark.sql.caseSensitive") or "false").lower() == "true"
    wanted = column[0] if sensitive else column[0].lower()
    for f, ice in zip(spark_schema.fields, schema.fields, strict=True):
        if (f.name if sensitive else f.name.lower()) == wanted:
            rows = [
                ("col_name", column[0]),
                ("data_type", f.dataType.simpleString()),
                ("comment", ice.doc if ice.doc is not None else "NULL"),
            ]
            return ctx.spark.createDataFrame(rows, "info_name string, info_value string")
    names = ", ".join(f"`{f.name}`" for f in sorted(spark_schema.fields, key=lambda f: f.name))
    raise SqlAnalysisError(
        f"[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column or function parameter with name "
        f"`{column[0]}` cannot be resolved. Did you mean one of the following? [{names}].",
        stmt.text,
        "UNRESOLVED_COLUMN.WITH_SUGGESTION",
    )
