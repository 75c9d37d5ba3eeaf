"""``scan.explain()`` and ``icepark explain``: each step's counts agree with the planner and
with the files on disk, across partition specs and with delete files."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from icepark.catalog import load_catalog
from icepark.cli.main import cli
from icepark.planning.explain import ScanExplanation
from icepark.planning.walk import manifests_of
from icepark.table import Table

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string()), ("v", pa.int64())]
)


@pytest.fixture
def table(tmp_path: Path) -> Table:
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["g"],
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    for start in range(0, 400, 100):  # 4 appends x 4 partitions
        ids = list(range(start, start + 100))
        table.append(
            pa.table({"id": ids, "g": [f"g{i % 4}" for i in ids], "v": ids}, schema=SCHEMA)
        )
    with table.update_spec() as u:  # a second spec: files of both are planned
        u.add_field("bucket(4, id)")
    ids = list(range(400, 500))
    table.append(pa.table({"id": ids, "g": [f"g{i % 4}" for i in ids], "v": ids}, schema=SCHEMA))
    table.delete("id < 20")  # position deletes in partitions g0..g3 of the first spec
    return table


def test_counts_agree_with_the_planner(table: Table) -> None:
    scan = table.scan(filter="g = 'g1' and id >= 150")
    planned = scan.plan_files()
    ex = scan.explain("db.t")
    steps = {s.name: s for s in ex.steps}
    manifests = steps["manifest list"].after
    assert manifests == len(manifests_of(table.io, table.current_snapshot()))
    assert steps["partition summaries"].after <= manifests
    # every data file's manifest holds one partition of a single append here
    assert steps["partition values"].after < steps["manifest entries (live)"].after
    # the metrics (id bounds) drop the g1 file of the first append (ids 0..99)
    assert steps["column metrics"].after < steps["partition values"].after
    assert ex.files_to_read == len(planned)
    assert ex.records_to_read == sum(t.file.record_count for t in planned)
    assert ex.bytes_to_read == sum(t.file.file_size_in_bytes for t in planned)
    attached = {(d.file_path, d.content_offset) for t in planned for d in t.delete_files}
    assert sum(ex.delete_files.values()) == len(attached)
    assert set(ex.residuals) == {0, 1}
    assert "id >= 150" in ex.residuals[0] or "150" in ex.residuals[0]
    assert all(s.ms >= 0 for s in ex.steps) and ex.planning_ms > 0
    text = str(ex)
    assert "column metrics" in text and "to read" in text


def test_no_filter_keeps_everything(table: Table) -> None:
    ex = table.scan().explain()
    steps = {s.name: s for s in ex.steps}
    total = steps["manifest entries (live)"].after
    assert steps["column metrics"].after == total == ex.files_to_read
    assert ex.delete_files == {"position": 4}


def test_explain_command(table: Table, tmp_path: Path) -> None:
    args = ["--uri", f"sqlite:///{tmp_path}/c.db", "--warehouse", str(tmp_path / "wh")]
    runner = CliRunner()
    out = runner.invoke(cli, [*args, "explain", "db.t", "--filter", "g = 'g2'", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["files_to_read"] == len(table.scan(filter="g = 'g2'").plan_files())
    assert [s["name"] for s in doc["steps"]][:2] == ["manifest list", "partition summaries"]
    text = runner.invoke(cli, [*args, "explain", "db.t", "--filter", "g = 'g2'"])
    assert text.exit_code == 0 and "partition values" in text.stdout
    bad = runner.invoke(cli, [*args, "explain", "db.t", "--filter", "nope = 1"])
    assert bad.exit_code == 1 and "nope" in bad.output


def _facts(ex: ScanExplanation) -> tuple[object, ...]:
    steps = [(s.name, s.before, s.after) for s in ex.steps]
    return (
        steps,
        ex.residuals,
        ex.delete_files,
        ex.files_to_read,
        ex.records_to_read,
        ex.bytes_to_read,
    )


@pytest.mark.parametrize(
    "text", [None, "g = 'g1' and id >= 150", "id < 30", "v > 420 or g = 'g0'", "id = 7"]
)
def test_the_array_path_explains_as_entry_by_entry(
    table: Table, text: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Manifests decoded into arrays (the path of huge tables) give the same funnel, residuals,
    delete files and sizes as the entry-by-entry path, and the planner's own tasks."""
    import icepark.planning.explain as explain
    import icepark.planning.walk as walk
    from icepark.avro.compiled import kernel_available

    if not kernel_available():
        pytest.skip("numba is not importable")
    monkeypatch.setattr(explain, "EXPLAIN_COLUMNS_MIN_ENTRIES", 10**9)
    by_entries = table.scan(filter=text).explain("db.t", time_planning=False)
    monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
    monkeypatch.setattr(explain, "EXPLAIN_COLUMNS_MIN_ENTRIES", 0)
    assert walk.use_columns(manifests_of(table.io, table.current_snapshot()))
    by_columns = table.scan(filter=text).explain("db.t", time_planning=False)
    assert _facts(by_columns) == _facts(by_entries)
    planned = table.scan(filter=text).plan_files()
    assert by_columns.files_to_read == len(planned)
    residuals: dict[int, set[str]] = {}
    for t in planned:
        residuals.setdefault(t.spec_id, set()).add(str(t.residual))
    assert by_columns.residuals == {k: " | ".join(sorted(v)) for k, v in residuals.items()}
