"""The one walk over a table's manifests: every reader of manifest entries goes through here.

Three questions are asked of manifests, and each has one function:

* :func:`live_entries`: the live entries of a snapshot (data, deletes or both), pruned by a
  :class:`~icepark.planning.matching.FileMatcher`: manifests by their partition summaries,
  data entries by partition values and column metrics (data manifests are scanned for the
  filter's metrics before anything is decoded: :mod:`icepark.manifest.pruned`), delete
  entries by partition only (their metrics describe the delete file's own columns).
  Scan planning, overwrites and row-level changes read the files they touch this way.
* :func:`changes_since`: what the snapshots of a branch committed after another snapshot
  added or removed (Java's ``validationHistory``): the conflict checks of every operation,
  and incremental scans, read the history this way.
* :func:`scan_columns`: the same for manifests too big to read entry by entry (a table of
  hundreds of thousands of files): each manifest is decoded into arrays by compiled code
  (:mod:`icepark.manifest.entry_columns`), its entries judged all at once (partitions once
  per distinct partition, metrics by :mod:`icepark.planning.vector_metrics`), and only the
  indexes of the entries kept come back; :func:`use_columns` says when to take this path.
* :func:`read_entries`: the entries of given manifests, in their order (all entries, deleted
  ones included, unless ``live_only``), for the callers that rewrite or list manifests
  (snapshot producers, expiry, purge). :func:`read_entries_table` gives the same entries as
  one Arrow table, decoded column by column (:mod:`icepark.manifest.columnar`) without a
  Python object per entry: the metadata tables, which list every field of every file.

Manifests are read in parallel by a thread pool (``workers``, 8 by default: reads are IO and
fastavro's decoding releases little of the GIL, so more threads do not help on two cores),
and results come back in manifest order whatever the order reads finish in. Manifest lists
are read through :func:`manifests_of`, which keeps recently read lists (they never change
once written).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from icepark.errors import ValidationError
from icepark.io import FileIO, is_local_location
from icepark.io.threads import io_map
from icepark.lru import LruCache
from icepark.manifest import (
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest,
    read_manifest_list,
)
from icepark.manifest.pruned import FetchedManifest, fetch_manifest, read_manifest_pruned
from icepark.planning.matching import FileMatcher
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.snapshots import Operation, Snapshot
from icepark.spec.types import StructType

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from icepark.manifest.entry_columns import EntryColumns

__all__ = [
    "COLUMNS_MIN_ENTRIES",
    "entry_partition_matches",
    "partitions_match",
    "ChangedEntry",
    "DEFAULT_WORKERS",
    "changes_in",
    "changes_since",
    "live_entries",
    "live_manifests",
    "manifests_at_once",
    "manifests_of",
    "parallel_map",
    "read_entries",
    "ENTRIES_PER_PART",
    "iter_entries_tables",
    "read_entries_table",
    "remember_manifest_list",
    "scan_columns",
    "unique_manifests",
    "use_columns",
]

DEFAULT_WORKERS = 8

T = TypeVar("T")
R = TypeVar("R")


def parallel_map(
    fn: Callable[[T], R], items: Sequence[T], workers: int = DEFAULT_WORKERS
) -> Iterator[R]:
    """``map(fn, items)`` with up to ``workers`` items at a time on the process's shared I/O
    threads (:func:`icepark.io.threads.io_map`), results in the order of ``items``."""
    return io_map(fn, items, workers)


# -- manifest lists --------------------------------------------------------------------------


# Recently read manifest lists by path (a manifest list is never rewritten).
_LISTS: LruCache[str, tuple[ManifestFile, ...]] = LruCache(256)


def remember_manifest_list(path: str, manifests: Sequence[ManifestFile]) -> None:
    """Record a manifest list just written (``manifests`` as written, sequence numbers
    assigned), so that the next commit reads its parent's list from memory."""
    _LISTS.put(path, tuple(manifests))


def manifests_of(
    io: FileIO, snapshot: Snapshot | None, content: ManifestContent | None = None
) -> list[ManifestFile]:
    """The manifests of ``snapshot`` (of one content when given), in manifest-list order."""
    if snapshot is None or not snapshot.manifest_list:
        return []
    path = snapshot.manifest_list
    manifests = _LISTS.get_or_compute(path, lambda: tuple(read_manifest_list(io.new_input(path))))
    return [m for m in manifests if content is None or m.content == content]


