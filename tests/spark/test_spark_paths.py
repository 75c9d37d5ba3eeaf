"""Handing many files to Spark's Parquet reader at once (one JVM round trip, not one per path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.spark.paths import parquet_files, to_spark_location


def _files(folder: Path, count: int) -> list[str]:
    folder.mkdir()
    out = []
    for i in range(count):
        path = folder / f"part {i}%20x.parquet"  # a blank and an escape-like sequence kept
        pq.write_table(pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), path)
        out.append(to_spark_location(str(path)))
    return out


def test_many_paths_read_every_file_once(spark: Any, tmp_path: Path) -> None:
    paths = _files(tmp_path / "many", 40)
    df = parquet_files(spark.read.schema("id bigint"), spark, paths)
    ids = sorted(r[0] for r in df.collect())
    assert ids == list(range(400))
    assert sorted(df.inputFiles()) == sorted(spark.read.parquet(*paths).inputFiles())
    assert len(df.inputFiles()) == 40


def test_few_paths_and_odd_names_take_pysparks_way(spark: Any, tmp_path: Path) -> None:
    paths = _files(tmp_path / "few", 3)
    assert parquet_files(spark.read, spark, paths).count() == 30
    odd = tmp_path / "odd"
    odd.mkdir()
    named = odd / "line\nbreak.parquet"
    pq.write_table(pa.table({"id": pa.array([7], pa.int64())}), named)
    more = [*_files(tmp_path / "more", 10), to_spark_location(str(named))]
    assert parquet_files(spark.read, spark, more).count() == 101
