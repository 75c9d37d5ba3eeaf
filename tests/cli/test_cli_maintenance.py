"""``icepark rewrite-manifests`` and ``icepark add-files`` (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from icepark.catalog import load_catalog
from icepark.cli.main import cli


def test_rewrite_manifests_and_add_files(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = load_catalog("cli_maint", type="filesystem", warehouse=warehouse)
    catalog.create_namespace("db")
    data = pa.table({"id": pa.array(range(10), pa.int64()), "name": [f"n{i}" for i in range(10)]})
    table = catalog.create_table(
        "db.t", data.schema, properties={"commit.manifest-merge.enabled": "false"}
    )
    for i in range(3):
        table.append(data.slice(i * 3, 3))
    base = ["--type", "filesystem", "--warehouse", warehouse]
    runner = CliRunner()
    result = runner.invoke(cli, [*base, "--json", "rewrite-manifests", "db.t"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"rewritten_manifests_count": 3, "added_manifests_count": 1}
    folder = tmp_path / "files"
    folder.mkdir()
    pq.write_table(data.slice(9), folder / "a.parquet")
    result = runner.invoke(cli, [*base, "add-files", "db.t", str(folder)])
    assert result.exit_code == 0, result.output
    assert "added_files_count" in result.output
    assert catalog.load_table("db.t").scan().count() == 10
    result = runner.invoke(cli, [*base, "add-files", "db.t", str(folder / "a.parquet")])
    assert result.exit_code == 1 and "already referenced" in result.output
    result = runner.invoke(cli, [*base, "rewrite-manifests", "db.t", "--cluster-by", "nope"])
    assert result.exit_code == 1 and "nope" in result.output
