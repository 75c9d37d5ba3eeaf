"""``table.update_spec()``: partition spec evolution, committed once, re-applied on retry.

::

    with table.update_spec() as u:
        u.add_field("ts", "day")
        u.add_field("bucket(16, id)")
        u.remove_field("category")

The new spec becomes the table's default (an identical existing spec is reused). Old data
files keep the spec they were written with.
"""

from __future__ import annotations

from dataclasses import dataclass

from icepark.errors import ValidationError
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import parse_term
from icepark.spec.spec_update import (
    AddField,
    RemoveField,
    RenameField,
    SpecChange,
    SpecUpdateResult,
    apply_spec_changes,
    to_transform,
)
from icepark.spec.transforms import IdentityTransform, Transform
from icepark.spec.updates import (
    AddPartitionSpecUpdate,
    AssertDefaultSpecId,
    AssertLastAssignedPartitionId,
    AssertTableUUID,
    SetDefaultSpecUpdate,
    TableUpdate,
)
from icepark.table.interface import TableLike
from icepark.table.transaction import Transaction
from icepark.table.update.pending import PendingUpdate
from icepark.table.write.operations import Action, Staged

__all__ = ["UpdateSpec", "SpecUpdateAction"]


@dataclass
class SpecUpdateAction(Action):
    """Re-applies recorded partition spec changes to each attempt's base metadata."""

    revalidates = True  # re-applied to the fresh metadata, where it may no longer apply

    changes: list[SpecChange]
    case_sensitive: bool = True

    def apply(self, base: TableMetadata) -> SpecUpdateResult:
        return apply_spec_changes(
            base.schema(),
            base.spec(),
            base.partition_specs,
            base.last_partition_id,
            base.format_version,
            self.changes,
            case_sensitive=self.case_sensitive,
        )

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        result = self.apply(base)
        updates: list[TableUpdate] = [AddPartitionSpecUpdate(result.spec), SetDefaultSpecUpdate(-1)]
        requirements = [
            AssertTableUUID(base.table_uuid),
            AssertDefaultSpecId(base.default_spec_id),
            AssertLastAssignedPartitionId(base.last_partition_id),
        ]
        return Staged(updates, list(requirements))


class UpdateSpec(PendingUpdate):
    """Partition spec changes for one table; a context manager that commits on a clean exit."""

    _what = "Spec update"

    def __init__(
        self,
        table: TableLike,
        *,
        case_sensitive: bool = True,
        transaction: Transaction | None = None,
    ) -> None:
        self._action = SpecUpdateAction([], case_sensitive)
        super().__init__(table, self._action, transaction)

    def _record(self, change: SpecChange) -> UpdateSpec:
        return self._add(self._action.changes, change, self._action.apply)

    def add_field(
        self, source_column: str, transform: Transform | str | None = None, name: str | None = None
    ) -> UpdateSpec:
        """Partition by ``transform(source_column)`` (identity by default); ``source_column``
        may be a whole term such as ``"bucket(16, id)"`` or ``"day(ts)"``."""
        if transform is None or (
            isinstance(transform, str) and transform.strip().lower() == "identity"
        ):
            parsed, column = parse_term(source_column)
        else:
            parsed, column = to_transform(transform), source_column
        if transform is not None and not isinstance(parsed, IdentityTransform) and "(" in column:
            raise ValidationError(f"Give a transform once: {source_column!r} with {transform}")
        return self._record(AddField(column, parsed, name))

    def remove_field(self, name: str) -> UpdateSpec:
        """Remove a partition field by name (or by its term, e.g. ``"bucket(16, id)"``)."""
        return self._record(RemoveField(name))

    def rename_field(self, name: str, new_name: str) -> UpdateSpec:
        return self._record(RenameField(name, new_name))

    def apply(self) -> SpecUpdateResult:
        return self._action.apply(self._table.metadata)

    def _is_empty(self) -> bool:
        return not self._action.changes
