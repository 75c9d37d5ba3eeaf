"""Snapshot producers: turn added and removed files into manifests, a manifest list and a
snapshot, on top of a given base metadata.

A producer is re-run on fresh metadata when a commit conflicts ("retry actions, not
updates"), and it keeps what an earlier attempt wrote that is still right, as Java's
``SnapshotProducer`` does, so that a retry costs a manifest list and a metadata file:

* the snapshot id is chosen once (again only if a concurrent commit took it);
* the manifests of the added data and delete files are written once;
* a parent manifest rewritten without some entries is kept by the manifest and the entries it
  removes, a merged manifest by the manifests it merges: found again, they are reused.

The steps of one attempt (:meth:`SnapshotProducer.produce`): choose the parent and snapshot
id, filter the parent's manifests (:meth:`~SnapshotProducer._filter_manifests`), write the
added files' manifests, merge (merge append), write the manifest list, build the snapshot.
:meth:`SnapshotProducer.cleanup` deletes what the attempts wrote that the committed snapshot
does not use (everything, when nothing was committed).
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.manifest import (
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    write_manifest,
    write_manifest_list,
)
from icepark.planning.walk import manifests_of, read_entries, remember_manifest_list
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, Operation, Snapshot, SnapshotRefType
from icepark.spec.updates import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
)
from icepark.table.summary import SummaryBuilder

__all__ = [
    "ProducedSnapshot",
    "SnapshotProducer",
    "EntryFilter",
    "ManifestFilter",
    "metadata_folder",
    "new_snapshot_id",
]

EntryFilter = Callable[[ManifestEntry], bool]
ManifestFilter = Callable[[ManifestFile], bool]


def new_snapshot_id() -> int:
    """A random positive 63-bit snapshot id."""
    return secrets.randbits(63) or 1


def metadata_folder(metadata: TableMetadata) -> str:
    return P.metadata_folder(metadata.location, metadata.properties)


def _codec(metadata: TableMetadata) -> str:
    return P.avro_codec(metadata.properties, manifest=True)


@dataclass
class ProducedSnapshot:
    """One attempt's result: the updates and requirements to commit, the files it wrote.

    ``written`` are the files only this attempt uses (its manifest list): delete them when the
    attempt is abandoned. Manifests the producer may reuse are deleted by its ``cleanup``.
    """

    snapshot: Snapshot
    updates: list[TableUpdate]
    requirements: list[TableRequirement]
    written: list[str] = field(default_factory=list)
    added: list[DataFile] = field(default_factory=list)
    removed: list[DataFile] = field(default_factory=list)
    manifests: list[ManifestFile] = field(default_factory=list)


@dataclass
class _Filtered:
    """The parent's manifests after removing entries: kept as they are, or rewritten."""

    kept: list[ManifestFile]
    rewritten: list[ManifestFile]
    removed: list[DataFile]


