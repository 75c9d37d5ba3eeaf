"""Table operations as re-runnable actions: append, overwrite, replace partitions, metadata.

Each action is staged against a base metadata (once per commit attempt). Data files the
caller wrote are owned by the action and deleted by ``abort`` when the commit definitely
failed; files an attempt writes (manifests, manifest lists, rewritten data files) are
deleted when that attempt is abandoned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from icepark.errors import ValidationError
from icepark.expressions import AlwaysTrue, BooleanExpression
from icepark.io import FileIO
from icepark.manifest import (
    DataFile,
    ManifestEntry,
    ManifestEntryStatus,
    read_manifest,
    read_manifest_list,
)
from icepark.planning.matching import FileMatcher
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.spec.updates import AssertTableUUID, TableRequirement, TableUpdate
from icepark.table.producers import SnapshotProducer

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

# Rewrites one data file keeping only the rows that do NOT match the filter; returns the
# replacement files (possibly none) written against the given metadata.
RewriteFile = Callable[[DataFile, TableMetadata, BooleanExpression], list[DataFile]]

SERIALIZABLE = P.SERIALIZABLE
SNAPSHOT = P.SNAPSHOT


@dataclass
class Staged:
    updates: list[TableUpdate]
    requirements: list[TableRequirement]
    written: list[str] = field(default_factory=list)


class Action:
    """Something a transaction commits; staged anew on every attempt."""

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        raise NotImplementedError

    def abort(self, io: FileIO) -> None:
        """Delete the files this action owns (the commit definitely failed)."""


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
    io: FileIO, metadata: TableMetadata, branch: str, since_snapshot_id: int | None
) -> list[DataFile]:
    """Data files added on ``branch`` by the snapshots after ``since_snapshot_id``."""
    head = metadata.snapshot_by_name(branch)
    found: list[DataFile] = []
    for snapshot in metadata.ancestors_of(head.snapshot_id if head else None):
        if snapshot.snapshot_id == since_snapshot_id:
            break
        if not snapshot.manifest_list:
            continue
        for manifest in read_manifest_list(io.new_input(snapshot.manifest_list)):
            if manifest.added_snapshot_id != snapshot.snapshot_id or not manifest.added_files_count:
                continue
            for entry in read_manifest(io.new_input(manifest.manifest_path), manifest):
                if (
                    entry.status == ManifestEntryStatus.ADDED
                    and entry.snapshot_id == snapshot.snapshot_id
                ):
                    found.append(entry.data_file)
    return found


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
    head = base.snapshot_by_name(branch)
    if head is None or head.snapshot_id == since_snapshot_id:
        return
    matcher = FileMatcher(base.schema(), base.specs(), conflict_filter, case_sensitive)
    for f in added_files_since(io, base, branch, since_snapshot_id):
        if matcher.might_match(f):
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
        _delete_all(io, [f.file_path for f in self.files])

    def _start_snapshot_id(self, start: TableMetadata) -> int | None:
        head = start.snapshot_by_name(self.branch)
        return head.snapshot_id if head else None


@dataclass
class AppendAction(_SnapshotAction):
    """Fast append, or merge append when ``merge`` (``commit.manifest-merge.enabled``)."""

    merge: bool = False

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        producer = SnapshotProducer(
            self.io,
            Operation.APPEND,
            added_files=self.files,
            branch=self.branch,
            merge=self.merge,
            snapshot_properties=self.snapshot_properties,
        )
        produced = producer.produce(base)
        return Staged(produced.updates, produced.requirements, produced.written)


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
        doomed: set[str] = set()
        partial: list[DataFile] = []
        head = base.snapshot_by_name(self.branch)
        if head is not None and head.manifest_list:
            for manifest in read_manifest_list(self.io.new_input(head.manifest_list)):
                if manifest.content != 0 or not matcher.manifest_might_match(manifest):
                    continue
                for entry in read_manifest(self.io.new_input(manifest.manifest_path), manifest):
                    if entry.status == ManifestEntryStatus.DELETED:
                        continue
                    f = entry.data_file
                    if not matcher.might_match(f):
                        continue
                    doomed.add(f.file_path)
                    if not matcher.all_match(f):
                        partial.append(f)
        rewritten: list[DataFile] = []
        try:
            for f in partial:
                if self.rewrite is None:
                    raise ValidationError(
                        f"Cannot delete file where some, but not all, rows match filter "
                        f"{self.row_filter}: {f.file_path}"
                    )
                rewritten.extend(self.rewrite(f, base, self.row_filter))
            operation = Operation.OVERWRITE if doomed else Operation.APPEND
            if doomed and not self.files and not rewritten:
                operation = Operation.DELETE
            producer = SnapshotProducer(
                self.io,
                operation,
                added_files=[*self.files, *rewritten],
                remove_entry=lambda e: e.data_file.file_path in doomed,
                manifest_filter=matcher.manifest_might_match,
                branch=self.branch,
                snapshot_properties=self.snapshot_properties,
            )
            produced = producer.produce(base)
        except BaseException:
            _delete_all(self.io, [f.file_path for f in rewritten])
            raise
        return Staged(
            produced.updates,
            produced.requirements,
            [*produced.written, *(f.file_path for f in rewritten)],
        )


@dataclass
class ReplacePartitionsAction(_SnapshotAction):
    """Dynamic overwrite: replace every partition the new files touch (whole table when
    unpartitioned)."""

    isolation: str = SERIALIZABLE

    def _touched(self) -> set[tuple[int, tuple[object, ...]]]:
        return {(f.spec_id or 0, tuple(f.partition)) for f in self.files}

    def _replaces(self, base: TableMetadata, f: DataFile) -> bool:
        # An unpartitioned spec has one partition, (), so its files are all replaced.
        return (f.spec_id or 0, tuple(f.partition)) in self._touched()

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        if self.isolation == SERIALIZABLE:
            start_id = self._start_snapshot_id(start)
            for f in added_files_since(self.io, base, self.branch, start_id):
                if self._replaces(base, f):
                    raise ValidationError(
                        f"Found conflicting files in a partition being replaced: {f.file_path} "
                        f"(added by a concurrent commit; isolation {self.isolation})"
                    )

        def remove(entry: ManifestEntry) -> bool:
            return self._replaces(base, entry.data_file)

        producer = SnapshotProducer(
            self.io,
            Operation.OVERWRITE,
            added_files=self.files,
            remove_entry=remove,
            branch=self.branch,
            snapshot_properties={"replace-partitions": "true", **self.snapshot_properties},
        )
        produced = producer.produce(base)
        return Staged(produced.updates, produced.requirements, produced.written)
