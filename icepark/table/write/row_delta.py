"""Row-level changes on one machine: ``DELETE`` by filter, and row deltas (data files plus
delete files in one snapshot) for upserts and change data capture.

:class:`DeleteAction` removes the rows matching a filter on a branch:

* a file whose rows all match (by partition or strict metrics: the planner's residual is
  ``true``) is dropped from metadata without being read, with the deletion vectors that
  reference it;
* other files that may match are read (with the deletes that already apply to them) and,
  by ``write.delete.mode``:

  - ``copy-on-write`` (the default, as in Java): rewritten without the matching rows;
  - ``merge-on-read``: on v2 one position delete file per partition; on v3 one deletion
    vector per data file, merged with the DV (and position deletes) already there, the old
    DV entry being removed (a data file has at most one DV).

The work is done once, against the metadata of the first attempt. On a retry (a concurrent
commit), the snapshots committed since are checked, per ``write.delete.isolation-level``:
under both levels a concurrent commit that removed one of the data files this delete
touches, replaced one of the DVs it replaces, or added delete files that may apply to a
touched file fails the commit with :class:`~icepark.errors.ValidationError`; under
``serializable`` (the default) so does a concurrent commit that added data files that may
hold rows matching the filter. Anything else (e.g. appends elsewhere) is retried through.

:class:`RowDeltaAction` commits data files and delete files written by the caller in one
snapshot (``overwrite`` when it deletes, ``append`` otherwise).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from icepark.arrow.delete_writer import write_deletion_vectors, write_position_delete_file
from icepark.arrow.deletes import DeleteCache, read_task
from icepark.arrow.writer import write_data_files
from icepark.errors import ValidationError
from icepark.expressions import AlwaysTrue, BooleanExpression, bind
from icepark.io import FileIO
from icepark.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntryStatus,
)
from icepark.planning.planner import FileScanTask, plan_files
from icepark.planning.walk import changes_since
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.metadata_columns import POS_FIELD
from icepark.spec.name_mapping import NameMapping
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.table.write.operations import Action, Staged, check_no_conflicting_data
from icepark.table.write.producers import SnapshotProducer

__all__ = [
    "COPY_ON_WRITE",
    "MERGE_ON_READ",
    "DeleteAction",
    "RowDeltaAction",
    "RowLevelAction",
    "RowLevelChange",
    "validate_row_level",
    "deleted_positions",
]

COPY_ON_WRITE = P.COPY_ON_WRITE
MERGE_ON_READ = P.MERGE_ON_READ
_SERIALIZABLE = P.SERIALIZABLE

_PartitionKey = tuple[int, tuple[object, ...]]


def _delete_all(io: FileIO, paths: Sequence[str]) -> None:
    for path in paths:
        try:
            io.delete(path)
        except Exception:  # best-effort cleanup of files we wrote
            pass


def _key(f: DataFile) -> _PartitionKey:
    return (f.spec_id or 0, tuple(f.partition))


@dataclass
class RowLevelChange:
    """The files a row-level change adds and removes, and what it read to decide: the branch
    head it planned against and the data files (and their partitions) it touched. Conflict
    checks on retry compare concurrent commits with this."""

    head_id: int | None
    added_data: list[DataFile] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    removed_data: set[str] = field(default_factory=set)
    removed_deletes: set[tuple[str, int | None]] = field(default_factory=set)
    touched: set[str] = field(default_factory=set)
    touched_partitions: set[_PartitionKey] = field(default_factory=set)

    @property
    def is_empty(self) -> bool:
        """Whether the change changes nothing."""
        return not (self.added_data or self.added_deletes or self.removed_data)

    def touch(self, f: DataFile) -> None:
        self.touched.add(f.file_path)
        self.touched_partitions.add(_key(f))

    def remove_data_file(self, task: FileScanTask) -> None:
        """Remove the task's data file, with the deletion vector that references it."""
        self.touch(task.file)
        self.removed_data.add(task.file.file_path)
        self.removed_deletes.update(
            (d.file_path, d.content_offset)
            for d in task.delete_files
            if d.file_format == FileFormat.PUFFIN
        )

    def write_position_deletes(
        self,
        io: FileIO,
        base: TableMetadata,
        matches: Sequence[tuple[FileScanTask, np.ndarray]],
        cache: DeleteCache | None = None,
    ) -> None:
        """Merge-on-read: delete the given positions of each task's data file, with one
        position delete file per partition on v2, one deletion vector per data file on v3
        (merged with the positions its DV and position deletes already delete; the old DV
        is replaced)."""
        if not matches:
            return
        if base.format_version < 2:
            raise ValidationError(
                f"Cannot write merge-on-read deletes to format version {base.format_version} "
                f"table {base.location}: row-level deletes need format version 2 or later"
            )
        cache = cache or DeleteCache()
        if base.format_version >= 3:  # the old positions are merged into the new DVs
            cache.load_positions(io, (task for task, _ in matches))
        by_partition: dict[_PartitionKey, dict[str, np.ndarray]] = {}
        vectors: list[tuple[DataFile, np.ndarray]] = []
        for task, positions in matches:
            f = task.file
            self.touch(f)
            if base.format_version >= 3:
                previous = deleted_positions(io, task, cache)
                vectors.append((f, np.union1d(previous, positions)))
                self.removed_deletes.update(
                    (d.file_path, d.content_offset)
                    for d in task.delete_files
                    if d.file_format == FileFormat.PUFFIN
                )
            else:
                by_partition.setdefault(_key(f), {})[f.file_path] = positions
        for (spec_id, partition), deletes in by_partition.items():
            written = write_position_delete_file(io, base, spec_id, partition, deletes)
            if written is not None:
                self.added_deletes.append(written)
        self.added_deletes.extend(write_deletion_vectors(io, base, vectors))

    def discard(self, io: FileIO) -> None:
        """Delete the files this change wrote (it will not be committed)."""
        _delete_all(io, [f.file_path for f in self.added_data])
        _delete_all(io, sorted({f.file_path for f in self.added_deletes}))


