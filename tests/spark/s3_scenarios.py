"""Spark operations on a table, run the same way on the shared ``local[2]`` session and on the
``local-cluster`` session of ``cluster_runner.py`` (executors in JVMs of their own).

Each scenario takes a Spark session and catalog properties (a SQL catalog whose warehouse may
be on S3, with the ``s3.*`` properties), does its operations through :mod:`icepark.spark` and
returns JSON-able results: the rows Spark read, as ``[id, name, ts (epoch us), amount
(text)]`` lists, and what each step decided. The tests judge them against the one-machine
read of the same table and PyIceberg's. No lambdas or UDFs here: the cluster's executors do
not import this module.
"""

from __future__ import annotations

import time
from typing import Any

from icepark import spark as ispark
from icepark.catalog import load_catalog

__all__ = ["SCENARIOS", "ROW_COLUMNS", "spark_rows"]

CATALOG_NAME = "lake"
ROW_COLUMNS = ["id", "name", "ts", "amount"]
SOURCE = """
    SELECT id,
           concat('n', CAST(id % 3 AS STRING)) AS name,
           timestamp_micros(1704067200000000 + id * 300000000) AS ts,
           CAST(id * 1.25 AS DECIMAL(10, 2)) AS amount
    FROM range({start}, {end})
"""


def _catalog(props: dict[str, str]) -> Any:
    return load_catalog(CATALOG_NAME, properties=props)


def _source(spark: Any, start: int, end: int) -> Any:
    return spark.sql(SOURCE.format(start=start, end=end))


def spark_rows(df: Any) -> list[list[Any]]:
    """Rows as sorted JSON-able lists (time as epoch microseconds, decimals as text)."""
    selected = df.selectExpr(
        "id", "name", "unix_micros(ts) AS ts", "CAST(amount AS STRING) AS amount"
    )
    return sorted([list(r) for r in selected.collect()])


def _decisions(spark: Any, table: Any) -> dict[str, str]:
    from icepark.spark.read.reader import choose_path
    from icepark.spark.write.writer import choose_write_path

    scan = table.scan()
    return {
        "read": choose_path(scan, scan.plan_files(), spark=spark)[0],
        "write": choose_write_path(table.metadata, spark=spark, io=table.io)[0],
    }


def write_modes(spark: Any, props: dict[str, str], name: str) -> dict[str, Any]:
    """create_table_from, append, overwrite by filter, dynamic overwrite, a pruned read."""
    catalog = _catalog(props)
    catalog.create_namespace_if_not_exists("db")
    table = ispark.create_table_from(
        spark, _source(spark, 0, 300), name, partition_by=["name", "day(ts)"], catalog=catalog
    )
    ispark.write(_source(spark, 300, 400), name, catalog=catalog)
    ispark.write(
        _source(spark, 1000, 1030).filter("name = 'n1'"),
        name,
        mode="overwrite",
        filter="name = 'n1'",
        catalog=catalog,
    )
    # replaces the (name, day) partitions of these rows: n2 on 2024-01-01 only
    ispark.write(
        _source(spark, 2000, 2010).selectExpr(
            "id", "'n2' AS name", "ts - INTERVAL 6 DAYS AS ts", "amount"
        ),
        name,
        mode="overwrite-partitions",
        catalog=catalog,
    )
    table = catalog.load_table(name)
    where = "name = 'n0' and id < 150"
    pruned = ispark.read(
        spark, name, filter=where, columns=["id", "name", "ts", "amount"], catalog=catalog
    )
    return {
        "decisions": _decisions(spark, table),
        "rows": spark_rows(ispark.read(spark, table)),
        "pruned": spark_rows(pruned),
        "planned": len(table.scan(filter=where).plan_files()),
        "files": len(table.scan().plan_files()),
        "operations": [s.summary["operation"] for s in table.snapshots() if s.summary],
    }


