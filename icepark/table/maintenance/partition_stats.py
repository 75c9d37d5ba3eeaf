"""Partition statistics files (the spec's "Partition Statistics"; Java's
``PartitionStatsHandler`` and the ``compute_partition_stats`` procedure).

:func:`compute_partition_stats` counts, for one snapshot (the current one by default), every
partition's data records, data files and their bytes, position and equality delete records
and files, and deletion vectors (v3), writes them as a file of the table's default format
into the metadata folder (``partition-stats-<snapshot id>-<uuid>.<format>``), and registers it
for the snapshot (``set-partition-statistics``). A snapshot that has a file already keeps it
(nothing is computed). As in Java:

- every entry of the snapshot's data and delete manifests counts, a partition being a spec
  and its values: a live entry adds its file (a Puffin position-delete file is a deletion
  vector), and every entry, deleted ones too, makes its snapshot the partition's last update
  when that snapshot is newer (``last_updated_at``, ``last_updated_snapshot_id``; none when
  the entries' snapshots have expired); so a partition whose files are all deleted keeps a
  row of zeros;
- the partition is written in the table's partition type (every spec's fields, a spec's
  missing ones null), and the rows sorted by it, nulls first; ``total_record_count`` (which
  needs the data read) is left null.

The schema is Java's ``PartitionStatistics.schema``: on v3 tables the delete counts are
required and ``dv_count`` is added. Failing before the commit leaves no file behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.arrow.rows_file import write_rows
from icepark.arrow.schema import schema_to_arrow, type_to_arrow
from icepark.arrow.writer import data_file_format
from icepark.errors import CommitStateUnknownError, ValidationError
from icepark.planning.walk import iter_entries_tables, manifests_of
from icepark.spec import properties as P
from icepark.spec.manifests import FileContent, FileFormat
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import PartitionStatisticsFile, Snapshot
from icepark.spec.types import IntegerType, LongType, NestedField, StructType
from icepark.spec.updates import AssertTableUUID, SetPartitionStatisticsUpdate
from icepark.table.inspect.schemas import data_file_struct, table_partition_type

__all__ = [
    "compute_partition_stats",
    "partition_stats_rows",
    "partition_statistics_schema",
]

_ENTRY_FIELDS = ("content", "file_format", "partition", "record_count", "file_size_in_bytes",
                 "spec_id")  # fmt: skip
_DELETED = 2
_COUNTS = ("data_record_count", "data_file_count", "total_data_file_size_in_bytes",
           "position_delete_record_count", "position_delete_file_count",
           "equality_delete_record_count", "equality_delete_file_count", "dv_count")  # fmt: skip


def partition_statistics_schema(partition_type: StructType, format_version: int) -> Schema:
    """Java's ``PartitionStatistics.schema(partitionType, formatVersion)``."""
    v3 = format_version >= 3
    fields = [
        NestedField(1, "partition", partition_type, True),
        NestedField(2, "spec_id", IntegerType(), True),
        NestedField(3, "data_record_count", LongType(), True),
        NestedField(4, "data_file_count", IntegerType(), True),
        NestedField(5, "total_data_file_size_in_bytes", LongType(), True),
        NestedField(6, "position_delete_record_count", LongType(), v3),
        NestedField(7, "position_delete_file_count", IntegerType(), v3),
        NestedField(8, "equality_delete_record_count", LongType(), v3),
        NestedField(9, "equality_delete_file_count", IntegerType(), v3),
        NestedField(10, "total_record_count", LongType(), False),
        NestedField(11, "last_updated_at", LongType(), False),
        NestedField(12, "last_updated_snapshot_id", LongType(), False),
    ]
    if v3:
        fields.append(NestedField(13, "dv_count", IntegerType(), True))
    return Schema(*fields)


def _entry_parts(io: Any, metadata: TableMetadata, snapshot: Snapshot) -> Iterator[pa.Table]:
    """The entries of the snapshot's manifests, a part at a time: status, snapshot and the
    file's content, format, spec, partition (in the table's partition type), records and
    bytes."""
    ptype = table_partition_type(metadata)
    struct = StructType(
        *[f for f in data_file_struct(ptype).fields if f.name in _ENTRY_FIELDS]
    )  # fmt: skip
    arrow_type = type_to_arrow(struct, include_field_ids=False)
    assert isinstance(arrow_type, pa.StructType)
    specs = {s.spec_id: s for s in metadata.partition_specs}
    yield from iter_entries_tables(
        io, manifests_of(io, snapshot), arrow_type, struct, specs, live_only=False
    )


