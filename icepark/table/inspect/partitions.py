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
from icepark.planning.live_files import live_files
from icepark.planning.walk import manifests_of
from icepark.spec.manifests import FileContent
from icepark.spec.types import StructType
from icepark.table.inspect.arrow_values import empty_table, internal_to_arrow
from icepark.table.inspect.context import InspectContext
from icepark.table.inspect.schemas import partitions_schema, table_partition_type

__all__ = ["partitions_table"]

_NONE = np.iinfo(np.int64).min


def _sum(groups: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    out = np.zeros(count, dtype=np.int64)
    np.add.at(out, groups, values)
    return out


def _partition_column(ptype: StructType, values: list[tuple[Any, ...]]) -> pa.StructArray:
    arrow_type = type_to_arrow(ptype, include_field_ids=False)
    assert isinstance(arrow_type, pa.StructType)
    arrays = [
        internal_to_arrow([v[i] for v in values], f.field_type, arrow_type.field(i).type)
        for i, f in enumerate(ptype.fields)
    ]
    return pa.StructArray.from_arrays(arrays, fields=list(arrow_type))


def partitions_table(ctx: InspectContext, snapshot_id: int | None = None, **kw: Any) -> pa.Table:
    """The partitions of the snapshot (the current one by default)."""
    md = ctx.metadata
    schema = schema_to_arrow(partitions_schema(md), include_field_ids=False)
    snapshot = ctx.snapshot(snapshot_id, **kw)
    ptype = table_partition_type(md)
    unified = [f.field_id for f in ptype.fields]
    # where each unified field is in a spec's tuple (None: the spec lacks it)
    positions = {
        spec_id: [
            next((i for i, pf in enumerate(spec.fields) if pf.field_id == fid), None)
            for fid in unified
        ]
        for spec_id, spec in ctx.specs.items()
    }
    # two partitions are one when their specs have as many unified fields and values equal
    index: dict[Any, int] = {}
    group_values: list[tuple[Any, ...]] = []
    parts: list[tuple[np.ndarray, ...]] = []
    for files in live_files(ctx.io, manifests_of(ctx.io, snapshot)):
        where = positions.get(files.spec_id, [None] * len(unified))
        present = sum(p is not None for p in where)
        tuples, which = files.partitions()
        local = np.empty(len(tuples), dtype=np.int64)
        for i, values in enumerate(tuples):
            row = tuple(None if p is None else values[p] for p in where)
            key = (present, *(hashable(v) for v in row))
            found = index.get(key)
            if found is None:
                found = index[key] = len(group_values)
                group_values.append(row)
            local[i] = found
        spec_ids = np.full(len(which), files.spec_id, dtype=np.int64)
        parts.append(
            (
                local[which],
                files.content,
                files.record_count,
                files.file_size_in_bytes,
                files.snapshot_ids,
                spec_ids,
            )
        )
    n = sum(len(p[0]) for p in parts)
    if n == 0:
        return empty_table(schema)
    groups, content, records, sizes, snap_ids, spec_ids = (
        np.concatenate([p[i] for p in parts]) for i in range(6)
    )
    # partitions in the order their first files come (a manifest's distinct partitions come
    # sorted from its arrays), those of no live file left out
    first_row = np.full(len(group_values), n, dtype=np.int64)
    np.minimum.at(first_row, groups, np.arange(n))
    order = np.argsort(first_row, kind="stable")[: int(np.count_nonzero(first_row < n))]
    count = len(order)
    renumber = np.empty(len(group_values), dtype=np.int64)
    renumber[order] = np.arange(count)
    groups = renumber[groups]
    group_values = [group_values[i] for i in order.tolist()]

    times_by_id = {s.snapshot_id: s.timestamp_ms * 1000 for s in md.snapshots}
    distinct, at = np.unique(snap_ids, return_inverse=True)
    times = np.array([times_by_id.get(int(s), _NONE) for s in distinct], dtype=np.int64)
    committed = times[at.reshape(-1)]
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
        out["partition"] = _partition_column(ptype, group_values)
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
    out["last_updated_snapshot_id"] = pa.array(snap_ids[best], pa.int64(), mask=~updated)
    return pa.Table.from_pydict(out, schema=schema)
