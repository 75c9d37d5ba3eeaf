"""The catalog interface and the commit procedure every catalog shares.

A catalog only knows where each table's current metadata file is. Committing is: check the
requirements against the current metadata, apply the updates through the metadata builder,
write a new metadata file that must not exist yet, then swap the pointer atomically
(`_swap_metadata_location`), which each catalog implements as a compare-and-swap.

Creating is the same commit with the ``AssertCreate`` requirement and no base: the first
metadata is built from the updates that create the table (``create_table``, a create
transaction's commit and a REST stage-create all arrive here). Several tables commit at once
(``commit_tables``, ``commit_transaction``) when the catalog can swap several pointers in one
atomic step (the hook ``_commit_tables``: the SQL catalog does it in one database
transaction); the others refuse with ``UnsupportedOperationError``, as Java's do.
"""

from __future__ import annotations

import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from icepark.catalog.identifiers import (
    Identifier,
    Properties,
    namespace_of,
    schema_from_user,
    table_name_of,
    to_identifier,
)
from icepark.catalog.views import ViewCatalog
from icepark.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    IceparkError,
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NoSuchTableError,
    RequirementFailedError,
    TableAlreadyExistsError,
    UnsupportedOperationError,
    ValidationError,
)
from icepark.io import FileIO, load_file_io
from icepark.spec import properties as P
from icepark.spec.builder import MetadataBuilder
from icepark.spec.locations import check_location, check_location_properties
from icepark.spec.metadata import TableMetadata
from icepark.spec.new_table import creation_updates, new_table_metadata
from icepark.spec.partitioning import build_partition_spec
from icepark.spec.schema import Schema
from icepark.spec.sorting import build_sort_order
from icepark.spec.updates import AssertCreate, TableRequirement, TableUpdate
from icepark.table.interface import CommitResult, read_table_metadata, write_table_metadata
from icepark.table.table import Table

if TYPE_CHECKING:
    import pyarrow as pa

    from icepark.table.staged import StagedTable
    from icepark.table.transaction import Transaction

__all__ = [
    "Catalog",
    "Identifier",
    "Properties",
    "TableChange",
    "to_identifier",
    "namespace_of",
    "table_name_of",
    "schema_from_user",
]

TableChange = tuple[str | Sequence[str], Sequence[TableRequirement], Sequence[TableUpdate]]
"""One table's part of a multi-table commit: identifier, requirements, updates."""