@dataclass
class DeleteAction(Action):
    """Delete the rows matching ``row_filter`` on ``branch``; see the module docstring."""

    io: FileIO
    row_filter: BooleanExpression
    branch: str = MAIN_BRANCH
    mode: str = COPY_ON_WRITE
    isolation: str = _SERIALIZABLE
    case_sensitive: bool = True
    snapshot_properties: dict[str, str] = field(default_factory=dict)
    added_files: Sequence[DataFile] = ()
    _prepared: RowLevelChange | None = None
    revalidates = True

    def abort(self, io: FileIO) -> None:
        super().abort(io)
        owned = [f.file_path for f in self.added_files]
        if self._prepared is not None:
            owned += [f.file_path for f in self._prepared.added_data]
            owned += sorted({f.file_path for f in self._prepared.added_deletes})
        _delete_all(io, owned)

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        if self.mode not in (COPY_ON_WRITE, MERGE_ON_READ):
            raise ValidationError(
                f"Unknown delete mode {self.mode!r}: {COPY_ON_WRITE} or {MERGE_ON_READ}"
            )
        if self._prepared is None:
            self._prepared = self._prepare(base)
        else:
            self._validate(base, self._prepared)
        prepared = self._prepared
        return self._stage_snapshot(
            base,
            lambda: _producer(
                self.io, prepared, self.branch, self.snapshot_properties, self.added_files
            ),
        )

    # -- the work, once --------------------------------------------------------------------

    def _prepare(self, base: TableMetadata) -> RowLevelChange:
        head = base.branch_head(self.branch)
        prepared = RowLevelChange(head.snapshot_id if head else None)
        if self.mode == MERGE_ON_READ and base.format_version < 2:
            raise ValidationError(
                f"Cannot write merge-on-read deletes to format version {base.format_version} "
                f"table {base.location}: row-level deletes need format version 2 or later"
            )
        schema = base.schema()
        tasks = plan_files(self.io, base, head, self.row_filter, schema, self.case_sensitive)
        reader = _TaskReader(self.io, base, schema, base.name_mapping())
        matches: list[tuple[FileScanTask, np.ndarray]] = []
        try:
            for task in tasks:
                if isinstance(task.residual, AlwaysTrue):
                    prepared.remove_data_file(task)
                    continue
                bound = bind(schema, task.residual, self.case_sensitive)
                matched = reader.positions(task, bound)
                if not len(matched):
                    continue
                if self.mode == COPY_ON_WRITE:
                    prepared.remove_data_file(task)
                    prepared.added_data.extend(reader.rewrite(task, matched))
                else:
                    matches.append((task, matched))
            prepared.write_position_deletes(self.io, base, matches, reader.cache)
        except BaseException:
            prepared.discard(self.io)
            raise
        return prepared

    # -- conflicts -------------------------------------------------------------------------

    def _validate(self, base: TableMetadata, p: RowLevelChange) -> None:
        validate_row_level(
            self.io, base, p, self.branch, self.isolation, self.row_filter, self.case_sensitive
        )


