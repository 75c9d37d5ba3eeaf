"""``table.rewrite_table_path()``: a copy of a table's metadata for another location prefix
(Java's ``RewriteTablePath`` action, Spark's ``rewrite_table_path`` procedure), so that the
table can be copied or moved there (another bucket, a disaster-recovery site) and registered.

Nothing of the table changes and nothing is committed: every rewritten file goes into a
staging folder (default: ``copy-table-staging-<uuid>/`` beside the current metadata file, as
Java's), with a **file list** (``file-list``, lines ``source,target``) of what to copy where.
Copying those files (staged metadata to its final paths, data files as they are) and
registering ``latest_metadata_location`` gives the table at the target. How it flows:

1. the versions: the end version (a metadata file name from the table's metadata log,
   default the current one) and the versions its metadata log holds before it, back to the
   start version (not included; default: all of them). Each is written again with every path
   moved (:func:`moved_metadata`: the location, the metadata log, the snapshots' manifest
   lists, statistics and partition-statistics files, the ``write.data.path``,
   ``write.metadata.path``, ``write.object-storage.path`` and ``write.folder-storage.path``
   properties). Statistics and partition-statistics files hold no paths: they are listed as
   they are;
2. the snapshots of the end version that the start version does not hold: their manifest
   lists, the manifests those list and the position delete files of their delete manifests
   are written again with paths moved (:mod:`~icepark.table.maintenance.table_paths`);
3. the file list names the rewritten versions and manifest lists, and the manifests, data
   files and delete files the snapshots added after the start version (every live one
   without a start version); a file a ``DELETED`` entry names is not listed.

Where icepark differs from Java 1.10.2, on purpose: a rewritten file's length is recorded
(the manifest lists' manifest lengths, a position delete file's size: Java keeps the old
ones, which mismatch once paths change length); a position delete entry keeps its
``referenced_data_file`` (moved) and, for a deletion vector, its blob's offset and length
(Java 1.10.2 drops them); deletion vectors are rewritten (their Puffin blobs'
``referenced-data-file``: Java 1.10.2 fails on them); partition statistics files are moved
like statistics files (Java 1.10.2 refuses a table with them; later Java versions move them);
``file:/p``, ``file:///p`` and ``/p`` are one path (Java 1.10.2 leaves a ``file:///``
location unmoved and refuses paths spelled the other way than the prefix); without a start
version every live file is listed (Java skips files added by snapshots no logged version
holds). With a start version, the manifests carried over from earlier snapshots are staged
again (unlisted: the earlier copy has them) so that their lengths in the new manifest lists
are known.

A path not under the source prefix, or a version not in the metadata log, is a
:class:`~icepark.errors.ValidationError` naming it; a failure removes what was staged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import shutil
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from icepark.errors import NoSuchFileError, ValidationError
from icepark.io import FileIO
from icepark.manifest import FileContent, ManifestContent, ManifestEntry, ManifestFile
from icepark.planning.walk import manifests_at_once, parallel_map
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import Snapshot
from icepark.table.interface import read_table_metadata, write_table_metadata
from icepark.table.maintenance.table_paths import MovedDeletes, PathMover, file_name

__all__ = ["RewriteTablePathResult", "moved_metadata", "rewrite_table_path"]

FILE_LIST = "file-list"
_COPY_CHUNK = 1 << 20
# the location properties Java moves (the object storage one icepark does not use itself)
_MOVED_PROPERTIES = (
    "write.object-storage.path",
    P.WRITE_FOLDER_STORAGE_LOCATION.name,
    P.WRITE_DATA_LOCATION.name,
    P.WRITE_METADATA_LOCATION.name,
)


@dataclass(frozen=True)
class RewriteTablePathResult:
    """What :func:`rewrite_table_path` did: Java's procedure columns ``latest_version`` (the
    end version's file name) and ``file_list_location``, the staging folder, and the end
    version's metadata file at the target (what to register once the files are copied)."""

    latest_version: str
    file_list_location: str
    staging_location: str
    latest_metadata_location: str

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


# -- arguments -------------------------------------------------------------------------------


