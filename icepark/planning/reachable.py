"""The files a table's metadata references: the one answer to "what may not be deleted".

:func:`referenced_files` walks snapshots (all of a table's, or a given few) down to their
files, through :mod:`icepark.planning.walk` (manifest lists and manifests read in
parallel), and returns them by kind (:class:`ReferencedFiles`):

* manifest lists, manifests (data and delete), and the data and delete files that their
  live entries track (as Java's ``ManifestFiles.readPaths``: a file only a ``DELETED`` entry
  names is no longer part of that snapshot);
* statistics and partition-statistics files registered for those snapshots;
* with ``metadata_location``, the table's metadata files: that one, the metadata log, the
  ``version-hint.text`` of file-system tables, and every statistics file.

Who asks:

* expiry (:mod:`icepark.table.maintenance.expire_snapshots`): the files of expired snapshots
  minus those of retained ones (``skip_manifests`` avoids reading manifests a retained snapshot
  still uses, as Java's ``ReachableFileCleanup``);
* orphan removal (:mod:`icepark.table.maintenance.remove_orphan_files`): everything the table
  references, metadata files included (Java's ``DeleteOrphanFilesSparkAction``);
* a purging drop (:mod:`icepark.catalog.purge`): every file, ``DELETED`` entries included,
  skipping what is already gone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from icepark.errors import NoSuchFileError, UnsupportedOperationError
from icepark.io import FileIO
from icepark.manifest import FileContent, ManifestFile
from icepark.planning.live_files import live_files
from icepark.planning.walk import (
    DEFAULT_WORKERS,
    manifests_of,
    parallel_map,
)
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import PartitionStatisticsFile, Snapshot, StatisticsFile

__all__ = [
    "ReferencedFiles",
    "VERSION_HINT",
    "content_files",
    "referenced_files",
    "referenced_locations",
    "version_hint_location",
]

VERSION_HINT = "version-hint.text"


def version_hint_location(metadata: TableMetadata) -> str:
    """Where a file-system (Hadoop) table keeps its version hint (as Java's
    ``ReachableFileUtil.versionHintLocation``: under ``<location>/metadata``)."""
    return f"{metadata.location.rstrip('/')}/metadata/{VERSION_HINT}"


@dataclass
class ReferencedFiles:
    """Paths by kind. ``content_files`` maps each data or delete file to its content and
    size; ``manifests`` each manifest path to its entry in a manifest list."""

    content_files: dict[str, tuple[FileContent, int]] = field(default_factory=dict)
    manifests: dict[str, ManifestFile] = field(default_factory=dict)
    manifest_lists: set[str] = field(default_factory=set)
    statistics: dict[str, int] = field(default_factory=dict)
    metadata_files: set[str] = field(default_factory=set)

    def paths(self) -> set[str]:
        """Every path, whatever its kind."""
        return {
            *self.content_files,
            *self.manifests,
            *self.manifest_lists,
            *self.statistics,
            *self.metadata_files,
        }

    def __len__(self) -> int:
        return len(self.paths())


def _manifests(
    io: FileIO, snapshots: Sequence[Snapshot], missing_ok: bool, workers: int
) -> list[ManifestFile]:
    def read(snapshot: Snapshot) -> list[ManifestFile]:
        try:
            return manifests_of(io, snapshot)
        except NoSuchFileError:
            if missing_ok:
                return []
            raise

    seen: dict[str, ManifestFile] = {}
    for found in parallel_map(read, list(snapshots), workers):
        for m in found:
            seen.setdefault(m.manifest_path, m)
    return list(seen.values())


def content_files(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    *,
    live_only: bool = True,
    workers: int = DEFAULT_WORKERS,
) -> Iterator[tuple[str, FileContent, int]]:
    """Path, content and size of each data or delete file ``manifests`` track (live entries
    only with ``live_only``), in manifest order, a manifest at a time
    (:func:`~icepark.planning.live_files.live_files`: a huge table's without an object per
    entry)."""
    kinds = {int(c): c for c in FileContent}
    for files in live_files(io, manifests, live_only=live_only, workers=workers):
        contents = files.content.tolist()
        sizes = files.file_size_in_bytes.tolist()
        for path, content, size in zip(files.listed("file_path"), contents, sizes, strict=True):
            yield path, kinds[content], size


def _check_walkable(
    snapshots: Sequence[Snapshot], metadata: TableMetadata, missing_ok: bool
) -> None:
    for snapshot in snapshots:
        if not snapshot.manifest_list and snapshot.manifests and not missing_ok:
            # the walk does not read manifests listed in the metadata itself: refusing is
            # the only safe answer for a question whose purpose is deleting files
            raise UnsupportedOperationError(
                f"Snapshot {snapshot.snapshot_id} of table {metadata.location} lists its manifests "
                "in the table metadata (a v1 table from before manifest lists): not supported"
            )


def _statistics(
    metadata: TableMetadata, ids: set[int] | None, metadata_location: str | None
) -> dict[str, int]:
    """The statistics and partition-statistics files of snapshots ``ids`` (None: all), or
    every one when ``metadata_location`` is given, with their sizes."""
    stats: list[StatisticsFile | PartitionStatisticsFile] = [
        *metadata.statistics,
        *metadata.partition_statistics,
    ]
    return {
        s.statistics_path: s.file_size_in_bytes
        for s in stats
        if ids is None or s.snapshot_id in ids or metadata_location is not None
    }


def _metadata_files(metadata: TableMetadata, metadata_location: str) -> set[str]:
    return {
        metadata_location,
        *(e.metadata_file for e in metadata.metadata_log),
        version_hint_location(metadata),
    }


def referenced_files(
    io: FileIO,
    metadata: TableMetadata,
    snapshots: Iterable[Snapshot] | None = None,
    *,
    skip_manifests: Collection[str] = frozenset(),
    metadata_location: str | None = None,
    read_content: bool = True,
    live_only: bool = True,
    missing_ok: bool = False,
    workers: int = DEFAULT_WORKERS,
) -> ReferencedFiles:
    """The files ``snapshots`` (all of the table's by default) reference.

    ``skip_manifests``: manifests neither listed nor read (known to be referenced
    elsewhere). ``metadata_location``: also the table's metadata files (see the module
    docstring). ``read_content=False`` stops at manifests; ``live_only=False`` also counts
    files only ``DELETED`` entries name; ``missing_ok`` skips manifest lists and manifests
    that no longer exist instead of failing. :func:`referenced_locations` gives the same
    locations one at a time, for a caller that need not hold them all.
    """
    chosen = list(metadata.snapshots if snapshots is None else snapshots)
    _check_walkable(chosen, metadata, missing_ok)
    out = ReferencedFiles()
    out.manifest_lists = {s.manifest_list for s in chosen if s.manifest_list}
    for m in _manifests(io, chosen, missing_ok, workers):
        if m.manifest_path not in skip_manifests:
            out.manifests[m.manifest_path] = m
    if read_content:
        manifests = list(out.manifests.values())
        if missing_ok:
            present = parallel_map(io.exists, [m.manifest_path for m in manifests], workers)
            manifests = [m for m, ok in zip(manifests, present) if ok]
        found = content_files(io, manifests, live_only=live_only, workers=workers)
        out.content_files = {path: (content, size) for path, content, size in found}
    ids = None if snapshots is None else {s.snapshot_id for s in chosen}
    out.statistics = _statistics(metadata, ids, metadata_location)
    if metadata_location is not None:
        out.metadata_files = _metadata_files(metadata, metadata_location)
    return out


def referenced_locations(
    io: FileIO,
    metadata: TableMetadata,
    *,
    metadata_location: str | None = None,
    workers: int = DEFAULT_WORKERS,
) -> Iterator[str]:
    """Every location :func:`referenced_files` gives for all of the table's snapshots (with
    ``metadata_location``, its metadata files too), one at a time, some more than once: the
    data and delete files stream by a manifest at a time, so that a table of a million files
    need not have them all in memory at once (orphan removal matches them against its
    listing as they come)."""
    chosen = list(metadata.snapshots)
    _check_walkable(chosen, metadata, False)
    yield from (s.manifest_list for s in chosen if s.manifest_list)
    manifests = _manifests(io, chosen, False, workers)
    yield from (m.manifest_path for m in manifests)
    for path, _, _ in content_files(io, manifests, workers=workers):
        yield path
    yield from _statistics(metadata, None, metadata_location)
    if metadata_location is not None:
        yield from _metadata_files(metadata, metadata_location)
