"""Iceberg SQL (``ispark.sql``) on a Spark Connect session: the README's script, views, time
travel, ``CALL``, ``ALTER TABLE``, ``EXPLAIN`` and aggregates answered from metadata. The
DataFrames ``sql`` returns stay valid after the statement (no temporary view is left behind
for them to miss), and the tables are judged by icepark's reader on one machine."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from icepark import spark as ispark
from icepark.catalog import load_catalog
from icepark.spark.sql.extensions import parse_extension, run_extension

pytestmark = pytest.mark.spark

SCRIPT = """
CREATE TABLE db.events (id bigint NOT NULL, ts timestamp, cat string) USING iceberg
  PARTITIONED BY (days(ts), bucket(16, id));
INSERT INTO db.events SELECT * FROM staging;
MERGE INTO db.events t USING updates s ON t.id = s.id
  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *
  WHEN NOT MATCHED BY SOURCE AND t.id < 24 THEN DELETE
"""


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_readme_sql_on_connect(connect_spark: Any, tmp_path: Path) -> None:
    spark = connect_spark
    # a SQL catalog: it holds Iceberg views too
    catalog = load_catalog(
        "connect_sql", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh")
    )
    catalog.create_namespace("db")
    staging = spark.range(0, 48).selectExpr(
        "id", "timestamp_micros(1704067200000000 + id * 3600000000) AS ts", "'a' AS cat"
    )
    staging.createOrReplaceTempView("staging")
    spark.createDataFrame(
        [(40, dt.datetime(2024, 1, 2, 16), "b"), (100, dt.datetime(2024, 1, 5), "c")],
        "id long, ts timestamp, cat string",
    ).createOrReplaceTempView("updates")
    ispark.sql(spark, SCRIPT, catalog)
    table = catalog.load_table("db.events")
    ids = sorted(table.scan().to_arrow()["id"].to_pylist())
    # the first day's rows were matched by no update: deleted; ids 24-47 stay, 100 is new
    assert ids == [*range(24, 48), 100]
    assert len(table.spec().fields) == 2 and table.metadata.snapshots[-1].operation

    # the tag of the README's time travel, made by Iceberg's SQL extensions
    audit = table.metadata.current_snapshot_id
    ispark.sql(spark, "ALTER TABLE db.events CREATE TAG audit", catalog)
    ispark.sql(spark, "DELETE FROM db.events WHERE cat = 'c'", catalog)
    by_cat = ispark.sql(
        spark, "SELECT cat, count(*) FROM db.events FOR VERSION AS OF 'audit' GROUP BY cat", catalog
    )
    now = ispark.sql(spark, "SELECT cat, count(*) FROM db.events GROUP BY cat", catalog)
    # run after another statement: their tables (the files planned) travel in their plans
    ispark.sql(spark, "INSERT INTO db.events VALUES (200, TIMESTAMP '2024-01-03', 'd')", catalog)
    assert _rows(by_cat) == [("a", 23), ("b", 1), ("c", 1)]
    assert _rows(now) == [("a", 23), ("b", 1)]
    assert _rows(ispark.sql(spark, f"SELECT count(*) FROM db.events VERSION AS OF {audit}",
                            catalog)) == [(25,)]  # fmt: skip
    timed = ispark.sql(
        spark, "SELECT count(*) FROM db.events TIMESTAMP AS OF '2100-01-01 00:00:00'", catalog
    )
    assert _rows(timed) == [(25,)]

    plan = ispark.sql(
        spark, "EXPLAIN SELECT * FROM db.events WHERE ts >= '2024-01-02 12:00:00'", catalog
    ).first()[0]
    assert "== icepark scans ==" in plan and "files planned" in plan
    # aggregates from the files' metadata, and the same answer from a scan
    agg = "SELECT count(*), min(id), max(id) FROM db.events"
    assert _rows(ispark.sql(spark, agg, catalog)) == [(25, 24, 200)]
    spark.conf.set("spark.sql.iceberg.aggregate-push-down.enabled", "false")
    try:
        assert _rows(ispark.sql(spark, agg, catalog)) == [(25, 24, 200)]
    finally:
        spark.conf.unset("spark.sql.iceberg.aggregate-push-down.enabled")

    # views: an Iceberg view and a temporary one, each read after the statement made it
    ispark.sql(spark, "CREATE VIEW db.recent AS SELECT id, cat FROM db.events WHERE id >= 40",
               catalog)  # fmt: skip
    ispark.sql(spark, "CREATE TEMPORARY VIEW ev AS SELECT * FROM db.events WHERE cat = 'a'",
               catalog)  # fmt: skip
    assert ispark.sql(spark, "SELECT count(*) FROM db.recent", catalog).first()[0] == 9
    assert spark.sql("SELECT count(*) FROM ev").first()[0] == 23
    described = _rows(ispark.sql(spark, "DESCRIBE db.recent", catalog))
    assert described[0][0] == "cat"

    # CALL: Java's procedures, here a compaction and the snapshots' ancestry
    compacted = ispark.sql(
        spark,
        "CALL system.rewrite_data_files(table => 'db.events', options => map('rewrite-all', 'true'))",
        catalog,
    )
    assert compacted.first()[0] > 0  # rewritten_data_files_count
    ancestors = ispark.sql(spark, "CALL system.ancestors_of('db.events')", catalog)
    assert ancestors.count() == len(catalog.load_table("db.events").snapshots())
    statement = parse_extension("ALTER TABLE db.events SET TBLPROPERTIES ('team' = 'etl')")
    run_extension(spark, statement, catalog, catalog.name)
    assert catalog.load_table("db.events").properties["team"] == "etl"
    shown = _rows(ispark.sql(spark, "SHOW TABLES IN db", catalog))
    assert [r[1] for r in shown] == ["events"]
    assert sorted(ispark.sql(spark, "SELECT id FROM db.events", catalog).toPandas()["id"]) == [
        *range(24, 48), 200
    ]  # fmt: skip

    # DELETE and UPDATE with subqueries (scalar, correlated EXISTS) in their conditions, as
    # Iceberg's docs write them (test_sql_vs_java judges them against the reference engine)
    ispark.sql(spark, "CREATE TABLE db.gone (id bigint) USING iceberg", catalog)
    ispark.sql(spark, "INSERT INTO db.gone VALUES (24), (25), (200)", catalog)
    ispark.sql(
        spark,
        "DELETE FROM db.events AS e WHERE EXISTS (SELECT id FROM db.gone WHERE e.id = id)",
        catalog,
    )
    ispark.sql(
        spark,
        "UPDATE db.events SET cat = 'low' WHERE id < (SELECT min(id) + 5 FROM db.gone)",
        catalog,
    )
    left = _rows(ispark.sql(spark, "SELECT id, cat FROM db.events", catalog))
    assert left == [(i, "low" if i < 29 else "a" if i != 40 else "b") for i in range(26, 48)]


def test_iceberg_functions_on_connect(connect_spark: Any, tmp_path: Path) -> None:
    """``system.bucket`` and its kin over Connect: Spark's own functions (days, hours,
    truncate of strings) and icepark's Arrow ones registered in the Connect session (bucket,
    truncate of decimals), in SELECT, WHERE, GROUP BY and DELETE; the values are the spec's
    transforms' (``test_sql_vs_java`` judges the same functions by Java's)."""
    from decimal import Decimal

    from icepark.spark.sql.functions import iceberg_version
    from icepark.spec.transforms import parse_transform
    from icepark.spec.types import DecimalType, LongType, StringType, TimestamptzType

    spark = connect_spark
    catalog = load_catalog("connect_fn", type="filesystem", warehouse=str(tmp_path / "wh"))
    ispark.sql(
        spark,
        "CREATE NAMESPACE db; CREATE TABLE db.f (id bigint, s string, d decimal(9,2), "
        "ts timestamp) USING iceberg; INSERT INTO db.f SELECT id * 7919 - 400000, "
        "substring('iceberg-on-connect', 1 + id % 5, id % 9), CAST(id * 1.37 - 50 AS DECIMAL(9,2)), "
        "timestamp_micros(id * 987654321123 - 50000000000000) FROM range(0, 300)",
        catalog,
    )
    table = catalog.load_table("db.f").scan().to_arrow()
    rows = table.to_pylist()
    micros = dict(zip(table["id"].to_pylist(), table["ts"].cast("int64").to_pylist(), strict=True))

    def apply(name: str, source: Any, value: Any) -> Any:
        return parse_transform(name).apply(source, value)

    got = ispark.sql(
        spark,
        "SELECT id, system.bucket(16, id), system.bucket(16, s), system.bucket(16, d), "
        "system.truncate(3, s), system.truncate(10, d), system.days(ts), system.hours(ts), "
        "system.iceberg_version() FROM db.f",
        catalog,
    ).collect()
    epoch = dt.date(1970, 1, 1)
    want = {
        r["id"]: (
            apply("bucket[16]", LongType(), r["id"]),
            apply("bucket[16]", StringType(), r["s"]),
            apply("bucket[16]", DecimalType(9, 2), r["d"]),
            apply("truncate[3]", StringType(), r["s"]),
            apply("truncate[10]", DecimalType(9, 2), r["d"]),
            epoch + dt.timedelta(days=apply("day", TimestamptzType(), micros[r["id"]])),
            apply("hour", TimestamptzType(), micros[r["id"]]),
            iceberg_version(),
        )
        for r in rows
    }
    assert len(got) == 300 and {r[0]: tuple(r[1:]) for r in got} == want
    assert isinstance(got[0][5], Decimal)
    picked = ispark.sql(
        spark, "SELECT id FROM db.f WHERE system.bucket(16, id) = 3 ORDER BY id", catalog
    )
    assert [r[0] for r in picked.collect()] == sorted(i for i, w in want.items() if w[0] == 3)
    grouped = ispark.sql(
        spark, "SELECT system.bucket(4, s) AS b, count(*) FROM db.f GROUP BY 1", catalog
    )
    assert sum(r[1] for r in grouped.collect()) == 300
    ispark.sql(
        spark,
        "DELETE FROM db.f WHERE system.bucket(16, id) = 3; "
        "UPDATE db.f SET s = system.truncate(2, s) WHERE system.bucket(16, id) = 5",
        catalog,
    )
    left = {r["id"]: r["s"] for r in catalog.load_table("db.f").scan().to_arrow().to_pylist()}
    assert set(left) == {i for i, w in want.items() if w[0] != 3}
    strings = {r["id"]: r["s"] for r in rows}
    assert left == {
        i: apply("truncate[2]", StringType(), strings[i]) if want[i][0] == 5 else strings[i]
        for i in left
    }
