"""Spark, upkeep, compaction and streaming on a REST catalog, exactly as on the SQL catalog:
icepark's server (OAuth2, one principal with write) over a SQL catalog, icepark's RestCatalog
client in the job. Every commit goes through the server; the rows are checked through the
backing catalog, which the server does not know is being read."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icepark
from icepark.catalog import Catalog, SqlCatalog
from tests.rest.conftest import serving

pytestmark = pytest.mark.spark
pytest.importorskip("fastapi")

SECRET = "s3cr3t-for-spark"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Catalog]]:
    from icepark.rest import Principals, create_app, hash_secret

    backing = SqlCatalog(
        "backing", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh")
    )
    backing.create_namespace("db")
    principals = Principals.from_dict(
        {
            "principals": [
                {"client-id": "etl", "client-secret": hash_secret(SECRET), "grants": {"*": "write"}}
            ]
        }
    )
    with serving(create_app(backing, auth=principals)) as url:
        yield url, backing


def _rows(df: Any) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def _backing_rows(backing: Catalog, name: str) -> list[tuple]:
    data = backing.load_table(name).scan().to_arrow().to_pylist()
    return sorted(tuple(r.values()) for r in data)


def test_reads_writes_row_level_upkeep_and_compaction_over_rest(
    spark: Any, served: tuple[str, Catalog], tmp_path: Path
) -> None:
    from icepark import spark as ispark

    url, backing = served
    rc = icepark.load_catalog("rc", type="rest", uri=url, credential=f"etl:{SECRET}")
    table = rc.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("name", pa.string())]), partition_by=["name"]
    )
    for start in range(0, 40, 10):  # small files for compaction to merge
        df = spark.createDataFrame(
            [(i, f"n{i % 2}") for i in range(start, start + 10)], "id long, name string"
        )
        ispark.write(df, "db.t", catalog=rc)
    assert _rows(ispark.read(spark, "db.t", catalog=rc)) == [(i, f"n{i % 2}") for i in range(40)]
    assert ispark.read(spark, "db.t", catalog=rc, filter="id < 5").count() == 5

    ispark.delete(spark, "db.t", "id >= 30", catalog=rc)
    expected = [(i, f"n{i % 2}") for i in range(30)]
    assert _backing_rows(backing, "db.t") == expected

    before = len(table.refresh().metadata.snapshots)
    result = ispark.rewrite_data_files(spark, "db.t", options={"min-input-files": "2"}, catalog=rc)
    assert result.rewritten_data_files_count > result.added_data_files_count > 0
    assert _backing_rows(backing, "db.t") == expected
    assert len(backing.load_table("db.t").metadata.snapshots) == before + 1

    # upkeep: expiry through the REST commit, orphan removal listing on Spark
    table = rc.load_table("db.t")
    table.expire_snapshots(older_than=int(time.time() * 1000) + 1, retain_last=1)
    assert len(backing.load_table("db.t").metadata.snapshots) == 1
    orphan = (
        Path(backing.load_table("db.t").location.removeprefix("file:")) / "data" / "stray.parquet"
    )
    orphan.write_bytes(b"not referenced")
    old = time.time() - 10 * 86400
    os.utime(orphan, (old, old))
    removed = ispark.remove_orphan_files(
        spark, "db.t", older_than=int((time.time() - 2 * 86400) * 1000), catalog=rc
    )
    assert [p for p in removed if p.endswith("stray.parquet")] and not orphan.exists()
    assert _backing_rows(backing, "db.t") == expected


def test_data_source_and_streaming_over_rest_keep_the_secret_out_of_plans(
    spark: Any, served: tuple[str, Catalog], tmp_path: Path
) -> None:
    from icepark import spark as ispark
    from icepark.spark.datasource import catalog_options

    url, backing = served
    rc = icepark.load_catalog("rc", type="rest", uri=url, credential=f"etl:{SECRET}")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    source = rc.create_table("db.src", schema)
    rc.create_table("db.sink", schema)
    source.append(pa.table({"id": list(range(10)), "name": ["a"] * 10}, schema=schema))
    source.append(pa.table({"id": list(range(10, 15)), "name": ["b"] * 5}, schema=schema))

    df = spark.read.format("icepark").options(**catalog_options(rc), table="db.src").load()
    assert df.count() == 15
    plan = (
        df._jdf.queryExecution().toString() + "\n" + df._jdf.queryExecution().analyzed().toString()
    )
    assert SECRET not in plan

    stream = ispark.read_stream(spark, "db.src", catalog=rc)
    query = ispark.write_stream(
        stream,
        "db.sink",
        catalog=rc,
        checkpoint_location=str(tmp_path / "chk"),
        trigger={"availableNow": True},
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert _backing_rows(backing, "db.sink") == _backing_rows(backing, "db.src")
    assert len(backing.load_table("db.sink").metadata.snapshots) >= 1
    assert SECRET not in str(query.lastProgress or "")
    # nothing Spark keeps of the query (offsets, commits, metadata) holds the secret
    kept = [f for f in (tmp_path / "chk").rglob("*") if f.is_file()]
    assert kept and not [f for f in kept if SECRET.encode() in f.read_bytes()]