def _required(value: str | None, what: str) -> str:
    if value is None or not value.strip():
        raise ValidationError(f"{what}('{value}') cannot be empty.")
    return value


def _version_file(table: Any, version: str | None, what: str) -> str:
    """The metadata file of the table's log (or its current one) that ``version`` names (a
    file name, or the whole path); it must exist."""
    name = _required(version, f"{what} version")
    found = None
    for logged in (
        table.metadata_location,
        *(e.metadata_file for e in table.metadata.metadata_log),
    ):
        if name in (logged, file_name(logged)):
            found = logged
    if found is None:
        raise ValidationError(
            f"Cannot find provided version file {name} in metadata log of table {table.name}."
        )
    if not table.io.exists(found):
        raise ValidationError(f"Version file {found} does not exist.")
    return found


def _staging_folder(table: Any, staging_location: str | None) -> tuple[str, bool]:
    """The staging folder (ending in ``/``) and whether it is a fresh one made here."""
    if staging_location is not None:
        staging = _required(staging_location, "Staging location")
        return (staging if staging.endswith("/") else staging + "/"), False
    folder = table.metadata_location.rsplit("/", 1)[0]
    return f"{folder}/copy-table-staging-{uuid.uuid4()}/", True


# -- versions --------------------------------------------------------------------------------


def moved_metadata(metadata: TableMetadata, mover: PathMover) -> TableMetadata:
    """``metadata`` with every path it holds moved to the target prefix (Java's
    ``RewriteTablePathUtil.replacePaths``): location, metadata log, manifest lists,
    statistics and partition-statistics files, and the location properties."""
    properties = dict(metadata.properties)
    for name in _MOVED_PROPERTIES:
        if name in properties:
            properties[name] = mover.new_path(properties[name], f"property {name}")
    return dataclasses.replace(
        metadata,
        location=mover.new_path(metadata.location, "the table location"),
        properties=properties,
        snapshots=tuple(_moved_snapshot(s, mover) for s in metadata.snapshots),
        metadata_log=tuple(
            dataclasses.replace(e, metadata_file=mover.new_path(e.metadata_file, "metadata log"))
            for e in metadata.metadata_log
        ),
        statistics=tuple(
            dataclasses.replace(
                s, statistics_path=mover.new_path(s.statistics_path, "a statistics file")
            )
            for s in metadata.statistics
        ),
        partition_statistics=tuple(
            dataclasses.replace(
                s,
                statistics_path=mover.new_path(s.statistics_path, "a partition statistics file"),
            )
            for s in metadata.partition_statistics
        ),
    )


def _moved_snapshot(snapshot: Snapshot, mover: PathMover) -> Snapshot:
    if snapshot.manifest_list is None:
        raise ValidationError(
            f"Cannot rewrite snapshot {snapshot.snapshot_id}: it has no manifest list (a v1 "
            "snapshot listing its manifests in the metadata)"
        )
    what = f"the manifest list of snapshot {snapshot.snapshot_id}"
    return dataclasses.replace(snapshot, manifest_list=mover.new_path(snapshot.manifest_list, what))


@dataclass(frozen=True)
class _Version:
    path: str
    metadata: TableMetadata
    moved: TableMetadata


def _versions(
    io: FileIO, end: str, end_metadata: TableMetadata, start: str | None, mover: PathMover
) -> list[_Version]:
    """The end version and those logged before it down to ``start`` (excluded), newest
    first, each with its paths moved."""
    paths = [end]
    for entry in reversed(end_metadata.metadata_log):
        if entry.metadata_file == start:
            break
        if not io.exists(entry.metadata_file):
            raise ValidationError(f"Version file {entry.metadata_file} doesn't exist")
        paths.append(entry.metadata_file)
    loaded = [end_metadata, *parallel_map(lambda p: read_table_metadata(io, p), paths[1:])]
    return [_Version(p, m, moved_metadata(m, mover)) for p, m in zip(paths, loaded, strict=True)]


# -- the rewrite ----------------------------------------------------------------------------