# -- entries ---------------------------------------------------------------------------------


def _has_live_files(manifest: ManifestFile) -> bool:
    return manifest.has_added_files or manifest.has_existing_files


def _scans(manifest: ManifestFile, matcher: FileMatcher | None, added_only: bool) -> bool:
    """Is ``manifest`` read by the pruning scanner (:func:`read_manifest_pruned`)?"""
    prune = matcher is not None and not matcher.matches_everything
    return manifest.content == ManifestContent.DATA and (prune or added_only)


def _read(
    io: FileIO,
    manifest: ManifestFile,
    matcher: FileMatcher | None,
    live_only: bool,
    added_only: bool = False,
    fetched: FetchedManifest | None = None,
) -> list[ManifestEntry]:
    input_file = io.new_input(manifest.manifest_path)
    prune = matcher is not None and not matcher.matches_everything
    if _scans(manifest, matcher, added_only):
        # the scanner skips, without building them, the entries pruned or not wanted
        entries = read_manifest_pruned(
            input_file,
            manifest,
            matcher.metrics_field_ids if matcher is not None and prune else (),
            matcher.metrics_might_match if matcher is not None and prune else _anything,
            live_only=live_only,
            added_only=added_only,
            fetched=fetched,
        )
    else:
        entries = [
            e
            for e in read_manifest(input_file, manifest)
            if (e.status != ManifestEntryStatus.DELETED or not live_only)
            and (e.status == ManifestEntryStatus.ADDED or not added_only)
        ]
    if matcher is not None and prune:
        return [e for e in entries if entry_partition_matches(matcher, e)]
    return entries


def _anything(stats: object) -> bool:
    return True


def entry_partition_matches(matcher: FileMatcher, entry: ManifestEntry) -> bool:
    """May ``entry``'s data file hold rows ``matcher`` selects, by its partition values?"""
    f = entry.data_file
    return matcher.partition_might_match(f.spec_id or 0, tuple(f.partition))


def read_entries(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    matcher: FileMatcher | None = None,
    *,
    live_only: bool = True,
    added_only: bool = False,
    workers: int = DEFAULT_WORKERS,
) -> Iterator[tuple[ManifestFile, list[ManifestEntry]]]:
    """Each manifest with its entries (live ones only with ``live_only``, those with status
    ADDED only with ``added_only``; with ``matcher``, only those that may hold matching
    rows), read in parallel, in the order given.

    A manifest the pruning scanner reads is only fetched and decompressed on the pool, and
    scanned on the calling thread: scans hold the GIL, and several threads taking turns at
    it were slower than one thread scanning while the pool reads ahead."""

    def read(
        manifest: ManifestFile,
    ) -> tuple[ManifestFile, list[ManifestEntry] | FetchedManifest]:
        if _scans(manifest, matcher, added_only):
            return manifest, fetch_manifest(io.new_input(manifest.manifest_path), manifest)
        return manifest, _read(io, manifest, matcher, live_only, added_only)

    remote = any(not is_local_location(m.manifest_path) for m in manifests)
    # local reads take well under a millisecond: pool threads would only take turns at the
    # GIL with the scan (a first plan of 10,000 local files took ~10% longer with them)
    for manifest, found in parallel_map(read, manifests, workers if remote else 1):
        if isinstance(found, FetchedManifest):
            found = _read(io, manifest, matcher, live_only, added_only, found)
        yield manifest, found


def read_entries_table(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    data_file_type: pa.StructType,
    data_file_struct: StructType,
    specs: Mapping[int, PartitionSpec],
    *,
    live_only: bool = True,
    workers: int = DEFAULT_WORKERS,
) -> pa.Table:
    """The entries of ``manifests`` as one Arrow table (``status``, ``snapshot_id``, the
    sequence numbers and a ``data_file`` struct of ``data_file_type``, the Arrow form of
    ``data_file_struct``; see :func:`~icepark.manifest.columnar.read_entries_columnar`), in
    manifest order. The files are read in parallel, then decoded together (a huge table's
    a part at a time: :func:`iter_entries_tables`)."""
    import pyarrow as pa

    parts = list(
        iter_entries_tables(
            io,
            manifests,
            data_file_type,
            data_file_struct,
            specs,
            live_only=live_only,
            workers=workers,
        )
    )
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


