"""``compute_table_stats``: the number of distinct values of columns, as Apache DataSketches
theta sketches in a Puffin statistics file registered for a snapshot (Java's
``ComputeTableStatsSparkAction``).

How it flows: the snapshot is read on Spark (icepark's reader, only the columns asked for);
each task turns every non-null value into Iceberg's single-value serialization and keeps the
smallest theta hashes per column (:mod:`icepark.puffin.theta`); the driver unions the tasks'
hashes, serializes one compact sketch per column and writes them as
``apache-datasketches-theta-v1`` blobs (zstd, with the ``ndv`` estimate as a property) into
``<metadata folder>/<snapshot id>-<uuid>.stats``, then commits a ``set-statistics`` update.
Columns default to the snapshot schema's top-level primitive columns, as Java's; a table
without snapshots gets no file (None).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession

from icepark.errors import CommitStateUnknownError, InvalidSchemaError, ValidationError
from icepark.puffin.file import PuffinWriter, parse_footer
from icepark.puffin.theta import (
    NDV_PROPERTY,
    THETA_BLOB_TYPE,
    compact_sketch,
    hash_values,
    merge_hashes,
    sketch_estimate,
)
from icepark.spark.tables import resolve_table
from icepark.spec.conversions import to_bytes
from icepark.spec.properties import metadata_folder
from icepark.spec.snapshots import BlobMetadata, StatisticsFile
from icepark.spec.types import PrimitiveType, UUIDType
from icepark.spec.updates import AssertTableUUID, SetStatisticsUpdate
from icepark.table import Table

__all__ = ["compute_table_stats"]


def _serialized(column: pa.Array, field_type: PrimitiveType) -> Iterator[bytes]:
    """Iceberg's binary form of each non-null value (timestamps as micros, dates as days,
    a UUID as its 16 bytes: Spark holds it as a string)."""
    values = column.drop_null()
    if pa.types.is_timestamp(values.type):
        values = values.cast(pa.timestamp("us", values.type.tz)).cast(pa.int64())
    elif pa.types.is_date(values.type):
        values = values.cast(pa.int32())
    uuids = isinstance(field_type, UUIDType)
    for value in values.to_pylist():
        yield to_bytes(field_type, uuid.UUID(value) if uuids else value)


def _task(
    batches: Iterator[pa.RecordBatch], types: Sequence[PrimitiveType]
) -> Iterator[pa.RecordBatch]:
    kept: list[np.ndarray] = [np.array([], dtype=np.uint64) for _ in types]
    for batch in batches:
        for i, field_type in enumerate(types):
            found = hash_values(_serialized(batch.column(i), field_type))
            kept[i] = merge_hashes([kept[i], found])
    yield pa.RecordBatch.from_pylist(
        [{f"c{i}": hashes.astype("<u8").tobytes() for i, hashes in enumerate(kept)}],
        schema=pa.schema([(f"c{i}", pa.binary()) for i in range(len(types))]),
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("icepark")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def _columns(table: Table, schema: Any, columns: Sequence[str] | None) -> list[Any]:
    names = (
        list(columns)
        if columns is not None
        else [f.name for f in schema.as_struct().fields if f.field_type.is_primitive]
    )
    if not names:
        raise ValidationError(f"No columns found to compute stats for table {table.name}")
    fields = []
    for name in names:
        try:
            field = schema.find_field(name)
        except InvalidSchemaError:
            raise ValidationError(
                f"Can't find column {name} in table {table.name}: {schema.column_names()}"
            ) from None
        if not field.field_type.is_primitive:
            raise ValidationError(
                f"Can't compute stats on non-primitive type column: {name} ({field.field_type})"
            )
        fields.append((name, field))
    return fields


def compute_table_stats(
    spark: SparkSession,
    table: Table | str,
    snapshot_id: int | None = None,
    columns: Sequence[str] | None = None,
    *,
    catalog: Any = None,
) -> StatisticsFile | None:
    """Compute the number of distinct values of columns on Spark, as Apache DataSketches theta
    sketches in a Puffin statistics file registered for a snapshot (Java's
    ``compute_table_stats`` procedure); see the module docstring for how it flows. A file
    registered before for the same snapshot is replaced.

    Args:
        spark: the session (classic or Spark Connect).
        table: a Table, or a name looked up in ``catalog``.
        snapshot_id: the snapshot the statistics are of (default: the current one).
        columns: the columns (primitive, nested ones by dotted name); default every
            top-level primitive column of the snapshot's schema.
        catalog: a Catalog, a configured catalog name or a mapping of catalog properties
            where ``table`` is a name (default: ``icepark.load_catalog()``).

    Returns:
        The statistics file's entry (its path, size and blobs, each with its ``ndv``), or
        None when the table has no snapshot.

    Raises:
        ValidationError: no such snapshot, a column that does not exist or is not
            primitive, or no column to compute.
        CommitFailedError: a concurrent commit conflicts (the statistics file written is
            deleted again).
        NoSuchTableError: the table does not exist.
    """
    from pyspark.sql import functions as F

    from icepark.spark.read.reader import read

    resolved = resolve_table(table, catalog)
    snapshot = (
        resolved.current_snapshot() if snapshot_id is None else resolved.snapshot(snapshot_id)
    )
    if snapshot is None:
        if snapshot_id is not None:
            raise ValidationError(f"Snapshot not found: {snapshot_id} in table {resolved.name}")
        return None
    schemas = resolved.schemas()
    schema = schemas.get(snapshot.schema_id) if snapshot.schema_id is not None else None
    schema = schema or resolved.schema()
    fields = _columns(resolved, schema, columns)
    frame = read(spark, resolved, snapshot_id=snapshot.snapshot_id)
    selected = frame.select(
        *[
            F.col(f"`{name}`" if "." not in name else name).alias(f"c{i}")
            for i, (name, _) in enumerate(fields)
        ]
    )
    types = [f.field_type for _, f in fields]
    out_schema = ", ".join(f"c{i} binary" for i in range(len(fields)))
    parts = selected.mapInArrow(functools.partial(_task, types=types), out_schema).collect()
    writer = PuffinWriter({"created-by": f"icepark {_version()} Spark {spark.version}"})
    for i, (_, field) in enumerate(fields):
        hashes = merge_hashes(
            np.frombuffer(bytes(row[i]), dtype="<u8").astype(np.uint64) for row in parts
        )
        sketch = compact_sketch(hashes)
        writer.add(
            THETA_BLOB_TYPE,
            sketch,
            fields=[field.field_id],
            snapshot_id=snapshot.snapshot_id,
            sequence_number=snapshot.sequence_number,
            compression_codec="zstd",
            properties={NDV_PROPERTY: str(int(sketch_estimate(sketch)))},
        )
    # Java's ops.metadataFileLocation: write.metadata.path, else <table location>/metadata
    md = resolved.metadata
    folder = metadata_folder(md.location, md.properties)
    location = f"{folder}/{snapshot.snapshot_id}-{uuid.uuid4()}.stats"
    data = writer.to_bytes()
    resolved.io.new_output(location).write_bytes(data)
    statistics = StatisticsFile(
        snapshot.snapshot_id,
        location,
        len(data),
        parse_footer(data, location).footer_size,
        None,
        tuple(
            BlobMetadata(b.type, b.snapshot_id, b.sequence_number, b.fields, b.properties)
            for b in writer.blobs
        ),
    )
    try:
        resolved.commit(
            [AssertTableUUID(resolved.metadata.table_uuid)], [SetStatisticsUpdate(statistics)]
        )
    except CommitStateUnknownError:
        raise  # the commit may have landed: the file may be referenced
    except BaseException:
        resolved.io.delete_quietly(location)  # nothing references it: leave nothing behind
        raise
    return statistics
