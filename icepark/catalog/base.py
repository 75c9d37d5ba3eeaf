"""The catalog interface and the commit procedure every catalog shares.

A catalog only knows where each table's current metadata file is. Committing is: check the
requirements against the current metadata, apply the updates through the metadata builder,
write a new metadata file that must not exist yet, then swap the pointer atomically
(`_swap_metadata_location`), which each catalog implements as a compare-and-swap.
"""

from __future__ import annotations

import gzip
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from icepark.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    IceparkError,
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationError,
)
from icepark.io import FileIO, load_file_io
from icepark.spec import properties as P
from icepark.spec.builder import MetadataBuilder
from icepark.spec.metadata import TableMetadata, table_metadata_to_json
from icepark.spec.new_table import new_table_metadata
from icepark.spec.partitioning import build_partition_spec
from icepark.spec.schema import Schema
from icepark.spec.sorting import build_sort_order
from icepark.spec.updates import TableRequirement, TableUpdate
from icepark.table.interface import CommitResult, read_table_metadata
from icepark.table.table import Table

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Catalog",
    "Identifier",
    "Properties",
    "to_identifier",
    "namespace_of",
    "table_name_of",
    "schema_from_user",
]

Identifier = tuple[str, ...]
Properties = dict[str, str]


def to_identifier(name: str | Sequence[str]) -> Identifier:
    """``"db.t"`` or ``("db", "t")`` -> ``("db", "t")``."""
    parts = tuple(name.split(".")) if isinstance(name, str) else tuple(name)
    if not parts or any(not p for p in parts):
        raise ValidationError(f"Invalid identifier: {name!r}")
    return parts


def namespace_of(identifier: Identifier) -> Identifier:
    if len(identifier) < 2:
        raise ValidationError(f"Table identifier needs a namespace: {'.'.join(identifier)!r}")
    return identifier[:-1]


def table_name_of(identifier: Identifier) -> str:
    return identifier[-1]


def schema_from_user(schema: Schema | pa.Schema) -> Schema:
    """An icepark schema from an icepark or pyarrow schema (fresh ids where it has none)."""
    if isinstance(schema, Schema):
        return schema
    import pyarrow as pa  # a pyarrow schema means pyarrow is loaded already

    from icepark.arrow.schema import arrow_to_schema

    if isinstance(schema, pa.Schema):
        return arrow_to_schema(schema, assign_ids=True)
    raise ValidationError(
        f"Expected an icepark Schema or a pyarrow Schema, got {type(schema).__name__}"
    )


