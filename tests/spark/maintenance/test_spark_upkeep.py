"""Upkeep on Spark: write-audit-publish through ``icepark.spark.write``, and orphan removal
with the listing and the comparison spread over Spark tasks (same answer as one machine)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from icepark import spark as ispark
from icepark.manifest import DataFile, FileContent, FileFormat
from icepark.table.maintenance.remove_orphan_files import PrefixMismatchError

DAY_MS = 86_400_000


def _age(root: Path, days: float) -> None:
    moment = time.time() - days * 86400
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (moment, moment))


def test_spark_write_stages_with_a_wap_id(spark: Any, catalog: Any) -> None:
    table = catalog.create_table("db.wap", _schema(), properties={"write.wap.enabled": "true"})
    ispark.write(spark.range(5).selectExpr("id"), table)
    current = table.current_snapshot().snapshot_id
    ispark.write(spark.range(5, 8).selectExpr("id"), table, wap_id="job-7")
    table.refresh()
    assert table.current_snapshot().snapshot_id == current
    assert ispark.read(spark, table).count() == 5
    staged = [s for s in table.snapshots() if (s.summary or {}).get("wap.id") == "job-7"]
    assert len(staged) == 1
    table.publish_changes("job-7")
    assert ispark.read(spark, table).count() == 8


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field("id", pa.int64())])


def test_spark_orphans_match_one_machine(spark: Any, catalog: Any) -> None:
    df = spark.range(600).selectExpr("id", "CAST(id % 14 AS STRING) AS part")
    table = ispark.create_table_from(spark, df, "db.many", partition_by=["part"], catalog=catalog)
    ispark.write(spark.range(600, 700).selectExpr("id", "CAST(id % 14 AS STRING) AS part"), table)
    root = Path(table.location)
    parts = sorted(p for p in (root / "data").rglob("*=*") if p.is_dir())
    assert len(parts) > 10  # the tasks list the partition folders, not the driver
    strays = [
        root / "stray.bin",
        root / "metadata" / "stray-m1.avro",
        parts[0] / "stray-1.parquet",
        parts[-1] / "deep" / "deeper" / "stray-2.parquet",
    ]
    hidden = [parts[1] / ".hidden.crc", root / "data" / "_temporary" / "t.parquet"]
    for path in strays + hidden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"stray")
    _age(root, 4)
    (parts[2] / "fresh.parquet").write_bytes(b"young")  # too recent: kept

    local = table.remove_orphan_files(dry_run=True)
    distributed = ispark.remove_orphan_files(spark, table, dry_run=True)
    assert list(distributed) == list(local) == sorted(str(p) for p in strays)
    assert all(p.exists() for p in strays)

    result = ispark.remove_orphan_files(spark, "db.many", catalog=catalog)
    assert sorted(result) == sorted(str(p) for p in strays) and result.failed == {}
    assert not any(p.exists() for p in strays)
    assert all(p.exists() for p in hidden) and (parts[2] / "fresh.parquet").exists()
    assert ispark.read(spark, table).count() == 700


def test_spark_orphans_prefix_mismatch(spark: Any, catalog: Any) -> None:
    table = catalog.create_table("db.mismatch", _schema())
    ispark.write(spark.range(3).selectExpr("id"), table)
    root = Path(table.location)
    # the metadata names a listed file with an authority the listing does not have
    listed = root / "data" / "elsewhere.parquet"
    listed.write_bytes(b"x")
    odd = DataFile(FileContent.DATA, f"file://host{listed}", FileFormat.PARQUET, (), 1, 1)
    with table.transaction() as tx:
        tx.append_files([odd])
    _age(root, 4)
    for remove in (
        lambda **kw: table.remove_orphan_files(**kw),
        lambda **kw: ispark.remove_orphan_files(spark, table, **kw),
    ):
        with pytest.raises(PrefixMismatchError, match=r"\(host, None\)"):
            remove(dry_run=True)
        assert list(remove(dry_run=True, prefix_mismatch_mode="ignore")) == []
        assert list(remove(dry_run=True, equal_authorities={"host": ""})) == []
        assert list(remove(dry_run=True, prefix_mismatch_mode="delete")) == [str(listed)]
