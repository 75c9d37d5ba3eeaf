"""The entries and files tables: ``entries``, ``files``, ``data_files``, ``delete_files`` and
``all_entries``, ``all_files``, ``all_data_files``, ``all_delete_files``.

Java reads them from different manifests (``BaseFilesTable``, ``BaseEntriesTable``):

* ``entries``: every entry (deleted ones too) of the snapshot's manifests;
* ``files`` / ``data_files`` / ``delete_files``: the live entries' files of the snapshot's
  manifests, data and delete manifests, data manifests, or delete manifests;
* the ``all_`` forms: the same over the manifests of every snapshot of the table, each
  manifest once (so a file kept in two manifests shows twice, as in Java).

All of them come from one columnar read of the manifests
(:func:`~icepark.planning.walk.read_entries_table`), plus ``readable_metrics``
(:mod:`icepark.table.inspect.readable_metrics`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from icepark.arrow.schema import schema_to_arrow, type_to_arrow
from icepark.manifest import ManifestContent, ManifestFile
from icepark.planning.walk import manifests_of, read_entries_table, unique_manifests
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

__all__ = ["entries_table", "files_table", "snapshot_manifests", "reachable_manifests"]

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


def _read(ctx: InspectContext, manifests: Sequence[ManifestFile], live_only: bool) -> pa.Table:
    struct = data_file_struct(table_partition_type(ctx.metadata))
    arrow_type = type_to_arrow(struct, include_field_ids=False)
    assert isinstance(arrow_type, pa.StructType)
    return read_entries_table(ctx.io, manifests, arrow_type, struct, ctx.specs, live_only=live_only)


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


def files_table(ctx: InspectContext, manifests: Sequence[ManifestFile]) -> pa.Table:
    """The live files of ``manifests`` with their ``readable_metrics``."""
    arrow_schema = schema_to_arrow(files_schema(ctx.metadata), include_field_ids=False)
    entries = _read(ctx, manifests, live_only=True)
    file_type = pa.struct([f for f in arrow_schema if f.name != READABLE_METRICS])
    data_file = _struct(entries.column("data_file"), file_type)
    columns = [data_file.field(i) for i in range(data_file.type.num_fields)]
    columns.append(_metrics(ctx, data_file, arrow_schema))
    return pa.Table.from_arrays(columns, schema=arrow_schema)


def entries_table(ctx: InspectContext, manifests: Sequence[ManifestFile]) -> pa.Table:
    """Every entry of ``manifests`` (added, existing and deleted) with ``readable_metrics``."""
    arrow_schema = schema_to_arrow(entries_schema(ctx.metadata), include_field_ids=False)
    entries = _read(ctx, manifests, live_only=False)
    data_file = _struct(entries.column("data_file"), arrow_schema.field("data_file").type)
    columns = [entries.column(name) for name in ("status", "snapshot_id", "sequence_number")]
    columns += [entries.column("file_sequence_number"), pa.chunked_array([data_file])]
    columns.append(_metrics(ctx, data_file, arrow_schema))
    return pa.Table.from_arrays(columns, schema=arrow_schema)