class Catalog(ABC):
    """Namespaces, tables and atomic commits of table metadata."""

    def __init__(self, name: str, properties: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.properties: Properties = dict(properties or {})
        self._io: FileIO | None = None

    # -- file IO ---------------------------------------------------------------------------

    @property
    def io(self) -> FileIO:
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
        """Create a namespace; NamespaceAlreadyExistsError when it exists."""

    @abstractmethod
    def drop_namespace(self, namespace: str | Sequence[str]) -> None:
        """Drop an empty namespace; NamespaceNotEmptyError when it holds tables."""

    @abstractmethod
    def list_namespaces(self, parent: str | Sequence[str] = ()) -> list[Identifier]:
        """The namespaces directly below ``parent`` (all top-level ones by default)."""

    @abstractmethod
    def load_namespace_properties(self, namespace: str | Sequence[str]) -> Properties:
        """The namespace's properties; NoSuchNamespaceError when it does not exist."""

    @abstractmethod
    def update_namespace_properties(
        self,
        namespace: str | Sequence[str],
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> None:
        """Remove and set namespace properties."""

    def namespace_exists(self, namespace: str | Sequence[str]) -> bool:
        try:
            self.load_namespace_properties(namespace)
            return True
        except NoSuchNamespaceError:
            return False

    def create_namespace_if_not_exists(
        self, namespace: str | Sequence[str], properties: Properties | None = None
    ) -> None:
        if not self.namespace_exists(namespace):
            try:
                self.create_namespace(namespace, properties)
            except NamespaceAlreadyExistsError:
                pass

    # -- tables: pointer storage (per catalog) ---------------------------------------------

    @abstractmethod
    def list_tables(self, namespace: str | Sequence[str]) -> list[Identifier]:
        """The tables of a namespace."""

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
        """Rename a table (its files stay where they are)."""

    @abstractmethod
    def register_table(self, identifier: str | Sequence[str], metadata_location: str) -> Table:
        """Add an existing table to the catalog by its metadata file."""

    def default_table_location(self, identifier: Identifier) -> str:
        warehouse = self.properties.get("warehouse")
        if not warehouse:
            raise ValidationError(
                f"Cannot choose a location for {'.'.join(identifier)}: the catalog has no warehouse"
            )
        return "/".join([warehouse.rstrip("/"), *identifier])

    # -- tables: shared behaviour ----------------------------------------------------------

    def metadata_location(self, identifier: str | Sequence[str]) -> str:
        """Where the table's current metadata file is (one catalog lookup, no file read)."""
        return self._current_metadata_location(to_identifier(identifier))

    def load_table(self, identifier: str | Sequence[str]) -> Table:
        ident = to_identifier(identifier)
        location = self._current_metadata_location(ident)
        metadata = read_table_metadata(self.io, location)
        return Table(ident, metadata, location, self._table_io(metadata), self)

    def table_exists(self, identifier: str | Sequence[str]) -> bool:
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
        """Create a table; terms like ``day(ts)``, ``bucket(16, id)``; format version 2 unless
        ``properties`` has ``format-version``."""
        ident = to_identifier(identifier)
        self._check_namespace_for_table(ident)
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ident)}")
        user_schema = schema_from_user(schema)
        spec = build_partition_spec(user_schema, partition_by)
        order = build_sort_order(user_schema, sort_by)
        props = dict(properties or {})
        version = P.FORMAT_VERSION.get(props)
        table_location = (location or self.default_table_location(ident)).rstrip("/")
        metadata = new_table_metadata(
            user_schema, spec, order, table_location, props, format_version=version
        )
        return self.create_table_from_metadata(ident, metadata)

    def create_table_from_metadata(
        self, identifier: str | Sequence[str], metadata: TableMetadata
    ) -> Table:
        """Create a table whose first metadata is ``metadata`` (made by ``new_table_metadata``
        or by applying a create transaction's updates, as the REST server does): its file is
        written and the catalog entry swapped in from nothing, so of two creates one wins."""
        ident = to_identifier(identifier)
        self._check_namespace_for_table(ident)
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ident)}")
        new_location = self._new_metadata_location(ident, metadata, None)
        self._write_metadata(metadata, new_location)
        try:
            self._swap_metadata_location(ident, None, new_location)
        except CommitFailedError as exc:
            self._delete_quietly(new_location)
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ident)}") from exc
        return Table(ident, metadata, new_location, self._table_io(metadata), self)

    def _check_namespace_for_table(self, ident: Identifier) -> None:
        ns = namespace_of(ident)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(ns)}")

    def drop_table(self, identifier: str | Sequence[str], purge: bool = False) -> None:
        """Forget the table; with ``purge`` also delete its data and metadata files."""
        ident = to_identifier(identifier)
        metadata: TableMetadata | None = None
        if purge:
            metadata = self.load_table(ident).metadata
        location = self._remove_table_entry(ident)
        if purge and metadata is not None:
            from icepark.catalog.purge import purge_table_files

            purge_table_files(self.io, metadata, location)

    def purge_table(self, identifier: str | Sequence[str]) -> None:
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

        ``base_location`` is the metadata file the caller read; when the table has moved on,
        the requirements decide whether the updates still apply (they are checked against the
        fresh metadata, as a REST catalog does).
        """
        ident = to_identifier(identifier)
        current_location = self._current_metadata_location(ident)
        if base is not None and current_location == base_location:
            current = base
        else:
            current = read_table_metadata(self.io, current_location)
        for requirement in requirements:
            requirement.validate(current)
        builder = MetadataBuilder(current)
        for update in updates:
            builder.apply(update)
        # the log's length is read from the new metadata's properties, as Java's builder
        # does: a commit that sets write.metadata.previous-versions-max applies it at once
        builder.with_previous_metadata(current_location)
        new_metadata = builder.build()
        if new_metadata == current:
            return CommitResult(current, current_location)
        new_location = self._new_metadata_location(ident, new_metadata, current_location)
        self._write_metadata(new_metadata, new_location)
        try:
            self._swap_metadata_location(ident, current_location, new_location)
        except CommitFailedError:
            self._delete_quietly(new_location)
            raise
        except CommitStateUnknownError:
            raise
        except IceparkError:
            self._delete_quietly(new_location)
            raise
        self._delete_old_metadata(current, new_metadata)
        return CommitResult(new_metadata, new_location)

    # -- metadata files --------------------------------------------------------------------

    def _metadata_folder(self, metadata: TableMetadata) -> str:
        return P.metadata_folder(metadata.location, metadata.properties)

    @staticmethod
    def _metadata_suffix(metadata: TableMetadata) -> str:
        codec = P.METADATA_COMPRESSION.get(metadata.properties)
        return ".gz.metadata.json" if codec == "gzip" else ".metadata.json"

    def _write_metadata(self, metadata: TableMetadata, location: str) -> None:
        data = table_metadata_to_json(metadata).encode("utf-8")
        if location.endswith(".gz.metadata.json"):
            data = gzip.compress(data, mtime=0)
        self.io.new_output(location).write_bytes(data, overwrite=False)

    def _delete_quietly(self, location: str) -> None:
        try:
            self.io.delete(location)
        except Exception:
            pass

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
                self._delete_quietly(entry.metadata_file)


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
