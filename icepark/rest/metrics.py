"""Metrics reports a REST client sends after a commit and after a scan is planned (``POST
.../tables/{t}/metrics``).

A commit's is Java's ``CommitReport``: the snapshot the commit produced, its operation, and
counters taken from the snapshot summary under the names Java's ``CommitMetricsResult`` gives
them (``deleted-data-files`` is reported as ``removed-data-files``, sizes in bytes, ...), plus
the commit request's duration as a timer. A scan's is Java's ``ScanReport``: the snapshot
read, the filter as expression JSON, the schema and projected field ids and names, the
planning time and the counters of :func:`~icepark.planning.scan_metrics.scan_metrics`.

A report is best effort, sent from a thread of its own (:class:`Reports`): it never delays a
commit or a scan, and a failure to send it is logged, never raised.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from icepark.expressions.json import expression_to_json
from icepark.planning.scan_metrics import PlanCounts, scan_metrics
from icepark.rest.http import RestClient, client_version
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import index_by_id
from icepark.spec.snapshots import Snapshot
from icepark.table.scan import DataScan

__all__ = [
    "REPORTING_ENABLED",
    "Reports",
    "commit_report",
    "report_commit",
    "reporting_enabled",
    "scan_report",
    "scan_reporter",
]

_log = logging.getLogger(__name__)
_IDLE_SECONDS = 1.0  # a reporting thread with nothing to send for this long ends
_Body = dict[str, Any] | Callable[[], dict[str, Any] | None]

#: the client property that turns reports off (Java's name and default: true)
REPORTING_ENABLED = "rest-metrics-reporting-enabled"

# (report name, snapshot summary key, unit) as Java's CommitMetricsResult maps them
_COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("added-data-files", "added-data-files", "count"),
    ("removed-data-files", "deleted-data-files", "count"),
    ("total-data-files", "total-data-files", "count"),
    ("added-delete-files", "added-delete-files", "count"),
    ("added-equality-delete-files", "added-equality-delete-files", "count"),
    ("added-positional-delete-files", "added-position-delete-files", "count"),
    ("added-dvs", "added-dvs", "count"),
    ("removed-delete-files", "removed-delete-files", "count"),
    ("removed-equality-delete-files", "removed-equality-delete-files", "count"),
    ("removed-positional-delete-files", "removed-position-delete-files", "count"),
    ("removed-dvs", "removed-dvs", "count"),
    ("total-delete-files", "total-delete-files", "count"),
    ("added-records", "added-records", "count"),
    ("removed-records", "deleted-records", "count"),
    ("total-records", "total-records", "count"),
    ("added-files-size-bytes", "added-files-size", "bytes"),
    ("removed-files-size-bytes", "removed-files-size", "bytes"),
    ("total-files-size-bytes", "total-files-size", "bytes"),
    ("added-positional-deletes", "added-position-deletes", "count"),
    ("removed-positional-deletes", "removed-position-deletes", "count"),
    ("total-positional-deletes", "total-position-deletes", "count"),
    ("added-equality-deletes", "added-equality-deletes", "count"),
    ("removed-equality-deletes", "removed-equality-deletes", "count"),
    ("total-equality-deletes", "total-equality-deletes", "count"),
    ("manifests-created", "manifests-created", "count"),
    ("manifests-replaced", "manifests-replaced", "count"),
    ("manifests-kept", "manifests-kept", "count"),
    ("manifest-entries-processed", "entries-processed", "count"),
)


def _counters(summary: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, key, unit in _COUNTERS:
        raw = summary.get(key)
        if raw is None:
            continue
        try:
            value = int(raw)
        except ValueError:
            continue  # a summary value that is not a number is not a counter
        out[name] = {"unit": unit, "value": value}
    return out


def _new_snapshot(before: TableMetadata | None, after: TableMetadata) -> Snapshot | None:
    known = {s.snapshot_id for s in before.snapshots} if before is not None else set()
    added = [s for s in after.snapshots if s.snapshot_id not in known]
    return added[-1] if added else None


def commit_report(
    table_name: str,
    before: TableMetadata | None,
    after: TableMetadata,
    duration_ns: int,
    engine: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """The ``ReportMetricsRequest`` body for a commit that turned ``before`` into ``after``,
    or None when the commit made no snapshot (Java reports only snapshot commits)."""
    snapshot = _new_snapshot(before, after)
    if snapshot is None:
        return None
    summary = dict(snapshot.summary.to_json()) if snapshot.summary is not None else {}
    metrics = {
        "total-duration": {
            "count": 1,
            "time-unit": "nanoseconds",
            "total-duration": max(int(duration_ns), 0),
        },
        **_counters(summary),
    }
    return {
        "report-type": "commit-report",
        "table-name": table_name,
        "snapshot-id": snapshot.snapshot_id,
        "sequence-number": snapshot.sequence_number,
        "operation": summary.get("operation", "append"),
        "metrics": metrics,
        "metadata": dict(engine or {}),
    }


class Reports:
    """Sends reports from a thread of its own, so a commit does not wait for its report (one
    round trip); at most ``limit`` wait, more are dropped with a warning. The thread ends
    after a second with nothing to send. ``flush`` waits for those queued; ``close`` also
    stops the thread."""

    def __init__(self, client: RestClient, limit: int = 1000) -> None:
        self._client = client
        self._queue: queue.Queue[tuple[str, str, _Body] | None] = queue.Queue(limit)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, url: str, table_name: str, body: _Body) -> None:
        """Queue ``body`` (or a function building it on the reporting thread; None: nothing
        to send) for ``url``."""
        with self._lock:  # the thread ends when idle: start one when none is running
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="icepark-rest-reports", daemon=True
                )
                self._thread.start()
            try:
                self._queue.put_nowait((url, table_name, body))
            except queue.Full:
                _log.warning("Metrics report of table %s dropped: too many waiting", table_name)

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():  # idle: end (submit starts another)
                        self._thread = None
                        return
                continue
            try:
                if item is None:
                    return
                url, name, body = item
                built = body() if callable(body) else body
                if built is not None:
                    self._client.call("POST", url, f"report metrics of table {name}", body=built)
            except Exception as exc:  # a report never fails anything
                _log.warning("Cannot report metrics of table %s: %s", item[1] if item else "", exc)
            finally:
                self._queue.task_done()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued report was sent (or failed); False on timeout."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def close(self, timeout: float = 10.0) -> None:
        self.flush(timeout)
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is not None:
                self._queue.put_nowait(None)
        if thread is not None:
            thread.join(timeout)


def reporting_enabled(properties: Mapping[str, str]) -> bool:
    """Whether the client sends reports (``rest-metrics-reporting-enabled``, default true)."""
    return properties.get(REPORTING_ENABLED, "true").strip().lower() == "true"


def _engine() -> dict[str, str]:
    return {"engine-name": "icepark", "engine-version": client_version()}


def scan_report(
    table_name: str,
    scan: DataScan,
    counts: PlanCounts,
    duration_ns: int,
    engine: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """The ``ReportMetricsRequest`` body for the plan of ``scan`` that ``counts`` adds up, or
    None for a scan of a table without snapshots (Java reports none: nothing was planned)."""
    snapshot = scan.snapshot
    if snapshot is None:
        return None
    # the projection's primitive fields, as Java's TypeUtil.getProjectedIds lists them
    # (metadata columns such as _file are not the table's and are left out)
    fields = index_by_id(scan.projected_schema.as_struct())
    named = {
        i: scan.schema.find_column_name(i) for i, f in fields.items() if f.field_type.is_primitive
    }
    ids = sorted(i for i, name in named.items() if name is not None)
    counters = scan_metrics(
        scan.io,
        scan.metadata,
        snapshot,
        scan.row_filter,
        scan.schema,
        counts,
        scan.case_sensitive,
    )
    metrics: dict[str, Any] = {
        "total-planning-duration": {
            "count": 1,
            "time-unit": "nanoseconds",
            "total-duration": max(int(duration_ns), 0),
        }
    }
    for name, value in counters.items():
        metrics[name] = {"unit": "bytes" if name.endswith("-bytes") else "count", "value": value}
    return {
        "report-type": "scan-report",
        "table-name": table_name,
        "snapshot-id": snapshot.snapshot_id,
        "filter": expression_to_json(scan.row_filter),
        "schema-id": scan.schema.schema_id,
        "projected-field-ids": ids,
        "projected-field-names": [named[i] for i in ids],
        "metrics": metrics,
        "metadata": dict(engine or {}),
    }


def scan_reporter(
    reports: Reports, url: str, table_name: str
) -> Callable[[DataScan, PlanCounts, int], None]:
    """A table's ``scan_reporter``: queues each plan's scan report for ``url``. The report is
    built on the reporting thread (it reads the cached manifest list and judges manifests,
    work the scan need not wait for); building or sending one never fails the scan."""

    def report(scan: DataScan, counts: PlanCounts, duration_ns: int) -> None:
        reports.submit(
            url, table_name, lambda: scan_report(table_name, scan, counts, duration_ns, _engine())
        )

    return report


def report_commit(
    reports: Reports,
    url: str,
    properties: Mapping[str, str],
    table_name: str,
    before: TableMetadata | None,
    after: TableMetadata,
    duration_ns: int,
) -> None:
    """Queue the commit's report for ``url`` (the table's ``/metrics``) unless reporting is
    off; sending it never delays or fails the commit."""
    if not reporting_enabled(properties):
        return
    body = commit_report(table_name, before, after, duration_ns, _engine())
    if body is not None:
        reports.submit(url, table_name, body)
