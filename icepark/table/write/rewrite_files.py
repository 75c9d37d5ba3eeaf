"""The ``replace`` commit: swap data files (and delete files) for their rewritten versions.

Java's ``RewriteFiles`` (``BaseRewriteFiles`` on ``MergingSnapshotProducer``): one snapshot
with operation ``replace`` that removes the rewritten data files and delete files and adds
their replacements, rows unchanged. How it flows:

1. The caller planned the rewrite at a starting snapshot of a branch
   (``starting_snapshot_id``, Java's ``validateFromSnapshot``) and wrote the new files.
2. With ``data_sequence_number`` (``use-starting-sequence-number``, the default of
   ``rewrite_data_files``) the added data files keep the sequence number of the starting
   snapshot: deletes committed after the rewrite started still apply to them (a new position
   delete names the old path, so it cannot; a new equality delete can). Added delete files may
   carry their own sequence numbers (``delete_sequence_numbers``, for merged position deletes).
3. Each commit attempt validates the snapshots committed on the branch since the start
   (:func:`validate_rewrite`, walked with :func:`~icepark.planning.walk.changes_since`):

   * a rewritten data file or a replaced delete file that a concurrent commit removed fails
     the commit ("missing required files to delete", nothing would be left to replace);
   * a delete file added concurrently that applies to a rewritten data file fails it: its
     rows would come back (position deletes and DVs always; equality deletes unless the new
     files keep the starting sequence number, which keeps them applying);
   * anything else (appends, deletes elsewhere) is retried through.

4. The snapshot producer removes the files and adds the new ones; deletion vectors of removed
   data files go too (the caller lists them), and ``dangling_delete_files`` (delete files that
   apply to nothing once the rewrite lands) are removed if they are still live: a concurrent
   commit that removed one already is not a conflict.

Files the caller wrote are owned by the action: :meth:`RewriteFilesAction.abort` deletes them
when the commit definitely failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.manifest import (
    DataFile,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from icepark.planning.delete_index import DeleteFileIndex
from icepark.planning.walk import changes_since
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.table.write.operations import Action, Staged
from icepark.table.write.producers import SnapshotProducer

__all__ = ["RewriteFilesAction", "DeleteKey", "delete_key", "validate_rewrite"]

# Java's VALIDATE_ADDED_DELETE_FILES_OPERATIONS: a ``replace`` (rewritten position deletes)
# deletes no new row
_ADDS_DELETES = (Operation.OVERWRITE, Operation.DELETE)

DeleteKey = tuple[str, int | None]
"""A delete file's identity: its path and (for a deletion vector) its content offset."""


def delete_key(f: DataFile) -> DeleteKey:
    return (f.file_path, f.content_offset)


def _delete_all(io: FileIO, paths: Sequence[str]) -> None:
    for path in paths:
        try:
            io.delete(path)
        except Exception:  # best-effort cleanup of files we wrote
            pass


