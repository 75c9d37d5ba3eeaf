"""``table.update_schema()``: record schema changes, commit them once, re-apply them on retry.

::

    with table.update_schema() as u:
        u.add_column("new_col", "long", after="id")
        u.rename_column("name", "full_name")

The block commits only when it exits cleanly. Each call is checked at once against the
table's current schema (a refused change raises there and is not recorded); the commit
re-applies every recorded change to the schema of the metadata it is based on, with the
requirements that the current schema and last column id are still those it saw, so a
concurrent schema change makes the attempt fail and be retried on the fresh schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.name_mapping import (
    name_mapping_from_json,
    name_mapping_to_json,
    update_name_mapping,
)
from icepark.spec.schema import Schema
from icepark.spec.schema_update import (
    AddColumn,
    DeleteColumn,
    MoveColumn,
    RenameColumn,
    SchemaChange,
    SchemaUpdateResult,
    SetIdentifierFields,
    UnionByName,
    UpdateColumn,
    apply_schema_changes,
    to_path,
    to_type,
)
from icepark.spec.types import IcebergType
from icepark.spec.updates import (
    AddSchemaUpdate,
    AssertCurrentSchemaId,
    AssertLastAssignedFieldId,
    AssertTableUUID,
    SetCurrentSchemaUpdate,
    SetPropertiesUpdate,
    TableUpdate,
)
from icepark.table.interface import TableLike
from icepark.table.transaction import Transaction
from icepark.table.update.pending import PendingUpdate
from icepark.table.write.operations import Action, Staged

__all__ = ["UpdateSchema", "SchemaUpdateAction", "NAME_MAPPING_PROPERTY"]

NAME_MAPPING_PROPERTY = P.DEFAULT_NAME_MAPPING.name

ColumnPath = str | Sequence[str]


@dataclass
class SchemaUpdateAction(Action):
    """Re-applies recorded schema changes to each attempt's base metadata."""

    revalidates = True  # re-applied to the fresh metadata, where it may no longer apply

    changes: list[SchemaChange]
    allow_incompatible_changes: bool = False
    case_sensitive: bool = True

    def apply(self, base: TableMetadata) -> SchemaUpdateResult:
        return apply_schema_changes(
            base.schema(),
            base.last_column_id,
            self.changes,
            allow_incompatible_changes=self.allow_incompatible_changes,
            case_sensitive=self.case_sensitive,
            format_version=base.format_version,
            spec=base.spec(),
            sort_order=base.sort_order(),
        )

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        result = self.apply(base)
        updates: list[TableUpdate] = [
            AddSchemaUpdate(result.schema, result.last_column_id),
            SetCurrentSchemaUpdate(-1),
        ]
        mapping_json = base.properties.get(NAME_MAPPING_PROPERTY)
        if mapping_json:
            mapping = update_name_mapping(
                name_mapping_from_json(mapping_json), result.updated, result.added
            )
            text = name_mapping_to_json(mapping)
            updates.append(SetPropertiesUpdate({NAME_MAPPING_PROPERTY: text}))
        requirements = [
            AssertTableUUID(base.table_uuid),
            AssertCurrentSchemaId(base.current_schema_id),
            AssertLastAssignedFieldId(base.last_column_id),
        ]
        return Staged(updates, list(requirements))


def _column_type(field_type: Any) -> IcebergType:
    """A new column's type: an icepark type, a primitive type name, or a nested type built
    with :func:`icepark.types.struct`, :func:`~icepark.types.list_of` or
    :func:`~icepark.types.map_of` (its field ids are assigned when the change applies)."""
    if isinstance(field_type, IcebergType | str):
        return to_type(field_type)
    from icepark.types import schema

    return schema(("_", field_type)).fields[0].field_type


def _opt_path(path: ColumnPath | None) -> tuple[str, ...] | None:
    return None if path is None else to_path(path)


class UpdateSchema(PendingUpdate):
    """Schema changes for one table; a context manager that commits on a clean exit."""

    _what = "Schema update"

    def __init__(
        self,
        table: TableLike,
        *,
        allow_incompatible_changes: bool = False,
        case_sensitive: bool = True,
        transaction: Transaction | None = None,
    ) -> None:
        self._action = SchemaUpdateAction([], allow_incompatible_changes, case_sensitive)
        super().__init__(table, self._action, transaction)

    # -- recording -------------------------------------------------------------------------

    def _record(self, change: SchemaChange) -> UpdateSchema:
        return self._add(self._action.changes, change, self._action.apply)

    def add_column(
        self,
        path: ColumnPath,
        field_type: IcebergType | str,
        doc: str | None = None,
        required: bool = False,
        default: Any = None,
        write_default: Any = None,
        after: ColumnPath | None = None,
        before: ColumnPath | None = None,
        first: bool = False,
    ) -> UpdateSchema:
        """Add a column (``"a.b"`` or ``("a", "b")`` inside struct ``a``). ``default`` is both
        the initial and the write default (v3); ``write_default`` overrides the latter."""
        return self._record(
            AddColumn(
                to_path(path),
                _column_type(field_type),
                doc,
                required,
                default,
                write_default if write_default is not None else default,
                _opt_path(after),
                _opt_path(before),
                first,
            )
        )

    def delete_column(self, path: ColumnPath) -> UpdateSchema:
        return self._record(DeleteColumn(to_path(path)))

    drop_column = delete_column

    def rename_column(self, path: ColumnPath, new_name: str) -> UpdateSchema:
        return self._record(RenameColumn(to_path(path), new_name))

    def update_column(
        self,
        path: ColumnPath,
        field_type: IcebergType | str | None = None,
        required: bool | None = None,
        doc: str | None = None,
    ) -> UpdateSchema:
        """Widen a type, make a column optional (or required, when incompatible changes are
        allowed), or set its doc."""
        new_type = None if field_type is None else to_type(field_type)
        return self._record(UpdateColumn(to_path(path), new_type, required, doc))

    def make_column_optional(self, path: ColumnPath) -> UpdateSchema:
        return self.update_column(path, required=False)

    def move_first(self, path: ColumnPath) -> UpdateSchema:
        return self._record(MoveColumn(to_path(path), "first"))

    def move_after(self, path: ColumnPath, other: ColumnPath) -> UpdateSchema:
        return self._record(MoveColumn(to_path(path), "after", to_path(other)))

    def move_before(self, path: ColumnPath, other: ColumnPath) -> UpdateSchema:
        return self._record(MoveColumn(to_path(path), "before", to_path(other)))

    def set_identifier_fields(self, *names: str) -> UpdateSchema:
        return self._record(SetIdentifierFields(tuple(names)))

    def union_by_name(self, new_schema: Any) -> UpdateSchema:
        """Add the columns ``new_schema`` (an icepark Schema or a pyarrow schema) has and the
        table lacks, widen types and relax nullability to match; never drops a column."""
        if not isinstance(new_schema, Schema):
            from icepark.arrow.schema import assign_fresh_ids_from_arrow

            new_schema = assign_fresh_ids_from_arrow(new_schema)
        return self._record(UnionByName(new_schema))

    # -- result ----------------------------------------------------------------------------

    def apply(self) -> Schema:
        """The schema these changes give on the table's current metadata (nothing commits)."""
        return self._action.apply(self._table.metadata).schema

    def _is_empty(self) -> bool:
        return not self._action.changes
