"""icepark.spark's reads, writes, row-level changes, data source and metadata tables on a
Spark Connect session: the README's Spark example, end to end, judged by icepark's reader on
one machine and by the reference engine (Java), which reads the tables written over Connect."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark import spark as ispark
from icepark.spark.runtime import is_connect

pytestmark = pytest.mark.spark

HOUR_US = 3_600_000_000
START_US = 1_704_067_200_000_000  # 2024-01-01 00:00 UTC


def _events(spark: Any, start: int, stop: int) -> Any:
    return spark.range(start, stop).selectExpr(
        "id",
        f"timestamp_micros({START_US} + id * {HOUR_US}) AS ts",
        "concat('n', CAST(id % 7 AS STRING)) AS name",
    )


def _ids(df: Any) -> list[int]:
    return sorted(r.id for r in df.select("id").collect())


def _one_machine(table: Any) -> list[tuple[Any, ...]]:
    rows = table.refresh().scan().to_arrow()
    return sorted(
        zip(rows["id"].to_pylist(), rows["name"].to_pylist(), strict=True), key=lambda r: r[0]
    )


def _spark_rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(((r.id, r.name) for r in df.select("id", "name").collect()), key=lambda r: r[0])


@pytest.mark.parametrize(
    ("mode", "version"),
    [("copy-on-write", 2), ("merge-on-read", 2), ("merge-on-read", 3)],
    ids=["cow", "mor-v2-position-deletes", "mor-v3-deletion-vectors"],
)
def test_readme_spark_example(
    connect_spark: Any, catalog: Any, catalog_options: dict[str, str], mode: str, version: int
) -> None:
    spark = connect_spark
    props = {
        "format-version": str(version),
        **{f"write.{op}.mode": mode for op in ("delete", "update", "merge")},
    }
    df = _events(spark, 0, 200)
    table = ispark.create_table_from(
        spark, df, "db.events", partition_by=["day(ts)"], sort_by=["id"], properties=props,
        catalog=catalog,
    )  # fmt: skip
    first = table.metadata.current_snapshot_id
    read = ispark.read(
        spark, "db.events", filter="ts >= '2024-01-02'", columns=["id", "ts"], catalog=catalog
    )
    assert read.columns == ["id", "ts"] and _ids(read) == list(range(24, 200))
    ispark.write(_events(spark, 200, 210), "db.events", mode="append", catalog=catalog)
    ispark.write(
        _events(spark, 0, 5), "db.events", mode="overwrite", filter="id < 10", catalog=catalog
    )  # the rows of ids 0-9 replaced by ids 0-4
    ispark.write(_events(spark, 200, 203), table.refresh(), mode="overwrite-partitions")  # 01-09
    expected = {*range(5), *range(10, 192), 200, 201, 202}
    assert _ids(ispark.read(spark, table)) == sorted(expected)

    ispark.register(spark)
    old = (
        spark.read.format("icepark")
        .options(**catalog_options)
        .option("table", "db.events")
        .option("snapshot-id", first)
        .load()
    )
    assert _ids(old) == list(range(200))

    ispark.delete(spark, "db.events", "ts < '2024-01-02'", catalog=catalog)  # ids below 24
    ispark.update(spark, "db.events", set={"name": "upper(name)"}, where="id = 50", catalog=catalog)
    late = spark.createDataFrame(
        [(30, dt.datetime(2024, 3, 1), "late", "U"), (31, dt.datetime(2024, 3, 1), "x", "D"),
         (500, dt.datetime(2024, 3, 2), "new", "I")],
        "id long, ts timestamp, name string, op string",
    )  # fmt: skip
    ispark.merge(
        spark, "db.events", late, on="id", catalog=catalog,
        when_matched_update="*", when_not_matched_insert="*", when_matched_delete="s.op = 'D'",
    )  # fmt: skip
    expected = ({*range(24, 192), 200, 201, 202} - {31}) | {500}
    got = _spark_rows(ispark.read(spark, table.refresh()))
    assert [r[0] for r in got] == sorted(expected)
    names = dict(got)
    assert names[50] == "N1" and names[30] == "late" and names[500] == "new"
    assert got == _one_machine(table)  # icepark's reader on one machine agrees

    # both read paths, with the metadata columns, give the same rows
    columns = ["id", "name", "_file", "_pos", "_spec_id"]
    native = ispark.read(spark, table, columns=columns, path="native")
    python = ispark.read(spark, table, columns=columns, path="python")
    assert sorted(map(tuple, native.collect())) == sorted(map(tuple, python.collect()))
    table.refresh()
    scan = table.scan()
    tasks = scan.plan_files()
    assert ispark.choose_path(scan, tasks, spark=spark)[0] == "native"
    assert any(t.delete_files for t in tasks) == (mode == "merge-on-read")
    assert ispark.read_scan(spark, scan).count() == len(expected)
    assert ispark.choose_write_path(table.metadata, spark=spark, io=table.io)[0] == "native"
    # metadata tables, by name and through the data source
    files = ispark.read(spark, "db.events.files", catalog=catalog)
    assert files.count() == len(table.inspect.files())
    snapshots = (
        spark.read.format("icepark").options(**catalog_options)
        .option("table", "db.events.snapshots").load()
    )  # fmt: skip
    assert snapshots.count() == len(table.snapshots())
    # the files and entries tables stream from the data source's task, on the server's side
    for name, paths in (
        ("files", table.inspect.files().column("file_path").to_pylist()),
        ("entries", [f["file_path"] for f in table.inspect.entries().column("data_file").to_pylist()]),
    ):
        df = (
            spark.read.format("icepark").options(**catalog_options)
            .option("table", f"db.events.{name}").load()
        )  # fmt: skip
        column = "file_path" if name == "files" else "data_file.file_path"
        assert sorted(r[0] for r in df.select(column).collect()) == sorted(paths), name


def test_equality_deletes_and_the_python_write_path(connect_spark: Any, catalog: Any) -> None:
    spark = connect_spark
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    table = catalog.create_table(
        "db.eq", schema, partition_by=["bucket(4, id)"], properties={"format-version": "2"}
    )
    assert ispark.choose_write_path(table.metadata, spark=spark, io=table.io)[0] == "python"
    ispark.write(spark.range(0, 50).selectExpr("id", "CAST(id AS STRING) AS name"), table)
    table.refresh().apply_changes(
        pa.table({"id": [3, 4], "name": ["3", "4"], "_op": ["D", "D"]}), on=["id"]
    )
    scan = table.scan()
    assert ispark.choose_path(scan, scan.plan_files(), spark=spark)[0] == "python"
    assert _ids(ispark.read(spark, table)) == [i for i in range(50) if i not in (3, 4)]
    ispark.delete(spark, table, "id >= 40")
    assert _ids(ispark.read(spark, table, filter="id > 30")) == list(range(31, 40))


def test_data_source_writes_and_sql_views(
    connect_spark: Any, catalog: Any, catalog_options: dict[str, str]
) -> None:
    spark = connect_spark
    table = catalog.create_table(
        "db.src", pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_by=["p"]
    )
    rows = spark.range(0, 20).selectExpr("id", "CAST(id % 2 AS STRING) AS p")
    ispark.register(spark)
    rows.write.format("icepark").options(**catalog_options, table="db.src").mode("append").save()
    (
        rows.where("p = '1'").selectExpr("id + 100 AS id", "p").write.format("icepark")
        .options(**catalog_options, table="db.src", **{"overwrite-mode": "dynamic"})
        .mode("overwrite").save()
    )  # fmt: skip
    assert sorted(r.id for r in ispark.read(spark, table.refresh()).collect()) == sorted(
        [*range(0, 20, 2), *range(101, 120, 2)]
    )
    views = ispark.register_tables(spark, "db", catalog)
    assert views == ["src"]
    spark.sql("INSERT INTO src VALUES (7, '9')")
    assert spark.sql("SELECT count(*) AS n FROM src WHERE p = '9'").first().n == 1
    assert ispark.resolve_table("db.src", catalog).metadata.current_snapshot_id is not None
    assert [f.name for f in ispark.to_spark_schema(table.schema()).fields] == ["id", "p"]
    ispark.prepare_session(spark)


@pytest.mark.interop
def test_java_reads_tables_written_over_connect_and_connect_reads_java(
    connect_spark: Any, refspark: Any, tmp_path: Path
) -> None:
    from icepark.catalog import FileSystemCatalog

    spark = connect_spark
    assert is_connect(spark)
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    df = spark.range(0, 300).selectExpr(
        "id",
        f"timestamp_micros({START_US} + id * {HOUR_US}) AS ts",
        "CAST(id * 1.5 AS DECIMAL(10, 2)) AS price",
        "named_struct('a', id, 'b', CAST(id AS STRING)) AS st",
    )
    native = ispark.create_table_from(spark, df, "db.n", partition_by=["day(ts)"], catalog=catalog)
    mor = {"format-version": "3", "write.delete.mode": "merge-on-read"}
    python = ispark.create_table_from(
        spark, df, "db.p", partition_by=["bucket(3, id)"], properties=mor, catalog=catalog
    )
    ispark.delete(spark, python, "id % 10 = 0")  # deletion vectors
    c = refspark.catalog_for(warehouse)
    projection = "SELECT id, unix_micros(ts), CAST(price AS STRING), st.b FROM {t}"

    def theirs(table: str) -> list[list[Any]]:
        return sorted(refspark.rows(projection.format(t=table)), key=repr)

    def ours(table: Any) -> list[list[Any]]:
        frame = ispark.read(spark, table)
        got = frame.selectExpr("id", "unix_micros(ts)", "CAST(price AS STRING)", "st.b").collect()
        return sorted((list(r) for r in got), key=repr)

    assert theirs(f"{c}.db.n") == ours(native) and len(ours(native)) == 300
    assert theirs(f"{c}.db.p") == ours(python) and len(ours(python)) == 270
    # and the other way: a table Java wrote, with Java's position deletes, read over Connect
    refspark.request(
        [
            f"CREATE TABLE {c}.db.j (id bigint, ts timestamp, price decimal(10,2),"
            " st struct<a: bigint, b: string>) USING iceberg PARTITIONED BY (days(ts))"
            " TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')",
            f"INSERT INTO {c}.db.j SELECT * FROM {c}.db.n",
            f"DELETE FROM {c}.db.j WHERE id % 7 = 0",
        ]
    )
    assert ours(catalog.load_table("db.j")) == theirs(f"{c}.db.j")
    assert len(theirs(f"{c}.db.j")) == 300 - 43


def test_planning_in_spark_tasks(connect_spark: Any, catalog: Any) -> None:
    """``read.data-planning-mode=distributed`` over Connect: the tasks of the driver's plan,
    and the same rows read."""
    import importlib

    planning = importlib.import_module("icepark.spark.read.planning")
    schema = pa.schema([("id", pa.int64()), ("part", pa.int32())])
    table = catalog.create_table(
        "db.planned",
        schema,
        partition_by=["part"],
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    for start in (0, 50, 100):
        ids = list(range(start, start + 50))
        table.append(pa.table({"id": ids, "part": [i % 3 for i in ids]}, schema=schema))
    table.delete("id in (1, 60)")
    table.set_properties({"read.data-planning-mode": "distributed"})
    scan = table.refresh().scan(filter="id >= 40 and part = 0")
    assert list(planning.plan_scan(connect_spark, scan)) == list(scan.plan_files())
    df = ispark.read(connect_spark, table, filter="id < 70")
    assert _ids(df) == [i for i in range(70) if i not in (1, 60)]


def test_planning_settings_in_one_round_trip(
    connect_spark: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planning modes and ``spark.task.cpus`` are read from one answer of the server
    (each ``conf.get`` is a round trip on Connect), and the session's settings still win
    over the table's properties."""
    from icepark.spark.read import planning

    schema = pa.schema([("id", pa.int64())])
    table = catalog.create_table(
        "db.settings", schema, properties={"read.data-planning-mode": "distributed"}
    )
    table.append(pa.table({"id": [1, 2, 3]}, schema=schema))
    scan = table.refresh().scan()
    client = connect_spark.client
    asked: list[Any] = []
    real = client.config

    def counted(operation: Any) -> Any:
        asked.append(operation)
        return real(operation)

    monkeypatch.setattr(client, "config", counted)
    first = planning.remote_planning(connect_spark, scan)
    assert first is not None and first.data_mode == "distributed"  # the table's mode
    assert len(asked) == 1
    connect_spark.conf.set(planning.DATA_PLANNING_MODE_CONF, "local")
    try:
        asked.clear()
        second = planning.remote_planning(connect_spark, scan)
        assert second is None or second.data_mode == "local"  # the session's mode
        assert len(asked) == 1
    finally:
        connect_spark.conf.unset(planning.DATA_PLANNING_MODE_CONF)
    # the settings read together agree with asking each (set when the server started, set
    # on the session, not set), and asking for none asks the server nothing
    from icepark.spark.runtime import session_settings

    keys = ["spark.master", "spark.sql.session.timeZone", "spark.icepark.test.never-set"]
    asked.clear()
    assert session_settings(connect_spark, keys) == {
        key: connect_spark.conf.get(key, None) for key in keys
    }
    assert len(asked) == 1 + len(keys)
    asked.clear()
    assert session_settings(connect_spark, []) == {}
    assert asked == []
