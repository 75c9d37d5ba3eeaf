"""Table updates and requirements, shaped as the REST catalog's ``TableUpdate`` and
``TableRequirement`` objects (open-api/rest-catalog-open-api.yaml).

Updates are applied by :class:`icepark.spec.builder.MetadataBuilder`; requirements check the
table a commit was based on (``validate`` raises :class:`~icepark.errors.RequirementFailedError`
with the messages Java's ``UpdateRequirement`` uses). ``to_json``/``from_json`` give and read
the REST shapes; ``from_json`` on the base class dispatches on ``action`` / ``type``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from icepark.errors import InvalidMetadataError
from icepark.spec import _jsonutil as js
from icepark.spec.partitioning import (
    PartitionSpec,
    partition_spec_from_json,
    partition_spec_to_json,
)
from icepark.spec.requirements import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    TableRequirement,
    table_requirement_from_json,
)
from icepark.spec.schema import Schema, schema_from_json, schema_to_json
from icepark.spec.snapshots import (
    PartitionStatisticsFile,
    Snapshot,
    SnapshotRef,
    SnapshotRefType,
    StatisticsFile,
)
from icepark.spec.sorting import SortOrder, sort_order_from_json, sort_order_to_json

__all__ = [
    "LAST_ADDED",
    "TableUpdate",
    "AssignUUIDUpdate",
    "UpgradeFormatVersionUpdate",
    "AddSchemaUpdate",
    "SetCurrentSchemaUpdate",
    "AddPartitionSpecUpdate",
    "SetDefaultSpecUpdate",
    "AddSortOrderUpdate",
    "SetDefaultSortOrderUpdate",
    "AddSnapshotUpdate",
    "SetSnapshotRefUpdate",
    "RemoveSnapshotsUpdate",
    "RemoveSnapshotRefUpdate",
    "SetLocationUpdate",
    "SetPropertiesUpdate",
    "RemovePropertiesUpdate",
    "SetStatisticsUpdate",
    "RemoveStatisticsUpdate",
    "SetPartitionStatisticsUpdate",
    "RemovePartitionStatisticsUpdate",
    "RemovePartitionSpecsUpdate",
    "RemoveSchemasUpdate",
    "TableRequirement",
    "AssertCreate",
    "AssertTableUUID",
    "AssertRefSnapshotId",
    "AssertLastAssignedFieldId",
    "AssertCurrentSchemaId",
    "AssertLastAssignedPartitionId",
    "AssertDefaultSpecId",
    "AssertDefaultSortOrderId",
    "table_update_from_json",
    "table_requirement_from_json",
]

#: the id that ``set-current-schema``, ``set-default-spec`` and ``set-default-sort-order`` use
#: for "the one added last in this set of changes"
LAST_ADDED = -1

# -- updates ---------------------------------------------------------------------------------


_REGISTRY: dict[str, type[TableUpdate]] = {}


class TableUpdate:
    """Base of the REST table updates; ``action`` is the REST discriminator."""

    action: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.action:
            _REGISTRY[cls.action] = cls

    def _body(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, **self._body()}

    @classmethod
    def from_json(cls, obj: Any) -> TableUpdate:
        obj = js.require_object(obj, "table update")
        action = js.get_str(obj, "action")
        impl = _REGISTRY.get(action.lower())
        if impl is None:
            raise InvalidMetadataError(f"Cannot parse table update: unknown action {action!r}")
        if not issubclass(impl, cls):
            raise InvalidMetadataError(f"Expected a {cls.action} update, not {action!r}")
        return js.wrap_errors(f"{action} update", lambda: impl._parse(obj))


@dataclass(frozen=True)
class AssignUUIDUpdate(TableUpdate):
    action: ClassVar[str] = "assign-uuid"
    uuid: str

    def _body(self) -> dict[str, Any]:
        return {"uuid": self.uuid}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_str(obj, "uuid"))


@dataclass(frozen=True)
class UpgradeFormatVersionUpdate(TableUpdate):
    action: ClassVar[str] = "upgrade-format-version"
    format_version: int

    def _body(self) -> dict[str, Any]:
        return {"format-version": self.format_version}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_int(obj, "format-version"))


@dataclass(frozen=True)
class AddSchemaUpdate(TableUpdate):
    """Add a schema; ``last_column_id`` is deprecated in REST but still sent for old servers."""

    action: ClassVar[str] = "add-schema"
    schema: Schema
    last_column_id: int | None = None

    def _body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": schema_to_json(self.schema)}
        if self.last_column_id is not None:
            out["last-column-id"] = self.last_column_id
        return out

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        schema = schema_from_json(js.get_object(obj, "schema"))
        return cls(schema, js.get_int_or_none(obj, "last-column-id"))


@dataclass(frozen=True)
class SetCurrentSchemaUpdate(TableUpdate):
    action: ClassVar[str] = "set-current-schema"
    schema_id: int

    def _body(self) -> dict[str, Any]:
        return {"schema-id": self.schema_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_int(obj, "schema-id"))


@dataclass(frozen=True)
class AddPartitionSpecUpdate(TableUpdate):
    action: ClassVar[str] = "add-spec"
    spec: PartitionSpec

    def _body(self) -> dict[str, Any]:
        return {"spec": partition_spec_to_json(self.spec)}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(partition_spec_from_json(dict(js.get_object(obj, "spec"))))


@dataclass(frozen=True)
class SetDefaultSpecUpdate(TableUpdate):
    action: ClassVar[str] = "set-default-spec"
    spec_id: int

    def _body(self) -> dict[str, Any]:
        return {"spec-id": self.spec_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_int(obj, "spec-id"))


@dataclass(frozen=True)
class AddSortOrderUpdate(TableUpdate):
    action: ClassVar[str] = "add-sort-order"
    sort_order: SortOrder

    def _body(self) -> dict[str, Any]:
        return {"sort-order": sort_order_to_json(self.sort_order)}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(sort_order_from_json(dict(js.get_object(obj, "sort-order"))))


@dataclass(frozen=True)
class SetDefaultSortOrderUpdate(TableUpdate):
    action: ClassVar[str] = "set-default-sort-order"
    sort_order_id: int

    def _body(self) -> dict[str, Any]:
        return {"sort-order-id": self.sort_order_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_int(obj, "sort-order-id"))


@dataclass(frozen=True)
class AddSnapshotUpdate(TableUpdate):
    action: ClassVar[str] = "add-snapshot"
    snapshot: Snapshot

    def _body(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot.to_json()}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(Snapshot.from_json(js.get_object(obj, "snapshot")))


@dataclass(frozen=True)
class SetSnapshotRefUpdate(TableUpdate):
    """Create or move a branch or tag (``main`` also sets the current snapshot)."""

    action: ClassVar[str] = "set-snapshot-ref"
    ref_name: str
    snapshot_id: int
    type: SnapshotRefType = SnapshotRefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    @classmethod
    def of(cls, ref_name: str, ref: SnapshotRef) -> SetSnapshotRefUpdate:
        return cls(
            ref_name,
            ref.snapshot_id,
            ref.type,
            ref.min_snapshots_to_keep,
            ref.max_snapshot_age_ms,
            ref.max_ref_age_ms,
        )

    @property
    def ref(self) -> SnapshotRef:
        return SnapshotRef(
            self.snapshot_id,
            self.type,
            self.min_snapshots_to_keep,
            self.max_snapshot_age_ms,
            self.max_ref_age_ms,
        )

    def _body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ref-name": self.ref_name,
            "snapshot-id": self.snapshot_id,
            "type": self.type.value,
        }
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        return out

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        ref = SnapshotRef.from_json(obj)
        return cls.of(js.get_str(obj, "ref-name"), ref)


@dataclass(frozen=True)
class RemoveSnapshotsUpdate(TableUpdate):
    action: ClassVar[str] = "remove-snapshots"
    snapshot_ids: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "snapshot_ids", tuple(self.snapshot_ids))

    def _body(self) -> dict[str, Any]:
        return {"snapshot-ids": list(self.snapshot_ids)}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(tuple(js.get_int_list(obj, "snapshot-ids", "long")))


@dataclass(frozen=True)
class RemoveSnapshotRefUpdate(TableUpdate):
    action: ClassVar[str] = "remove-snapshot-ref"
    ref_name: str

    def _body(self) -> dict[str, Any]:
        return {"ref-name": self.ref_name}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_str(obj, "ref-name"))


@dataclass(frozen=True)
class SetLocationUpdate(TableUpdate):
    action: ClassVar[str] = "set-location"
    location: str

    def _body(self) -> dict[str, Any]:
        return {"location": self.location}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_str(obj, "location"))


@dataclass(frozen=True)
class SetPropertiesUpdate(TableUpdate):
    action: ClassVar[str] = "set-properties"
    updates: dict[str, str] = field(hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "updates", dict(self.updates))

    def _body(self) -> dict[str, Any]:
        return {"updates": dict(self.updates)}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_string_map(obj, "updates"))


@dataclass(frozen=True)
class RemovePropertiesUpdate(TableUpdate):
    action: ClassVar[str] = "remove-properties"
    removals: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "removals", tuple(self.removals))

    def _body(self) -> dict[str, Any]:
        return {"removals": list(self.removals)}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(tuple(js.get_str_list(obj, "removals")))


@dataclass(frozen=True)
class SetStatisticsUpdate(TableUpdate):
    """Register a statistics file; the deprecated ``snapshot-id`` is written for old servers."""

    action: ClassVar[str] = "set-statistics"
    statistics: StatisticsFile

    def _body(self) -> dict[str, Any]:
        return {"snapshot-id": self.statistics.snapshot_id, "statistics": self.statistics.to_json()}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(StatisticsFile.from_json(js.get_object(obj, "statistics")))


@dataclass(frozen=True)
class RemoveStatisticsUpdate(TableUpdate):
    action: ClassVar[str] = "remove-statistics"
    snapshot_id: int

    def _body(self) -> dict[str, Any]:
        return {"snapshot-id": self.snapshot_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_long(obj, "snapshot-id"))


@dataclass(frozen=True)
class SetPartitionStatisticsUpdate(TableUpdate):
    action: ClassVar[str] = "set-partition-statistics"
    partition_statistics: PartitionStatisticsFile

    def _body(self) -> dict[str, Any]:
        return {"partition-statistics": self.partition_statistics.to_json()}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(PartitionStatisticsFile.from_json(js.get_object(obj, "partition-statistics")))


@dataclass(frozen=True)
class RemovePartitionStatisticsUpdate(TableUpdate):
    action: ClassVar[str] = "remove-partition-statistics"
    snapshot_id: int

    def _body(self) -> dict[str, Any]:
        return {"snapshot-id": self.snapshot_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_long(obj, "snapshot-id"))


@dataclass(frozen=True)
class RemovePartitionSpecsUpdate(TableUpdate):
    action: ClassVar[str] = "remove-partition-specs"
    spec_ids: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec_ids", tuple(self.spec_ids))

    def _body(self) -> dict[str, Any]:
        return {"spec-ids": list(self.spec_ids)}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(tuple(js.get_int_list(obj, "spec-ids")))


@dataclass(frozen=True)
class RemoveSchemasUpdate(TableUpdate):
    action: ClassVar[str] = "remove-schemas"
    schema_ids: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema_ids", tuple(self.schema_ids))

    def _body(self) -> dict[str, Any]:
        return {"schema-ids": list(self.schema_ids)}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(tuple(js.get_int_list(obj, "schema-ids")))


def table_update_from_json(obj: Any) -> TableUpdate:
    """Parse one REST ``TableUpdate`` object."""
    return TableUpdate.from_json(obj)