def row_level(spark: Any, props: dict[str, str], name: str, mode: str) -> dict[str, Any]:
    """delete, update and merge in ``mode`` (copy-on-write or merge-on-read)."""
    catalog = _catalog(props)
    catalog.create_namespace_if_not_exists("db")
    properties = {
        "format-version": "2",
        "write.delete.mode": mode,
        "write.update.mode": mode,
        "write.merge.mode": mode,
    }
    table = ispark.create_table_from(
        spark,
        _source(spark, 0, 300),
        name,
        partition_by=["name"],
        properties=properties,
        catalog=catalog,
    )
    ispark.delete(spark, name, "id < 40", catalog=catalog)
    ispark.delete(spark, name, "amount > 300 and name = 'n1'", catalog=catalog)
    ispark.update(
        spark,
        name,
        set={"name": "'n9'", "amount": "amount * 2"},
        where="id >= 280",
        catalog=catalog,
    )
    source = _source(spark, 250, 330).selectExpr(
        "id", "name", "ts", "CAST(-1 AS DECIMAL(10, 2)) AS amount"
    )
    ispark.merge(
        spark,
        name,
        source,
        on="id",
        when_matched_update={"amount": "s.amount"},
        when_not_matched_insert="*",
        catalog=catalog,
    )
    table = catalog.load_table(name)
    delete_files = sum(len(t.delete_files) for t in table.scan().plan_files())
    return {
        "decisions": _decisions(spark, table),
        "rows": spark_rows(ispark.read(spark, table)),
        "delete_files": delete_files,
        "operations": [s.summary["operation"] for s in table.snapshots() if s.summary],
    }


def source(spark: Any, props: dict[str, str], name: str) -> dict[str, Any]:
    """The ``icepark`` data source: a write (append, then a dynamic overwrite) and reads."""
    catalog = _catalog(props)
    catalog.create_namespace_if_not_exists("db")
    ispark.create_table_from(
        spark, _source(spark, 0, 100), name, partition_by=["name"], catalog=catalog
    )
    ispark.register(spark)
    options = {"catalog": CATALOG_NAME, **{f"catalog.{k}": v for k, v in props.items()}}
    _source(spark, 100, 160).write.format("icepark").options(**options).option("table", name).mode(
        "append"
    ).save()
    (
        _source(spark, 500, 510)
        .filter("name = 'n2'")
        .write.format("icepark")
        .options(**options)
        .option("table", name)
        .option("overwrite-mode", "dynamic")
        .mode("overwrite")
        .save()
    )
    df = spark.read.format("icepark").options(**options).option("table", name).load()
    return {"rows": spark_rows(df)}


def orphans(spark: Any, props: dict[str, str], name: str) -> dict[str, Any]:
    """remove_orphan_files on Spark: a stray file under the table is found and deleted."""
    catalog = _catalog(props)
    catalog.create_namespace_if_not_exists("db")
    table = ispark.create_table_from(
        spark, _source(spark, 0, 60), name, partition_by=["name"], catalog=catalog
    )
    strays = [f"{table.location}/data/name=n0/stray.parquet", f"{table.location}/stray.bin"]
    for stray in strays:
        table.io.new_output(stray).write_bytes(b"stray")
    time.sleep(0.01)
    now = int(time.time() * 1000)
    dry = ispark.remove_orphan_files(spark, table, older_than=now, allow_recent=True, dry_run=True)
    done = ispark.remove_orphan_files(
        spark, name, older_than=now, allow_recent=True, catalog=catalog
    )
    return {
        "strays": sorted(strays),
        "dry_run": sorted(dry),
        "deleted": sorted(done),
        "left": [s for s in strays if table.io.exists(s)],
        "rows": spark_rows(ispark.read(spark, table)),
    }


