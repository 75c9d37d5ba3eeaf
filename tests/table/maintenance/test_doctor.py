"""``diagnose`` / ``icepark doctor``: each finding appears when its cause is there, with its
fix, and not otherwise; the numbers are the table's own."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from icepark.catalog import load_catalog
from icepark.cli.main import cli
from icepark.table.maintenance.doctor import diagnose

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string())])


def _rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "g": [f"g{i % 4}" for i in ids]}, schema=SCHEMA)


def test_healthy_table_has_nothing_to_fix(tmp_path: Path) -> None:
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(range(100)))
    report = diagnose(table)
    assert report.healthy and [f.level for f in report.findings] == ["ok"]
    assert report.data_files["count"] == 1 and report.data_files["records"] == 100
    assert report.snapshots["count"] == 1 and report.orphans == {
        "count": 0,
        "bytes": 0,
        "sample": [],
    }


def test_findings_point_at_their_fixes(tmp_path: Path) -> None:
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["g"],
        properties={
            "write.delete.mode": "merge-on-read",
            "history.expire.max-snapshot-age-ms": "1",
        },
    )
    for start in range(0, 1000, 100):  # 10 appends x 4 partitions: 40 small files
        table.append(_rows(range(start, start + 100)))
    table.delete("id < 150")  # drops the first file, position deletes on the second
    stray = Path(table.location) / "data" / "stray.parquet"
    stray.write_bytes(b"not referenced")
    old = time.time() - 5 * 86400
    os.utime(stray, (old, old))
    time.sleep(0.01)
    report = diagnose(table)
    areas = {f.area: f for f in report.findings}
    assert areas["snapshots"].fix == "icepark expire db.t"
    assert report.snapshots["expirable_by_retention"] == report.snapshots["count"] - 1
    assert areas["data files"].fix == "icepark compact db.t"
    assert report.data_files["small"] == report.data_files["count"] == 36  # 4 dropped
    assert areas["delete files"].fix == "icepark compact db.t"
    hidden = report.delete_files["rows_hidden_by_position_deletes"]
    assert report.delete_files["position"] > 0 and hidden == 50  # ids 100..149 (0..99 dropped)
    assert areas["orphans"].fix == "icepark remove-orphans db.t"
    assert report.orphans is not None and report.orphans["count"] == 1
    assert stray.exists()  # a diagnosis deletes nothing
    runner = CliRunner()
    args = ["--uri", f"sqlite:///{tmp_path}/c.db", "--warehouse", str(tmp_path / "wh")]
    out = runner.invoke(cli, [*args, "doctor", "db.t", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["data_files"]["count"] == 36 and len(doc["findings"]) == 4
    text = runner.invoke(cli, [*args, "doctor", "db.t", "--no-orphans"])
    assert text.exit_code == 0 and "icepark compact db.t" in text.stdout
    assert "orphan" not in text.stdout


def test_size_buckets_and_small_files_count_every_live_data_file(tmp_path: Path) -> None:
    """Entries of every size bucket (metadata only: the doctor reads no data file), a file
    removed later (not live) and a table target that makes some files small."""
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", SCHEMA, properties={"write.target-file-size-bytes": str(64 * 1024 * 1024)}
    )
    table.append(_rows(range(10)))
    base = next(t.file for t in table.scan().plan_files())
    mb = 1024 * 1024
    sizes = [
        1000,
        mb - 1,
        mb,
        16 * mb - 1,
        16 * mb,
        47 * mb,
        48 * mb,
        200 * mb,
        512 * mb,
        3000 * mb,
    ]
    copies = [
        base.replace(file_path=f"{base.file_path}-{i}", file_size_in_bytes=size, record_count=i + 1)
        for i, size in enumerate(sizes)
    ]
    table.delete("id >= 0")  # removes the one real file: its entry is no longer live
    with table.transaction() as tx:
        tx.append_files(copies)
    report = diagnose(table, orphans=False)
    assert report.data_files["by_size"] == {
        "< 1 MB": 2,
        "1-16 MB": 2,
        "16-128 MB": 3,
        "128-512 MB": 1,
        ">= 512 MB": 2,
    }
    assert report.data_files["count"] == len(sizes)
    assert report.data_files["bytes"] == sum(sizes)
    assert report.data_files["records"] == sum(range(1, len(sizes) + 1))
    assert report.data_files["small"] == 6  # under 48 MB, 75% of the table's 64 MB target


def test_recent_orphans_after_a_crash(tmp_path: Path) -> None:
    """What a crashed write left a minute ago is no orphan by the 3-day rule; with
    ``--orphans-older-than`` the doctor counts it and its fix deletes exactly it."""
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA, partition_by=["g"])
    table.append(_rows(range(100)))
    left = Path(table.location) / "data" / "left-by-a-crash.parquet"
    left.write_bytes(b"written, never committed")
    partial = Path(table.location) / "metadata" / f".00002-x.metadata.json.{'0f' * 16}.tmp"
    partial.write_bytes(b'{"format-version"')
    time.sleep(0.05)
    assert diagnose(table).orphans == {"count": 0, "bytes": 0, "sample": []}
    runner = CliRunner()
    args = ["--uri", f"sqlite:///{tmp_path}/c.db", "--warehouse", str(tmp_path / "wh")]
    out = runner.invoke(cli, [*args, "doctor", "db.t", "--json", "--orphans-older-than", "0s"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["orphans"]["count"] == 2
    (fix,) = [f["fix"] for f in doc["findings"] if f["area"] == "orphans"]
    assert fix.startswith("icepark remove-orphans db.t --older-than ") and "--allow-recent" in fix
    done = runner.invoke(cli, [*args, *fix.split()[1:]])
    assert done.exit_code == 0, done.output
    assert not left.exists() and not partial.exists()
    assert table.refresh().scan().to_arrow().num_rows == 100


def test_without_listing_nothing_in_storage_is_listed(tmp_path: Path) -> None:
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(range(100)))
    table.append(_rows(range(100, 150)))
    full = diagnose(table)
    listed: list[str] = []
    real = table.io.list_prefix

    def counting(prefix: str):  # type: ignore[no-untyped-def]
        listed.append(prefix)
        return real(prefix)

    table.io.list_prefix = counting  # type: ignore[method-assign]
    quick = diagnose(table, listing=False)
    assert listed == []
    assert quick.metadata_files["in_folder"] is None and quick.orphans is None
    assert quick.metadata_files["in_log"] == full.metadata_files["in_log"]
    assert quick.data_files == full.data_files and quick.snapshots["count"] == 2
    diagnose(table, orphans=False)  # the metadata folder is still listed
    assert len(listed) == 1


@pytest.mark.parametrize("version", [2, 3])
def test_huge_table_path_reports_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """A huge table's files are read a few manifests at a time into arrays: the report is
    the one the columnar read gives (data files, position deletes or deletion vectors)."""
    import icepark.planning.walk as walk
    from icepark.avro.compiled import kernel_available

    if not kernel_available():
        pytest.skip("numba is not importable")
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["g"],
        properties={"write.delete.mode": "merge-on-read", "format-version": str(version)},
    )
    for start in range(0, 600, 100):
        table.append(_rows(range(start, start + 100)))
    table.delete("id < 150 or id = 333")
    now = int(time.time() * 1000)
    expected = diagnose(table, orphans=False, now_ms=now).to_dict()
    kinds = expected["delete_files"]
    assert kinds["deletion_vector" if version == 3 else "position"] > 0
    monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
    assert diagnose(table, orphans=False, now_ms=now).to_dict() == expected
