"""``snapshot_table``: an Iceberg table over a Spark table's Parquet files, which stay where
they are and stay the source's (Java's ``snapshot`` procedure, ``SnapshotTableSparkAction``).

The source is a table of Spark's session catalog (``spark_catalog``), as in Java. The new
table gets the source's schema, an identity partition field per partition column, the
source's properties (but its location ones and ``path``, ``transient_lastDdlTime``,
``serialization.format``) and the ones given, then ``gc.enabled=false`` and
``snapshot=true``: expiry and orphan removal then never delete the source's files. Its
location must not overlap the source's. The source's files are then added in one ``append``
(:func:`~icepark.spark.maintenance.add_files.add_files`: footers read on the executors, a
name mapping committed for files without field ids). If that fails, the new table is dropped
and its metadata file deleted; the source's files are never touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from icepark.errors import ValidationError
from icepark.spark.maintenance.add_files import add_files
from icepark.spark.maintenance.session_source import (
    new_table_properties,
    overlap,
    read_source,
    undo_create,
)
from icepark.spark.types import iceberg_schema_from_spark
from icepark.spec import properties as P

__all__ = ["snapshot_table"]


def snapshot_table(
    spark: SparkSession,
    source: str,
    table: str,
    *,
    catalog: Any = None,
    location: str | None = None,
    properties: Mapping[str, str] | None = None,
) -> int:
    """Create ``table`` in ``catalog`` as a snapshot of Spark's table ``source`` (see the
    module docstring); the number of data files imported (Java's ``imported_files_count``).

    Args:
        spark: the session whose catalog has ``source``.
        source: a table of Spark's session catalog (``db.t`` or ``spark_catalog.db.t``).
        table: the new table's name in ``catalog``.
        catalog: a Catalog, a configured catalog name or catalog properties (default:
            ``icepark.load_catalog()``).
        location: the new table's location (default: the catalog's).
        properties: more table properties.

    Returns:
        The number of data files the new table references (Java's ``imported_files_count``).

    Raises:
        ValidationError: the source is no Parquet table of Spark's, the names are the same,
            or the locations overlap.
        TableAlreadyExistsError: ``table`` exists.
    """
    from icepark.catalog.identifiers import to_identifier
    from icepark.spark.tables import resolve_catalog

    if source == table:
        raise ValidationError(
            "Cannot create a snapshot with the same name as the source of the snapshot."
        )
    cat = resolve_catalog(catalog)
    src = read_source(spark, source, "snapshot")
    props = new_table_properties(src, properties, {P.GC_ENABLED.name: "false", "snapshot": "true"})
    schema = iceberg_schema_from_spark(spark.table(source).schema, optional=True)
    # checked before anything is created: undoing a table dropped its folder, which would
    # hold source files if the two overlapped
    target = location or cat.default_table_location(to_identifier(table))
    if src.location and overlap(target, src.location):
        raise ValidationError(
            f"Cannot create a snapshot at location {target} because it would overlap with "
            f"source table location {src.location}"
        )
    created = cat.create_table(
        table, schema, partition_by=list(src.partitions), location=location, properties=props
    )
    try:
        add_files(spark, created, source, check_duplicate_files=True)
    except BaseException:
        undo_create(cat, created)
        raise
    snapshot = cat.load_table(table).current_snapshot()
    if snapshot is None or snapshot.summary is None:
        return 0
    return int(snapshot.summary.get("total-data-files", 0))
