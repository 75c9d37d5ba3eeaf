"""Planning a table scan on the REST server (the spec's ``planTableScan``), for
:class:`~icepark.rest.catalog.RestCatalog` tables.

When it is used: the catalog's properties (the user's, over the server's config
``defaults``, under its ``overrides``) or the table's ``config`` from its load result say
``rest.scan-planning.enabled=true`` (or Java's ``scan-planning-mode=server``), and the server
advertises ``POST .../tables/{table}/plan``. Otherwise scans plan locally, as always.

How it flows: ``scan.plan_files()`` sends the scan's snapshot id (time travel, branches and
tags resolve locally first), its filter as expression JSON, its case sensitivity and whether it
reads with the snapshot's schema. A ``completed`` answer carries the tasks (and may carry plan
tasks); a ``submitted`` one is polled (``GET .../plan/{plan-id}``, backing off up to 1 s, for at
most ``rest-scan-planning.poll-timeout-ms``, default 5 minutes) until it completes; each plan
task is fetched with ``POST .../tasks``, whose answer may hold more plan tasks. Each task
becomes an icepark :class:`~icepark.planning.planner.FileScanTask` (:mod:`.scan_tasks`): its
data file, delete files and residual (the server's, else the scan's filter), so reading is
unchanged. A plan left unread (the reader stopped early) or timed out is cancelled.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from icepark.errors import IceparkError, RestError
from icepark.expressions import AlwaysTrue
from icepark.expressions.json import expression_to_json
from icepark.planning.planner import FileScanTask
from icepark.rest.http import RestClient
from icepark.rest.models import (
    FetchPlanningResult,
    FetchScanTasksRequest,
    FetchScanTasksResult,
    PlanTableScanRequest,
    PlanTableScanResult,
    ScanTasks,
)
from icepark.rest.scan_tasks import partition_types, tasks_from_json

if TYPE_CHECKING:
    from icepark.rest.catalog import RestCatalog
    from icepark.table.scan import DataScan

__all__ = ["RestScanPlanner", "PLAN_ENDPOINT", "scan_planning_enabled", "scan_planner_for"]

PLAN_ENDPOINT = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan"
ENABLED = "rest.scan-planning.enabled"
MODE = "scan-planning-mode"  # Java 1.11's name: client | server
POLL_TIMEOUT = "rest-scan-planning.poll-timeout-ms"


def scan_planning_enabled(
    properties: Mapping[str, str], table_config: Mapping[str, str], endpoints: frozenset[str]
) -> bool:
    """Whether a table plans on the server (see the module docstring): the table's config
    decides before the catalog's properties, ``rest.scan-planning.enabled`` before
    ``scan-planning-mode``."""
    if PLAN_ENDPOINT not in endpoints:
        return False
    for source in (table_config, properties):
        if ENABLED in source:
            return source[ENABLED].strip().lower() == "true"
        if MODE in source:
            return source[MODE].strip().lower() == "server"
    return False


def scan_planner_for(
    catalog: RestCatalog, ident: tuple[str, ...], table_config: Mapping[str, str]
) -> RestScanPlanner | None:
    """The planner of a table ``catalog`` loads (None: plan locally); the catalog's own helper,
    so it uses the catalog's client and table URLs."""
    if not scan_planning_enabled(catalog.properties, table_config, catalog.endpoints):
        return None
    url = catalog._table_url(ident)
    return RestScanPlanner(catalog._client, url, ".".join(ident), catalog.properties)


class RestScanPlanner:
    """Plans a :class:`~icepark.table.scan.DataScan` of one table through the REST server
    (a ``Table``'s ``scan_planner``)."""

    def __init__(
        self,
        client: RestClient,
        table_url: str,
        name: str,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        self.table_url = table_url
        self.name = name
        self.poll_timeout = int((properties or {}).get(POLL_TIMEOUT, 300_000)) / 1000.0

    def __repr__(self) -> str:
        return f"RestScanPlanner({self.name!r})"

    def __call__(self, scan: DataScan) -> Iterator[FileScanTask]:
        snapshot = scan.snapshot
        if snapshot is None:
            return iter(())
        request = PlanTableScanRequest(
            snapshot_id=snapshot.snapshot_id,
            filter=None if isinstance(scan.row_filter, AlwaysTrue) else _filter_json(scan),
            case_sensitive=scan.case_sensitive,
            use_snapshot_schema=scan.schema.schema_id != scan.metadata.current_schema_id,
        )
        return self._tasks(scan, request)

    def _tasks(self, scan: DataScan, request: PlanTableScanRequest) -> Iterator[FileScanTask]:
        operation = f"plan a scan of table {self.name}"
        answer = self.client.call(
            "POST",
            f"{self.table_url}/plan",
            operation,
            body=request,
            response=PlanTableScanResult,
            errors="table",
        )
        if answer is None:
            raise RestError(f"Cannot {operation}: the server sent no plan")
        plan_id = answer.plan_id
        finished = False
        try:
            page: ScanTasks = answer
            if answer.status == "submitted":
                if plan_id is None:
                    raise RestError(f"Cannot {operation}: submitted without a plan-id")
                page = self._wait(plan_id, operation)
            elif answer.status != "completed":
                raise _not_completed(operation, answer.status, answer.error)
            yield from self._pages(scan, page)
            finished = True
        finally:
            if plan_id is not None and not finished:
                self._cancel(plan_id)

    def _wait(self, plan_id: str, operation: str) -> FetchPlanningResult:
        deadline = time.monotonic() + self.poll_timeout
        delay = 0.05
        while True:
            result = self.client.call(
                "GET",
                f"{self.table_url}/plan/{plan_id}",
                operation,
                response=FetchPlanningResult,
            )
            if result is None:
                raise RestError(f"Cannot {operation}: the server sent no planning result")
            if result.status == "completed":
                return result
            if result.status != "submitted":
                raise _not_completed(operation, result.status, result.error)
            if time.monotonic() + delay > deadline:
                raise RestError(f"Cannot {operation}: plan {plan_id} did not complete in time")
            time.sleep(delay)
            delay = min(1.0, delay * 2)

    def _pages(self, scan: DataScan, first: ScanTasks) -> Iterator[FileScanTask]:
        types = partition_types(scan.metadata)
        plan_tasks = deque(first.plan_tasks or ())
        page: ScanTasks | None = first
        while page is not None:
            yield from tasks_from_json(
                page, types, scan.schema, scan.row_filter, scan.case_sensitive
            )
            page = None
            if plan_tasks:
                page = self.client.call(
                    "POST",
                    f"{self.table_url}/tasks",
                    f"fetch scan tasks of table {self.name}",
                    body=FetchScanTasksRequest(plan_task=plan_tasks.popleft()),
                    response=FetchScanTasksResult,
                )
                if page is None:
                    raise RestError(f"Cannot fetch scan tasks of table {self.name}: no answer")
                plan_tasks.extend(page.plan_tasks or ())

    def _cancel(self, plan_id: str) -> None:
        try:
            self.client.call("DELETE", f"{self.table_url}/plan/{plan_id}", f"cancel plan {plan_id}")
        except IceparkError:
            pass  # best effort: the server forgets plans when they expire


def _filter_json(scan: DataScan) -> object:
    return expression_to_json(scan.row_filter)


def _not_completed(operation: str, status: str, error: object) -> RestError:
    message = getattr(error, "message", None)
    detail = f": {message}" if message else ""
    return RestError(f"Cannot {operation}: planning {status}{detail}")