def validate_row_level(
    io: FileIO,
    base: TableMetadata,
    p: RowLevelChange,
    branch: str,
    isolation: str,
    conflict_filter: BooleanExpression,
    case_sensitive: bool = True,
    what: str = "delete",
) -> None:
    """Fail with :class:`ValidationError` if a commit made on ``branch`` since ``p`` was
    planned conflicts with it (see the module docstring); ``conflict_filter`` is the condition
    whose matching rows the change read, for ``serializable`` isolation."""
    head = base.branch_head(branch)
    if head is None or head.snapshot_id == p.head_id:
        return
    where = f"table {base.location}, branch {branch}, isolation {isolation}"
    for change in changes_since(io, base, head.snapshot_id, p.head_id, where=where):
        snapshot_id, entry, content = change.snapshot_id, change.entry, change.content
        f = entry.data_file
        if content == ManifestContent.DATA and entry.status == ManifestEntryStatus.DELETED:
            if f.file_path in p.touched:
                raise ValidationError(
                    f"Cannot commit {what}: data file {f.file_path} was removed by concurrent "
                    f"snapshot {snapshot_id} ({where})"
                )
        elif content == ManifestContent.DELETES and entry.status == ManifestEntryStatus.DELETED:
            if (f.file_path, f.content_offset) in p.removed_deletes:
                raise ValidationError(
                    f"Cannot commit {what}: delete file {f.file_path} was replaced by "
                    f"concurrent snapshot {snapshot_id} ({where})"
                )
        elif content == ManifestContent.DELETES and entry.status == ManifestEntryStatus.ADDED:
            # a ``replace`` (rewritten position deletes) deletes no new row; only the DVs it
            # adds can clash with ours (Java's VALIDATE_ADDED_DVS_OPERATIONS)
            rewritten = change.snapshot.operation == Operation.REPLACE
            if rewritten and f.file_format != FileFormat.PUFFIN:
                continue
            if _may_apply(f, p, base):
                raise ValidationError(
                    f"Cannot commit {what}: found new conflicting delete file {f.file_path} "
                    f"(concurrent snapshot {snapshot_id}) for data files it touches ({where})"
                )
    if isolation == _SERIALIZABLE:
        check_no_conflicting_data(
            io, base, branch, p.head_id, conflict_filter, case_sensitive, f"commit {what}"
        )


def _producer(
    io: FileIO,
    p: RowLevelChange,
    branch: str,
    snapshot_properties: dict[str, str],
    added_files: Sequence[DataFile] = (),
) -> SnapshotProducer:
    """The producer of a row-level change's snapshot: the same on every attempt."""
    adds = [*added_files, *p.added_data]
    # as Java's BaseRowDelta and BaseOverwriteFiles: only rows added (a MERGE whose rows all
    # went to its NOT MATCHED clauses) is an append; only rows deleted, a delete
    operation = Operation.OVERWRITE
    if not adds:
        operation = Operation.DELETE
    elif not p.added_deletes and not p.removed_data:
        operation = Operation.APPEND
    return SnapshotProducer(
        io,
        operation,
        added_files=adds,
        added_delete_files=p.added_deletes,
        remove_entry=lambda e: e.data_file.file_path in p.removed_data,
        remove_delete_entry=lambda e: (
            (e.data_file.file_path, e.data_file.content_offset) in p.removed_deletes
        ),
        branch=branch,
        snapshot_properties=snapshot_properties,
    )


@dataclass
class RowLevelAction(Action):
    """Commit a row-level change worked out by the caller (e.g. a Spark job): remove the
    data and delete files it replaces, add the files it wrote, in one snapshot (``delete``
    when it only removes or deletes rows, ``append`` when it only adds rows, else
    ``overwrite``). On a retry the
    concurrent commits are checked as :func:`validate_row_level` says; ``what`` names the
    operation in errors (``delete``, ``update``, ``merge``)."""

    io: FileIO
    change: RowLevelChange
    conflict_filter: BooleanExpression = field(default_factory=AlwaysTrue)
    branch: str = MAIN_BRANCH
    isolation: str = _SERIALIZABLE
    what: str = "delete"
    case_sensitive: bool = True
    snapshot_properties: dict[str, str] = field(default_factory=dict)
    revalidates = True

    def abort(self, io: FileIO) -> None:
        super().abort(io)
        self.change.discard(io)

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        if self.change.added_deletes and base.format_version < 2:
            raise ValidationError(
                f"Cannot add delete files to format version {base.format_version} table "
                f"{base.location}: row-level deletes need format version 2 or later"
            )
        validate_row_level(
            self.io,
            base,
            self.change,
            self.branch,
            self.isolation,
            self.conflict_filter,
            self.case_sensitive,
            self.what,
        )
        return self._stage_snapshot(
            base,
            lambda: _producer(self.io, self.change, self.branch, self.snapshot_properties),
        )


