"""Deleting every file a table's metadata reaches (drop with purge)."""

from __future__ import annotations

from icepark.io import FileIO
from icepark.manifest import ManifestFile
from icepark.planning.walk import manifests_of, parallel_map, read_entries
from icepark.spec.metadata import TableMetadata

__all__ = ["purge_table_files", "reachable_files"]


def reachable_files(io: FileIO, metadata: TableMetadata) -> set[str]:
    """Data, delete, manifest, manifest-list and statistics files of every snapshot. Files
    already gone are skipped (a purge may be re-run after a partial one)."""
    files: set[str] = set()
    lists = [s.manifest_list for s in metadata.snapshots if s.manifest_list]
    files.update(lists)
    manifests: dict[str, ManifestFile] = {}
    for snapshot in metadata.snapshots:
        if snapshot.manifest_list and io.exists(snapshot.manifest_list):
            for m in manifests_of(io, snapshot):
                manifests.setdefault(m.manifest_path, m)
    files.update(manifests)
    present = [
        m
        for m, exists in zip(manifests.values(), parallel_map(io.exists, list(manifests)))
        if exists
    ]
    for _, entries in read_entries(io, present, live_only=False):
        files.update(e.data_file.file_path for e in entries)
    files.update(s.statistics_path for s in metadata.statistics)
    files.update(s.statistics_path for s in metadata.partition_statistics)
    return files


def purge_table_files(io: FileIO, metadata: TableMetadata, metadata_location: str) -> None:
    """Delete what the table's metadata reaches, then its metadata files, as Java's purge."""
    for path in sorted(reachable_files(io, metadata)):
        if io.exists(path):
            io.delete(path)
    for entry in metadata.metadata_log:
        if io.exists(entry.metadata_file):
            io.delete(entry.metadata_file)
    if io.exists(metadata_location):
        io.delete(metadata_location)