def validate_rewrite(
    io: FileIO,
    base: TableMetadata,
    branch: str,
    starting_snapshot_id: int | None,
    rewritten_data: Sequence[DataFile],
    replaced_deletes: Sequence[DataFile] = (),
    *,
    ignore_equality_deletes: bool = False,
    dangling: Sequence[tuple[DataFile, int]] = (),
) -> set[DeleteKey]:
    """Check the commits made on ``branch`` since ``starting_snapshot_id`` against a rewrite
    (see the module docstring); raise :class:`ValidationError` naming the file and the
    concurrent snapshot on a conflict. Returns the keys of the ``dangling`` delete files
    (``(file, data sequence number)``) that no longer dangle: an equality delete whose
    partition got data files with an older sequence number (only a concurrent rewrite that
    kept its starting sequence number adds such files)."""
    head = base.snapshot_by_name(branch)
    if head is None:
        if rewritten_data or replaced_deletes:
            raise ValidationError(
                f"Cannot commit rewrite to table {base.location}: branch {branch} has no snapshot"
            )
        return set()
    if head.snapshot_id == starting_snapshot_id:
        return set()
    where = f"table {base.location}, branch {branch}"
    changes = changes_since(io, base, head.snapshot_id, starting_snapshot_id, where=where)
    data_paths = {f.file_path for f in rewritten_data}
    delete_keys = {delete_key(f) for f in replaced_deletes}
    added_deletes = DeleteFileIndex(base.specs())
    added_by: dict[DeleteKey, int] = {}
    added_data: list[tuple[DataFile, int]] = []
    for change in changes:
        f = change.entry.data_file
        removed = change.entry.status == ManifestEntryStatus.DELETED
        if change.content == ManifestContent.DATA:
            if removed and f.file_path in data_paths:
                raise ValidationError(
                    f"Cannot commit rewrite: missing required files to delete: data file "
                    f"{f.file_path} was removed by concurrent snapshot {change.snapshot_id} "
                    f"({where})"
                )
            if not removed:
                added_data.append((f, change.entry.sequence_number or 0))
        elif removed:
            if delete_key(f) in delete_keys:
                raise ValidationError(
                    f"Cannot commit rewrite: missing required files to delete: delete file "
                    f"{f.file_path} was removed by concurrent snapshot {change.snapshot_id} "
                    f"({where})"
                )
        elif base.format_version >= 2 and change.snapshot.operation in _ADDS_DELETES:
            added_deletes.add(f, change.entry.sequence_number or 0)
            added_by[delete_key(f)] = change.snapshot_id
    if not added_deletes.is_empty and rewritten_data:
        start = base.snapshot_by_id(starting_snapshot_id) if starting_snapshot_id else None
        starting_sequence = start.sequence_number if start is not None else 0
        for f in rewritten_data:
            for d in added_deletes.for_data_file(f, starting_sequence):
                if ignore_equality_deletes and d.content == FileContent.EQUALITY_DELETES:
                    continue
                raise ValidationError(
                    f"Cannot commit rewrite: found new delete for replaced data file "
                    f"{f.file_path}: {d.file_path} (added by concurrent snapshot "
                    f"{added_by.get(delete_key(d))}; {where})"
                )
    return _revived(base, dangling, added_data)


def _revived(
    base: TableMetadata,
    dangling: Sequence[tuple[DataFile, int]],
    added_data: Sequence[tuple[DataFile, int]],
) -> set[DeleteKey]:
    revived: set[DeleteKey] = set()
    for d, seq in dangling:
        if d.content != FileContent.EQUALITY_DELETES:
            continue  # a position delete names its data files, which this rewrite removes
        spec = base.spec_by_id(d.spec_id or 0)
        everywhere = spec is None or spec.is_unpartitioned
        for f, data_seq in added_data:
            same = everywhere or (
                (f.spec_id or 0) == (d.spec_id or 0) and tuple(f.partition) == tuple(d.partition)
            )
            if same and data_seq < seq:
                revived.add(delete_key(d))
                break
    return revived


