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
from icepark.spark.types import iceberg_schema_from_spark
from icepark.spec import properties as P

__all__ = ["snapshot_table"]

_EXCLUDED = ("path", "transient_lastDdlTime", "serialization.format")
_LOCATIONS = (
    "location",
    P.WRITE_METADATA_LOCATION.name,
    P.WRITE_FOLDER_STORAGE_LOCATION.name,
    "write.object-storage.path",
    P.WRITE_DATA_LOCATION.name,
)


def _source_details(spark: SparkSession, source: str) -> tuple[str, dict[str, str], list[str]]:
    """(location, properties, partition columns) of a table of Spark's session catalog."""
    try:
        described = spark.sql(f"DESCRIBE TABLE EXTENDED {source}").collect()
        columns = spark.catalog.listColumns(source)
    except Exception as exc:
        raise ValidationError(
            f"Cannot snapshot {source!r}: not a table Spark knows ({exc})"
        ) from None
    info = {str(r[0]).strip(): str(r[1]) for r in described if r[0]}
    provider = info.get("Provider", "").lower()
    if provider not in ("parquet", "hive"):
        raise ValidationError(
            f"Cannot snapshot {source!r}: only Parquet tables (provider {provider or 'none'})"
        )
    props = {
        str(r[0]): str(r[1])
        for r in spark.sql(f"SHOW TBLPROPERTIES {source}").collect()
        if r[0] not in _EXCLUDED
    }
    partitions = [c.name for c in columns if c.isPartition]
    return info.get("Location", "").rstrip("/"), props, partitions


def _overlap(a: str, b: str) -> bool:
    a, b = a.removeprefix("file:").rstrip("/"), b.removeprefix("file:").rstrip("/")
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


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
    source_location, props, partitions = _source_details(spark, source)
    for key in _LOCATIONS:
        props.pop(key, None)
    props.update(properties or {})
    props.update({P.GC_ENABLED.name: "false", "snapshot": "true"})
    props.pop("provider", None)
    schema = iceberg_schema_from_spark(spark.table(source).schema, optional=True)
    # checked before anything is created: undoing a table dropped its folder, which would
    # hold source files if the two overlapped
    target = location or cat.default_table_location(to_identifier(table))
    if source_location and _overlap(target, source_location):
        raise ValidationError(
            f"Cannot create a snapshot at location {target} because it would overlap with "
            f"source table location {source_location}"
        )
    created = cat.create_table(
        table, schema, partition_by=partitions, location=location, properties=props
    )
    try:
        add_files(spark, created, source, check_duplicate_files=True)
    except BaseException:
        _undo(cat, created)
        raise
    snapshot = cat.load_table(table).current_snapshot()
    if snapshot is None or snapshot.summary is None:
        return 0
    return int(snapshot.summary.get("total-data-files", 0))


def _undo(cat: Any, created: Any) -> None:
    """Drop the new table and delete the one metadata file its creation wrote (``add_files``
    removes what it wrote itself when it fails): never a data file, they are the source's."""
    cat.drop_table(created.identifier, purge=False)
    if created.metadata_location:
        created.io.delete_quietly(created.metadata_location)
