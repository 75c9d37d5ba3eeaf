"""``icepark compact`` on the test session's Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from click.testing import CliRunner

from icepark.catalog import load_catalog
from icepark.cli.main import cli


def test_compact_command(spark: Any, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = load_catalog("cli_compact", type="filesystem", warehouse=warehouse)
    catalog.create_namespace("db")
    data = pa.table({"id": pa.array(range(12), pa.int64()), "name": [f"n{i}" for i in range(12)]})
    table = catalog.create_table("db.t", data.schema)
    for i in range(4):
        table.append(data.slice(i * 3, 3))
    base = ["--type", "filesystem", "--warehouse", warehouse]
    runner = CliRunner()
    args = [*base, "--json", "compact", "db.t", "-o", "min-input-files=2", "--progress"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    values = json.loads(result.output.strip().splitlines()[-1])
    assert values["rewritten_data_files_count"] == 4
    assert values["added_data_files_count"] == 1
    table = catalog.load_table("db.t")
    assert table.scan().count() == 12 and len(table.scan().plan_files()) == 1
    result = runner.invoke(cli, [*base, "compact", "db.t", "--strategy", "sort"])
    assert result.exit_code == 1 and "sort order" in result.output
    result = runner.invoke(cli, [*base, "compact", "db.t", "-o", "bogus"])
    assert result.exit_code == 1 and "KEY=VALUE" in result.output
