"""What every metadata table is built from: the table's FileIO, metadata and name."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cached_property

from icepark.io import FileIO
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.snapshots import Snapshot

__all__ = ["InspectContext"]


@dataclass(frozen=True)
class InspectContext:
    """One table's state, as loaded: the metadata tables of it are computed from this."""

    io: FileIO
    metadata: TableMetadata
    metadata_location: str | None
    name: str

    @cached_property
    def specs(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.metadata.partition_specs}

    def snapshot(
        self,
        snapshot_id: int | None = None,
        as_of: int | dt.datetime | dt.date | None = None,
        ref: str | None = None,
    ) -> Snapshot | None:
        """The snapshot asked for (the current one by default); unknown ids, refs and times
        raise :class:`~icepark.errors.ValidationError` naming them and the table."""
        from icepark.table.scan import resolve_snapshot

        return resolve_snapshot(self.metadata, snapshot_id, as_of, ref)
