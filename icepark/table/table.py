"""`Table`: a handle on one Iceberg table, its current metadata and its FileIO.

``Table`` holds the metadata views, ``refresh``, ``commit`` and ``transaction``; every other
public method is an entry into the capability that implements it, where its documentation
lives: writes in :mod:`icepark.table.write.table_writes`, schema, spec, sort order and refs in
:mod:`icepark.table.update`, scans in :mod:`icepark.table.scan` and
:mod:`icepark.table.incremental`, upkeep and compaction in :mod:`icepark.table.maintenance`,
metadata tables in :mod:`icepark.table.inspect`. Those modules take the table typed by
:class:`~icepark.table.interface.TableLike` and never import this module, so the package has
no import circle.

Capabilities are imported when first used: loading a table and planning a scan then need
neither Arrow nor the writers, which halves a fresh process's start-up.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from icepark.errors import IceparkError
from icepark.expressions import BooleanExpression
from icepark.io import FileIO, load_file_io
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef
from icepark.spec.sorting import SortOrder
from icepark.spec.updates import TableRequirement, TableUpdate
from icepark.table.interface import TableCommitter, read_table_metadata
from icepark.table.scan import DataScan, table_scan

if TYPE_CHECKING:
    from icepark.planning.planner import FileScanTask
    from icepark.planning.scan_metrics import PlanCounts
    from icepark.table.incremental.append_scan import IncrementalAppendScan
    from icepark.table.incremental.changelog import ChangelogScan
    from icepark.table.incremental.follow import AppendedBatch
    from icepark.table.inspect import InspectTable
    from icepark.table.maintenance.add_files import AddFilesResult
    from icepark.table.maintenance.expire_snapshots import ExpireSnapshotsResult
    from icepark.table.maintenance.remove_orphan_files import RemoveOrphanFilesResult
    from icepark.table.maintenance.rewrite_manifests import RewriteManifestsResult
    from icepark.table.transaction import Transaction
    from icepark.table.update.schema import UpdateSchema
    from icepark.table.update.sort_order import ReplaceSortOrder
    from icepark.table.update.spec import UpdateSpec

__all__ = ["Table", "ReadOnlyTableError"]


class ReadOnlyTableError(IceparkError):
    """The table was opened from a metadata file and has no catalog to commit through."""


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
        # plans scans instead of the local planner (a REST catalog's server-side planning)
        self.scan_planner: Callable[[DataScan], Iterator[FileScanTask]] | None = None
        # told of each local plan (a REST catalog's scan reports); see DataScan.reporter
        self.scan_reporter: Callable[[DataScan, PlanCounts, int], None] | None = None

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

    # -- writes (icepark.table.write.table_writes) -----------------------------------------

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
        """Append rows as one snapshot; see :func:`icepark.table.write.table_writes.append`."""
        from icepark.table.write import table_writes

        return table_writes.append(
            self,
            data,
            branch=branch,
            snapshot_properties=snapshot_properties,
            merge=merge,
            wap_id=wap_id,
            file_format=file_format,
        )

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
        """Replace the rows matching ``filter`` with ``data`` as one snapshot; see
        :func:`icepark.table.write.table_writes.overwrite`."""
        from icepark.table.write import table_writes

        return table_writes.overwrite(
            self,
            data,
            filter,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
            wap_id=wap_id,
        )

    def overwrite_partitions(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        wap_id: str | None = None,
    ) -> Table:
        """Replace every partition ``data`` touches; see
        :func:`icepark.table.write.table_writes.overwrite_partitions`."""
        from icepark.table.write import table_writes

        return table_writes.overwrite_partitions(
            self, data, branch=branch, snapshot_properties=snapshot_properties, wap_id=wap_id
        )

    def delete(
        self,
        filter: str | BooleanExpression,  # the public name
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Delete the rows matching ``filter`` as one snapshot; see
        :func:`icepark.table.write.table_writes.delete`."""
        from icepark.table.write import table_writes

        return table_writes.delete(
            self,
            filter,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
        )

    def upsert(
        self,
        data: Any,
        on: Sequence[str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Update the rows whose key matches a row of ``data``, insert the others; see
        :func:`icepark.table.write.table_writes.upsert`."""
        from icepark.table.write import table_writes

        return table_writes.upsert(
            self, data, on, branch=branch, snapshot_properties=snapshot_properties
        )

    def apply_changes(
        self,
        data: Any,
        on: Sequence[str] | None = None,
        op_column: str = "_op",
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Apply change-data-capture rows (``I``/``U``/``D`` in ``op_column``) as one
        snapshot; see :func:`icepark.table.write.table_writes.apply_changes`."""
        from icepark.table.write import table_writes

        return table_writes.apply_changes(
            self, data, on, op_column, branch=branch, snapshot_properties=snapshot_properties
        )

    def set_properties(self, properties: dict[str, str] | None = None, **kw: str) -> Table:
        """Set table properties, committed at once; see
        :func:`icepark.table.write.table_writes.set_properties`."""
        from icepark.table.write import table_writes

        return table_writes.set_properties(self, properties, **kw)

    # -- schema, partition spec and sort order (icepark.table.update) ----------------------

    def update_schema(
        self, allow_incompatible_changes: bool = False, case_sensitive: bool = True
    ) -> UpdateSchema:
        """``with table.update_schema() as u:`` commits the changes on a clean exit; see
        :class:`icepark.table.update.schema.UpdateSchema`."""
        from icepark.table.update.schema import UpdateSchema

        return UpdateSchema(
            self,
            allow_incompatible_changes=allow_incompatible_changes,
            case_sensitive=case_sensitive,
        )

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        """``with table.update_spec() as u:`` commits the new default spec on a clean exit;
        see :class:`icepark.table.update.spec.UpdateSpec`."""
        from icepark.table.update.spec import UpdateSpec

        return UpdateSpec(self, case_sensitive=case_sensitive)

    def replace_sort_order(self, *terms: str, case_sensitive: bool = True) -> Table:
        """Make ``terms`` (``"id"``, ``"ts desc nulls last"``, ``"bucket(16, id)"``) the
        default sort order at once; see :func:`icepark.table.update.sort_order.replace`."""
        from icepark.table.update import sort_order

        return sort_order.replace(self, *terms, case_sensitive=case_sensitive)

    def update_sort_order(self, case_sensitive: bool = True) -> ReplaceSortOrder:
        """``with table.update_sort_order() as u: u.asc("id").desc("ts")``; see
        :class:`icepark.table.update.sort_order.ReplaceSortOrder`."""
        from icepark.table.update.sort_order import ReplaceSortOrder

        return ReplaceSortOrder(self, case_sensitive=case_sensitive)

    # -- scans (icepark.table.scan, icepark.table.incremental) -----------------------------

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
        """A scan, optionally filtered and time travelling; see
        :func:`icepark.table.scan.table_scan`."""
        return table_scan(
            self,
            filter,
            columns,
            snapshot_id,
            as_of,
            ref,
            case_sensitive,
            options,
            use_snapshot_schema,
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
        """The rows ``append`` snapshots added between two snapshots; see
        :func:`icepark.table.incremental.append_scan.incremental_append_scan`."""
        from icepark.table.incremental.append_scan import incremental_append_scan

        return incremental_append_scan(
            self,
            from_snapshot_id,
            to_snapshot_id,
            from_inclusive,
            filter,
            columns,
            ref=ref,
            case_sensitive=case_sensitive,
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
        """The rows each snapshot inserted and deleted; see
        :func:`icepark.table.incremental.changelog.changelog_scan`."""
        from icepark.table.incremental.changelog import changelog_scan

        return changelog_scan(
            self,
            from_snapshot_id,
            to_snapshot_id,
            filter,
            columns,
            compute_updates,
            identifier_columns,
            net_changes,
            ref=ref,
            case_sensitive=case_sensitive,
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
        :func:`icepark.table.incremental.follow.follow`."""
        from icepark.table.incremental.follow import follow

        return follow(
            self, start_snapshot_id, start_timestamp, interval, filter, columns, branch=branch
        )

    # -- branches, tags and snapshot management (icepark.table.update.manage_snapshots) ----

    def create_branch(self, name: str, snapshot_id: int | None = None, **retention: Any) -> Table:
        """A branch at ``snapshot_id`` (the current snapshot by default)."""
        from icepark.table.update import manage_snapshots

        return manage_snapshots.create_branch(self, name, snapshot_id, **retention)

    def create_tag(self, name: str, snapshot_id: int | None = None, **retention: Any) -> Table:
        """A tag at ``snapshot_id`` (the current snapshot by default)."""
        from icepark.table.update import manage_snapshots

        return manage_snapshots.create_tag(self, name, snapshot_id, **retention)

    def remove_ref(self, name: str) -> Table:
        """Remove branch or tag ``name`` (never ``main``)."""
        from icepark.table.update import manage_snapshots

        return manage_snapshots.remove_ref(self, name)

    def rollback_to_snapshot(self, snapshot_id: int) -> Table:
        """Make ``snapshot_id``, an ancestor of the current snapshot, current again."""
        from icepark.table.update import manage_snapshots

        return manage_snapshots.rollback_to_snapshot(self, snapshot_id)

    def rollback_to_timestamp(self, timestamp: int | dt.datetime | dt.date) -> Table:
        """Make current the newest ancestor committed before ``timestamp`` (ms or datetime)."""
        from icepark.table.update import manage_snapshots

        return manage_snapshots.rollback_to_timestamp(self, timestamp)

    def set_current_snapshot(self, snapshot_id: int | None = None, ref: str | None = None) -> Table:
        """Make ``snapshot_id`` (or branch or tag ``ref``'s snapshot) current."""
        from icepark.table.update import manage_snapshots

        return manage_snapshots.set_current_snapshot(self, snapshot_id, ref)

    def cherrypick_snapshot(self, snapshot_id: int) -> Table:
        """Apply a snapshot's changes (append, dynamic overwrite or fast-forward) to main."""
        from icepark.table.update import manage_snapshots

        return manage_snapshots.cherrypick_snapshot(self, snapshot_id)

    def publish_changes(self, wap_id: str) -> Table:
        """Cherry-pick the snapshot staged under ``wap_id`` (write-audit-publish)."""
        from icepark.table.update import manage_snapshots

        return manage_snapshots.publish_changes(self, wap_id)

    def fast_forward(self, branch: str, to: str) -> Table:
        """Move ``branch`` forward to ref ``to``'s snapshot (a descendant of the branch's)."""
        from icepark.table.update import manage_snapshots

        return manage_snapshots.fast_forward(self, branch, to)

    def replace_branch(self, name: str, to: int | str) -> Table:
        """Point branch ``name`` at snapshot id ``to`` or at ref ``to``'s snapshot."""
        from icepark.table.update import manage_snapshots

        return manage_snapshots.replace_branch(self, name, to)

    def replace_tag(self, name: str, snapshot_id: int) -> Table:
        """Point tag ``name`` at ``snapshot_id``."""
        from icepark.table.update import manage_snapshots

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
        from icepark.table.update import manage_snapshots

        return manage_snapshots.set_ref_retention(
            self,
            name,
            min_snapshots_to_keep=min_snapshots_to_keep,
            max_snapshot_age_ms=max_snapshot_age_ms,
            max_ref_age_ms=max_ref_age_ms,
        )

    # -- upkeep and maintenance (icepark.table.maintenance) ---------------------------------

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
        """Expire old snapshots, then delete the files only they reached; see
        :func:`icepark.table.maintenance.expire_snapshots.expire_snapshots`."""
        from icepark.table.maintenance.expire_snapshots import expire_snapshots

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
        """Delete the files under the table's location that nothing references; see
        :func:`icepark.table.maintenance.remove_orphan_files.remove_orphan_files`."""
        from icepark.table.maintenance.remove_orphan_files import remove_orphan_files

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

    def rewrite_manifests(
        self, spec_id: int | None = None, cluster_by: Sequence[str] | None = None
    ) -> RewriteManifestsResult:
        """Regroup a spec's manifests by partition (one ``replace`` snapshot); see
        :func:`icepark.table.maintenance.rewrite_manifests.rewrite_manifests`."""
        from icepark.table.maintenance.rewrite_manifests import rewrite_manifests

        return rewrite_manifests(self, spec_id, cluster_by)

    def add_files(
        self, paths: str | Sequence[str], check_duplicate_files: bool = True
    ) -> AddFilesResult:
        """Register existing Parquet files (or folders of them) without rewriting them; see
        :func:`icepark.table.maintenance.add_files.add_files`."""
        from icepark.table.maintenance.add_files import add_files

        return add_files(self, paths, check_duplicate_files)
