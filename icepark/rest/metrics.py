"""Metrics reports a REST client sends after a commit (``POST .../tables/{t}/metrics``), in the
form of Java's ``CommitReport``: the snapshot the commit produced, its operation, and counters
taken from the snapshot summary under the names Java's ``CommitMetricsResult`` gives them
(``deleted-data-files`` is reported as ``removed-data-files``, sizes in bytes, ...), plus the
commit request's duration as a timer. A report is best effort, sent from a thread of its own
(:class:`Reports`): it never delays a commit, and a failure to send it is logged, never raised.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping
from typing import Any

from icepark.rest.http import RestClient, client_version
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import Snapshot

__all__ = ["REPORTING_ENABLED", "Reports", "commit_report", "report_commit"]

_log = logging.getLogger(__name__)
_IDLE_SECONDS = 1.0  # a reporting thread with nothing to send for this long ends

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
        self._queue: queue.Queue[tuple[str, str, dict[str, Any]] | None] = queue.Queue(limit)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, url: str, table_name: str, body: dict[str, Any]) -> None:
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
                self._client.call("POST", url, f"report metrics of table {name}", body=body)
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
    if properties.get(REPORTING_ENABLED, "true").strip().lower() != "true":
        return
    engine = {"engine-name": "icepark", "engine-version": client_version()}
    body = commit_report(table_name, before, after, duration_ns, engine)
    if body is not None:
        reports.submit(url, table_name, body)
