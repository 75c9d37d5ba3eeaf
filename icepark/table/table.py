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
from icepark.spec.snapshots import MAIN_BRANCH, PartitionStatisticsFile, Snapshot, SnapshotRef
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
    from icepark.table.maintenance.rewrite_table_path import RewriteTablePathResult
    from icepark.table.transaction import Transaction
    from icepark.table.update.schema import UpdateSchema
    from icepark.table.update.sort_order import ReplaceSortOrder
    from icepark.table.update.spec import UpdateSpec

__all__ = ["Table", "ReadOnlyTableError"]


class ReadOnlyTableError(IceparkError):
    """The table was opened from a metadata file and has no catalog to commit through."""


class Table:
    """An Iceberg table: immutable metadata plus the means to read files and commit changes.
    A catalog's ``load_table`` / ``create_table`` (or :meth:`from_metadata`) makes one;
    every change commits through the catalog and replaces ``metadata``.

    Args:
        identifier: the table's name, as a tuple (``("db", "events")``).
        metadata: its current metadata.
        metadata_location: the metadata file ``metadata`` was read from.
        io: the FileIO that reads and writes its files.
        catalog: the catalog commits go through (None: read-only).
    """

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
        """Open any table read-only from one of its ``*.metadata.json`` files, without a catalog
        (the table as that file describes it; reads and time travel work, commits raise
        :class:`ReadOnlyTableError`). Its name is ``static.<last folder of its location>``.

        Args:
            path: the metadata file's location (a local path, ``file://``, ``s3://``...).
            properties: FileIO properties for reaching it (``s3.endpoint``, ``s3.region``,
                credentials, ``io-impl``...).

        Returns:
            A read-only Table.

        Raises:
            NoSuchFileError: the file does not exist.
            InvalidMetadataError: the file is not valid table metadata (naming it).
            ValidationError: the location's scheme is not supported.
            CatalogConfigError: ``io-impl`` names no FileIO class.
        """
        io = load_file_io(properties or {}, path)
        metadata = read_table_metadata(io, path)
        name = metadata.location.rstrip("/").rsplit("/", 1)[-1]
        return cls(("static", name), metadata, path, io, None)

    # -- naming ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The table's identifier as text, ``"db.events"``."""
        return ".".join(self.identifier)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, {self.metadata_location!r})"

    # -- metadata views --------------------------------------------------------------------

    @property
    def format_version(self) -> int:
        """The table's format version: 1, 2 or 3."""
        return self.metadata.format_version

    @property
    def location(self) -> str:
        """The table's base location (its files are under ``<location>/data`` and ``/metadata``)."""
        return self.metadata.location

    @property
    def properties(self) -> dict[str, str]:
        """A copy of the table's properties (change them with :meth:`set_properties`)."""
        return dict(self.metadata.properties)

    def schema(self) -> Schema:
        """The current schema."""
        return self.metadata.schema()

    def schemas(self) -> dict[int, Schema]:
        """Every schema the table has had, by schema id."""
        return {s.schema_id: s for s in self.metadata.schemas}

    def spec(self) -> PartitionSpec:
        """The current (default) partition spec."""
        return self.metadata.spec()

    def specs(self) -> dict[int, PartitionSpec]:
        """Every partition spec the table has had, by spec id."""
        return {s.spec_id: s for s in self.metadata.partition_specs}

    def sort_order(self) -> SortOrder:
        """The current (default) sort order."""
        return self.metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        """The snapshot ``main`` points to, or None for a table never written."""
        return self.metadata.current_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot of id ``snapshot_id``, or None when there is none (or it expired).

        Args:
            snapshot_id: the snapshot's id.

        Returns:
            The :class:`~icepark.spec.snapshots.Snapshot` (its id, parent, time, operation,
            summary and manifest list), or None.
        """
        return self.metadata.snapshot_by_id(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot the metadata keeps, oldest first."""
        return list(self.metadata.snapshots)

    def refs(self) -> dict[str, SnapshotRef]:
        """The branches and tags, by name (``main`` included once written)."""
        return dict(self.metadata.refs)

    def history(self) -> list[Any]:
        """The snapshot log: which snapshot was current from when (``snapshot_id``,
        ``timestamp_ms``), oldest first."""
        return list(self.metadata.snapshot_log)

    @property
    def inspect(self) -> InspectTable:
        """The metadata tables (``table.inspect.files()``, ``.snapshots()``, ...) as Arrow."""
        from icepark.table.inspect import InspectTable

        return InspectTable(self)

    # -- changes ---------------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        """True for a table opened without a catalog (:meth:`from_metadata`)."""
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
        """Commit metadata updates atomically against the metadata this table has loaded, the
        low-level path every change takes: the catalog checks ``requirements`` against the
        table's current metadata, applies ``updates`` and swaps the pointer. Nothing is
        retried here (the writers and :meth:`transaction` retry). This table then holds the
        new metadata.

        Args:
            requirements: REST-shaped requirements (:mod:`icepark.spec.updates`, e.g.
                ``AssertTableUUID``, ``AssertRefSnapshotId``), checked first.
            updates: REST-shaped updates (``SetPropertiesUpdate``, ``AddSnapshotUpdate``,
                ``SetSnapshotRefUpdate``...), applied in order.

        Returns:
            The new metadata.

        Raises:
            ReadOnlyTableError: the table was opened from a metadata file.
            RequirementFailedError: a requirement does not hold (a ``CommitFailedError``, naming
                the table).
            CommitFailedError: the pointer moved before the swap.
            CommitStateUnknownError: the catalog's answer was lost; the commit may have landed.
            ValidationError: an update does not apply to the metadata.
        """
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
        """Append rows as one snapshot (an ``append``; appends never conflict, so they retry
        until ``commit.retry.total-timeout-ms``).

        Args:
            data: a pyarrow Table, RecordBatch, RecordBatchReader or iterable of batches whose
                columns match the table's by name (a missing optional column is written as
                nulls).
            branch: the branch written (``main`` by default); created when it does not exist.
            snapshot_properties: extra entries for the new snapshot's summary.
            wap_id: with ``write.wap.enabled=true``, stage the snapshot under this
                write-audit-publish id instead of making it current.
            merge: let the commit merge small manifests (``commit.manifest-merge.enabled``).
            file_format: ``parquet``, ``avro`` or ``orc`` for this write (default:
                ``write.format.default``).

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), or a
                filter does not parse or bind.
            CommitFailedError: a concurrent commit conflicts and the retries ran out; every
                file written for it is deleted.
            CommitStateUnknownError: the catalog's answer was lost; nothing is deleted.
        """
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
        """Replace the rows matching ``filter`` with ``data`` as one snapshot.

        Args:
            data: the new rows (as for :meth:`append`); with a filter every new row must match
                it.
            filter: an icepark filter (``"day = '2024-01-01'"`` or an expression); None replaces
                the whole table.
            branch: the branch written (``main`` by default); created when it does not exist.
            snapshot_properties: extra entries for the new snapshot's summary.
            wap_id: with ``write.wap.enabled=true``, stage the snapshot under this
                write-audit-publish id instead of making it current.
            case_sensitive: whether column names in ``filter`` match case-sensitively.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), or a
                filter does not parse or bind.
            CommitFailedError: a concurrent commit conflicts and the retries ran out; every
                file written for it is deleted.
            CommitStateUnknownError: the catalog's answer was lost; nothing is deleted.
        """
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
        """Replace every partition ``data`` touches, as one snapshot (Spark's dynamic
        overwrite).

        Args:
            data: the new rows (as for :meth:`append`).
            branch: the branch written (``main`` by default); created when it does not exist.
            snapshot_properties: extra entries for the new snapshot's summary.
            wap_id: with ``write.wap.enabled=true``, stage the snapshot under this
                write-audit-publish id instead of making it current.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), or a
                filter does not parse or bind.
            CommitFailedError: a concurrent commit conflicts and the retries ran out; every
                file written for it is deleted.
            CommitStateUnknownError: the catalog's answer was lost; nothing is deleted.
        """
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
        """Delete the rows matching ``filter`` as one snapshot: files whose rows all match
        are dropped from metadata, the others rewritten (copy-on-write) or given delete files
        (merge-on-read), as ``write.delete.mode`` says.

        Args:
            filter: an icepark filter string or expression.
            branch: the branch written (``main`` by default); created when it does not exist.
            snapshot_properties: extra entries for the new snapshot's summary.
            case_sensitive: whether column names in ``filter`` match case-sensitively.

        Returns:
            This table, with its new metadata (no new snapshot when no row matched).

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), or a
                filter does not parse or bind.
            CommitFailedError: a concurrent commit conflicts and the retries ran out; every
                file written for it is deleted.
            CommitStateUnknownError: the catalog's answer was lost; nothing is deleted.
        """
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
        """Update the rows whose key matches a row of ``data`` and insert the others, as one
        snapshot.

        Args:
            data: the new rows (as for :meth:`append`); keys must be unique in it.
            on: the key columns (default: the schema's identifier fields).
            branch: the branch written (``main`` by default); created when it does not exist.
            snapshot_properties: extra entries for the new snapshot's summary.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), or a
                filter does not parse or bind.
            CommitFailedError: a concurrent commit conflicts and the retries ran out; every
                file written for it is deleted.
            CommitStateUnknownError: the catalog's answer was lost; nothing is deleted.
        """
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
        """Apply change-data-capture rows as one snapshot: insert ``I`` rows, replace the row
        of each ``U`` row's key, delete the row of each ``D`` row's key.

        Args:
            data: the change rows (as for :meth:`append`) plus ``op_column``.
            on: the key columns (default: the schema's identifier fields).
            op_column: the column holding ``I``, ``U`` or ``D``.
            branch: the branch written (``main`` by default); created when it does not exist.
            snapshot_properties: extra entries for the new snapshot's summary.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), or a
                filter does not parse or bind.
            CommitFailedError: a concurrent commit conflicts and the retries ran out; every
                file written for it is deleted.
            CommitStateUnknownError: the catalog's answer was lost; nothing is deleted.
        """
        from icepark.table.write import table_writes

        return table_writes.apply_changes(
            self, data, on, op_column, branch=branch, snapshot_properties=snapshot_properties
        )

    def set_properties(self, properties: dict[str, str] | None = None, **kw: str) -> Table:
        """Set table properties, committed at once.

        Args:
            properties: the properties to set, as strings.
            kw: more properties, for names that are identifiers (``owner="etl"``).

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: a reserved property (``format-version`` is upgraded in SQL).
        """
        from icepark.table.write import table_writes

        return table_writes.set_properties(self, properties, **kw)

    # -- schema, partition spec and sort order (icepark.table.update) ----------------------

    def update_schema(
        self, allow_incompatible_changes: bool = False, case_sensitive: bool = True
    ) -> UpdateSchema:
        """Start a schema change: ``with table.update_schema() as u:`` records changes
        (``add_column``, ``rename_column``, ``update_column``, ``delete_column``,
        ``move_first``/``move_after``/``move_before``, ``set_identifier_fields``,
        ``union_by_name``...) and commits them as one new schema when the block exits cleanly;
        see :class:`icepark.table.update.schema.UpdateSchema`. Each change is checked when it
        is recorded; a concurrent schema change makes the commit retry on the fresh schema.

        Args:
            allow_incompatible_changes: allow changes old readers cannot follow: a required
                column without a default, and making an optional column required.
            case_sensitive: whether column names in the changes match case-sensitively.

        Returns:
            The pending update (a context manager; ``u.commit()`` commits it too).

        Raises:
            ValidationError: (from the recorded calls) a change the schema refuses, naming the
                column; InvalidSchemaError for a column that does not exist.
            CommitFailedError: the commit conflicts and its retries ran out.
        """
        from icepark.table.update.schema import UpdateSchema

        return UpdateSchema(
            self,
            allow_incompatible_changes=allow_incompatible_changes,
            case_sensitive=case_sensitive,
        )

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        """Start a partition spec change: ``with table.update_spec() as u:`` records partition
        fields to add, rename or remove (``u.add_field("day(ts)")``,
        ``u.remove_field("id_bucket")``) and commits the new default spec when the block exits
        cleanly; see :class:`icepark.table.update.spec.UpdateSpec`. Files already written keep
        their spec: nothing is rewritten.

        Args:
            case_sensitive: whether column names in the terms match case-sensitively.

        Returns:
            The pending update (a context manager; ``u.commit()`` commits it too).

        Raises:
            ValidationError: (from the recorded calls) a term that does not parse, a column that
                does not exist, or a field that clashes (InvalidTransformError for a transform
                the column's type does not take).
            CommitFailedError: the commit conflicts and its retries ran out.
        """
        from icepark.table.update.spec import UpdateSpec

        return UpdateSpec(self, case_sensitive=case_sensitive)

    def replace_sort_order(self, *terms: str, case_sensitive: bool = True) -> Table:
        """Make ``terms`` the table's default sort order, committed at once (writers then sort
        new files by it; files already written are not rewritten). With no terms the table
        becomes unsorted. See :func:`icepark.table.update.sort_order.replace`.

        Args:
            *terms: sort terms such as ``"id"``, ``"ts desc nulls last"``,
                ``"bucket(16, id)"``; ascending sorts nulls first by default, descending last.
            case_sensitive: whether column names in the terms match case-sensitively.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: a term that does not parse or names no column, or a transform the
                column's type does not take.
            CommitFailedError: the commit conflicts and its retries ran out.
        """
        from icepark.table.update import sort_order

        return sort_order.replace(self, *terms, case_sensitive=case_sensitive)

    def update_sort_order(self, case_sensitive: bool = True) -> ReplaceSortOrder:
        """Start a sort order change built call by call:
        ``with table.update_sort_order() as u: u.asc("id").desc("ts")`` commits the new
        default sort order when the block exits cleanly; see
        :class:`icepark.table.update.sort_order.ReplaceSortOrder`.

        Args:
            case_sensitive: whether column names in the terms match case-sensitively.

        Returns:
            The pending change (a context manager; ``u.commit()`` commits it too).

        Raises:
            ValidationError: (from the recorded calls) a term that names no column or does not
                parse.
            CommitFailedError: the commit conflicts and its retries ran out.
        """
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
        """A scan of the table's rows: nothing is read until the scan is consumed
        (``to_arrow()``, ``to_batches()``, ``count()``, ``plan_files()``, ``explain()``).

        Args:
            filter: an icepark filter string (``"ts >= '2024-01-01' and id in (1, 2)"``) or an
                expression built with ``icepark.col``; it prunes manifests and files, then rows.
            columns: the columns to read (default: all); metadata columns such as ``_file``
                and ``_pos`` too.
            snapshot_id: read this snapshot (time travel).
            as_of: read the snapshot current at this time (a datetime, a date, or ms since
                the epoch).
            ref: read the head of this branch or tag.
            case_sensitive: whether column names match case-sensitively.
            options: scan options as Java names them (``split-size``, ``lookback``, ...).
            use_snapshot_schema: read with the schema of the snapshot read (default: for
                time travel by id or ref, as Java does) rather than the current one.

        Returns:
            A :class:`~icepark.table.DataScan`.

        Raises:
            ValidationError: the filter does not parse or names an unknown column, or no
                snapshot matches ``snapshot_id``, ``as_of`` or ``ref``.
        """
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
        """A scan of the rows that ``append`` snapshots added between two snapshots of one
        branch's history (Java's ``newIncrementalAppendScan``; Spark's ``start-snapshot-id`` /
        ``end-snapshot-id``); see :mod:`icepark.table.incremental.append_scan`. Rows are
        reported as appended: later deletes are not applied, and overwrites, deletes and
        replaces add nothing. Nothing is read until the scan is consumed (``to_arrow()``,
        ``to_batches()``, ``count()``, ``plan_files()``).

        Args:
            from_snapshot_id: start after this snapshot (default: from the first snapshot);
                it must be an ancestor of the end snapshot.
            to_snapshot_id: end at this snapshot, inclusive (default: the head of ``ref``, or
                the current snapshot).
            from_inclusive: include ``from_snapshot_id``'s own appends.
            filter: an icepark filter string or expression; it prunes files, then rows.
            columns: the columns to read (default: all, with the table's current schema).
            ref: the branch or tag whose history is read.
            case_sensitive: whether column names match case-sensitively.

        Returns:
            An :class:`~icepark.table.incremental.append_scan.IncrementalAppendScan`.

        Raises:
            ValidationError: (when the scan is planned) an unknown snapshot or ref,
                ``from_snapshot_id`` not an ancestor of the end snapshot (naming both), or a
                filter or column that does not bind.
        """
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
        """A scan of the rows each snapshot inserted and deleted, as Java's
        ``create_changelog_view`` procedure gives them (copy-on-write and merge-on-read
        changes alike): the columns asked for plus ``_change_type`` (``INSERT``, ``DELETE``,
        ``UPDATE_BEFORE``, ``UPDATE_AFTER``), ``_change_ordinal`` and ``_commit_snapshot_id``.
        Rows a snapshot rewrote unchanged are left out. See
        :mod:`icepark.table.incremental.changelog`.

        Args:
            from_snapshot_id: report the snapshots after this one (default: from the first).
            to_snapshot_id: up to this snapshot, inclusive (default: the head of ``ref``, or
                the current snapshot).
            filter: an icepark filter string or expression; it prunes files and rows.
            columns: the data columns to report (default: all).
            compute_updates: pair a DELETE and an INSERT of one key in one snapshot into
                ``UPDATE_BEFORE`` / ``UPDATE_AFTER`` rows (the key: ``identifier_columns``, or
                the schema's identifier fields).
            identifier_columns: the key columns for update images; giving them turns
                ``compute_updates`` on, as in Java.
            net_changes: fold each row's changes across the snapshots, reporting only what
                remains (not with update images).
            ref: the branch or tag whose history is read.
            case_sensitive: whether column names match case-sensitively.

        Returns:
            A :class:`~icepark.table.incremental.changelog.ChangelogScan` (``to_arrow()``,
            ``to_batches()``, ``plan_files()``).

        Raises:
            ValidationError: (when the scan is planned) an unknown snapshot or ref, a start that
                is not an ancestor of the end, update images without identifier columns or with
                ``net_changes``, or a filter or column that does not bind.
        """
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
        """Follow the table on one machine: yield the rows each newly committed ``append``
        snapshot adds, in commit order, polling forever (stop by leaving the loop). Other
        snapshots append nothing and are passed over. Without a start, only what is committed
        from now on is yielded. See :mod:`icepark.table.incremental.follow`.

        Args:
            start_snapshot_id: start with this snapshot's own appends, then the ones after it.
            start_timestamp: start at the oldest snapshot committed at or after this time
                (epoch ms or datetime), waiting for one if none is that recent yet.
            interval: seconds between polls.
            filter: an icepark filter string or expression the rows must match.
            columns: the columns to yield (default: all).
            branch: the branch followed (default ``main``).

        Returns:
            An iterator of :class:`~icepark.table.incremental.follow.AppendedBatch`
            (``snapshot_id`` and an Arrow ``batch``).

        Raises:
            ValidationError: (as it is iterated) both starts given, a non-positive interval,
                an unknown start snapshot, or a branch head that moved to a snapshot not
                descending from the last one handled (a rollback), naming both.
            NoSuchTableError: the table was dropped while followed.
        """
        from icepark.table.incremental.follow import follow

        return follow(
            self, start_snapshot_id, start_timestamp, interval, filter, columns, branch=branch
        )

    # -- branches, tags and snapshot management (icepark.table.update.manage_snapshots) ----

    def create_branch(self, name: str, snapshot_id: int | None = None, **retention: Any) -> Table:
        """Create branch ``name`` at a snapshot, committed at once. Write to it with
        ``branch=name`` (``append``, ``overwrite``...) and read it with ``scan(ref=name)``.

        Args:
            name: the new branch's name; no ref of that name may exist.
            snapshot_id: the snapshot it points at (default: the current snapshot).
            **retention: what expiry keeps of it: ``min_snapshots_to_keep``,
                ``max_snapshot_age_ms``, ``max_ref_age_ms``.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: a ref of that name exists, the snapshot is unknown, the table has
                no snapshot yet, or a retention setting is unknown or not positive.
            CommitFailedError: a ref of that name was created meanwhile.
        """
        from icepark.table.update import manage_snapshots

        return manage_snapshots.create_branch(self, name, snapshot_id, **retention)

    def create_tag(self, name: str, snapshot_id: int | None = None, **retention: Any) -> Table:
        """Create tag ``name`` at a snapshot, committed at once; read it with ``scan(ref=name)``.
        Expiry keeps a tagged snapshot while the tag lives.

        Args:
            name: the new tag's name; no ref of that name may exist.
            snapshot_id: the snapshot it points at (default: the current snapshot).
            **retention: ``max_ref_age_ms``, how long the tag itself is kept.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: a ref of that name exists, the snapshot is unknown, the table has
                no snapshot yet, or a retention setting other than ``max_ref_age_ms``.
            CommitFailedError: a ref of that name was created meanwhile.
        """
        from icepark.table.update import manage_snapshots

        return manage_snapshots.create_tag(self, name, snapshot_id, **retention)

    def remove_ref(self, name: str) -> Table:
        """Remove branch or tag ``name``, committed at once; its snapshots stay until expiry.

        Args:
            name: the branch or tag; never ``main``.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: ``name`` is ``main`` or no such ref exists.
            CommitFailedError: a concurrent commit conflicts.
        """
        from icepark.table.update import manage_snapshots

        return manage_snapshots.remove_ref(self, name)

    def rollback_to_snapshot(self, snapshot_id: int) -> Table:
        """Make ``snapshot_id``, an ancestor of the current snapshot, current again (Java's
        ``rollback_to_snapshot``). The snapshots after it stay in the metadata until expiry.

        Args:
            snapshot_id: the snapshot; it must be in the current snapshot's history.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: the snapshot is unknown or not an ancestor of the current one
                (checked again on each commit attempt); nothing is committed.
            CommitFailedError: concurrent commits kept it from committing.
        """
        from icepark.table.update import manage_snapshots

        return manage_snapshots.rollback_to_snapshot(self, snapshot_id)

    def rollback_to_timestamp(self, timestamp: int | dt.datetime | dt.date) -> Table:
        """Make current the newest ancestor of the current snapshot committed strictly before
        ``timestamp`` (Java's ``rollback_to_timestamp``).

        Args:
            timestamp: epoch milliseconds, a datetime (naive means UTC) or a date.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: no ancestor is that old; nothing is committed.
            CommitFailedError: concurrent commits kept it from committing.
        """
        from icepark.table.update import manage_snapshots

        return manage_snapshots.rollback_to_timestamp(self, timestamp)

    def set_current_snapshot(self, snapshot_id: int | None = None, ref: str | None = None) -> Table:
        """Make a snapshot current, ancestor or not (Java's ``set_current_snapshot``): give
        either ``snapshot_id`` or ``ref``.

        Args:
            snapshot_id: the snapshot to make current.
            ref: a branch or tag whose snapshot becomes current.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: both or neither given, an unknown snapshot or ref; nothing is
                committed.
            CommitFailedError: concurrent commits kept it from committing.
        """
        from icepark.table.update import manage_snapshots

        return manage_snapshots.set_current_snapshot(self, snapshot_id, ref)

    def cherrypick_snapshot(self, snapshot_id: int) -> Table:
        """Apply one snapshot's changes to the current state as one commit (Java's
        ``cherrypick_snapshot``): a snapshot whose parent is the current one is fast-forwarded
        to; an ``append`` is re-applied as a new snapshot adding the same files; a dynamic
        overwrite is re-applied when nothing since its parent touched its partitions. See
        :mod:`icepark.table.update.manage_snapshots`.

        Args:
            snapshot_id: the snapshot to pick, e.g. one staged with ``wap_id`` or the head of
                another branch.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: the snapshot is unknown, its operation cannot be picked, or an
                overwrite's partitions changed since; CherrypickAncestorCommitError when it is
                in the current history already, DuplicateWAPCommitError when its WAP id was
                published before. Nothing is committed.
            CommitFailedError: concurrent commits kept it from committing.
        """
        from icepark.table.update import manage_snapshots

        return manage_snapshots.cherrypick_snapshot(self, snapshot_id)

    def publish_changes(self, wap_id: str) -> Table:
        """Publish the snapshot staged under write-audit-publish id ``wap_id`` (written with
        ``write.wap.enabled=true`` and ``wap_id=...``): cherry-pick it onto ``main``
        (:meth:`cherrypick_snapshot`; Spark's ``publish_changes``).

        Args:
            wap_id: the id the snapshot was staged under.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: no snapshot was staged under ``wap_id``, or the cherry-pick is
                refused (DuplicateWAPCommitError: published before).
            CommitFailedError: concurrent commits kept it from committing.
        """
        from icepark.table.update import manage_snapshots

        return manage_snapshots.publish_changes(self, wap_id)

    def fast_forward(self, branch: str, to: str) -> Table:
        """Move ``branch`` forward to the snapshot of ref ``to``, which must descend from the
        branch's snapshot (Java's ``fast_forward``); a missing branch is created at ``to``.

        Args:
            branch: the branch moved (``main`` too).
            to: the branch or tag whose snapshot it moves to.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: ``to`` does not exist, ``branch`` is a tag, or its snapshot is not
                an ancestor of ``to``'s; nothing is committed.
            CommitFailedError: concurrent commits kept it from committing.
        """
        from icepark.table.update import manage_snapshots

        return manage_snapshots.fast_forward(self, branch, to)

    def replace_branch(self, name: str, to: int | str) -> Table:
        """Point branch ``name`` at any snapshot, ancestor or not, keeping its retention (Java's
        ``replaceBranch``).

        Args:
            name: the branch; it must exist when ``to`` is a snapshot id (with a ref name a
                missing branch is created, as in Java).
            to: a snapshot id, or the name of a branch or tag whose snapshot it points at.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: an unknown snapshot or ref, a missing branch, or ``name`` is a
                tag; nothing is committed.
            CommitFailedError: concurrent commits kept it from committing.
        """
        from icepark.table.update import manage_snapshots

        return manage_snapshots.replace_branch(self, name, to)

    def replace_tag(self, name: str, snapshot_id: int) -> Table:
        """Point tag ``name`` at ``snapshot_id``, keeping its retention (Java's ``replaceTag``).

        Args:
            name: the tag; it must exist.
            snapshot_id: the snapshot it points at.

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: an unknown snapshot, no such tag, or ``name`` is a branch; nothing
                is committed.
            CommitFailedError: concurrent commits kept it from committing.
        """
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
        """Set what expiry keeps of branch or tag ``name``; only the settings given change.

        Args:
            name: the branch or tag.
            min_snapshots_to_keep: (branches) keep at least this many snapshots of its history.
            max_snapshot_age_ms: (branches) keep its snapshots younger than this.
            max_ref_age_ms: expire the ref itself when its snapshot is older than this (never
                ``main``).

        Returns:
            This table, with its new metadata.

        Raises:
            ValidationError: no such ref, a value that is not positive, or a branch-only
                setting on a tag; nothing is committed.
            CommitFailedError: concurrent commits kept it from committing.
        """
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
        """Expire old snapshots, then delete the files only they reached (Java's rules and
        defaults): commit first, delete after, in parallel.

        Args:
            older_than: expire snapshots older than this (default: now minus
                ``history.expire.max-snapshot-age-ms``).
            retain_last: keep at least this many snapshots of each branch (default:
                ``history.expire.min-snapshots-to-keep``).
            snapshot_ids: expire exactly these snapshots instead.
            clean_expired_metadata: also remove partition specs and schemas no snapshot
                uses any more.
            dry_run: commit nothing and delete nothing; report what would go.
            progress: called with (done, total) as files are deleted.

        Returns:
            Java's six counts of deleted files (data, position and equality delete files,
            manifests, manifest lists, statistics files), plus what was expired.

        Raises:
            ValidationError: ``gc.enabled`` is false, or a snapshot id is unknown or current.
            CommitFailedError: the expiry could not be committed; nothing is deleted.
        """
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
        """Delete the files under the table's location that none of its metadata references
        (no metadata file, snapshot, manifest or ref) and that were last modified before
        ``older_than`` (Java's ``remove_orphan_files``). Listing and deleting run here; for
        millions of files ``icepark.spark.remove_orphan_files`` lists and compares on Spark.
        See :mod:`icepark.table.maintenance.remove_orphan_files` for how it flows.

        Args:
            older_than: only files last modified before this (epoch ms, datetime or date) are
                candidates; default 3 days ago. Less than 24 hours ago is refused unless
                ``allow_recent``: a write in flight has files no metadata references yet.
            location: the folder to clean (default: the table's location); it must be inside
                the table's location.
            dry_run: find the orphans and delete nothing.
            equal_schemes: schemes to treat as one, as Java's ``equal_schemes``
                (``{"s3a,s3n": "s3"}``; ``s3a`` and ``s3n`` are ``s3`` already).
            equal_authorities: authorities (buckets, hosts) to treat as one, the same way.
            prefix_mismatch_mode: what to do with a listed file referenced only under another
                scheme or authority: ``"error"`` (refuse), ``"ignore"`` (keep it) or
                ``"delete"``.
            allow_recent: allow an ``older_than`` less than 24 hours ago.
            progress: called with ``(done, total)`` as orphans are deleted.

        Returns:
            The orphans found (``orphan_file_locations``, ``orphan_bytes``) and what was deleted
            (``deleted``) or failed (``failed``, path to reason); as a sequence, the paths
            deleted (on a dry run, the orphans). A failed delete is reported, never raised.

        Raises:
            ValidationError: ``gc.enabled`` is false, ``older_than`` is in the future or too
                recent, ``location`` is outside the table, or the mode is unknown.
            PrefixMismatchError: (a ValidationError) with mode ``"error"``, listed files match
                referenced ones but for their scheme or authority; nothing is deleted.
        """
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
        self,
        spec_id: int | None = None,
        cluster_by: Sequence[str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
    ) -> RewriteManifestsResult:
        """Regroup a partition spec's manifests by partition as one ``replace`` snapshot, data
        unchanged (Java's ``rewrite_manifests``): fewer, well-clustered manifests prune
        better. Nothing is committed when each content already has one manifest that fits
        ``commit.manifest.target-size-bytes``. See
        :mod:`icepark.table.maintenance.rewrite_manifests`.

        Args:
            spec_id: the spec whose manifests are rewritten (default: the table's current spec).
            cluster_by: partition field names to cluster entries by (default: all of them, in
                order; Java's ``sortBy``).
            branch: the branch whose manifests are rewritten (Java's ``toBranch``; nothing
                happens on a branch that does not exist).

        Returns:
            Java's columns: ``rewritten_manifests_count`` and ``added_manifests_count`` (zero
            when nothing needed rewriting).

        Raises:
            ValidationError: an unknown spec id or a ``cluster_by`` name that is not one of its
                partition fields.
            CommitStateUnknownError: the catalog's answer was lost.
        """
        from icepark.table.maintenance.rewrite_manifests import rewrite_manifests

        return rewrite_manifests(self, spec_id, cluster_by, branch=branch)

    def compute_partition_stats(
        self, snapshot_id: int | None = None
    ) -> PartitionStatisticsFile | None:
        """Compute, write and register the partition statistics file of a snapshot (Java's
        ``compute_partition_stats``): per partition, its data and delete record and file
        counts and last update. See :mod:`icepark.table.maintenance.partition_stats`.

        Args:
            snapshot_id: the snapshot (default: the current one). One that has a file
                already keeps it.

        Returns:
            The registered file, or None for a table without snapshots.

        Raises:
            ValidationError: the table is not partitioned, or has no such snapshot.
            CommitStateUnknownError: the catalog's answer was lost.
        """
        from icepark.table.maintenance.partition_stats import compute_partition_stats

        return compute_partition_stats(self, snapshot_id)

    def rewrite_table_path(
        self,
        source_prefix: str,
        target_prefix: str,
        *,
        start_version: str | None = None,
        end_version: str | None = None,
        staging_location: str | None = None,
    ) -> RewriteTablePathResult:
        """Stage a copy of the table's metadata with every path under ``source_prefix`` moved
        under ``target_prefix``, and the list of files to copy there (Java's
        ``rewrite_table_path``); nothing of the table changes. Copy each ``source,target``
        line of the file list, then register ``latest_metadata_location``. See
        :mod:`icepark.table.maintenance.rewrite_table_path`.

        Args:
            source_prefix: the prefix to replace (e.g. the table's location).
            target_prefix: what replaces it.
            start_version: a metadata file name of the metadata log: only the versions after
                it are rewritten, and only the files added since are listed (default: all).
            end_version: the last version to rewrite (default: the current metadata file).
            staging_location: where the rewritten files go (default: a new
                ``copy-table-staging-<uuid>/`` folder beside the current metadata file).

        Returns:
            ``latest_version`` (the end version's file name), ``file_list_location``,
            ``staging_location`` and ``latest_metadata_location`` (the end version at the
            target).

        Raises:
            ValidationError: an empty or equal prefix, a version not in the metadata log, a
                path not under ``source_prefix`` (named); what was staged is removed.
        """
        from icepark.table.maintenance.rewrite_table_path import rewrite_table_path

        return rewrite_table_path(
            self,
            source_prefix,
            target_prefix,
            start_version=start_version,
            end_version=end_version,
            staging_location=staging_location,
        )

    def add_files(
        self, paths: str | Sequence[str], check_duplicate_files: bool = True
    ) -> AddFilesResult:
        """Register existing Parquet files (or folders of them) in the table without rewriting
        them, as one ``append`` snapshot (Java's ``add_files``). Hive-style ``key=value``
        folders give partition values; files without Iceberg field ids are read through a name
        mapping, which is committed with them when needed. The files become the table's; they
        are never deleted by this call. See :mod:`icepark.table.maintenance.add_files`
        (``icepark.spark.add_files`` reads the footers on Spark).

        Args:
            paths: a Parquet file or folder, or several; folders are searched recursively
                (names starting with ``_`` or ``.`` are skipped).
            check_duplicate_files: refuse files the table already references or that are given
                twice.

        Returns:
            Java's columns: ``added_files_count`` and ``changed_partition_count``.

        Raises:
            ValidationError: no Parquet file found, a file's columns or partition values do not
                fit the table (naming the file and column), or a file already referenced;
                nothing is committed.
            CommitFailedError: a concurrent commit conflicts (e.g. added the same files).
        """
        from icepark.table.maintenance.add_files import add_files

        return add_files(self, paths, check_duplicate_files)
