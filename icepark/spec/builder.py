"""MetadataBuilder: the only way table metadata changes, following Java's TableMetadata.Builder.

A builder starts from the current metadata (or from nothing, to create a table), applies
REST-shaped :class:`~icepark.spec.updates.TableUpdate` objects (or the typed methods that
record them), and ``build()``s the new :class:`~icepark.spec.metadata.TableMetadata`.
``updates`` lists the changes as applied, normalised as Java records them (new ids filled in,
``-1`` for "last added"), ready to send to a REST catalog.

Updates apply in the order a client sends them, with Java's rules: a spec or sort order binds
against the current schema, and a new table's builder counts schema, spec and sort order 0 as
current until one is set (Java's builder starts with those ids), so DuckDB's create (add-schema,
add-spec, add-sort-order, ..., set-current-schema last) binds its spec to the schema it added;
``-1`` means "the one added last"; a REST ``add-schema``'s ``last-column-id`` never lowers the
table's (Java ignores it and keeps the highest id seen).
"""

from __future__ import annotations

import time
import uuid as uuid_module
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from icepark.errors import ValidationError
from icepark.spec import properties as P
from icepark.spec import updates as up
from icepark.spec._compat import (
    add_previous_file,
    check_schema_compatibility,
    check_sort_order_compatibility,
    check_spec_compatibility,
    has_sequential_ids,
    update_snapshot_log,
)
from icepark.spec.locations import check_location, check_location_properties
from icepark.spec.metadata import (
    DEFAULT_FORMAT_VERSION,
    MIN_FORMAT_VERSION_ROW_LINEAGE,
    SUPPORTED_FORMAT_VERSION,
    TableMetadata,
)
from icepark.spec.partitioning import INITIAL_SPEC_ID, PARTITION_DATA_ID_START, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import (
    MAIN_BRANCH,
    MetadataLogEntry,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    StatisticsFile,
)
from icepark.spec.sorting import UNSORTED_ORDER, UNSORTED_ORDER_ID, SortOrder
from icepark.spec.updates import LAST_ADDED, TableUpdate

__all__ = [
    "MetadataBuilder",
]

