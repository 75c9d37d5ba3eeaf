"""Table routes: list (paged), create (and stage-create), load (``snapshots=all|refs``),
exists, drop (``purgeRequested``), register, rename, commit and metrics.

How a commit flows: the body's requirements and updates are parsed by the spec codecs
(``table_requirement_from_json``, ``table_update_from_json``; a bad one is a 400 naming its
index), then the catalog's ``commit_table`` checks the requirements against the current
metadata, applies the updates through the metadata builder and swaps the pointer atomically: a
requirement that no longer holds, or a lost swap, is a 409 the client retries on a fresh base.
A commit that carries ``assert-create`` for a table that does not exist is the end of a
stage-create (a create transaction): the updates build the first metadata from nothing and the
catalog creates the table from it, so of two such commits one wins and the other gets 409.

Every mutation (create, register, commit, drop, rename) sent with an ``Idempotency-Key`` runs
once: a retry gets the first outcome, a table answer re-read from the metadata file the first
request wrote (:mod:`.idempotency`).

Grants: ``read`` on the namespace lists, loads and checks; ``write`` creates, registers,
commits, drops and renames (on both namespaces).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse

from icepark.catalog.base import Catalog
from icepark.errors import (
    BadRequestError,
    CommitFailedError,
    IceparkError,
    NoSuchFileError,
    TableAlreadyExistsError,
)
from icepark.rest.models import (
    CommitTableRequest,
    CreateTableRequest,
    LoadTableResult,
    RegisterTableRequest,
    RenameTableRequest,
    ReportMetricsRequest,
    TableIdentifier,
)
from icepark.rest.server.context import caller, require, state_of
from icepark.rest.server.errors import parse_each
from icepark.rest.server.idempotency import Outcome, once, render_plain
from icepark.rest.server.metadata_cache import MetadataCache
from icepark.rest.server.names import (
    check_name,
    check_namespace,
    check_namespace_exists,
    identifiers_page,
    parse_namespace,
)
from icepark.rest.server.routes_credentials import vended
from icepark.rest.server.security import READ, WRITE, Principal
from icepark.spec import properties as P
from icepark.spec.metadata import (
    TableMetadata,
    table_metadata_from_dict,
    table_metadata_to_dict,
)
from icepark.spec.new_table import NEW_TABLE_DEFAULTS, new_table_metadata
from icepark.spec.partitioning import partition_spec_from_json
from icepark.spec.requirements import AssertCreate, table_requirement_from_json
from icepark.spec.schema import schema_from_json
from icepark.spec.sorting import sort_order_from_json
from icepark.spec.updates import table_update_from_json
from icepark.table.interface import CommitResult, read_table_metadata

__all__ = ["router", "ENDPOINTS"]

JSON = "application/json"

_log = logging.getLogger("icepark.rest.server")
router = APIRouter()
Caller = Annotated[Principal | None, Depends(caller)]

ENDPOINTS = [
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
]


def _ident(namespace: str, table: str) -> tuple[str, ...]:
    return (*parse_namespace(namespace), check_name(table))


def _ident_of(identifier: TableIdentifier) -> tuple[str, ...]:
    return (*check_namespace(identifier.namespace), check_name(identifier.name))


def _metadata_json(md: TableMetadata, snapshots: str = "all") -> dict[str, Any]:
    out = table_metadata_to_dict(md)
    if snapshots == "refs":
        referenced = {ref.snapshot_id for ref in md.refs.values()}
        out["snapshots"] = [s for s in out["snapshots"] if s["snapshot-id"] in referenced]
    return out


def _etag(location: str, snapshots: str) -> str:
    """One version of the table's metadata as one answer shape: its file and the snapshots
    mode (a ``refs`` answer is not an ``all`` answer)."""
    digest = hashlib.sha256(f"{location}\n{snapshots}".encode()).hexdigest()[:40]
    return f'W/"{digest}"'


def _load_result(
    md: TableMetadata, location: str | None, snapshots: str = "all", creds: Any = ({}, None)
) -> JSONResponse:
    body = LoadTableResult(
        metadata_location=location,
        metadata=_metadata_json(md, snapshots),
        config=creds[0],
        storage_credentials=creds[1],
    )
    headers = {"ETag": _etag(location, snapshots)} if location else None
    return JSONResponse(body.dump(), headers=headers)


@router.get("/namespaces/{namespace}/tables", name="list_tables")
def list_tables(
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
    return identifiers_page(catalog.list_tables(ns), page_token, page_size)


def _new_metadata(
    catalog: Catalog, ident: tuple[str, ...], req: CreateTableRequest
) -> TableMetadata:
    try:
        schema = schema_from_json(req.schema_)
        spec = partition_spec_from_json(req.partition_spec) if req.partition_spec else None
        order = sort_order_from_json(req.write_order) if req.write_order else None
    except (IceparkError, ValueError, TypeError, KeyError) as exc:
        raise BadRequestError(f"Invalid create-table request for {'.'.join(ident)}: {exc}") from exc
    # as Java's catalogs behind CatalogHandlers: their defaults for new tables, then the request's
    props = {**NEW_TABLE_DEFAULTS, **req.properties}
    location = (req.location or catalog.default_table_location(ident)).rstrip("/")
    return new_table_metadata(
        schema, spec, order, location, props, format_version=P.FORMAT_VERSION.get(props)
    )


@router.post("/namespaces/{namespace}/tables", name="create_table")
def create_table(
    request: Request, principal: Caller, namespace: str, body: CreateTableRequest
) -> Response:
    ident = (*parse_namespace(namespace), check_name(body.name))
    require(principal, ident[:-1], WRITE)
    state = state_of(request)
    catalog = state.catalog

    def action() -> Outcome:
        check_namespace_exists(catalog, ident[:-1])
        if catalog.table_exists(ident):
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ident)}")
        metadata = _new_metadata(catalog, ident, body)
        if body.stage_create:
            # nothing is written: the client commits the create (with assert-create) later
            return Outcome(200, table={"metadata": table_metadata_to_dict(metadata)})
        table = catalog.create_table_from_metadata(ident, metadata)
        state.metadata.remember(table.metadata_location, table.metadata)
        return Outcome(200, table={"location": table.metadata_location})

    return once(request, principal, body, action, _load_answer(request, principal, ident))


def _load_answer(
    request: Request, principal: Principal | None, ident: tuple[str, ...]
) -> Callable[[Outcome], Response]:
    """Renders a create's or register's outcome as a ``LoadTableResult`` (with credentials
    vended now, for this caller)."""

    def render(outcome: Outcome) -> Response:
        if outcome.table is None:
            return render_plain(outcome)
        metadata, location = _table_of(request, ident, outcome.table)
        creds = vended(request, principal, ident, metadata.location)
        return _load_result(metadata, location, creds=creds)

    return render


def _commit_answer(request: Request, ident: tuple[str, ...]) -> Callable[[Outcome], Response]:
    """Renders a commit's outcome as a ``CommitTableResponse`` (with the ETag a load of the
    committed table would carry)."""

    def render(outcome: Outcome) -> Response:
        if outcome.table is None:
            return render_plain(outcome)
        metadata, location = _table_of(request, ident, outcome.table)
        assert location is not None
        cache = state_of(request).metadata
        etag = {"ETag": _etag(location, "all")}
        return _answer(cache, location, "all", {}, etag, metadata=metadata)

    return render


def _table_of(
    request: Request, ident: tuple[str, ...], kept: dict[str, Any]
) -> tuple[TableMetadata, str | None]:
    """The metadata a table outcome names: a stage-create's own, else the file the request
    wrote (kept parsed by location; read again on a repeat that another server process
    answers); a file removed since gives way to the table's current metadata."""
    if "metadata" in kept:
        return table_metadata_from_dict(kept["metadata"]), None
    state = state_of(request)
    location: str = kept["location"]
    found = state.metadata.parsed(location)
    if found is None:
        try:
            found = read_table_metadata(state.catalog.io, location)
        except NoSuchFileError:
            loaded = state.catalog.load_table(ident)
            location, found = loaded.metadata_location, loaded.metadata
        state.metadata.remember(location, found)
    return found, location


