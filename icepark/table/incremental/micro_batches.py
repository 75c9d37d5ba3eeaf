"""Micro-batches of a table being followed: offsets, admission control and the files between
two offsets (Java's ``MicroBatches`` and the planning half of Spark's
``SparkMicroBatchStream``). The Structured Streaming source (:mod:`icepark.spark.streaming.source`)
is a thin adapter over :class:`MicroBatchPlanner`; nothing here imports pyspark.

An offset (:class:`StreamingOffset`, JSON ``{"version", "snapshot_id", "position",
"scan_all_files"}`` as Java's) says how far a stream has read: every snapshot before
``snapshot_id`` on the branch, and the first ``position`` files of ``snapshot_id``'s file list.
A snapshot's file list is fixed once committed: the data files it added, in manifest-list
order then entry order (:func:`~icepark.table.incremental.append_scan.appended_entries`), or with
``scan_all_files`` every live data file of the snapshot (its deletes applied), in the same
order. ``START`` (snapshot id -1) means "not started yet".

Where a stream starts:

* ``start-snapshot-id``: that snapshot's own appends, then every later snapshot's;
* ``stream-from-timestamp`` (ms): the oldest ancestor committed at or after it (as Java's
  ``oldestAncestorAfter``); until such a snapshot exists the stream waits, without error;
* neither: the first micro-batch reads the current snapshot in full (``scan_all_files``),
  then only appends follow; on a table without snapshots, the first that appears.

The initial offset is ``START`` unless ``start-snapshot-id`` is given: the first micro-batch
decides where the stream begins, and its end offset (which Spark logs before running it) says
so, so that the batch is the same when Spark replays it after a restart. (Java's source keeps
its initial offset in a file of the checkpoint; a Python source is not told the checkpoint.)

How far a micro-batch goes (:meth:`MicroBatchPlanner.latest_offset`): from the start offset,
snapshot by snapshot along the branch's ancestry up to its head, taking files until the read
limits stop it: at most ``max_files`` files (hard), and files until their row count reaches
``max_rows`` (soft: the file that crosses the limit is taken whole), as Java's
``latestOffset(start, limit)``. ``append`` snapshots are read; ``replace`` snapshots are passed
over; a ``delete`` or ``overwrite`` snapshot is an error naming the snapshot and the option
that skips it (``streaming-skip-delete-snapshots`` / ``streaming-skip-overwrite-snapshots``)
unless skipped. With nothing new the start offset is returned unchanged.

:meth:`MicroBatchPlanner.plan` gives the file scan tasks between two offsets: the same walk,
so a batch replayed after a restart (Spark keeps its offsets in the checkpoint) reads exactly
the same files: no gap, no repeat. Appended files are read without delete files, as Java's
streaming reads (later deletes do not retract rows already streamed).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icepark.errors import NoSuchTableError, ValidationError
from icepark.expressions import AlwaysTrue, BooleanExpression
from icepark.lru import LruCache
from icepark.manifest import ManifestContent, ManifestFile
from icepark.planning.distributed import SnapshotSlices, live_file_count, live_file_slices
from icepark.planning.planner import FileScanTask, TaskBuilder, delete_index
from icepark.planning.walk import live_entries, live_manifests, parallel_map
from icepark.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from icepark.table.incremental.append_scan import appended_entries, snapshots_between

if TYPE_CHECKING:
    from icepark.table.table import Table

__all__ = [
    "START",
    "MicroBatchPlanner",
    "ReadLimits",
    "StreamSettings",
    "StreamingOffset",
    "SKIP_DELETE_OPTION",
    "SKIP_OVERWRITE_OPTION",
    "START_SNAPSHOT_OPTION",
    "FROM_TIMESTAMP_OPTION",
]

SKIP_DELETE_OPTION = "streaming-skip-delete-snapshots"
SKIP_OVERWRITE_OPTION = "streaming-skip-overwrite-snapshots"
START_SNAPSHOT_OPTION = "start-snapshot-id"
FROM_TIMESTAMP_OPTION = "stream-from-timestamp"
_VERSION = 1


@dataclass(frozen=True)
class StreamingOffset:
    """How far a stream has read (see the module docstring)."""

    snapshot_id: int
    position: int
    scan_all_files: bool = False

    @property
    def is_start(self) -> bool:
        return self.snapshot_id == -1

    def to_json(self) -> dict[str, Any]:
        return {
            "version": _VERSION,
            "snapshot_id": self.snapshot_id,
            "position": self.position,
            "scan_all_files": self.scan_all_files,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> StreamingOffset:
        try:
            version = int(obj.get("version", _VERSION))
            offset = cls(int(obj["snapshot_id"]), int(obj["position"]), bool(obj["scan_all_files"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationError(f"Invalid streaming offset {dict(obj)!r}: {exc}") from exc
        if version != _VERSION:
            raise ValidationError(f"Unsupported streaming offset version {version} in {obj!r}")
        return offset


START = StreamingOffset(-1, -1, False)


@dataclass(frozen=True)
class StreamSettings:
    """Where a stream starts, what it skips, which branch it follows and what it reads."""

    start_snapshot_id: int | None = None
    from_timestamp_ms: int | None = None
    skip_delete: bool = False
    skip_overwrite: bool = False
    branch: str = MAIN_BRANCH
    row_filter: BooleanExpression = AlwaysTrue()  # noqa: RUF009 (immutable)

    def __post_init__(self) -> None:
        if self.start_snapshot_id is not None and self.from_timestamp_ms is not None:
            raise ValidationError(
                f"Give at most one of {START_SNAPSHOT_OPTION} and {FROM_TIMESTAMP_OPTION}"
            )


@dataclass(frozen=True)
class ReadLimits:
    """Admission control for one micro-batch (``math.inf``: no limit)."""

    max_files: float = math.inf
    max_rows: float = math.inf
    max_bytes: float = math.inf
    min_rows: int = 0


ALL = ReadLimits()


class MicroBatchPlanner:
    """Plans a stream over ``table`` (reloaded from its catalog at each
    :meth:`latest_offset`); keeps the file lists of recently seen snapshots."""

    def __init__(
        self,
        table: Table,
        settings: StreamSettings,
        cache_size: int = 1024,
        *,
        remote: Callable[[Sequence[ManifestFile]], bool] | None = None,
    ) -> None:
        self.table = table
        self.settings = settings
        # whether a snapshot read in full, of these live data manifests, is planned by the
        # read tasks (:meth:`plan_parts`); its files are then counted, not listed
        self.remote = remote
        self.cap: int | None = None  # Trigger.AvailableNow: read no further than this
        self._builder: TaskBuilder | None = None
        self._builder_key: int | None = None
        self._files: LruCache[tuple[int, bool], list[FileScanTask]] = LruCache(cache_size)

    # -- the table -------------------------------------------------------------------------

    def refresh(self) -> None:
        try:
            self.table.refresh()
        except NoSuchTableError as exc:
            raise NoSuchTableError(
                f"Table {self.table.name} no longer exists: it was dropped while a stream was "
                f"reading it ({exc})"
            ) from exc

    def _branch_head(self) -> Snapshot | None:
        metadata = self.table.metadata
        branch = self.settings.branch
        if branch == MAIN_BRANCH:
            return metadata.current_snapshot()
        if metadata.ref(branch) is None:
            raise ValidationError(f"Cannot find branch {branch!r} in table {self.table.name}")
        return metadata.snapshot_by_name(branch)

    def head(self) -> Snapshot | None:
        """The snapshot the stream reads up to: the branch head, or the cap."""
        if self.cap is not None:
            return self.table.metadata.snapshot_by_id(self.cap)
        return self._branch_head()

    def cap_at_head(self) -> None:
        """For ``Trigger.AvailableNow``: read nothing committed after now."""
        self.refresh()
        head = self._branch_head()
        self.cap = head.snapshot_id if head is not None else None

    def _snapshot(self, snapshot_id: int, what: str) -> Snapshot:
        found = self.table.metadata.snapshot_by_id(snapshot_id)
        if found is None:
            raise ValidationError(
                f"Cannot load {what} at snapshot {snapshot_id} of table {self.table.name}: the "
                "snapshot was expired or removed"
            )
        return found

    # -- offsets ---------------------------------------------------------------------------

    def initial_offset(self) -> StreamingOffset:
        """Where a new stream starts (see the module docstring)."""
        self.refresh()
        head = self._branch_head()
        start_id = self.settings.start_snapshot_id
        if start_id is not None:
            if self.table.metadata.snapshot_by_id(start_id) is None:
                raise ValidationError(
                    f"Cannot find snapshot {start_id} ({START_SNAPSHOT_OPTION}) in table "
                    f"{self.table.name}"
                )
            ancestors = {s.snapshot_id for s in self._ancestors(head)}
            if start_id not in ancestors:
                raise ValidationError(
                    f"Snapshot {start_id} ({START_SNAPSHOT_OPTION}) is not an ancestor of the "
                    f"head of branch {self.settings.branch!r} of table {self.table.name}"
                )
            return StreamingOffset(start_id, 0, False)
        # the rest is decided by the first micro-batch: its end offset says where it began
        return START

    def _ancestors(self, head: Snapshot | None) -> list[Snapshot]:
        return self.table.metadata.ancestors_of(head.snapshot_id if head else None)

    def _concrete(self, start: StreamingOffset, target: Snapshot) -> StreamingOffset | None:
        """Where a micro-batch from ``start`` begins reading, ``target`` being the head (for
        :meth:`latest_offset`) or the batch's end snapshot (for :meth:`plan`); None: not yet.

        ``START`` depends on nothing but the settings and ``target``, so that a first batch
        replayed after a restart (Spark asks for ``START`` to its logged end again) begins
        where it first did: at the oldest ancestor committed at or after the start timestamp
        (as Java's ``oldestAncestorAfter``), at the start snapshot, or, without either, at
        ``target`` read in full (the first batch's end is in the snapshot it read in full)."""
        if not start.is_start:
            return start
        ts = self.settings.from_timestamp_ms
        if ts is not None:
            if target.timestamp_ms < ts:
                return None
            found = target
            for s in self._ancestors(target):
                if s.timestamp_ms < ts:
                    break
                found = s
            return StreamingOffset(found.snapshot_id, 0, False)
        if self.settings.start_snapshot_id is not None:
            return StreamingOffset(self.settings.start_snapshot_id, 0, False)
        return StreamingOffset(target.snapshot_id, 0, True)

    def latest_offset(
        self, start: StreamingOffset, limits: ReadLimits = ALL, *, refresh: bool = True
    ) -> StreamingOffset:
        """The end of the next micro-batch from ``start`` within ``limits`` (``start`` itself
        when there is nothing new)."""
        if refresh and self.cap is None:
            self.refresh()
        head = self.head()
        if head is None:
            return start
        current = self._concrete(start, head)
        if current is None:
            return start
        end: StreamingOffset | None = None
        files = rows = size = 0
        stopped = False
        for snapshot, all_files, first in self._prefetched(self._walk(current, head)):
            counted = self._counted(snapshot, all_files, limits)
            if counted is not None:  # files counted by the manifest list: a files limit only
                take = max(0, min(counted - first, limits.max_files - files))
                i = first + int(take)
                files += int(take)
                stopped = i < counted
                if i > first:
                    end = StreamingOffset(snapshot.snapshot_id, i, all_files)
                if stopped:
                    break
                continue
            listing = self.files(snapshot, all_files)
            i = first
            while i < len(listing):
                f = listing[i].file
                if files + 1 > limits.max_files or (
                    files and size + f.file_size_in_bytes > limits.max_bytes
                ):
                    stopped = True
                    break
                files, rows, size = files + 1, rows + f.record_count, size + f.file_size_in_bytes
                i += 1
                if rows >= limits.max_rows:
                    stopped = True
                    break
            if i > first:
                end = StreamingOffset(snapshot.snapshot_id, i, all_files)
            if stopped:
                break
        if end is None or end == start or rows < limits.min_rows:
            return start
        return end

    def report_latest(self) -> StreamingOffset | None:
        """The offset after everything committed so far (for progress reports)."""
        head = self.head()
        if head is None:
            return None
        count = head.summary.get("added-data-files") if head.summary is not None else None
        return StreamingOffset(head.snapshot_id, int(count) if count else 0, False)

    # -- planning --------------------------------------------------------------------------

    def _walk(self, start: StreamingOffset, end: Snapshot) -> Iterator[tuple[Snapshot, bool, int]]:
        """(snapshot, scan_all_files, first position) from ``start`` to ``end``, oldest
        first, for the snapshots whose files are read."""
        self._snapshot(start.snapshot_id, "the stream's offset")
        try:
            snapshots = snapshots_between(
                self.table.metadata, start.snapshot_id, end.snapshot_id, inclusive=True
            )
        except ValidationError as exc:
            raise ValidationError(
                f"Snapshot {start.snapshot_id} of the stream's offset is no longer an ancestor "
                f"of snapshot {end.snapshot_id} (branch {self.settings.branch!r} of table "
                f"{self.table.name}): {exc}"
            ) from exc
        for i, snapshot in enumerate(snapshots):
            all_files = start.scan_all_files if i == 0 else False
            if not all_files and not self._should_process(snapshot):
                continue
            yield snapshot, all_files, start.position if i == 0 else 0

    def _remote_manifests(self, snapshot: Snapshot, all_files: bool) -> list[ManifestFile] | None:
        """The live data manifests of a snapshot read in full whose file list the read tasks
        plan (see :meth:`plan_parts`), when its manifest list counts their files; else None."""
        if not all_files or self.remote is None:
            return None
        manifests = live_manifests(self.table.io, snapshot, None, ManifestContent.DATA)
        if live_file_count(manifests) is None or not self.remote(manifests):
            return None
        return manifests

    def _counted(self, snapshot: Snapshot, all_files: bool, limits: ReadLimits) -> int | None:
        """How many files a snapshot read in full by the read tasks holds, when the limits
        ask no more of its files than how many (rows, bytes and least rows unlimited)."""
        if limits.max_rows != math.inf or limits.max_bytes != math.inf or limits.min_rows:
            return None
        manifests = self._remote_manifests(snapshot, all_files)
        return None if manifests is None else live_file_count(manifests)

    def _prefetched(
        self, walk: Iterator[tuple[Snapshot, bool, int]], size: int = 16
    ) -> Iterator[tuple[Snapshot, bool, int]]:
        """``walk``, with the file lists of its next ``size`` snapshots read in parallel
        ahead of time (an error of the walk is raised where the walk raised it)."""
        while True:
            chunk: list[tuple[Snapshot, bool, int]] = []
            error: ValidationError | None = None
            try:
                for item in walk:
                    chunk.append(item)
                    if len(chunk) >= size:
                        break
            except ValidationError as exc:
                error = exc
            wanted = [
                (s, a)
                for s, a, _ in chunk
                if (s.snapshot_id, a) not in self._files and self._remote_manifests(s, a) is None
            ]
            list(parallel_map(lambda pair: self.files(*pair), wanted))
            yield from chunk
            if error is not None:
                raise error
            if len(chunk) < size:
                return

    def _should_process(self, snapshot: Snapshot) -> bool:
        op = snapshot.operation
        if op == Operation.APPEND:
            return True
        if op == Operation.REPLACE:
            return False
        if op == Operation.DELETE:
            if not self.settings.skip_delete:
                raise ValidationError(
                    f"Cannot process delete snapshot: {snapshot.snapshot_id} of table "
                    f"{self.table.name}, to ignore deletes, set {SKIP_DELETE_OPTION}=true"
                )
            return False
        if op == Operation.OVERWRITE:
            if not self.settings.skip_overwrite:
                raise ValidationError(
                    f"Cannot process overwrite snapshot: {snapshot.snapshot_id} of table "
                    f"{self.table.name}, to ignore overwrites, set {SKIP_OVERWRITE_OPTION}=true"
                )
            return False
        raise ValidationError(
            f"Cannot process unknown snapshot operation: {op} (snapshot id "
            f"{snapshot.snapshot_id} of table {self.table.name})"
        )

    def plan(self, start: StreamingOffset, end: StreamingOffset) -> list[FileScanTask]:
        """The file scan tasks after ``start`` up to ``end`` that may hold matching rows."""
        if end.is_start or end == start:
            return []
        last = self._snapshot(end.snapshot_id, "the stream's end offset")
        current = self._concrete(start, last)
        if current is None:
            return []
        matcher = self.builder.matcher
        out: list[FileScanTask] = []
        for snapshot, all_files, first in self._walk(current, last):
            listing = self.files(snapshot, all_files)
            stop = end.position if snapshot.snapshot_id == end.snapshot_id else len(listing)
            out.extend(t for t in listing[first:stop] if matcher.might_match(t.file))
        return out

    def plan_parts(
        self, start: StreamingOffset, end: StreamingOffset
    ) -> tuple[list[FileScanTask], SnapshotSlices | None]:
        """:meth:`plan` with the files of a snapshot read in full left to the read tasks
        when ``remote`` says so: the tasks planned here, and the entries the read tasks plan
        (:class:`~icepark.planning.distributed.SnapshotSlices`; their tasks first, then the
        others, are :meth:`plan`'s)."""
        if end.is_start or end == start:
            return [], None
        last = self._snapshot(end.snapshot_id, "the stream's end offset")
        current = self._concrete(start, last)
        if current is None:
            return [], None
        matcher = self.builder.matcher
        out: list[FileScanTask] = []
        remote: SnapshotSlices | None = None
        for snapshot, all_files, first in self._walk(current, last):
            manifests = self._remote_manifests(snapshot, all_files)
            if manifests is not None:
                count = live_file_count(manifests) or 0
                stop = end.position if snapshot.snapshot_id == end.snapshot_id else count
                slices = live_file_slices(manifests, first, stop) or []
                deletes = live_manifests(self.table.io, snapshot, None, ManifestContent.DELETES)
                remote = SnapshotSlices(tuple(slices), tuple(deletes), self.settings.row_filter)
                continue
            listing = self.files(snapshot, all_files)
            stop = end.position if snapshot.snapshot_id == end.snapshot_id else len(listing)
            out.extend(t for t in listing[first:stop] if matcher.might_match(t.file))
        return out, remote

    @property
    def builder(self) -> TaskBuilder:
        """Tasks with the filter's residuals, against the table's current schema."""
        metadata = self.table.metadata
        key = metadata.current_schema_id
        if self._builder is None or self._builder_key != key:
            self._builder = TaskBuilder(metadata, self.settings.row_filter)
            self._builder_key = key
        return self._builder

    def files(self, snapshot: Snapshot, all_files: bool) -> list[FileScanTask]:
        """A snapshot's file list (see the module docstring), unfiltered: offsets count
        every file."""
        return self._files.get_or_compute(
            (snapshot.snapshot_id, all_files), lambda: self._list(snapshot, all_files)
        )

    def _list(self, snapshot: Snapshot, all_files: bool) -> list[FileScanTask]:
        io, metadata, builder = self.table.io, self.table.metadata, self.builder
        if all_files:
            deletes = delete_index(io, metadata, snapshot)
            return [
                builder.task(e, deletes)
                for _, entries in live_entries(io, metadata, snapshot, None, ManifestContent.DATA)
                for e in entries
            ]
        return [builder.task(e) for e in appended_entries(io, snapshot)]
