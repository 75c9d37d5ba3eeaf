"""The file-system ("hadoop") catalog: the warehouse folder tree is the catalog.

Layout, as Java's ``HadoopCatalog`` writes it and the reference engine reads it::

    <warehouse>/<ns>/.../<table>/metadata/v<N>.metadata.json
    <warehouse>/<ns>/.../<table>/metadata/version-hint.text      (holds N)

A commit writes ``v<N+1>.metadata.json`` only if it does not exist yet (an atomic create on
local disks): whoever creates it first wins, the others fail and retry. The version hint is
then updated; readers also look past a stale hint, as Java does.

Object storage (``s3://``) has no atomic create-if-absent or rename here: two writers
committing at once could both "win" and one commit would be lost. So on a warehouse that is
not a local file system the catalog reads tables but refuses to create, register or commit
them, with an error that points to the SQL catalog (whose commit is an atomic swap in the
database), unless the catalog property ``filesystem.single-writer`` is ``true``: the user's
promise that one process at a time commits to these tables (e.g. one scheduled job). The name
is scoped to this catalog type, as Java scopes its catalogs' own properties (``jdbc.*``): the
risk is this catalog's commit protocol, not the storage's settings (``s3.*``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow.fs as pafs

from icepark.catalog.base import Catalog, Identifier, Properties, namespace_of, to_identifier
from icepark.errors import (
    CatalogConfigError,
    CommitFailedError,
    FileAlreadyExistsError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    UnsupportedOperationError,
    ValidationError,
)
from icepark.spec.metadata import TableMetadata
from icepark.spec.updates import TableRequirement, TableUpdate
from icepark.table.interface import CommitResult, read_table_metadata
from icepark.table.table import Table

__all__ = ["FileSystemCatalog", "SINGLE_WRITER"]

SINGLE_WRITER = "filesystem.single-writer"
"""Catalog property: ``true`` allows commits on object storage (one writer at a time only)."""

_VERSION_HINT = "version-hint.text"
_NAMESPACE_PROPERTIES = ".namespace-properties.json"
_VERSION_FILE = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json$")


class FileSystemCatalog(Catalog):
    """Tables as folders under a warehouse; namespaces as the folders above them (Java's
    ``HadoopCatalog`` layout). A commit is an exclusive create of the next metadata file,
    atomic on a local file system; on object storage it is refused unless the
    ``filesystem.single-writer`` property says only one process commits.

    Args:
        name: the catalog's name.
        properties: catalog properties: ``warehouse`` (required), ``s3.*``...
        **kw: more properties, for names that are identifiers (``warehouse=...``).

    Raises:
        CatalogConfigError: no ``warehouse``.
    """

    _views_refusal = (
        "a folder is a table here and nothing marks a folder as a view (Java's Hadoop catalog "
        "holds no views either); use a SQL or REST catalog"
    )

    _multi_table_refusal = (
        "its commit is an exclusive create of each table's next metadata file, one table at "
        "a time, so a second table's conflict cannot undo the first table's commit (Java's "
        "HadoopCatalog has no multi-table commit either)"
    )

    def __init__(
        self, name: str = "default", properties: Mapping[str, str] | None = None, **kw: str
    ) -> None:
        super().__init__(name, {**(properties or {}), **kw})
        warehouse = self.properties.get("warehouse")
        if not warehouse:
            raise CatalogConfigError(f"File-system catalog {name!r} needs a 'warehouse' property")
        self.warehouse = warehouse.rstrip("/")
        self._fs, self._root = self.io.filesystem(self.warehouse)
        self._fs.create_dir(self._root, recursive=True)

    def _check_commits_safe(self, identifier: Identifier) -> None:
        """Refuse to write table metadata where creating a file is not atomic (object
        storage), unless the catalog says there is a single writer (see the module)."""
        if isinstance(self._fs, pafs.LocalFileSystem):
            return
        if self.properties.get(SINGLE_WRITER, "").strip().lower() == "true":
            return
        raise CatalogConfigError(
            f"Cannot commit table {'.'.join(identifier)}: the file-system catalog "
            f"{self.name!r} keeps it at {self.warehouse}, on object storage, where a commit "
            "cannot be made atomic (no exclusive create or rename), so two concurrent "
            "commits could both succeed and one would be lost. Use the SQL catalog for "
            "tables on object storage (uri: sqlite:///path/catalog.db or postgresql://...; "
            "it commits with an atomic swap in the database), or a REST catalog once icepark "
            f"has one; or set the catalog property {SINGLE_WRITER}=true if only one process "
            "at a time ever commits to these tables."
        )

    # -- paths -----------------------------------------------------------------------------

    def _path(self, parts: Sequence[str]) -> str:
        return "/".join([self._root, *parts])

    def _location(self, parts: Sequence[str]) -> str:
        return "/".join([self.warehouse, *parts])

    def _info(self, path: str) -> Any:
        return self._fs.get_file_info(path)

    def _is_dir(self, path: str) -> bool:
        return bool(self._info(path).type == pafs.FileType.Directory)

    def _children(self, path: str) -> list[Any]:
        if not self._is_dir(path):
            return []
        return list(self._fs.get_file_info(pafs.FileSelector(path, recursive=False)))

    def _is_table_dir(self, path: str) -> bool:
        metadata_dir = path + "/metadata"
        return any(
            c.base_name == _VERSION_HINT or c.base_name.endswith(".metadata.json")
            for c in self._children(metadata_dir)
        )

    # -- namespaces ------------------------------------------------------------------------

    def _check_namespace(self, ns: Identifier) -> str:
        path = self._path(ns)
        if not ns or not self._is_dir(path) or self._is_table_dir(path):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(ns)}")
        return path

    def create_namespace(
        self, namespace: str | Sequence[str], properties: Properties | None = None
    ) -> None:
        ns = to_identifier(namespace)
        path = self._path(ns)
        if self._is_dir(path):
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {'.'.join(ns)}")
        self._fs.create_dir(path, recursive=True)
        if properties:
            self._write_properties(path, dict(properties))

    def _write_properties(self, path: str, props: dict[str, str]) -> None:
        target = path + "/" + _NAMESPACE_PROPERTIES
        if not props:
            if self._info(target).type == pafs.FileType.File:
                self._fs.delete_file(target)
            return
        with self._fs.open_output_stream(target) as out:
            out.write(json.dumps(props, sort_keys=True).encode())

    def drop_namespace(self, namespace: str | Sequence[str]) -> None:
        ns = to_identifier(namespace)
        path = self._check_namespace(ns)
        if any(c.type == pafs.FileType.Directory for c in self._children(path)):
            raise NamespaceNotEmptyError(f"Namespace is not empty: {'.'.join(ns)}")
        self._fs.delete_dir(path)

    def list_namespaces(self, parent: str | Sequence[str] = ()) -> list[Identifier]:
        prefix = to_identifier(parent) if parent else ()
        path = self._check_namespace(prefix) if prefix else self._root
        return sorted(
            (*prefix, c.base_name)
            for c in self._children(path)
            if c.type == pafs.FileType.Directory
            and not c.base_name.startswith(".")
            and not self._is_table_dir(c.path)
        )

    def load_namespace_properties(self, namespace: str | Sequence[str]) -> Properties:
        ns = to_identifier(namespace)
        path = self._check_namespace(ns)
        props = {"location": self._location(ns)}
        target = path + "/" + _NAMESPACE_PROPERTIES
        if self._info(target).type == pafs.FileType.File:
            with self._fs.open_input_stream(target) as f:
                props.update(json.loads(f.read()))
        return props

    def update_namespace_properties(
        self,
        namespace: str | Sequence[str],
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> None:
        ns = to_identifier(namespace)
        path = self._check_namespace(ns)
        updates = dict(updates or {})
        if "location" in updates or "location" in set(removals):
            raise UnsupportedOperationError(
                f"Cannot change the location of namespace {'.'.join(ns)}: it is its folder"
            )
        props = self.load_namespace_properties(ns)
        props.pop("location")
        for key in removals:
            props.pop(key, None)
        props.update(updates)
        self._write_properties(path, props)

    # -- tables ----------------------------------------------------------------------------

    def default_table_location(self, identifier: Identifier) -> str:
        return self._location(identifier)

    def list_tables(self, namespace: str | Sequence[str]) -> list[Identifier]:
        ns = to_identifier(namespace)
        path = self._check_namespace(ns)
        return sorted(
            (*ns, c.base_name)
            for c in self._children(path)
            if c.type == pafs.FileType.Directory and self._is_table_dir(c.path)
        )

    def _versions(self, ident: Identifier) -> dict[int, str]:
        metadata_dir = self._path(ident) + "/metadata"
        found = {}
        for c in self._children(metadata_dir):
            m = _VERSION_FILE.match(c.base_name)
            if m:
                found[int(m.group(1))] = c.base_name
        return found

    def _current_version(self, ident: Identifier) -> tuple[int, str]:
        hint_path = self._path(ident) + f"/metadata/{_VERSION_HINT}"
        versions = self._versions(ident)
        version: int | None = None
        if self._info(hint_path).type == pafs.FileType.File:
            with self._fs.open_input_stream(hint_path) as f:
                text = f.read().decode().strip()
            version = int(text) if text.isdigit() else None
        if version is None or version not in versions:
            if not versions:
                raise NoSuchTableError(f"Table does not exist: {'.'.join(ident)}")
            version = max(versions)
        while version + 1 in versions:  # the hint lags behind a commit that landed
            version += 1
        return version, versions[version]

    def _current_metadata_location(self, identifier: Identifier) -> str:
        _, name = self._current_version(identifier)
        return self._location(identifier) + "/metadata/" + name

    def _new_metadata_location(
        self, identifier: Identifier, metadata: TableMetadata, previous: str | None
    ) -> str:
        version = 0
        if previous is not None:
            m = _VERSION_FILE.match(previous.rsplit("/", 1)[-1])
            if m is None:
                raise ValidationError(f"Not a file-system catalog metadata file: {previous}")
            version = int(m.group(1))
        suffix = self._metadata_suffix(metadata)
        return self._location(identifier) + f"/metadata/v{version + 1}{suffix}"

    def _write_metadata(self, metadata: TableMetadata, location: str) -> None:
        try:
            super()._write_metadata(metadata, location)
        except FileAlreadyExistsError as exc:
            raise CommitFailedError(
                f"Cannot commit: {location} was written by a concurrent commit"
            ) from exc

    def _swap_metadata_location(
        self, identifier: Identifier, expected: str | None, new: str
    ) -> None:
        # The exclusive create of ``new`` in _write_metadata was the atomic step: from then on
        # the commit has landed, and a concurrent writer may already have built the next
        # version on it (so a newer version existing now is no reason to fail, and deleting
        # ``new`` would cut that writer's history). Only the version hint is left to record.
        m = _VERSION_FILE.match(new.rsplit("/", 1)[-1])
        if m is None:
            raise ValidationError(f"Not a file-system catalog metadata file: {new}")
        version = int(m.group(1))
        expected_match = _VERSION_FILE.match((expected or "").rsplit("/", 1)[-1])
        expected_version = int(expected_match.group(1)) if expected_match else 0
        if expected_version != version - 1:  # a pointer that does not follow ``expected``
            raise CommitFailedError(
                f"Cannot commit {'.'.join(identifier)}: {expected} is not the version before {new}"
            )
        if max(self._versions(identifier), default=0) > version:
            return  # a later commit landed already; its hint (or a reader's look-ahead) wins
        hint = self.io.new_output(self._location(identifier) + f"/metadata/{_VERSION_HINT}")
        hint.write_bytes(m.group(1).encode(), overwrite=True)

    def commit_table(
        self,
        identifier: tuple[str, ...],
        base: TableMetadata | None,
        base_location: str | None,
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
    ) -> CommitResult:
        self._check_commits_safe(to_identifier(identifier))
        return super().commit_table(identifier, base, base_location, requirements, updates)

    def _check_new_table(self, ident: Identifier, metadata: TableMetadata) -> None:
        self._check_commits_safe(ident)
        if metadata.location.rstrip("/") != self._location(ident):
            raise ValidationError(
                f"The file-system catalog keeps table {'.'.join(ident)} at "
                f"{self._location(ident)}; a custom location ({metadata.location}) is not allowed"
            )

    def _remove_table_entry(self, identifier: Identifier) -> str:
        location = self._current_metadata_location(identifier)
        self._fs.delete_dir(self._path(identifier))
        return location

    def drop_table(self, identifier: str | Sequence[str], purge: bool = False) -> None:
        """Drop the table's folder (it *is* the catalog entry, as in Java's HadoopCatalog);
        with ``purge`` also delete files the table references outside its folder."""
        super().drop_table(identifier, purge)

    def rename_table(
        self, from_identifier: str | Sequence[str], new_identifier: str | Sequence[str]
    ) -> Table:
        raise UnsupportedOperationError(
            "The file-system catalog cannot rename tables: the folder is the name and the "
            "metadata records absolute paths (Java's HadoopCatalog refuses too)"
        )

    def register_table(self, identifier: str | Sequence[str], metadata_location: str) -> Table:
        """Register by copying the metadata file in as ``v1.metadata.json``."""
        ident = to_identifier(identifier)
        self._check_commits_safe(ident)
        self._check_namespace(namespace_of(ident))
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ident)}")
        metadata = read_table_metadata(self.io, metadata_location)
        new_location = self._new_metadata_location(ident, metadata, None)
        try:
            self.io.new_output(new_location).write_bytes(
                self.io.new_input(metadata_location).read_bytes(), overwrite=False
            )
        except FileAlreadyExistsError as exc:
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ident)}") from exc
        self._swap_metadata_location(ident, None, new_location)
        return self.load_table(ident)
