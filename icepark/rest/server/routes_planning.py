"""Server-side scan planning: ``planTableScan``, ``fetchPlanningResult``,
``cancelPlanning`` and ``fetchScanTasks`` of the REST spec.

How a plan flows: ``POST .../tables/{table}/plan`` reads the request (snapshot, filter as
expression JSON read against the table's schema, case sensitivity, the snapshot's schema,
or ``start-snapshot-id``/``end-snapshot-id`` for the appends between two snapshots) and runs
icepark's own planner on the table, exactly as a local ``table.scan(...).plan_files()``. A plan
of at most ``page_size`` tasks is answered at once (``completed``, with the tasks and the delete
files they reference by index). A bigger one is kept (:mod:`.plans`) and answered
``submitted`` with its ``plan-id``; ``GET .../plan/{plan-id}`` then answers ``completed`` with
one plan task per page, and ``POST .../tasks`` with a plan task gives that page's tasks.
``DELETE .../plan/{plan-id}`` forgets a plan; an unknown or expired plan or plan task is 404.

Grants: ``read`` on the table's namespace for every route.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from icepark.errors import BadRequestError, IceparkError
from icepark.expressions import AlwaysTrue, BooleanExpression
from icepark.expressions.json import expression_from_json
from icepark.planning.planner import FileScanTask
from icepark.rest.models import (
    FetchPlanningResult,
    FetchScanTasksRequest,
    PlanTableScanRequest,
    PlanTableScanResult,
)
from icepark.rest.scan_tasks import partition_types, tasks_to_json
from icepark.rest.server.context import caller, require, state_of
from icepark.rest.server.names import check_name, parse_namespace
from icepark.rest.server.security import READ, Principal
from icepark.table.table import Table

__all__ = ["router", "ENDPOINTS"]

router = APIRouter()
Caller = Annotated[Principal | None, Depends(caller)]
_TABLE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"
ENDPOINTS = [
    f"POST {_TABLE}/plan",
    f"GET {_TABLE}/plan/{{plan-id}}",
    f"DELETE {_TABLE}/plan/{{plan-id}}",
    f"POST {_TABLE}/tasks",
]


def _ident(principal: Principal | None, namespace: str, table: str) -> tuple[str, ...]:
    ident = (*parse_namespace(namespace), check_name(table))
    require(principal, ident[:-1], READ)
    return ident


def _filter(table: Table, body: PlanTableScanRequest) -> BooleanExpression:
    if body.filter is None:
        return AlwaysTrue()
    schema = table.metadata.schema()
    if body.snapshot_id is not None and body.use_snapshot_schema:
        snapshot = table.metadata.snapshot_by_id(body.snapshot_id)
        if snapshot is not None and snapshot.schema_id is not None:
            schema = table.metadata.schema_by_id(snapshot.schema_id) or schema
    try:
        return expression_from_json(body.filter, schema, body.case_sensitive)
    except IceparkError as exc:
        raise BadRequestError(f"Invalid filter: {exc}") from exc


def _plan(table: Table, body: PlanTableScanRequest) -> list[FileScanTask]:
    row_filter = _filter(table, body)
    if body.start_snapshot_id is not None or body.end_snapshot_id is not None:
        if body.end_snapshot_id is None:
            raise BadRequestError("end-snapshot-id is required with start-snapshot-id")
        if body.snapshot_id is not None:
            raise BadRequestError("Give snapshot-id or start/end-snapshot-id, not both")
        incremental = table.incremental_append_scan(
            body.start_snapshot_id,
            body.end_snapshot_id,
            filter=row_filter,
            case_sensitive=body.case_sensitive,
        )
        return list(incremental.plan_files())
    scan = table.scan(
        filter=row_filter,
        snapshot_id=body.snapshot_id,
        case_sensitive=body.case_sensitive,
        use_snapshot_schema=body.use_snapshot_schema,
    )
    if body.select:
        scan.schema.select(body.select, body.case_sensitive)  # unknown columns: 400
    return list(scan.plan_files())


@router.post("/namespaces/{namespace}/tables/{table}/plan", name="plan_table_scan")
def plan_table_scan(
    request: Request, principal: Caller, namespace: str, table: str, body: PlanTableScanRequest
) -> JSONResponse:
    ident = _ident(principal, namespace, table)
    state = state_of(request)
    loaded = state.catalog.load_table(ident)
    tasks = _plan(loaded, body)
    types = partition_types(loaded.metadata)
    store = state.plans
    if len(tasks) <= store.page_size:  # tasks_to_json writes the wire form itself
        return JSONResponse({"status": "completed", **tasks_to_json(tasks, types)})
    plan = store.add(ident, tasks, types)
    return JSONResponse(PlanTableScanResult(status="submitted", plan_id=plan.plan_id).dump())


@router.get("/namespaces/{namespace}/tables/{table}/plan/{plan_id}", name="fetch_planning_result")
def fetch_planning_result(
    request: Request, principal: Caller, namespace: str, table: str, plan_id: str
) -> JSONResponse:
    ident = _ident(principal, namespace, table)
    plan = state_of(request).plans.get(ident, plan_id)
    result = FetchPlanningResult(status="completed", plan_tasks=plan.plan_tasks())
    return JSONResponse(result.dump())


@router.delete("/namespaces/{namespace}/tables/{table}/plan/{plan_id}", name="cancel_planning")
def cancel_planning(
    request: Request, principal: Caller, namespace: str, table: str, plan_id: str
) -> Response:
    ident = _ident(principal, namespace, table)
    state_of(request).plans.cancel(ident, plan_id)
    return Response(status_code=204)


@router.post("/namespaces/{namespace}/tables/{table}/tasks", name="fetch_scan_tasks")
def fetch_scan_tasks(
    request: Request, principal: Caller, namespace: str, table: str, body: FetchScanTasksRequest
) -> JSONResponse:
    ident = _ident(principal, namespace, table)
    store = state_of(request).plans
    page = store.page(ident, body.plan_task)
    types = store.get(ident, body.plan_task.rpartition(":")[0]).partition_types
    return JSONResponse(tasks_to_json(page, types))
