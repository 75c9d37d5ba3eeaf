"""Deleting every file a table's metadata reaches (drop with purge)."""

from __future__ import annotations

from icepark.io import FileIO
from icepark.planning.reachable import referenced_files
from icepark.spec.metadata import TableMetadata

__all__ = ["purge_table_files", "reachable_files"]


def reachable_files(io: FileIO, metadata: TableMetadata) -> set[str]:
    """Data, delete, manifest, manifest-list and statistics files of every snapshot (files
    that only ``DELETED`` entries name included). Files already gone are skipped (a purge
    may be re-run after a partial one)."""
    found = referenced_files(io, metadata, live_only=False, missing_ok=True)
    return found.paths()


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