@dataclass
class RewriteFilesAction(Action):
    """Commit a rewrite as one ``replace`` snapshot on ``branch``; see the module docstring.

    ``rewritten_data_files`` and ``replaced_delete_files`` must be live (else
    :class:`ValidationError`); ``added_data_files`` and ``added_delete_files`` are their
    replacements. ``data_sequence_number`` is the data sequence number of the added data files
    (None: the new snapshot's); ``delete_sequence_numbers`` those of added delete files by path.
    ``dangling_delete_files`` are ``(delete file, its data sequence number)`` pairs removed too
    when still live. The added files are deleted when the commit definitely fails, unless
    ``delete_on_abort`` is false.
    """

    io: FileIO
    rewritten_data_files: Sequence[DataFile] = ()
    added_data_files: Sequence[DataFile] = ()
    replaced_delete_files: Sequence[DataFile] = ()
    added_delete_files: Sequence[DataFile] = ()
    starting_snapshot_id: int | None = None
    data_sequence_number: int | None = None
    delete_sequence_numbers: dict[str, int] = field(default_factory=dict)
    dangling_delete_files: Sequence[tuple[DataFile, int]] = ()
    branch: str = MAIN_BRANCH
    snapshot_properties: dict[str, str] = field(default_factory=dict)
    delete_on_abort: bool = True
    revalidates = True

    def __post_init__(self) -> None:
        # Java's validateReplacedAndAddedFiles
        if not self.rewritten_data_files and not self.replaced_delete_files:
            raise ValidationError("Cannot rewrite: files to delete cannot be empty")
        if self.added_data_files and not self.rewritten_data_files:
            raise ValidationError(
                "Cannot rewrite: data files to add must be empty because there is no data file "
                "to be rewritten"
            )
        if self.added_delete_files and not self.replaced_delete_files:
            raise ValidationError(
                "Cannot rewrite: delete files to add must be empty because there is no delete "
                "file to be rewritten"
            )
        for f in self.rewritten_data_files:
            if f.content != FileContent.DATA:
                raise ValidationError(f"Cannot rewrite {f.file_path}: not a data file")
        for f in (*self.replaced_delete_files, *self.added_delete_files):
            if f.content == FileContent.DATA:
                raise ValidationError(f"Cannot rewrite {f.file_path}: not a delete file")

    def _sequence_numbers(self, base: TableMetadata) -> dict[str, int]:
        if base.format_version < 2:
            return {}
        seqs = dict(self.delete_sequence_numbers)
        if self.data_sequence_number is not None:
            seqs.update((f.file_path, self.data_sequence_number) for f in self.added_data_files)
        return seqs

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        if self.added_delete_files and base.format_version < 2:
            raise ValidationError(
                f"Cannot add delete files to format version {base.format_version} table "
                f"{base.location}"
            )
        revived = validate_rewrite(
            self.io,
            base,
            self.branch,
            self.starting_snapshot_id,
            self.rewritten_data_files,
            self.replaced_delete_files,
            ignore_equality_deletes=self.data_sequence_number is not None,
            dangling=self.dangling_delete_files,
        )
        data_paths = {f.file_path for f in self.rewritten_data_files}
        data_specs = {f.spec_id or 0 for f in self.rewritten_data_files}
        required = {delete_key(f) for f in self.replaced_delete_files}
        removable = required | {
            delete_key(d) for d, _ in self.dangling_delete_files if delete_key(d) not in revived
        }

        def remove_data(e: ManifestEntry) -> bool:
            return e.data_file.file_path in data_paths

        def data_manifest(m: ManifestFile) -> bool:
            return m.partition_spec_id in data_specs

        def remove_delete(e: ManifestEntry) -> bool:
            return delete_key(e.data_file) in removable

        producer = self._producer or SnapshotProducer(
            self.io,
            Operation.REPLACE,
            added_files=self.added_data_files,
            added_delete_files=self.added_delete_files,
            branch=self.branch,
            snapshot_properties=self.snapshot_properties,
            added_sequence_numbers=self._sequence_numbers(base),
        )
        producer.update_removals(remove_data, data_manifest, remove_delete)
        staged = self._stage_snapshot(base, lambda: producer)
        self._check_all_removed(base, staged, data_paths, required)
        return staged

    def _check_all_removed(
        self, base: TableMetadata, staged: Staged, data_paths: set[str], required: set[DeleteKey]
    ) -> None:
        """Java's failMissingDeletePaths: every file to replace was found live."""
        removed = self._produced.removed if self._produced is not None else []
        found_data = {f.file_path for f in removed if f.content == FileContent.DATA}
        found_deletes = {delete_key(f) for f in removed if f.content != FileContent.DATA}
        missing = sorted(data_paths - found_data) + sorted(p for p, _ in required - found_deletes)
        if missing:
            _delete_all(self.io, staged.written)
            raise ValidationError(
                f"Cannot commit rewrite to table {base.location}, branch {self.branch}: missing "
                f"required files to delete: {', '.join(missing[:5])}"
                + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            )

    @property
    def removed_files(self) -> list[DataFile]:
        """The data and delete files the last staged attempt removes."""
        return list(self._produced.removed) if self._produced is not None else []

    def abort(self, io: FileIO) -> None:
        super().abort(io)
        if not self.delete_on_abort:
            return  # the caller keeps the files (e.g. to commit them in smaller parts)
        owned = [f.file_path for f in self.added_data_files]
        owned += sorted({f.file_path for f in self.added_delete_files})
        _delete_all(io, owned)
