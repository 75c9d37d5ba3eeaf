"""Iceberg's SQL extensions for the SQL front end: ``parse_extension`` recognises every
``ALTER TABLE ...`` form and ``CALL ...`` and ``run_extension`` runs one.

The front end's dispatcher calls :func:`parse_extension` on each statement: None means the
statement is neither (``ALTER VIEW`` included) and is the dispatcher's to handle; otherwise
the typed statement (:mod:`icepark.spark.sql.ext_ast`) goes to :func:`run_extension`, which
answers as Java's Spark does: an empty DataFrame for ``ALTER TABLE``, a procedure's output
columns for ``CALL``. Parsing: :mod:`~icepark.spark.sql.ext_parser`; running:
:mod:`~icepark.spark.sql.ext_alter` and :mod:`~icepark.spark.sql.ext_procedures`.
"""

from __future__ import annotations

from typing import Any

from icepark.catalog import Catalog
from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.ext_alter import run_alter
from icepark.spark.sql.ext_ast import Call, ExtensionStatement, TableStatement
from icepark.spark.sql.ext_parser import parse_extension
from icepark.spark.sql.ext_procedures import PROCEDURES, run_call

__all__ = ["ExtensionStatement", "PROCEDURES", "parse_extension", "run_extension"]


def run_extension(
    spark: Any,
    statement: ExtensionStatement,
    catalog: Catalog,
    catalog_name: str,
    *,
    ctx: SqlContext | None = None,
) -> Any:
    """Run a statement :func:`parse_extension` gave, answering as Java's Spark does: an empty
    DataFrame for ``ALTER TABLE``, the procedure's output columns for ``CALL``.

    Args:
        spark: the session (classic or Spark Connect).
        statement: the parsed statement.
        catalog: the catalog its tables are in.
        catalog_name: ``catalog``'s name in SQL, which may prefix table and procedure names
            (``lake.db.t``, ``lake.system.expire_snapshots``).
        ctx: the SQL front end's context (its ``USE`` namespace resolves single-part
            names); without one, a context over ``spark`` and ``catalog`` is built.

    Returns:
        A DataFrame.

    Raises:
        ProcedureArgumentError: a procedure argument that is missing, unknown or invalid,
            naming it and listing the procedure's parameters.
        UnknownProcedureError: a procedure icepark does not have (listing those it has).
        UnsupportedSqlError: a construct icepark cannot run.
        NoSuchTableError: the table does not exist.
        ValidationError: a change the table refuses (naming the column, ref or value).
        TypeError: ``statement`` is not an extension statement.
    """
    if ctx is None:
        ctx = SqlContext(spark, catalog, statement.sql, name=catalog_name)
    if isinstance(statement, Call):
        return run_call(ctx, statement)
    if not isinstance(statement, TableStatement):
        raise TypeError(f"Not an extension statement: {statement!r}")
    run_alter(ctx, statement)
    return ctx.empty()
