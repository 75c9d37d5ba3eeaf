"""A Parquet table of Spark's session catalog (``spark_catalog``) as the source of an Iceberg
table made over its files: Java's ``snapshot`` and ``migrate`` procedures
(:mod:`~icepark.spark.maintenance.snapshot_table`,
:mod:`~icepark.spark.maintenance.migrate_table`).

What both need of the source: its location, whether Spark manages its files, its partition
columns and its properties (without the ones Java leaves out: ``path``,
``transient_lastDdlTime``, ``serialization.format``); and, when either fails, the one way back
for the Iceberg table it created: drop it and delete the one metadata file its creation wrote,
never a data file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from icepark.errors import ValidationError
from icepark.spec import properties as P

__all__ = ["SourceTable", "read_source", "new_table_properties", "overlap", "undo_create"]

_EXCLUDED = ("path", "transient_lastDdlTime", "serialization.format")
_LOCATIONS = (
    "location",
    P.WRITE_METADATA_LOCATION.name,
    P.WRITE_FOLDER_STORAGE_LOCATION.name,
    "write.object-storage.path",
    P.WRITE_DATA_LOCATION.name,
)


@dataclass(frozen=True)
class SourceTable:
    """What the Iceberg table made over a Spark table needs of it."""

    name: str
    location: str
    managed: bool
    partitions: tuple[str, ...]
    properties: Mapping[str, str]


def read_source(spark: SparkSession, source: str, action: str) -> SourceTable:
    """The Parquet table ``source`` of Spark's session catalog; ``action`` (``snapshot``,
    ``migrate``) names what is refused in the errors.

    Raises:
        ValidationError: Spark knows no such table, or it is not a Parquet table.
    """
    try:
        described = spark.sql(f"DESCRIBE TABLE EXTENDED {source}").collect()
        columns = spark.catalog.listColumns(source)
    except Exception as exc:
        raise ValidationError(
            f"Cannot {action} {source!r}: not a table Spark knows ({exc})"
        ) from None
    info = {str(r[0]).strip(): str(r[1]) for r in described if r[0]}
    provider = info.get("Provider", "").lower()
    if provider not in ("parquet", "hive"):
        raise ValidationError(
            f"Cannot {action} {source!r}: only Parquet tables (provider {provider or 'none'})"
        )
    props = {
        str(r[0]): str(r[1])
        for r in spark.sql(f"SHOW TBLPROPERTIES {source}").collect()
        if r[0] not in _EXCLUDED
    }
    return SourceTable(
        name=source,
        location=info.get("Location", "").rstrip("/"),
        managed=info.get("Type", "").upper() == "MANAGED",
        partitions=tuple(c.name for c in columns if c.isPartition),
        properties=props,
    )


def new_table_properties(
    source: SourceTable, given: Mapping[str, str] | None, fixed: Mapping[str, str]
) -> dict[str, str]:
    """The new table's properties: the source's without its locations and provider, then
    ``given``, then ``fixed`` (what the operation must set, e.g. ``gc.enabled=false``)."""
    props = dict(source.properties)
    for key in (*_LOCATIONS, "provider"):
        props.pop(key, None)
    props.update(given or {})
    props.update(fixed)
    return props


def overlap(a: str, b: str) -> bool:
    """Whether one location holds the other."""
    a, b = a.removeprefix("file:").rstrip("/"), b.removeprefix("file:").rstrip("/")
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def undo_create(catalog: Any, created: Any) -> None:
    """Drop the new table and delete the one metadata file its creation wrote (``add_files``
    removes what it wrote itself when it fails): never a data file, they are the source's."""
    catalog.drop_table(created.identifier, purge=False)
    if created.metadata_location:
        created.io.delete_quietly(created.metadata_location)
