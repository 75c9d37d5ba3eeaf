"""Checks and history rules the metadata builder applies (Java's checkCompatibility family,
``updateSnapshotLog`` and ``addPreviousFile``)."""

from __future__ import annotations

from collections.abc import Sequence

from icepark.errors import InvalidTransformError, ValidationError
from icepark.spec.partitioning import PARTITION_DATA_ID_START, PartitionSpec
from icepark.spec.schema import Schema, walk_fields
from icepark.spec.snapshots import MetadataLogEntry, SnapshotLogEntry
from icepark.spec.sorting import SortOrder
from icepark.spec.types import PrimitiveType, StructType

__all__ = [
    "DEFAULT_VALUES_MIN_FORMAT_VERSION",
    "check_schema_compatibility",
    "check_spec_compatibility",
    "check_sort_order_compatibility",
    "has_sequential_ids",
    "update_snapshot_log",
    "add_previous_file",
]

DEFAULT_VALUES_MIN_FORMAT_VERSION = 3


def check_schema_compatibility(schema: Schema, format_version: int) -> None:
    """Types and initial defaults the format version does not support are refused."""
    problems = []
    for path, f in walk_fields(schema.as_struct()):
        t = f.field_type
        if isinstance(t, PrimitiveType) and t.min_format_version > format_version:
            problems.append(
                f"Invalid type for {path}: {t} is not supported until v{t.min_format_version}"
            )
        if f.initial_default is not None and format_version < DEFAULT_VALUES_MIN_FORMAT_VERSION:
            problems.append(
                f"Invalid initial default for {path}: non-null default ({f.initial_default!r}) "
                f"is not supported until v{DEFAULT_VALUES_MIN_FORMAT_VERSION}"
            )
    if problems:
        raise ValidationError(f"Invalid schema for v{format_version}:\n- " + "\n- ".join(problems))


def check_spec_compatibility(spec: PartitionSpec, schema: Schema) -> None:
    """Every non-void field's source exists, is primitive, nested only in structs, and fits."""
    for f in spec.fields:
        if f.transform.is_void:
            continue
        source = schema.field_or_none(f.source_id)
        if source is None:
            raise ValidationError(f"Cannot find source column for partition field: {f}")
        if not isinstance(source.field_type, PrimitiveType):
            raise ValidationError(f"Cannot partition by non-primitive source field: {source}")
        if not f.transform.can_transform(source.field_type):
            raise InvalidTransformError(
                f"Invalid source type {source.field_type} for transform: {f.transform} "
                f"(partition field {f.name!r})"
            )
        parent = schema.parent_id(f.source_id)
        while parent is not None:
            parent_field = schema.find_field(parent)
            if not isinstance(parent_field.field_type, StructType):
                raise ValidationError(f"Invalid partition field parent: {parent_field}")
            parent = schema.parent_id(parent)


def check_sort_order_compatibility(order: SortOrder, schema: Schema) -> None:
    try:
        order.validate(schema)
    except InvalidTransformError:
        raise
    except ValidationError as exc:
        raise ValidationError(f"Sort order {order} does not fit the schema: {exc}") from exc


def has_sequential_ids(spec: PartitionSpec) -> bool:
    """v1 specs number their fields 1000, 1001, ... in order."""
    return all(f.field_id == PARTITION_DATA_ID_START + i for i, f in enumerate(spec.fields))


def update_snapshot_log(
    log: Sequence[SnapshotLogEntry],
    live_snapshot_ids: set[int],
    current_snapshot_id: int | None,
    intermediate_ids: set[int],
    removed_any: bool,
) -> list[SnapshotLogEntry]:
    """Drop intermediate snapshots and, after removals, all history before a removed one."""
    if not intermediate_ids and not removed_any:
        return list(log)
    history: list[SnapshotLogEntry] = []
    for entry in log:
        if entry.snapshot_id in live_snapshot_ids:
            if entry.snapshot_id not in intermediate_ids:
                history.append(entry)
        elif removed_any:
            # a gap would make time travel report the wrong snapshot: cut history here
            history.clear()
    if current_snapshot_id is not None and current_snapshot_id in live_snapshot_ids:
        if not history or history[-1].snapshot_id != current_snapshot_id:
            raise ValidationError(
                "Cannot set invalid snapshot log: latest entry is not the current snapshot"
            )
    return history


def add_previous_file(
    log: Sequence[MetadataLogEntry], location: str, timestamp_ms: int, max_entries: int
) -> list[MetadataLogEntry]:
    """Append the previous metadata file, keeping at most ``max_entries`` (at least 1)."""
    history = [*log, MetadataLogEntry(location, timestamp_ms)]
    return history[-max(1, max_entries) :]
