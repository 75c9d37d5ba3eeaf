"""Deleting every file a table's metadata reaches (drop with purge)."""

from __future__ import annotations

from icepark.io import FileIO
from icepark.manifest import read_manifest, read_manifest_list
from icepark.spec.metadata import TableMetadata

__all__ = ["purge_table_files", "reachable_files"]


def reachable_files(io: FileIO, metadata: TableMetadata) -> set[str]:
    """Data, delete, manifest, manifest-list and statistics files of every snapshot."""
    files: set[str] = set()
    seen_manifests: set[str] = set()
    for snapshot in metadata.snapshots:
        if not snapshot.manifest_list:
            continue
        files.add(snapshot.manifest_list)
        if not io.exists(snapshot.manifest_list):
            continue
        for manifest in read_manifest_list(io.new_input(snapshot.manifest_list)):
            if manifest.manifest_path in seen_manifests:
                continue
            seen_manifests.add(manifest.manifest_path)
            files.add(manifest.manifest_path)
            if not io.exists(manifest.manifest_path):
                continue
            for entry in read_manifest(io.new_input(manifest.manifest_path), manifest):
                files.add(entry.data_file.file_path)
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
