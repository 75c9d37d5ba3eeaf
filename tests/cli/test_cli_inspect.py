"""``icepark inspect TABLE NAME``: every metadata table as JSON lines equal to
``table.inspect.<name>()``, a rich table with a row limit, column selection, time travel, and
clean errors for unknown tables, columns and snapshots."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from icepark.catalog import load_catalog
from icepark.cli.commands_inspect import _plain
from icepark.cli.main import cli
from icepark.table import Table
from icepark.table.inspect import METADATA_TABLES

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("name", pa.string()),
        pa.field("price", pa.decimal128(9, 2)),
    ]
)


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ICEPARK_CONFIG", str(tmp_path / "no-such-config.yaml"))
    for name in ("ICEPARK_CATALOG", "ICEPARK_CATALOG_URI", "ICEPARK_WAREHOUSE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ICEPARK_CATALOG_TYPE", raising=False)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Table, list[str]]:
    catalog = load_catalog(type="filesystem", warehouse=str(tmp_path))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["day(ts)"],
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    ids = list(range(60))
    table.append(
        pa.table(
            {
                "id": ids,
                "ts": [dt.datetime(2024, 1, 1 + i % 3, tzinfo=dt.UTC) for i in ids],
                "name": [f"n{i}" for i in ids],
                "price": [None] * 60,
            },
            schema=SCHEMA,
        )
    )
    table.delete("id < 5")
    table.create_tag("t1")
    return table, ["--type", "filesystem", "--warehouse", str(tmp_path)]


def _run(args: list[str]) -> Result:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def _json_lines(args: list[str]) -> list[dict[str, Any]]:
    result = _run([*args, "--json"])
    assert result.exit_code == 0, (result.output, result.stderr)
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("name", list(METADATA_TABLES))
def test_json_equals_the_arrow_table(setup: tuple[Table, list[str]], name: str) -> None:
    table, args = setup
    expected = table.inspect.table(name)
    types = {f.name: f.type for f in expected.schema}
    want = [{k: _plain(v, types[k]) for k, v in row.items()} for row in expected.to_pylist()]
    assert _json_lines([*args, "inspect", "db.t", name]) == want


def test_text_limit_columns_and_time_travel(setup: tuple[Table, list[str]]) -> None:
    table, args = setup
    result = _run([*args, "inspect", "db.t", "files", "--columns", "file_path,record_count"])
    assert result.exit_code == 0
    assert "file_path" in result.stdout and "record_count" in result.stdout
    assert "readable_metrics" not in result.stdout
    limited = _run([*args, "inspect", "db.t", "entries", "--limit", "1"]).stdout
    assert f"(1 of {table.inspect.entries().num_rows} rows" in limited
    first = table.metadata.snapshot_log[0].snapshot_id
    old = _json_lines([*args, "inspect", "db.t", "files", "--snapshot-id", str(first)])
    assert {r["content"] for r in old} == {0}
    tagged = _json_lines([*args, "inspect", "db.t", "delete_files", "--ref", "t1"])
    assert len(tagged) == table.inspect.delete_files(ref="t1").num_rows > 0


def test_errors(setup: tuple[Table, list[str]]) -> None:
    table, args = setup
    assert _run([*args, "inspect", "db.t", "filez"]).exit_code == 2  # not one of the names
    bad_column = _run([*args, "inspect", "db.t", "files", "--columns", "nope"])
    assert bad_column.exit_code == 1 and "nope" in bad_column.stderr
    snapshot = table.metadata.current_snapshot_id
    refused = _run([*args, "inspect", "db.t", "all_files", "--snapshot-id", str(snapshot)])
    assert refused.exit_code == 1 and "all_files" in refused.stderr
    unknown = _run([*args, "inspect", "db.t", "files", "--snapshot-id", "12345"])
    assert unknown.exit_code == 1 and "12345" in unknown.stderr
    missing = _run([*args, "inspect", "db.nope", "files"])
    assert missing.exit_code == 1 and "nope" in missing.stderr
