"""Metrics reports a REST client sends after a commit (``POST .../tables/{t}/metrics``), in the
form of Java's ``CommitReport``: the snapshot the commit produced, its operation, and counters
taken from the snapshot summary under the names Java's ``CommitMetricsResult`` gives them
(``deleted-data-files`` is reported as ``removed-data-files``, sizes in bytes, ...), plus the
commit request's duration as a timer. A report is best effort: a failure to send it is
logged and never fails the commit (Java's reporters behave the same).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from icepark.rest.http import RestClient, client_version
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import Snapshot

__all__ = ["REPORTING_ENABLED", "commit_report", "report_commit"]

_log = logging.getLogger(__name__)

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


def report_commit(
    client: RestClient,
    url: str,
    properties: Mapping[str, str],
    table_name: str,
    before: TableMetadata | None,
    after: TableMetadata,
    duration_ns: int,
) -> None:
    """Send the commit's report to ``url`` (the table's ``/metrics``) unless reporting is
    off; a failure is logged, never raised."""
    if properties.get(REPORTING_ENABLED, "true").strip().lower() != "true":
        return
    engine = {"engine-name": "icepark", "engine-version": client_version()}
    body = commit_report(table_name, before, after, duration_ns, engine)
    if body is None:
        return
    try:
        client.call("POST", url, f"report metrics of table {table_name}", body=body)
    except Exception as exc:  # a report never fails the commit it describes
        _log.warning("Cannot report metrics of table %s: %s", table_name, exc)
