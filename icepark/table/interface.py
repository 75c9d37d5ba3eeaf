"""What the table layer's parts need of each other, as small interfaces.

* :class:`TableLike`: what transactions, updates, scans and maintenance need of a table, so
  that the modules that change tables do not import :class:`~icepark.table.table.Table`
  (which builds on them) and the package has no import circle;
* :class:`TableCommitter` and :class:`CommitResult`: what a table needs of its catalog, an
  atomic swap of its metadata; :func:`read_table_metadata` and :func:`write_table_metadata`
  read and write a metadata file for both.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from icepark.errors import InvalidMetadataError
from icepark.io import FileIO
from icepark.spec.metadata import TableMetadata, table_metadata_from_json, table_metadata_to_json
from icepark.spec.updates import TableRequirement, TableUpdate

__all__ = [
    "CommitResult",
    "TableCommitter",
    "TableLike",
    "read_table_metadata",
    "write_table_metadata",
]


class TableLike(Protocol):
    """A table as the commit machinery sees it (:class:`~icepark.table.table.Table` is one)."""

    identifier: tuple[str, ...]
    metadata: TableMetadata
    metadata_location: str
    io: FileIO

    @property
    def name(self) -> str: ...

    def refresh(self) -> TableLike: ...

    def commit(
        self, requirements: Sequence[TableRequirement], updates: Sequence[TableUpdate]
    ) -> TableMetadata: ...


@dataclass(frozen=True)
class CommitResult:
    metadata: TableMetadata
    metadata_location: str


class TableCommitter(Protocol):
    """What a table needs from its catalog: an atomic swap of its metadata."""

    def commit_table(
        self,
        identifier: tuple[str, ...],
        base: TableMetadata | None,
        base_location: str | None,
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
    ) -> CommitResult: ...

    def load_table(self, identifier: str | Sequence[str]) -> TableLike: ...

    def metadata_location(self, identifier: str | Sequence[str]) -> str: ...


def read_table_metadata(io: FileIO, location: str) -> TableMetadata:
    """Read and parse a metadata file; errors name the file."""
    data = io.new_input(location).read_bytes()
    try:
        return table_metadata_from_json(data)
    except InvalidMetadataError as exc:
        raise type(exc)(f"{location}: {exc}") from exc


def write_table_metadata(
    io: FileIO, location: str, metadata: TableMetadata, overwrite: bool = False
) -> None:
    """Write ``metadata`` as the file at ``location``, gzip-compressed when its name says so
    (``*.gz.metadata.json``, or the older ``*.metadata.json.gz``), as Java's
    ``TableMetadataParser`` chooses the codec from the name."""
    data = table_metadata_to_json(metadata).encode("utf-8")
    if location.endswith((".gz.metadata.json", ".metadata.json.gz")):
        data = gzip.compress(data, mtime=0)
    io.new_output(location).write_bytes(data, overwrite=overwrite)
