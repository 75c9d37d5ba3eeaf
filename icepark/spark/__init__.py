"""icepark on Apache Spark (PySpark >= 4.2): the only package that imports pyspark.

DataFrame API::

    from icepark import spark as ispark
    df = ispark.read(spark, "db.events", filter="ts >= '2024-01-01'", columns=["id", "ts"])
    ispark.write(df, "db.events", mode="append")        # or "overwrite", "overwrite-partitions"
    ispark.create_table_from(spark, df, "db.copy", partition_by=["day(ts)"], sort_by=["id"])

Iceberg SQL without JVM extensions (see :mod:`icepark.spark.sql`)::

    ispark.sql(spark, "SELECT * FROM db.events FOR VERSION AS OF 'audit' WHERE id = 5")

Row-level changes (``write.delete.mode`` / ``write.update.mode`` / ``write.merge.mode``:
copy-on-write or merge-on-read; see :mod:`icepark.spark.write.row_level`)::

    ispark.delete(spark, "db.events", "ts < '2024-01-01'")
    ispark.update(spark, "db.events", set={"amount": "amount * 2"}, where="id = 5")
    ispark.merge(spark, "db.events", updates_df, on="id",
                 when_matched_update="*", when_not_matched_insert="*")

Compaction and maintenance (Java's procedures; see
:mod:`icepark.spark.maintenance.rewrite_data_files`)::

    ispark.rewrite_data_files(spark, "db.events", strategy="sort", sort_order="zorder(id, ts)")
    ispark.rewrite_position_delete_files(spark, "db.events")
    ispark.add_files(spark, "db.events", "/data/events_hive")
    ispark.compute_table_stats(spark, "db.events")   # NDV sketches in a Puffin stats file

Spark-native entry points (the ``icepark`` Python data source and SQL views)::

    ispark.register(spark)
    spark.read.format("icepark").option("table", "db.events").load()
    df.write.format("icepark").option("table", "db.events").mode("append").save()
    ispark.register_tables(spark, "db")   # a temporary view per table: SELECT and INSERT INTO

Upkeep: ``ispark.remove_orphan_files(spark, "db.events")`` lists and compares on Spark
(expiry and snapshot management are table methods: ``table.expire_snapshots(...)``).

Structured Streaming (:mod:`icepark.spark.streaming.source`, :mod:`icepark.spark.streaming.sink`)::

    ispark.read_stream(spark, "db.events", streaming_max_files_per_micro_batch=100)
    spark.readStream.format("icepark").option("table", "db.events").load()
    ispark.write_stream(df, "db.events", checkpoint_location="/chk/events")
    df.writeStream.format("icepark").option("table", "db.events").start()

:func:`read` and :func:`write` plan and commit on the driver with icepark and run Spark's
native Parquet reader and writer where they can (see :mod:`icepark.spark.read.reader` and
:mod:`icepark.spark.write.writer` for when the Python paths are used); the data source always runs
icepark's Arrow reader and writer in Python tasks.

Python workers must run the same interpreter as the driver (``PYSPARK_PYTHON`` or
``spark.pyspark.python``), with icepark installed.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

try:
    import pyspark  # noqa: F401
except ImportError as _missing:  # pragma: no cover - depends on the install
    raise ImportError(
        "icepark.spark needs PySpark, which is not installed: "
        "pip install 'icepark[spark]' (PySpark >= 4.1 and pandas)"
    ) from _missing

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icepark.spark.datasource import IcebergDataSource, register, register_tables
    from icepark.spark.maintenance.add_files import add_files
    from icepark.spark.maintenance.compute_table_stats import compute_table_stats
    from icepark.spark.maintenance.migrate_table import migrate_table
    from icepark.spark.maintenance.remove_orphan_files import remove_orphan_files
    from icepark.spark.maintenance.rewrite_data_files import rewrite_data_files
    from icepark.spark.maintenance.rewrite_position_delete_files import (
        rewrite_position_delete_files,
    )
    from icepark.spark.maintenance.snapshot_table import snapshot_table
    from icepark.spark.read.reader import ReadPath, choose_path, read, read_scan
    from icepark.spark.session import session
    from icepark.spark.setup import SparkSetupError, prepare_session
    from icepark.spark.sql import sql
    from icepark.spark.streaming.queries import read_stream, write_stream
    from icepark.spark.tables import resolve_table
    from icepark.spark.types import to_spark_schema
    from icepark.spark.write.row_level import delete, merge, update
    from icepark.spark.write.writer import WriteMode, WritePath, choose_write_path, write
    from icepark.table import Table

__all__ = [
    "IcebergDataSource",
    "add_files",
    "ReadPath",
    "WriteMode",
    "WritePath",
    "choose_path",
    "choose_write_path",
    "compute_table_stats",
    "create_table_from",
    "delete",
    "merge",
    "migrate_table",
    "prepare_session",
    "session",
    "snapshot_table",
    "sql",
    "SparkSetupError",
    "read",
    "read_scan",
    "read_stream",
    "register",
    "register_tables",
    "remove_orphan_files",
    "resolve_table",
    "rewrite_data_files",
    "rewrite_position_delete_files",
    "to_spark_schema",
    "update",
    "write",
    "write_stream",
]

# Each public name is imported from its module when first used. A Python worker of a Spark
# task only unpickles (and so imports) the module its function lives in: importing all of
# icepark.spark up front (SQL parser, maintenance, metadata tables...) cost a streaming source
# or data source worker ~0.3 s of its start.
_LAZY = {
    "IcebergDataSource": "icepark.spark.datasource",
    "register": "icepark.spark.datasource",
    "register_tables": "icepark.spark.datasource",
    "add_files": "icepark.spark.maintenance.add_files",
    "compute_table_stats": "icepark.spark.maintenance.compute_table_stats",
    "migrate_table": "icepark.spark.maintenance.migrate_table",
    "remove_orphan_files": "icepark.spark.maintenance.remove_orphan_files",
    "rewrite_data_files": "icepark.spark.maintenance.rewrite_data_files",
    "rewrite_position_delete_files": "icepark.spark.maintenance.rewrite_position_delete_files",
    "snapshot_table": "icepark.spark.maintenance.snapshot_table",
    "ReadPath": "icepark.spark.read.reader",
    "choose_path": "icepark.spark.read.reader",
    "read": "icepark.spark.read.reader",
    "read_scan": "icepark.spark.read.reader",
    "session": "icepark.spark.session",
    "SparkSetupError": "icepark.spark.setup",
    "prepare_session": "icepark.spark.setup",
    "sql": "icepark.spark.sql",
    "read_stream": "icepark.spark.streaming.queries",
    "write_stream": "icepark.spark.streaming.queries",
    "resolve_table": "icepark.spark.tables",
    "iceberg_schema_from_spark": "icepark.spark.types",
    "to_spark_schema": "icepark.spark.types",
    "delete": "icepark.spark.write.row_level",
    "merge": "icepark.spark.write.row_level",
    "update": "icepark.spark.write.row_level",
    "WriteMode": "icepark.spark.write.writer",
    "WritePath": "icepark.spark.write.writer",
    "choose_write_path": "icepark.spark.write.writer",
    "write": "icepark.spark.write.writer",
}

# Names that are both a function here and a subpackage or module (``icepark.spark.read``...).
# Importing the subpackage makes Python bind it on this module under the same name; these
# names are properties of the module's class, so they always give the function and the
# binding is ignored (``from icepark.spark.read.reader import ...`` still finds the modules).
_SHADOWED = ("read", "session", "sql", "write")


def _load(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __getattr__(name: str) -> Any:
    value = _load(name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def _function(name: str) -> property:
    loaded: list[Any] = []

    def get(_: types.ModuleType) -> Any:
        if not loaded:
            loaded.append(_load(name))
        return loaded[0]

    def ignore(_: types.ModuleType, value: Any) -> None:
        pass  # the import system binding the subpackage of the same name

    return property(get, ignore)


class _Package(types.ModuleType):
    pass


for _name in _SHADOWED:
    setattr(_Package, _name, _function(_name))
sys.modules[__name__].__class__ = _Package


def create_table_from(
    spark: SparkSession,
    df: DataFrame,
    name: str,
    partition_by: Sequence[str] = (),
    sort_by: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    catalog: Any = None,
) -> Table:
    """Create table ``name`` with ``df``'s schema and write ``df`` into it, as Spark's
    ``CREATE TABLE ... AS SELECT`` does: the columns are optional (nullable), the table is
    partitioned and sorted by the terms given. If the write fails the new table is dropped
    (with its files), so nothing is left half made.

    Args:
        spark: the session (classic or Spark Connect).
        df: the rows; the table's schema comes from ``df.schema``.
        name: the new table's name, e.g. ``"db.events"``; its namespace must exist.
        partition_by: partition terms such as ``"day(ts)"``, ``"bucket(16, id)"`` or a
            column name.
        sort_by: the table's sort order, e.g. ``["id"]`` or ``["ts desc nulls last"]``.
        properties: table properties (``format-version``, ``write.*`` ...).
        catalog: a Catalog, a configured catalog name or a mapping of catalog properties
            (default: ``icepark.load_catalog()``).

    Returns:
        The new table, with the snapshot of the write.

    Raises:
        TableAlreadyExistsError: a table of that name exists.
        NoSuchNamespaceError: the name's namespace does not exist.
        ValidationError: a partition or sort term, a property or a type does not fit (naming
            it); InvalidTransformError for a transform the column's type does not take.
        CatalogConfigError: ``catalog`` names no configured catalog.
    """
    from icepark.spark.tables import resolve_catalog
    from icepark.spark.types import iceberg_schema_from_spark
    from icepark.spark.write.writer import write

    cat = resolve_catalog(catalog)
    iceberg_schema = iceberg_schema_from_spark(df.schema, optional=True)
    table = cat.create_table(
        name,
        iceberg_schema,
        partition_by=list(partition_by),
        sort_by=list(sort_by),
        properties=dict(properties or {}),
    )
    try:
        write(df, table, mode="append")
    except BaseException:
        cat.drop_table(name, purge=True)
        raise
    return table