ENTRIES_PER_PART = 10_000
"""About how many manifest entries :func:`iter_entries_tables` decodes at a time. Small
manifests are decoded together (a column's fixed cost is paid once for the group); a
manifest of this many entries alone, since joining two copies both into one part: the files
table of a million files (manifests of 10,000) peaked at 1,050 MB with parts of 25,000, 960 MB
with parts of 10,000, in the same time."""


def iter_entries_tables(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    data_file_type: pa.StructType,
    data_file_struct: StructType,
    specs: Mapping[int, PartitionSpec],
    *,
    live_only: bool = True,
    workers: int = DEFAULT_WORKERS,
) -> Iterator[pa.Table]:
    """:func:`read_entries_table` a part at a time: the manifests in groups of about
    :data:`ENTRIES_PER_PART` entries (by the manifest list's counts), each group's entries
    as one table, in manifest order; at least one table, empty for no manifests. A huge
    table's entries decode by the compiled decoder (the choice made once, for the whole
    read), their memory bounded by a group."""
    # imported here: the columnar decoder builds Arrow columns, which planning never needs
    from icepark.manifest.columnar import ManifestBytes, read_entries_columnar

    def fetch(manifest: ManifestFile) -> ManifestBytes:
        data = io.new_input(manifest.manifest_path).read_bytes()
        return ManifestBytes(manifest.manifest_path, data, manifest)

    sizes = [_entry_count(m) for m in manifests]
    compiled = None if None in sizes else sum(s or 0 for s in sizes) >= COLUMNS_MIN_ENTRIES
    groups: list[list[ManifestFile]] = [[]]
    held = 0
    for m, size in zip(manifests, sizes, strict=True):
        if groups[-1] and held + (size or 0) > ENTRIES_PER_PART:
            groups.append([])
            held = 0
        groups[-1].append(m)
        held += size or 0
    for group in groups:
        files = list(parallel_map(fetch, group, workers))
        yield read_entries_columnar(
            files, data_file_type, data_file_struct, specs, live_only=live_only, compiled=compiled
        )


def _entry_count(manifest: ManifestFile) -> int | None:
    counts = (
        manifest.added_files_count,
        manifest.existing_files_count,
        manifest.deleted_files_count,
    )
    return None if None in counts else sum(c or 0 for c in counts)


COLUMNS_MIN_ENTRIES = 5_000
"""Plans whose manifests hold at least this many entries read them as arrays
(:func:`scan_columns`); smaller ones entry by entry, which starts faster (the compiled
decoder's first use in a process costs about half a second, which entry-by-entry decoding
spends on some 5,000 entries: a full plan of 10,000 files took 1.0-1.3 s in a fresh process
that way and 0.8-1.0 s by arrays, then 0.9 s against 0.3 s once warm)."""

_COLUMNS_BUDGET = 256 * 1024 * 1024
"""About the most bytes of manifests (as stored) being decoded at once."""


def use_columns(manifests: Sequence[ManifestFile], min_entries: int | None = None) -> bool:
    """Should these manifests be read by :func:`scan_columns`? When they hold at least
    ``min_entries`` entries (by default :data:`COLUMNS_MIN_ENTRIES`, a plan's; less where
    each kept entry costs more than a plan's) and the compiled decoder can run here."""
    sizes = [_entry_count(m) for m in manifests]
    if None in sizes:
        return False  # an old manifest list without counts: no way to tell cheaply
    if sum(s or 0 for s in sizes) < (COLUMNS_MIN_ENTRIES if min_entries is None else min_entries):
        return False
    from icepark.avro.compiled import kernel_available

    return kernel_available()


ScannedColumns = tuple[ManifestFile, "EntryColumns", "np.ndarray"]
"""A manifest, its entries as arrays and the indexes of the entries kept, in file order."""
ScannedEntries = tuple[ManifestFile, list[ManifestEntry]]
"""A manifest the compiled path did not read, and its kept entries as objects."""


