"""`Table`: a handle on one Iceberg table, its current metadata and its FileIO."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from icepark.errors import IceparkError
from icepark.io import FileIO, load_file_io
from icepark.spec.metadata import TableMetadata, table_metadata_from_json
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef, SnapshotRefType
from icepark.spec.sorting import SortOrder
from icepark.spec.updates import TableRequirement, TableUpdate

if TYPE_CHECKING:
    from icepark.expressions import BooleanExpression
    from icepark.table.changelog import ChangelogScan
    from icepark.table.follow import AppendedBatch
    from icepark.table.incremental_scan import IncrementalAppendScan
    from icepark.table.scan import DataScan
    from icepark.table.transaction import Transaction
    from icepark.table.update_schema import UpdateSchema
    from icepark.table.update_sort_order import ReplaceSortOrder
    from icepark.table.update_spec import UpdateSpec

__all__ = ["CommitResult", "TableCommitter", "Table", "ReadOnlyTableError", "read_table_metadata"]


class ReadOnlyTableError(IceparkError):
    """The table was opened from a metadata file and has no catalog to commit through."""


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

    def load_table(self, identifier: str | Sequence[str]) -> Table: ...


def read_table_metadata(io: FileIO, location: str) -> TableMetadata:
    """Read and parse a metadata file; errors name the file."""
    from icepark.errors import InvalidMetadataError

    data = io.new_input(location).read_bytes()
    try:
        return table_metadata_from_json(data)
    except InvalidMetadataError as exc:
        raise type(exc)(f"{location}: {exc}") from exc


class Table:
    """An Iceberg table: immutable metadata plus the means to read files and commit changes."""

    def __init__(
        self,
        identifier: tuple[str, ...],
        metadata: TableMetadata,
        metadata_location: str,
        io: FileIO,
        catalog: TableCommitter | None = None,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.catalog = catalog

    @classmethod
    def from_metadata(cls, path: str, properties: dict[str, str] | None = None) -> Table:
        """Open any table read-only from one of its ``*.metadata.json`` files."""
        io = load_file_io(properties or {}, path)
        metadata = read_table_metadata(io, path)
        name = metadata.location.rstrip("/").rsplit("/", 1)[-1]
        return cls(("static", name), metadata, path, io, None)

    # -- naming ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return ".".join(self.identifier)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, {self.metadata_location!r})"

    # -- metadata views --------------------------------------------------------------------

    @property
    def format_version(self) -> int:
        return self.metadata.format_version

    @property
    def location(self) -> str:
        return self.metadata.location

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.metadata.properties)

    def schema(self) -> Schema:
        return self.metadata.schema()

    def schemas(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.metadata.schemas}

    def spec(self) -> PartitionSpec:
        return self.metadata.spec()

    def specs(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.metadata.partition_specs}

    def sort_order(self) -> SortOrder:
        return self.metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        return self.metadata.current_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot | None:
        return self.metadata.snapshot_by_id(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        return list(self.metadata.snapshots)

    def refs(self) -> dict[str, SnapshotRef]:
        return dict(self.metadata.refs)

    def history(self) -> list[Any]:
        return list(self.metadata.snapshot_log)

    # -- changes ---------------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        return self.catalog is None

    def refresh(self) -> Table:
        """Reload the current metadata from the catalog (a no-op for read-only tables)."""
        if self.catalog is not None:
            fresh = self.catalog.load_table(self.identifier)
            self.metadata, self.metadata_location = fresh.metadata, fresh.metadata_location
        return self

    def commit(
        self, requirements: Sequence[TableRequirement], updates: Sequence[TableUpdate]
    ) -> TableMetadata:
        """Commit metadata updates atomically against the metadata this table has loaded."""
        if self.catalog is None:
            raise ReadOnlyTableError(
                f"Table {self.name} was opened from {self.metadata_location} and is read-only"
            )
        result = self.catalog.commit_table(
            self.identifier, self.metadata, self.metadata_location, requirements, updates
        )
        self.metadata, self.metadata_location = result.metadata, result.metadata_location
        return result.metadata

    def transaction(self) -> Transaction:
        """``with table.transaction() as tx:`` commits only when the block exits cleanly."""
        from icepark.table.transaction import Transaction

        return Transaction(self)

    def append(self, data: Any, *, branch: str = MAIN_BRANCH, **kw: Any) -> Table:
        """Append a pyarrow Table, RecordBatchReader or batches as one snapshot."""
        with self.transaction() as tx:
            tx.append(data, branch=branch, **kw)
        return self

    def overwrite(
        self,
        data: Any,
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        **kw: Any,
    ) -> Table:
        """Replace the rows matching ``filter`` (everything when None) with ``data``."""
        with self.transaction() as tx:
            tx.overwrite(data, filter, branch=branch, **kw)
        return self

    def overwrite_partitions(self, data: Any, *, branch: str = MAIN_BRANCH, **kw: Any) -> Table:
        """Dynamic overwrite: replace the partitions that ``data`` touches."""
        with self.transaction() as tx:
            tx.overwrite_partitions(data, branch=branch, **kw)
        return self

    def delete(
        self,
        filter: str | BooleanExpression,  # the public name
        *,
        branch: str = MAIN_BRANCH,
        **kw: Any,
    ) -> Table:
        """Delete the rows matching ``filter`` as one snapshot, per ``write.delete.mode``."""
        with self.transaction() as tx:
            tx.delete(filter, branch=branch, **kw)
        return self

    def upsert(
        self, data: Any, on: list[str] | None = None, *, branch: str = MAIN_BRANCH, **kw: Any
    ) -> Table:
        """Update rows whose key matches a row of ``data``, insert the rest; one snapshot."""
        with self.transaction() as tx:
            tx.upsert(data, on, branch=branch, **kw)
        return self

    def apply_changes(
        self,
        data: Any,
        on: list[str] | None = None,
        op_column: str = "_op",
        *,
        branch: str = MAIN_BRANCH,
        **kw: Any,
    ) -> Table:
        """Apply ``I``/``U``/``D`` change rows as one snapshot (equality deletes + data)."""
        with self.transaction() as tx:
            tx.apply_changes(data, on, op_column, branch=branch, **kw)
        return self

    def set_properties(self, properties: dict[str, str] | None = None, **kw: str) -> Table:
        with self.transaction() as tx:
            tx.set_properties(properties, **kw)
        return self

    def update_schema(
        self, allow_incompatible_changes: bool = False, case_sensitive: bool = True
    ) -> UpdateSchema:
        """``with table.update_schema() as u:`` commits the changes on a clean exit."""
        from icepark.table.update_schema import UpdateSchema

        return UpdateSchema(
            self,
            allow_incompatible_changes=allow_incompatible_changes,
            case_sensitive=case_sensitive,
        )

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        """``with table.update_spec() as u:`` commits the new default spec on a clean exit."""
        from icepark.table.update_spec import UpdateSpec

        return UpdateSpec(self, case_sensitive=case_sensitive)

    def replace_sort_order(self, *terms: str, case_sensitive: bool = True) -> ReplaceSortOrder:
        """With terms (``"id"``, ``"ts desc nulls last"``) commits at once; without, returns
        a context manager: ``with table.replace_sort_order() as u: u.asc("id")``."""
        from icepark.table.update_sort_order import ReplaceSortOrder

        update = ReplaceSortOrder(self, case_sensitive=case_sensitive)
        if terms:
            for term in terms:
                update.term(term)
            update.commit()
        return update

    def scan(
        self,
        filter: str | BooleanExpression | None = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        as_of: int | dt.datetime | dt.date | None = None,
        ref: str | None = None,
        case_sensitive: bool = True,
        options: dict[str, str] | None = None,
        use_snapshot_schema: bool | None = None,
    ) -> DataScan:
        """A scan; ``filter`` is an expression or a string like ``"ts >= '2024-01-01'"``;
        ``as_of`` is epoch milliseconds or a datetime; ``ref`` a branch or tag. Time travel
        reads with the snapshot's schema unless ``use_snapshot_schema=False``."""
        from icepark.expressions import AlwaysTrue, parse_filter
        from icepark.table.scan import DataScan

        row_filter = (
            AlwaysTrue()
            if filter is None
            else parse_filter(filter)
            if isinstance(filter, str)
            else filter
        )
        return DataScan(
            self.io,
            self.metadata,
            row_filter,
            tuple(columns) if columns is not None else None,
            snapshot_id,
            as_of,
            ref,
            case_sensitive,
            use_snapshot_schema=use_snapshot_schema,
            options=dict(options or {}),
        )

    def incremental_append_scan(
        self,
        from_snapshot_id: int | None = None,
        to_snapshot_id: int | None = None,
        from_inclusive: bool = False,
        filter: str | BooleanExpression | None = None,
        columns: Sequence[str] | None = None,
        *,
        ref: str | None = None,
        case_sensitive: bool = True,
    ) -> IncrementalAppendScan:
        """The rows ``append`` snapshots added after ``from_snapshot_id`` up to
        ``to_snapshot_id`` (default: the head of ``ref`` or the current snapshot); see
        :mod:`icepark.table.incremental_scan`."""
        from icepark.table.incremental_scan import IncrementalAppendScan

        return IncrementalAppendScan(
            self.io,
            self.metadata,
            _filter(filter),
            tuple(columns) if columns is not None else None,
            to_snapshot_id,
            None,
            ref,
            case_sensitive,
            use_snapshot_schema=False,
            from_snapshot_id=from_snapshot_id,
            from_inclusive=from_inclusive,
        )

    def changelog_scan(
        self,
        from_snapshot_id: int | None = None,
        to_snapshot_id: int | None = None,
        filter: str | BooleanExpression | None = None,
        columns: Sequence[str] | None = None,
        compute_updates: bool = False,
        identifier_columns: Sequence[str] | None = None,
        net_changes: bool = False,
        *,
        ref: str | None = None,
        case_sensitive: bool = True,
    ) -> ChangelogScan:
        """The rows each snapshot inserted and deleted, as Java's ``create_changelog_view``
        gives them; see :mod:`icepark.table.changelog`."""
        from icepark.table.changelog import ChangelogScan

        return ChangelogScan(
            self.io,
            self.metadata,
            _filter(filter),
            tuple(columns) if columns is not None else None,
            from_snapshot_id,
            to_snapshot_id,
            ref,
            case_sensitive,
            compute_updates,
            tuple(identifier_columns) if identifier_columns is not None else None,
            net_changes,
        )

    def follow(
        self,
        start_snapshot_id: int | None = None,
        start_timestamp: int | float | dt.datetime | None = None,
        interval: float = 1.0,
        filter: str | BooleanExpression | None = None,
        columns: Sequence[str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
    ) -> Iterator[AppendedBatch]:
        """Yield each newly committed snapshot's appended rows as they land; see
        :mod:`icepark.table.follow`."""
        from icepark.table.follow import follow

        return follow(
            self, start_snapshot_id, start_timestamp, interval, filter, columns, branch=branch
        )

    # -- branches and tags -----------------------------------------------------------------

    def _set_ref(
        self, name: str, snapshot_id: int | None, kind: SnapshotRefType, **retention: Any
    ) -> Table:
        from icepark.errors import ValidationError
        from icepark.spec.updates import AssertRefSnapshotId, SetSnapshotRefUpdate

        if snapshot_id is None:
            current = self.current_snapshot()
            if current is None:
                raise ValidationError(f"Table {self.name} has no snapshot to point {name!r} at")
            snapshot_id = current.snapshot_id
        existing = self.metadata.ref(name)
        self.commit(
            [AssertRefSnapshotId(name, existing.snapshot_id if existing else None)],
            [SetSnapshotRefUpdate(name, snapshot_id, kind, **retention)],
        )
        return self

    def create_branch(self, name: str, snapshot_id: int | None = None, **retention: Any) -> Table:
        """A branch at ``snapshot_id`` (the current snapshot by default)."""
        if self.metadata.ref(name) is not None:
            from icepark.errors import ValidationError

            raise ValidationError(f"Ref {name!r} already exists in table {self.name}")
        return self._set_ref(name, snapshot_id, SnapshotRefType.BRANCH, **retention)

    def create_tag(self, name: str, snapshot_id: int | None = None, **retention: Any) -> Table:
        """A tag at ``snapshot_id`` (the current snapshot by default)."""
        if self.metadata.ref(name) is not None:
            from icepark.errors import ValidationError

            raise ValidationError(f"Ref {name!r} already exists in table {self.name}")
        return self._set_ref(name, snapshot_id, SnapshotRefType.TAG, **retention)

    def remove_ref(self, name: str) -> Table:
        from icepark.errors import ValidationError
        from icepark.spec.updates import RemoveSnapshotRefUpdate

        if name == MAIN_BRANCH or self.metadata.ref(name) is None:
            raise ValidationError(f"Cannot remove ref {name!r} from table {self.name}")
        self.commit([], [RemoveSnapshotRefUpdate(name)])
        return self


def _filter(value: str | BooleanExpression | None) -> BooleanExpression:
    from icepark.expressions import AlwaysTrue, parse_filter

    if value is None:
        return AlwaysTrue()
    return parse_filter(value) if isinstance(value, str) else value
