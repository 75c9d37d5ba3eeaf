"""Views over the REST protocol: the view operations of :class:`~icepark.rest.catalog.RestCatalog`
(``RestViews``, a mixin it inherits), on the spec's view endpoints.

How it flows:

* ``GET .../namespaces/{ns}/views`` lists (paged as tables are), ``HEAD .../views/{view}``
  checks (a load where the server offers no HEAD), ``GET .../views/{view}`` loads a
  ``LoadViewResult`` whose metadata goes through icepark's one view metadata codec;
* ``POST .../namespaces/{ns}/views`` creates from a ``CreateViewRequest`` (the schema, the
  first version naming that schema's id, properties, location): the server writes the first
  metadata file. ``replace=True`` on an existing view is Java's ``createOrReplace``: load, then
  commit a new current version asserting the view's UUID;
* ``POST .../views/{view}`` commits a ``CommitViewRequest`` (``assert-view-uuid`` and the view
  updates as JSON); the server checks and applies them, so :class:`~icepark.catalog.views.View`
  handles (``replace``, ``set_properties``, ...) work unchanged through ``commit_view``;
* ``POST /v1/{prefix}/views/rename`` and ``DELETE .../views/{view}``.

A server lists the view endpoints it serves in its config's ``endpoints``; one that lists none
offers views only with ``view-endpoints-supported=true`` (as Java's client reads it). An
operation the server does not offer fails with ``UnsupportedOperationError`` naming the
endpoint, before any request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from icepark.catalog.identifiers import Identifier, namespace_of, schema_from_user, to_identifier
from icepark.catalog.views import DEFAULT_DIALECT, View, ViewCommitResult, new_view_version
from icepark.errors import NoSuchViewError
from icepark.rest.models import (
    CommitViewRequest,
    CreateViewRequest,
    ListTablesResponse,
    LoadViewResult,
    RenameTableRequest,
    TableIdentifier,
)
from icepark.spec.schema import schema_to_json
from icepark.spec.updates import TableRequirement, TableUpdate
from icepark.spec.view_metadata import view_metadata_from_json, view_version_to_json

if TYPE_CHECKING:
    import pyarrow as pa

    from icepark.rest.http import ErrorKind, RestClient
    from icepark.spec.schema import Schema
    from icepark.spec.view_metadata import ViewVersion

__all__ = ["RestViews", "VIEW_ENDPOINTS"]

_VIEWS = "/v1/{prefix}/namespaces/{namespace}/views"
_VIEW = _VIEWS + "/{view}"
_RENAME = "/v1/{prefix}/views/rename"

# What a server that lists no endpoints offers for views when it sets
# ``view-endpoints-supported`` (Java's RESTSessionCatalog.VIEW_ENDPOINTS; no HEAD).
VIEW_ENDPOINTS = frozenset(
    {
        f"GET {_VIEWS}",
        f"POST {_VIEWS}",
        f"GET {_VIEW}",
        f"POST {_VIEW}",
        f"DELETE {_VIEW}",
        f"POST {_RENAME}",
    }
)


def _dotted(parts: Sequence[str]) -> str:
    return ".".join(parts)


class RestViews:
    """The view operations over REST (mixed into ``RestCatalog``)."""

    if TYPE_CHECKING:
        _client: RestClient

        def _require(self, endpoint: str, operation: str) -> None: ...

        def _offers(self, endpoint: str) -> bool: ...

        def _ns_url(self, namespace: Identifier, *more: str) -> str: ...

        def _paged(
            self, url: str, operation: str, query: dict[str, str], model: Any, errors: ErrorKind
        ) -> list[Any]: ...

        def _replace_view_version(
            self,
            ident: Identifier,
            version: ViewVersion,
            schema: Schema,
            properties: Mapping[str, str] | None,
        ) -> View: ...

    def _view_url(self, ident: Identifier) -> str:
        from icepark.rest.http import encode_namespace

        return self._ns_url(namespace_of(ident), "views", encode_namespace([ident[-1]]))

    def list_views(self, namespace: str | Sequence[str]) -> list[Identifier]:
        ns = to_identifier(namespace)
        operation = f"list the views of namespace {_dotted(ns)}"
        self._require(f"GET {_VIEWS}", operation)
        found = self._paged(
            self._ns_url(ns, "views"), operation, {}, ListTablesResponse, "namespace"
        )
        return [t.as_tuple() for t in found]

    def view_exists(self, identifier: str | Sequence[str]) -> bool:
        ident = to_identifier(identifier)
        if not self._offers(f"HEAD {_VIEW}"):
            try:
                self.load_view(ident)
                return True
            except NoSuchViewError:
                return False
        return self._client.exists(self._view_url(ident), f"check view {_dotted(ident)}", "view")

    def load_view(self, identifier: str | Sequence[str]) -> View:
        ident = to_identifier(identifier)
        operation = f"load view {_dotted(ident)}"
        self._require(f"GET {_VIEW}", operation)
        namespace_of(ident)
        result = self._client.call(
            "GET", self._view_url(ident), operation, response=LoadViewResult, errors="view"
        )
        assert result is not None
        return self._view(ident, result)

    def _view(self, ident: Identifier, result: LoadViewResult) -> View:
        metadata = view_metadata_from_json(result.metadata)
        return View(ident, metadata, result.metadata_location, self)

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
        """Create the view on the server (``POST .../views``), which writes its metadata;
        ``replace`` on an existing view commits a new current version instead."""
        ident = to_identifier(identifier)
        operation = f"{'create or replace' if replace else 'create'} view {_dotted(ident)}"
        self._require(f"POST {_VIEWS}", operation)
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
            self._require(f"POST {_VIEW}", operation)
            return self._replace_view_version(ident, version, user_schema, properties)
        version = dataclasses.replace(version, schema_id=user_schema.schema_id)
        request = CreateViewRequest(
            name=ident[-1],
            schema_=schema_to_json(user_schema),
            view_version=view_version_to_json(version),
            location=location.rstrip("/") if location else None,
            properties=dict(properties or {}),
        )
        result = self._client.change(
            "POST",
            self._ns_url(namespace, "views"),
            operation,
            body=request,
            response=LoadViewResult,
            errors="view",
        )
        assert result is not None
        return self._view(ident, result)

    def commit_view(
        self,
        identifier: str | Sequence[str],
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
    ) -> ViewCommitResult:
        """``POST .../views/{view}``: the server checks ``requirements`` and applies
        ``updates``; 409 is ``CommitFailedError``, 5xx or a lost connection
        ``CommitStateUnknownError``."""
        ident = to_identifier(identifier)
        operation = f"commit to view {_dotted(ident)}"
        self._require(f"POST {_VIEW}", operation)
        request = CommitViewRequest(
            identifier=TableIdentifier.of(ident),
            requirements=[r.to_json() for r in requirements],
            updates=[u.to_json() for u in updates],
        )
        result = self._client.change(
            "POST",
            self._view_url(ident),
            operation,
            body=request,
            response=LoadViewResult,
            errors="view-commit",
        )
        assert result is not None
        metadata = view_metadata_from_json(result.metadata)
        return ViewCommitResult(metadata, result.metadata_location)

    def rename_view(
        self, from_identifier: str | Sequence[str], to_identifier_: str | Sequence[str]
    ) -> View:
        src, dst = to_identifier(from_identifier), to_identifier(to_identifier_)
        operation = f"rename view {_dotted(src)} to {_dotted(dst)}"
        self._require(f"POST {_RENAME}", operation)
        request = RenameTableRequest(
            source=TableIdentifier.of(src), destination=TableIdentifier.of(dst)
        )
        self._client.change(
            "POST", self._client.url("views", "rename"), operation, body=request, errors="view"
        )
        return self.load_view(dst)

    def drop_view(self, identifier: str | Sequence[str]) -> None:
        ident = to_identifier(identifier)
        operation = f"drop view {_dotted(ident)}"
        self._require(f"DELETE {_VIEW}", operation)
        self._client.change("DELETE", self._view_url(ident), operation, errors="view")
