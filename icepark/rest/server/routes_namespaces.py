"""Namespace routes: list (with ``parent`` and paging), create, load, exists, drop, and the
properties update. Reading needs a ``read`` grant, changing a namespace ``admin``; a change
sent with an ``Idempotency-Key`` happens once (:mod:`.idempotency`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse

from icepark.rest.models import (
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    GetNamespaceResponse,
    ListNamespacesResponse,
    UpdateNamespacePropertiesRequest,
    UpdateNamespacePropertiesResponse,
)
from icepark.rest.server.context import caller, require, state_of
from icepark.rest.server.idempotency import Outcome, once
from icepark.rest.server.names import check_namespace, page, parse_namespace
from icepark.rest.server.security import ADMIN, READ, Principal

__all__ = ["router", "ENDPOINTS"]

JSON = "application/json"

router = APIRouter()
Caller = Annotated[Principal | None, Depends(caller)]

ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
]


@router.get("/namespaces", name="list_namespaces")
def list_namespaces(
    request: Request,
    principal: Caller,
    parent: str | None = None,
    page_token: Annotated[str | None, Query(alias="pageToken")] = None,
    page_size: Annotated[int | None, Query(alias="pageSize")] = None,
) -> JSONResponse:
    catalog = state_of(request).catalog
    parent_ns = parse_namespace(parent) if parent else ()
    if parent_ns:
        require(principal, parent_ns, READ)
    found = catalog.list_namespaces(parent_ns)  # NoSuchNamespaceError for a missing parent
    if principal is not None:
        found = [ns for ns in found if principal.may_see(ns)]
    items, token = page(found, page_token, page_size)
    body = ListNamespacesResponse(namespaces=[list(ns) for ns in items], next_page_token=token)
    return JSONResponse(body.dump())


@router.post("/namespaces", name="create_namespace")
def create_namespace(request: Request, principal: Caller, body: CreateNamespaceRequest) -> Response:
    ns = check_namespace(body.namespace)
    require(principal, ns, ADMIN)
    catalog = state_of(request).catalog

    def action() -> Outcome:
        catalog.create_namespace(ns, dict(body.properties))
        props = catalog.load_namespace_properties(ns)
        return Outcome(200, CreateNamespaceResponse(namespace=list(ns), properties=props).dump())

    return once(request, principal, body, action)


@router.get("/namespaces/{namespace}", name="load_namespace")
def load_namespace(request: Request, principal: Caller, namespace: str) -> JSONResponse:
    ns = parse_namespace(namespace)
    require(principal, ns, READ)
    props = state_of(request).catalog.load_namespace_properties(ns)
    return JSONResponse(GetNamespaceResponse(namespace=list(ns), properties=props).dump())


@router.head("/namespaces/{namespace}", name="namespace_exists")
def namespace_exists(request: Request, principal: Caller, namespace: str) -> Response:
    ns = parse_namespace(namespace)
    require(principal, ns, READ)
    if not state_of(request).catalog.namespace_exists(ns):
        return Response(status_code=404, media_type=JSON)  # the headers a GET would have
    return Response(status_code=204)


@router.delete("/namespaces/{namespace}", name="drop_namespace")
def drop_namespace(request: Request, principal: Caller, namespace: str) -> Response:
    ns = parse_namespace(namespace)
    require(principal, ns, ADMIN)

    def action() -> Outcome:
        state_of(request).catalog.drop_namespace(ns)
        return Outcome(204)

    return once(request, principal, None, action)


@router.post("/namespaces/{namespace}/properties", name="update_namespace_properties")
def update_properties(
    request: Request, principal: Caller, namespace: str, body: UpdateNamespacePropertiesRequest
) -> Response:
    ns = parse_namespace(namespace)
    require(principal, ns, ADMIN)
    catalog = state_of(request).catalog

    def action() -> Outcome:
        both = sorted(set(body.removals) & set(body.updates))
        if both:
            message = f"Properties both set and removed: {', '.join(both)}"
            return Outcome.error(422, "UnprocessableEntityException", message)
        before = catalog.load_namespace_properties(ns)
        catalog.update_namespace_properties(ns, removals=body.removals, updates=body.updates)
        answer = UpdateNamespacePropertiesResponse(
            updated=sorted(body.updates),
            removed=sorted(k for k in body.removals if k in before),
            missing=sorted(k for k in body.removals if k not in before) or None,
        )
        return Outcome(200, answer.dump())

    return once(request, principal, body, action)