@router.get("/namespaces/{namespace}/tables/{table}", name="load_table")
def load_table(
    request: Request,
    principal: Caller,
    namespace: str,
    table: str,
    snapshots: str = "all",
) -> Response:
    ident = _ident(namespace, table)
    require(principal, ident[:-1], READ)
    if snapshots not in ("all", "refs"):
        raise BadRequestError(f"Invalid snapshots={snapshots!r}: expected all or refs")
    state = state_of(request)
    location = state.catalog.metadata_location(ident)
    known = request.headers.get("if-none-match")
    if known and known == _etag(location, snapshots):
        return Response(status_code=304)  # the client's copy is current: no file read
    cached = state.metadata.parsed(location)
    if cached is None:  # read once per metadata file
        loaded = state.catalog.load_table(ident)
        location, cached = loaded.metadata_location, loaded.metadata
        state.metadata.remember(location, cached)
    config, credentials = vended(request, principal, ident, cached.location)
    extra: dict[str, Any] = {"config": config}
    if credentials is not None:
        extra["storage-credentials"] = [c.dump() for c in credentials]
    return _answer(state.metadata, location, snapshots, extra, {"ETag": _etag(location, snapshots)})


def _answer(
    cache: MetadataCache,
    location: str,
    snapshots: str,
    extra: dict[str, Any],
    headers: dict[str, str] | None = None,
    metadata: TableMetadata | None = None,
) -> Response:
    """A ``LoadTableResult`` / ``CommitTableResponse`` body around the cached JSON of the
    metadata at ``location`` (parsed ``metadata`` given, or already in the cache)."""

    def parsed() -> TableMetadata:
        found = metadata or cache.parsed(location)
        assert found is not None
        return found

    text = cache.rendered(location, snapshots, parsed, _metadata_json)
    tail = "".join(f",{json.dumps(k)}:{json.dumps(v)}" for k, v in extra.items())
    body = f'{{"metadata-location":{json.dumps(location)},"metadata":{text}{tail}}}'
    return Response(body.encode(), media_type=JSON, headers=headers)


