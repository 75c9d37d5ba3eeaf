"""Table requirements, shaped as the REST catalog's ``TableRequirement`` objects.

``validate(base)`` checks the table a commit was based on (``base`` None: the table does not
exist) and raises :class:`~icepark.errors.RequirementFailedError` with the messages of Java's
``UpdateRequirement``. Also importable from :mod:`icepark.spec.updates`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from icepark.errors import InvalidMetadataError, RequirementFailedError
from icepark.spec import _jsonutil as js
from icepark.spec.metadata import TableMetadata

__all__ = [
    "TableRequirement",
    "AssertCreate",
    "AssertTableUUID",
    "AssertRefSnapshotId",
    "AssertLastAssignedFieldId",
    "AssertCurrentSchemaId",
    "AssertLastAssignedPartitionId",
    "AssertDefaultSpecId",
    "AssertDefaultSortOrderId",
    "table_requirement_from_json",
]


# -- requirements ----------------------------------------------------------------------------


def _failed(message: str) -> RequirementFailedError:
    return RequirementFailedError(f"Requirement failed: {message}")


def _existing(base: TableMetadata | None) -> TableMetadata:
    if base is None:
        raise _failed("table does not exist")
    return base


_REGISTRY: dict[str, type[TableRequirement]] = {}


class TableRequirement:
    """Base of the REST table requirements; ``type`` is the REST discriminator."""

    type: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.type:
            _REGISTRY[cls.type] = cls

    def validate(self, base: TableMetadata | None) -> None:
        """Raise RequirementFailedError unless the requirement holds for ``base``.

        ``base`` is None when the table does not exist.
        """
        raise NotImplementedError

    def _body(self) -> dict[str, Any]:
        return {}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableRequirement:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **self._body()}

    @classmethod
    def from_json(cls, obj: Any) -> TableRequirement:
        obj = js.require_object(obj, "table requirement")
        kind = js.get_str(obj, "type")
        impl = _REGISTRY.get(kind.lower())
        if impl is None:
            raise InvalidMetadataError(f"Cannot parse table requirement: unknown type {kind!r}")
        if not issubclass(impl, cls):
            raise InvalidMetadataError(f"Expected a {cls.type} requirement, not {kind!r}")
        return js.wrap_errors(f"{kind} requirement", lambda: impl._parse(obj))


@dataclass(frozen=True)
class AssertCreate(TableRequirement):
    """The table must not exist yet (create transactions)."""

    type: ClassVar[str] = "assert-create"

    def validate(self, base: TableMetadata | None) -> None:
        if base is not None:
            raise _failed("table already exists")

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableRequirement:
        return cls()


@dataclass(frozen=True)
class AssertTableUUID(TableRequirement):
    type: ClassVar[str] = "assert-table-uuid"
    uuid: str

    def validate(self, base: TableMetadata | None) -> None:
        current = _existing(base).table_uuid
        if self.uuid.lower() != current.lower():
            raise _failed(f"UUID does not match: expected {current} != {self.uuid}")

    def _body(self) -> dict[str, Any]:
        return {"uuid": self.uuid}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableRequirement:
        return cls(js.get_str(obj, "uuid"))


@dataclass(frozen=True)
class AssertRefSnapshotId(TableRequirement):
    """The branch or tag ``ref`` must point at ``snapshot_id``; None: it must not exist."""

    type: ClassVar[str] = "assert-ref-snapshot-id"
    ref: str
    snapshot_id: int | None

    def validate(self, base: TableMetadata | None) -> None:
        ref = None if base is None else base.refs.get(self.ref)
        if ref is not None:
            kind = "branch" if ref.is_branch else "tag"
            if self.snapshot_id is None:
                raise _failed(f"{kind} {self.ref} was created concurrently")
            if self.snapshot_id != ref.snapshot_id:
                raise _failed(
                    f"{kind} {self.ref} has changed: expected id {self.snapshot_id} != "
                    f"{ref.snapshot_id}"
                )
        elif self.snapshot_id is not None:
            raise _failed(f"branch or tag {self.ref} is missing, expected {self.snapshot_id}")

    def _body(self) -> dict[str, Any]:
        return {"ref": self.ref, "snapshot-id": self.snapshot_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableRequirement:
        if "snapshot-id" not in obj:
            raise InvalidMetadataError("Cannot parse missing field: snapshot-id")
        return cls(js.get_str(obj, "ref"), js.get_long_or_none(obj, "snapshot-id"))


@dataclass(frozen=True)
class AssertLastAssignedFieldId(TableRequirement):
    type: ClassVar[str] = "assert-last-assigned-field-id"
    last_assigned_field_id: int

    def validate(self, base: TableMetadata | None) -> None:
        if base is not None and base.last_column_id != self.last_assigned_field_id:
            raise _failed(
                f"last assigned field id changed: expected id {self.last_assigned_field_id} != "
                f"{base.last_column_id}"
            )

    def _body(self) -> dict[str, Any]:
        return {"last-assigned-field-id": self.last_assigned_field_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableRequirement:
        return cls(js.get_int(obj, "last-assigned-field-id"))


@dataclass(frozen=True)
class AssertCurrentSchemaId(TableRequirement):
    type: ClassVar[str] = "assert-current-schema-id"
    current_schema_id: int

    def validate(self, base: TableMetadata | None) -> None:
        current = _existing(base).current_schema_id
        if current != self.current_schema_id:
            raise _failed(
                f"current schema changed: expected id {self.current_schema_id} != {current}"
            )

    def _body(self) -> dict[str, Any]:
        return {"current-schema-id": self.current_schema_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableRequirement:
        return cls(js.get_int(obj, "current-schema-id"))


@dataclass(frozen=True)
class AssertLastAssignedPartitionId(TableRequirement):
    type: ClassVar[str] = "assert-last-assigned-partition-id"
    last_assigned_partition_id: int

    def validate(self, base: TableMetadata | None) -> None:
        if base is not None and base.last_partition_id != self.last_assigned_partition_id:
            raise _failed(
                "last assigned partition id changed: expected id "
                f"{self.last_assigned_partition_id} != {base.last_partition_id}"
            )

    def _body(self) -> dict[str, Any]:
        return {"last-assigned-partition-id": self.last_assigned_partition_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableRequirement:
        return cls(js.get_int(obj, "last-assigned-partition-id"))


@dataclass(frozen=True)
class AssertDefaultSpecId(TableRequirement):
    type: ClassVar[str] = "assert-default-spec-id"
    default_spec_id: int

    def validate(self, base: TableMetadata | None) -> None:
        current = _existing(base).default_spec_id
        if current != self.default_spec_id:
            raise _failed(
                f"default partition spec changed: expected id {self.default_spec_id} != {current}"
            )

    def _body(self) -> dict[str, Any]:
        return {"default-spec-id": self.default_spec_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableRequirement:
        return cls(js.get_int(obj, "default-spec-id"))


@dataclass(frozen=True)
class AssertDefaultSortOrderId(TableRequirement):
    type: ClassVar[str] = "assert-default-sort-order-id"
    default_sort_order_id: int

    def validate(self, base: TableMetadata | None) -> None:
        current = _existing(base).default_sort_order_id
        if current != self.default_sort_order_id:
            raise _failed(
                f"default sort order changed: expected id {self.default_sort_order_id} != {current}"
            )

    def _body(self) -> dict[str, Any]:
        return {"default-sort-order-id": self.default_sort_order_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableRequirement:
        return cls(js.get_int(obj, "default-sort-order-id"))


def table_requirement_from_json(obj: Any) -> TableRequirement:
    """Parse one REST ``TableRequirement`` object."""
    return TableRequirement.from_json(obj)