def scan_columns(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    matcher: FileMatcher | None = None,
    *,
    added_only: bool = False,
    judge: bool = True,
    live_only: bool = True,
    workers: int = DEFAULT_WORKERS,
) -> Iterator[ScannedColumns | ScannedEntries]:
    """The live entries (with ``added_only``: those with status ADDED) of each manifest that
    may hold rows ``matcher`` selects, in the order given, each manifest decoded into arrays
    and judged on the pool's threads (the decoder and most of numpy run without the GIL,
    beside the caller building tasks). A manifest the compiled path cannot read comes back
    as entry objects instead, read as :func:`read_entries` would. With ``judge=False`` the
    arrays hold the metrics ``matcher`` reads but every live entry is kept, for a caller
    that judges (and counts) partitions and metrics itself (:func:`partitions_match`,
    :meth:`FileMatcher.metrics_match_rows`). ``live_only=False`` keeps ``DELETED`` entries
    too."""
    import numpy as np

    from icepark.avro.blocks import UnsupportedAvroError
    from icepark.manifest.entry_columns import read_entry_columns

    prune = matcher is not None and not matcher.matches_everything
    metrics = matcher.metrics_field_ids if matcher is not None and prune else frozenset()

    def read(manifest: ManifestFile) -> ScannedColumns | ScannedEntries:
        data = io.new_input(manifest.manifest_path).read_bytes()
        try:
            columns = read_entry_columns(manifest.manifest_path, data, manifest, metrics_of=metrics)
        except UnsupportedAvroError:
            return manifest, _read(io, manifest, matcher if judge else None, live_only, added_only)
        keep = columns.live if live_only else np.ones(columns.count, dtype=bool)
        if added_only:
            keep = keep & (columns.status == int(ManifestEntryStatus.ADDED))
        if prune and judge and matcher is not None:
            keep = keep & partitions_match(matcher, columns)
        rows = np.flatnonzero(keep)
        if prune and judge and matcher is not None and len(rows):
            rows = rows[matcher.metrics_match_rows(columns, rows)]
        return manifest, columns, rows

    yield from parallel_map(read, manifests, manifests_at_once(manifests, workers))


