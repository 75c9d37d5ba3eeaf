"""``icepark changes`` and ``icepark follow`` (one machine, no Spark)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from icepark.catalog import load_catalog
from icepark.cli.main import cli

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _rows(ids: list[int], suffix: str = "") -> pa.Table:
    return pa.table({"id": ids, "v": [f"v{i}{suffix}" for i in ids]}, schema=SCHEMA)


def test_changes(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = load_catalog("cli_changes", type="filesystem", warehouse=warehouse)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows([1, 2, 3]))
    first = table.current_snapshot().snapshot_id
    table.upsert(_rows([2], "!"), on=["id"])
    table.delete("id = 3")
    base = ["--type", "filesystem", "--warehouse", warehouse, "changes", "db.t"]
    runner = CliRunner()
    result = runner.invoke(cli, [*base, "--from", str(first), "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert sorted((r["_change_ordinal"], r["_change_type"], r["id"], r["v"]) for r in rows) == [
        (0, "DELETE", 2, "v2"),
        (0, "INSERT", 2, "v2!"),
        (1, "DELETE", 3, "v3"),
    ]
    result = runner.invoke(
        cli, [*base, "--from", str(first), "--identifier-columns", "id", "--columns", "id"]
    )
    assert result.exit_code == 0, result.output
    assert "UPDATE_BEFORE" in result.output and "UPDATE_AFTER" in result.output
    result = runner.invoke(cli, [*base, "--from", "42"])
    assert result.exit_code == 1 and "42" in result.output
    result = runner.invoke(cli, [*base])
    assert result.exit_code == 2  # --from is required


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_follow_prints_new_rows_until_interrupted(tmp_path: Path, stop_signal: int) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = load_catalog("cli_follow", type="filesystem", warehouse=warehouse)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows([1]))
    first = table.current_snapshot().snapshot_id
    command = [
        sys.executable,
        "-c",
        "from icepark.cli.main import main; main()",
        "--type",
        "filesystem",
        "--warehouse",
        warehouse,
        "follow",
        "db.t",
        "--interval",
        "0.2",
        "--json",
        "--start-snapshot-id",
        str(first),
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1)
        table.append(_rows([2, 3]))
        table.append(_rows([4]))
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]
    finally:
        proc.send_signal(stop_signal)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    rows = [json.loads(line) for line in lines]
    ordered = sorted(table.refresh().snapshots(), key=lambda s: s.sequence_number)
    snaps = [s.snapshot_id for s in ordered]
    assert sorted((r["_snapshot_id"], r["id"]) for r in rows) == sorted(
        [
            (snaps[0], 1),
            (snaps[1], 2),
            (snaps[1], 3),
            (snaps[2], 4),
        ]
    )
