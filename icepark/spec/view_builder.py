"""Changing view metadata: the REST view updates (``add-view-version``,
``set-current-view-version`` and the updates views share with tables: ``assign-uuid``,
``upgrade-format-version``, ``add-schema``, ``set-location``, ``set-properties``,
``remove-properties``), the ``assert-view-uuid`` requirement, and the builder that applies
them with the view spec's rules, as Java's ``ViewMetadata.Builder`` does:

* an added schema or version equal to an existing one reuses its id; new ids are the highest
  plus one; ``-1`` means "the one added last" in ``schema-id`` and ``view-version-id``;
* a version may hold one SQL representation per dialect, and must name a known schema;
* making a version current logs it in ``version-log`` (with the version's own timestamp when
  it was added in the same change);
* a new current version may not drop a dialect of the previous one unless
  ``replace.drop-dialect.allowed`` is true;
* only the newest ``version.history.num-entries`` (10) versions are kept, always with the
  current one and those just added; the log is cut before any version no longer kept.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from icepark.errors import RequirementFailedError, ValidationError
from icepark.spec import _jsonutil as js
from icepark.spec.locations import check_location
from icepark.spec.requirements import TableRequirement
from icepark.spec.schema import Schema
from icepark.spec.updates import (
    AddSchemaUpdate,
    AssignUUIDUpdate,
    RemovePropertiesUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    TableUpdate,
    UpgradeFormatVersionUpdate,
)
from icepark.spec.view_metadata import (
    REPLACE_DROP_DIALECT_ALLOWED,
    SUPPORTED_VIEW_FORMAT_VERSION,
    VERSION_HISTORY_SIZE,
    VERSION_HISTORY_SIZE_DEFAULT,
    SQLViewRepresentation,
    ViewHistoryEntry,
    ViewMetadata,
    ViewVersion,
    view_version_from_json,
    view_version_to_json,
)

__all__ = [
    "LAST_ADDED",
    "AddViewVersionUpdate",
    "SetCurrentViewVersionUpdate",
    "AssertViewUUID",
    "ViewMetadataBuilder",
    "VIEW_UPDATES",
    "view_update_from_json",
    "new_view_metadata",
]

LAST_ADDED = -1


@dataclass(frozen=True)
class AddViewVersionUpdate(TableUpdate):
    action: ClassVar[str] = "add-view-version"
    view_version: ViewVersion

    def _body(self) -> dict[str, Any]:
        return {"view-version": view_version_to_json(self.view_version)}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(view_version_from_json(js.get_object(obj, "view-version")))


@dataclass(frozen=True)
class SetCurrentViewVersionUpdate(TableUpdate):
    action: ClassVar[str] = "set-current-view-version"
    view_version_id: int

    def _body(self) -> dict[str, Any]:
        return {"view-version-id": self.view_version_id}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableUpdate:
        return cls(js.get_int(obj, "view-version-id"))


#: the update actions a view accepts
VIEW_UPDATES: tuple[type[TableUpdate], ...] = (
    AssignUUIDUpdate,
    UpgradeFormatVersionUpdate,
    AddSchemaUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    RemovePropertiesUpdate,
    AddViewVersionUpdate,
    SetCurrentViewVersionUpdate,
)


def view_update_from_json(obj: Any) -> TableUpdate:
    """Parse one REST view update; a table-only action is a :class:`ValidationError`."""
    action = js.get_str(js.require_object(obj, "view update"), "action")
    if action.lower() not in {u.action for u in VIEW_UPDATES}:
        raise ValidationError(f"Cannot apply {action!r} to a view")
    return TableUpdate.from_json(obj)


@dataclass(frozen=True)
class AssertViewUUID(TableRequirement):
    """The view's uuid must be ``uuid`` (the view was not dropped and re-created)."""

    type: ClassVar[str] = "assert-view-uuid"
    uuid: str

    def validate(self, base: Any) -> None:
        current = getattr(base, "view_uuid", None)
        if current is None:
            raise RequirementFailedError("Requirement failed: view does not exist")
        if self.uuid.lower() != current.lower():
            raise RequirementFailedError(
                f"Requirement failed: view UUID does not match: expected {current} != {self.uuid}"
            )

    def _body(self) -> dict[str, Any]:
        return {"uuid": self.uuid}

    @classmethod
    def _parse(cls, obj: Mapping[str, Any]) -> TableRequirement:
        return cls(js.get_str(obj, "uuid"))


def _fail(message: str) -> ValidationError:
    return ValidationError(message)