_INITIAL_SORT_ORDER_ID = 1
_INITIAL_SCHEMA_ID = 0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MetadataBuilder:
    """Applies table updates to a base metadata (None: a new table) and builds the result.

    Typed methods return the builder for chaining; each records the update it applied in
    :attr:`updates`. Errors are :class:`~icepark.errors.ValidationError`.
    """

    def __init__(self, base: TableMetadata | None = None, *, format_version: int | None = None):
        self._base = base
        self._changes: list[TableUpdate] = []
        self._last_updated_ms: int | None = None
        self._previous_location: str | None = None
        self._previous_max_entries: int | None = None
        self._last_added_schema_id: int | None = None
        self._last_added_spec_id: int | None = None
        self._last_added_order_id: int | None = None
        self._added_schema_ids: set[int] = set()
        self._added_spec_ids: set[int] = set()
        self._added_order_ids: set[int] = set()
        self._added_snapshot_ids: set[int] = set()
        if base is None:
            version = DEFAULT_FORMAT_VERSION if format_version is None else format_version
            _check_version(version)
        elif format_version is not None and format_version != base.format_version:
            raise ValidationError("format_version applies only to new tables (base is None)")
        else:
            version = base.format_version
        b = base
        self._format_version = version
        self._uuid = b.table_uuid if b else str(uuid_module.uuid4())
        self._location: str | None = b.location if b else None
        self._last_sequence_number = b.last_sequence_number if b else 0
        self._last_column_id = b.last_column_id if b else 0
        self._schemas: list[Schema] = list(b.schemas) if b else []
        self._current_schema_id = b.current_schema_id if b else -1
        self._specs: list[PartitionSpec] = list(b.partition_specs) if b else []
        self._default_spec_id = b.default_spec_id if b else -1
        self._last_partition_id = b.last_partition_id if b else PARTITION_DATA_ID_START - 1
        self._sort_orders: list[SortOrder] = list(b.sort_orders) if b else []
        self._default_sort_order_id = b.default_sort_order_id if b else -1
        self._properties: dict[str, str] = dict(b.properties) if b else {}
        self._current_snapshot_id: int | None = b.current_snapshot_id if b else None
        self._snapshots: list[Snapshot] = list(b.snapshots) if b else []
        self._snapshot_index = {s.snapshot_id: s for s in self._snapshots}
        self._refs: dict[str, SnapshotRef] = dict(b.refs) if b else {}
        self._statistics = {s.snapshot_id: s for s in (b.statistics if b else ())}
        self._partition_statistics = {
            s.snapshot_id: s for s in (b.partition_statistics if b else ())
        }
        self._snapshot_log: list[SnapshotLogEntry] = list(b.snapshot_log) if b else []
        self._metadata_log: list[MetadataLogEntry] = list(b.metadata_log) if b else []
        self._next_row_id: int | None = (
            b.next_row_id if b else (0 if version >= MIN_FORMAT_VERSION_ROW_LINEAGE else None)
        )

    # -- introspection -----------------------------------------------------------------------

    @property
    def updates(self) -> list[TableUpdate]:
        """The updates applied so far, in order (as REST ``TableUpdate`` objects)."""
        return list(self._changes)

    @property
    def has_changes(self) -> bool:
        return bool(self._changes)

    @property
    def format_version(self) -> int:
        return self._format_version

    @property
    def last_added_schema_id(self) -> int | None:
        return self._last_added_schema_id

    @property
    def last_added_spec_id(self) -> int | None:
        return self._last_added_spec_id

    @property
    def last_added_sort_order_id(self) -> int | None:
        return self._last_added_order_id

    def _schema_by_id(self, schema_id: int) -> Schema | None:
        return next((s for s in self._schemas if s.schema_id == schema_id), None)

    def _snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return self._snapshot_index.get(snapshot_id)

    def _current_id(self, chosen: int, initial: int) -> int:
        """The id in force: the one set, else (a new table's builder) Java's initial id."""
        return initial if chosen == -1 and self._base is None else chosen

    def _current_schema(self, doing: str) -> Schema:
        """The schema a spec or sort order binds against: the current one; before a new
        table sets one, schema 0 (the first added), as Java's builder."""
        schema = self._schema_by_id(self._current_id(self._current_schema_id, _INITIAL_SCHEMA_ID))
        if schema is None:
            raise ValidationError(f"Cannot {doing} before a schema is added")
        return schema

    # -- apply -------------------------------------------------------------------------------

    def apply(self, update: TableUpdate) -> MetadataBuilder:
        """Apply one REST-shaped update."""
        handler = _HANDLERS.get(type(update))
        if handler is None:
            raise ValidationError(f"Cannot apply unsupported update: {update!r}")
        handler(self, update)
        return self

    def apply_all(self, updates: Iterable[TableUpdate]) -> MetadataBuilder:
        """Apply updates in order. Creating a table, the format version asked for anywhere in
        the list is set first (as Java's REST handlers do), so schemas are checked against it."""
        updates = list(updates)
        if self._base is None and not self._changes:
            version = next(
                (u for u in updates if isinstance(u, up.UpgradeFormatVersionUpdate)), None
            )
            if version is not None:
                self.upgrade_format_version(version.format_version)
        for update in updates:
            self.apply(update)
        return self

    # -- identity and version ----------------------------------------------------------------

    def assign_uuid(self, table_uuid: str) -> MetadataBuilder:
        try:
            uuid_module.UUID(table_uuid)
        except (ValueError, TypeError, AttributeError):
            raise ValidationError(f"Invalid table UUID: {table_uuid!r}") from None
        if table_uuid != self._uuid:
            self._uuid = table_uuid
            self._changes.append(up.AssignUUIDUpdate(table_uuid))
        return self

    def upgrade_format_version(self, format_version: int) -> MetadataBuilder:
        if format_version > SUPPORTED_FORMAT_VERSION:
            raise ValidationError(
                f"Cannot upgrade table to unsupported format version: v{format_version} "
                f"(supported: v{SUPPORTED_FORMAT_VERSION})"
            )
        fresh = self._base is None and not self._schemas and not self._snapshots
        if format_version < 1 or (format_version < self._format_version and not fresh):
            raise ValidationError(
                f"Cannot downgrade v{self._format_version} table to v{format_version}"
            )
        if format_version == self._format_version:
            return self
        self._format_version = format_version
        if format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE:
            if self._next_row_id is None:
                self._next_row_id = 0
        else:
            self._next_row_id = None
        self._changes.append(up.UpgradeFormatVersionUpdate(format_version))
        return self

    # -- schemas -----------------------------------------------------------------------------

    def add_schema(self, schema: Schema, last_column_id: int | None = None) -> MetadataBuilder:
        """Add a schema (reusing the id of an identical one); see ``last_added_schema_id``."""
        if last_column_id is not None and last_column_id < self._last_column_id:
            raise ValidationError(
                f"Invalid last column ID: {last_column_id} < {self._last_column_id} "
                "(previous last column ID)"
            )
        new_last = max(self._last_column_id, schema.highest_field_id, last_column_id or 0)
        check_schema_compatibility(schema, self._format_version)
        existing = next((s for s in self._schemas if s.same_structure(schema)), None)
        if existing is not None:
            new_id = existing.schema_id
        else:
            new_id = max((s.schema_id for s in self._schemas), default=-1) + 1
        self._last_added_schema_id = new_id
        if existing is not None and new_last == self._last_column_id:
            return self
        self._last_column_id = new_last
        new_schema = schema if schema.schema_id == new_id else schema.with_schema_id(new_id)
        if existing is None:
            self._schemas.append(new_schema)
        self._added_schema_ids.add(new_id)
        self._changes.append(up.AddSchemaUpdate(new_schema, new_last))
        return self

    def set_current_schema(self, schema_id: int) -> MetadataBuilder:
        """Make a schema current; ``-1`` means the schema added last."""
        if schema_id == LAST_ADDED:
            if self._last_added_schema_id is None:
                raise ValidationError("Cannot set last added schema: no schema has been added")
            schema_id = self._last_added_schema_id
        if schema_id == self._current_schema_id:
            return self
        if self._schema_by_id(schema_id) is None:
            raise ValidationError(f"Cannot set current schema to unknown schema: {schema_id}")
        self._current_schema_id = schema_id
        recorded = LAST_ADDED if schema_id in self._added_schema_ids else schema_id
        self._changes.append(up.SetCurrentSchemaUpdate(recorded))
        return self

    def remove_schemas(self, schema_ids: Iterable[int]) -> MetadataBuilder:
        to_remove = list(dict.fromkeys(schema_ids))
        if self._current_schema_id in to_remove:
            raise ValidationError("Cannot remove the current schema")
        if to_remove:
            self._schemas = [s for s in self._schemas if s.schema_id not in to_remove]
            self._changes.append(up.RemoveSchemasUpdate(tuple(to_remove)))
        return self

    # -- partition specs ---------------------------------------------------------------------

    def add_partition_spec(self, spec: PartitionSpec) -> MetadataBuilder:
        """Add a spec (reusing the id of a compatible one); see ``last_added_spec_id``."""
        existing = next((s for s in self._specs if spec.compatible_with(s)), None)
        if existing is not None:
            self._last_added_spec_id = existing.spec_id
            return self
        schema = self._current_schema("add a partition spec")
        check_spec_compatibility(spec, schema)
        if self._format_version == 1 and not has_sequential_ids(spec):
            raise ValidationError(
                f"Spec does not use sequential IDs that are required in v1: {spec}"
            )
        new_id = max((s.spec_id for s in self._specs), default=-1) + 1
        new_spec = PartitionSpec(new_id, spec.fields)
        self._last_partition_id = max(self._last_partition_id, new_spec.last_assigned_field_id)
        self._specs.append(new_spec)
        self._added_spec_ids.add(new_id)
        self._last_added_spec_id = new_id
        self._changes.append(up.AddPartitionSpecUpdate(new_spec))
        return self

    def set_default_spec(self, spec_id: int) -> MetadataBuilder:
        """Make a spec the default; ``-1`` means the spec added last."""
        if spec_id == LAST_ADDED:
            if self._last_added_spec_id is None:
                raise ValidationError("Cannot set last added spec: no spec has been added")
            spec_id = self._last_added_spec_id
        if spec_id == self._default_spec_id:
            return self
        if all(s.spec_id != spec_id for s in self._specs):
            raise ValidationError(f"Cannot set default partition spec to unknown spec: {spec_id}")
        self._default_spec_id = spec_id
        recorded = LAST_ADDED if spec_id in self._added_spec_ids else spec_id
        self._changes.append(up.SetDefaultSpecUpdate(recorded))
        return self

    def remove_partition_specs(self, spec_ids: Iterable[int]) -> MetadataBuilder:
        to_remove = list(dict.fromkeys(spec_ids))
        if self._default_spec_id in to_remove:
            raise ValidationError("Cannot remove the default partition spec")
        if to_remove:
            self._specs = [s for s in self._specs if s.spec_id not in to_remove]
            self._changes.append(up.RemovePartitionSpecsUpdate(tuple(to_remove)))
        return self

    # -- sort orders -------------------------------------------------------------------------

    def add_sort_order(self, order: SortOrder) -> MetadataBuilder:
        """Add a sort order (unsorted is always id 0; an identical order keeps its id)."""
        if order.is_unsorted:
            new_id = UNSORTED_ORDER_ID
        else:
            existing = next((o for o in self._sort_orders if o.same_order(order)), None)
            if existing is not None:
                new_id = existing.order_id
            else:
                highest = max((o.order_id for o in self._sort_orders), default=0)
                new_id = max(_INITIAL_SORT_ORDER_ID, highest + 1)
        self._last_added_order_id = new_id
        if any(o.order_id == new_id for o in self._sort_orders):
            return self
        if not order.is_unsorted:
            check_sort_order_compatibility(order, self._current_schema("add a sort order"))
        new_order = UNSORTED_ORDER if order.is_unsorted else SortOrder(new_id, order.fields)
        self._sort_orders.append(new_order)
        self._added_order_ids.add(new_id)
        self._changes.append(up.AddSortOrderUpdate(new_order))
        return self

    def set_default_sort_order(self, order_id: int) -> MetadataBuilder:
        """Make a sort order the default; ``-1`` means the order added last."""
        if order_id == LAST_ADDED:
            if self._last_added_order_id is None:
                raise ValidationError(
                    "Cannot set last added sort order: no sort order has been added"
                )
            order_id = self._last_added_order_id
        if order_id == self._default_sort_order_id:
            return self
        if all(o.order_id != order_id for o in self._sort_orders):
            raise ValidationError(f"Cannot set default sort order to unknown order: {order_id}")
        self._default_sort_order_id = order_id
        recorded = LAST_ADDED if order_id in self._added_order_ids else order_id
        self._changes.append(up.SetDefaultSortOrderUpdate(recorded))
        return self

    # -- snapshots and refs ------------------------------------------------------------------

    def add_snapshot(self, snapshot: Snapshot) -> MetadataBuilder:
        if not self._schemas:
            raise ValidationError("Attempting to add a snapshot before a schema is added")
        if not self._specs:
            raise ValidationError("Attempting to add a snapshot before a partition spec is added")
        if not self._sort_orders:
            raise ValidationError("Attempting to add a snapshot before a sort order is added")
        if self._snapshot_by_id(snapshot.snapshot_id) is not None:
            raise ValidationError(f"Snapshot already exists for id: {snapshot.snapshot_id}")
        if self._format_version == 1:
            if snapshot.sequence_number != 0:
                raise ValidationError(
                    f"Sequence number must be 0 in v1: {snapshot.sequence_number}"
                )
        elif snapshot.sequence_number <= self._last_sequence_number:
            raise ValidationError(
                f"Cannot add snapshot with sequence number {snapshot.sequence_number} older than "
                f"last sequence number {self._last_sequence_number}"
            )
        if self._format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE:
            next_row_id = self._next_row_id or 0
            if snapshot.first_row_id is None:
                raise ValidationError("Cannot add a snapshot: first-row-id is null")
            if snapshot.first_row_id < next_row_id:
                raise ValidationError(
                    "Cannot add a snapshot, first-row-id is behind table next-row-id: "
                    f"{snapshot.first_row_id} < {next_row_id}"
                )
            if snapshot.added_rows is None:
                raise ValidationError("Cannot add a snapshot: added-rows is null")
            # Java adds added-rows to next-row-id; when first-row-id skipped ahead that would
            # hand out ids already used, so count from first-row-id (equal in the usual case)
            self._next_row_id = snapshot.first_row_id + snapshot.added_rows
        self._last_updated_ms = snapshot.timestamp_ms
        self._last_sequence_number = snapshot.sequence_number
        self._snapshots.append(snapshot)
        self._snapshot_index[snapshot.snapshot_id] = snapshot
        self._added_snapshot_ids.add(snapshot.snapshot_id)
        self._changes.append(up.AddSnapshotUpdate(snapshot))
        return self

    def set_ref(self, name: str, ref: SnapshotRef) -> MetadataBuilder:
        """Create or move a branch or tag; ``main`` also sets the current snapshot."""
        if self._refs.get(name) == ref:
            return self
        snapshot = self._snapshot_by_id(ref.snapshot_id)
        if snapshot is None:
            raise ValidationError(f"Cannot set {name} to unknown snapshot: {ref.snapshot_id}")
        if name == MAIN_BRANCH and not ref.is_branch:
            raise ValidationError("Cannot set main to a tag: main must be a branch")
        if snapshot.snapshot_id in self._added_snapshot_ids:
            self._last_updated_ms = snapshot.timestamp_ms
        if name == MAIN_BRANCH:
            self._current_snapshot_id = ref.snapshot_id
            if self._last_updated_ms is None:
                self._last_updated_ms = _now_ms()
            self._snapshot_log.append(SnapshotLogEntry(ref.snapshot_id, self._last_updated_ms))
        self._refs[name] = ref
        self._changes.append(up.SetSnapshotRefUpdate.of(name, ref))
        return self

    def set_branch_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> MetadataBuilder:
        """Point a branch at a snapshot, keeping the branch's retention settings."""
        existing = self._refs.get(branch)
        if existing is not None:
            if not existing.is_branch:
                raise ValidationError(f"Cannot update branch: {branch} is a tag")
            if existing.snapshot_id == snapshot_id:
                return self
        snapshot = self._snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise ValidationError(f"Cannot set {branch} to unknown snapshot: {snapshot_id}")
        if self._format_version > 1 and snapshot.sequence_number > self._last_sequence_number:
            raise ValidationError(
                f"Last sequence number {self._last_sequence_number} is less than existing "
                f"snapshot sequence number {snapshot.sequence_number}"
            )
        if existing is None:
            ref = SnapshotRef(snapshot_id)
        else:
            ref = SnapshotRef(
                snapshot_id,
                existing.type,
                existing.min_snapshots_to_keep,
                existing.max_snapshot_age_ms,
                existing.max_ref_age_ms,
            )
        return self.set_ref(branch, ref)

    def remove_ref(self, name: str) -> MetadataBuilder:
        if name == MAIN_BRANCH:
            self._current_snapshot_id = None
        if self._refs.pop(name, None) is not None:
            self._changes.append(up.RemoveSnapshotRefUpdate(name))
        return self

    def remove_snapshots(self, snapshot_ids: Iterable[int]) -> MetadataBuilder:
        """Drop snapshots, their statistics, and the refs left pointing at nothing."""
        to_remove = set(snapshot_ids)
        removed = [s.snapshot_id for s in self._snapshots if s.snapshot_id in to_remove]
        if not removed:
            return self
        self._snapshots = [s for s in self._snapshots if s.snapshot_id not in to_remove]
        self._snapshot_index = {s.snapshot_id: s for s in self._snapshots}
        self._changes.append(up.RemoveSnapshotsUpdate(tuple(removed)))
        for snapshot_id in removed:
            self.remove_statistics(snapshot_id)
            self.remove_partition_statistics(snapshot_id)
        remaining = {s.snapshot_id for s in self._snapshots}
        for name in [n for n, r in self._refs.items() if r.snapshot_id not in remaining]:
            self.remove_ref(name)
        return self

    # -- location and properties -------------------------------------------------------------

    def set_location(self, location: str) -> MetadataBuilder:
        if location != self._location:
            check_location(location, "Table location")
            self._location = location
            self._changes.append(up.SetLocationUpdate(location))
        return self

    def set_properties(self, updates: Mapping[str, str]) -> MetadataBuilder:
        if updates:
            for key, value in updates.items():
                if not isinstance(key, str) or not isinstance(value, str):
                    raise ValidationError(f"Table properties must be strings: {key!r}={value!r}")
            check_location_properties(updates, "Table")
            self._properties.update(updates)
            self._changes.append(up.SetPropertiesUpdate(dict(updates)))
        return self

    def remove_properties(self, removals: Iterable[str]) -> MetadataBuilder:
        keys = tuple(dict.fromkeys(removals))
        if keys:
            for key in keys:
                self._properties.pop(key, None)
            self._changes.append(up.RemovePropertiesUpdate(keys))
        return self

    # -- statistics --------------------------------------------------------------------------

    def set_statistics(self, statistics: StatisticsFile) -> MetadataBuilder:
        self._statistics[statistics.snapshot_id] = statistics
        self._changes.append(up.SetStatisticsUpdate(statistics))
        return self

    def remove_statistics(self, snapshot_id: int) -> MetadataBuilder:
        if self._statistics.pop(snapshot_id, None) is not None:
            self._changes.append(up.RemoveStatisticsUpdate(snapshot_id))
        return self

    def set_partition_statistics(self, statistics: PartitionStatisticsFile) -> MetadataBuilder:
        self._partition_statistics[statistics.snapshot_id] = statistics
        self._changes.append(up.SetPartitionStatisticsUpdate(statistics))
        return self

    def remove_partition_statistics(self, snapshot_id: int) -> MetadataBuilder:
        if self._partition_statistics.pop(snapshot_id, None) is not None:
            self._changes.append(up.RemovePartitionStatisticsUpdate(snapshot_id))
        return self

    # -- metadata log and build ----------------------------------------------------------------

    def with_previous_metadata(
        self, location: str, max_entries: int | None = None
    ) -> MetadataBuilder:
        """Log the base's metadata file (``location``) in the new metadata's ``metadata-log``.

        The log keeps at most ``max_entries`` entries (default: the table property
        ``write.metadata.previous-versions-max``, else 100), dropping the oldest. Nothing is
        logged when the builder has no base or no changes.
        """
        self._previous_location = location
        self._previous_max_entries = max_entries
        return self

    def _metadata_history(self) -> list[MetadataLogEntry]:
        if self._base is None or self._previous_location is None:
            return list(self._metadata_log)
        max_entries = self._previous_max_entries
        if max_entries is None:
            try:  # a bad value must not block every later commit: the default then
                max_entries = P.METADATA_PREVIOUS_VERSIONS_MAX.get(self._properties)
            except ValidationError:
                max_entries = P.METADATA_PREVIOUS_VERSIONS_MAX.default
        return add_previous_file(
            self._metadata_log, self._previous_location, self._base.last_updated_ms, max_entries
        )

    def _snapshot_history(self) -> list[SnapshotLogEntry]:
        intermediate: set[int] = set()
        added: set[int] = set()
        for change in self._changes:
            if isinstance(change, up.AddSnapshotUpdate):
                added.add(change.snapshot.snapshot_id)
            elif isinstance(change, up.SetSnapshotRefUpdate) and change.ref_name == MAIN_BRANCH:
                if change.snapshot_id in added and change.snapshot_id != self._current_snapshot_id:
                    intermediate.add(change.snapshot_id)
        removed_any = any(isinstance(c, up.RemoveSnapshotsUpdate) for c in self._changes)
        live = {s.snapshot_id for s in self._snapshots}
        return update_snapshot_log(
            self._snapshot_log, live, self._current_snapshot_id, intermediate, removed_any
        )

    def build(self) -> TableMetadata:
        """The new metadata (the base itself when nothing changed)."""
        if self._base is not None and not self._changes:
            return self._base
        if self._location is None:
            raise ValidationError("Cannot build table metadata without a location")
        schema_id = self._current_id(self._current_schema_id, _INITIAL_SCHEMA_ID)
        spec_id = self._current_id(self._default_spec_id, INITIAL_SPEC_ID)
        order_id = self._current_id(self._default_sort_order_id, UNSORTED_ORDER_ID)
        schema = self._schema_by_id(schema_id)
        if schema is None:
            raise ValidationError("Cannot build table metadata without a current schema")
        spec = next((s for s in self._specs if s.spec_id == spec_id), None)
        if spec is None:
            raise ValidationError("Cannot build table metadata without a default partition spec")
        order = next((o for o in self._sort_orders if o.order_id == order_id), None)
        if order is None:
            raise ValidationError("Cannot build table metadata without a default sort order")
        check_spec_compatibility(spec, schema)
        check_sort_order_compatibility(order, schema)
        for s in self._schemas:
            check_schema_compatibility(s, self._format_version)
        last_updated = self._last_updated_ms if self._last_updated_ms is not None else _now_ms()
        return TableMetadata(
            format_version=self._format_version,
            table_uuid=self._uuid,
            location=self._location,
            last_sequence_number=self._last_sequence_number,
            last_updated_ms=last_updated,
            last_column_id=self._last_column_id,
            schemas=tuple(self._schemas),
            current_schema_id=schema_id,
            partition_specs=tuple(self._specs),
            default_spec_id=spec_id,
            last_partition_id=self._last_partition_id,
            properties=dict(self._properties),
            current_snapshot_id=self._current_snapshot_id,
            snapshots=tuple(self._snapshots),
            snapshot_log=tuple(self._snapshot_history()),
            metadata_log=tuple(self._metadata_history()),
            sort_orders=tuple(self._sort_orders),
            default_sort_order_id=order_id,
            refs=dict(self._refs),
            statistics=tuple(self._statistics.values()),
            partition_statistics=tuple(self._partition_statistics.values()),
            next_row_id=self._next_row_id,
        )


