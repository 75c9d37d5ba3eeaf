"""The entries and files tables: ``entries``, ``files``, ``data_files``, ``delete_files`` and
``all_entries``, ``all_files``, ``all_data_files``, ``all_delete_files``.

Java reads them from different manifests (``BaseFilesTable``, ``BaseEntriesTable``):

* ``entries``: every entry (deleted ones too) of the snapshot's manifests;
* ``files`` / ``data_files`` / ``delete_files``: the live entries' files of the snapshot's
  manifests, data and delete manifests, data manifests, or delete manifests;
* the ``all_`` forms: the same over the manifests of every snapshot of the table, each
  manifest once (so a file kept in two manifests shows twice, as in Java).

All of them come from a columnar read of the manifests, a part of the manifests at a time
(:func:`~icepark.planning.walk.iter_entries_tables`), plus ``readable_metrics``
(:mod:`icepark.table.inspect.readable_metrics`); the ``*_batches`` functions stream those
parts, so that a table of a million files can be listed in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from icepark.arrow.schema import schema_to_arrow, type_to_arrow
from icepark.manifest import ManifestContent, ManifestFile
from icepark.planning.walk import iter_entries_tables, manifests_of, unique_manifests
from icepark.spec.snapshots import Snapshot
from icepark.table.inspect.context import InspectContext
from icepark.table.inspect.readable_metrics import readable_metrics
from icepark.table.inspect.schemas import (
    READABLE_METRICS,
    data_file_struct,
    entries_schema,
    files_schema,
    readable_metrics_columns,
    table_partition_type,
)

__all__ = [
    "entries_batches",
    "entries_table",
    "files_batches",
    "files_table",
    "reachable_manifests",
    "snapshot_manifests",
]

_MAPS = (
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
)


def snapshot_manifests(
    ctx: InspectContext, snapshot: Snapshot | None, content: ManifestContent | None
) -> list[ManifestFile]:
    """The manifests of one snapshot (of one content when given)."""
    return manifests_of(ctx.io, snapshot, content)


def reachable_manifests(ctx: InspectContext, content: ManifestContent | None) -> list[ManifestFile]:
    """The manifests of every snapshot of the table, each once (Java's reachable manifests)."""
    found = unique_manifests(ctx.io, ctx.metadata.snapshots)
    return [m for m in found if content is None or m.content == content]


def _parts(
    ctx: InspectContext, manifests: Sequence[ManifestFile], live_only: bool
) -> Iterator[pa.Table]:
    struct = data_file_struct(table_partition_type(ctx.metadata))
    arrow_type = type_to_arrow(struct, include_field_ids=False)
    assert isinstance(arrow_type, pa.StructType)
    return iter_entries_tables(
        ctx.io, manifests, arrow_type, struct, ctx.specs, live_only=live_only
    )


def _metrics(ctx: InspectContext, data_file: pa.StructArray, arrow_schema: pa.Schema) -> pa.Array:
    metrics_type = arrow_schema.field(READABLE_METRICS).type
    columns = readable_metrics_columns(ctx.metadata.schema())
    maps = {name: data_file.field(name) for name in _MAPS}
    return readable_metrics(maps, columns, metrics_type, len(data_file))


def _struct(column: pa.ChunkedArray, arrow_type: pa.DataType) -> pa.StructArray:
    arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if len(arr) == 0:
        arr = pa.nulls(0, arrow_type)
    assert isinstance(arr, pa.StructArray)
    return arr


def files_batches(
    ctx: InspectContext, manifests: Sequence[ManifestFile]
) -> Iterator[pa.RecordBatch]:
    """The live files of ``manifests`` with their ``readable_metrics``, a part of the
    manifests at a time (memory bounded by a part, not by the table)."""
    arrow_schema = files_schema_arrow(ctx)
    file_type = pa.struct([f for f in arrow_schema if f.name != READABLE_METRICS])
    for entries in _parts(ctx, manifests, live_only=True):
        data_file = _struct(entries.column("data_file"), file_type)
        columns = [data_file.field(i) for i in range(data_file.type.num_fields)]
        columns.append(_metrics(ctx, data_file, arrow_schema))
        yield pa.RecordBatch.from_arrays(columns, schema=arrow_schema)


def files_table(ctx: InspectContext, manifests: Sequence[ManifestFile]) -> pa.Table:
    """The live files of ``manifests`` with their ``readable_metrics``."""
    return pa.Table.from_batches(list(files_batches(ctx, manifests)), files_schema_arrow(ctx))


def files_schema_arrow(ctx: InspectContext) -> pa.Schema:
    """The Arrow schema of the files tables."""
    return schema_to_arrow(files_schema(ctx.metadata), include_field_ids=False)


def entries_schema_arrow(ctx: InspectContext) -> pa.Schema:
    """The Arrow schema of the entries tables."""
    return schema_to_arrow(entries_schema(ctx.metadata), include_field_ids=False)


def entries_batches(
    ctx: InspectContext, manifests: Sequence[ManifestFile]
) -> Iterator[pa.RecordBatch]:
    """Every entry of ``manifests`` (added, existing and deleted) with
    ``readable_metrics``, a part of the manifests at a time."""
    arrow_schema = entries_schema_arrow(ctx)
    for entries in _parts(ctx, manifests, live_only=False):
        data_file = _struct(entries.column("data_file"), arrow_schema.field("data_file").type)
        columns = [
            _array(entries.column(name))
            for name in ("status", "snapshot_id", "sequence_number", "file_sequence_number")
        ]
        columns += [data_file, _metrics(ctx, data_file, arrow_schema)]
        yield pa.RecordBatch.from_arrays(columns, schema=arrow_schema)


def entries_table(ctx: InspectContext, manifests: Sequence[ManifestFile]) -> pa.Table:
    """Every entry of ``manifests`` (added, existing and deleted) with ``readable_metrics``."""
    batches = list(entries_batches(ctx, manifests))
    return pa.Table.from_batches(batches, entries_schema_arrow(ctx))


def _array(column: pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
