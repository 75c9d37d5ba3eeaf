"""The ``partitions`` table: per partition, its data, position-delete and equality-delete
record and file counts and the snapshot that last updated it (Java's ``PartitionsTable``).

Files of every partition spec are counted under the table's unified partition type
(:func:`~icepark.table.inspect.schemas.table_partition_type`), a spec's missing fields null.
As in Java, two partitions are the same only when their values are equal *and* their specs
have as many of the unified fields (a file of an older spec with fewer fields never merges
into a newer spec's partition whose extra fields happen to be null). ``spec_id`` and the
last update come from the live file whose snapshot was committed last (the first such file
when several share that time); files whose snapshot has expired do not update them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from icepark.arrow._rows import hashable
from icepark.arrow.schema import schema_to_arrow, type_to_arrow
from icepark.planning.walk import manifests_of, read_entries_table
from icepark.spec.manifests import FileContent
from icepark.table.inspect.arrow_values import empty_table
from icepark.table.inspect.context import InspectContext
from icepark.table.inspect.schemas import data_file_struct, partitions_schema, table_partition_type

__all__ = ["partitions_table"]

_NONE = np.iinfo(np.int64).min
_READ = frozenset(("content", "record_count", "file_size_in_bytes", "spec_id", "partition"))


def _sum(groups: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    out = np.zeros(count, dtype=np.int64)
    np.add.at(out, groups, values)
    return out


def partitions_table(ctx: InspectContext, snapshot_id: int | None = None, **kw: Any) -> pa.Table:
    """The partitions of the snapshot (the current one by default)."""
    md = ctx.metadata
    schema = schema_to_arrow(partitions_schema(md), include_field_ids=False)
    snapshot = ctx.snapshot(snapshot_id, **kw)
    ptype = table_partition_type(md)
    struct = data_file_struct(ptype)
    full_type = type_to_arrow(struct, include_field_ids=False)
    assert isinstance(full_type, pa.StructType)
    # only what the table sums up: no metric maps, whatever the number of files
    arrow_type = pa.struct([f for f in full_type if f.name in _READ])
    entries = read_entries_table(
        ctx.io, manifests_of(ctx.io, snapshot), arrow_type, struct, ctx.specs, live_only=True
    )
    n = entries.num_rows
    if n == 0:
        return empty_table(schema)
    data_file = entries.column("data_file").combine_chunks()
    content = data_file.field("content").to_numpy(zero_copy_only=False)
    records = data_file.field("record_count").to_numpy(zero_copy_only=False)
    sizes = data_file.field("file_size_in_bytes").to_numpy(zero_copy_only=False)
    spec_ids = data_file.field("spec_id").to_numpy(zero_copy_only=False).astype(np.int64)

    # group rows by (number of the unified fields the file's spec has, partition values)
    if ptype.fields:
        partition = data_file.field("partition")
        present = {
            spec_id: sum(1 for f in ptype.fields if f.field_id in {pf.field_id for pf in s.fields})
            for spec_id, s in ctx.specs.items()
        }
        columns = [partition.field(i).to_pylist() for i in range(len(ptype.fields))]
        keys = zip(
            (present.get(int(s), 0) for s in spec_ids),
            *([hashable(v) for v in col] for col in columns),
        )
        index: dict[Any, int] = {}
        groups = np.fromiter((index.setdefault(k, len(index)) for k in keys), np.int64, n)
        count = len(index)
    else:
        groups = np.zeros(n, dtype=np.int64)
        count = 1

    times_by_id = {s.snapshot_id: s.timestamp_ms * 1000 for s in md.snapshots}
    snap_ids = entries.column("snapshot_id").to_pylist()
    committed = np.array(
        [_NONE if s is None else times_by_id.get(s, _NONE) for s in snap_ids], dtype=np.int64
    )
    # per group the first row of the latest commit (a stable sort keeps file order on ties)
    order = np.lexsort((np.arange(n), -committed.astype(np.float64), groups))
    first = np.ones(n, dtype=bool)
    first[1:] = groups[order][1:] != groups[order][:-1]
    best = order[first]  # one row per group, in group order
    best_time = committed[best]
    updated = best_time != _NONE

    is_data = content == int(FileContent.DATA)
    is_pos = content == int(FileContent.POSITION_DELETES)
    is_eq = content == int(FileContent.EQUALITY_DELETES)
    out: dict[str, pa.Array] = {}
    if ptype.fields:
        out["partition"] = data_file.field("partition").take(pa.array(best))
        out["spec_id"] = pa.array(np.where(updated, spec_ids[best], 0), pa.int32())
    out["record_count"] = pa.array(_sum(groups, np.where(is_data, records, 0), count))
    out["file_count"] = pa.array(_sum(groups, is_data.astype(np.int64), count), pa.int32())
    out["total_data_file_size_in_bytes"] = pa.array(
        _sum(groups, np.where(is_data, sizes, 0), count)
    )
    out["position_delete_record_count"] = pa.array(
        _sum(groups, np.where(is_pos, records, 0), count)
    )
    out["position_delete_file_count"] = pa.array(
        _sum(groups, is_pos.astype(np.int64), count), pa.int32()
    )
    out["equality_delete_record_count"] = pa.array(_sum(groups, np.where(is_eq, records, 0), count))
    out["equality_delete_file_count"] = pa.array(
        _sum(groups, is_eq.astype(np.int64), count), pa.int32()
    )
    out["last_updated_at"] = pa.array(best_time, pa.int64(), mask=~updated).cast(
        schema.field("last_updated_at").type
    )
    best_snapshot = np.array([0 if s is None else s for s in snap_ids], dtype=np.int64)[best]
    out["last_updated_snapshot_id"] = pa.array(best_snapshot, pa.int64(), mask=~updated)
    return pa.Table.from_pydict(out, schema=schema)
