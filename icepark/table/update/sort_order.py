"""``table.replace_sort_order(...)``: a new default sort order, rebuilt on retry by name.

::

    table.replace_sort_order("id", "ts desc nulls last")
    with table.update_sort_order() as u:
        u.asc("id")
        u.desc("bucket(4, name)", nulls_last=True)

Writers sort new files by the table's default order and record its id in each file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from icepark.spec.metadata import TableMetadata
from icepark.spec.sorting import SortOrder, build_sort_order
from icepark.spec.updates import (
    AddSortOrderUpdate,
    AssertTableUUID,
    SetDefaultSortOrderUpdate,
    TableUpdate,
)
from icepark.table.interface import TableLike
from icepark.table.transaction import Transaction
from icepark.table.update.pending import PendingUpdate
from icepark.table.write.operations import Action, Staged

__all__ = ["ReplaceSortOrder", "SortOrderAction", "replace"]

_T = TypeVar("_T", bound=TableLike)


@dataclass
class SortOrderAction(Action):
    """Builds the order from its terms against each attempt's current schema."""

    revalidates = True  # re-applied to the fresh metadata, where it may no longer apply

    terms: list[str]
    case_sensitive: bool = True

    def build(self, base: TableMetadata) -> SortOrder:
        return build_sort_order(base.schema(), self.terms, case_sensitive=self.case_sensitive)

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        updates: list[TableUpdate] = [
            AddSortOrderUpdate(self.build(base)),
            SetDefaultSortOrderUpdate(-1),
        ]
        return Staged(updates, [AssertTableUUID(base.table_uuid)])


class ReplaceSortOrder(PendingUpdate):
    """Sort terms for one table; a context manager that commits on a clean exit.

    No term at all replaces the order with "unsorted"."""

    _what = "Sort order update"

    def __init__(
        self,
        table: TableLike,
        *,
        case_sensitive: bool = True,
        transaction: Transaction | None = None,
    ) -> None:
        self._action = SortOrderAction([], case_sensitive)
        super().__init__(table, self._action, transaction)

    def _term(self, text: str) -> ReplaceSortOrder:
        return self._add(self._action.terms, text, self._action.build)

    def term(self, text: str) -> ReplaceSortOrder:
        """A term as ``build_sort_order`` reads it: ``"ts desc nulls last"``."""
        return self._term(text)

    def asc(self, term: str, nulls_first: bool = True) -> ReplaceSortOrder:
        return self._term(f"{term} asc nulls {'first' if nulls_first else 'last'}")

    def desc(self, term: str, nulls_last: bool = True) -> ReplaceSortOrder:
        return self._term(f"{term} desc nulls {'last' if nulls_last else 'first'}")

    def apply(self) -> SortOrder:
        return self._action.build(self._table.metadata)


def replace(table: _T, *terms: str, case_sensitive: bool = True) -> _T:
    """Make the table's default sort order ``terms`` (``"id"``, ``"ts desc nulls last"``,
    ``"bucket(16, id)"``), committed at once; no terms: unsorted.

    >>> table.replace_sort_order("region", "ts desc nulls last")  # doctest: +SKIP
    """
    with ReplaceSortOrder(table, case_sensitive=case_sensitive) as update:
        for term in terms:
            update.term(term)
    return table
