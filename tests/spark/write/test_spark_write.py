"""icepark.spark.write: native and python write paths, commit modes, cleanup on failure."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest

from icepark.spark import choose_write_path, create_table_from, read, write
from icepark.spark.types import spark_schema_to_arrow
from icepark.spark.write.writer import fanout_enabled

pytestmark = pytest.mark.spark

SOURCE = """
    SELECT id,
           concat('name-', CAST(id % 5 AS STRING)) AS name,
           timestamp_micros(1704067200000000 + id * 7200000000) AS ts,
           CAST(id AS DOUBLE) / 3 AS amount,
           CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id % 13 AS INT) END AS qty,
           CAST(id * 1.5 AS DECIMAL(10, 2)) AS price,
           named_struct('a', id, 'b', CAST(id AS STRING)) AS st
    FROM range({start}, {end})
"""


def _source(spark: Any, start: int = 0, end: int = 300) -> Any:
    return spark.sql(SOURCE.format(start=start, end=end))


def _rows(df: Any) -> list[Any]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _check_partitions(table: Any) -> None:
    """Every row of every file belongs to the file's partition."""
    spec = table.spec()
    schema = table.schema()
    for task in table.scan().plan_files():
        rows = [r for b in table.scan().read_task(task) for r in b.to_pylist()]
        for i, pf in enumerate(spec.fields):
            source = schema.find_field(pf.source_id)
            fn = pf.transform.bind(source.field_type)
            for r in rows:
                value = r[source.name]
                internal = _internal(value)
                assert fn(internal) == task.file.partition[i], (task.file.file_path, pf, value)


def _executed_plans(spark: Any) -> dict[int, str]:
    """The physical plans of the session's SQL executions so far, by id (the test's window
    into Spark's status store, through the classic session's JVM)."""
    found = spark._jsparkSession.sharedState().statusStore().executionsList().iterator()
    plans = {}
    while found.hasNext():
        e = found.next()
        plans[e.executionId()] = e.physicalPlanDescription()
    return plans


