"""The ``icepark`` Python data source: DataFrameReader/Writer and SQL views."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])


def _data(start: int, end: int) -> pa.Table:
    ids = list(range(start, end))
    return pa.table(
        {"id": ids, "name": [f"n{i % 4}" for i in ids], "score": [i / 2 for i in ids]},
        schema=SCHEMA,
    )


def _rows(df: Any) -> list[Any]:
    return sorted(tuple(r) for r in df.collect())


def test_read_write_and_sql(spark: Any, catalog: Any, catalog_options: dict[str, str]) -> None:
    from icepark.spark import register_tables

    table = catalog.create_table("db.s", SCHEMA, partition_by=["name"])
    table.append(_data(0, 20))
    first = table.current_snapshot().snapshot_id

    def reader(**extra: str) -> Any:  # DataFrameReader.option() changes the reader itself
        return spark.read.format("icepark").options(**catalog_options, table="db.s", **extra)

    assert reader(filter="id < 3").load().count() == 3
    df = reader().load()
    assert _rows(df) == sorted(tuple(r.values()) for r in _data(0, 20).to_pylist())
    # one DataFrame queried with different filters (Spark keeps readers between queries)
    assert _rows(df.filter("id >= 5 AND name = 'n1' AND score < 8.0")) == [
        (5, "n1", 2.5),
        (9, "n1", 4.5),
        (13, "n1", 6.5),
    ]
    assert df.filter("name IS NULL OR id IN (1, 2)").count() == 2
    pushed = reader(pushdown="true").load()
    assert pushed.filter("id >= 5 AND name = 'n1' AND score < 8.0").count() == 3

    writer = spark.createDataFrame(_data(20, 30).to_pylist(), "id long, name string, score double")
    writer.write.format("icepark").options(**catalog_options).option("table", "db.s").mode(
        "append"
    ).save()
    assert reader().load().count() == 30
    assert reader(**{"snapshot-id": str(first)}).load().count() == 20

    dynamic = spark.createDataFrame([(100, "n1", 0.0)], "id long, name string, score double")
    (
        dynamic.write.format("icepark")
        .options(**catalog_options)
        .option("table", "db.s")
        .option("overwrite-mode", "dynamic")
        .mode("overwrite")
        .save()
    )
    assert reader().load().filter("name = 'n1'").count() == 1
    assert reader().load().count() == 30 - 8 + 1

    assert register_tables(spark, "db", catalog_options) == ["s"]
    assert spark.sql("SELECT count(*) AS n FROM s").collect()[0].n == 23
    spark.sql("INSERT INTO s VALUES (200, 'n9', 1.0), (201, 'n9', 2.0)")
    assert spark.sql("SELECT count(*) AS n FROM s").collect()[0].n == 25
    assert spark.sql("SELECT count(*) AS n FROM s WHERE name = 'n9'").collect()[0].n == 2
    assert spark.sql("SELECT max(id) AS m FROM s WHERE id > 0").collect()[0].m == 201

    (
        writer.write.format("icepark")
        .options(**catalog_options)
        .option("table", "db.s")
        .mode("overwrite")
        .save()
    )
    assert _rows(reader().load()) == sorted(tuple(r.values()) for r in _data(20, 30).to_pylist())
    table.refresh()
    ops = [s.summary.operation.value for s in table.snapshots()]
    assert ops == ["append", "append", "overwrite", "append", "overwrite"]
