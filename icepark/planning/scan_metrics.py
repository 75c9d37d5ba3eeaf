"""The counters of a planned scan, as Java's ``ScanMetricsResult`` names them: what a REST
client sends in a scan report after planning.

Counted from the plan's tasks and the snapshot's manifest list (cached by the walk, so no
manifest is read again): result files and their sizes, data and delete manifests in the
snapshot, those the filter let the planner open (``scanned``) and those it skipped, and the
data files of the opened manifests the filter pruned (``skipped-data-files``, when the
manifest list records its live file counts). Delete-index counters (Java's
``indexed-delete-files`` and its split by kind) need the delete manifests' entries, which the
plan does not keep, and are left out rather than guessed.
"""

from __future__ import annotations

from collections.abc import Sequence

from icepark.expressions import BooleanExpression
from icepark.io import FileIO
from icepark.manifest import ManifestContent, ManifestFile
from icepark.planning.matching import FileMatcher
from icepark.planning.planner import FileScanTask
from icepark.planning.walk import manifests_of
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot

__all__ = ["scan_metrics"]


def _live(manifest: ManifestFile) -> bool:
    return bool(manifest.has_added_files or manifest.has_existing_files)


def _opened(manifests: Sequence[ManifestFile], matcher: FileMatcher) -> list[ManifestFile]:
    """The manifests the planner reads: those holding live files whose partition summaries
    may match the filter (the rule of :func:`~icepark.planning.walk.live_entries`)."""
    return [m for m in manifests if _live(m) and matcher.manifest_might_match(m)]


def scan_metrics(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression,
    schema: Schema,
    tasks: Sequence[FileScanTask],
    case_sensitive: bool = True,
) -> dict[str, int]:
    """Java's scan counters (``result-data-files``, ``scanned-data-manifests``, ...) for
    ``tasks``, the plan of ``snapshot`` under ``row_filter``."""
    data_files = {t.file.file_path: t.file.file_size_in_bytes for t in tasks}
    out = {
        "result-data-files": len(data_files),
        "result-delete-files": sum(len(t.delete_files) for t in tasks),
        "total-file-size-in-bytes": sum(data_files.values()),
        "total-delete-file-size-in-bytes": sum(
            d.file_size_in_bytes for t in tasks for d in t.delete_files
        ),
    }
    if snapshot is None:
        return out
    matcher = FileMatcher(schema, metadata.specs(), row_filter, case_sensitive)
    data = manifests_of(io, snapshot, ManifestContent.DATA)
    deletes = manifests_of(io, snapshot, ManifestContent.DELETES)
    opened_data, opened_deletes = _opened(data, matcher), _opened(deletes, matcher)
    out["total-data-manifests"] = len(data)
    out["scanned-data-manifests"] = len(opened_data)
    out["skipped-data-manifests"] = len(data) - len(opened_data)
    out["total-delete-manifests"] = len(deletes)
    out["scanned-delete-manifests"] = len(opened_deletes)
    out["skipped-delete-manifests"] = len(deletes) - len(opened_deletes)
    counts = [(m.added_files_count, m.existing_files_count) for m in opened_data]
    if all(a is not None and e is not None for a, e in counts):
        live = sum((a or 0) + (e or 0) for a, e in counts)
        out["skipped-data-files"] = max(live - len(data_files), 0)
    return out