def deleted_positions(io: FileIO, task: FileScanTask, cache: DeleteCache) -> np.ndarray:
    """Positions of ``task``'s data file already deleted by its position deletes and DV."""
    parts = [
        cache.positions(io, d, task.file.file_path)
        for d in task.delete_files
        if d.content == FileContent.POSITION_DELETES
    ]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def _may_apply(f: DataFile, p: RowLevelChange, base: TableMetadata) -> bool:
    if f.referenced_data_file is not None:
        return f.referenced_data_file in p.touched
    if f.content == FileContent.EQUALITY_DELETES:
        spec = base.spec_by_id(f.spec_id or 0)
        if spec is None or spec.is_unpartitioned:
            return bool(p.touched)
    return _key(f) in p.touched_partitions


class _TaskReader:
    """Reads a scan task's live rows (its deletes applied) with their positions."""

    def __init__(
        self, io: FileIO, base: TableMetadata, schema: Schema, mapping: NameMapping | None
    ) -> None:
        self.io, self.base, self.schema, self.mapping = io, base, schema, mapping
        self.cache = DeleteCache()
        self.with_pos = Schema(*schema.fields, POS_FIELD, schema_id=schema.schema_id)

    def _batches(
        self, task: FileScanTask, row_filter: BooleanExpression | None, projected: Schema
    ) -> Iterator[pa.RecordBatch]:
        return read_task(
            self.io,
            task,
            projected_schema=projected,
            table_schema=self.schema,
            partition_spec=self.base.spec_by_id(task.spec_id),
            row_filter=row_filter,
            name_mapping=self.mapping,
            cache=self.cache,
        )

    def positions(self, task: FileScanTask, row_filter: BooleanExpression) -> np.ndarray:
        """Positions of the live rows matching ``row_filter`` (bound)."""
        parts = [
            b.column(b.schema.get_field_index("_pos")).to_numpy(zero_copy_only=False)
            for b in self._batches(task, row_filter, Schema(POS_FIELD))
        ]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)

    def deleted_positions(self, task: FileScanTask) -> np.ndarray:
        """Positions already deleted by the task's position deletes and DV."""
        return deleted_positions(self.io, task, self.cache)

    def rewrite(self, task: FileScanTask, matched: np.ndarray) -> list[DataFile]:
        """Copy-on-write: the task's live rows except ``matched``, in the file's own spec."""
        kept: list[pa.RecordBatch] = []
        n = len(self.schema.fields)
        for b in self._batches(task, None, self.with_pos):
            pos = b.column(n).to_numpy(zero_copy_only=False)
            keep = ~np.isin(pos, matched)
            if keep.any():
                kept.append(b.filter(pa.array(keep)).select(list(range(n))))
        if not kept:
            return []
        spec = self.base.spec_by_id(task.spec_id) or self.base.spec()
        return write_data_files(
            self.io,
            table_location=self.base.location,
            schema=self.schema,
            spec=spec,
            sort_order=self.base.sort_order(),
            properties=self.base.properties,
            data=pa.Table.from_batches(kept),
        )


@dataclass
class RowDeltaAction(Action):
    """Commit data files and delete files (written by the caller) in one snapshot."""

    io: FileIO
    data_files: Sequence[DataFile] = ()
    delete_files: Sequence[DataFile] = ()
    branch: str = MAIN_BRANCH
    snapshot_properties: dict[str, str] = field(default_factory=dict)
    validate: Callable[[TableMetadata, TableMetadata], None] | None = None

    @property
    def revalidates(self) -> bool:  # type: ignore[override]
        return self.validate is not None

    def abort(self, io: FileIO) -> None:
        super().abort(io)
        _delete_all(io, [f.file_path for f in (*self.data_files, *self.delete_files)])

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        if base.format_version < 2 and self.delete_files:
            raise ValidationError(
                f"Cannot add delete files to format version 1 table {base.location}"
            )
        if self.validate is not None:
            self.validate(base, start)
        operation = Operation.OVERWRITE if self.delete_files else Operation.APPEND
        return self._stage_snapshot(
            base,
            lambda: SnapshotProducer(
                self.io,
                operation,
                added_files=self.data_files,
                added_delete_files=self.delete_files,
                branch=self.branch,
                snapshot_properties=self.snapshot_properties,
            ),
        )
