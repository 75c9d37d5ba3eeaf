"""What transactions and pending updates need of a table: a small interface, so that the
modules that change tables do not import :class:`~icepark.table.table.Table` (which builds on
them) and the package has no import cycle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from icepark.io import FileIO
from icepark.spec.metadata import TableMetadata
from icepark.spec.updates import TableRequirement, TableUpdate

__all__ = ["TableLike"]


class TableLike(Protocol):
    """A table as the commit machinery sees it (:class:`~icepark.table.table.Table` is one)."""

    metadata: TableMetadata
    metadata_location: str
    io: FileIO

    @property
    def name(self) -> str: ...

    def refresh(self) -> TableLike: ...

    def commit(
        self, requirements: Sequence[TableRequirement], updates: Sequence[TableUpdate]
    ) -> TableMetadata: ...
