"""The upkeep verbs of the ``icepark`` command line: expire, remove-orphans, rollback,
cherrypick and fast-forward, on real tables through click's test runner."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from icepark.catalog import load_catalog
from icepark.cli.commands_upkeep import parse_time
from icepark.cli.main import cli
from icepark.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string())])


def _rows(ids: range, p: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "p": [p] * len(ids)}, schema=SCHEMA)


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ICEPARK_CONFIG", str(tmp_path / "no-such-config.yaml"))
    for name in ("ICEPARK_CATALOG", "ICEPARK_CATALOG_URI", "ICEPARK_WAREHOUSE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["sql", "filesystem"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Table, list[str]]:
    if request.param == "sql":
        catalog = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
        args = ["--uri", f"sqlite:///{tmp_path}/c.db", "--warehouse", str(tmp_path)]
    else:
        catalog = load_catalog(type="filesystem", warehouse=str(tmp_path))
        args = ["--type", "filesystem", "--warehouse", str(tmp_path)]
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", SCHEMA, partition_by=["p"], properties={"write.wap.enabled": "true"}
    )
    for i in range(4):
        table.overwrite_partitions(_rows(range(i * 10, i * 10 + 3), "a"))
        time.sleep(0.002)
    return table, args


def _run(args: list[str]) -> Result:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def _ok(args: list[str]) -> str:
    result = _run(args)
    assert result.exit_code == 0, (result.output, result.stderr)
    return result.stdout


def _json(args: list[str]) -> Any:
    return json.loads(_ok([*args, "--json"]))


def _files(table: Table) -> set[str]:
    return {str(p) for p in Path(table.location).rglob("*") if p.is_file()}


def test_parse_time() -> None:
    now = 1_700_000_000_000
    assert parse_time("7d", now) == now - 7 * 86_400_000
    assert parse_time("90s", now) == now - 90_000
    assert parse_time("1700000000123") == 1_700_000_000_123
    assert parse_time("2024-01-02") == 1_704_153_600_000
    assert parse_time("2024-01-02T01:00:00+01:00") == 1_704_153_600_000
    with pytest.raises(ValueError, match="'yesterday'"):
        parse_time("yesterday")


def test_expire(setup: tuple[Table, list[str]]) -> None:
    table, args = setup
    files = _files(table)
    out = _ok([*args, "expire", "db.t", "--older-than", "0s", "--retain-last", "1", "--dry-run"])
    assert "would expire 3 snapshots" in out
    assert "files that would be deleted (" in out
    assert _files(table) == files and len(table.refresh().snapshots()) == 4
    data = [p for p in files if p.endswith(".parquet")]
    assert sum(p in out for p in data) == 3  # the three overwritten data files

    result = _json([*args, "expire", "db.t", "--older-than", "0s", "--retain-last", "1"])
    assert result["table"] == "db.t" and len(result["expired_snapshot_ids"]) == 3
    assert result["deleted_data_files_count"] == 3
    assert result["deleted_manifest_lists_count"] == 3
    assert set(result["deleted_files"]) == files - _files(table)
    assert result["failed"] == {} and result["deleted_bytes"] > 0
    assert len(table.refresh().snapshots()) == 1
    assert "expired 0 snapshots (none)" in _ok([*args, "expire", "db.t"])


def test_remove_orphans(setup: tuple[Table, list[str]]) -> None:
    table, args = setup
    stray = Path(table.location) / "data" / "stray.parquet"
    stray.write_bytes(b"stray")
    moment = time.time() - 4 * 86400
    for path in Path(table.location).rglob("*"):
        os.utime(path, (moment, moment))
    out = _ok([*args, "remove-orphans", "db.t", "--dry-run"])
    assert "orphan files (5 B) (1):" in out and str(stray) in out and stray.exists()
    assert _json([*args, "remove-orphans", "db.t"])["deleted"] == [str(stray)]
    assert not stray.exists()
    bad = _run([*args, "remove-orphans", "db.t", "--older-than", "1h"])
    assert bad.exit_code == 1 and "less than 24 hours ago" in bad.stderr
    bad = _run([*args, "remove-orphans", "db.t", "--location", "/elsewhere"])
    assert bad.exit_code == 1 and "/elsewhere: it is outside the location" in bad.stderr
    assert table.refresh().scan().to_arrow().num_rows == 3


def test_rollback_cherrypick_fast_forward(setup: tuple[Table, list[str]]) -> None:
    table, args = setup
    snapshots = sorted(table.snapshots(), key=lambda s: s.sequence_number)
    first, last = snapshots[0].snapshot_id, snapshots[-1].snapshot_id
    out = _json([*args, "rollback", "db.t", str(first)])
    assert out == {"table": "db.t", "previous_snapshot_id": last, "current_snapshot_id": first}
    bad = _run([*args, "rollback", "db.t", str(last)])
    assert bad.exit_code == 1 and "not an ancestor" in bad.stderr
    assert _run([*args, "rollback", "db.t"]).exit_code == 2  # neither id nor --to-time

    table.refresh().create_branch("dev")
    table.create_branch("old")
    table.append(_rows(range(100, 102), "b"), branch="dev")
    out = _json([*args, "fast-forward", "db.t", "main", "dev"])
    assert out["branch"] == "main" and out["branch_previous_snapshot_id"] == first
    assert out["branch_snapshot_id"] == table.refresh().refs()["dev"].snapshot_id
    bad = _run([*args, "fast-forward", "db.t", "main", "old"])
    assert (
        bad.exit_code == 1 and "Cannot fast-forward: main is not an ancestor of old" in bad.stderr
    )

    table.append(_rows(range(200, 201), "c"), wap_id="w1")
    staged = next(s for s in table.snapshots() if (s.summary or {}).get("wap.id") == "w1")
    assert "cherry-picked snapshot" in _ok([*args, "cherrypick", "db.t", str(staged.snapshot_id)])
    current = table.refresh().current_snapshot()
    assert current is not None and current.snapshot_id == staged.snapshot_id  # fast-forward
    bad = _run([*args, "cherrypick", "db.t", "424242"])
    assert bad.exit_code == 1 and "424242" in bad.stderr
    assert table.scan().to_arrow().num_rows == 6
