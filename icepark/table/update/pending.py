"""The shape shared by schema, partition spec and sort order updates: changes recorded one
call at a time (each checked at once against the table's current metadata) and committed as
one action, directly or through a transaction, when the ``with`` block exits cleanly."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import ClassVar, Self, TypeVar

from icepark.errors import ValidationError
from icepark.spec.metadata import TableMetadata
from icepark.table.interface import TableLike
from icepark.table.transaction import Transaction
from icepark.table.write.operations import Action

__all__ = ["PendingUpdate"]

T = TypeVar("T")


class PendingUpdate:
    """Base of :class:`UpdateSchema`, :class:`UpdateSpec` and :class:`ReplaceSortOrder`."""

    _what: ClassVar[str] = "Update"

    def __init__(self, table: TableLike, action: Action, transaction: Transaction | None) -> None:
        self._table = table
        self._pending = action
        self._transaction = transaction
        self._done = False

    def _check_open(self) -> None:
        if self._done:
            raise ValidationError(f"{self._what} of {self._table.name} is already finished")

    def _add(self, items: list[T], item: T, check: Callable[[TableMetadata], object]) -> Self:
        """Record ``item`` in ``items`` if ``check`` (applying every recorded change to the
        table's current metadata) accepts it; otherwise leave ``items`` as they were."""
        self._check_open()
        items.append(item)
        try:
            check(self._table.metadata)
        except BaseException:
            items.pop()
            raise
        return self

    def _is_empty(self) -> bool:
        """Whether there is nothing to commit."""
        return False

    def commit(self) -> None:
        """Commit the changes (through the transaction when one was given)."""
        self._check_open()
        self._done = True
        if self._is_empty():
            return
        if self._transaction is not None:
            self._transaction.add_action(self._pending)
            return
        with Transaction(self._table) as tx:
            tx.add_action(self._pending)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            if not self._done:  # an explicit commit() inside the block already committed
                self.commit()
        else:
            self._done = True