def _check_version(version: int) -> None:
    if not 1 <= version <= SUPPORTED_FORMAT_VERSION:
        raise ValidationError(
            f"Unsupported format version: v{version} (supported: v{SUPPORTED_FORMAT_VERSION})"
        )


_HANDLERS: dict[type[TableUpdate], Callable[[MetadataBuilder, Any], Any]] = {
    up.AssignUUIDUpdate: lambda b, u: b.assign_uuid(u.uuid),
    up.UpgradeFormatVersionUpdate: lambda b, u: b.upgrade_format_version(u.format_version),
    # Java ignores the update's last-column-id (the highest id seen wins): never lowered here
    up.AddSchemaUpdate: lambda b, u: b.add_schema(
        u.schema, None if u.last_column_id is None else max(u.last_column_id, b._last_column_id)
    ),
    up.SetCurrentSchemaUpdate: lambda b, u: b.set_current_schema(u.schema_id),
    up.AddPartitionSpecUpdate: lambda b, u: b.add_partition_spec(u.spec),
    up.SetDefaultSpecUpdate: lambda b, u: b.set_default_spec(u.spec_id),
    up.AddSortOrderUpdate: lambda b, u: b.add_sort_order(u.sort_order),
    up.SetDefaultSortOrderUpdate: lambda b, u: b.set_default_sort_order(u.sort_order_id),
    up.AddSnapshotUpdate: lambda b, u: b.add_snapshot(u.snapshot),
    up.SetSnapshotRefUpdate: lambda b, u: b.set_ref(u.ref_name, u.ref),
    up.RemoveSnapshotsUpdate: lambda b, u: b.remove_snapshots(u.snapshot_ids),
    up.RemoveSnapshotRefUpdate: lambda b, u: b.remove_ref(u.ref_name),
    up.SetLocationUpdate: lambda b, u: b.set_location(u.location),
    up.SetPropertiesUpdate: lambda b, u: b.set_properties(u.updates),
    up.RemovePropertiesUpdate: lambda b, u: b.remove_properties(u.removals),
    up.SetStatisticsUpdate: lambda b, u: b.set_statistics(u.statistics),
    up.RemoveStatisticsUpdate: lambda b, u: b.remove_statistics(u.snapshot_id),
    up.SetPartitionStatisticsUpdate: (
        lambda b, u: b.set_partition_statistics(u.partition_statistics)
    ),
    up.RemovePartitionStatisticsUpdate: lambda b, u: b.remove_partition_statistics(u.snapshot_id),
    up.RemovePartitionSpecsUpdate: lambda b, u: b.remove_partition_specs(u.spec_ids),
    up.RemoveSchemasUpdate: lambda b, u: b.remove_schemas(u.schema_ids),
}