class Catalog(ViewCatalog, ABC):
    """Namespaces, tables and atomic commits of table metadata: the base of
    :class:`SqlCatalog`, :class:`FileSystemCatalog` and :class:`RestCatalog`.
    :func:`icepark.load_catalog` opens the configured one.

    Args:
        name: the catalog's name (a SQL catalog keeps its tables under it).
        properties: catalog properties (``uri``, ``warehouse``, ``s3.*``...), as strings.
    """

    _multi_table_refusal: ClassVar[str | None] = (
        "this catalog cannot swap several tables' metadata pointers in one atomic step"
    )
    """Why ``commit_tables`` is refused; None where ``_commit_tables`` is implemented."""

    @property
    def supports_multi_table_commits(self) -> bool:
        """Whether :meth:`commit_tables` can commit several tables atomically here."""
        return self._multi_table_refusal is None

    def __init__(self, name: str, properties: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.properties: Properties = dict(properties or {})
        self._io: FileIO | None = None

    # -- file IO ---------------------------------------------------------------------------

    @property
    def io(self) -> FileIO:
        """The FileIO the catalog reads and writes metadata with, made from its properties
        (``s3.*``, ``io-impl``) on first use.
        """
        if self._io is None:
            self._io = load_file_io(self.properties, self.properties.get("warehouse"))
        return self._io

    def _table_io(self, metadata: TableMetadata | None = None) -> FileIO:
        return self.io

    # -- namespaces ------------------------------------------------------------------------

    @abstractmethod
    def create_namespace(
        self, namespace: str | Sequence[str], properties: Properties | None = None
    ) -> None:
        """Create a namespace.

        Args:
            namespace: ``"db"``, ``"a.b"`` or ``("a", "b")``.
            properties: its properties (``location``, ``comment``...).

        Raises:
            NamespaceAlreadyExistsError: it exists.
            ValidationError: an empty name or part.
        """

    @abstractmethod
    def drop_namespace(self, namespace: str | Sequence[str]) -> None:
        """Drop an empty namespace.

        Args:
            namespace: the namespace.

        Raises:
            NoSuchNamespaceError: it does not exist.
            NamespaceNotEmptyError: it holds tables (or views).
        """

    @abstractmethod
    def list_namespaces(self, parent: str | Sequence[str] = ()) -> list[Identifier]:
        """The namespaces directly below ``parent``.

        Args:
            parent: the namespace to list under (default: the top level).

        Returns:
            Their identifiers, as tuples (``("db",)``, ``("a", "b")``).

        Raises:
            NoSuchNamespaceError: ``parent`` does not exist.
        """

    @abstractmethod
    def load_namespace_properties(self, namespace: str | Sequence[str]) -> Properties:
        """The properties of a namespace.

        Args:
            namespace: the namespace.

        Returns:
            Its properties (a copy).

        Raises:
            NoSuchNamespaceError: it does not exist.
        """

    @abstractmethod
    def update_namespace_properties(
        self,
        namespace: str | Sequence[str],
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> None:
        """Remove and set properties of a namespace, in one change.

        Args:
            namespace: the namespace.
            removals: the property names to remove.
            updates: the properties to set.

        Raises:
            NoSuchNamespaceError: it does not exist.
            ValidationError: a property both removed and set.
        """

    def namespace_exists(self, namespace: str | Sequence[str]) -> bool:
        """Whether a namespace exists.

        Args:
            namespace: the namespace.

        Returns:
            True when it exists.
        """
        try:
            self.load_namespace_properties(namespace)
            return True
        except NoSuchNamespaceError:
            return False

    def create_namespace_if_not_exists(
        self, namespace: str | Sequence[str], properties: Properties | None = None
    ) -> None:
        """Create a namespace unless it exists (also when another process creates it
        meanwhile).

        Args:
            namespace: the namespace.
            properties: its properties, when it is created here.
        """
        if not self.namespace_exists(namespace):
            try:
                self.create_namespace(namespace, properties)
            except NamespaceAlreadyExistsError:
                pass

    # -- tables: pointer storage (per catalog) ---------------------------------------------

    @abstractmethod
    def list_tables(self, namespace: str | Sequence[str]) -> list[Identifier]:
        """The tables of a namespace (not its views, not those of namespaces below it).

        Args:
            namespace: the namespace.

        Returns:
            Their identifiers, as tuples (``("db", "events")``).

        Raises:
            NoSuchNamespaceError: it does not exist.
        """

    @abstractmethod
    def _current_metadata_location(self, identifier: Identifier) -> str:
        """The table's metadata pointer; NoSuchTableError when it has none."""

    @abstractmethod
    def _new_metadata_location(
        self, identifier: Identifier, metadata: TableMetadata, previous: str | None
    ) -> str:
        """Where the next metadata file of this table goes."""

    @abstractmethod
    def _swap_metadata_location(
        self, identifier: Identifier, expected: str | None, new: str
    ) -> None:
        """Atomically move the pointer from ``expected`` (None: create) to ``new``.

        Raises CommitFailedError when the pointer is no longer ``expected`` (or the table
        exists already, on create), CommitStateUnknownError when the outcome cannot be known.
        """

    @abstractmethod
    def _remove_table_entry(self, identifier: Identifier) -> str:
        """Forget the table; returns the metadata location it had."""

    @abstractmethod
    def rename_table(
        self, from_identifier: str | Sequence[str], new_identifier: str | Sequence[str]
    ) -> Table:
        """Rename a table, or move it to another namespace; its files stay where they are.

        Args:
            from_identifier: its current name.
            new_identifier: its new name; the namespace must exist.

        Returns:
            The table under its new name.

        Raises:
            NoSuchTableError: no table of the old name.
            TableAlreadyExistsError: a table of the new name exists.
            NoSuchNamespaceError: the new namespace does not exist.
        """

    @abstractmethod
    def register_table(self, identifier: str | Sequence[str], metadata_location: str) -> Table:
        """Add an existing table to the catalog by its metadata file (a table another
        catalog or engine wrote, or one dropped without purging); nothing is copied.

        Args:
            identifier: the name it gets here; the namespace must exist.
            metadata_location: its ``*.metadata.json`` file.

        Returns:
            The table.

        Raises:
            TableAlreadyExistsError: a table of that name exists.
            NoSuchNamespaceError: the namespace does not exist.
            NoSuchFileError: the metadata file does not exist.
            InvalidMetadataError: the file is not valid table metadata.
        """

    def default_table_location(self, identifier: Identifier) -> str:
        """Where a new table goes when no location is given:
        ``<warehouse>/<namespace parts>/<table>``.

        Args:
            identifier: the table's identifier, as a tuple.

        Returns:
            The location.

        Raises:
            ValidationError: the catalog has no ``warehouse``.
        """
        warehouse = self.properties.get("warehouse")
        if not warehouse:
            raise ValidationError(
                f"Cannot choose a location for {'.'.join(identifier)}: the catalog has no warehouse"
            )
        return "/".join([warehouse.rstrip("/"), *identifier])

    # -- tables: shared behaviour ----------------------------------------------------------

    def metadata_location(self, identifier: str | Sequence[str]) -> str:
        """Where the table's current metadata file is (one catalog lookup, no file read):
        the cheap way to tell whether a table changed.

        Args:
            identifier: the table's name.

        Returns:
            The metadata file's location.

        Raises:
            NoSuchTableError: no such table.
        """
        return self._current_metadata_location(to_identifier(identifier))

    def load_table(self, identifier: str | Sequence[str]) -> Table:
        """Load a table: its current metadata, read from the file the catalog points at.

        Args:
            identifier: ``"db.events"`` or ``("db", "events")``.

        Returns:
            The :class:`~icepark.table.Table`.

        Raises:
            NoSuchTableError: no such table.
            InvalidMetadataError: its metadata file is not valid (naming the file).
        """
        ident = to_identifier(identifier)
        location = self._current_metadata_location(ident)
        metadata = read_table_metadata(self.io, location)
        return Table(ident, metadata, location, self._table_io(metadata), self)

    def table_exists(self, identifier: str | Sequence[str]) -> bool:
        """Whether a table exists (one catalog lookup).

        Args:
            identifier: the table's name.

        Returns:
            True when it exists.
        """
        try:
            self._current_metadata_location(to_identifier(identifier))
            return True
        except NoSuchTableError:
            return False

    def create_table(
        self,
        identifier: str | Sequence[str],
        schema: Schema | pa.Schema,
        partition_by: Sequence[str | tuple[str, str]] = (),
        sort_by: Sequence[str] = (),
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Create a table (one commit: of two concurrent creates, one wins).

        Args:
            identifier: ``"db.events"`` or ``("db", "events")``; the namespace must exist.
            schema: an icepark :class:`~icepark.types.Schema` (:func:`icepark.schema`) or a
                pyarrow schema; field ids are assigned afresh.
            partition_by: partition terms: a column name, ``"day(ts)"``, ``"bucket(16, id)"``,
                ``"truncate(4, name)"``...; or ``(term, field name)`` pairs.
            sort_by: the sort order: ``"id"``, ``"ts desc nulls last"``...
            location: where its files go (default: :meth:`default_table_location`).
            properties: table properties; ``format-version`` (1, 2 or 3) defaults to 2.

        Returns:
            The new table, without a snapshot.

        Raises:
            TableAlreadyExistsError: a table of that name exists.
            NoSuchNamespaceError: the namespace does not exist.
            ValidationError: a partition or sort term that does not parse or names no column, a
                bad property value or location (InvalidTransformError, InvalidSchemaError for
                the specific cases).
        """
        ident = to_identifier(identifier)
        metadata = self._new_table_metadata(
            ident, schema, partition_by, sort_by, location, properties
        )
        return self.create_table_from_metadata(ident, metadata)

    def create_table_from_metadata(
        self, identifier: str | Sequence[str], metadata: TableMetadata
    ) -> Table:
        """Create a table whose first metadata is ``metadata`` (as ``new_table_metadata``
        makes it, e.g. from a REST create request): one create commit, so of two creates one
        wins and the other gets ``TableAlreadyExistsError``.

        Args:
            identifier: the table's name; the namespace must exist.
            metadata: its first metadata.

        Returns:
            The new table.

        Raises:
            TableAlreadyExistsError: a table of that name exists.
            NoSuchNamespaceError: the namespace does not exist.
        """
        ident = to_identifier(identifier)
        try:
            result = self.commit_table(
                ident, None, None, [AssertCreate()], creation_updates(metadata)
            )
        except RequirementFailedError as exc:
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ident)}") from exc
        return Table(
            ident, result.metadata, result.metadata_location, self._table_io(result.metadata), self
        )

    def create_table_transaction(
        self,
        identifier: str | Sequence[str],
        schema: Schema | pa.Schema,
        partition_by: Sequence[str | tuple[str, str]] = (),
        sort_by: Sequence[str] = (),
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> StagedTable:
        """A table to create and write in one commit (Java's ``createTableTransaction``).

        Stage changes on the returned :class:`~icepark.table.staged.StagedTable` (``append``,
        ``set_properties``, ``update_schema``, ...); the table appears in the catalog, with
        its first snapshot, only when its ``commit_transaction()`` (or a clean exit of a
        ``with`` block) succeeds.

        Args:
            identifier: the table's name; the namespace must exist.
            schema: an icepark or pyarrow schema.
            partition_by: partition terms, as for :meth:`create_table`.
            sort_by: sort terms, as for :meth:`create_table`.
            location: where its files go (default: :meth:`default_table_location`).
            properties: table properties.

        Returns:
            The staged table.

        Raises:
            TableAlreadyExistsError: a table of that name exists (checked again on commit).
            NoSuchNamespaceError: the namespace does not exist.
            ValidationError: a term, property or location that does not fit.
        """
        from icepark.table.staged import StagedTable

        ident = to_identifier(identifier)
        metadata = self._new_table_metadata(
            ident, schema, partition_by, sort_by, location, properties
        )
        return StagedTable(ident, metadata, self._table_io(metadata), self)

    def _new_table_metadata(
        self,
        ident: Identifier,
        schema: Schema | pa.Schema,
        partition_by: Sequence[str | tuple[str, str]],
        sort_by: Sequence[str],
        location: str | None,
        properties: Mapping[str, str] | None,
    ) -> TableMetadata:
        """The metadata a new table would have (not written); checks the namespace exists
        and the table does not."""
        self._check_namespace_for_table(ident)
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ident)}")
        user_schema = schema_from_user(schema)
        spec = build_partition_spec(user_schema, partition_by)
        order = build_sort_order(user_schema, sort_by)
        props = dict(properties or {})
        version = P.FORMAT_VERSION.get(props)
        if location:
            check_location(location, f"Table {'.'.join(ident)}: location")
        check_location_properties(props, f"Table {'.'.join(ident)}:")
        table_location = (location or self.default_table_location(ident)).rstrip("/")
        metadata = new_table_metadata(
            user_schema, spec, order, table_location, props, format_version=version
        )
        self._check_new_table(ident, metadata)
        return metadata

    def _check_new_table(self, ident: Identifier, metadata: TableMetadata) -> None:
        """Refuse a new table this catalog cannot hold (e.g. at a location it does not
        allow); raises before anything is written. Every table is fine by default."""
        return None

    def _check_namespace_for_table(self, ident: Identifier) -> None:
        ns = namespace_of(ident)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(ns)}")

    def drop_table(self, identifier: str | Sequence[str], purge: bool = False) -> None:
        """Forget a table; with ``purge`` also delete its data and metadata files.

        Args:
            identifier: the table's name.
            purge: delete every file the table's metadata references, and its metadata files.

        Raises:
            NoSuchTableError: no such table.
        """
        ident = to_identifier(identifier)
        metadata: TableMetadata | None = None
        if purge:
            metadata = self.load_table(ident).metadata
        location = self._remove_table_entry(ident)
        if purge and metadata is not None:
            from icepark.catalog.purge import purge_table_files

            purge_table_files(self.io, metadata, location)

    def purge_table(self, identifier: str | Sequence[str]) -> None:
        """Drop a table and delete its files (:meth:`drop_table` with ``purge=True``).

        Args:
            identifier: the table's name.

        Raises:
            NoSuchTableError: no such table.
        """
        self.drop_table(identifier, purge=True)

    def commit_table(
        self,
        identifier: tuple[str, ...],
        base: TableMetadata | None,
        base_location: str | None,
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
    ) -> CommitResult:
        """Check ``requirements`` against the current metadata, apply ``updates``, swap.

        The low-level commit every table change ends in (the REST ``CommitTableRequest``).
        ``base_location`` is the metadata file the caller read; when the table has moved on,
        the requirements decide whether the updates still apply (they are checked against the
        fresh metadata, as a REST catalog does). With an ``AssertCreate`` requirement the
        table must not exist: the updates build its first metadata (``base`` is ignored)
        and a table created meanwhile fails the commit (``RequirementFailedError`` when it
        exists at the check, ``TableAlreadyExistsError`` when it appears before the swap).

        Args:
            identifier: the table's identifier.
            base: the metadata the caller read (None: read it here).
            base_location: the file ``base`` was read from.
            requirements: REST-shaped requirements, checked first.
            updates: REST-shaped updates, applied in order.

        Returns:
            The new metadata and its file (the current ones when nothing changed).

        Raises:
            RequirementFailedError: a requirement does not hold (a CommitFailedError).
            CommitFailedError: the pointer moved before the swap; the new file is deleted.
            CommitStateUnknownError: the outcome cannot be known; nothing is deleted.
            NoSuchTableError: the table does not exist (without ``AssertCreate``).
            TableAlreadyExistsError: a table created meanwhile (with ``AssertCreate``).
        """
        ident = to_identifier(identifier)
        if _creates(requirements):
            return self._commit_create(ident, requirements, updates)
        current_location = self._current_metadata_location(ident)
        if base is not None and current_location == base_location:
            current = base
        else:
            current = read_table_metadata(self.io, current_location)
        new_metadata = _apply(ident, current, current_location, requirements, updates)
        if new_metadata == current:
            return CommitResult(current, current_location)
        new_location = self._new_metadata_location(ident, new_metadata, current_location)
        self._write_metadata(new_metadata, new_location)
        try:
            self._swap_metadata_location(ident, current_location, new_location)
        except CommitStateUnknownError:
            raise
        except IceparkError:
            self.io.delete_quietly(new_location)
            raise
        self._delete_old_metadata(current, new_metadata)
        return CommitResult(new_metadata, new_location)

    def _commit_create(
        self,
        ident: Identifier,
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
    ) -> CommitResult:
        self._check_namespace_for_table(ident)
        name = ".".join(ident)
        new_metadata = _apply(ident, self._current_or_none(ident), None, requirements, updates)
        self._check_new_table(ident, new_metadata)
        new_location = self._new_metadata_location(ident, new_metadata, None)
        try:
            self._write_metadata(new_metadata, new_location)
        except CommitFailedError as exc:  # the file-system catalog: another create's file
            raise TableAlreadyExistsError(f"Table already exists: {name}") from exc
        try:
            self._swap_metadata_location(ident, None, new_location)
        except CommitStateUnknownError:
            raise
        except CommitFailedError as exc:
            self.io.delete_quietly(new_location)
            if self.table_exists(ident):
                raise TableAlreadyExistsError(f"Table already exists: {name}") from exc
            raise
        except IceparkError:
            self.io.delete_quietly(new_location)
            raise
        return CommitResult(new_metadata, new_location)

    def _current_or_none(self, ident: Identifier) -> TableMetadata | None:
        try:
            location = self._current_metadata_location(ident)
        except NoSuchTableError:
            return None
        return read_table_metadata(self.io, location)

    # -- several tables at once ------------------------------------------------------------

    def commit_tables(self, changes: Sequence[TableChange]) -> list[CommitResult]:
        """Commit several tables' changes atomically: all land or none does.

        Each change is ``(identifier, requirements, updates)`` (a REST ``CommitTableRequest``;
        ``AssertCreate`` creates the table). Every requirement is checked against its table's
        current metadata first; then each changed table's new metadata is written and every
        pointer swapped in one atomic step: a pointer that moved fails it all and the written
        files are deleted. A table whose updates change nothing is answered with its current
        metadata.

        Args:
            changes: ``(identifier, requirements, updates)`` per table, each table once.

        Returns:
            Each table's new metadata and file, in the order given.

        Raises:
            UnsupportedOperationError: this catalog cannot commit several tables atomically
                (before anything is read).
            CommitFailedError: a table's pointer moved or a requirement failed, naming it.
            CommitStateUnknownError: the outcome cannot be known; nothing is deleted.
            ValidationError: a table given twice.
        """
        self._check_multi_table()
        plans: list[tuple[Identifier, str | None, TableMetadata | None, TableMetadata]] = []
        for identifier, requirements, updates in changes:
            ident = to_identifier(identifier)
            if any(ident == p[0] for p in plans):
                raise ValidationError(
                    f"Table {'.'.join(ident)} appears more than once in one commit"
                )
            current_location: str | None = None
            current: TableMetadata | None = None
            if _creates(requirements):
                self._check_namespace_for_table(ident)
                current = self._current_or_none(ident)
            else:
                current_location = self._current_metadata_location(ident)
                current = read_table_metadata(self.io, current_location)
            new_metadata = _apply(ident, current, current_location, requirements, updates)
            if current is None:
                self._check_new_table(ident, new_metadata)
            plans.append((ident, current_location, current, new_metadata))

        results: list[CommitResult] = []
        swaps: list[tuple[Identifier, str | None, str]] = []
        written: list[str] = []
        try:
            for ident, current_location, current, new_metadata in plans:
                if current is not None and new_metadata == current:
                    assert current_location is not None
                    results.append(CommitResult(current, current_location))
                    continue
                new_location = self._new_metadata_location(ident, new_metadata, current_location)
                self._write_metadata(new_metadata, new_location)
                written.append(new_location)
                swaps.append((ident, current_location, new_location))
                results.append(CommitResult(new_metadata, new_location))
            if swaps:
                self._commit_tables(swaps)
        except CommitStateUnknownError:
            raise
        except BaseException:
            for location in written:
                self.io.delete_quietly(location)
            raise
        for (_, _, current, new_metadata), result in zip(plans, results, strict=True):
            if current is not None and result.metadata is new_metadata:
                self._delete_old_metadata(current, new_metadata)
        return results

    def _check_multi_table(self) -> None:
        """Raise ``UnsupportedOperationError`` when this catalog cannot commit several tables
        at once (before anything is read or written)."""
        if self._multi_table_refusal is not None:
            raise UnsupportedOperationError(
                f"Catalog {self.name!r} ({type(self).__name__}) cannot commit several tables "
                f"at once: {self._multi_table_refusal}. Commit them one by one, or use a SQL "
                "catalog."
            )

    def _commit_tables(self, swaps: Sequence[tuple[Identifier, str | None, str]]) -> None:
        """Swap every ``(identifier, expected, new)`` pointer (expected None: create) in one
        atomic step, or none: ``CommitFailedError`` naming a table whose pointer moved,
        ``CommitStateUnknownError`` when the outcome cannot be known. Catalogs that
        implement it set ``_multi_table_refusal`` to None."""
        raise UnsupportedOperationError(f"Catalog {self.name!r} cannot commit several tables")

    def commit_transaction(self, transactions: Sequence[Transaction]) -> list[CommitResult]:
        """Commit several tables' transactions (``table.transaction()`` with changes staged,
        not committed) atomically: all land or none does, in one attempt (no retry).

        On failure every file written for them is deleted (reload the tables and run the
        transactions again); on success each transaction's table holds its new metadata.

        Args:
            transactions: the transactions, on tables loaded from this catalog.

        Returns:
            Each table's new metadata and file, in the order given.

        Raises:
            UnsupportedOperationError: this catalog cannot commit several tables atomically
                (before anything is staged).
            ValidationError: a transaction's table was not loaded from this catalog.
            CommitFailedError: a table changed meanwhile, naming it.
            CommitStateUnknownError: the outcome cannot be known; nothing is deleted.
        """
        self._check_multi_table()
        for tx in transactions:
            if not isinstance(tx.table, Table) or tx.table.catalog is not self:
                raise ValidationError(
                    f"Cannot commit the transaction on {tx.table.name} with catalog "
                    f"{self.name!r}: its table was not loaded from this catalog (a create "
                    "transaction commits on its own: StagedTable.commit_transaction)"
                )
        prepared = []
        try:
            for tx in transactions:
                prepared.append(tx.prepare_commit())
            results = self.commit_tables(
                [(p.identifier, p.requirements, p.updates) for p in prepared]
            )
        except CommitStateUnknownError:
            raise  # nothing may be deleted: the commit may have landed
        except BaseException:
            for tx in transactions:
                tx.discard_commit()
            raise
        for tx, result in zip(transactions, results, strict=True):
            tx.finish_commit(result.metadata, result.metadata_location)
        return results

    # -- metadata files --------------------------------------------------------------------

    def _metadata_folder(self, metadata: TableMetadata) -> str:
        return P.metadata_folder(metadata.location, metadata.properties)

    @staticmethod
    def _metadata_suffix(metadata: TableMetadata) -> str:
        codec = P.METADATA_COMPRESSION.get(metadata.properties)
        return ".gz.metadata.json" if codec == "gzip" else ".metadata.json"

    def _write_metadata(self, metadata: TableMetadata, location: str) -> None:
        write_table_metadata(self.io, location, metadata)

    def _delete_old_metadata(self, base: TableMetadata, new: TableMetadata) -> None:
        """After a commit, with ``write.metadata.delete-after-commit.enabled`` (read from the
        new metadata), delete the metadata files the base logged that the new metadata's log
        no longer holds (as Java's ``CatalogUtil.deleteRemovedMetadataFiles``); a failed
        delete never fails the commit."""
        try:
            enabled = P.METADATA_DELETE_AFTER_COMMIT_ENABLED.get(new.properties)
        except ValidationError:
            return  # the commit has landed: a bad value must not make it look failed
        if not enabled:
            return
        kept = {e.metadata_file for e in new.metadata_log}
        for entry in base.metadata_log:
            if entry.metadata_file not in kept:
                self.io.delete_quietly(entry.metadata_file)


def _creates(requirements: Sequence[TableRequirement]) -> bool:
    return any(isinstance(r, AssertCreate) for r in requirements)


def _apply(
    ident: Identifier,
    current: TableMetadata | None,
    current_location: str | None,
    requirements: Sequence[TableRequirement],
    updates: Sequence[TableUpdate],
) -> TableMetadata:
    """Check ``requirements`` against ``current`` (None: the table does not exist) and build
    the metadata ``updates`` make of it; a failed requirement names the table."""
    for requirement in requirements:
        try:
            requirement.validate(current)
        except RequirementFailedError as exc:
            raise RequirementFailedError(f"Cannot commit {'.'.join(ident)}: {exc}") from exc
    builder = MetadataBuilder(current).apply_all(updates)
    if current_location is not None:
        # the log's length is read from the new metadata's properties, as Java's builder
        # does: a commit that sets write.metadata.previous-versions-max applies it at once
        builder.with_previous_metadata(current_location)
    return builder.build()


_VERSION_PREFIX = re.compile(r"^(\d+)-")


def next_sequential_metadata_name(
    metadata: TableMetadata, previous: str | None, suffix: str
) -> str:
    """``00001-<uuid>.metadata.json`` numbered after the previous file, as Java names them."""
    version = 0
    if previous:
        base = previous.rsplit("/", 1)[-1]
        m = _VERSION_PREFIX.match(base)
        version = int(m.group(1)) + 1 if m else 0
    return f"{version:05d}-{uuid.uuid4()}{suffix}"
