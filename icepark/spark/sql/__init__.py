"""Iceberg SQL on PySpark (no JVM extensions): statements parsed in Python, each run through
icepark's own operations and Spark's native reader and writer.

::

    from icepark import spark as ispark
    ispark.sql(spark, "SELECT * FROM db.events WHERE day = DATE '2024-01-02'").show()
    ispark.sql(spark, "CREATE TABLE db.t (id bigint) USING iceberg; INSERT INTO db.t VALUES (1)")

``ispark.sql`` is the function :func:`sql`; the package stays importable as
``icepark.spark.sql`` (``from icepark.spark.sql.errors import SqlParseError``): the package
``icepark.spark`` binds its attribute ``sql`` to the function after importing this package.

Modules: the script and its statements (``script``), names as Java resolves them
(``identifiers``), the call's state (``context``), one statement to its handler (``runner``),
queries with icepark's planning and pushed predicates (``query``, ``pushdown``), DDL
(``ddl``), writes through the existing operations (``dml``), Iceberg views (``views``).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.errors import (
    SqlAnalysisError,
    SqlError,
    SqlParseError,
    SqlScriptError,
    UnsupportedSqlError,
)
from icepark.spark.sql.runner import run_script
from icepark.spark.tables import resolve_catalog

__all__ = [
    "sql",
    "SqlError",
    "SqlAnalysisError",
    "SqlParseError",
    "SqlScriptError",
    "UnsupportedSqlError",
]


def sql(spark: SparkSession, text: str, catalog: Any = None) -> DataFrame:
    """Run one SQL statement or several separated by ``;`` and return the last one's result
    as Java's Spark returns it (a query's rows; an empty DataFrame for DDL). ``catalog`` is
    a Catalog, a catalog name, or None for ``icepark.load_catalog()``; ``<catalog name>.db.t``
    names its tables too. A failing statement of a script raises :class:`SqlScriptError`
    (the earlier statements stay applied); a single statement raises its own error.

    Args:
        spark: the session (classic or Spark Connect).
        text: one statement, or several separated by ``;``.
        catalog: where table names resolve.

    Returns:
        The last statement's result as a DataFrame.

    Raises:
        SqlParseError: a statement does not parse (with its line and column).
        SqlAnalysisError: Spark's analysis refuses a statement.
        UnsupportedSqlError: a statement icepark does not run.
        SqlScriptError: a statement of a script failed.
    """
    ctx = SqlContext(spark, resolve_catalog(catalog))
    return run_script(ctx, text)
