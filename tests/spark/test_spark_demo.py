"""``make demo`` end to end on a small number of events, on the shared Spark session."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

pytestmark = pytest.mark.spark


def test_demo_end_to_end(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from icepark.catalog import load_catalog
    from icepark.spark import demo

    monkeypatch.chdir(tmp_path)
    for var in ("ICEPARK_CATALOG_URI", "ICEPARK_WAREHOUSE", "ICEPARK_CATALOG_TYPE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ICEPARK_CONFIG", str(tmp_path / "absent.yaml"))
    demo.main(20_000, days=3)
    out = capsys.readouterr().out
    assert "skipped by partition" in out and "done in" in out
    assert "7 snapshots -> 2; deleted" in out and "freed" in out
    table = load_catalog().load_table("demo.events")
    # the upkeep kept the last two snapshots
    operations = [s.summary["operation"] for s in table.snapshots() if s.summary]
    assert operations == ["overwrite", "replace"]  # the merge and the compaction
    assert "full scan" in out and "files rewritten into" in out
    tasks = table.scan().plan_files()
    assert not any(t.delete_files for t in tasks)  # compaction applied every delete
    assert table.scan(filter="kind = 'late'").count() == 1_000
    assert table.scan(filter="kind = 'view' and ts < '2024-01-02T00:00:00+00:00'").count() == 0
    # the streaming leg: the follower counted every event the sink committed, exactly once
    stream = load_catalog().load_table("demo.stream_events")
    epochs = [s.summary["spark.sql.streaming.epochId"] for s in stream.snapshots() if s.summary]
    assert len(epochs) >= 4 and epochs == sorted(epochs, key=int)
    stored = stream.scan().count()
    assert f"the table holds {stored:,} events, the follower counted {stored:,}" in out
    events = stream.scan(columns=["event_id"]).to_arrow().column("event_id").to_pylist()
    assert sorted(events) == list(range(len(events)))
    # idempotent: a re-run starts the table over
    again = demo._fresh_table(load_catalog(), Console(file=io.StringIO()))
    assert again.current_snapshot() is None
