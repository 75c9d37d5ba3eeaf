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


def test_java_reads_the_scan_reports(java) -> None:  # type: ignore[no-untyped-def]
    """A scan planned locally is reported once its plan is complete: Java's parser reads the
    report, and its filter, projection and counters are those of the plan."""
    from icepark.expressions.json import expression_from_json

    catalog = java.catalog()
    ns = f"s{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    table = catalog.create_table(
        f"{ns}.t", SCHEMA, partition_by=["bucket(4, id)"], properties={"format-version": "2"}
    )
    for start in range(0, 40, 10):  # four appends: four data manifests, files in 4 buckets
        table.append(_rows(start, 10))
    table.delete("id = 3")  # a position delete file (merge-on-read) or a rewritten file
    table = table.refresh()
    assert catalog.reports.flush()
    before = len(java.metrics_reports())

    scan = table.scan(filter="id = 7", columns=["name"])
    planned = list(scan.plan_files())  # planned (and reported) as they are read
    whole = list(table.scan().plan_files())
    assert table.scan(filter="id = 7").to_arrow().num_rows == 1  # a read reports too
    assert catalog.reports.flush()
    reports = [r for r in java.metrics_reports()[before:] if r["table-name"] == f"{ns}.t"]
    assert [r["report-type"] for r in reports] == ["scan-report"] * 3
    point, full, read = reports
    snapshot = table.metadata.current_snapshot()
    assert point["snapshot-id"] == snapshot.snapshot_id
    assert point["schema-id"] == table.metadata.schema().schema_id
    assert point["projected-field-names"] == ["name"]
    assert point["projected-field-ids"] == [table.metadata.schema().find_field_id("name")]
    assert full["projected-field-names"] == ["id", "name"]
    # the filter as Java wrote it back reads as the scan's own
    assert str(expression_from_json(point["filter"])) == str(scan.row_filter)
    assert full["filter"] is True  # Java writes an always-true filter as `true`

    def value(report: dict, name: str) -> int:
        return report["metrics"][name]["value"]

    assert value(point, "result-data-files") == len({t.file.file_path for t in planned})
    assert value(full, "result-data-files") == len({t.file.file_path for t in whole})
    assert value(point, "result-data-files") < value(full, "result-data-files")
    assert value(full, "total-file-size-in-bytes") == sum(t.file.file_size_in_bytes for t in whole)
    manifests = table.inspect.manifests().to_pylist()
    data_manifests = [m for m in manifests if m["content"] == 0]
    assert value(full, "total-data-manifests") == len(data_manifests)
    assert value(point, "total-data-manifests") == len(data_manifests)
    # every manifest spans the four buckets, so the point query opens them all and prunes
    # by partition and metrics inside them: what it skipped and kept are the table's files
    assert value(point, "scanned-data-manifests") == len(data_manifests)
    assert value(point, "skipped-data-manifests") == 0
    assert value(point, "skipped-data-files") + value(point, "result-data-files") == value(
        full, "result-data-files"
    )
    assert value(full, "skipped-data-files") == 0
    assert value(full, "result-delete-files") == sum(len(t.delete_files) for t in whole)
    assert point["metrics"]["total-planning-duration"]["count"] == 1
    assert read["metadata"]["engine-name"] == "icepark"


def test_no_scan_report_for_an_unfinished_plan(fault: FaultServer) -> None:
    """A reader that stops early ends planning without a report (as Java's); a table
    without snapshots has nothing to report."""
    catalog = RestCatalog("rc", {"uri": fault.uri})
    table = catalog.create_table("db.t", SCHEMA)
    list(table.scan().plan_files())
    assert catalog.reports.flush()
    assert not fault.requests_to("POST", "/metrics")
    for start in range(0, 30, 10):
        table.append(_rows(start, 10))
    assert catalog.reports.flush()
    commits = len(fault.requests_to("POST", "/metrics"))
    table = catalog.load_table("db.t")
    tasks = table.scan().iter_plan_files()
    next(tasks)
    tasks.close()
    assert catalog.reports.flush()
    assert len(fault.requests_to("POST", "/metrics")) == commits
    table.scan().plan_files()  # not read: not planned, nothing to report
    assert catalog.reports.flush()
    assert len(fault.requests_to("POST", "/metrics")) == commits
    list(table.scan().plan_files())
    assert catalog.reports.flush()
    assert len(fault.requests_to("POST", "/metrics")) == commits + 1
