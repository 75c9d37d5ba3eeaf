"""`StagedTable`: a table created and first written in one commit (a create transaction).

::

    with catalog.create_table_transaction("db.t", schema, partition_by=["day(ts)"]) as t:
        t.append(rows)
        t.set_properties(owner="etl")
        with t.update_schema() as u:
            u.add_column("note", "string")
    # the table exists from here on, with its first snapshot

This is Java's ``Catalog.buildTable(...).createTransaction()`` and PyIceberg's
``catalog.create_table_transaction(...)``. The staged table holds the metadata the new table
would have (``new_table_metadata``) and satisfies :class:`~icepark.table.interface.TableLike`,
so one ordinary :class:`~icepark.table.transaction.Transaction` stages every action on it
(the writes go to the table's location; nothing is in the catalog yet). Its ``commit`` is the
create: the catalog receives ``AssertCreate`` and the updates that create the table
(``creation_updates``) followed by the actions' updates, exactly what a REST catalog receives
for a stage-create commit, and builds the first metadata from them. The actions'
own requirements are dropped: they hold for the staged metadata, which no one else can change.

If the table appeared meanwhile, the commit raises ``TableAlreadyExistsError`` (not retried)
and the files written for it are deleted. As in a transaction on an existing table, every
action is staged against the metadata at the start: an append writes the created schema's
columns, also when a schema change is staged in the same transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from icepark.errors import RequirementFailedError, TableAlreadyExistsError, ValidationError
from icepark.io import FileIO
from icepark.spec.metadata import TableMetadata
from icepark.spec.new_table import creation_updates
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.requirements import AssertCreate
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.spec.sorting import SortOrder
from icepark.spec.updates import TableRequirement, TableUpdate
from icepark.table.interface import TableCommitter
from icepark.table.table import Table
from icepark.table.transaction import Transaction
from icepark.table.update.schema import UpdateSchema
from icepark.table.update.sort_order import ReplaceSortOrder
from icepark.table.update.spec import UpdateSpec

__all__ = ["StagedTable"]


class StagedTable:
    """A table that exists in its catalog only once :meth:`commit_transaction` succeeds;
    ``catalog.create_table_transaction(...)`` makes one.

    It acts as its own transaction: stage changes with its methods (or on
    :meth:`transaction`), then commit with :meth:`commit_transaction` or a clean exit of a
    ``with`` block (an exception in the block aborts: nothing is created, written files
    are deleted).

    Args:
        identifier: the new table's name, as a tuple.
        metadata: its first metadata (no snapshot yet).
        io: the FileIO its files are written with.
        catalog: the catalog that creates it on commit.
    """

    def __init__(
        self,
        identifier: tuple[str, ...],
        metadata: TableMetadata,
        io: FileIO,
        catalog: TableCommitter,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = ""  # none until the commit creates the table
        self.io = io
        self.catalog = catalog
        self._initial = metadata
        self._transaction = Transaction(self)
        self._created: Table | None = None

    # -- TableLike -------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return ".".join(self.identifier)

    def __repr__(self) -> str:
        state = "created" if self._created is not None else "staged"
        return f"StagedTable({self.name!r}, {state})"

    def refresh(self) -> StagedTable:
        """Nothing to reload: the table is not in the catalog yet."""
        return self

    def commit(
        self, requirements: Sequence[TableRequirement], updates: Sequence[TableUpdate]
    ) -> TableMetadata:
        """Create the table with ``updates`` applied, in one catalog commit."""
        if self._created is not None:
            raise ValidationError(f"Table {self.name} was created already")
        try:
            result = self.catalog.commit_table(
                self.identifier,
                None,
                None,
                [AssertCreate()],
                [*creation_updates(self._initial), *updates],
            )
        except RequirementFailedError as exc:  # AssertCreate: retrying cannot help
            raise TableAlreadyExistsError(f"Table already exists: {self.name}") from exc
        self.metadata, self.metadata_location = result.metadata, result.metadata_location
        self._created = Table(
            self.identifier, result.metadata, result.metadata_location, self.io, self.catalog
        )
        return result.metadata

    # -- metadata views --------------------------------------------------------------------

    @property
    def location(self) -> str:
        return self.metadata.location

    @property
    def format_version(self) -> int:
        return self.metadata.format_version

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.metadata.properties)

    def schema(self) -> Schema:
        return self.metadata.schema()

    def spec(self) -> PartitionSpec:
        return self.metadata.spec()

    def sort_order(self) -> SortOrder:
        return self.metadata.sort_order()

    # -- staging ---------------------------------------------------------------------------

    def transaction(self) -> Transaction:
        """The transaction that stages this table's changes (every write it offers)."""
        return self._transaction

    def append(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        file_format: str | None = None,
    ) -> StagedTable:
        """Stage an append of ``data`` (written now, committed with the table)."""
        self._transaction.append(
            data, branch=branch, snapshot_properties=snapshot_properties, file_format=file_format
        )
        return self

    def set_properties(self, properties: Mapping[str, str] | None = None, **kw: str) -> StagedTable:
        self._transaction.set_properties(properties, **kw)
        return self

    def remove_properties(self, *keys: str) -> StagedTable:
        self._transaction.remove_properties(*keys)
        return self

    def update_schema(
        self, allow_incompatible_changes: bool = False, case_sensitive: bool = True
    ) -> UpdateSchema:
        """Schema changes staged into the create (``with t.update_schema() as u: ...``)."""
        return UpdateSchema(
            self,
            allow_incompatible_changes=allow_incompatible_changes,
            case_sensitive=case_sensitive,
            transaction=self._transaction,
        )

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        return UpdateSpec(self, case_sensitive=case_sensitive, transaction=self._transaction)

    def update_sort_order(self, case_sensitive: bool = True) -> ReplaceSortOrder:
        return ReplaceSortOrder(self, case_sensitive=case_sensitive, transaction=self._transaction)

    # -- committing ------------------------------------------------------------------------

    def commit_transaction(self) -> Table:
        """Create the table with every staged change; returns it, loaded from the catalog's
        answer. ``TableAlreadyExistsError`` when it appeared meanwhile."""
        self._transaction.commit_transaction()
        if self._created is None:  # nothing was staged: the create is the whole commit
            self.commit([], [])
        assert self._created is not None
        return self._created

    def abort(self) -> None:
        """Create nothing and delete the files written for the staged changes."""
        self._transaction.abort()

    def __enter__(self) -> StagedTable:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit_transaction()
        else:
            self.abort()
