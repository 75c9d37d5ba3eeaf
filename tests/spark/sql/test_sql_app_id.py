"""Every snapshot a Spark write commits records Spark's application id (``spark.app.id``,
``app-id``) and the engine (``engine-name``, ``engine-version``), as Java's Spark writes do:
the Iceberg Spark documentation's history-and-snapshots query shows them for the same
statements on both engines; and the files Spark writes carry the unsorted order's id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icepark import spark as ispark
from icepark.catalog import load_catalog
from icepark.spark.runtime import application_id

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SCRIPT = [
    "CREATE TABLE db.t (id bigint, data string) USING iceberg"
    " TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')",
    "INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
    "DELETE FROM db.t WHERE id = 1",
    "UPDATE db.t SET data = 'z' WHERE id = 2",
    "MERGE INTO db.t t USING (SELECT 4 AS id, 'd' AS data) s ON t.id = s.id"
    " WHEN NOT MATCHED THEN INSERT *",
    "INSERT OVERWRITE db.t SELECT * FROM db.t WHERE id > 2",
    "CREATE TABLE db.c USING iceberg AS SELECT * FROM db.t",
]

QUERY = (
    "SELECT s.operation, s.summary['spark.app.id'] FROM {t}.history h"
    " JOIN {t}.snapshots s ON h.snapshot_id = s.snapshot_id ORDER BY h.made_current_at"
)


def test_spark_writes_record_the_application_id_as_java(
    any_spark: Any, refspark: Any, tmp_path: Path
) -> None:
    ours = load_catalog("appid", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                        warehouse=str(tmp_path / "ice"))  # fmt: skip
    ours.create_namespace("db")
    (tmp_path / "java").mkdir()
    java = refspark.catalog_for(tmp_path / "java")
    refspark.request([f"CREATE NAMESPACE {java}.db"])
    refspark.request([f"USE {java}", *SCRIPT, "USE spark_catalog"])
    ispark.sql(any_spark, ";\n".join(SCRIPT), ours)
    app = application_id(any_spark)
    assert app and app.startswith("local-")
    for table in ("db.t", "db.c"):
        mine = [tuple(r) for r in ispark.sql(any_spark, QUERY.format(t=table), ours).collect()]
        theirs = refspark.rows(QUERY.format(t=f"{java}.{table}"))
        assert [op for op, _ in mine] == [op for op, _ in theirs], (mine, theirs)
        assert all(str(value).startswith("local-") for _, value in theirs)
        assert all(value == app for _, value in mine), mine
    # the engine's entries, as Java's catalog environment adds them (not iceberg-version)
    keys = "SELECT summary FROM {t}.snapshots"
    theirs_keys = {k for (s,) in refspark.rows(keys.format(t=f"{java}.db.t")) for k in s}
    for (summary,) in ispark.sql(any_spark, keys.format(t="db.t"), ours).collect():
        assert summary["app-id"] == app and summary["engine-name"] == "spark"
        assert summary["engine-version"] == any_spark.version
        assert {"app-id", "engine-name", "engine-version", "spark.app.id"} <= theirs_keys
    # Spark's native writer's files are not known sorted: the unsorted order's id, as Java's
    files = "SELECT DISTINCT sort_order_id FROM {t}.files"
    assert ispark.sql(any_spark, files.format(t="db.c"), ours).collect()[0][0] == 0
    assert refspark.rows(files.format(t=f"{java}.db.c")) == [[0]]


def test_data_source_commits_record_the_application_id(any_spark: Any, tmp_path: Path) -> None:
    """``format("icepark")`` commits run in a Python worker, without a session: the
    registered data source carries the application's entries to them; a batch write's
    ``snapshot-property.<key>`` options are recorded too, as Java's."""
    from icepark import schema

    catalog = load_catalog("dsapp", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                           warehouse=str(tmp_path / "ice"))  # fmt: skip
    catalog.create_namespace("db")
    for name in ("db.batch", "db.stream"):
        catalog.create_table(name, schema(("id", "long", False), ("data", "string", False)))
    options = {"catalog.type": "sql", "catalog.uri": f"sqlite:///{tmp_path}/c.db",
               "catalog.warehouse": str(tmp_path / "ice"), "catalog": "dsapp"}  # fmt: skip
    rows = any_spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, data string")
    rows.write.format("icepark").options(**options, table="db.batch").option(
        "snapshot-property.job", "nightly"
    ).mode("append").save()
    query = (
        any_spark.readStream.format("icepark").options(**options, table="db.batch").load()
        .writeStream.format("icepark").options(**options, table="db.stream")
        .option("snapshot-property.job", "stream")
        .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination(300)
    app = application_id(any_spark)
    for name, job in (("db.batch", "nightly"), ("db.stream", "stream")):
        snapshot = catalog.load_table(name).current_snapshot()
        assert snapshot is not None and snapshot.summary is not None
        summary = snapshot.summary
        assert summary.get("spark.app.id") == summary.get("app-id") == app, summary
        assert summary.get("engine-version") == any_spark.version
        assert summary.get("job") == job
