"""A SQL catalog on SQLAlchemy, sharing the tables of Iceberg's JDBC catalog.

The tables are ``iceberg_tables`` (one row per table: its metadata pointer) and
``iceberg_namespace_properties`` (one row per namespace property), laid out as Java's
``JdbcCatalog`` lays them out, so Java, PyIceberg and icepark can share one database.
A commit is ``UPDATE ... SET metadata_location = new WHERE metadata_location = old``: the
database makes it an atomic compare-and-swap; a multi-table commit runs one such update per
table in a single database transaction.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Column,
    MetaData,
    String,
    and_,
    create_engine,
    delete,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy import (
    Table as SqlTable,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from icepark.catalog.base import (
    Catalog,
    Identifier,
    Properties,
    namespace_of,
    next_sequential_metadata_name,
    to_identifier,
)
from icepark.errors import (
    CatalogConfigError,
    CommitFailedError,
    CommitStateUnknownError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
    ValidationError,
    ViewAlreadyExistsError,
)
from icepark.spec.metadata import TableMetadata
from icepark.table.interface import read_table_metadata
from icepark.table.table import Table

__all__ = ["SqlCatalog"]

_metadata = MetaData()
_tables = SqlTable(
    "iceberg_tables",
    _metadata,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("table_namespace", String(255), primary_key=True, nullable=False),
    Column("table_name", String(255), primary_key=True, nullable=False),
    Column("metadata_location", String(1000)),
    Column("previous_metadata_location", String(1000)),
    Column("iceberg_type", String(5)),
)
_namespace_props = SqlTable(
    "iceberg_namespace_properties",
    _metadata,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("namespace", String(255), primary_key=True, nullable=False),
    Column("property_key", String(255), primary_key=True),
    Column("property_value", String(1000)),
)
_TABLE_TYPE = "TABLE"
_VIEW_TYPE = "VIEW"
_EXISTS_PROPERTY = "exists"


def _ns(namespace: str | Sequence[str]) -> Identifier:
    return to_identifier(namespace)


def _ns_str(namespace: Identifier) -> str:
    return ".".join(namespace)


class SqlCatalog(Catalog):
    """Iceberg's JDBC catalog layout on any SQLAlchemy database (SQLite, PostgreSQL, ...):
    the layout Java's ``JdbcCatalog`` and PyIceberg's ``SqlCatalog`` use, so they share its
    tables. Commits are an atomic swap of the metadata pointer in the database. Its tables
    are created on first use (unless ``init-catalog-tables`` is ``false``).

    Args:
        name: the catalog's name; its rows in the database are kept under it.
        properties: catalog properties: ``uri`` (a SQLAlchemy URL, required),
            ``warehouse`` (where new tables go), ``s3.*``...
        **kw: more properties, for names that are identifiers (``uri=...``).

    Raises:
        CatalogConfigError: no ``uri``.
    """

    _multi_table_refusal = None  # _commit_tables: one database transaction
    _views_refusal = None  # views are rows with iceberg_type VIEW, as in Java's JDBC catalog

    def __init__(
        self, name: str = "default", properties: Mapping[str, str] | None = None, **kw: str
    ) -> None:
        super().__init__(name, {**(properties or {}), **kw})
        uri = self.properties.get("uri")
        if not uri:
            raise CatalogConfigError(f"SQL catalog {name!r} needs a 'uri' property")
        self.engine = _make_engine(uri)
        if self.properties.get("init-catalog-tables", "true").lower() == "true":
            _metadata.create_all(self.engine, checkfirst=True)

    def _table_filter(self, ident: Identifier) -> Any:
        return and_(
            _tables.c.catalog_name == self.name,
            _tables.c.table_namespace == _ns_str(namespace_of(ident)),
            _tables.c.table_name == ident[-1],
            or_(_tables.c.iceberg_type == _TABLE_TYPE, _tables.c.iceberg_type.is_(None)),
        )

    # -- namespaces ------------------------------------------------------------------------

    def _namespace_props(self, namespace: Identifier) -> dict[str, str] | None:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(_namespace_props.c.property_key, _namespace_props.c.property_value).where(
                    _namespace_props.c.catalog_name == self.name,
                    _namespace_props.c.namespace == _ns_str(namespace),
                )
            ).all()
            if rows:
                return {k: v for k, v in rows if k is not None}
            has_tables = conn.execute(
                select(_tables.c.table_name)
                .where(
                    _tables.c.catalog_name == self.name,
                    or_(
                        _tables.c.table_namespace == _ns_str(namespace),
                        _tables.c.table_namespace.like(_ns_str(namespace) + ".%"),
                    ),
                )
                .limit(1)
            ).first()
        return {} if has_tables else None

    def create_namespace(
        self, namespace: str | Sequence[str], properties: Properties | None = None
    ) -> None:
        ns = _ns(namespace)
        if self._namespace_props(ns) is not None:
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {_ns_str(ns)}")
        props = dict(properties or {}) or {_EXISTS_PROPERTY: "true"}
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(_namespace_props),
                    [
                        {
                            "catalog_name": self.name,
                            "namespace": _ns_str(ns),
                            "property_key": k,
                            "property_value": v,
                        }
                        for k, v in props.items()
                    ],
                )
        except IntegrityError as exc:
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {_ns_str(ns)}") from exc

    def drop_namespace(self, namespace: str | Sequence[str]) -> None:
        ns = _ns(namespace)
        if self._namespace_props(ns) is None:
            raise NoSuchNamespaceError(f"Namespace does not exist: {_ns_str(ns)}")
        if self.list_tables(ns) or self._list_view_names(ns):
            raise NamespaceNotEmptyError(f"Namespace is not empty: {_ns_str(ns)}")
        with self.engine.begin() as conn:
            conn.execute(
                delete(_namespace_props).where(
                    _namespace_props.c.catalog_name == self.name,
                    _namespace_props.c.namespace == _ns_str(ns),
                )
            )

    def list_namespaces(self, parent: str | Sequence[str] = ()) -> list[Identifier]:
        prefix = tuple(parent) if not isinstance(parent, str) else to_identifier(parent)
        with self.engine.connect() as conn:
            names = {
                r[0]
                for r in conn.execute(
                    select(_tables.c.table_namespace).where(_tables.c.catalog_name == self.name)
                )
            }
            names |= {
                r[0]
                for r in conn.execute(
                    select(_namespace_props.c.namespace).where(
                        _namespace_props.c.catalog_name == self.name
                    )
                )
            }
        result: set[Identifier] = set()
        for name in names:
            parts = tuple(name.split("."))
            if len(parts) > len(prefix) and parts[: len(prefix)] == prefix:
                result.add(parts[: len(prefix) + 1])
        if prefix and not result and self._namespace_props(prefix) is None:
            raise NoSuchNamespaceError(f"Namespace does not exist: {_ns_str(prefix)}")
        return sorted(result)

    def load_namespace_properties(self, namespace: str | Sequence[str]) -> Properties:
        ns = _ns(namespace)
        props = self._namespace_props(ns)
        if props is None:
            raise NoSuchNamespaceError(f"Namespace does not exist: {_ns_str(ns)}")
        return props

    def update_namespace_properties(
        self,
        namespace: str | Sequence[str],
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> None:
        ns = _ns(namespace)
        current = self.load_namespace_properties(ns)
        removals = set(removals)
        updates = dict(updates or {})
        overlap = removals & set(updates)
        if overlap:
            raise ValidationError(f"Properties both removed and set: {sorted(overlap)}")
        where = and_(
            _namespace_props.c.catalog_name == self.name,
            _namespace_props.c.namespace == _ns_str(ns),
        )
        with self.engine.begin() as conn:
            if removals:
                conn.execute(
                    delete(_namespace_props).where(
                        where, _namespace_props.c.property_key.in_(removals)
                    )
                )
            for key, value in updates.items():
                if key in current:
                    conn.execute(
                        update(_namespace_props)
                        .where(where, _namespace_props.c.property_key == key)
                        .values(property_value=value)
                    )
                else:
                    conn.execute(
                        insert(_namespace_props).values(
                            catalog_name=self.name,
                            namespace=_ns_str(ns),
                            property_key=key,
                            property_value=value,
                        )
                    )
            remaining = conn.execute(select(_namespace_props.c.property_key).where(where)).first()
            if remaining is None:
                conn.execute(
                    insert(_namespace_props).values(
                        catalog_name=self.name,
                        namespace=_ns_str(ns),
                        property_key=_EXISTS_PROPERTY,
                        property_value="true",
                    )
                )

    def default_table_location(self, identifier: Identifier) -> str:
        props = self._namespace_props(namespace_of(identifier)) or {}
        if props.get("location"):
            return props["location"].rstrip("/") + "/" + identifier[-1]
        return super().default_table_location(identifier)

    # -- tables ----------------------------------------------------------------------------

    def list_tables(self, namespace: str | Sequence[str]) -> list[Identifier]:
        ns = _ns(namespace)
        if self._namespace_props(ns) is None:
            raise NoSuchNamespaceError(f"Namespace does not exist: {_ns_str(ns)}")
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(_tables.c.table_name).where(
                    _tables.c.catalog_name == self.name,
                    _tables.c.table_namespace == _ns_str(ns),
                    or_(_tables.c.iceberg_type == _TABLE_TYPE, _tables.c.iceberg_type.is_(None)),
                )
            ).all()
        return sorted((*ns, r[0]) for r in rows)

    def _current_metadata_location(self, identifier: Identifier) -> str:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(_tables.c.metadata_location).where(self._table_filter(identifier))
            ).first()
        if row is None or not row[0]:
            raise NoSuchTableError(f"Table does not exist: {'.'.join(identifier)}")
        return str(row[0])

    def _new_metadata_location(
        self, identifier: Identifier, metadata: TableMetadata, previous: str | None
    ) -> str:
        name = next_sequential_metadata_name(metadata, previous, self._metadata_suffix(metadata))
        return f"{self._metadata_folder(metadata)}/{name}"

    def _swap_metadata_location(
        self, identifier: Identifier, expected: str | None, new: str
    ) -> None:
        self._commit_tables([(identifier, expected, new)])

    def _commit_tables(
        self, swaps: Sequence[tuple[Identifier, str | None, str]], kind: str = _TABLE_TYPE
    ) -> None:
        """Every swap in one database transaction: each pointer is an ``UPDATE ... WHERE
        metadata_location = expected`` (an ``INSERT`` to create); if one matches no row the
        transaction rolls back and nothing changes. Rows are taken in identifier order, so
        two multi-table commits cannot deadlock on PostgreSQL. ``kind`` is the rows'
        ``iceberg_type`` (views swap through here too)."""
        ordered = sorted(swaps, key=lambda s: s[0])
        names = ", ".join(".".join(ident) for ident, _, _ in ordered)
        doing: Identifier = ordered[0][0] if ordered else ()
        try:
            with self.engine.begin() as conn:
                for ident, expected, new in ordered:
                    doing = ident
                    self._swap_in(conn, ident, expected, new, kind)
        except IntegrityError as exc:
            raise CommitFailedError(f"Cannot create {'.'.join(doing)}: it exists already") from exc
        except OperationalError as exc:
            if _is_lock_error(exc):
                raise CommitFailedError(
                    f"Cannot commit {names}: database is busy ({exc.orig})"
                ) from exc
            raise CommitStateUnknownError(
                f"Commit of {names} has an unknown outcome: {exc.orig}"
            ) from exc
        except DBAPIError as exc:
            raise CommitStateUnknownError(
                f"Commit of {names} has an unknown outcome: {exc.orig}"
            ) from exc

    def _swap_in(
        self, conn: Any, ident: Identifier, expected: str | None, new: str, kind: str
    ) -> None:
        if expected is None:
            conn.execute(
                insert(_tables).values(
                    catalog_name=self.name,
                    table_namespace=_ns_str(namespace_of(ident)),
                    table_name=ident[-1],
                    metadata_location=new,
                    previous_metadata_location=None,
                    iceberg_type=kind,
                )
            )
            return
        row = self._view_filter(ident) if kind == _VIEW_TYPE else self._table_filter(ident)
        result = conn.execute(
            update(_tables)
            .where(row, _tables.c.metadata_location == expected)
            .values(metadata_location=new, previous_metadata_location=expected)
        )
        if result.rowcount != 1:
            raise CommitFailedError(
                f"Cannot commit {'.'.join(ident)}: metadata location {expected} has changed"
            )

    def _remove_table_entry(self, identifier: Identifier) -> str:
        location = self._current_metadata_location(identifier)
        with self.engine.begin() as conn:
            conn.execute(delete(_tables).where(self._table_filter(identifier)))
        return location

    def rename_table(
        self, from_identifier: str | Sequence[str], new_identifier: str | Sequence[str]
    ) -> Table:
        src, dst = to_identifier(from_identifier), to_identifier(new_identifier)
        self._current_metadata_location(src)
        if self.table_exists(dst):
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(dst)}")
        self._check_namespace_for_table(dst)
        try:
            with self.engine.begin() as conn:
                result = conn.execute(
                    update(_tables)
                    .where(self._table_filter(src))
                    .values(table_namespace=_ns_str(namespace_of(dst)), table_name=dst[-1])
                )
                if result.rowcount != 1:
                    raise NoSuchTableError(f"Table does not exist: {'.'.join(src)}")
        except IntegrityError as exc:
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(dst)}") from exc
        return self.load_table(dst)

    def register_table(self, identifier: str | Sequence[str], metadata_location: str) -> Table:
        ident = to_identifier(identifier)
        self._check_namespace_for_table(ident)
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ident)}")
        read_table_metadata(self.io, metadata_location)  # refuse files that are not metadata
        try:
            self._swap_metadata_location(ident, None, metadata_location)
        except CommitFailedError as exc:
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ident)}") from exc
        return self.load_table(ident)

    # -- views (rows with iceberg_type = 'VIEW') -------------------------------------------

    def _view_filter(self, ident: Identifier) -> Any:
        return and_(
            _tables.c.catalog_name == self.name,
            _tables.c.table_namespace == _ns_str(namespace_of(ident)),
            _tables.c.table_name == ident[-1],
            _tables.c.iceberg_type == _VIEW_TYPE,
        )

    def _check_new_table(self, ident: Identifier, metadata: TableMetadata) -> None:
        if self.view_exists(ident):
            raise TableAlreadyExistsError(
                f"Cannot create table {'.'.join(ident)}: a view of that name exists"
            )

    def _view_location(self, ident: Identifier) -> str:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(_tables.c.metadata_location).where(self._view_filter(ident))
            ).first()
        if row is None or not row[0]:
            raise NoSuchViewError(f"View does not exist: {'.'.join(ident)}")
        return str(row[0])

    def _swap_view_location(self, ident: Identifier, expected: str | None, new: str) -> None:
        self._commit_tables([(ident, expected, new)], _VIEW_TYPE)

    def _remove_view_entry(self, ident: Identifier) -> None:
        with self.engine.begin() as conn:
            if conn.execute(delete(_tables).where(self._view_filter(ident))).rowcount != 1:
                raise NoSuchViewError(f"View does not exist: {'.'.join(ident)}")

    def _list_view_names(self, namespace: Identifier) -> list[Identifier]:
        if self._namespace_props(namespace) is None:
            raise NoSuchNamespaceError(f"Namespace does not exist: {_ns_str(namespace)}")
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(_tables.c.table_name).where(
                    _tables.c.catalog_name == self.name,
                    _tables.c.table_namespace == _ns_str(namespace),
                    _tables.c.iceberg_type == _VIEW_TYPE,
                )
            ).all()
        return sorted((*namespace, r[0]) for r in rows)

    def _rename_view_entry(self, src: Identifier, dst: Identifier) -> None:
        try:
            with self.engine.begin() as conn:
                result = conn.execute(
                    update(_tables)
                    .where(self._view_filter(src))
                    .values(table_namespace=_ns_str(namespace_of(dst)), table_name=dst[-1])
                )
                if result.rowcount != 1:
                    raise NoSuchViewError(f"View does not exist: {'.'.join(src)}")
        except IntegrityError as exc:
            raise ViewAlreadyExistsError(f"View already exists: {'.'.join(dst)}") from exc


def _is_lock_error(exc: OperationalError) -> bool:
    text = str(exc.orig).lower()
    return "locked" in text or "busy" in text or "could not serialize" in text


def _make_engine(uri: str) -> Engine:
    if uri.startswith("sqlite"):
        path = uri.split("///", 1)[1] if "///" in uri else ""
        if path and path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
        return create_engine(uri, connect_args={"timeout": 60}, pool_pre_ping=True)
    if uri.startswith("postgresql://"):
        uri = "postgresql+psycopg2://" + uri[len("postgresql://") :]
    return create_engine(uri, pool_pre_ping=True)