@router.head("/namespaces/{namespace}/tables/{table}", name="table_exists")
def table_exists(request: Request, principal: Caller, namespace: str, table: str) -> Response:
    ident = _ident(namespace, table)
    require(principal, ident[:-1], READ)
    found = state_of(request).catalog.table_exists(ident)
    if not found:  # the headers a GET would have
        return Response(status_code=404, media_type=JSON)
    return Response(status_code=204)


@router.delete("/namespaces/{namespace}/tables/{table}", name="drop_table")
def drop_table(
    request: Request,
    principal: Caller,
    namespace: str,
    table: str,
    purge: Annotated[bool, Query(alias="purgeRequested")] = False,
) -> Response:
    ident = _ident(namespace, table)
    require(principal, ident[:-1], WRITE)

    def action() -> Outcome:
        state_of(request).catalog.drop_table(ident, purge=purge)
        return Outcome(204)

    return once(request, principal, None, action)


@router.post("/namespaces/{namespace}/register", name="register_table")
def register_table(
    request: Request, principal: Caller, namespace: str, body: RegisterTableRequest
) -> Response:
    ident = (*parse_namespace(namespace), check_name(body.name))
    require(principal, ident[:-1], WRITE)
    if body.overwrite:
        raise BadRequestError("Register with overwrite=true is not supported")
    state = state_of(request)
    catalog = state.catalog
    warehouse = catalog.properties.get("warehouse")
    if warehouse and not _under(body.metadata_location, warehouse):
        # the server reads the file: a client may not make it read outside its warehouse
        raise BadRequestError(
            f"Cannot register {'.'.join(ident)}: {body.metadata_location!r} is outside the "
            "catalog's warehouse"
        )

    def action() -> Outcome:
        try:
            registered = catalog.register_table(ident, body.metadata_location)
        except (NoSuchFileError, ValueError) as exc:  # no such file, a path with NUL, not JSON
            # one message for every cause: the answer must not tell which files exist
            raise BadRequestError(
                f"Cannot register {'.'.join(ident)}: no readable table metadata at "
                f"{body.metadata_location!r}"
            ) from exc
        state.metadata.remember(registered.metadata_location, registered.metadata)
        return Outcome(200, table={"location": registered.metadata_location})

    return once(request, principal, body, action, _load_answer(request, principal, ident))