@dataclass
class SnapshotProducer:
    """Produces one snapshot on ``branch`` from added files and a filter of removed entries.

    ``remove_entry`` decides, for each live entry of the parent snapshot's data manifests,
    whether the file is removed; ``manifest_filter`` skips manifests that cannot hold such
    files. ``merge`` enables manifest merging (merge append) per the table's properties.
    Keep one producer for all the attempts of a commit (see the module docstring).
    """

    io: FileIO
    operation: Operation
    added_files: Sequence[DataFile] = ()
    remove_entry: EntryFilter | None = None
    manifest_filter: ManifestFilter | None = None
    branch: str = MAIN_BRANCH
    merge: bool = False
    snapshot_properties: dict[str, str] = field(default_factory=dict)
    commit_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    # Row-level deletes: delete files to add (written into DELETES manifests) and a filter of
    # the live entries of the parent's delete manifests to remove (e.g. a replaced DV).
    added_delete_files: Sequence[DataFile] = ()
    remove_delete_entry: EntryFilter | None = None
    # Data sequence numbers of added files by path (a rewrite keeps the sequence number it
    # started from, so that newer deletes still apply); the others inherit the snapshot's.
    added_sequence_numbers: Mapping[str, int] = field(default_factory=dict)
    _attempt: int = 0
    _manifest_count: int = 0
    _snapshot_id: int | None = None
    _added_manifests: list[ManifestFile] | None = None
    _rewritten: dict[tuple[str, frozenset[tuple[str, int | None]]], ManifestFile] = field(
        default_factory=dict
    )
    _merged: dict[tuple[str, ...], ManifestFile] = field(default_factory=dict)
    _entries: dict[str, list[ManifestEntry]] = field(default_factory=dict)
    _reusable: list[str] = field(default_factory=list)  # manifests kept across attempts

    def update_removals(
        self,
        remove_entry: EntryFilter | None,
        manifest_filter: ManifestFilter | None = None,
        remove_delete_entry: EntryFilter | None = None,
    ) -> SnapshotProducer:
        """Change what is removed, for an attempt on fresher metadata (rewritten manifests
        are reused only where they remove exactly the same entries)."""
        self.remove_entry = remove_entry
        self.manifest_filter = manifest_filter
        self.remove_delete_entry = remove_delete_entry
        return self

    def update_added(self, added_files: Sequence[DataFile]) -> SnapshotProducer:
        """Change the added data files (their manifests are written again)."""
        if list(added_files) != list(self.added_files):
            self.added_files = tuple(added_files)
            self._added_manifests = None
        return self

    # -- one attempt ---------------------------------------------------------------------------

    def produce(self, base: TableMetadata) -> ProducedSnapshot:
        """Write this attempt's manifests and manifest list against ``base``."""
        self._attempt += 1
        written: list[str] = []
        try:
            return self._produce(base, written)
        except BaseException:
            for path in written:
                self.io.delete_quietly(path)
            raise

    def _produce(self, base: TableMetadata, written: list[str]) -> ProducedSnapshot:
        parent = self._parent(base)
        snapshot_id = self._choose_snapshot_id(base)
        filtered = self._filter_manifests(base, parent, snapshot_id)
        added = self._write_added_manifests(base, snapshot_id)
        # as Java: a manifest left with no live file is dropped, unless this commit wrote it
        # (its deleted entries record this snapshot's removals)
        manifests = [
            m
            for m in (*added, *filtered.rewritten, *filtered.kept)
            if m.has_added_files or m.has_existing_files or m.added_snapshot_id == snapshot_id
        ]
        manifests = self._transform_manifests(base, manifests, snapshot_id)
        list_path = (
            f"{metadata_folder(base)}/snap-{snapshot_id}-{self._attempt}-{self.commit_uuid}.avro"
        )
        written.append(list_path)
        snapshot = self._write_snapshot(base, parent, snapshot_id, manifests, filtered, list_path)
        updates: list[TableUpdate] = [
            AddSnapshotUpdate(snapshot),
            _branch_update(base, self.branch, snapshot_id),
        ]
        requirements: list[TableRequirement] = [
            AssertTableUUID(base.table_uuid),
            AssertRefSnapshotId(self.branch, parent.snapshot_id if parent else None),
        ]
        return ProducedSnapshot(
            snapshot,
            updates,
            requirements,
            written,
            list(self.added_files),
            filtered.removed,
            manifests,
        )

    def _parent(self, base: TableMetadata) -> Snapshot | None:
        ref = base.ref(self.branch)
        if ref is not None and ref.type != SnapshotRefType.BRANCH:
            raise ValidationError(
                f"{self.branch} is a tag, not a branch: cannot commit to it in table "
                f"{base.location}"
            )
        return base.branch_head(self.branch)

    def _choose_snapshot_id(self, base: TableMetadata) -> int:
        """One id for every attempt, unless a concurrent commit took it: then a new one,
        and nothing written with the old one is reused."""
        if self._snapshot_id is not None and base.snapshot_by_id(self._snapshot_id) is None:
            return self._snapshot_id
        if self._snapshot_id is not None:
            self._forget_reusable()
        snapshot_id = new_snapshot_id()
        while base.snapshot_by_id(snapshot_id) is not None:
            snapshot_id = new_snapshot_id()
        self._snapshot_id = snapshot_id
        return snapshot_id

    def _manifest_path(self, base: TableMetadata) -> str:
        self._manifest_count += 1
        return f"{metadata_folder(base)}/{self.commit_uuid}-m{self._manifest_count}.avro"

    def _new_manifest(
        self,
        base: TableMetadata,
        spec_id: int,
        snapshot_id: int,
        content: ManifestContent,
        entries: Callable[[ManifestWriter], None],
    ) -> ManifestFile:
        """Write one manifest (``entries(writer)`` fills it); it may be reused later."""
        spec = base.spec_by_id(spec_id)
        if spec is None:
            raise ValidationError(f"Unknown partition spec id {spec_id} in table {base.location}")
        path = self._manifest_path(base)
        self._reusable.append(path)
        with write_manifest(
            self.io.new_output(path),
            spec,
            base.schema(),
            format_version=base.format_version,
            snapshot_id=snapshot_id,
            content=content,
            codec=_codec(base),
        ) as writer:
            entries(writer)
        return writer.to_manifest_file()

    # -- steps ---------------------------------------------------------------------------------

    def _live_entries(self, manifests: list[ManifestFile]) -> dict[str, list[ManifestEntry]]:
        """The live entries of ``manifests``, read in parallel once per producer."""
        missing = [m for m in manifests if m.manifest_path not in self._entries]
        for m, entries in read_entries(self.io, missing):
            self._entries[m.manifest_path] = entries
        return {m.manifest_path: self._entries[m.manifest_path] for m in manifests}

    def _filter_manifests(
        self, base: TableMetadata, parent: Snapshot | None, snapshot_id: int
    ) -> _Filtered:
        """Keep the parent's manifests, rewriting those that lose entries to the filters."""
        out = _Filtered([], [], [])
        candidates: list[tuple[ManifestFile, EntryFilter]] = []
        for manifest in manifests_of(self.io, parent):
            is_data = manifest.content == ManifestContent.DATA
            remove = self.remove_entry if is_data else self.remove_delete_entry
            prune = self.manifest_filter if is_data else None
            if (
                remove is None
                or (prune is not None and not prune(manifest))
                or not (manifest.has_added_files or manifest.has_existing_files)
            ):
                out.kept.append(manifest)
            else:
                candidates.append((manifest, remove))
        entries = self._live_entries([m for m, _ in candidates])
        for manifest, remove in candidates:
            live = entries[manifest.manifest_path]
            doomed = [e for e in live if remove(e)]
            if not doomed:
                out.kept.append(manifest)
                continue
            out.removed.extend(e.data_file for e in doomed)
            key = (
                manifest.manifest_path,
                frozenset((e.data_file.file_path, e.data_file.content_offset) for e in doomed),
            )
            if key not in self._rewritten:
                doomed_ids = {id(e) for e in doomed}

                def fill(
                    writer: ManifestWriter,
                    live: list[ManifestEntry] = live,
                    doomed_ids: set[int] = doomed_ids,
                ) -> None:
                    for e in live:
                        if id(e) in doomed_ids:
                            writer.delete(e)
                        else:
                            writer.existing(e)

                self._rewritten[key] = self._new_manifest(
                    base, manifest.partition_spec_id, snapshot_id, manifest.content, fill
                )
            out.rewritten.append(self._rewritten[key])
        return out

    def _transform_manifests(
        self, base: TableMetadata, manifests: list[ManifestFile], snapshot_id: int
    ) -> list[ManifestFile]:
        """The snapshot's final manifests: merged when this is a merge append (a subclass
        may regroup them otherwise, e.g. a manifest rewrite)."""
        if self.merge and P.MANIFEST_MERGE_ENABLED.get(base.properties):
            return self._merge(base, manifests, snapshot_id)
        return manifests

    def _write_added_manifests(self, base: TableMetadata, snapshot_id: int) -> list[ManifestFile]:
        """One manifest per spec and content for the added files; written once."""
        if self._added_manifests is not None:
            return self._added_manifests
        by_spec: dict[tuple[int, ManifestContent], list[DataFile]] = {}
        for f in self.added_files:
            by_spec.setdefault((f.spec_id or 0, ManifestContent.DATA), []).append(f)
        for f in self.added_delete_files:
            by_spec.setdefault((f.spec_id or 0, ManifestContent.DELETES), []).append(f)
        manifests = []
        for (spec_id, content), files in sorted(by_spec.items()):
            if base.spec_by_id(spec_id) is None:
                raise ValidationError(
                    f"Data file {files[0].file_path} has unknown spec id {spec_id} in table "
                    f"{base.location}"
                )

            def fill(writer: ManifestWriter, files: list[DataFile] = files) -> None:
                for f in files:
                    writer.add(f, self.added_sequence_numbers.get(f.file_path))

            manifests.append(self._new_manifest(base, spec_id, snapshot_id, content, fill))
        self._added_manifests = manifests
        return manifests

    def _write_snapshot(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        snapshot_id: int,
        manifests: list[ManifestFile],
        filtered: _Filtered,
        list_path: str,
    ) -> Snapshot:
        version = base.format_version
        sequence_number = base.last_sequence_number + 1 if version >= 2 else 0
        listed = write_manifest_list(
            self.io.new_output(list_path),
            manifests,
            format_version=version,
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            first_row_id=base.next_row_id if version >= 3 else None,
            codec=_codec(base),
        )
        remember_manifest_list(list_path, listed.manifests)
        summary = SummaryBuilder()
        summary.removed_files(filtered.removed)
        summary.added_files(self.added_files)
        summary.added_files(self.added_delete_files)
        snapshot = Snapshot(
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            timestamp_ms=max(int(time.time() * 1000), base.last_updated_ms),
            manifest_list=list_path,
            summary=summary.build(
                self.operation, parent.summary if parent else None, self.snapshot_properties
            ),
            schema_id=base.schema().schema_id,
            first_row_id=listed.first_row_id if version >= 3 else None,
            added_rows=listed.added_rows if version >= 3 else None,
        )
        return snapshot

    # -- merge append --------------------------------------------------------------------------

    def _merge(
        self, base: TableMetadata, manifests: list[ManifestFile], snapshot_id: int
    ) -> list[ManifestFile]:
        """Bin-pack data manifests of each spec into manifests of the target size, once a spec
        has at least ``commit.manifest.min-count-to-merge`` of them (as Java's merge append)."""
        min_count = P.MANIFEST_MIN_MERGE_COUNT.get(base.properties)
        target = P.MANIFEST_TARGET_SIZE_BYTES.get(base.properties)
        result: list[ManifestFile] = []
        groups: dict[int, list[ManifestFile]] = {}
        for m in manifests:
            if m.content != ManifestContent.DATA:
                result.append(m)
            else:
                groups.setdefault(m.partition_spec_id, []).append(m)
        for spec_id, group in groups.items():
            if len(group) < min_count:
                result.extend(group)
                continue
            for bin_ in _pack(group, target):
                if len(bin_) == 1:
                    result.append(bin_[0])
                else:
                    result.append(self._merge_bin(base, spec_id, bin_, snapshot_id))
        return result

    def _merge_bin(
        self, base: TableMetadata, spec_id: int, bin_: list[ManifestFile], snapshot_id: int
    ) -> ManifestFile:
        key = tuple(m.manifest_path for m in bin_)
        if key in self._merged:
            return self._merged[key]
        contents = dict(
            (m.manifest_path, entries)
            for m, entries in read_entries(self.io, bin_, live_only=False)
        )

        def fill(writer: ManifestWriter) -> None:
            for m in bin_:
                for e in contents[m.manifest_path]:
                    if e.status == ManifestEntryStatus.DELETED:
                        if e.snapshot_id == snapshot_id:
                            writer.write_entry(e)
                    elif e.status == ManifestEntryStatus.ADDED and e.snapshot_id == snapshot_id:
                        writer.write_entry(e)
                    else:
                        writer.existing(e)

        merged = self._new_manifest(base, spec_id, snapshot_id, ManifestContent.DATA, fill)
        self._merged[key] = merged
        return merged

    # -- after the commit ----------------------------------------------------------------------

    def _forget_reusable(self) -> None:
        for path in self._reusable:
            self.io.delete_quietly(path)
        self._reusable.clear()
        self._added_manifests = None
        self._rewritten.clear()
        self._merged.clear()

    def cleanup(self, committed: ProducedSnapshot | None) -> None:
        """Delete the manifests the attempts wrote that ``committed`` (the attempt that was
        committed; None when none was) does not reference. Never call it after an unknown
        commit outcome."""
        keep = set() if committed is None else {m.manifest_path for m in committed.manifests}
        for path in self._reusable:
            if path not in keep:
                self.io.delete_quietly(path)
        self._reusable = [p for p in self._reusable if p in keep]


def _branch_update(base: TableMetadata, branch: str, snapshot_id: int) -> SetSnapshotRefUpdate:
    """Move ``branch`` to the new snapshot, keeping its retention settings (as Java's
    ``setBranchSnapshot``): an append must not reset a branch's ``min-snapshots-to-keep``."""
    ref = base.ref(branch)
    if ref is None:
        return SetSnapshotRefUpdate(branch, snapshot_id, SnapshotRefType.BRANCH)
    return SetSnapshotRefUpdate(
        branch,
        snapshot_id,
        SnapshotRefType.BRANCH,
        ref.min_snapshots_to_keep,
        ref.max_snapshot_age_ms,
        ref.max_ref_age_ms,
    )


def _pack(manifests: list[ManifestFile], target: int) -> Iterable[list[ManifestFile]]:
    bin_: list[ManifestFile] = []
    size = 0
    for m in manifests:
        if bin_ and size + m.manifest_length > target:
            yield bin_
            bin_, size = [], 0
        bin_.append(m)
        size += m.manifest_length
    if bin_:
        yield bin_
