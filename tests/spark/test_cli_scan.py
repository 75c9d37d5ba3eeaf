"""``icepark scan`` (one-machine read, no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner

from icepark.catalog import load_catalog
from icepark.cli.main import cli


def test_scan_prints_rows(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = load_catalog("cli_scan", type="filesystem", warehouse=warehouse)
    catalog.create_namespace("db")
    data = pa.table({"id": pa.array(range(10), pa.int64()), "name": [f"n{i}" for i in range(10)]})
    catalog.create_table("db.t", data.schema, partition_by=["bucket(2, id)"]).append(data)
    base = ["--type", "filesystem", "--warehouse", warehouse, "scan", "db.t"]
    runner = CliRunner()
    result = runner.invoke(cli, [*base, "--json", "--filter", "id >= 7", "--columns", "name,id"])
    assert result.exit_code == 0, result.output
    rows = sorted((json.loads(line) for line in result.output.splitlines()), key=lambda r: r["id"])
    assert rows == [{"name": f"n{i}", "id": i} for i in (7, 8, 9)]
    result = runner.invoke(cli, [*base, "--limit", "3", "--progress"])
    assert result.exit_code == 0, result.output
    assert len(result.output.strip().splitlines()[2:]) == 3  # after the header and its rule
    result = runner.invoke(cli, [*base, "--filter", "nope = 1"])
    assert result.exit_code == 1 and "nope" in result.output
