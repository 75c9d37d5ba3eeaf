"""What a REST client keeps of each table's last load, for conditional loads: the ETag the
server gave it, and the immutable parts of the table (metadata, its location, the FileIO and
the scan planner; never the mutable ``Table``). A load sends ``If-None-Match`` with the ETag
and, on a 304, builds a fresh ``Table`` from these parts. A commit's answer is the table's
next load: with the server's ETag for it, the refresh before the next commit is a 304."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from icepark.catalog.identifiers import Identifier
from icepark.errors import NoSuchTableError
from icepark.io import FileIO
from icepark.rest.http import RestClient
from icepark.rest.models import LoadTableResult
from icepark.spec.metadata import TableMetadata, table_metadata_from_dict
from icepark.spec.snapshots import Snapshot

__all__ = ["Loaded", "LoadedTables", "snapshots_loader"]


@dataclass(frozen=True)
class Loaded:
    etag: str
    metadata: TableMetadata
    metadata_location: str
    io: FileIO
    scan_planner: Any


class LoadedTables:
    """The last load of up to ``size`` tables, the least recently stored dropped first."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._entries: dict[Identifier, Loaded] = {}

    def get(self, ident: Identifier) -> Loaded | None:
        return self._entries.get(ident)

    def loaded(self, ident: Identifier, etag: str | None, table: Any) -> None:
        """``table`` was just loaded with ``etag`` (None: the server gave none)."""
        self._entries.pop(ident, None)
        if etag:
            self._put(
                ident,
                Loaded(etag, table.metadata, table.metadata_location, table.io, table.scan_planner),
            )

    def committed(
        self, ident: Identifier, etag: str | None, metadata: TableMetadata, location: str
    ) -> None:
        """A commit answered ``metadata`` at ``location`` with ``etag``; the FileIO and
        planner stay those of the last load (none known: nothing is kept)."""
        known = self._entries.pop(ident, None)
        if etag and known is not None:
            self._put(ident, Loaded(etag, metadata, location, known.io, known.scan_planner))

    def _put(self, ident: Identifier, entry: Loaded) -> None:
        self._entries[ident] = entry
        while len(self._entries) > self.size:
            self._entries.pop(next(iter(self._entries)))


def snapshots_loader(
    client: RestClient, url: str, name: str, partial: TableMetadata
) -> Callable[[], tuple[Snapshot, ...]]:
    """Loads the whole snapshot list of the table at ``url`` (a load without
    ``snapshots=refs``) for ``partial``, its metadata loaded with the refs' snapshots only
    (see :func:`~icepark.spec.metadata.defer_snapshots`). A table replaced since (another
    UUID under the name) is a NoSuchTableError: its history is not this table's."""

    def load() -> tuple[Snapshot, ...]:
        operation = f"load the snapshots of table {name}"
        result = client.call("GET", url, operation, response=LoadTableResult, errors="table")
        assert result is not None
        full = table_metadata_from_dict(result.metadata)
        if full.table_uuid != partial.table_uuid:
            raise NoSuchTableError(
                f"Cannot {operation}: it was replaced by another table since it was loaded"
            )
        return full.snapshots

    return load
