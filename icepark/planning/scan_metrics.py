"""The counters of a planned scan, as Java's ``ScanMetricsResult`` names them: what a REST
client sends in a scan report after planning.

:class:`PlanCounts` adds up the plan's tasks as they stream out (nothing is kept of them);
:func:`scan_metrics` completes the counters from the snapshot's manifest list (cached by the
walk, so no manifest is read again): data and delete manifests in the snapshot, those the
filter let the planner open (``scanned``) and those it skipped, and the data files of the
opened manifests the filter pruned (``skipped-data-files``, when the manifest list records
its live file counts). Delete-index counters (Java's ``indexed-delete-files`` and its split
by kind) need the delete manifests' entries, which the plan does not keep, and are left out
rather than guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from icepark.expressions import BooleanExpression
from icepark.io import FileIO
from icepark.manifest import ManifestContent, ManifestFile
from icepark.planning.matching import FileMatcher
from icepark.planning.planner import FileScanTask
from icepark.planning.walk import manifests_of
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot

__all__ = ["PlanCounts", "scan_metrics"]


@dataclass
class PlanCounts:
    """Running totals of a plan's tasks (each a whole data file, as the planner makes them)."""

    data_files: int = 0
    data_bytes: int = 0
    delete_files: int = 0  # per task, as Java counts them (a delete file once per data file)
    delete_bytes: int = 0

    def add(self, task: FileScanTask) -> None:
        self.data_files += 1
        self.data_bytes += task.file.file_size_in_bytes
        self.delete_files += len(task.delete_files)
        self.delete_bytes += sum(d.file_size_in_bytes for d in task.delete_files)


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
    counts: PlanCounts,
    case_sensitive: bool = True,
) -> dict[str, int]:
    """Java's scan counters (``result-data-files``, ``scanned-data-manifests``, ...) for the
    plan ``counts`` adds up, of ``snapshot`` under ``row_filter``."""
    out = {
        "result-data-files": counts.data_files,
        "result-delete-files": counts.delete_files,
        "total-file-size-in-bytes": counts.data_bytes,
        "total-delete-file-size-in-bytes": counts.delete_bytes,
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
    live = [(m.added_files_count, m.existing_files_count) for m in opened_data]
    if all(a is not None and e is not None for a, e in live):
        in_opened = sum((a or 0) + (e or 0) for a, e in live)
        out["skipped-data-files"] = max(in_opened - counts.data_files, 0)
    return out
