"""Planning with manifests read elsewhere: in Spark tasks, when one process is not enough
(Java's ``BaseDistributedDataScan`` and ``SparkDistributedDataScan``).

How it flows (:func:`iter_plan_files`, for a :class:`RemotePlanning`):

* the driver reads the manifest list and prunes manifests by their partition summaries, as a
  local plan does;
* **deletes** (``read.delete-planning-mode``): each delete manifest is read by a remote task
  with :func:`~icepark.planning.walk.read_entries` (live entries, pruned by partition) and its
  entries come back; the driver adds them to a
  :class:`~icepark.planning.delete_index.DeleteFileIndex` in manifest order: the index
  :func:`~icepark.planning.planner.delete_index` builds from the same entries;
* **data** (``read.data-planning-mode``): each data manifest is read and judged by a remote
  task with :func:`~icepark.planning.walk.scan_columns` (partitions and metrics) or, for a
  small plan, :func:`~icepark.planning.walk.read_entries`, the choice a local plan makes
  (:func:`~icepark.planning.walk.use_columns`, made once for the whole plan); only the
  entries kept come back, as their Avro records
  (:class:`~icepark.manifest.kept_entries.KeptEntries`, a chunk of at most
  :data:`ENTRIES_PER_PART`) or, off the compiled path, as entries. A manifest that keeps at
  least :data:`MOST_KEPT` of its entries sends only which ones (:class:`KeptRows`): the
  driver reads that manifest itself, as a local plan does, rather than taking all its
  records back through Spark (a whole-table plan of 10,000,000 files sent 3 GB of them);
* the driver decodes the records again by the same compiled reader and makes the tasks with
  :class:`~icepark.planning.planner.TaskBuilder` (residuals, strict metrics, delete files),
  in manifest order: the tasks of a local plan, task for task.

Where the remote tasks run is a :class:`ManifestRunner` (:mod:`icepark.spark.read.planning`
runs them as Spark tasks); this module knows nothing of Spark.

A stream's first micro-batch reads a whole snapshot, its file list by position (manifest-list
order, then entry order: :mod:`icepark.table.incremental.micro_batches`). Its read tasks can
plan their own share (:class:`SnapshotSlices`): the manifest list's live file counts say
which entries of which manifest hold positions ``[first, stop)`` (:func:`live_file_slices`),
and each read task reads its manifests, takes those entries, keeps the ones the filter may
match and makes their tasks as the driver would; the driver reads no manifest at all.

Modes (:data:`~icepark.spec.properties.PLANNING_MODES`): ``local`` reads every manifest here;
``distributed`` reads them remotely whenever there are any; ``auto`` reads remotely only when
it pays (:func:`plans_remotely`): the cluster has more cores than this process decodes with,
there are more than two manifests a local core, and the manifests hold at least
:data:`AUTO_MIN_BYTES_PER_CORE` a local core (Java's rule, with icepark's own measure of
what a core plans in the time a Spark job takes to start).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from icepark.errors import InvalidAvroFileError
from icepark.expressions import BooleanExpression
from icepark.io import FileIO
from icepark.manifest import ManifestContent, ManifestEntry, ManifestFile
from icepark.planning.delete_index import DeleteFileIndex
from icepark.planning.matching import FileMatcher
from icepark.planning.planner import FileScanTask, TaskBuilder, data_tasks, index_deletes
from icepark.planning.walk import (
    live_manifests,
    partitions_match,
    read_entries,
    scan_columns,
    use_columns,
)
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot

__all__ = [
    "AUTO_MIN_BYTES_PER_CORE",
    "ENTRIES_PER_PART",
    "KeptRows",
    "MOST_KEPT",
    "ManifestRunner",
    "ManifestWork",
    "LiveFiles",
    "RemotePlanning",
    "SnapshotSlices",
    "iter_plan_files",
    "live_file_count",
    "live_file_slices",
    "plans_remotely",
]

T = TypeVar("T")

ENTRIES_PER_PART = 20_000
"""Most entries a remote task sends back in one part (some 6 MB of records, about a fifth
of that compressed): parts are decoded and made into tasks one at a time on the driver."""

MOST_KEPT = 0.5
"""A remote task sends a manifest's kept entries as row numbers (:class:`KeptRows`) when it
keeps at least this share of them, and as records otherwise."""

AUTO_MIN_BYTES_PER_CORE = 32 * 1024 * 1024
"""``auto`` plans remotely only when the manifests (as stored) hold at least this many bytes
for each local core."""

ManifestWork = Callable[[Sequence[Any]], Iterator[tuple[int, Any]]]
"""The work of a remote task: given its inputs (in order), the parts it makes of them, each
as ``(the input's index among them, the part)``, inputs in order, an input's parts in order."""


class ManifestRunner(Protocol):
    """Somewhere work runs in parallel, away from this process (Spark tasks)."""

    @property
    def parallelism(self) -> int:
        """How many inputs it works on at once."""
        ...

    def run(self, work: ManifestWork, inputs: Sequence[Any], what: str) -> Iterator[Any]:
        """The parts ``work`` makes of ``inputs`` (picklable, as ``work`` and the parts are),
        input by input in the order given; ``what`` says what is done, for its job's
        description."""
        ...


@dataclass(frozen=True)
class RemotePlanning:
    """Planning with a :class:`ManifestRunner`, in the given modes (``auto``, ``local`` or
    ``distributed``) for data and delete manifests; ``local_parallelism`` is how many cores
    a local plan decodes with (this machine's), ``remote_workers`` how many manifests a
    remote task decodes at once (its cores)."""

    runner: ManifestRunner
    data_mode: str = "auto"
    delete_mode: str = "auto"
    local_parallelism: int = os.cpu_count() or 1
    remote_workers: int = 1

    def __post_init__(self) -> None:
        for prop, mode in (
            (P.DATA_PLANNING_MODE, self.data_mode),
            (P.DELETE_PLANNING_MODE, self.delete_mode),
        ):
            prop.get({prop.name: mode})  # a ValidationError naming the property and value

    def remotely(self, mode: str, manifests: Sequence[ManifestFile]) -> bool:
        """Are ``manifests`` read remotely in ``mode``?"""
        return plans_remotely(
            mode, manifests, self.runner.parallelism, local_parallelism=self.local_parallelism
        )


def plans_remotely(
    mode: str,
    manifests: Sequence[ManifestFile],
    remote_parallelism: int,
    *,
    local_parallelism: int = os.cpu_count() or 1,
) -> bool:
    """Are ``manifests`` read remotely in ``mode`` (see the module docstring)?"""
    mode = mode.strip().lower()
    if mode == "local" or not manifests:
        return False
    if mode == "distributed":
        return True
    if mode != "auto":
        raise ValueError(f"unknown planning mode {mode!r}")
    size = sum(m.manifest_length for m in manifests)
    return (
        remote_parallelism > local_parallelism
        and len(manifests) > 2 * local_parallelism
        and size >= local_parallelism * AUTO_MIN_BYTES_PER_CORE
    )


# -- the remote tasks' work --------------------------------------------------------------------


@dataclass(frozen=True)
class _Reading:
    """What a remote task needs to read and judge manifests as this process would: the
    table's FileIO (its configuration travels with it), the scan's schema, the table's specs
    and the filter."""

    io: FileIO
    schema: Schema
    specs: dict[int, PartitionSpec]
    row_filter: BooleanExpression
    case_sensitive: bool
    workers: int

    def matcher(self) -> FileMatcher:
        return FileMatcher(self.schema, self.specs, self.row_filter, self.case_sensitive)


@dataclass(frozen=True)
class _DataManifests(_Reading):
    """Reads data manifests, keeps the entries that may hold matching rows."""

    columns: bool = True

    def __call__(self, manifests: Sequence[ManifestFile]) -> Iterator[tuple[int, Any]]:
        from icepark.avro.compiled import kernel_available

        matcher = self.matcher()
        if not (self.columns and kernel_available()):
            found = read_entries(self.io, manifests, matcher, workers=self.workers)
            for i, (_, entries) in enumerate(found):
                if entries:
                    yield i, entries
            return
        from icepark.manifest.kept_entries import keep

        for i, scanned in enumerate(
            scan_columns(self.io, manifests, matcher, workers=self.workers)
        ):
            if len(scanned) == 2:  # a manifest the compiled path does not read
                if scanned[1]:
                    yield i, scanned[1]
                continue
            manifest, columns, rows = scanned
            by_rows = _kept_rows(manifest, columns, rows)
            if by_rows is not None:
                yield i, by_rows
                continue
            for start in range(0, len(rows), ENTRIES_PER_PART):
                yield i, keep(columns, rows[start : start + ENTRIES_PER_PART])


@dataclass(frozen=True)
class KeptRows:
    """The entries a remote task kept of one data manifest, by their row numbers in it (None:
    every live entry), and the metrics its decode read: the driver decodes the manifest
    itself (:meth:`columns`) when most of it is kept, which costs it what a local plan
    costs, where taking the records back costs Spark's results as much again."""

    manifest: ManifestFile
    metrics_of: frozenset[int] | None
    rows: Any  # np.ndarray | None

    def columns(self, io: FileIO) -> tuple[Any, Any]:
        """The manifest decoded as a local plan decodes it, and the rows kept."""
        import numpy as np

        from icepark.manifest.entry_columns import read_entry_columns

        path = self.manifest.manifest_path
        data = io.new_input(path).read_bytes()
        columns = read_entry_columns(path, data, self.manifest, metrics_of=self.metrics_of)
        rows = np.flatnonzero(columns.live) if self.rows is None else self.rows
        return columns, rows


def _kept_rows(manifest: ManifestFile, columns: Any, rows: Any) -> KeptRows | None:
    """``rows`` of ``columns`` as a :class:`KeptRows`, when they are most of the manifest."""
    if columns.origin is None or len(rows) < MOST_KEPT * max(columns.count, 1):
        return None
    every_live = len(rows) == int(columns.live.sum())  # rows are live rows, each once
    return KeptRows(manifest, columns.origin.metrics_of, None if every_live else rows)


@dataclass(frozen=True)
class _DeleteManifests(_Reading):
    """Reads delete manifests: their live entries that may apply (by partition)."""

    def __call__(self, manifests: Sequence[ManifestFile]) -> Iterator[tuple[int, Any]]:
        found = read_entries(self.io, manifests, self.matcher(), workers=self.workers)
        for i, (_, entries) in enumerate(found):
            if entries:
                yield i, entries


# -- the driver --------------------------------------------------------------------------------


def iter_plan_files(
    remote: RemotePlanning,
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression,
    schema: Schema | None = None,
    case_sensitive: bool = True,
    workers: int = 8,
) -> Iterator[FileScanTask]:
    """:func:`~icepark.planning.planner.iter_plan_files`, its data and delete manifests read
    where ``remote``'s modes say (see the module docstring); the same tasks in the same
    order."""
    if snapshot is None or not snapshot.manifest_list:
        return
    builder = TaskBuilder(metadata, row_filter, schema, case_sensitive)
    matcher = builder.matcher
    reading = (io, builder.schema, builder.specs, row_filter, case_sensitive, remote.remote_workers)
    delete_manifests = live_manifests(io, snapshot, matcher, ManifestContent.DELETES)
    if remote.remotely(remote.delete_mode, delete_manifests):
        deletes = DeleteFileIndex(builder.specs)
        work = _DeleteManifests(*reading)
        for entries in remote.runner.run(work, delete_manifests, "deletes"):
            deletes.add_entries(entries)
    else:
        deletes = index_deletes(io, metadata, delete_manifests, matcher, workers)
    manifests = live_manifests(io, snapshot, matcher, ManifestContent.DATA)
    if not remote.remotely(remote.data_mode, manifests):
        yield from data_tasks(io, builder, manifests, deletes, workers)
        return
    yield from _tasks_of_parts(
        builder,
        remote.runner.run(_DataManifests(*reading, use_columns(manifests)), manifests, "data"),
        deletes,
        io,
    )


def _tasks_of_parts(
    builder: TaskBuilder, parts: Iterator[Any], deletes: DeleteFileIndex, io: FileIO
) -> Iterator[FileScanTask]:
    import numpy as np

    from icepark.manifest.entry_columns import EntryColumns

    for part in _decoded(parts, io):
        if isinstance(part, EntryColumns):
            rows = np.arange(part.count, dtype=np.int64)
            yield from builder.tasks_of(part, rows, deletes)
        elif isinstance(part, tuple):  # a manifest read here, and the rows kept of it
            yield from builder.tasks_of(part[0], part[1], deletes)
        else:
            entries: list[ManifestEntry] = part
            yield from (builder.task(e, deletes) for e in entries)


def _decoded(parts: Iterator[Any], io: FileIO) -> Iterator[Any]:
    """``parts`` with their kept entries decoded into arrays (a :class:`KeptRows` as its
    manifest's arrays and the rows kept, the manifest read with ``io``), the next part
    decoded on a thread while the caller makes the tasks of this one (the compiled decoder
    runs without the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    from icepark.manifest.kept_entries import KeptEntries

    def decode(part: Any) -> Any:
        if isinstance(part, KeptRows):
            return part.columns(io)
        return part.columns() if isinstance(part, KeptEntries) else part

    with ThreadPoolExecutor(1, thread_name_prefix="icepark-decode") as pool:
        pending = None
        for part in parts:
            started = pool.submit(decode, part)
            if pending is not None:
                yield pending.result()
            pending = started
        if pending is not None:
            yield pending.result()


# -- a snapshot's file list, planned where it is read -----------------------------------------


@dataclass(frozen=True)
class LiveFiles:
    """Positions ``[start, stop)`` among the live entries (in file order) of a data manifest
    holding ``count`` of them."""

    manifest: ManifestFile
    start: int
    stop: int
    count: int


def live_file_count(manifests: Sequence[ManifestFile]) -> int | None:
    """The live data files of ``manifests`` by the manifest list's counts (added and
    existing); None when a count is unknown."""
    total = 0
    for m in manifests:
        if m.added_files_count is None or m.existing_files_count is None:
            return None
        total += m.added_files_count + m.existing_files_count
    return total


def live_file_slices(
    manifests: Sequence[ManifestFile], first: int, stop: int
) -> list[LiveFiles] | None:
    """The entries of ``manifests`` (a snapshot's live data manifests, in order) at
    positions ``[first, stop)`` of their live files, manifest by manifest; None when a count
    is unknown."""
    if live_file_count(manifests) is None:
        return None
    out: list[LiveFiles] = []
    at = 0
    for m in manifests:
        count = (m.added_files_count or 0) + (m.existing_files_count or 0)
        lo, hi = max(first - at, 0), min(stop - at, count)
        if lo < hi:
            out.append(LiveFiles(m, lo, hi, count))
        at += count
    return out


@dataclass(frozen=True)
class SnapshotSlices:
    """Entries of a snapshot's data manifests (:class:`LiveFiles`), with the snapshot's
    delete manifests and the stream's filter: what a read task plans for itself."""

    slices: tuple[LiveFiles, ...]
    delete_manifests: tuple[ManifestFile, ...]
    row_filter: BooleanExpression
    case_sensitive: bool = True

    @property
    def files(self) -> int:
        return sum(s.stop - s.start for s in self.slices)

    def split(self, most: int) -> list[SnapshotSlices]:
        """At most ``most`` shares of about as many files each, whole manifests each."""
        groups: list[list[LiveFiles]] = [[]]
        target = max(1, -(-self.files // max(1, most)))
        held = 0
        for s in self.slices:
            if groups[-1] and held + (s.stop - s.start) > target and len(groups) < most:
                groups.append([])
                held = 0
            groups[-1].append(s)
            held += s.stop - s.start
        return [
            SnapshotSlices(tuple(g), self.delete_manifests, self.row_filter, self.case_sensitive)
            for g in groups
            if g
        ]

    def tasks(self, io: FileIO, metadata: TableMetadata) -> Iterator[FileScanTask]:
        """The tasks of the entries of the slices that may hold rows the filter selects, all
        delete files of the snapshot attached, as the driver's list would give them (every
        live file made a task with ``TaskBuilder``, then those ``might_match`` keeps)."""
        builder = TaskBuilder(metadata, self.row_filter, None, self.case_sensitive)
        deletes = index_deletes(io, metadata, self.delete_manifests, None, workers=1)
        for s in self.slices:
            yield from _slice_tasks(io, builder, s, deletes)


def _slice_tasks(
    io: FileIO, builder: TaskBuilder, s: LiveFiles, deletes: DeleteFileIndex
) -> Iterator[FileScanTask]:
    from icepark.avro.compiled import kernel_available

    matcher = builder.matcher
    if kernel_available():
        scanned = next(scan_columns(io, [s.manifest], matcher, judge=False, workers=1))
    else:
        scanned = (s.manifest, next(read_entries(io, [s.manifest], None, workers=1))[1])
    live = len(scanned[2]) if len(scanned) == 3 else len(scanned[1])
    if live != s.count:
        raise InvalidAvroFileError(
            f"Manifest {s.manifest.manifest_path} holds {live} live entries, its manifest "
            f"list says {s.count}: cannot place a stream's positions in it"
        )
    if len(scanned) == 2:
        for e in scanned[1][s.start : s.stop]:
            if matcher.might_match(e.data_file):
                yield builder.task(e, deletes)
        return
    _, columns, rows = scanned
    rows = rows[s.start : s.stop]
    if not matcher.matches_everything and len(rows):
        rows = rows[partitions_match(matcher, columns)[rows]]
        if len(rows):
            rows = rows[matcher.metrics_match_rows(columns, rows)]
    yield from builder.tasks_of(columns, rows, deletes)
