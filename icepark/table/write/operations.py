"""Table operations as re-runnable actions: append, overwrite, replace partitions, metadata.

Each action is staged against a base metadata (once per commit attempt). Data files the
caller wrote are owned by the action and deleted by ``abort`` when the commit definitely
failed; files an attempt writes (manifests, manifest lists, rewritten data files) are
deleted when that attempt is abandoned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from icepark.errors import ValidationError
from icepark.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression
from icepark.io import FileIO
from icepark.manifest import DataFile, FileFormat, ManifestContent, ManifestEntryStatus
from icepark.planning.matching import FileMatcher
from icepark.planning.planner import FileScanTask, plan_files
from icepark.planning.walk import changes_since
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.spec.updates import AssertTableUUID, TableRequirement, TableUpdate
from icepark.table.write.producers import ProducedSnapshot, SnapshotProducer

__all__ = [
    "Action",
    "AppendAction",
    "MetadataAction",
    "OverwriteAction",
    "ReplacePartitionsAction",
    "Staged",
    "RewriteFile",
    "added_files_since",
    "check_no_conflicting_data",
]

# Rewrites one scan task's data file (its deletes applied) keeping only the rows that do NOT
# match the filter; returns the replacement files (possibly none) written against the metadata.
RewriteFile = Callable[[FileScanTask, TableMetadata, BooleanExpression], list[DataFile]]

SERIALIZABLE = P.SERIALIZABLE
SNAPSHOT = P.SNAPSHOT


@dataclass
class Staged:
    updates: list[TableUpdate]
    requirements: list[TableRequirement]
    written: list[str] = field(default_factory=list)


class Action:
    """Something a transaction commits; staged anew on every attempt.

    An action that produces a snapshot keeps one :class:`SnapshotProducer` for all attempts
    (:meth:`_stage_snapshot`), so a retry reuses the manifests written before.
    ``revalidates`` says whether a retry must check concurrent commits (overwrites, row-level
    changes): such retries are bounded by ``commit.retry.num-retries``; the others (appends,
    metadata changes) cannot conflict and retry until ``commit.retry.total-timeout-ms``.
    """

    revalidates: bool = False
    _producer: SnapshotProducer | None = None
    _produced: ProducedSnapshot | None = None

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        raise NotImplementedError

    def _stage_snapshot(self, base: TableMetadata, make: Callable[[], SnapshotProducer]) -> Staged:
        """Produce this attempt's snapshot with the action's producer (made on first use)."""
        if self._producer is None:
            self._producer = make()
        self._produced = None
        produced = self._producer.produce(base)
        self._produced = produced
        return Staged(produced.updates, produced.requirements, produced.written)

    def committed(self, io: FileIO) -> None:
        """The commit landed: delete what earlier attempts wrote and it does not use."""
        if self._producer is not None:
            self._producer.cleanup(self._produced)

    def abort(self, io: FileIO) -> None:
        """Delete the files this action owns (the commit definitely failed)."""
        if self._producer is not None:
            self._producer.cleanup(None)


@dataclass
class MetadataAction(Action):
    updates: list[TableUpdate]

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        return Staged(list(self.updates), [AssertTableUUID(base.table_uuid)])


def _delete_all(io: FileIO, paths: Sequence[str]) -> None:
    for path in paths:
        try:
            io.delete(path)
        except Exception:
            pass


def added_files_since(
    io: FileIO,
    metadata: TableMetadata,
    branch: str,
    since_snapshot_id: int | None,
    matcher: FileMatcher | None = None,
) -> list[DataFile]:
    """Data files added on ``branch`` by the snapshots after ``since_snapshot_id`` (with
    ``matcher``, only those that may hold rows matching its filter). Only ``append`` and
    ``overwrite`` snapshots add rows (Java's ``VALIDATE_ADDED_FILES_OPERATIONS``): the files a
    ``replace`` (compaction) adds hold rows the table already had."""
    head = metadata.branch_head(branch)
    changes = changes_since(
        io,
        metadata,
        head.snapshot_id if head else None,
        since_snapshot_id,
        content=ManifestContent.DATA,
        statuses=(ManifestEntryStatus.ADDED,),
        operations=(Operation.APPEND, Operation.OVERWRITE),
        matcher=matcher,
        where=f"branch {branch}",
    )
    return [c.entry.data_file for c in changes]


def check_no_conflicting_data(
    io: FileIO,
    base: TableMetadata,
    branch: str,
    since_snapshot_id: int | None,
    conflict_filter: BooleanExpression,
    case_sensitive: bool = True,
    what: str = "commit",
) -> None:
    """The ``serializable`` check: fail with :class:`ValidationError` when a commit on
    ``branch`` after ``since_snapshot_id`` added a data file that may hold rows matching
    ``conflict_filter`` (rows the committing change would have read or replaced)."""
    head = base.branch_head(branch)
    if head is None or head.snapshot_id == since_snapshot_id:
        return
    matcher = FileMatcher(base.schema(), base.specs(), conflict_filter, case_sensitive)
    for f in added_files_since(io, base, branch, since_snapshot_id, matcher):
        raise ValidationError(
            f"Cannot {what} in table {base.location}: found conflicting files that can "
            f"contain records matching {conflict_filter}: {f.file_path} (added by a "
            f"concurrent commit on branch {branch}; isolation serializable)"
        )


@dataclass
class _SnapshotAction(Action):
    io: FileIO
    files: Sequence[DataFile]
    branch: str = MAIN_BRANCH
    snapshot_properties: dict[str, str] = field(default_factory=dict)

    def abort(self, io: FileIO) -> None:
        super().abort(io)
        _delete_all(io, [f.file_path for f in self.files])

    def _start_snapshot_id(self, start: TableMetadata) -> int | None:
        head = start.branch_head(self.branch)
        return head.snapshot_id if head else None


@dataclass
class AppendAction(_SnapshotAction):
    """Fast append, or merge append when ``merge`` (``commit.manifest-merge.enabled``)."""

    merge: bool = False

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        return self._stage_snapshot(
            base,
            lambda: SnapshotProducer(
                self.io,
                Operation.APPEND,
                added_files=self.files,
                branch=self.branch,
                merge=self.merge,
                snapshot_properties=self.snapshot_properties,
            ),
        )


@dataclass
class OverwriteAction(_SnapshotAction):
    """Replace the rows matching ``row_filter`` (everything by default) with ``files``.

    Files whose rows all match are dropped from metadata; files where only some rows match
    are rewritten without those rows (copy-on-write). Every row of ``files`` must match the
    filter (shown by partition values or column metrics), else :class:`ValidationError`.
    Under ``serializable`` isolation a concurrent commit that added files that may hold
    matching rows fails this one.
    """

    row_filter: BooleanExpression = field(default_factory=AlwaysTrue)
    rewrite: RewriteFile | None = None
    isolation: str = SERIALIZABLE
    case_sensitive: bool = True
    revalidates = True
    _rewrites: dict[str, list[DataFile]] = field(default_factory=dict)

    def _matcher(self, base: TableMetadata) -> FileMatcher:
        return FileMatcher(base.schema(), base.specs(), self.row_filter, self.case_sensitive)

    def validate(self, base: TableMetadata, start: TableMetadata) -> None:
        if self.isolation == SERIALIZABLE:
            check_no_conflicting_data(
                self.io,
                base,
                self.branch,
                self._start_snapshot_id(start),
                self.row_filter,
                self.case_sensitive,
                "overwrite",
            )

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        self.validate(base, start)
        matcher = self._matcher(base)
        for f in self.files:
            # as Java's validateAddedFilesMatchOverwriteFilter: the new rows must be rows the
            # filter selects, or a later overwrite with the same filter would not replace them
            if not matcher.all_match(f):
                raise ValidationError(
                    f"Cannot overwrite rows matching {self.row_filter} in table {base.location} "
                    f"with file {f.file_path}: its rows do not all match the filter"
                )
        head = base.branch_head(self.branch)
        tasks = plan_files(self.io, base, head, self.row_filter, None, self.case_sensitive)
        doomed = {t.file.file_path for t in tasks}
        # a removed data file's deletion vector goes with it
        dvs = {
            (d.file_path, d.content_offset)
            for t in tasks
            for d in t.delete_files
            if d.file_format == FileFormat.PUFFIN
        }
        rewritten: list[DataFile] = []
        for task in tasks:
            if isinstance(task.residual, AlwaysTrue):
                continue  # every row matches: dropped without reading it
            path = task.file.file_path
            if self.rewrite is None:
                raise ValidationError(
                    f"Cannot delete file where some, but not all, rows match filter "
                    f"{self.row_filter}: {path} (table {base.location})"
                )
            if path not in self._rewrites:  # a retry reuses the rewrite
                self._rewrites[path] = self.rewrite(task, base, self.row_filter)
            rewritten.extend(self._rewrites[path])
        # as Java's BaseOverwriteFiles: an overwrite by a filter deletes (by intent) even
        # when no file matches it, so it is an "overwrite" (or a "delete" adding nothing)
        deletes = bool(doomed) or not isinstance(self.row_filter, AlwaysFalse)
        adds = bool(self.files or rewritten)
        operation = Operation.OVERWRITE
        if deletes and not adds:
            operation = Operation.DELETE
        elif adds and not deletes:
            operation = Operation.APPEND

        producer = self._producer or SnapshotProducer(
            self.io, operation, branch=self.branch, snapshot_properties=self.snapshot_properties
        )
        producer.operation = operation
        producer.update_added([*self.files, *rewritten])
        producer.update_removals(
            lambda e: e.data_file.file_path in doomed,
            matcher.manifest_might_match,
            lambda e: (e.data_file.file_path, e.data_file.content_offset) in dvs,
        )
        return self._stage_snapshot(base, lambda: producer)

    def _unused_rewrites(self, committed: bool) -> list[str]:
        used = set()
        if committed and self._produced is not None:
            used = {f.file_path for f in self._produced.added}
        return [
            f.file_path for fs in self._rewrites.values() for f in fs if f.file_path not in used
        ]

    def committed(self, io: FileIO) -> None:
        super().committed(io)
        _delete_all(io, self._unused_rewrites(True))

    def abort(self, io: FileIO) -> None:
        super().abort(io)
        _delete_all(io, self._unused_rewrites(False))


@dataclass
class ReplacePartitionsAction(_SnapshotAction):
    """Dynamic overwrite: replace every partition the new files touch (whole table when
    unpartitioned)."""

    isolation: str = SERIALIZABLE
    revalidates = True

    @cached_property
    def _touched(self) -> set[tuple[int, tuple[object, ...]]]:
        return {(f.spec_id or 0, tuple(f.partition)) for f in self.files}

    def _replaces(self, f: DataFile) -> bool:
        # An unpartitioned spec has one partition, (), so its files are all replaced.
        return (f.spec_id or 0, tuple(f.partition)) in self._touched

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        if self.isolation == SERIALIZABLE:
            start_id = self._start_snapshot_id(start)
            for f in added_files_since(self.io, base, self.branch, start_id):
                if self._replaces(f):
                    raise ValidationError(
                        f"Found conflicting files in a partition being replaced: {f.file_path} "
                        f"(added by a concurrent commit; isolation {self.isolation})"
                    )

        return self._stage_snapshot(
            base,
            lambda: SnapshotProducer(
                self.io,
                Operation.OVERWRITE,
                added_files=self.files,
                remove_entry=lambda e: self._replaces(e.data_file),
                branch=self.branch,
                snapshot_properties={"replace-partitions": "true", **self.snapshot_properties},
            ),
        )
