"""Snapshot producers: turn added and removed files into manifests, a manifest list and a
snapshot, on top of a given base metadata.

A producer is re-run on fresh metadata when a commit conflicts ("retry actions, not
updates"): data files are written once, manifests and manifest lists once per attempt.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from icepark.io import FileIO
from icepark.manifest import (
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
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
    """One attempt's result: the updates and requirements to commit, the files it wrote."""

    snapshot: Snapshot
    updates: list[TableUpdate]
    requirements: list[TableRequirement]
    written: list[str] = field(default_factory=list)
    added: list[DataFile] = field(default_factory=list)
    removed: list[DataFile] = field(default_factory=list)


@dataclass
class SnapshotProducer:
    """Produces one snapshot on ``branch`` from added files and a filter of removed entries.

    ``remove_entry`` decides, for each live entry of the parent snapshot's data manifests,
    whether the file is removed; ``manifest_filter`` skips manifests that cannot hold such
    files. ``merge`` enables manifest merging (merge append) per the table's properties.
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
    _attempt: int = 0
    _manifest_count: int = 0

    def _manifest_path(self, base: TableMetadata) -> str:
        self._manifest_count += 1
        return f"{metadata_folder(base)}/{self.commit_uuid}-m{self._manifest_count}.avro"

    def produce(self, base: TableMetadata) -> ProducedSnapshot:
        """Write this attempt's manifests and manifest list against ``base``."""
        self._attempt += 1
        written: list[str] = []
        try:
            return self._produce(base, written)
        except BaseException:
            for path in written:
                _delete_quietly(self.io, path)
            raise

    def _produce(self, base: TableMetadata, written: list[str]) -> ProducedSnapshot:
        version = base.format_version
        snapshot_id = new_snapshot_id()
        while base.snapshot_by_id(snapshot_id) is not None:
            snapshot_id = new_snapshot_id()
        sequence_number = base.last_sequence_number + 1 if version >= 2 else 0
        parent = base.snapshot_by_name(self.branch)
        if parent is not None and base.ref(self.branch) is not None:
            ref = base.ref(self.branch)
            if ref is not None and ref.type != SnapshotRefType.BRANCH:
                from icepark.errors import ValidationError

                raise ValidationError(f"{self.branch} is a tag, not a branch: cannot commit to it")
        summary = SummaryBuilder()
        schema = base.schema()
        codec = _codec(base)

        kept: list[ManifestFile] = []
        rewritten: list[ManifestFile] = []
        removed: list[DataFile] = []
        previous = (
            read_manifest_list(self.io.new_input(parent.manifest_list))
            if parent is not None and parent.manifest_list
            else []
        )
        for manifest in previous:
            is_data = manifest.content == ManifestContent.DATA
            remove = self.remove_entry if is_data else self.remove_delete_entry
            prune = self.manifest_filter if is_data else None
            if (
                remove is None
                or (prune is not None and not prune(manifest))
                or not _has_live_files(manifest)
            ):
                kept.append(manifest)
                continue
            entries = read_manifest(self.io.new_input(manifest.manifest_path), manifest)
            live = [e for e in entries if e.status != ManifestEntryStatus.DELETED]
            doomed = [e for e in live if remove(e)]
            if not doomed:
                kept.append(manifest)
                continue
            spec = base.spec_by_id(manifest.partition_spec_id)
            assert spec is not None, f"unknown spec {manifest.partition_spec_id}"
            doomed_ids = {id(e) for e in doomed}
            path = self._manifest_path(base)
            written.append(path)
            with write_manifest(
                self.io.new_output(path),
                spec,
                schema,
                format_version=version,
                snapshot_id=snapshot_id,
                content=manifest.content,
                codec=codec,
            ) as writer:
                for e in live:
                    if id(e) in doomed_ids:
                        writer.delete(e)
                        removed.append(e.data_file)
                    else:
                        writer.existing(e)
            rewritten.append(writer.to_manifest_file())
        summary.removed_files(removed)

        new_manifests: list[ManifestFile] = []
        by_spec: dict[tuple[int, ManifestContent], list[DataFile]] = {}
        for f in self.added_files:
            by_spec.setdefault((f.spec_id or 0, ManifestContent.DATA), []).append(f)
        for f in self.added_delete_files:
            by_spec.setdefault((f.spec_id or 0, ManifestContent.DELETES), []).append(f)
        for (spec_id, content), files in sorted(by_spec.items()):
            spec = base.spec_by_id(spec_id)
            if spec is None:
                from icepark.errors import ValidationError

                raise ValidationError(
                    f"Data file {files[0].file_path} has unknown spec id {spec_id}"
                )
            path = self._manifest_path(base)
            written.append(path)
            with write_manifest(
                self.io.new_output(path),
                spec,
                schema,
                format_version=version,
                snapshot_id=snapshot_id,
                content=content,
                codec=codec,
            ) as writer:
                for f in files:
                    writer.add(f)
            new_manifests.append(writer.to_manifest_file())
        summary.added_files(self.added_files)
        summary.added_files(self.added_delete_files)

        manifests = [*new_manifests, *rewritten, *kept]
        if self.merge and P.MANIFEST_MERGE_ENABLED.get(base.properties):
            manifests = self._merge(base, manifests, snapshot_id, written)

        list_path = (
            f"{metadata_folder(base)}/snap-{snapshot_id}-{self._attempt}-{self.commit_uuid}.avro"
        )
        written.append(list_path)
        listed = write_manifest_list(
            self.io.new_output(list_path),
            manifests,
            format_version=version,
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            first_row_id=base.next_row_id if version >= 3 else None,
            codec=codec,
        )
        snapshot = Snapshot(
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            timestamp_ms=max(int(time.time() * 1000), base.last_updated_ms),
            manifest_list=list_path,
            summary=summary.build(
                self.operation, parent.summary if parent else None, self.snapshot_properties
            ),
            schema_id=schema.schema_id,
            first_row_id=listed.first_row_id if version >= 3 else None,
            added_rows=listed.added_rows if version >= 3 else None,
        )
        updates: list[TableUpdate] = [
            AddSnapshotUpdate(snapshot),
            SetSnapshotRefUpdate(self.branch, snapshot_id, SnapshotRefType.BRANCH),
        ]
        requirements: list[TableRequirement] = [
            AssertTableUUID(base.table_uuid),
            AssertRefSnapshotId(self.branch, parent.snapshot_id if parent else None),
        ]
        return ProducedSnapshot(
            snapshot, updates, requirements, written, list(self.added_files), removed
        )

    # -- merge append ----------------------------------------------------------------------

    def _merge(
        self,
        base: TableMetadata,
        manifests: list[ManifestFile],
        snapshot_id: int,
        written: list[str],
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
                    result.append(self._merge_bin(base, spec_id, bin_, snapshot_id, written))
        return result

    def _merge_bin(
        self,
        base: TableMetadata,
        spec_id: int,
        bin_: list[ManifestFile],
        snapshot_id: int,
        written: list[str],
    ) -> ManifestFile:
        spec = base.spec_by_id(spec_id)
        assert spec is not None
        path = self._manifest_path(base)
        written.append(path)
        with write_manifest(
            self.io.new_output(path),
            spec,
            base.schema(),
            format_version=base.format_version,
            snapshot_id=snapshot_id,
            codec=_codec(base),
        ) as writer:
            for m in bin_:
                for e in _entries_for_merge(self.io, m, written):
                    if e.status == ManifestEntryStatus.DELETED:
                        if e.snapshot_id == snapshot_id:
                            writer.write_entry(e)
                    elif e.status == ManifestEntryStatus.ADDED and e.snapshot_id == snapshot_id:
                        writer.write_entry(e)
                    else:
                        writer.existing(e)
        return writer.to_manifest_file()


def _entries_for_merge(
    io: FileIO, manifest: ManifestFile, written: list[str]
) -> list[ManifestEntry]:
    entries = read_manifest(io.new_input(manifest.manifest_path), manifest)
    if manifest.manifest_path in written:  # merged away before it was ever committed
        written.remove(manifest.manifest_path)
        _delete_quietly(io, manifest.manifest_path)
    return entries


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


def _has_live_files(manifest: ManifestFile) -> bool:
    added = manifest.added_files_count
    existing = manifest.existing_files_count
    if added is None or existing is None:
        return True
    return added + existing > 0


def _delete_quietly(io: FileIO, path: str) -> None:
    try:
        io.delete(path)
    except Exception:
        pass
