"""Iceberg views in a catalog: the operations every catalog offers (:class:`ViewCatalog`, which
:class:`~icepark.catalog.base.Catalog` inherits) and the :class:`View` handle they return.

A view is a named query with a schema, stored as a view metadata file (see
:mod:`icepark.spec.view_metadata`) that the catalog points at, as it points at a table's.
Views and tables share one namespace of names: a view cannot take a table's name and the other
way round. Changes are REST-shaped commits (requirements, then updates applied by
:class:`~icepark.spec.view_builder.ViewMetadataBuilder`), swapped in by the catalog's
compare-and-swap like a table commit.

::

    view = catalog.create_view("db.recent", schema, "SELECT * FROM db.events WHERE ts > ...")
    view.sql()                                   # the query in the default dialect, spark
    view.replace("SELECT id, ts FROM db.events", new_schema)
    catalog.list_views("db"); catalog.drop_view("db.recent")

Catalogs store views as Java does: the SQL catalog in the same ``iceberg_tables`` rows with
``iceberg_type = 'VIEW'`` (Java's JDBC catalog reads them); the file-system catalog cannot hold
views (Java's Hadoop catalog cannot either).
"""

from __future__ import annotations

import gzip
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icepark.catalog.identifiers import Identifier, namespace_of, schema_from_user, to_identifier
from icepark.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    IceparkError,
    NoSuchViewError,
    TableAlreadyExistsError,
    UnsupportedOperationError,
    ValidationError,
    ViewAlreadyExistsError,
)
from icepark.io import FileIO
from icepark.spec.gzip_json import GZIP_MAGIC, gunzip_metadata
from icepark.spec.locations import check_location
from icepark.spec.requirements import TableRequirement
from icepark.spec.updates import RemovePropertiesUpdate, SetPropertiesUpdate, TableUpdate
from icepark.spec.view_builder import (
    AssertViewUUID,
    ViewMetadataBuilder,
    new_view_metadata,
)
from icepark.spec.view_metadata import (
    SQLViewRepresentation,
    ViewMetadata,
    ViewVersion,
    read_view_metadata_json,
    view_metadata_to_json,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from icepark.spec.schema import Schema

__all__ = ["ViewCatalog", "View", "ViewCommitResult", "DEFAULT_DIALECT", "new_view_version"]

DEFAULT_DIALECT = "spark"
_ENGINE_NAME = "icepark"
#: view metadata compression (Java's ``write.metadata.compression-codec`` for views: gzip)
_COMPRESSION = "write.metadata.compression-codec"


@dataclass(frozen=True)
class ViewCommitResult:
    metadata: ViewMetadata
    metadata_location: str


def _engine_summary() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        engine_version = version("icepark")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        engine_version = "unknown"
    return {"engine-name": _ENGINE_NAME, "engine-version": engine_version}


def new_view_version(
    sql: str,
    dialect: str,
    default_namespace: Sequence[str],
    default_catalog: str | None,
    extra_dialects: Mapping[str, str] | None,
) -> ViewVersion:
    reps = [SQLViewRepresentation(sql=sql, dialect=dialect)]
    reps += [SQLViewRepresentation(sql=q, dialect=d) for d, q in (extra_dialects or {}).items()]
    return ViewVersion(
        version_id=1,
        timestamp_ms=int(time.time() * 1000),
        schema_id=-1,
        representations=tuple(reps),
        default_namespace=tuple(default_namespace),
        default_catalog=default_catalog,
        summary=_engine_summary(),
    )


class ViewCatalog:
    """The view operations of a catalog. Storage hooks (``_view_location``,
    ``_swap_view_location``, ``_remove_view_entry``, ``_list_view_names``,
    ``_rename_view_entry``) are the catalog's; one that cannot hold views sets
    ``_views_refusal`` to why."""

    name: str
    properties: dict[str, str]
    _views_refusal: str | None = "this catalog cannot hold views"

    if TYPE_CHECKING:

        @property
        def io(self) -> FileIO: ...

        def default_table_location(self, identifier: Identifier) -> str: ...

        def table_exists(self, identifier: str | Sequence[str]) -> bool: ...

        def _check_namespace_for_table(self, ident: Identifier) -> None: ...

    @property
    def supports_views(self) -> bool:
        """Whether this catalog can hold views (the others raise ``UnsupportedOperationError``
        on every view operation)."""
        return self._views_refusal is None

    # -- storage hooks ---------------------------------------------------------------------

    def _refuse_views(self) -> None:
        if self._views_refusal is not None:
            raise UnsupportedOperationError(
                f"Catalog {self.name!r} ({type(self).__name__}) cannot hold views: "
                f"{self._views_refusal}"
            )

    def _view_location(self, ident: Identifier) -> str:
        """The view's current metadata file; NoSuchViewError when there is no view."""
        self._refuse_views()
        raise NotImplementedError

    def _swap_view_location(self, ident: Identifier, expected: str | None, new: str) -> None:
        """Point the view at ``new`` if it points at ``expected`` (None: create it);
        CommitFailedError otherwise."""
        self._refuse_views()
        raise NotImplementedError

    def _remove_view_entry(self, ident: Identifier) -> None:
        self._refuse_views()
        raise NotImplementedError

    def _list_view_names(self, namespace: Identifier) -> list[Identifier]:
        self._refuse_views()
        raise NotImplementedError

    def _rename_view_entry(self, src: Identifier, dst: Identifier) -> None:
        self._refuse_views()
        raise NotImplementedError

    # -- operations ------------------------------------------------------------------------

    def list_views(self, namespace: str | Sequence[str]) -> list[Identifier]:
        """The views directly in ``namespace``."""
        return self._list_view_names(to_identifier(namespace))

    def view_exists(self, identifier: str | Sequence[str]) -> bool:
        try:
            self._view_location(to_identifier(identifier))
            return True
        except NoSuchViewError:
            return False

    def load_view(self, identifier: str | Sequence[str]) -> View:
        ident = to_identifier(identifier)
        location = self._view_location(ident)
        return View(ident, _read_view(self.io, location), location, self)

    def create_view(
        self,
        identifier: str | Sequence[str],
        schema: Schema | pa.Schema,
        sql: str,
        *,
        dialect: str = DEFAULT_DIALECT,
        default_namespace: Sequence[str] | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        other_dialects: Mapping[str, str] | None = None,
        replace: bool = False,
    ) -> View:
        """Create a view of ``sql`` (in ``dialect``; ``other_dialects`` maps more dialects to
        their SQL) whose result has ``schema``. Unqualified names in the query resolve in
        ``default_namespace`` (the view's own namespace unless given) of ``default_catalog``.
        With ``replace`` an existing view gets a new current version instead (Java's
        ``createOrReplace``)."""
        ident = to_identifier(identifier)
        self._refuse_views()
        user_schema = schema_from_user(schema)
        namespace = namespace_of(ident)
        version = new_view_version(
            sql,
            dialect,
            namespace if default_namespace is None else default_namespace,
            default_catalog,
            other_dialects,
        )
        if replace and self.view_exists(ident):
            return self._replace_view_version(ident, version, user_schema, properties)
        if location:
            check_location(location, f"View {'.'.join(ident)}: location")
        view_location = (location or self.default_table_location(ident)).rstrip("/")
        metadata, _ = new_view_metadata(view_location, user_schema, version, properties)
        return self.create_view_from_metadata(ident, metadata)

    def _check_new_view(self, ident: Identifier) -> None:
        self._refuse_views()
        self._check_namespace_for_table(ident)
        if self.table_exists(ident):
            raise ViewAlreadyExistsError(
                f"Cannot create view {'.'.join(ident)}: a table of that name exists"
            )
        if self.view_exists(ident):
            raise ViewAlreadyExistsError(f"View already exists: {'.'.join(ident)}")

    def create_view_from_metadata(
        self, identifier: str | Sequence[str], metadata: ViewMetadata
    ) -> View:
        """Create a view whose first metadata is ``metadata`` (built elsewhere, e.g. from a
        REST ``CreateViewRequest``): write its metadata file and point the new name at it.
        ``ViewAlreadyExistsError`` when a view or a table holds the name."""
        ident = to_identifier(identifier)
        self._check_new_view(ident)
        check_location(metadata.location, f"View {'.'.join(ident)}: location")
        new_location = self._new_view_metadata_location(metadata, None)
        self._write_view_metadata(metadata, new_location)
        try:
            self._swap_view_location(ident, None, new_location)
        except CommitStateUnknownError:
            raise
        except IceparkError as exc:
            self.io.delete_quietly(new_location)
            if isinstance(exc, CommitFailedError):
                raise ViewAlreadyExistsError(
                    f"Cannot create view {'.'.join(ident)}: the name is taken"
                ) from exc
            raise
        return View(ident, metadata, new_location, self)

    def _replace_view_version(
        self,
        ident: Identifier,
        version: ViewVersion,
        schema: Schema,
        properties: Mapping[str, str] | None,
    ) -> View:
        """createOrReplace on an existing view: ``version`` becomes its current version and
        ``properties`` are set, in one commit that asserts the view's UUID (as Java's)."""
        view = self.load_view(ident)
        builder = ViewMetadataBuilder(view.metadata)
        builder.set_properties(dict(properties or {}))
        builder.set_current_version(version, schema)
        result = self.commit_view(ident, [AssertViewUUID(view.metadata.view_uuid)], builder.changes)
        return View(ident, result.metadata, result.metadata_location, self)

    def commit_view(
        self,
        identifier: str | Sequence[str],
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
    ) -> ViewCommitResult:
        """Check ``requirements`` against the view's current metadata, apply ``updates``
        (REST view updates) and swap the new metadata file in."""
        ident = to_identifier(identifier)
        current_location = self._view_location(ident)
        current = _read_view(self.io, current_location)
        for requirement in requirements:
            if not isinstance(requirement, AssertViewUUID):
                raise ValidationError(
                    f"Cannot check {requirement.type!r} on view {'.'.join(ident)}: "
                    "views take assert-view-uuid only"
                )
            requirement.validate(current)
        builder = ViewMetadataBuilder(current)
        for update in updates:
            builder.apply(update)
        new_metadata = builder.build()
        if new_metadata == current:
            return ViewCommitResult(current, current_location)
        new_location = self._new_view_metadata_location(new_metadata, current_location)
        self._write_view_metadata(new_metadata, new_location)
        try:
            self._swap_view_location(ident, current_location, new_location)
        except CommitStateUnknownError:
            raise
        except IceparkError:
            self.io.delete_quietly(new_location)
            raise
        return ViewCommitResult(new_metadata, new_location)

    def drop_view(self, identifier: str | Sequence[str]) -> None:
        """Forget the view and delete its current metadata file, as Java does (a view owns
        no data, and its metadata keeps no log of earlier files)."""
        ident = to_identifier(identifier)
        location = self._view_location(ident)
        self._remove_view_entry(ident)
        self.io.delete_quietly(location)

    def rename_view(
        self, from_identifier: str | Sequence[str], to_identifier_: str | Sequence[str]
    ) -> View:
        src, dst = to_identifier(from_identifier), to_identifier(to_identifier_)
        self._view_location(src)
        self._check_namespace_for_table(dst)
        if self.view_exists(dst):
            raise ViewAlreadyExistsError(
                f"Cannot rename {'.'.join(src)}: view {'.'.join(dst)} exists"
            )
        if self.table_exists(dst):
            raise TableAlreadyExistsError(
                f"Cannot rename view {'.'.join(src)}: table {'.'.join(dst)} exists"
            )
        self._rename_view_entry(src, dst)
        return self.load_view(dst)

    # -- metadata files --------------------------------------------------------------------

    def _new_view_metadata_location(self, metadata: ViewMetadata, previous: str | None) -> str:
        version = 0
        if previous:
            head = previous.rsplit("/", 1)[-1].split("-", 1)[0]
            version = int(head) + 1 if head.isdigit() else 0
        gz = metadata.properties.get(_COMPRESSION, "gzip").lower() == "gzip"
        suffix = ".gz.metadata.json" if gz else ".metadata.json"
        return f"{metadata.location}/metadata/{version:05d}-{uuid.uuid4()}{suffix}"

    def _write_view_metadata(self, metadata: ViewMetadata, location: str) -> None:
        import json

        data = json.dumps(view_metadata_to_json(metadata)).encode()
        if location.endswith(".gz.metadata.json"):
            data = gzip.compress(data, mtime=0)
        self.io.new_output(location).write_bytes(data, overwrite=False)


def _read_view(io: FileIO, location: str) -> ViewMetadata:
    data = io.new_input(location).read_bytes()
    if data[:2] == GZIP_MAGIC:
        data = gunzip_metadata(data, f"view metadata {location}")
    return read_view_metadata_json(data, location)


class View:
    """A view loaded from a catalog (``catalog.load_view(name)``): its metadata, and the
    changes it can make (each one commit through the catalog).

    Args:
        identifier: the view's name, as a tuple.
        metadata: its current metadata (versions, schemas, properties).
        metadata_location: the metadata file ``metadata`` was read from.
        catalog: the catalog it was loaded from.
    """

    def __init__(
        self, identifier: Identifier, metadata: ViewMetadata, metadata_location: str, catalog: Any
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.catalog = catalog

    @property
    def name(self) -> str:
        """The view's identifier as text, ``"db.v"``."""
        return ".".join(self.identifier)

    @property
    def schema(self) -> Schema:
        """The schema of the current version's query result."""
        return self.metadata.schema

    @property
    def properties(self) -> Mapping[str, str]:
        """The view's properties."""
        return self.metadata.properties

    @property
    def current_version(self) -> ViewVersion:
        """The current version: its query per dialect, schema id, default namespace and catalog."""
        return self.metadata.current_version

    @property
    def versions(self) -> tuple[ViewVersion, ...]:
        """Every version the metadata keeps, oldest first."""
        return self.metadata.versions

    def sql(self, dialect: str = DEFAULT_DIALECT) -> str:
        """The current version's query in a dialect.

        Args:
            dialect: the SQL dialect (default ``spark``).

        Returns:
            The query text.

        Raises:
            ValidationError: the version has no query in that dialect (naming the dialects it
                has; the view exists, so it is not a missing view).
        """
        text = self.current_version.sql_for(dialect)
        if text is None:
            raise ValidationError(
                f"View {self.name} has no {dialect!r} query (dialects: "
                f"{sorted(self.current_version.dialects)})"
            )
        return text

    def refresh(self) -> View:
        """Reload the view's current metadata from the catalog.

        Returns:
            This view, with its current metadata.

        Raises:
            NoSuchViewError: the view was dropped.
        """
        fresh = self.catalog.load_view(self.identifier)
        self.metadata, self.metadata_location = fresh.metadata, fresh.metadata_location
        return self

    def _commit(self, updates: Sequence[TableUpdate]) -> View:
        result = self.catalog.commit_view(
            self.identifier, [AssertViewUUID(self.metadata.view_uuid)], updates
        )
        self.metadata, self.metadata_location = result.metadata, result.metadata_location
        return self

    def replace(
        self,
        sql: str,
        schema: Schema | pa.Schema,
        *,
        dialect: str = DEFAULT_DIALECT,
        default_namespace: Sequence[str] | None = None,
        default_catalog: str | None = None,
        other_dialects: Mapping[str, str] | None = None,
    ) -> View:
        """Make a new current version of the view (Java's ``replaceVersion``), committed
        at once; the earlier versions stay in its history.

        Args:
            sql: the new query.
            schema: its result's schema (an icepark or pyarrow schema).
            dialect: the query's dialect (default ``spark``).
            default_namespace: where its unqualified names resolve (default: the current
                version's).
            default_catalog: the catalog its unqualified names resolve in (default: the
                current version's).
            other_dialects: the same query in other dialects, by dialect.

        Returns:
            This view, with its new metadata.

        Raises:
            ValidationError: two queries for one dialect (naming it), or a schema that does
                not convert.
            CommitFailedError: the view changed meanwhile.
        """
        current = self.current_version
        version = new_view_version(
            sql,
            dialect,
            current.default_namespace if default_namespace is None else default_namespace,
            default_catalog if default_catalog is not None else current.default_catalog,
            other_dialects,
        )
        builder = ViewMetadataBuilder(self.metadata)
        builder.set_current_version(version, schema_from_user(schema))
        return self._commit(builder.changes)

    def set_properties(self, properties: Mapping[str, str] | None = None, **kw: str) -> View:
        """Set view properties, committed at once.

        Args:
            properties: the properties to set, as strings.
            **kw: more properties, for names that are identifiers.

        Returns:
            This view, with its new metadata.

        Raises:
            CommitFailedError: the view changed meanwhile.
        """
        return self._commit([SetPropertiesUpdate({**(properties or {}), **kw})])

    def remove_properties(self, *keys: str | Iterable[str]) -> View:
        """Remove view properties, committed at once.

        Args:
            *keys: property names, or iterables of them.

        Returns:
            This view, with its new metadata.

        Raises:
            CommitFailedError: the view changed meanwhile.
        """
        flat = [k for key in keys for k in ([key] if isinstance(key, str) else key)]
        return self._commit([RemovePropertiesUpdate(tuple(flat))])

    def __repr__(self) -> str:
        return f"View({self.name!r}, version={self.metadata.current_version_id})"
