"""Scan planning: snapshot -> manifests -> live entries -> file scan tasks, then splits.

Pruning, in order: manifests by their partition summaries (each spec's inclusive
projection), entries by partition values, then by column metrics; each remaining file gets
the residual of the filter for its partition, simplified to true when the strict metrics
show that every row matches. Manifests are read in parallel.

Data manifests are read with :func:`~icepark.manifest.pruned.read_manifest_pruned`: entries
whose column metrics rule them out are dropped while the manifest is scanned, before they are
decoded (the result is the same as judging every decoded file).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from icepark.expressions import AlwaysTrue, BooleanExpression, residual_evaluator
from icepark.io import FileIO
from icepark.manifest import (
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest,
    read_manifest_list,
)
from icepark.manifest.pruned import read_manifest_pruned
from icepark.planning.delete_index import DeleteFileIndex
from icepark.planning.matching import FileMatcher
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot

__all__ = ["FileScanTask", "CombinedScanTask", "plan_files", "plan_tasks", "SplitOptions"]


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


def _read_entries(
    io: FileIO, manifest: ManifestFile, matcher: FileMatcher | None
) -> list[ManifestEntry]:
    """The live entries of ``manifest``; with ``matcher``, only those whose metrics might
    match its filter (the others are skipped before they are decoded)."""
    input_file = io.new_input(manifest.manifest_path)
    if matcher is not None and not matcher.matches_everything:
        return read_manifest_pruned(
            input_file, manifest, matcher.metrics_field_ids, matcher.metrics_might_match
        )
    return [
        e for e in read_manifest(input_file, manifest) if e.status != ManifestEntryStatus.DELETED
    ]


def _parallel(
    io: FileIO, manifests: Sequence[ManifestFile], workers: int, matcher: FileMatcher | None
) -> Iterator[list[ManifestEntry]]:
    if len(manifests) <= 1 or workers <= 1:
        for m in manifests:
            yield _read_entries(io, m, matcher)
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(manifests))) as pool:
        yield from pool.map(lambda m: _read_entries(io, m, matcher), manifests)


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
    if snapshot is None or not snapshot.manifest_list:
        return []
    schema = schema or metadata.schema()
    specs = metadata.specs()
    matcher = FileMatcher(schema, specs, row_filter, case_sensitive)
    manifests = read_manifest_list(io.new_input(snapshot.manifest_list))
    data_manifests = [
        m
        for m in manifests
        if m.content == ManifestContent.DATA and matcher.manifest_might_match(m)
    ]
    delete_manifests = [
        m
        for m in manifests
        if m.content == ManifestContent.DELETES and matcher.manifest_might_match(m)
    ]
    deletes = DeleteFileIndex(specs)
    for entries in _parallel(io, delete_manifests, workers, None):
        deletes.add_entries(e for e in entries if _delete_might_match(matcher, e.data_file))
    residuals = {
        spec_id: residual_evaluator(spec, row_filter, schema, case_sensitive)
        for spec_id, spec in specs.items()
    }
    tasks: list[FileScanTask] = []
    for entries in _parallel(io, data_manifests, workers, matcher):
        for e in entries:
            f = e.data_file
            if not matcher.might_match(f):
                continue
            spec_id = f.spec_id or 0
            seq = e.sequence_number or 0
            residual: BooleanExpression = residuals[spec_id].residual_for(tuple(f.partition))
            if not isinstance(residual, AlwaysTrue) and matcher.all_match(f):
                residual = AlwaysTrue()
            tasks.append(
                FileScanTask(f, tuple(deletes.for_data_file(f, seq)), residual, spec_id, seq)
            )
    return tasks


def _delete_might_match(matcher: FileMatcher, f: DataFile) -> bool:
    # Delete files carry the partition of the rows they delete; their metrics describe the
    # delete file's own columns, so only the partition can prune them.
    return matcher.partition_might_match(f.spec_id or 0, tuple(f.partition))


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