def _under(location: str, root: str) -> bool:
    """Whether ``location`` names a file below ``root`` (local paths resolved, ``..`` refused
    in object-store keys)."""

    def local(path: str) -> str:
        for scheme in ("file://", "file:"):
            if path.startswith(scheme):
                return path[len(scheme) :]
        return path

    where, base = local(location), local(root)
    if "\x00" in where:
        return False
    if "://" not in where and "://" not in base:
        base = os.path.normpath(os.path.abspath(base))
        return os.path.normpath(os.path.abspath(where)).startswith(base + os.sep)
    if ".." in where.split("/"):
        return False
    return where.startswith(base.rstrip("/") + "/")


@router.post("/tables/rename", name="rename_table")
def rename_table(request: Request, principal: Caller, body: RenameTableRequest) -> Response:
    source, destination = _ident_of(body.source), _ident_of(body.destination)
    require(principal, source[:-1], WRITE)
    require(principal, destination[:-1], WRITE)

    def action() -> Outcome:
        state_of(request).catalog.rename_table(source, destination)
        return Outcome(204)

    return once(request, principal, body, action)


@router.post("/namespaces/{namespace}/tables/{table}", name="commit_table")
def commit_table(
    request: Request, principal: Caller, namespace: str, table: str, body: CommitTableRequest
) -> Response:
    ident = _ident(namespace, table)
    require(principal, ident[:-1], WRITE)
    if body.identifier is not None and _ident_of(body.identifier) != ident:
        raise BadRequestError("The body's identifier differs from the table in the path")
    requirements = parse_each("requirements", body.requirements, table_requirement_from_json)
    updates = parse_each("updates", body.updates, table_update_from_json)
    state = state_of(request)
    catalog, cache = state.catalog, state.metadata

    def action() -> Outcome:
        if any(isinstance(r, AssertCreate) for r in requirements) and not catalog.table_exists(
            ident
        ):
            result = _commit_create(catalog, ident, requirements, updates)
        else:
            location = catalog.metadata_location(ident)
            base = cache.parsed(location)  # the current file as read before: checked, not re-read
            result = catalog.commit_table(
                ident, base, location if base else None, requirements, updates
            )
        cache.remember(result.metadata_location, result.metadata)
        return Outcome(200, table={"location": result.metadata_location})

    return once(request, principal, body, action, _commit_answer(request, ident))


def _commit_create(
    catalog: Catalog, ident: tuple[str, ...], requirements: Sequence[Any], updates: Sequence[Any]
) -> CommitResult:
    check_namespace_exists(catalog, ident[:-1])
    try:  # the catalog builds the first metadata from the updates (one create commit)
        return catalog.commit_table(ident, None, None, requirements, updates)
    except TableAlreadyExistsError as exc:
        raise CommitFailedError(f"Table already exists: {'.'.join(ident)}") from exc


@router.post("/namespaces/{namespace}/tables/{table}/metrics", name="report_metrics")
def report_metrics(
    request: Request, principal: Caller, namespace: str, table: str, body: ReportMetricsRequest
) -> Response:
    ident = _ident(namespace, table)
    require(principal, ident[:-1], READ)
    _log.info(
        "metrics report %s for %s snapshot %s",
        body.report_type,
        ".".join(ident),
        body.snapshot_id,
    )
    return Response(status_code=204)
