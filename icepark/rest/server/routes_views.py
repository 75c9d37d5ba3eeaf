"""View routes: list (paged), create, load, exists, commit (replace), drop and rename.

How a create flows: the ``CreateViewRequest``'s schema and view version are parsed by the spec
codecs (a bad one is a 400), the first metadata is built by ``new_view_metadata`` (the version
is tied to the given schema whatever ``schema-id`` it carries, as Java's
``setCurrentVersion(version, schema)`` does) and the catalog writes it and claims the name
(``create_view_from_metadata``): a view or a table of that name is a 409.

A commit's requirements (``assert-view-uuid``) and updates (``add-view-version``,
``set-current-view-version``, properties, location, ...) are parsed one by one, a bad one a 400
naming its index; the catalog's ``commit_view`` checks them against the current metadata and
swaps the new file in: a requirement that no longer holds, or a lost swap, is a 409.

Grants as for tables: ``read`` on the namespace lists, loads and checks; ``write`` creates,
commits, drops and renames (on both namespaces). A catalog that cannot hold views (the
file-system one) answers 406 ``UnsupportedOperationException``, as Java's adapter maps its
``UnsupportedOperationException``, and its config does not advertise these endpoints.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse

from icepark.catalog.views import View
from icepark.errors import BadRequestError, IceparkError
from icepark.rest.models import (
    CommitViewRequest,
    CreateViewRequest,
    LoadViewResult,
    RenameTableRequest,
    TableIdentifier,
)
from icepark.rest.server.context import caller, require, state_of
from icepark.rest.server.errors import parse_each
from icepark.rest.server.idempotency import Outcome, once
from icepark.rest.server.names import (
    check_name,
    check_namespace,
    check_namespace_exists,
    identifiers_page,
    parse_namespace,
)
from icepark.rest.server.security import READ, WRITE, Principal
from icepark.spec.requirements import table_requirement_from_json
from icepark.spec.schema import schema_from_json
from icepark.spec.view_builder import new_view_metadata, view_update_from_json
from icepark.spec.view_metadata import (
    ViewMetadata,
    view_metadata_to_json,
    view_version_from_json,
)

__all__ = ["router", "ENDPOINTS"]

JSON = "application/json"

router = APIRouter()
Caller = Annotated[Principal | None, Depends(caller)]

ENDPOINTS = [
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
]


def _ident(namespace: str, view: str) -> tuple[str, ...]:
    return (*parse_namespace(namespace), check_name(view, "view name"))


def _ident_of(identifier: TableIdentifier) -> tuple[str, ...]:
    return (*check_namespace(identifier.namespace), check_name(identifier.name, "view name"))


def _load_result(view: View) -> JSONResponse:
    return JSONResponse(_view_body(view.metadata_location, view.metadata))


def _view_body(location: str, metadata: ViewMetadata) -> dict[str, Any]:
    body = LoadViewResult(metadata_location=location, metadata=view_metadata_to_json(metadata))
    return body.dump()


@router.get("/namespaces/{namespace}/views", name="list_views")
def list_views(
    request: Request,
    principal: Caller,
    namespace: str,
    page_token: Annotated[str | None, Query(alias="pageToken")] = None,
    page_size: Annotated[int | None, Query(alias="pageSize")] = None,
) -> JSONResponse:
    ns = parse_namespace(namespace)
    require(principal, ns, READ)
    catalog = state_of(request).catalog
    check_namespace_exists(catalog, ns)
    return identifiers_page(catalog.list_views(ns), page_token, page_size)


@router.post("/namespaces/{namespace}/views", name="create_view")
def create_view(
    request: Request, principal: Caller, namespace: str, body: CreateViewRequest
) -> Response:
    ident = (*parse_namespace(namespace), check_name(body.name, "view name"))
    require(principal, ident[:-1], WRITE)
    catalog = state_of(request).catalog

    def action() -> Outcome:
        check_namespace_exists(catalog, ident[:-1])
        try:
            schema = schema_from_json(body.schema_)
            # a new view's one version is version 1, whatever id the client gave it (as Java's
            # handler builds it anew)
            version = replace(view_version_from_json(body.view_version), version_id=1)
            location = (body.location or catalog.default_table_location(ident)).rstrip("/")
            metadata, _ = new_view_metadata(location, schema, version, body.properties)
        except (IceparkError, ValueError, TypeError, KeyError) as exc:
            raise BadRequestError(
                f"Invalid create-view request for {'.'.join(ident)}: {exc}"
            ) from exc
        view = catalog.create_view_from_metadata(ident, metadata)
        return Outcome(200, _view_body(view.metadata_location, view.metadata))

    return once(request, principal, body, action)


@router.get("/namespaces/{namespace}/views/{view}", name="load_view")
def load_view(request: Request, principal: Caller, namespace: str, view: str) -> JSONResponse:
    ident = _ident(namespace, view)
    require(principal, ident[:-1], READ)
    return _load_result(state_of(request).catalog.load_view(ident))


@router.head("/namespaces/{namespace}/views/{view}", name="view_exists")
def view_exists(request: Request, principal: Caller, namespace: str, view: str) -> Response:
    ident = _ident(namespace, view)
    require(principal, ident[:-1], READ)
    found = state_of(request).catalog.view_exists(ident)
    if not found:  # the headers a GET would have
        return Response(status_code=404, media_type=JSON)
    return Response(status_code=204)


@router.post("/namespaces/{namespace}/views/{view}", name="replace_view")
def replace_view(
    request: Request, principal: Caller, namespace: str, view: str, body: CommitViewRequest
) -> Response:
    ident = _ident(namespace, view)
    require(principal, ident[:-1], WRITE)
    if body.identifier is not None and _ident_of(body.identifier) != ident:
        raise BadRequestError("The body's identifier differs from the view in the path")
    requirements = parse_each("requirements", body.requirements, table_requirement_from_json)
    updates = parse_each("updates", body.updates, view_update_from_json)
    catalog = state_of(request).catalog

    def action() -> Outcome:
        result = catalog.commit_view(ident, requirements, updates)
        return Outcome(200, _view_body(result.metadata_location, result.metadata))

    return once(request, principal, body, action)


@router.delete("/namespaces/{namespace}/views/{view}", name="drop_view")
def drop_view(request: Request, principal: Caller, namespace: str, view: str) -> Response:
    ident = _ident(namespace, view)
    require(principal, ident[:-1], WRITE)

    def action() -> Outcome:
        state_of(request).catalog.drop_view(ident)
        return Outcome(204)

    return once(request, principal, None, action)


@router.post("/views/rename", name="rename_view")
def rename_view(request: Request, principal: Caller, body: RenameTableRequest) -> Response:
    source, destination = _ident_of(body.source), _ident_of(body.destination)
    require(principal, source[:-1], WRITE)
    require(principal, destination[:-1], WRITE)

    def action() -> Outcome:
        state_of(request).catalog.rename_view(source, destination)
        return Outcome(204)

    return once(request, principal, body, action)