def manifests_at_once(manifests: Sequence[ManifestFile], workers: int = DEFAULT_WORKERS) -> int:
    """How many manifests to decode at once (:func:`scan_columns`, rewrites of every
    manifest): as many as the cores for
    local files (decoding is CPU-bound and local reads are quick; one more held 15 MB more
    at the point query's peak on the 1M-file table, 255 against 240 MB, in no less time; at
    most ``workers``: a Spark task planning on one core decodes one at a time), else as many as
    ``workers`` and about :data:`_COLUMNS_BUDGET` of decoded manifests allow (a decoded
    manifest takes some ten times its stored size)."""
    if all(is_local_location(m.manifest_path) for m in manifests):
        return max(1, min(workers, os.cpu_count() or 2))
    biggest = max((m.manifest_length for m in manifests), default=1)
    return max(2, min(workers, _COLUMNS_BUDGET // max(biggest * 10, 1)))


def partitions_match(matcher: FileMatcher, columns: EntryColumns) -> np.ndarray:
    """Which entries of ``columns`` may hold rows ``matcher`` selects by their partition
    values (each distinct partition judged once), as a numpy array of booleans."""
    import numpy as np

    distinct, which = columns.partitions()
    spec_id = columns.spec_id
    judged = np.array([matcher.partition_might_match(spec_id, p) for p in distinct], dtype=bool)
    return judged[which] if len(which) else np.zeros(0, dtype=bool)


def live_entries(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    matcher: FileMatcher | None = None,
    content: ManifestContent | None = None,
    *,
    workers: int = DEFAULT_WORKERS,
) -> Iterator[tuple[ManifestFile, list[ManifestEntry]]]:
    """The live entries of ``snapshot``'s manifests (of ``content`` when given), manifest by
    manifest; with ``matcher``, only the manifests and entries that may hold rows matching
    its filter (data entries by partition and metrics, delete entries by partition)."""
    manifests = live_manifests(io, snapshot, matcher, content)
    yield from read_entries(io, manifests, matcher, live_only=True, workers=workers)


def live_manifests(
    io: FileIO,
    snapshot: Snapshot | None,
    matcher: FileMatcher | None = None,
    content: ManifestContent | None = None,
) -> list[ManifestFile]:
    """The manifests of ``snapshot`` (of ``content`` when given) that have live files and,
    with ``matcher``, may hold rows matching its filter by their partition summaries."""
    return [
        m
        for m in manifests_of(io, snapshot, content)
        if _has_live_files(m) and (matcher is None or matcher.manifest_might_match(m))
    ]


# -- history ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChangedEntry:
    """An entry a snapshot committed: ``ADDED`` or ``DELETED`` by ``snapshot``."""

    snapshot: Snapshot
    entry: ManifestEntry
    content: ManifestContent

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.snapshot_id


def _history(
    metadata: TableMetadata, head_id: int | None, since_id: int | None, where: str
) -> list[Snapshot]:
    """The snapshots after ``since_id`` up to ``head_id``, newest first."""
    found: list[Snapshot] = []
    for snapshot in metadata.ancestors_of(head_id):
        if snapshot.snapshot_id == since_id:
            return found
        found.append(snapshot)
    if since_id is not None:
        raise ValidationError(
            f"Cannot determine history between snapshot {since_id} and {head_id} in table "
            f"{metadata.location}: {since_id} is not an ancestor of {head_id}"
            + (f" ({where})" if where else "")
        )
    return found


def changes_since(
    io: FileIO,
    metadata: TableMetadata,
    head_id: int | None,
    since_id: int | None,
    *,
    content: ManifestContent | None = None,
    statuses: Collection[ManifestEntryStatus] = (
        ManifestEntryStatus.ADDED,
        ManifestEntryStatus.DELETED,
    ),
    operations: Collection[Operation] | None = None,
    matcher: FileMatcher | None = None,
    where: str = "",
    workers: int = DEFAULT_WORKERS,
) -> list[ChangedEntry]:
    """The entries that the snapshots after ``since_id`` (exclusive; None: from the first)
    up to ``head_id`` (inclusive) added or deleted, newest snapshot first.

    Only manifests a snapshot wrote are read (``added_snapshot_id``), and only entries that
    snapshot committed with one of ``statuses``. ``content`` limits to data or delete
    manifests, ``operations`` to snapshots of those operations, ``matcher`` to manifests and
    entries that may hold rows matching its filter. A ``since_id`` that is not an ancestor of
    ``head_id`` raises :class:`ValidationError` naming both (and ``where``).
    """
    return changes_in(
        io,
        _history(metadata, head_id, since_id, where),
        content=content,
        statuses=statuses,
        operations=operations,
        matcher=matcher,
        workers=workers,
    )


def changes_in(
    io: FileIO,
    snapshots: Sequence[Snapshot],
    *,
    content: ManifestContent | None = None,
    statuses: Collection[ManifestEntryStatus] = (
        ManifestEntryStatus.ADDED,
        ManifestEntryStatus.DELETED,
    ),
    operations: Collection[Operation] | None = None,
    matcher: FileMatcher | None = None,
    workers: int = DEFAULT_WORKERS,
) -> list[ChangedEntry]:
    """The entries each of ``snapshots`` committed (as :func:`changes_since`, for given
    snapshots: e.g. the files one snapshot added, whatever became of its parent)."""
    wanted = frozenset(statuses)
    pairs: list[tuple[Snapshot, ManifestFile]] = []
    for snapshot in snapshots:
        if operations is not None and snapshot.operation not in operations:
            continue
        for m in manifests_of(io, snapshot, content):
            if m.added_snapshot_id != snapshot.snapshot_id:
                continue
            if matcher is not None and not matcher.manifest_might_match(m):
                continue
            if not _may_hold(m, wanted):
                continue
            pairs.append((snapshot, m))
    live_only = ManifestEntryStatus.DELETED not in wanted

    def read(pair: tuple[Snapshot, ManifestFile]) -> list[ChangedEntry]:
        snapshot, manifest = pair
        return [
            ChangedEntry(snapshot, e, manifest.content)
            for e in _read(io, manifest, matcher, live_only)
            if e.snapshot_id == snapshot.snapshot_id and e.status in wanted
        ]

    return [c for found in parallel_map(read, pairs, workers) for c in found]


def _may_hold(manifest: ManifestFile, statuses: frozenset[ManifestEntryStatus]) -> bool:
    has = {
        ManifestEntryStatus.ADDED: manifest.has_added_files,
        ManifestEntryStatus.DELETED: manifest.has_deleted_files,
        ManifestEntryStatus.EXISTING: manifest.has_existing_files,
    }
    return any(has[s] for s in statuses)


def unique_manifests(io: FileIO, snapshots: Iterable[Snapshot]) -> list[ManifestFile]:
    """The manifests of all ``snapshots``, each once (first seen first)."""
    seen: set[str] = set()
    out: list[ManifestFile] = []
    for snapshot in snapshots:
        for m in manifests_of(io, snapshot):
            if m.manifest_path not in seen:
                seen.add(m.manifest_path)
                out.append(m)
    return out
