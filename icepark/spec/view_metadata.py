"""Iceberg view metadata (the view spec, format version 1): versions of a view's query, each
with its representations (SQL text per dialect), the schema the query produces, the default
catalog and namespace its unqualified names resolve in, and a log of which version was current
when; and the JSON form every engine reads and writes.

Metadata is immutable; it changes only through
:class:`~icepark.spec.view_builder.ViewMetadataBuilder` applying the REST view updates. Like
Java, a file whose current version or current schema is missing parses, and fails when that
version or schema is asked for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icepark.errors import InvalidMetadataError
from icepark.spec import _jsonutil as js
from icepark.spec.schema import Schema, schema_from_json, schema_to_json

__all__ = [
    "SUPPORTED_VIEW_FORMAT_VERSION",
    "VERSION_HISTORY_SIZE",
    "REPLACE_DROP_DIALECT_ALLOWED",
    "ViewRepresentation",
    "SQLViewRepresentation",
    "ViewVersion",
    "ViewHistoryEntry",
    "ViewMetadata",
    "view_version_from_json",
    "view_version_to_json",
    "view_metadata_from_json",
    "view_metadata_to_json",
    "read_view_metadata_json",
]

SUPPORTED_VIEW_FORMAT_VERSION = 1
#: how many view versions a view keeps (Java's ``version.history.num-entries``)
VERSION_HISTORY_SIZE = "version.history.num-entries"
VERSION_HISTORY_SIZE_DEFAULT = 10
#: whether a new version may drop a SQL dialect the current version has
REPLACE_DROP_DIALECT_ALLOWED = "replace.drop-dialect.allowed"


@dataclass(frozen=True)
class ViewRepresentation:
    """A representation of a view's query; ``type`` is ``sql`` for every one the spec defines.
    Representations of other types are kept as they were read (``fields``)."""

    type: str
    fields: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **dict(self.fields)}


@dataclass(frozen=True)
class SQLViewRepresentation(ViewRepresentation):
    """The query as SQL text in one dialect (``spark``, ``trino``, ...)."""

    type: str = "sql"
    sql: str = ""
    dialect: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"type": "sql", "sql": self.sql, "dialect": self.dialect}


def _representation_from_json(obj: Any) -> ViewRepresentation:
    obj = js.require_object(obj, "view representation")
    kind = js.get_str(obj, "type")
    if kind.lower() == "sql":
        return SQLViewRepresentation(sql=js.get_str(obj, "sql"), dialect=js.get_str(obj, "dialect"))
    rest = tuple((k, v) for k, v in obj.items() if k != "type")
    return ViewRepresentation(type=kind, fields=rest)


@dataclass(frozen=True)
class ViewVersion:
    """One version of a view: its query in one or more representations and where it resolves."""

    version_id: int
    timestamp_ms: int
    schema_id: int
    representations: tuple[ViewRepresentation, ...]
    default_namespace: tuple[str, ...] = ()
    default_catalog: str | None = None
    summary: Mapping[str, str] = field(default_factory=dict, hash=False)

    def sql_for(self, dialect: str) -> str | None:
        """The SQL text of ``dialect`` (case-insensitive), or None."""
        for rep in self.representations:
            if isinstance(rep, SQLViewRepresentation) and rep.dialect.lower() == dialect.lower():
                return rep.sql
        return None

    @property
    def dialects(self) -> frozenset[str]:
        return frozenset(
            r.dialect.lower() for r in self.representations if isinstance(r, SQLViewRepresentation)
        )

    @property
    def operation(self) -> str | None:
        return self.summary.get("operation")

    def same_query(self, other: ViewVersion) -> bool:
        """Whether the two are the same version but for id and timestamp (Java reuses a
        version's id when an equal one is added again)."""
        return (
            dict(self.summary) == dict(other.summary)
            and self.representations == other.representations
            and self.default_catalog == other.default_catalog
            and self.default_namespace == other.default_namespace
            and self.schema_id == other.schema_id
        )


def view_version_to_json(version: ViewVersion) -> dict[str, Any]:
    out: dict[str, Any] = {
        "version-id": version.version_id,
        "timestamp-ms": version.timestamp_ms,
        "schema-id": version.schema_id,
        "summary": dict(version.summary),
    }
    if version.default_catalog is not None:
        out["default-catalog"] = version.default_catalog
    out["default-namespace"] = list(version.default_namespace)
    out["representations"] = [r.to_json() for r in version.representations]
    return out


def view_version_from_json(obj: Any) -> ViewVersion:
    obj = js.require_object(obj, "view version")

    def parse() -> ViewVersion:
        return ViewVersion(
            version_id=js.get_int(obj, "version-id"),
            timestamp_ms=js.get_long(obj, "timestamp-ms"),
            schema_id=js.get_int(obj, "schema-id"),
            representations=tuple(
                _representation_from_json(r) for r in js.get_list(obj, "representations")
            ),
            default_namespace=tuple(js.get_str_list(obj, "default-namespace")),
            default_catalog=js.get_str_or_none(obj, "default-catalog"),
            summary=js.get_string_map(obj, "summary"),
        )

    return js.wrap_errors("view version", parse)


@dataclass(frozen=True)
class ViewHistoryEntry:
    """``version-log``: version ``version_id`` became current at ``timestamp_ms``."""

    timestamp_ms: int
    version_id: int


@dataclass(frozen=True)
class ViewMetadata:
    """A view's metadata file; see the module docstring."""

    view_uuid: str
    format_version: int
    location: str
    schemas: tuple[Schema, ...]
    current_version_id: int
    versions: tuple[ViewVersion, ...]
    version_log: tuple[ViewHistoryEntry, ...]
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not 0 < self.format_version <= SUPPORTED_VIEW_FORMAT_VERSION:
            raise InvalidMetadataError(
                f"Unsupported view format version: {self.format_version} "
                f"(supported: up to {SUPPORTED_VIEW_FORMAT_VERSION})"
            )

    def version(self, version_id: int) -> ViewVersion | None:
        return next((v for v in self.versions if v.version_id == version_id), None)

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return next((s for s in self.schemas if s.schema_id == schema_id), None)

    @property
    def current_version(self) -> ViewVersion:
        version = self.version(self.current_version_id)
        if version is None:
            raise InvalidMetadataError(
                f"Cannot find current version {self.current_version_id} in view versions: "
                f"{sorted(v.version_id for v in self.versions)} (view {self.location})"
            )
        return version

    @property
    def current_schema_id(self) -> int:
        return self.current_version.schema_id

    @property
    def schema(self) -> Schema:
        """The schema of the current version's query."""
        schema_id = self.current_schema_id
        schema = self.schema_by_id(schema_id)
        if schema is None:
            raise InvalidMetadataError(
                f"Cannot find current schema with id {schema_id} in schemas: "
                f"{sorted(s.schema_id for s in self.schemas)} (view {self.location})"
            )
        return schema


def view_metadata_to_json(metadata: ViewMetadata) -> dict[str, Any]:
    return {
        "view-uuid": metadata.view_uuid,
        "format-version": metadata.format_version,
        "location": metadata.location,
        "properties": dict(metadata.properties),
        "schemas": [schema_to_json(s) for s in metadata.schemas],
        "current-version-id": metadata.current_version_id,
        "versions": [view_version_to_json(v) for v in metadata.versions],
        "version-log": [
            {"timestamp-ms": e.timestamp_ms, "version-id": e.version_id}
            for e in metadata.version_log
        ],
    }


def view_metadata_from_json(obj: Any) -> ViewMetadata:
    """Parse a view metadata document; :class:`InvalidMetadataError` names what is wrong."""
    obj = js.require_object(obj, "view metadata")

    def parse() -> ViewMetadata:
        log = []
        for entry in js.get_list(obj, "version-log"):
            entry = js.require_object(entry, "view history entry")
            log.append(
                ViewHistoryEntry(
                    js.get_long(entry, "timestamp-ms"), js.get_int(entry, "version-id")
                )
            )
        return ViewMetadata(
            view_uuid=js.get_str(obj, "view-uuid"),
            format_version=js.get_int(obj, "format-version"),
            location=js.get_str(obj, "location"),
            schemas=tuple(schema_from_json(s) for s in js.get_list(obj, "schemas")),
            current_version_id=js.get_int(obj, "current-version-id"),
            versions=tuple(view_version_from_json(v) for v in js.get_list(obj, "versions")),
            version_log=tuple(log),
            properties=js.get_string_map(obj, "properties") if "properties" in obj else {},
        )

    return js.wrap_errors("view metadata", parse)


def read_view_metadata_json(text: str | bytes, location: str = "") -> ViewMetadata:
    """A view metadata file's bytes (plain JSON) parsed; errors name ``location``."""
    try:
        obj = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than the interpreter's recursion limit
        raise InvalidMetadataError(f"Cannot parse view metadata {location}: {exc}") from exc
    try:
        return view_metadata_from_json(obj)
    except InvalidMetadataError as exc:
        raise InvalidMetadataError(f"{exc} ({location})" if location else str(exc)) from exc
