"""``migrate_table``: replace a Parquet table of Spark's session catalog by an Iceberg table of
the same name over the same files (Java's ``migrate`` procedure, ``MigrateTableSparkAction``).

As Java does, in this order:

1. the source ``spark_catalog.<db>.<t>`` is renamed to its backup, ``<t>_BACKUP_`` (or the
   name given), so that nothing writes to it while its files are imported;
2. the Iceberg table ``<db>.<t>`` is created in icepark's catalog (and namespace ``<db>``
   when it has none) at the source's location,
   with the source's schema, an identity partition field per partition column, the source's
   properties (but its location ones and ``path``, ``transient_lastDdlTime``,
   ``serialization.format``), the ones given and ``migrated=true``;
3. the backup's files are added in one ``append``
   (:func:`~icepark.spark.maintenance.add_files.add_files`, with a name mapping);
4. with ``drop_backup``, the backup is dropped; its files stay, they are the Iceberg table's.

If step 2 or 3 fails, the new table (and namespace) is dropped, its metadata file deleted and
the backup renamed back to the source's name: everything is as it was. The new table owns
the files (``gc.enabled`` is not turned off, unlike ``snapshot``): expiring it may delete
them.

Where Java differs, and why icepark refuses first, changing nothing:

- **A managed source.** Renaming a managed table moves its folder and dropping it deletes its
  files, so Java's migrated table points into the backup's folder, and ``drop_backup`` deletes
  the files it reads (measured on Java 1.10.2: the migrated table then fails with
  ``File does not exist``). Make the source external first (``CREATE TABLE ... USING parquet
  LOCATION '<its folder>'``), or use
  :func:`~icepark.spark.maintenance.snapshot_table.snapshot_table`.
- **A file-system catalog.** Its tables live in its own folders (no other location), and
  dropping one deletes its folder, which would be the source's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from icepark.errors import TableAlreadyExistsError, ValidationError
from icepark.spark.maintenance.add_files import add_files
from icepark.spark.maintenance.session_source import (
    new_table_properties,
    read_source,
    undo_create,
)
from icepark.spark.types import iceberg_schema_from_spark

__all__ = ["migrate_table", "BACKUP_SUFFIX"]

BACKUP_SUFFIX = "_BACKUP_"
_LOG = logging.getLogger(__name__)


def _session_name(spark: SparkSession, table: str) -> tuple[str, str]:
    """``(database, table)`` of a name of Spark's session catalog (``t``, ``db.t`` or
    ``spark_catalog.db.t``)."""
    from icepark.spark.sql.ext_parser import parse_name

    parts = list(parse_name(table))
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) == 1:
        parts = [spark.catalog.currentDatabase(), *parts]
    if len(parts) != 2:
        raise ValidationError(
            f"Cannot migrate {table!r}: Spark's session catalog names tables <database>.<table>"
        )
    return parts[0], parts[1]


def _quoted(*parts: str) -> str:
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def migrate_table(
    spark: SparkSession,
    table: str,
    *,
    catalog: Any = None,
    properties: Mapping[str, str] | None = None,
    drop_backup: bool = False,
    backup_table_name: str | None = None,
) -> int:
    """Replace Spark's Parquet table ``table`` by an Iceberg table ``<db>.<table>`` of
    ``catalog`` over its files (see the module docstring).

    Args:
        spark: the session whose catalog has ``table``.
        table: a table of Spark's session catalog (``db.t`` or ``spark_catalog.db.t``).
        catalog: a Catalog, a configured catalog name or catalog properties (default:
            ``icepark.load_catalog()``); it must take tables at any location.
        properties: more table properties.
        drop_backup: drop the renamed source once the Iceberg table is committed.
        backup_table_name: the backup's name in the source's database (default:
            ``<table>_BACKUP_``).

    Returns:
        The number of data files the new table references (Java's ``migrated_files_count``).

    Raises:
        ValidationError: the source is no external Parquet table of Spark's, or ``catalog``
            is a file-system catalog.
        TableAlreadyExistsError: ``catalog`` has a table of that name, or Spark has a table
            of the backup's name.
    """
    from icepark.catalog import FileSystemCatalog
    from icepark.spark.tables import resolve_catalog

    cat = resolve_catalog(catalog)
    database, name = _session_name(spark, table)
    source = _quoted("spark_catalog", database, name)
    backup_name = backup_table_name or name + BACKUP_SUFFIX
    backup = _quoted("spark_catalog", database, backup_name)
    src = read_source(spark, source, "migrate")
    if isinstance(cat, FileSystemCatalog):
        raise ValidationError(
            f"Cannot migrate {source} into the file-system catalog {cat.name!r}: its tables "
            "live in its own folders, and the migrated table keeps the source's location"
        )
    if src.managed:
        raise ValidationError(
            f"Cannot migrate managed table {source}: Spark moves a managed table's files when "
            "it is renamed to its backup and deletes them when the backup is dropped. Make it "
            f"an external table first (CREATE TABLE ... USING parquet LOCATION "
            f"'{src.location}'), or use snapshot"
        )
    if cat.table_exists((database, name)):
        raise TableAlreadyExistsError(
            f"Cannot migrate {source}: table {database}.{name} already exists in catalog "
            f"{cat.name!r}"
        )
    if spark.catalog.tableExists(f"{database}.{backup_name}"):
        raise TableAlreadyExistsError(
            f"Cannot rename {source} as {backup} for backup. The backup table already exists."
        )
    schema = iceberg_schema_from_spark(spark.table(source).schema, optional=True)
    props = new_table_properties(src, properties, {"migrated": "true"})

    spark.sql(f"ALTER TABLE {source} RENAME TO {_quoted(database, backup_name)}")
    created, new_namespace = None, not cat.namespace_exists((database,))
    try:
        if new_namespace:  # the database exists in Spark's catalog: now in icepark's too
            cat.create_namespace((database,))
        created = cat.create_table(
            (database, name),
            schema,
            partition_by=list(src.partitions),
            location=src.location,
            properties=props,
        )
        add_files(spark, created, backup, check_duplicate_files=False)
    except BaseException:
        if created is not None:
            undo_create(cat, created)
        if new_namespace:
            cat.drop_namespace((database,))
        spark.sql(f"ALTER TABLE {backup} RENAME TO {_quoted(database, name)}")
        raise
    if drop_backup:
        try:
            spark.sql(f"DROP TABLE {backup}")
        except Exception as exc:  # as Java: the migration stands, the backup stays
            _LOG.error("Cannot drop the backup table %s after the migration: %s", backup, exc)
    snapshot = cat.load_table((database, name)).current_snapshot()
    if snapshot is None or snapshot.summary is None:
        return 0
    return int(snapshot.summary.get("total-data-files", 0))