class _Plan:
    """The ``source,target`` pairs of the file list, each once, in the order found: written
    to a local temporary file as they are found, with a 16-byte digest of each kept to skip
    repeats (a million files' pairs held as strings took about 600 MB)."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()
        self._spool = tempfile.TemporaryFile()

    def add(self, source: str, target: str) -> None:
        line = f"{source},{target}\n".encode()
        digest = hashlib.blake2b(line, digest_size=16).digest()
        if digest not in self._seen:
            self._seen.add(digest)
            self._spool.write(line)

    def write(self, io: FileIO, location: str) -> None:
        """Write the file list at ``location``, a megabyte at a time."""
        self._spool.seek(0)
        with io.new_output(location).create(overwrite=True) as stream:
            shutil.copyfileobj(self._spool, stream, _COPY_CHUNK)

    def close(self) -> None:
        self._spool.close()


def _entry_snapshot(entry: ManifestEntry, manifest: ManifestFile) -> int | None:
    return entry.snapshot_id if entry.snapshot_id is not None else manifest.added_snapshot_id


class _Rewrite:
    """One run: the versions, then the snapshots' files, into staging."""

    def __init__(self, io: FileIO, mover: PathMover, start: TableMetadata | None) -> None:
        self.io = io
        self.mover = mover
        self.start_ids = {s.snapshot_id for s in start.snapshots} if start else set()
        self.incremental = start is not None
        self.plan = _Plan()

    def run(self, versions: list[_Version]) -> None:
        end = versions[0].metadata
        added = {s.snapshot_id for v in versions for s in v.metadata.snapshots}
        self.delta_ids = added - self.start_ids
        snapshots = [s for s in end.snapshots if s.snapshot_id not in self.start_ids]
        lists = list(parallel_map(lambda s: self._manifest_list(s, versions[0].path), snapshots))
        unique: dict[str, ManifestFile] = {}
        for manifests in lists:
            for m in manifests:
                unique.setdefault(m.manifest_path, m)
        for version in versions:
            self._version(version)
        moved = self._manifests(list(unique.values()))
        for snapshot, manifests in zip(snapshots, lists, strict=True):
            listed = [moved[m.manifest_path] for m in manifests]
            self.plan.add(*self.mover.rewrite_manifest_list(snapshot, listed))
        for path, m in unique.items():
            if self._listed(m):
                self.plan.add(self.mover.staging_path(path), moved[path].manifest_path)

    def _manifest_list(self, snapshot: Snapshot, end: str) -> list[ManifestFile]:
        try:
            return self.mover.read_manifest_list(snapshot)
        except NoSuchFileError as exc:
            raise ValidationError(
                f"Cannot read the manifest list of snapshot {snapshot.snapshot_id} of end "
                f"version {file_name(end)}: {exc}. The end version may hold snapshots expired "
                "since; choose an earlier version without them."
            ) from exc

    def _listed(self, manifest: ManifestFile) -> bool:
        """Is a manifest (and what it added) in the file list? All without a start version,
        else those added after it (Java's filter on ``added_snapshot_id``)."""
        return not self.incremental or manifest.added_snapshot_id in self.delta_ids

    def _version(self, version: _Version) -> None:
        staged = self.mover.staging_path(version.path, "a metadata file")
        self.mover.written.append(staged)
        write_table_metadata(self.io, staged, version.moved, overwrite=True)
        self.plan.add(staged, self.mover.new_path(version.path))
        for old, new in zip(version.metadata.statistics, version.moved.statistics, strict=True):
            self.plan.add(old.statistics_path, new.statistics_path)
        partition = zip(
            version.metadata.partition_statistics, version.moved.partition_statistics, strict=True
        )
        for old_file, new_file in partition:
            self.plan.add(old_file.statistics_path, new_file.statistics_path)

    def _manifests(self, manifests: list[ManifestFile]) -> dict[str, ManifestFile]:
        """Stage every manifest (delete manifests after their position delete files) and
        list the content files they add: the moved manifest-list entry of each by old
        path."""
        deletes = [m for m in manifests if m.content == ManifestContent.DELETES]
        entries = dict(
            zip(
                (m.manifest_path for m in deletes),
                parallel_map(self.mover.read_entries, deletes, manifests_at_once(deletes)),
                strict=True,
            )
        )
        files: dict[str, Any] = {}
        for found in entries.values():
            for e in found:
                f = e.data_file
                if e.is_live and f.content == FileContent.POSITION_DELETES:
                    files.setdefault(f.file_path, f)
        rewritten = parallel_map(self.mover.rewrite_position_deletes, list(files.values()))
        moved_deletes: dict[str, MovedDeletes] = dict(zip(files, rewritten, strict=True))

        def one(m: ManifestFile) -> tuple[ManifestFile, list[tuple[str, str]]]:
            found = entries.get(m.manifest_path)
            if found is None:
                found = self.mover.read_entries(m)
            moved = self.mover.rewrite_manifest(m, found, moved_deletes)
            return moved, self._content_files(m, found) if self._listed(m) else []

        by_path: dict[str, ManifestFile] = {}
        # as many at once as there are cores: decoding is CPU-bound, and each manifest in
        # flight holds its entries (8 at once held 774 MB on a 100,000-file table)
        at_once = manifests_at_once(manifests)
        for m, (moved, pairs) in zip(manifests, parallel_map(one, manifests, at_once), strict=True):
            by_path[m.manifest_path] = moved
            for pair in pairs:
                self.plan.add(*pair)
        return by_path

    def _content_files(
        self, manifest: ManifestFile, entries: Iterable[ManifestEntry]
    ) -> list[tuple[str, str]]:
        """The files live entries of ``manifest`` add (after the start version): their
        ``source,target`` pairs (a position delete file's source is its staged copy)."""
        pairs = []
        for e in entries:
            if not e.is_live:
                continue
            if self.incremental and _entry_snapshot(e, manifest) not in self.delta_ids:
                continue
            f = e.data_file
            target = self.mover.new_path(f.file_path)
            if f.content == FileContent.POSITION_DELETES:
                pairs.append((self.mover.staging_path(f.file_path), target))
            else:
                pairs.append((f.file_path, target))
        return pairs