def _grouped(entries: pa.Table, fields: int) -> pa.Table:
    """One part's entries summed per partition (``p0``... and ``spec``) and snapshot."""
    f = entries.column("data_file").combine_chunks()
    part = f.field("partition")
    live = pc.not_equal(entries.column("status"), _DELETED)
    content = f.field("content")
    puffin = pc.equal(f.field("file_format"), FileFormat.PUFFIN.value)

    def kind(value: int) -> pa.Array:
        return pc.and_(live, pc.equal(content, value))

    data, eq = kind(int(FileContent.DATA)), kind(int(FileContent.EQUALITY_DELETES))
    positions = kind(int(FileContent.POSITION_DELETES))
    records, size = f.field("record_count"), f.field("file_size_in_bytes")
    zero = pa.scalar(0, pa.int64())
    flat = pa.table(
        {
            **{f"p{i}": part.field(i) for i in range(fields)},
            "spec": f.field("spec_id"),
            "snapshot": entries.column("snapshot_id"),
            "data_record_count": pc.if_else(data, records, zero),
            "data_file_count": pc.cast(data, pa.int64()),
            "total_data_file_size_in_bytes": pc.if_else(data, size, zero),
            "position_delete_record_count": pc.if_else(positions, records, zero),
            "position_delete_file_count": pc.cast(
                pc.and_(positions, pc.invert(puffin)), pa.int64()
            ),
            "equality_delete_record_count": pc.if_else(eq, records, zero),
            "equality_delete_file_count": pc.cast(eq, pa.int64()),
            "dv_count": pc.cast(pc.and_(positions, puffin), pa.int64()),
        }
    )
    keys = [*[f"p{i}" for i in range(fields)], "spec", "snapshot"]
    return flat.group_by(keys, use_threads=False).aggregate([(c, "sum") for c in _COUNTS])


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is not None, v) for v in row)


def partition_stats_rows(io: Any, metadata: TableMetadata, snapshot: Snapshot) -> pa.Table:
    """The partition statistics of ``snapshot`` (see the module docstring), as Arrow of
    :func:`partition_statistics_schema`'s shape, sorted by partition. The manifests are
    summed a part at a time (per partition and snapshot: few rows), so memory follows the
    partitions and snapshots, not the files."""
    ptype = table_partition_type(metadata)
    schema = partition_statistics_schema(ptype, metadata.format_version)
    arrow_schema = schema_to_arrow(schema, include_field_ids=True)
    names = [pf.name for pf in ptype.fields]
    keys = [*[f"p{i}" for i in range(len(names))], "spec"]
    times = {s.snapshot_id: s.timestamp_ms for s in metadata.snapshots}
    stats: dict[tuple[Any, ...], dict[str, Any]] = {}
    for entries in _entry_parts(io, metadata, snapshot):
        for row in _grouped(entries, len(names)).to_pylist():
            key = tuple(row[k] for k in keys)
            found = stats.get(key)
            if found is None:
                found = stats[key] = dict.fromkeys(_COUNTS, 0)
                found["last_updated_at"] = found["last_updated_snapshot_id"] = None
            for c in _COUNTS:
                found[c] += row[f"{c}_sum"]
            at = times.get(row["snapshot"])
            last = found["last_updated_at"]
            if at is not None and (last is None or last < at):
                found["last_updated_at"], found["last_updated_snapshot_id"] = at, row["snapshot"]
    ordered = sorted(stats.items(), key=lambda kv: (_sort_key(kv[0][:-1]), kv[0][-1]))
    columns: dict[str, Any] = {
        "partition": [dict(zip(names, key[:-1], strict=True)) for key, _ in ordered],
        "spec_id": [key[-1] for key, _ in ordered],
        "total_record_count": [None] * len(ordered),
    }
    for name in (*_COUNTS, "last_updated_at", "last_updated_snapshot_id"):
        columns[name] = [s[name] for _, s in ordered]
    return pa.table(
        {field.name: pa.array(columns[field.name], field.type) for field in arrow_schema},
        schema=arrow_schema,
    )


def _snapshot(metadata: TableMetadata, snapshot_id: int | None, name: str) -> Snapshot | None:
    if snapshot_id is None:
        return metadata.current_snapshot()
    found = metadata.snapshot_by_id(snapshot_id)
    if found is None:
        raise ValidationError(f"Snapshot not found: {snapshot_id} (table {name})")
    return found


def compute_partition_stats(
    table: Any, snapshot_id: int | None = None
) -> PartitionStatisticsFile | None:
    """Compute, write and register the partition statistics file of ``snapshot_id`` (the
    current snapshot by default) of ``table``; the file, or None for a table without
    snapshots or a snapshot without entries. A snapshot with a file already returns it.

    Raises:
        ValidationError: the table is not partitioned, or has no such snapshot.
    """
    metadata: TableMetadata = table.metadata
    if not table_partition_type(metadata).fields:
        raise ValidationError(f"Table must be partitioned: {table.name}")
    snapshot = _snapshot(metadata, snapshot_id, table.name)
    if snapshot is None:
        return None
    existing = metadata.partition_statistics_for(snapshot.snapshot_id)
    if existing is not None:
        return existing
    rows = partition_stats_rows(table.io, metadata, snapshot)
    if rows.num_rows == 0:
        return None
    file_format = data_file_format(metadata.properties)
    schema = partition_statistics_schema(
        table_partition_type(metadata), metadata.format_version
    )  # fmt: skip
    folder = P.metadata_folder(metadata.location, metadata.properties)
    name = f"partition-stats-{snapshot.snapshot_id}-{uuid.uuid4()}.{file_format.value.lower()}"
    location = f"{folder}/{name}"
    size = write_rows(table.io, location, file_format, rows, schema, metadata.properties)
    stats = PartitionStatisticsFile(snapshot.snapshot_id, location, size)
    try:
        table.commit(
            [AssertTableUUID(metadata.table_uuid)], [SetPartitionStatisticsUpdate(stats)]
        )  # fmt: skip
    except CommitStateUnknownError:
        raise  # the commit may have landed: the file may be referenced
    except BaseException:
        table.io.delete_quietly(location)  # nothing references it
        raise
    return stats
