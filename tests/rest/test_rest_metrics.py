"""Commit reports: icepark's REST client reports each snapshot commit to the table's
``/metrics`` (from a thread of its own: a commit never waits for its report); Java's own parser (ReportMetricsRequestParser, in the Java handler server) reads
them, and the counters equal the snapshot summary's. A report never fails a commit."""

from __future__ import annotations

import logging
import uuid

import pyarrow as pa
import pytest
from rest_fault_server import FaultServer, Rule

from icepark.rest.catalog import RestCatalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids]}, schema=SCHEMA)


def _value(report: dict, name: str) -> int | None:
    metric = report["metrics"].get(name)
    return None if metric is None else metric["value"]


def test_java_reads_the_commit_reports(java) -> None:  # type: ignore[no-untyped-def]
    catalog = java.catalog()
    ns = f"m{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    table = catalog.create_table(f"{ns}.t", SCHEMA, properties={"format-version": "2"})
    table.append(_rows(0, 10))
    table.append(_rows(10, 5))
    table.delete("id < 3")
    assert catalog.reports.flush()  # reports go out from a thread of their own
    snapshots = table.refresh().metadata.snapshots
    reports = [r for r in java.metrics_reports() if r["table-name"] == f"{ns}.t"]
    assert [r["snapshot-id"] for r in reports] == [s.snapshot_id for s in snapshots]
    assert [r["report-type"] for r in reports] == ["commit-report"] * 3
    for report, snapshot in zip(reports, snapshots, strict=True):
        summary = snapshot.summary.to_json()
        assert report["operation"] == summary["operation"]
        assert report["sequence-number"] == snapshot.sequence_number
        assert _value(report, "total-records") == int(summary["total-records"])
        assert _value(report, "total-data-files") == int(summary["total-data-files"])
        assert report["metrics"]["total-duration"]["count"] == 1
        assert report["metadata"]["engine-name"] == "icepark"
    assert _value(reports[1], "added-records") == 5
    # Java's names for the summary's keys (CommitMetricsResult)
    names = {
        "added-data-files": "added-data-files",
        "removed-data-files": "deleted-data-files",
        "added-records": "added-records",
        "removed-records": "deleted-records",
        "added-files-size-bytes": "added-files-size",
        "removed-files-size-bytes": "removed-files-size",
        "added-positional-deletes": "added-position-deletes",
    }
    for report, snapshot in zip(reports, snapshots, strict=True):
        summary = snapshot.summary.to_json()
        for name, key in names.items():
            expected = int(summary[key]) if key in summary else None
            assert _value(report, name) == expected, (name, report["metrics"], summary)
    assert _value(reports[2], "removed-records") or _value(reports[2], "added-positional-deletes")


def test_no_reports_when_turned_off(java) -> None:  # type: ignore[no-untyped-def]
    catalog = java.catalog(**{"rest-metrics-reporting-enabled": "false"})
    ns = f"m{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    catalog.create_table(f"{ns}.t", SCHEMA).append(_rows(0, 3))
    assert catalog.reports.flush()
    assert not [r for r in java.metrics_reports() if r["table-name"] == f"{ns}.t"]


def test_a_failing_report_never_fails_the_commit(
    fault: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = RestCatalog("rc", {"uri": fault.uri})
    table = catalog.create_table("db.t", SCHEMA)
    fault.add(Rule("POST", "/metrics", 500, times=5))
    with caplog.at_level(logging.WARNING, logger="icepark.rest.metrics"):
        table.append(_rows(0, 4))
        assert catalog.reports.flush()
    assert fault.backend.load_table("db.t").scan().to_arrow().num_rows == 4
    assert "Cannot report metrics of table db.t" in caplog.text
    assert len(fault.requests_to("POST", "/metrics")) == 1


def test_a_slow_report_does_not_delay_the_commit(fault: FaultServer) -> None:
    """The metrics endpoint answers after 1 s: the append returns long before that, and the
    report still arrives."""
    import time

    catalog = RestCatalog("rc", {"uri": fault.uri})
    table = catalog.create_table("db.t", SCHEMA)
    fault.add(Rule("POST", "/metrics", 200, action="delay", times=1))
    start = time.monotonic()
    table.append(_rows(0, 2))
    assert time.monotonic() - start < 0.9
    assert catalog.reports.flush()
    assert len(fault.requests_to("POST", "/metrics")) == 1
