"""One statement to its handler, and a script statement by statement.

A statement is recognised by its first words where sqlglot does not parse it (``ALTER
TABLE`` and ``CALL`` go to the Iceberg extensions' own parser first, ``EXPLAIN``, ``SHOW``,
``REPLACE TABLE``, ``SET``, ``DESCRIBE t col``), otherwise parsed by sqlglot (Spark
dialect) and sent by the kind of tree: queries to :mod:`~icepark.spark.sql.query`, DDL to
:mod:`~icepark.spark.sql.ddl`, writes to :mod:`~icepark.spark.sql.dml`, views to
:mod:`~icepark.spark.sql.views`.
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.sql import DataFrame
from sqlglot import exp

from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.errors import (
    SqlAnalysisError,
    SqlParseError,
    SqlScriptError,
    UnsupportedSqlError,
)
from icepark.spark.sql.extensions import parse_extension, run_extension
from icepark.spark.sql.query import explain_query, run_query
from icepark.spark.sql.script import Statement, first_words, parse_statement, split_statements

__all__ = ["run_script", "run_statement"]

_EXPLAIN_MODES = ("EXTENDED", "CODEGEN", "COST", "FORMATTED")
# the words a Spark SQL statement can start with: any other first word is a syntax error there
_STARTS = frozenset(
    "SELECT WITH VALUES FROM TABLE INSERT DELETE UPDATE MERGE CREATE DROP ALTER SHOW DESCRIBE "
    "DESC EXPLAIN SET RESET USE CALL REPLACE CACHE UNCACHE CLEAR REFRESH MSCK ANALYZE GRANT "
    "REVOKE TRUNCATE LOAD ADD LIST COMMENT DECLARE EXECUTE".split()
)
_AT = re.compile(r" \(line \d+, column \d+\)$")


def _skip_words(text: str, count: int) -> int:
    """The offset after the first ``count`` words (comments and blanks skipped)."""
    i = 0
    for _ in range(count):
        m = re.compile(r"(\s|--[^\n]*\n?|/\*.*?\*/)*[A-Za-z_][A-Za-z0-9_]*", re.S).match(text, i)
        if m is None:
            break
        i = m.end()
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _sub(stmt: Statement, offset: int) -> Statement:
    line, column = stmt.at_offset(offset)
    return Statement(stmt.text[offset:], line, column)


def _extension(ctx: SqlContext, stmt: Statement) -> DataFrame | None:
    """ALTER TABLE and CALL through the Iceberg extensions' parser and runner; None when the
    statement is neither (``ALTER VIEW``)."""
    try:
        parsed = parse_extension(stmt.text)
    except SqlParseError as exc:
        line, column = stmt.position(exc.line, exc.column)
        raise SqlParseError(_AT.sub("", exc.message), stmt.text, line, column) from None
    if parsed is None:
        return None
    result: DataFrame = run_extension(ctx.spark, parsed, ctx.catalog, ctx.catalog_name, ctx=ctx)
    return result


def run_statement(ctx: SqlContext, stmt: Statement) -> DataFrame:
    """Run one statement and return its result as Java's Spark does; Spark's analysis
    errors become :class:`SqlAnalysisError`."""
    from pyspark.errors import AnalysisException

    try:
        return _run_statement(ctx, stmt)
    except AnalysisException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        error_class = exc.getCondition() if hasattr(exc, "getCondition") else None
        raise SqlAnalysisError(first, stmt.text, error_class) from exc


def _run_statement(ctx: SqlContext, stmt: Statement) -> DataFrame:
    ctx.start_statement(stmt.text)
    words = first_words(stmt.text, 3)
    head = words[0] if words else ""
    if words[:2] == ["ALTER", "TABLE"] or head == "CALL":
        result = _extension(ctx, stmt)
        if result is not None:
            return result
    if words[:2] == ["ALTER", "VIEW"]:
        from icepark.spark.sql.views import alter_view

        return alter_view(ctx, stmt)
    if head == "EXPLAIN":
        skip = 2 if len(words) > 1 and words[1] in _EXPLAIN_MODES else 1
        mode = words[1] if skip == 2 else ""
        inner = _sub(stmt, _skip_words(stmt.text, skip))
        tree = parse_statement(inner)
        if not isinstance(tree, exp.Query):
            raise UnsupportedSqlError("EXPLAIN of a statement other than a query", stmt.text)
        return explain_query(ctx, tree, mode)
    if head == "SHOW":
        from icepark.spark.sql.ddl import show

        return show(ctx, stmt)
    if head == "CREATE" and len(words) > 1 and words[1] in ("NAMESPACE", "DATABASE", "SCHEMA"):
        from icepark.spark.sql.ddl import create_namespace

        return create_namespace(ctx, stmt)
    if head in ("DESCRIBE", "DESC"):
        from icepark.spark.sql.describe_column import describe_column

        described = describe_column(ctx, stmt)
        if described is not None:
            return described
    if head == "USE":
        from icepark.spark.sql.ddl import use

        return use(ctx, stmt)
    if head in ("SET", "RESET"):
        return ctx.spark.sql(stmt.text)
    if words[:2] == ["REPLACE", "TABLE"]:
        from icepark.spark.sql.ddl import replace_table

        return replace_table(ctx, stmt)
    if head not in _STARTS and not stmt.text.lstrip().startswith("("):
        word = head or stmt.text.split(None, 1)[0]
        raise stmt.error(f"Syntax error at or near {word!r}", _skip_words(stmt.text, 0))
    tree = parse_statement(stmt)
    return _dispatch(ctx, stmt, tree)


def _dispatch(ctx: SqlContext, stmt: Statement, tree: exp.Expr) -> DataFrame:
    if isinstance(tree, exp.Query):
        from icepark.spark.sql.aggregates import answer_from_metadata

        answered = answer_from_metadata(ctx, tree)
        return answered if answered is not None else run_query(ctx, tree)
    if isinstance(tree, exp.Insert | exp.Delete | exp.Update | exp.Merge):
        from icepark.spark.sql import dml

        return dml.run_write(ctx, stmt, tree)
    if isinstance(tree, exp.Create | exp.Drop | exp.Describe):
        kind = str(tree.args.get("kind") or "").upper()
        if kind == "VIEW" or (isinstance(tree, exp.Describe) and _is_view(ctx, tree)):
            from icepark.spark.sql import views

            return views.run_view(ctx, stmt, tree)
        from icepark.spark.sql import ddl

        return ddl.run_ddl(ctx, stmt, tree)
    if isinstance(tree, exp.Alter) and str(tree.args.get("kind") or "").upper() == "VIEW":
        from icepark.spark.sql.views import alter_view

        return alter_view(ctx, stmt)
    what = first_words(stmt.text, 2)
    raise UnsupportedSqlError(f"statement {' '.join(what) or stmt.text[:20]!r}", stmt.text)


def _is_view(ctx: SqlContext, tree: exp.Describe) -> bool:
    from icepark.spark.sql.query import table_parts

    target = tree.this
    if not isinstance(target, exp.Table):
        return False
    try:
        return ctx.resolve(table_parts(target)).kind == "view"
    except Exception:
        return False


def run_script(ctx: SqlContext, text: str) -> DataFrame:
    """Each statement in turn; the last one's result. A failure in a script of several
    statements is a :class:`SqlScriptError` (the earlier statements stay applied)."""
    statements = split_statements(text)
    if not statements:
        raise SqlParseError("no statement to run", text, 1, 1)
    result: Any = None
    for index, stmt in enumerate(statements):
        try:
            result = run_statement(ctx, stmt)
        except Exception as exc:
            if len(statements) == 1:
                raise
            raise SqlScriptError(index, index, exc, stmt.text) from exc
        finally:
            ctx.end_statement()
            ctx.report.clear()
    assert isinstance(result, DataFrame)
    return result
