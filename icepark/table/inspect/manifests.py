"""The manifest tables: ``manifests`` (the manifest list of one snapshot) and
``all_manifests`` (every snapshot's list, a row per snapshot and manifest, with
``reference_snapshot_id``), as Java's ``ManifestsTable`` and ``AllManifestsTable``.

File counts are split by content: a data manifest's counts go to the ``*_data_files_count``
columns and zeros to the delete ones, and the other way round. Partition summaries show their
bounds as the partition transform writes them in paths (``2024-01-05``, ``2024-01``), or
``"null"`` for a missing bound, as Java's ``Transform.toHumanString`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from icepark.arrow.schema import schema_to_arrow
from icepark.manifest import ManifestContent, ManifestFile
from icepark.planning.walk import manifests_of, parallel_map
from icepark.spec.conversions import from_bytes
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.types import PrimitiveType, StructType
from icepark.table.inspect.context import InspectContext
from icepark.table.inspect.schemas import ALL_MANIFESTS_SCHEMA, MANIFESTS_SCHEMA

__all__ = ["all_manifests_table", "manifests_table"]


def _bound(spec: PartitionSpec, ptype: StructType, i: int, raw: bytes | None) -> str:
    if i >= len(spec.fields) or i >= len(ptype.fields):
        return "null"
    t = ptype.fields[i].field_type
    value = None
    if raw is not None and isinstance(t, PrimitiveType):
        try:
            value = from_bytes(t, raw)
        except (ValueError, TypeError):
            return raw.hex()
    return spec.fields[i].transform.to_human_string(t, value)


def _summaries(ctx: InspectContext, m: ManifestFile) -> list[dict[str, Any]] | None:
    if m.partitions is None:
        return None
    spec = ctx.specs.get(m.partition_spec_id)
    if spec is None:
        return None
    ptype = spec.partition_type(ctx.metadata.schema())
    return [
        {
            "contains_null": s.contains_null,
            "contains_nan": s.contains_nan,
            "lower_bound": _bound(spec, ptype, i, s.lower_bound),
            "upper_bound": _bound(spec, ptype, i, s.upper_bound),
        }
        for i, s in enumerate(m.partitions)
    ]


def _rows(ctx: InspectContext, manifests: Sequence[ManifestFile]) -> dict[str, list[Any]]:
    def counts(m: ManifestFile, data: bool) -> tuple[int | None, int | None, int | None]:
        if (m.content == ManifestContent.DATA) != data:
            return 0, 0, 0
        return m.added_files_count, m.existing_files_count, m.deleted_files_count

    data = [counts(m, True) for m in manifests]
    deletes = [counts(m, False) for m in manifests]
    return {
        "content": [int(m.content) for m in manifests],
        "path": [m.manifest_path for m in manifests],
        "length": [m.manifest_length for m in manifests],
        "partition_spec_id": [m.partition_spec_id for m in manifests],
        "added_snapshot_id": [m.added_snapshot_id for m in manifests],
        "added_data_files_count": [c[0] for c in data],
        "existing_data_files_count": [c[1] for c in data],
        "deleted_data_files_count": [c[2] for c in data],
        "added_delete_files_count": [c[0] for c in deletes],
        "existing_delete_files_count": [c[1] for c in deletes],
        "deleted_delete_files_count": [c[2] for c in deletes],
        "partition_summaries": [_summaries(ctx, m) for m in manifests],
    }


def manifests_table(ctx: InspectContext, snapshot_id: int | None = None, **kw: Any) -> pa.Table:
    """The manifests of the snapshot (the current one by default)."""
    snapshot = ctx.snapshot(snapshot_id, **kw)
    rows = _rows(ctx, manifests_of(ctx.io, snapshot))
    return pa.Table.from_pydict(
        rows, schema=schema_to_arrow(MANIFESTS_SCHEMA, include_field_ids=False)
    )


def all_manifests_table(ctx: InspectContext) -> pa.Table:
    """Every snapshot's manifests (manifest lists read in parallel), a row per pair."""
    snapshots = [s for s in ctx.metadata.snapshots if s.manifest_list]
    lists = list(parallel_map(lambda s: manifests_of(ctx.io, s), snapshots))
    manifests = [m for found in lists for m in found]
    rows = _rows(ctx, manifests)
    rows["reference_snapshot_id"] = [
        s.snapshot_id for s, found in zip(snapshots, lists) for _ in found
    ]
    schema = schema_to_arrow(ALL_MANIFESTS_SCHEMA, include_field_ids=False)
    return pa.Table.from_pydict(rows, schema=schema)