def upkeep(spark: Any, props: dict[str, str], name: str, checkpoint: str) -> dict[str, Any]:
    """The streaming source and sink (the table followed into ``<name>_copy`` with
    ``availableNow``), then merge-on-read deletes, ``rewrite_position_delete_files`` and
    ``rewrite_data_files`` (binpack) on the table."""
    catalog = _catalog(props)
    catalog.create_namespace_if_not_exists("db")
    properties = {"format-version": "2", "write.delete.mode": "merge-on-read"}
    ispark.create_table_from(
        spark,
        _source(spark, 0, 100),
        name,
        partition_by=["name"],
        properties=properties,
        catalog=catalog,
    )
    for start in (100, 200):
        ispark.write(_source(spark, start, start + 100), name, catalog=catalog)
    copy = f"{name}_copy"
    catalog.create_table(copy, catalog.load_table(name).schema(), partition_by=["name"])
    stream = ispark.read_stream(spark, name, catalog=catalog)
    query = ispark.write_stream(
        stream,
        copy,
        catalog=catalog,
        checkpoint_location=checkpoint,
        trigger={"availableNow": True},
    )
    query.awaitTermination(300)
    if query.exception() is not None:
        raise RuntimeError(f"the streaming query failed: {query.exception()}")
    streamed = spark_rows(ispark.read(spark, copy, catalog=catalog))

    ispark.delete(spark, name, "id < 20", catalog=catalog)
    ispark.delete(spark, name, "id >= 290", catalog=catalog)
    before = catalog.load_table(name).scan().plan_files()
    deletes = ispark.rewrite_position_delete_files(
        spark, name, options={"rewrite-all": "true"}, catalog=catalog
    )
    compacted = ispark.rewrite_data_files(
        spark, name, options={"min-input-files": "2"}, catalog=catalog
    )
    after = catalog.load_table(name).scan().plan_files()
    return {
        "streamed": streamed,
        "stream_commits": len(catalog.load_table(copy).snapshots()),
        "rows": spark_rows(ispark.read(spark, name, catalog=catalog)),
        "files_before": len(before),
        "delete_files_before": sum(len(t.delete_files) for t in before),
        "files_after": len(after),
        "delete_files_after": sum(len(t.delete_files) for t in after),
        "rewritten_deletes": deletes.to_dict(),
        "compacted": compacted.to_dict(),
    }


def local_pipeline(spark: Any, warehouse: str) -> dict[str, Any]:
    """Spark's native Parquet reader and writer on local files (file-system catalog), the data
    source (Python tasks), and delete, update and merge in merge-on-read."""
    options = {"type": "filesystem", "warehouse": warehouse}
    catalog = load_catalog("cluster", **options)
    catalog.create_namespace("db")
    df = spark.range(0, 500).selectExpr("id", "concat('n', CAST(id % 4 AS STRING)) AS name")
    table = ispark.create_table_from(
        spark,
        df,
        "db.n",
        partition_by=["name"],
        catalog=catalog,
        properties={
            "write.delete.mode": "merge-on-read",
            "write.update.mode": "merge-on-read",
            "write.merge.mode": "merge-on-read",
        },
    )
    scan = table.scan()
    out: dict[str, Any] = {
        "paths": [
            ispark.choose_path(scan, scan.plan_files(), spark=spark)[0],
            ispark.choose_write_path(table.metadata, spark=spark, io=table.io)[0],
        ],
        "filtered": ispark.read(spark, table, filter="name = 'n1'").count(),
    }
    df.write.format("icepark").options(**options).option("table", "db.n").mode("append").save()
    out["source"] = spark.read.format("icepark").options(**options, table="db.n").load().count()
    ispark.delete(spark, "db.n", "id < 100", catalog=catalog)
    ispark.update(spark, "db.n", set={"name": "'n9'"}, where="id >= 490", catalog=catalog)
    ispark.merge(
        spark,
        "db.n",
        spark.range(450, 550).selectExpr("id", "'m' AS name"),
        on="id",
        when_matched_update="*",
        when_not_matched_insert="*",
        catalog=catalog,
    )
    rows = ispark.read(spark, "db.n", catalog=catalog).groupBy("name").count().collect()
    out["counts"] = {r["name"]: r["count"] for r in rows}
    out["delete_files"] = sum(
        len(t.delete_files) for t in catalog.load_table("db.n").scan().plan_files()
    )
    return out


SCENARIOS = {
    "write_modes": write_modes,
    "row_level": row_level,
    "source": source,
    "orphans": orphans,
    "upkeep": upkeep,
    "local_pipeline": local_pipeline,
}
