"""Scan planning: snapshot -> manifests -> live entries -> file scan tasks, then splits.

Pruning, in order: manifests by their partition summaries (each spec's inclusive
projection), entries by partition values, then by column metrics; each remaining file gets
the residual of the filter for its partition, simplified to true when the strict metrics
show that every row matches. Manifests are read in parallel.

Manifests are read by :func:`~icepark.planning.walk.live_entries`: data entries whose column
metrics rule them out are dropped while the manifest is scanned, before they are decoded (the
result is the same as judging every decoded file); delete entries are pruned by partition
only (their metrics describe the delete file's own columns).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from icepark.expressions import AlwaysTrue, BooleanExpression, residual_evaluator
from icepark.io import FileIO
from icepark.manifest import (
    DataFile,
    ManifestContent,
    ManifestEntry,
)
from icepark.planning.delete_index import DeleteFileIndex
from icepark.planning.matching import FileMatcher
from icepark.planning.walk import live_entries
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot

__all__ = [
    "FileScanTask",
    "CombinedScanTask",
    "TaskBuilder",
    "delete_index",
    "iter_plan_files",
    "plan_files",
    "plan_tasks",
    "SplitOptions",
    "adjust_split_size",
]


@dataclass(frozen=True)
class FileScanTask:
    """One data file (or a byte range of it) to read, with what applies to it.

    Small and picklable: this is what a Spark task receives.
    """

    file: DataFile
    delete_files: tuple[DataFile, ...] = ()
    residual: BooleanExpression = field(default_factory=AlwaysTrue)
    spec_id: int = 0
    data_sequence_number: int = 0
    start: int = 0
    length: int | None = None

    @property
    def size(self) -> int:
        return self.length if self.length is not None else self.file.file_size_in_bytes

    @property
    def is_whole_file(self) -> bool:
        return self.start == 0 and self.length is None


@dataclass(frozen=True)
class CombinedScanTask:
    tasks: tuple[FileScanTask, ...]

    @property
    def size(self) -> int:
        return sum(t.size for t in self.tasks)


@dataclass(frozen=True)
class SplitOptions:
    """``read.split.target-size`` (128 MB), ``read.split.planning-lookback`` (10),
    ``read.split.open-file-cost`` (4 MB)."""

    target_size: int = 128 * 1024 * 1024
    lookback: int = 10
    open_file_cost: int = 4 * 1024 * 1024

    @classmethod
    def from_properties(cls, props: dict[str, str] | None) -> SplitOptions:
        props = props or {}
        return cls(
            P.SPLIT_SIZE.get(props), P.SPLIT_LOOKBACK.get(props), P.SPLIT_OPEN_FILE_COST.get(props)
        )


MIN_SPLIT_SIZE = 16 * 1024 * 1024


def adjust_split_size(scan_size: int, parallelism: int, split_size: int) -> int:
    """The split size for a scan of ``scan_size`` bytes on ``parallelism`` slots: the
    configured one when it gives every slot a split, else ``scan_size / parallelism`` (at
    least 16 MB or the configured size when that is smaller), as Java's
    ``TableScanUtil.adjustSplitSize``."""
    if parallelism < 1 or split_size < 1:
        raise ValueError(f"parallelism and split size must be positive: {parallelism} {split_size}")
    split_count = -(-scan_size // split_size)
    adjusted = max(scan_size // parallelism, min(MIN_SPLIT_SIZE, split_size))
    return adjusted if split_count < parallelism else split_size


class TaskBuilder:
    """Makes the :class:`FileScanTask` of a data file's manifest entry: its residual of the
    filter for its partition (true when the strict metrics show every row matches) and the
    delete files of ``deletes`` that apply to it. Used by every planner of data files (full
    scans here, incremental scans in :mod:`icepark.table.incremental.append_scan`)."""

    def __init__(
        self,
        metadata: TableMetadata,
        row_filter: BooleanExpression,
        schema: Schema | None = None,
        case_sensitive: bool = True,
    ) -> None:
        self.schema = schema or metadata.schema()
        self.specs = metadata.specs()
        self.row_filter = row_filter
        self.matcher = FileMatcher(self.schema, self.specs, row_filter, case_sensitive)
        self._residuals = {
            spec_id: residual_evaluator(spec, row_filter, self.schema, case_sensitive)
            for spec_id, spec in self.specs.items()
        }

    def task(self, entry: ManifestEntry, deletes: DeleteFileIndex | None = None) -> FileScanTask:
        f = entry.data_file
        spec_id = f.spec_id or 0
        seq = entry.sequence_number or 0
        residual: BooleanExpression = self._residuals[spec_id].residual_for(tuple(f.partition))
        if not isinstance(residual, AlwaysTrue) and self.matcher.all_match(f):
            residual = AlwaysTrue()
        applying = tuple(deletes.for_data_file(f, seq)) if deletes is not None else ()
        return FileScanTask(f, applying, residual, spec_id, seq)


def delete_index(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    matcher: FileMatcher | None = None,
    workers: int = 8,
) -> DeleteFileIndex:
    """The live delete files of ``snapshot`` (those that may apply to rows ``matcher``
    selects), indexed by partition and sequence number."""
    deletes = DeleteFileIndex(metadata.specs())
    for _, entries in live_entries(
        io, metadata, snapshot, matcher, ManifestContent.DELETES, workers=workers
    ):
        deletes.add_entries(entries)
    return deletes


def plan_files(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression,
    schema: Schema | None = None,
    case_sensitive: bool = True,
    workers: int = 8,
) -> list[FileScanTask]:
    """The file scan tasks of ``snapshot`` that may hold rows matching ``row_filter``."""
    return list(
        iter_plan_files(io, metadata, snapshot, row_filter, schema, case_sensitive, workers)
    )


def iter_plan_files(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression,
    schema: Schema | None = None,
    case_sensitive: bool = True,
    workers: int = 8,
) -> Iterator[FileScanTask]:
    """:func:`plan_files` as a stream: the tasks of each data manifest as soon as it is read
    (delete manifests are read first), so that reading can start before planning ends and a
    reader that stops early stops planning too."""
    if snapshot is None or not snapshot.manifest_list:
        return
    builder = TaskBuilder(metadata, row_filter, schema, case_sensitive)
    deletes = delete_index(io, metadata, snapshot, builder.matcher, workers)
    for _, entries in live_entries(
        io, metadata, snapshot, builder.matcher, ManifestContent.DATA, workers=workers
    ):
        for e in entries:  # pruned by partition and metrics already
            yield builder.task(e, deletes)


def _split(task: FileScanTask, target: int) -> Iterable[FileScanTask]:
    """Split a large file at its split offsets (row-group starts) into pieces of about
    ``target`` bytes; a reader takes the row groups that start inside its byte range."""
    offsets = sorted(set(task.file.split_offsets or []))
    size = task.file.file_size_in_bytes
    if len(offsets) < 2 or size <= target:
        yield task
        return
    points = [0, *offsets[1:], size]
    start = 0
    for end in points[1:]:
        if end - start >= target or end == size:
            yield replace(task, start=start, length=end - start)
            start = end


def plan_tasks(tasks: Iterable[FileScanTask], options: SplitOptions) -> list[CombinedScanTask]:
    """Split big files and bin-pack tasks into combined tasks of about the target size.

    Each task weighs at least ``open_file_cost``; up to ``lookback`` bins stay open, and a
    task goes into the first open bin it fits in (Java's BinPacking with lookback).
    """
    bins: list[tuple[int, list[FileScanTask]]] = []
    done: list[CombinedScanTask] = []
    for task in tasks:
        for piece in _split(task, options.target_size):
            weight = max(
                piece.size + sum(d.file_size_in_bytes for d in piece.delete_files),
                options.open_file_cost,
            )
            for i, (filled, items) in enumerate(bins):
                if filled + weight <= options.target_size:
                    items.append(piece)
                    bins[i] = (filled + weight, items)
                    break
            else:
                bins.append((weight, [piece]))
                if len(bins) > options.lookback:
                    # Close the fullest bin, as Java does when it exceeds the lookback.
                    fullest = max(range(len(bins)), key=lambda j: bins[j][0])
                    done.append(CombinedScanTask(tuple(bins.pop(fullest)[1])))
    done.extend(CombinedScanTask(tuple(items)) for _, items in bins)
    return done