class ViewMetadataBuilder:
    """Applies view updates to a base (None for a new view) and builds the new metadata; see
    the module docstring for the rules. ``changes`` lists the updates as applied, in their
    REST form (ids of things added in this builder written as ``-1``)."""

    def __init__(self, base: ViewMetadata | None = None) -> None:
        self._base = base
        self.format_version = base.format_version if base else SUPPORTED_VIEW_FORMAT_VERSION
        self.uuid: str | None = base.view_uuid if base else None
        self.location: str | None = base.location if base else None
        self.schemas: list[Schema] = list(base.schemas) if base else []
        self.versions: list[ViewVersion] = list(base.versions) if base else []
        self.history: list[ViewHistoryEntry] = list(base.version_log) if base else []
        self.properties: dict[str, str] = dict(base.properties) if base else {}
        self.current_version_id: int | None = base.current_version_id if base else None
        self._previous = base.current_version if base else None
        self._last_added_schema: int | None = None
        self._last_added_version: int | None = None
        self._added_versions: set[int] = set()
        self._history_entry: ViewHistoryEntry | None = None
        self.changes: list[TableUpdate] = []

    # -- updates ---------------------------------------------------------------------------

    def apply(self, update: TableUpdate) -> ViewMetadataBuilder:
        """Apply one REST view update."""
        if isinstance(update, AssignUUIDUpdate):
            return self.assign_uuid(update.uuid)
        if isinstance(update, UpgradeFormatVersionUpdate):
            return self.upgrade_format_version(update.format_version)
        if isinstance(update, AddSchemaUpdate):
            self.add_schema(update.schema)
            return self
        if isinstance(update, SetLocationUpdate):
            return self.set_location(update.location)
        if isinstance(update, SetPropertiesUpdate):
            return self.set_properties(update.updates)
        if isinstance(update, RemovePropertiesUpdate):
            return self.remove_properties(update.removals)
        if isinstance(update, AddViewVersionUpdate):
            self.add_version(update.view_version)
            return self
        if isinstance(update, SetCurrentViewVersionUpdate):
            return self.set_current_version_id(update.view_version_id)
        raise _fail(f"Cannot apply {update.action!r} to a view")

    def assign_uuid(self, new_uuid: str) -> ViewMetadataBuilder:
        if self.uuid is not None and new_uuid != self.uuid:
            raise _fail(f"Cannot reassign view uuid {self.uuid} to {new_uuid}")
        if new_uuid != self.uuid:
            self.uuid = new_uuid
            self.changes.append(AssignUUIDUpdate(new_uuid))
        return self

    def upgrade_format_version(self, version: int) -> ViewMetadataBuilder:
        if version < self.format_version:
            raise _fail(f"Cannot downgrade v{self.format_version} view to v{version}")
        if version > SUPPORTED_VIEW_FORMAT_VERSION:
            raise _fail(f"Unsupported view format version: {version}")
        if version != self.format_version:
            self.format_version = version
            self.changes.append(UpgradeFormatVersionUpdate(version))
        return self

    def set_location(self, location: str) -> ViewMetadataBuilder:
        if not location:
            raise _fail("Invalid view location: empty")
        if location != self.location:
            check_location(location, "View location")
            self.location = location
            self.changes.append(SetLocationUpdate(location))
        return self

    def set_properties(self, updates: Mapping[str, str]) -> ViewMetadataBuilder:
        if updates:
            self.properties.update(updates)
            self.changes.append(SetPropertiesUpdate(dict(updates)))
        return self

    def remove_properties(self, keys: Iterable[str]) -> ViewMetadataBuilder:
        keys = list(keys)
        if keys:
            for key in keys:
                self.properties.pop(key, None)
            self.changes.append(RemovePropertiesUpdate(tuple(keys)))
        return self

    def add_schema(self, schema: Schema) -> int:
        """Add ``schema`` (or find the equal one); returns its id."""
        new_id = 0
        for existing in self.schemas:
            if existing.same_structure(schema):
                return existing.schema_id
            new_id = max(new_id, existing.schema_id + 1)
        added = schema.with_schema_id(new_id)
        self.schemas.append(added)
        self.changes.append(AddSchemaUpdate(added))
        self._last_added_schema = new_id
        return new_id

    def add_version(self, version: ViewVersion) -> int:
        """Add ``version`` (or find the equal one); returns its id."""
        if version.schema_id == LAST_ADDED:
            if self._last_added_schema is None:
                raise _fail("Cannot set last added schema: no schema has been added")
            version = replace(version, schema_id=self._last_added_schema)
        new_id = version.version_id
        for existing in self.versions:
            if existing.same_query(version):
                self._last_added_version = (
                    existing.version_id if existing.version_id in self._added_versions else None
                )
                return existing.version_id
            new_id = max(new_id, existing.version_id + 1)
        if new_id != version.version_id:
            version = replace(version, version_id=new_id)
        if not any(s.schema_id == version.schema_id for s in self.schemas):
            raise _fail(f"Cannot add version with unknown schema: {version.schema_id}")
        seen: set[str] = set()
        for rep in version.representations:
            if isinstance(rep, SQLViewRepresentation):
                dialect = rep.dialect.lower()
                if dialect in seen:
                    raise _fail(
                        f"Invalid view version: Cannot add multiple queries for dialect {dialect}"
                    )
                seen.add(dialect)
        self.versions.append(version)
        self._added_versions.add(new_id)
        self._last_added_version = new_id
        logged = version
        if self._last_added_schema is not None and version.schema_id == self._last_added_schema:
            logged = replace(version, schema_id=LAST_ADDED)
        self.changes.append(AddViewVersionUpdate(logged))
        return new_id

    def set_current_version_id(self, version_id: int) -> ViewMetadataBuilder:
        if version_id == LAST_ADDED:
            if self._last_added_version is None:
                raise _fail("Cannot set last version id: no current version id has been set")
            version_id = self._last_added_version
        if version_id == self.current_version_id:
            return self
        version = next((v for v in self.versions if v.version_id == version_id), None)
        if version is None:
            raise _fail(f"Cannot set current version to unknown version: {version_id}")
        self.current_version_id = version_id
        self.changes.append(
            SetCurrentViewVersionUpdate(
                LAST_ADDED if version_id == self._last_added_version else version_id
            )
        )
        stamp = (
            version.timestamp_ms if version_id in self._added_versions else int(time.time() * 1000)
        )
        self._history_entry = ViewHistoryEntry(stamp, version_id)
        return self

    def set_current_version(self, version: ViewVersion, schema: Schema) -> ViewMetadataBuilder:
        """Add ``schema`` and ``version`` (using it) and make the version current."""
        schema_id = self.add_schema(schema)
        return self.set_current_version_id(self.add_version(replace(version, schema_id=schema_id)))

    # -- build -----------------------------------------------------------------------------

    def build(self) -> ViewMetadata:
        if not self.location:
            raise _fail("Invalid view location: null")
        if not self.versions or self.current_version_id is None:
            raise _fail("Invalid view: no versions were added")
        by_id = {v.version_id: v for v in self.versions}
        current = by_id[self.current_version_id]
        history = list(self.history)
        if self._history_entry is not None:
            history.append(self._history_entry)
        drop_allowed = self.properties.get(REPLACE_DROP_DIALECT_ALLOWED, "false").lower() == "true"
        if self._previous is not None and not drop_allowed:
            lost = self._previous.dialects - current.dialects
            if lost:
                raise _fail(
                    f"Cannot replace view due to loss of view dialects "
                    f"({REPLACE_DROP_DIALECT_ALLOWED}=false): previous dialects "
                    f"{sorted(self._previous.dialects)}, new dialects {sorted(current.dialects)}"
                )
        raw_size = self.properties.get(VERSION_HISTORY_SIZE, str(VERSION_HISTORY_SIZE_DEFAULT))
        try:
            history_size = int(raw_size)
        except ValueError:
            raise _fail(f"{VERSION_HISTORY_SIZE} must be an integer, not {raw_size!r}") from None
        if history_size <= 0:
            raise _fail(f"{VERSION_HISTORY_SIZE} must be positive but was {history_size}")
        keep_count = max(len(self._added_versions | {current.version_id}), history_size)
        versions = self.versions
        if len(versions) > keep_count:
            versions = _newest_versions(by_id, keep_count, current)
            kept = {v.version_id for v in versions}
            history = _history_of(history, kept)
        return ViewMetadata(
            view_uuid=self.uuid or str(uuidlib.uuid4()),
            format_version=self.format_version,
            location=self.location,
            schemas=tuple(self.schemas),
            current_version_id=current.version_id,
            versions=tuple(versions),
            version_log=tuple(history),
            properties=dict(self.properties),
        )


def _newest_versions(
    by_id: Mapping[int, ViewVersion], count: int, current: ViewVersion
) -> list[ViewVersion]:
    kept = [current]
    for version_id in sorted(by_id, reverse=True)[:count]:
        if len(kept) == count:
            break
        if version_id != current.version_id:
            kept.append(by_id[version_id])
    return kept


def _history_of(history: Sequence[ViewHistoryEntry], kept: set[int]) -> list[ViewHistoryEntry]:
    out: list[ViewHistoryEntry] = []
    for entry in history:
        if entry.version_id in kept:
            out.append(entry)
        else:
            out.clear()  # the log restarts after a version no longer kept
    return out


def new_view_metadata(
    location: str,
    schema: Schema,
    version: ViewVersion,
    properties: Mapping[str, str] | None = None,
    view_uuid: str | None = None,
) -> tuple[ViewMetadata, list[TableUpdate]]:
    """The metadata of a new view and the updates that build it (a REST create)."""
    builder = ViewMetadataBuilder()
    builder.assign_uuid(view_uuid or str(uuidlib.uuid4()))
    builder.set_location(location)
    builder.set_properties(dict(properties or {}))
    builder.set_current_version(version, schema)
    return builder.build(), builder.changes
