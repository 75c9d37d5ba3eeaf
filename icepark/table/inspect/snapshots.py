"""The tables read from the table metadata alone: ``snapshots``, ``history``, ``refs`` and
``metadata_log_entries`` (Java's ``SnapshotsTable``, ``HistoryTable``, ``RefsTable`` and
``MetadataLogEntriesTable``). Times are microseconds in UTC, as Java gives them."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from icepark.arrow.schema import schema_to_arrow
from icepark.table.inspect.context import InspectContext
from icepark.table.inspect.schemas import (
    HISTORY_SCHEMA,
    METADATA_LOG_ENTRIES_SCHEMA,
    REFS_SCHEMA,
    SNAPSHOTS_SCHEMA,
)

__all__ = ["history_table", "metadata_log_entries_table", "refs_table", "snapshots_table"]


def _table(columns: dict[str, Any], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pydict(columns, schema=schema)


def snapshots_table(ctx: InspectContext) -> pa.Table:
    """A row per snapshot: commit time, id, parent, operation, manifest list and summary
    (without ``operation``, which has its own column)."""
    snaps = ctx.metadata.snapshots
    return _table(
        {
            "committed_at": [s.timestamp_ms * 1000 for s in snaps],
            "snapshot_id": [s.snapshot_id for s in snaps],
            "parent_id": [s.parent_snapshot_id for s in snaps],
            "operation": [None if s.operation is None else s.operation.value for s in snaps],
            "manifest_list": [s.manifest_list for s in snaps],
            "summary": [
                None if s.summary is None else list(s.summary.properties.items()) for s in snaps
            ],
        },
        schema_to_arrow(SNAPSHOTS_SCHEMA, include_field_ids=False),
    )


def _current_ancestors(ctx: InspectContext) -> set[int]:
    current = ctx.metadata.current_snapshot_id
    return {s.snapshot_id for s in ctx.metadata.ancestors_of(current)}


def history_table(ctx: InspectContext) -> pa.Table:
    """A row per snapshot-log entry: when it became current, its parent, and whether it is an
    ancestor of the current snapshot (rolled-back snapshots are not)."""
    md = ctx.metadata
    ancestors = _current_ancestors(ctx)
    log = md.snapshot_log
    parents = []
    for e in log:
        snap = md.snapshot_by_id(e.snapshot_id)
        parents.append(None if snap is None else snap.parent_snapshot_id)
    return _table(
        {
            "made_current_at": [e.timestamp_ms * 1000 for e in log],
            "snapshot_id": [e.snapshot_id for e in log],
            "parent_id": parents,
            "is_current_ancestor": [e.snapshot_id in ancestors for e in log],
        },
        schema_to_arrow(HISTORY_SCHEMA, include_field_ids=False),
    )


def refs_table(ctx: InspectContext) -> pa.Table:
    """A row per branch and tag with its retention settings."""
    refs = ctx.metadata.refs
    names = list(refs)
    return _table(
        {
            "name": names,
            "type": [refs[n].type.name for n in names],
            "snapshot_id": [refs[n].snapshot_id for n in names],
            "max_reference_age_in_ms": [refs[n].max_ref_age_ms for n in names],
            "min_snapshots_to_keep": [refs[n].min_snapshots_to_keep for n in names],
            "max_snapshot_age_in_ms": [refs[n].max_snapshot_age_ms for n in names],
        },
        schema_to_arrow(REFS_SCHEMA, include_field_ids=False),
    )


def metadata_log_entries_table(ctx: InspectContext) -> pa.Table:
    """A row per earlier metadata file and one for the current one: when it was written, and
    the snapshot that was current on ``main`` then (from the snapshot log, as Java finds it),
    with that snapshot's schema id and sequence number when it still exists."""
    md = ctx.metadata
    entries = [(e.timestamp_ms, e.metadata_file) for e in md.metadata_log]
    entries.append((md.last_updated_ms, ctx.metadata_location or ""))
    latest_ids: list[int | None] = []
    schema_ids: list[int | None] = []
    sequences: list[int | None] = []
    for ts, _ in entries:
        found: int | None = None
        for e in md.snapshot_log:
            if e.timestamp_ms <= ts:
                found = e.snapshot_id
        snap = None if found is None else md.snapshot_by_id(found)
        latest_ids.append(found)
        schema_ids.append(None if snap is None else snap.schema_id)
        sequences.append(None if snap is None else snap.sequence_number)
    return _table(
        {
            "timestamp": [ts * 1000 for ts, _ in entries],
            "file": [path for _, path in entries],
            "latest_snapshot_id": latest_ids,
            "latest_schema_id": schema_ids,
            "latest_sequence_number": sequences,
        },
        schema_to_arrow(METADATA_LOG_ENTRIES_SCHEMA, include_field_ids=False),
    )