def _internal(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return delta // dt.timedelta(microseconds=1)
    return value


@pytest.mark.parametrize(
    ("partition_by", "expected_path"),
    [
        (["day(ts)", "name"], "native"),
        (["hour(ts)", "truncate(7, id)", "truncate(3, name)"], "native"),
    ],
)
def test_write_partitioned_reads_back(
    spark: Any, catalog: Any, partition_by: list[str], expected_path: str
) -> None:
    df = _source(spark)
    schema = spark_schema_to_arrow(df.schema)
    table = catalog.create_table("db.w", schema, partition_by=partition_by, sort_by=["id"])
    assert choose_write_path(table.metadata)[0] == expected_path
    write(df, table)
    assert len(table.snapshots()) == 1
    assert _rows(read(spark, table)) == _rows(df)
    _check_partitions(table)
    files = [t.file for t in table.scan().plan_files()]
    assert sum(f.record_count for f in files) == 300
    assert all(f.lower_bounds and f.value_counts and f.split_offsets for f in files)
    # the metrics prune: a point query plans few files
    assert 1 <= len(table.scan(filter="id = 17").plan_files()) < len(files) / 4


@pytest.mark.parametrize(
    ("session", "path", "fanout"),
    [
        *[("classic", p, f) for p in ("native", "python") for f in (None, "true", "false")],
        *[("connect", p, f) for p in ("native", "python") for f in (None, "false")],
    ],
)
def test_unsorted_partitioned_write_keeps_a_file_per_partition(
    request: pytest.FixtureRequest,
    _classic_spark: Any,
    catalog: Any,
    session: str,
    path: str,
    fanout: str | None,
) -> None:
    """One task whose rows switch partition at every row: with fanout (by default on an
    unsorted table, as Java's writes) a file per partition stays open and Spark sorts
    nothing (its executed plans have no Sort), without it the rows are sorted by partition
    first; either way one file per partition, not one per switch. On a classic session and
    on a Spark Connect one (its server runs in the same application, so the classic
    session's status store sees its plans too)."""
    spark = request.getfixturevalue("spark" if session == "classic" else "connect_spark")
    df = _source(spark, 0, 600).repartition(1)
    props = {} if fanout is None else {"write.spark.fanout.enabled": fanout}
    table = catalog.create_table(
        "db.fan", spark_schema_to_arrow(df.schema), partition_by=["name"], properties=props
    )
    assert fanout_enabled(table.metadata) == (fanout != "false")
    before = _executed_plans(_classic_spark)
    write(df, table, path=path)
    plans = [p for i, p in _executed_plans(_classic_spark).items() if i not in before]
    sorted_rows = any(re.search(r"\bSort \(\d+\)", p) for p in plans)
    assert plans and sorted_rows == (fanout == "false")
    files = [t.file for t in table.scan().plan_files()]
    assert sorted(f.partition[0] for f in files) == [f"name-{i}" for i in range(5)]
    assert sum(f.record_count for f in files) == 600
    assert _rows(read(spark, table)) == _rows(df)
    _check_partitions(table)


def test_modes_and_python_path(spark: Any, catalog: Any) -> None:
    df = _source(spark)
    table = catalog.create_table(
        "db.m", spark_schema_to_arrow(df.schema), partition_by=["name", "bucket(4, id)"]
    )
    assert choose_write_path(table.metadata)[0] == "python"
    write(df, table)
    _check_partitions(table)
    assert _rows(read(spark, table)) == _rows(df)
    # overwrite the rows of one partition (and fewer of them)
    write(
        _source(spark, 0, 10).filter("name = 'name-0'"),
        table,
        mode="overwrite",
        filter="name = 'name-0'",
    )
    assert read(spark, table, filter="name = 'name-0'").count() == 2
    assert read(spark, table).count() == 300 - 60 + 2
    # dynamic overwrite: the (name, bucket) partitions of the new rows are replaced
    before = read(spark, table).collect()
    new = _source(spark, 1000, 1010).filter("name in ('name-1', 'name-2')")
    write(new, table, mode="overwrite-partitions")
    bucket = table.spec().fields[1].transform.bind(table.schema().find_field("id").field_type)
    touched = {(r.name, bucket(r.id)) for r in new.collect()}
    kept = [tuple(r) for r in before if (r.name, bucket(r.id)) not in touched]
    assert _rows(read(spark, table)) == sorted(kept + [tuple(r) for r in new.collect()], key=repr)
    write(_source(spark, 0, 5), table, mode="overwrite")
    assert read(spark, table).count() == 5
    ops = [s.summary.operation.value for s in table.snapshots()]
    assert ops == ["append", "overwrite", "overwrite", "overwrite"]


def _failing(spark: Any) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    @F.udf(LongType())
    def boom(x):  # no type hints: with them Spark would guess another eval type
        if x == 250:
            raise ValueError("boom")
        return x

    return _source(spark).withColumn("id", boom("id"))


@pytest.mark.parametrize("path", ["native", "python"])
def test_failed_job_commits_nothing_and_cleans_up(spark: Any, catalog: Any, path: str) -> None:
    df = _source(spark)
    table = catalog.create_table("db.f", spark_schema_to_arrow(df.schema), partition_by=["name"])
    with pytest.raises(Exception, match="boom"):
        write(_failing(spark), table, path=path)
    table.refresh()
    assert table.current_snapshot() is None
    assert [
        e for e in table.io.list_prefix(f"{table.location}/data") if e.location.endswith(".parquet")
    ] == []


def test_create_table_from(spark: Any, catalog: Any) -> None:
    df = _source(spark)
    table = create_table_from(
        spark, df, "db.ctas", partition_by=["day(ts)"], sort_by=["id"], catalog=catalog
    )
    assert [f.name for f in table.schema().fields] == df.columns
    assert _rows(read(spark, "db.ctas", catalog=catalog)) == _rows(df)
    assert table.sort_order().order_id == 1
