"""icepark on Spark and the Java reference engine read each other's tables as the same rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from refengine import RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.spark import read, write
from icepark.spark.types import spark_schema_to_arrow

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SOURCE = """
    SELECT id, concat('name-', CAST(id % 5 AS STRING)) AS name,
           timestamp_micros(1704067200000000 + id * 7200000000) AS ts,
           CAST(id AS DOUBLE) / 3 AS amount,
           CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id % 13 AS INT) END AS qty,
           CAST(id * 1.5 AS DECIMAL(10, 2)) AS price,
           named_struct('a', id, 'b', CAST(id AS STRING)) AS st
    FROM range(0, 200)
"""
# the same projection on both engines: instants as micros, values as strings, nested as JSON
PROJECTION = (
    "SELECT id, name, unix_micros(ts) AS ts, CAST(amount AS STRING) AS amount, qty,"
    " CAST(price AS STRING) AS price, to_json(st) AS st FROM {t}"
)


def _ours(spark: Any, df: Any, sql: str) -> list[list[Any]]:
    df.createOrReplaceTempView("icepark_interop")
    return sorted([list(r) for r in spark.sql(sql.format(t="icepark_interop")).collect()], key=repr)


def _theirs(refspark: RefEngine, sql: str, table: str) -> list[list[Any]]:
    return sorted(refspark.rows(sql.format(t=table)), key=repr)


def test_reference_reads_spark_written_tables(
    spark: Any, refspark: RefEngine, tmp_path: Path
) -> None:
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    df = spark.sql(SOURCE)
    schema = spark_schema_to_arrow(df.schema)
    native = catalog.create_table(
        "db.n", schema, partition_by=["day(ts)", "truncate(3, name)"], sort_by=["id"]
    )
    python = catalog.create_table("db.p", schema, partition_by=["bucket(3, id)", "month(ts)"])
    write(df, native)
    write(df, python)
    c = refspark.catalog_for(warehouse)
    expected = _ours(spark, df, PROJECTION)
    for name in ("n", "p"):
        assert _theirs(refspark, PROJECTION, f"{c}.db.{name}") == expected, name
        # the reference prunes with our partitions and metrics: the same rows
        for where in (
            "id = 17",
            "unix_micros(ts) >= 1704844800000000",
            "name = 'name-3'",
            "qty IS NULL",
            "price > 100",
        ):
            sql = f"SELECT id FROM {{t}} WHERE {where}"
            assert _theirs(refspark, sql, f"{c}.db.{name}") == _ours(spark, df, sql), (name, where)


def test_spark_reads_reference_tables(spark: Any, refspark: RefEngine, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {c}.db.r (id bigint, name string, qty int, price decimal(9,2),"
            " ts timestamp, st struct<a:int,b:string>, tags array<string>, m map<string,int>)"
            " USING iceberg PARTITIONED BY (days(ts), bucket(4, id))"
            " TBLPROPERTIES ('format-version'='2')",
            f"INSERT INTO {c}.db.r SELECT id, concat('n', CAST(id % 3 AS STRING)), CAST(id AS INT),"
            " CAST(id / 4 AS DECIMAL(9,2)),"
            " TIMESTAMP '2024-03-01 00:00:00' + make_interval(0,0,0,0,id,0,0),"
            " named_struct('a', CAST(id AS INT), 'b', 'x'), array(CAST(id AS STRING), 'y'),"
            " map('k', CAST(id AS INT)) FROM range(0, 60)",
            f"ALTER TABLE {c}.db.r RENAME COLUMN name TO label",
            f"ALTER TABLE {c}.db.r ALTER COLUMN qty TYPE bigint",
            f"ALTER TABLE {c}.db.r ALTER COLUMN price TYPE decimal(12,2)",
            f"ALTER TABLE {c}.db.r ADD COLUMN note string",
            f"INSERT INTO {c}.db.r VALUES (100, 'new', 5000000000, 1.5,"
            " TIMESTAMP '2024-03-05 00:00:00',"
            " named_struct('a', 1, 'b', 'z'), array(), map(), 'hello')",
        ]
    )
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.r")
    sql = (
        "SELECT id, label, qty, CAST(price AS STRING) AS price, unix_micros(ts) AS ts,"
        " to_json(st) AS st, to_json(tags) AS tags, to_json(m) AS m, note FROM {t}"
    )
    theirs = _theirs(refspark, sql, f"{c}.db.r")
    assert len(theirs) == 61
    for path in ("native", "python"):
        assert _ours(spark, read(spark, table, path=path), sql) == theirs, path
    where = "qty > 40 AND label = 'n1'"
    filtered = read(spark, table, filter="qty > 40 and label = 'n1'", columns=["id"])
    assert sorted(r.id for r in filtered.collect()) == sorted(
        r[0] for r in refspark.rows(f"SELECT id FROM {c}.db.r WHERE {where}")
    )
