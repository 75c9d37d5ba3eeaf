"""`Table`: a handle on one Iceberg table, its current metadata and its FileIO.

What changes a table (transactions and writers, schema and spec updates, snapshot management,
expiry, orphan removal) and the metadata tables are imported when first used: loading a table
and planning a scan then need neither Arrow nor the writers, which halves a fresh process's
start-up.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from icepark.errors import IceparkError, InvalidMetadataError, ValidationError
from icepark.expressions import BooleanExpression, as_filter
from icepark.io import FileIO, load_file_io
from icepark.spec.metadata import TableMetadata, table_metadata_from_json
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef, SnapshotRefType
from icepark.spec.sorting import SortOrder
from icepark.spec.updates import (
    AssertRefSnapshotId,
    RemoveSnapshotRefUpdate,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
)
from icepark.table.scan import DataScan

if TYPE_CHECKING:
    from icepark.table.changelog import ChangelogScan
    from icepark.table.expire_snapshots import ExpireSnapshotsResult
    from icepark.table.follow import AppendedBatch
    from icepark.table.incremental_scan import IncrementalAppendScan
    from icepark.table.inspect import InspectTable
    from icepark.table.remove_orphan_files import RemoveOrphanFilesResult
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

    def metadata_location(self, identifier: str | Sequence[str]) -> str: ...


def read_table_metadata(io: FileIO, location: str) -> TableMetadata:
    """Read and parse a metadata file; errors name the file."""
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

    @property
    def inspect(self) -> InspectTable:
        """The metadata tables (``table.inspect.files()``, ``.snapshots()``, ...) as Arrow."""
        from icepark.table.inspect import InspectTable

        return InspectTable(self)

    # -- changes ---------------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        return self.catalog is None

    def refresh(self) -> Table:
        """Reload the current metadata from the catalog (a no-op for read-only tables, and a
        single catalog lookup when the table has not changed)."""
        if self.catalog is not None:
            if self.catalog.metadata_location(self.identifier) == self.metadata_location:
                return self
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

    def append(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        merge: bool = True,
        wap_id: str | None = None,
        file_format: str | None = None,
    ) -> Table:
        """Append rows as one snapshot: a pyarrow Table, RecordBatch, RecordBatchReader or
        any iterable of batches (streamed with bounded memory).

        ``branch`` commits to a branch other than main; ``snapshot_properties`` go into the
        snapshot summary; ``merge=False`` makes a fast append (no manifest merging, as Java's
        ``newFastAppend``); ``wap_id`` stages the snapshot without making it current (with
        ``write.wap.enabled=true``; see :meth:`publish_changes`); ``file_format`` (parquet,
        avro or orc) overrides ``write.format.default`` for this write. Appends never conflict: a
        commit that loses a race is retried until ``commit.retry.total-timeout-ms``.

        >>> table.append(pa.table({"id": [1, 2], "name": ["a", "b"]}))  # doctest: +SKIP
        """
        with self.transaction() as tx:
            tx.append(
                data,
                branch=branch,
                snapshot_properties=snapshot_properties,
                merge=merge,
                wap_id=wap_id,
                file_format=file_format,
            )
        return self

    def overwrite(
        self,
        data: Any,
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
        wap_id: str | None = None,
    ) -> Table:
        """Replace the rows matching ``filter`` (every row when None) with ``data``, as one
        snapshot. Files whose rows all match are dropped; files where some match are rewritten
        without them (their deletes applied). Every new row must match ``filter``. Under
        ``write.delete.isolation-level=serializable`` (the default) a concurrent commit that
        added matching rows fails this one with :class:`~icepark.errors.ValidationError`.

        >>> table.overwrite(new_rows, "day = '2024-05-01'")  # doctest: +SKIP
        """
        with self.transaction() as tx:
            tx.overwrite(
                data,
                filter,
                branch=branch,
                case_sensitive=case_sensitive,
                snapshot_properties=snapshot_properties,
                wap_id=wap_id,
            )
        return self

    def overwrite_partitions(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        wap_id: str | None = None,
    ) -> Table:
        """Dynamic overwrite: replace every partition that ``data`` touches with ``data``
        (the whole table when it is unpartitioned), as one snapshot."""
        with self.transaction() as tx:
            tx.overwrite_partitions(
                data, branch=branch, snapshot_properties=snapshot_properties, wap_id=wap_id
            )
        return self

    def delete(
        self,
        filter: str | BooleanExpression,  # the public name
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Delete the rows matching ``filter`` as one snapshot, per ``write.delete.mode``:
        copy-on-write (rewrite the files, the default) or merge-on-read (position deletes on
        v2, deletion vectors on v3). Files whose rows all match are dropped without reading.

        >>> table.delete("ts < '2024-01-01' and status = 'test'")  # doctest: +SKIP
        """
        with self.transaction() as tx:
            tx.delete(
                filter,
                branch=branch,
                case_sensitive=case_sensitive,
                snapshot_properties=snapshot_properties,
            )
        return self

    def upsert(
        self,
        data: Any,
        on: Sequence[str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Update the rows whose key (``on``, else the schema's identifier fields) matches a
        row of ``data`` and insert the others, as one snapshot (per ``write.merge.mode``).

        >>> table.upsert(changed_rows, on=["id"])  # doctest: +SKIP
        """
        with self.transaction() as tx:
            tx.upsert(
                data,
                list(on) if on is not None else None,
                branch=branch,
                snapshot_properties=snapshot_properties,
            )
        return self

    def apply_changes(
        self,
        data: Any,
        on: Sequence[str] | None = None,
        op_column: str = "_op",
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Apply change-data-capture rows as one snapshot: ``op_column`` says ``I`` (insert),
        ``U`` (update) or ``D`` (delete) for each row, keyed by ``on`` (else the identifier
        fields); written as equality deletes plus data files."""
        with self.transaction() as tx:
            tx.apply_changes(
                data,
                list(on) if on is not None else None,
                op_column,
                branch=branch,
                snapshot_properties=snapshot_properties,
            )
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

    def rewrite_manifests(
        self, spec_id: int | None = None, cluster_by: Sequence[str] | None = None
    ) -> Any:
        """Regroup the manifests of a spec by partition to ``commit.manifest.target-size-bytes``
        (one ``replace`` snapshot); see :mod:`icepark.table.rewrite_manifests`."""
        from icepark.table.rewrite_manifests import rewrite_manifests

        return rewrite_manifests(self, spec_id, cluster_by)

    def add_files(self, paths: str | Sequence[str], check_duplicate_files: bool = True) -> Any:
        """Register existing Parquet files (or folders of them) without rewriting them; see
        :mod:`icepark.table.add_files`."""
        from icepark.table.add_files import add_files

        return add_files(self, paths, check_duplicate_files)

    def replace_sort_order(self, *terms: str, case_sensitive: bool = True) -> Table:
        """Make the table's default sort order ``terms`` (``"id"``, ``"ts desc nulls last"``,
        ``"bucket(16, id)"``), committed at once; no terms: unsorted.

        >>> table.replace_sort_order("region", "ts desc nulls last")  # doctest: +SKIP
        """
        with self.update_sort_order(case_sensitive=case_sensitive) as update:
            for term in terms:
                update.term(term)
        return self

    def update_sort_order(self, case_sensitive: bool = True) -> ReplaceSortOrder:
        """``with table.update_sort_order() as u: u.asc("id").desc("ts")`` replaces the
        default sort order with the one built in the block, committed on a clean exit."""
        from icepark.table.update_sort_order import ReplaceSortOrder

        return ReplaceSortOrder(self, case_sensitive=case_sensitive)

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
        row_filter = as_filter(filter)
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
            as_filter(filter),
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
            as_filter(filter),
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
            raise ValidationError(f"Ref {name!r} already exists in table {self.name}")
        return self._set_ref(name, snapshot_id, SnapshotRefType.BRANCH, **retention)

    def create_tag(self, name: str, snapshot_id: int | None = None, **retention: Any) -> Table:
        """A tag at ``snapshot_id`` (the current snapshot by default)."""
        if self.metadata.ref(name) is not None:
            raise ValidationError(f"Ref {name!r} already exists in table {self.name}")
        return self._set_ref(name, snapshot_id, SnapshotRefType.TAG, **retention)

    def remove_ref(self, name: str) -> Table:
        if name == MAIN_BRANCH or self.metadata.ref(name) is None:
            raise ValidationError(f"Cannot remove ref {name!r} from table {self.name}")
        self.commit([], [RemoveSnapshotRefUpdate(name)])
        return self

    # -- snapshot management and upkeep ------------------------------------------------------
    # (icepark.table.manage_snapshots, expire_snapshots and remove_orphan_files)

    def rollback_to_snapshot(self, snapshot_id: int) -> Table:
        """Make ``snapshot_id``, an ancestor of the current snapshot, current again."""
        from icepark.table import manage_snapshots

        return manage_snapshots.rollback_to_snapshot(self, snapshot_id)

    def rollback_to_timestamp(self, timestamp: int | dt.datetime | dt.date) -> Table:
        """Make current the newest ancestor committed before ``timestamp`` (ms or datetime)."""
        from icepark.table import manage_snapshots

        return manage_snapshots.rollback_to_timestamp(self, timestamp)

    def set_current_snapshot(self, snapshot_id: int | None = None, ref: str | None = None) -> Table:
        """Make ``snapshot_id`` (or branch or tag ``ref``'s snapshot) current."""
        from icepark.table import manage_snapshots

        return manage_snapshots.set_current_snapshot(self, snapshot_id, ref)

    def cherrypick_snapshot(self, snapshot_id: int) -> Table:
        """Apply a snapshot's changes (append, dynamic overwrite or fast-forward) to main."""
        from icepark.table import manage_snapshots

        return manage_snapshots.cherrypick_snapshot(self, snapshot_id)

    def publish_changes(self, wap_id: str) -> Table:
        """Cherry-pick the snapshot staged under ``wap_id`` (write-audit-publish)."""
        from icepark.table import manage_snapshots

        return manage_snapshots.publish_changes(self, wap_id)

    def fast_forward(self, branch: str, to: str) -> Table:
        """Move ``branch`` forward to ref ``to``'s snapshot (a descendant of the branch's)."""
        from icepark.table import manage_snapshots

        return manage_snapshots.fast_forward(self, branch, to)

    def replace_branch(self, name: str, to: int | str) -> Table:
        """Point branch ``name`` at snapshot id ``to`` or at ref ``to``'s snapshot."""
        from icepark.table import manage_snapshots

        return manage_snapshots.replace_branch(self, name, to)

    def replace_tag(self, name: str, snapshot_id: int) -> Table:
        """Point tag ``name`` at ``snapshot_id``."""
        from icepark.table import manage_snapshots

        return manage_snapshots.replace_tag(self, name, snapshot_id)

    def set_ref_retention(
        self,
        name: str,
        *,
        min_snapshots_to_keep: int | None = None,
        max_snapshot_age_ms: int | None = None,
        max_ref_age_ms: int | None = None,
    ) -> Table:
        """Set a branch's or tag's retention (what expiry keeps)."""
        from icepark.table import manage_snapshots

        return manage_snapshots.set_ref_retention(
            self,
            name,
            min_snapshots_to_keep=min_snapshots_to_keep,
            max_snapshot_age_ms=max_snapshot_age_ms,
            max_ref_age_ms=max_ref_age_ms,
        )

    def expire_snapshots(
        self,
        older_than: int | dt.datetime | dt.date | None = None,
        retain_last: int | None = None,
        snapshot_ids: Sequence[int] | None = None,
        clean_expired_metadata: bool = False,
        dry_run: bool = False,
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> ExpireSnapshotsResult:
        """Expire snapshots, then delete the files that only they reached, as Java's
        ``expire_snapshots``: snapshots older than ``older_than`` (default: the table's
        ``history.expire.max-snapshot-age-ms``, 5 days) beyond the last ``retain_last``
        (default ``history.expire.min-snapshots-to-keep``, 1) of each branch, or exactly
        ``snapshot_ids``; refs past their ``max-ref-age-ms`` go too. The metadata is committed
        first; data, delete, manifest, manifest-list and statistics files no retained
        snapshot reaches are then deleted in parallel (a failed delete is reported in the
        result, never raised). ``dry_run`` commits and deletes nothing. Returns Java's six
        counts and the files (``progress(done, total)`` follows the deletes).

        >>> table.expire_snapshots(retain_last=10)  # doctest: +SKIP
        """
        from icepark.table.expire_snapshots import expire_snapshots

        return expire_snapshots(
            self,
            older_than,
            retain_last,
            snapshot_ids,
            clean_expired_metadata,
            dry_run,
            progress=progress,
        )

    def remove_orphan_files(
        self,
        older_than: int | dt.datetime | dt.date | None = None,
        location: str | None = None,
        dry_run: bool = False,
        equal_schemes: dict[str, str] | None = None,
        equal_authorities: dict[str, str] | None = None,
        prefix_mismatch_mode: str = "error",
        *,
        allow_recent: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> RemoveOrphanFilesResult:
        """Delete the files under the table's location (or ``location`` inside it) that no
        metadata file, snapshot, manifest or ref references and that are older than
        ``older_than`` (default: 3 days ago; less than 24 hours ago is refused unless
        ``allow_recent``, as an in-flight write's files look orphaned). ``equal_schemes``
        and ``equal_authorities`` extend Java's equivalences (``s3a``/``s3n`` = ``s3``);
        ``prefix_mismatch_mode`` is ``error``, ``ignore`` or ``delete``. ``dry_run`` only
        lists them. On Spark, ``icepark.spark.remove_orphan_files`` lists in parallel."""
        from icepark.table.remove_orphan_files import remove_orphan_files

        return remove_orphan_files(
            self,
            older_than,
            location,
            dry_run,
            equal_schemes,
            equal_authorities,
            prefix_mismatch_mode,
            allow_recent=allow_recent,
            progress=progress,
        )