def rewrite_table_path(
    table: Any,
    source_prefix: str,
    target_prefix: str,
    *,
    start_version: str | None = None,
    end_version: str | None = None,
    staging_location: str | None = None,
) -> RewriteTablePathResult:
    """Stage a copy of ``table``'s metadata with every path under ``source_prefix`` moved
    under ``target_prefix``, and the list of files to copy (see the module docstring).

    Raises:
        ValidationError: an empty or equal prefix, a version the metadata log does not hold
            (or whose file is gone), a path not under ``source_prefix`` (naming it and where
            it was found). What was staged is removed.
    """
    source = _required(source_prefix, "Source prefix")
    target = _required(target_prefix, "Target prefix")
    if source == target:
        raise ValidationError(f"Source prefix cannot be the same as target prefix ({source})")
    io: FileIO = table.io
    end = (
        table.metadata_location if end_version is None else _version_file(table, end_version, "End")
    )
    start = None if start_version is None else _version_file(table, start_version, "Start")
    staging, fresh = _staging_folder(table, staging_location)
    end_metadata = (
        table.metadata if end == table.metadata_location else read_table_metadata(io, end)
    )
    start_metadata = None if start is None else read_table_metadata(io, start)
    mover = PathMover(io, source, target, staging, end_metadata)
    versions = _versions(io, end, end_metadata, start, mover)  # checks them before writing
    rewrite = _Rewrite(io, mover, start_metadata)
    file_list = staging + FILE_LIST
    try:
        rewrite.run(versions)
        mover.written.append(file_list)
        rewrite.plan.write(io, file_list)
    except BaseException:
        for path in mover.written:
            io.delete_quietly(path)
        if fresh:  # the folders the files were in (made here)
            with contextlib.suppress(Exception):  # cleaning up after the failure raised
                io.delete_prefix(staging)
        raise
    finally:
        rewrite.plan.close()
    return RewriteTablePathResult(
        latest_version=file_name(end),
        file_list_location=file_list,
        staging_location=staging,
        latest_metadata_location=mover.new_path(end),
    )
