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

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, repeat
from typing import TYPE_CHECKING, overload

from icepark.expressions import AlwaysTrue, BooleanExpression, residual_evaluator
from icepark.io import FileIO
from icepark.manifest import (
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.planning.delete_index import DeleteFileIndex
from icepark.planning.matching import FileMatcher
from icepark.planning.walk import (
    live_manifests,
    read_entries,
    scan_columns,
    use_columns,
)
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot

if TYPE_CHECKING:
    import numpy as np

    from icepark.manifest.entry_columns import EntryColumns

__all__ = [
    "FileScanTask",
    "CombinedScanTask",
    "PlannedFiles",
    "TaskBuilder",
    "data_tasks",
    "delete_index",
    "index_deletes",
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


_new = object.__new__


def _whole_file_tasks(
    files: Iterable[DataFile],
    seqs: Iterable[int],
    residuals: Iterable[BooleanExpression],
    spec_id: int,
    deletes: DeleteFileIndex | None,
) -> Iterator[FileScanTask]:
    """The tasks of whole files, built without the checks of ``__init__`` (the fields are
    already in their final form): a plan of a million files builds a million tasks, and this
    loop is most of its time in Python. A field at its class default (no deletes, spec 0,
    sequence number 0, start 0, no length) is not stored in the instance: reading it finds
    the default, and equality, ``replace`` and pickling read fields by name."""
    new, cls = _new, FileScanTask
    for f, seq, residual in zip(files, seqs, residuals, strict=True):
        task = new(cls)
        d = task.__dict__
        d["file"] = f
        d["residual"] = residual
        if seq > 0:
            d["data_sequence_number"] = seq
        if spec_id:
            d["spec_id"] = spec_id
        if deletes is not None:
            d["delete_files"] = tuple(deletes.for_data_file(f, seq if seq > 0 else 0))
        yield task


class PlannedFiles(Sequence[FileScanTask]):
    """The file scan tasks of a plan, produced while they are read: iterating plans the
    scan as it goes and keeps nothing (so a plan of a million files streams in bounded
    memory, and each iteration plans anew, as Java's ``planFiles()``). Asking for the
    length, an item or a slice plans once and keeps the list (``list(plan)`` asks for the
    length first). ``first`` is the plan already started, whose checks have run (a bad
    filter fails when the plan is asked for, not when it is read); the first iteration
    takes it."""

    def __init__(
        self,
        plan: Callable[[], Iterator[FileScanTask]],
        first: Iterator[FileScanTask] | None = None,
    ) -> None:
        self._plan = plan
        self._first = first
        self._tasks: list[FileScanTask] | None = None

    def __iter__(self) -> Iterator[FileScanTask]:
        if self._tasks is not None:
            return iter(self._tasks)
        return self._stream()

    def _stream(self) -> Iterator[FileScanTask]:
        """An iteration that plans when first advanced (a generator's body starts then), so
        that ``list(plan)`` (which takes an iterator, then asks the length, which keeps the
        list) plans once, from the list kept if there is one by then. Closing it stops the
        plan (the planner's own stream is an ``itertools.chain``, which has no ``close``:
        dropping it closes the generators it holds)."""
        kept = self._tasks
        yield from (kept if kept is not None else self._start())

    def _start(self) -> Iterator[FileScanTask]:
        """A new plan (the one started when the plan was asked for, if still unread)."""
        first, self._first = self._first, None
        return first if first is not None else self._plan()

    def _list(self) -> list[FileScanTask]:
        if self._tasks is None:
            self._tasks = list(self._start())
        return self._tasks

    def __len__(self) -> int:
        return len(self._list())

    @overload
    def __getitem__(self, index: int) -> FileScanTask: ...

    @overload
    def __getitem__(self, index: slice) -> list[FileScanTask]: ...

    def __getitem__(self, index: int | slice) -> FileScanTask | list[FileScanTask]:
        return self._list()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PlannedFiles | list | tuple):
            return self._list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PlannedFiles({self._list()!r})"


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

    def tasks_of(
        self, columns: EntryColumns, rows: np.ndarray, deletes: DeleteFileIndex | None = None
    ) -> Iterator[FileScanTask]:
        """The tasks of entries ``rows`` of a manifest decoded into arrays, as :meth:`task`
        makes them, each data file decoded only as far as it is read
        (:class:`~icepark.manifest.entry_columns.LazyDataFile`); residuals are worked out once
        per distinct partition."""
        from icepark.manifest.entry_columns import lazy_data_files

        spec_id = columns.spec_id
        seqs = columns.sequence_numbers[rows].tolist()
        files = lazy_data_files(columns, rows.tolist())
        if deletes is not None and deletes.is_empty:
            deletes = None
        always = AlwaysTrue()
        if self.matcher.matches_everything:
            residuals: Iterable[BooleanExpression] = repeat(always, len(rows))
            return _whole_file_tasks(files, seqs, residuals, spec_id, deletes)
        distinct, which = columns.partitions()
        of_partition = [
            always
            if isinstance(r := self._residuals[spec_id].residual_for(p), AlwaysTrue)
            or self.matcher.partition_all_match(spec_id, p)
            else r
            for p in distinct
        ]
        residuals = [of_partition[k] for k in which[rows].tolist()]
        if any(r is not always for r in of_partition):
            # a residual is true where the strict metrics show every row matches
            all_match = self.matcher.metrics_all_match_rows(columns, rows).tolist()
            residuals = [always if m else r for r, m in zip(residuals, all_match, strict=True)]
        return _whole_file_tasks(files, seqs, residuals, spec_id, deletes)


def delete_index(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    matcher: FileMatcher | None = None,
    workers: int = 8,
) -> DeleteFileIndex:
    """The live delete files of ``snapshot`` (those that may apply to rows ``matcher``
    selects), indexed by partition and sequence number."""
    manifests = live_manifests(io, snapshot, matcher, ManifestContent.DELETES)
    return index_deletes(io, metadata, manifests, matcher, workers)


def index_deletes(
    io: FileIO,
    metadata: TableMetadata,
    manifests: Sequence[ManifestFile],
    matcher: FileMatcher | None = None,
    workers: int = 8,
) -> DeleteFileIndex:
    """:func:`delete_index` of given delete manifests (read here, in order)."""
    deletes = DeleteFileIndex(metadata.specs())
    for _, entries in read_entries(io, manifests, matcher, live_only=True, workers=workers):
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
    (delete manifests are read first, when the stream is first advanced), so that reading can
    start before planning ends and a reader that stops early stops planning too."""
    return chain.from_iterable(
        _plan_groups(io, metadata, snapshot, row_filter, schema, case_sensitive, workers)
    )


def _plan_groups(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression,
    schema: Schema | None,
    case_sensitive: bool,
    workers: int,
) -> Iterator[Iterable[FileScanTask]]:
    if snapshot is None or not snapshot.manifest_list:
        return
    builder = TaskBuilder(metadata, row_filter, schema, case_sensitive)
    deletes = delete_index(io, metadata, snapshot, builder.matcher, workers)
    manifests = live_manifests(io, snapshot, builder.matcher, ManifestContent.DATA)
    yield from _data_task_groups(io, builder, manifests, deletes, workers)


def data_tasks(
    io: FileIO,
    builder: TaskBuilder,
    manifests: Sequence[ManifestFile],
    deletes: DeleteFileIndex | None,
    workers: int = 8,
) -> Iterator[FileScanTask]:
    """The tasks of the data files of ``manifests`` (read here, in order) that may hold rows
    ``builder``'s filter selects, ``deletes`` attached: by arrays when the manifests are big
    enough (:func:`~icepark.planning.walk.use_columns`), else entry by entry."""
    return chain.from_iterable(_data_task_groups(io, builder, manifests, deletes, workers))


def _data_task_groups(
    io: FileIO,
    builder: TaskBuilder,
    manifests: Sequence[ManifestFile],
    deletes: DeleteFileIndex | None,
    workers: int = 8,
) -> Iterator[Iterable[FileScanTask]]:
    """:func:`data_tasks` a manifest at a time: an iterable of each manifest's tasks. A plan
    of a million files hands each task through every generator between its maker and the
    reader, so the levels above the maker are flattened by ``chain`` (in C) instead."""
    if use_columns(manifests):
        for scanned in scan_columns(io, manifests, builder.matcher, workers=workers):
            if len(scanned) == 3:
                yield builder.tasks_of(scanned[1], scanned[2], deletes)
            else:
                yield (builder.task(e, deletes) for e in scanned[1])
        return
    for _, entries in read_entries(io, manifests, builder.matcher, workers=workers):
        # pruned by partition and metrics already; made as they are read (a list of a
        # manifest's tasks would keep thousands of young objects for the collector to scan)
        yield (builder.task(e, deletes) for e in entries)


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
