"""Snapshots, snapshot references, history logs and statistics files, with their JSON forms.

Every ``to_json`` returns the object exactly as the spec (Appendix C) and Java's parsers write
it; every ``from_json`` raises :class:`~icepark.errors.InvalidMetadataError` naming the
problem for anything malformed.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from icepark.errors import InvalidMetadataError, ValidationError
from icepark.spec import _jsonutil as js

__all__ = [
    "MAIN_BRANCH",
    "Operation",
    "Summary",
    "Snapshot",
    "SnapshotRefType",
    "SnapshotRef",
    "SnapshotLogEntry",
    "MetadataLogEntry",
    "BlobMetadata",
    "StatisticsFile",
    "PartitionStatisticsFile",
]

MAIN_BRANCH = "main"


class Operation(enum.Enum):
    """The ``operation`` of a snapshot summary."""

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Summary(Mapping[str, str]):
    """A snapshot summary: the operation plus free-form string properties.

    It is also a read-only mapping over the JSON form (``summary["operation"]`` included).
    """

    operation: Operation
    properties: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        props = dict(self.properties)
        props.pop("operation", None)
        object.__setattr__(self, "properties", props)

    def __getitem__(self, key: str) -> str:
        if key == "operation":
            return self.operation.value
        return self.properties[key]

    def __iter__(self) -> Iterator[str]:
        yield "operation"
        yield from self.properties

    def __len__(self) -> int:
        return 1 + len(self.properties)

    def __hash__(self) -> int:
        return hash((self.operation, tuple(sorted(self.properties.items()))))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Summary):
            return self.operation == other.operation and self.properties == other.properties
        return NotImplemented

    def to_json(self) -> dict[str, str]:
        return {"operation": self.operation.value, **self.properties}

    @classmethod
    def from_json(cls, obj: Any) -> Summary:
        obj = js.require_object(obj, "summary")
        props = js.get_string_map({"summary": obj}, "summary")
        op = props.pop("operation", None)
        if op is None:
            raise InvalidMetadataError(
                "Cannot parse missing string: operation (in snapshot summary)"
            )
        try:
            operation = Operation(op.lower())
        except ValueError:
            raise InvalidMetadataError(f"Invalid snapshot operation: {op!r}") from None
        return cls(operation, props)


@dataclass(frozen=True)
class Snapshot:
    """One snapshot of a table. ``sequence_number`` is 0 for v1 tables.

    ``manifests`` holds the legacy v1 embedded manifest paths, used only when
    ``manifest_list`` is absent. ``first_row_id`` and ``added_rows`` are v3 row lineage.
    """

    snapshot_id: int
    parent_snapshot_id: int | None
    sequence_number: int
    timestamp_ms: int
    manifest_list: str | None = None
    summary: Summary | None = None
    schema_id: int | None = None
    first_row_id: int | None = None
    added_rows: int | None = None
    key_id: str | None = None
    manifests: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.manifests is not None:
            object.__setattr__(self, "manifests", tuple(self.manifests))

    @property
    def operation(self) -> Operation | None:
        return None if self.summary is None else self.summary.operation

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.sequence_number > 0:
            out["sequence-number"] = self.sequence_number
        out["snapshot-id"] = self.snapshot_id
        if self.parent_snapshot_id is not None:
            out["parent-snapshot-id"] = self.parent_snapshot_id
        out["timestamp-ms"] = self.timestamp_ms
        if self.summary is not None:
            out["summary"] = self.summary.to_json()
        if self.manifest_list is not None:
            out["manifest-list"] = self.manifest_list
        elif self.manifests is not None:
            out["manifests"] = list(self.manifests)
        if self.schema_id is not None:
            out["schema-id"] = self.schema_id
        if self.first_row_id is not None:
            out["first-row-id"] = self.first_row_id
        if self.added_rows is not None:
            out["added-rows"] = self.added_rows
        if self.key_id is not None:
            out["key-id"] = self.key_id
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Snapshot:
        obj = js.require_object(obj, "snapshot")
        summary = None if obj.get("summary") is None else Summary.from_json(obj["summary"])
        manifest_list = js.get_str_or_none(obj, "manifest-list")
        manifests = None
        if manifest_list is None and obj.get("manifests") is not None:
            manifests = tuple(js.get_str_list(obj, "manifests"))
        sequence_number = js.get_long_or_none(obj, "sequence-number") or 0
        return cls(
            snapshot_id=js.get_long(obj, "snapshot-id"),
            parent_snapshot_id=js.get_long_or_none(obj, "parent-snapshot-id"),
            sequence_number=sequence_number,
            timestamp_ms=js.get_long(obj, "timestamp-ms"),
            manifest_list=manifest_list,
            summary=summary,
            schema_id=js.get_int_or_none(obj, "schema-id"),
            first_row_id=js.get_long_or_none(obj, "first-row-id"),
            added_rows=js.get_long_or_none(obj, "added-rows"),
            key_id=js.get_str_or_none(obj, "key-id"),
            manifests=manifests,
        )


class SnapshotRefType(enum.Enum):
    BRANCH = "branch"
    TAG = "tag"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class SnapshotRef:
    """A branch or tag: the snapshot it points at and its retention settings."""

    snapshot_id: int
    type: SnapshotRefType = SnapshotRefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def __post_init__(self) -> None:
        if self.type is SnapshotRefType.TAG:
            if self.min_snapshots_to_keep is not None:
                raise ValidationError("Tags do not support setting minSnapshotsToKeep")
            if self.max_snapshot_age_ms is not None:
                raise ValidationError("Tags do not support setting maxSnapshotAgeMs")
        if self.min_snapshots_to_keep is not None and self.min_snapshots_to_keep <= 0:
            raise ValidationError("Min snapshots to keep must be greater than 0")
        if self.max_snapshot_age_ms is not None and self.max_snapshot_age_ms <= 0:
            raise ValidationError("Max snapshot age must be greater than 0 ms")
        if self.max_ref_age_ms is not None and self.max_ref_age_ms <= 0:
            raise ValidationError("Max reference age must be greater than 0")

    @property
    def is_branch(self) -> bool:
        return self.type is SnapshotRefType.BRANCH

    @property
    def is_tag(self) -> bool:
        return self.type is SnapshotRefType.TAG

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id, "type": self.type.value}
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        return out

    @classmethod
    def from_json(cls, obj: Any) -> SnapshotRef:
        obj = js.require_object(obj, "snapshot reference")
        type_name = js.get_str(obj, "type")
        try:
            ref_type = SnapshotRefType(type_name.lower())
        except ValueError:
            raise InvalidMetadataError(f"Invalid snapshot ref type: {type_name}") from None
        try:
            return cls(
                snapshot_id=js.get_long(obj, "snapshot-id"),
                type=ref_type,
                min_snapshots_to_keep=js.get_int_or_none(obj, "min-snapshots-to-keep"),
                max_snapshot_age_ms=js.get_long_or_none(obj, "max-snapshot-age-ms"),
                max_ref_age_ms=js.get_long_or_none(obj, "max-ref-age-ms"),
            )
        except InvalidMetadataError:
            raise
        except ValidationError as exc:
            raise InvalidMetadataError(
                f"Invalid snapshot reference {js.short(obj)}: {exc}"
            ) from exc


@dataclass(frozen=True)
class SnapshotLogEntry:
    """An entry of ``snapshot-log``: the current snapshot changed to ``snapshot_id`` at a time."""

    snapshot_id: int
    timestamp_ms: int

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "snapshot-id": self.snapshot_id}

    @classmethod
    def from_json(cls, obj: Any) -> SnapshotLogEntry:
        obj = js.require_object(obj, "snapshot log entry")
        return cls(js.get_long(obj, "snapshot-id"), js.get_long(obj, "timestamp-ms"))


@dataclass(frozen=True)
class MetadataLogEntry:
    """An entry of ``metadata-log``: a previous metadata file and when it was written."""

    metadata_file: str
    timestamp_ms: int

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "metadata-file": self.metadata_file}

    @classmethod
    def from_json(cls, obj: Any) -> MetadataLogEntry:
        obj = js.require_object(obj, "metadata log entry")
        return cls(js.get_str(obj, "metadata-file"), js.get_long(obj, "timestamp-ms"))


@dataclass(frozen=True)
class BlobMetadata:
    """One blob of a Puffin statistics file, as listed in table metadata."""

    type: str
    snapshot_id: int
    sequence_number: int
    fields: tuple[int, ...]
    properties: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "properties", dict(self.properties))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "fields": list(self.fields),
        }
        if self.properties:
            out["properties"] = dict(self.properties)
        return out

    @classmethod
    def from_json(cls, obj: Any) -> BlobMetadata:
        obj = js.require_object(obj, "blob metadata")
        props = js.get_string_map(obj, "properties") if obj.get("properties") is not None else {}
        return cls(
            type=js.get_str(obj, "type"),
            snapshot_id=js.get_long(obj, "snapshot-id"),
            sequence_number=js.get_long(obj, "sequence-number"),
            fields=tuple(js.get_int_list(obj, "fields")),
            properties=props,
        )


@dataclass(frozen=True)
class StatisticsFile:
    """A Puffin table statistics file registered for one snapshot.

    ``key_metadata`` is kept as the base64 text the metadata holds.
    """

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    file_footer_size_in_bytes: int
    key_metadata: str | None = None
    blob_metadata: tuple[BlobMetadata, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "blob_metadata", tuple(self.blob_metadata))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "snapshot-id": self.snapshot_id,
            "statistics-path": self.statistics_path,
            "file-size-in-bytes": self.file_size_in_bytes,
            "file-footer-size-in-bytes": self.file_footer_size_in_bytes,
        }
        if self.key_metadata is not None:
            out["key-metadata"] = self.key_metadata
        out["blob-metadata"] = [b.to_json() for b in self.blob_metadata]
        return out

    @classmethod
    def from_json(cls, obj: Any) -> StatisticsFile:
        obj = js.require_object(obj, "statistics file")
        return cls(
            snapshot_id=js.get_long(obj, "snapshot-id"),
            statistics_path=js.get_str(obj, "statistics-path"),
            file_size_in_bytes=js.get_long(obj, "file-size-in-bytes"),
            file_footer_size_in_bytes=js.get_long(obj, "file-footer-size-in-bytes"),
            key_metadata=js.get_str_or_none(obj, "key-metadata"),
            blob_metadata=tuple(
                BlobMetadata.from_json(b) for b in js.get_list(obj, "blob-metadata")
            ),
        )


@dataclass(frozen=True)
class PartitionStatisticsFile:
    """A partition statistics file registered for one snapshot."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "snapshot-id": self.snapshot_id,
            "statistics-path": self.statistics_path,
            "file-size-in-bytes": self.file_size_in_bytes,
        }

    @classmethod
    def from_json(cls, obj: Any) -> PartitionStatisticsFile:
        obj = js.require_object(obj, "partition statistics file")
        return cls(
            snapshot_id=js.get_long(obj, "snapshot-id"),
            statistics_path=js.get_str(obj, "statistics-path"),
            file_size_in_bytes=js.get_long(obj, "file-size-in-bytes"),
        )
