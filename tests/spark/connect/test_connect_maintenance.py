"""Java's maintenance actions on a Spark Connect session (compaction with bin-pack, sort and
Z-order, position-delete rewrites, ``add_files``, orphan removal, NDV statistics), and tables
on S3 (a moto server) with the catalog's ``s3.*`` properties and Spark conf only: the same
scenarios and judges as on the classic session (tests/spark/test_spark_s3.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import s3_checks as checks
import s3_scenarios as scenarios

from icepark import spark as ispark
from icepark.catalog import load_catalog
from icepark.spark import storage

pytestmark = pytest.mark.spark


def test_compaction_add_files_and_statistics(
    connect_spark: Any, catalog: Any, tmp_path: Path
) -> None:
    spark = connect_spark
    df = spark.range(0, 400).selectExpr(
        "id", "CAST(id % 5 AS INT) AS p", "CAST((id * 37) % 101 AS BIGINT) AS v"
    )
    props = {"format-version": "2", "write.delete.mode": "merge-on-read"}
    table = ispark.create_table_from(
        spark, df.repartition(8), "db.c", partition_by=["p"], properties=props, catalog=catalog
    )
    for _ in range(2):
        ispark.write(df.where("id < 50").repartition(4), table)
    ispark.delete(spark, table, "id % 9 = 0")
    expected = sorted(r.id for r in ispark.read(spark, table).collect())

    deletes = ispark.rewrite_position_delete_files(spark, table, options={"rewrite-all": "true"})
    assert deletes.rewritten_delete_files_count > 0
    binpack = ispark.rewrite_data_files(spark, table, options={"min-input-files": "2"})
    assert binpack.rewritten_data_files_count > 0
    table.refresh()
    assert not any(t.delete_files for t in table.scan().plan_files())
    ispark.rewrite_data_files(
        spark, table, strategy="sort", sort_order="v desc, id", where="p < 2",
        options={"rewrite-all": "true"},
    )  # fmt: skip
    ispark.rewrite_data_files(
        spark, table, strategy="sort", sort_order="zorder(id, v)", options={"rewrite-all": "true"}
    )
    assert sorted(r.id for r in ispark.read(spark, table).collect()) == expected
    assert expected == sorted(table.refresh().scan().to_arrow().column("id").to_pylist())

    # files written by Spark in Hive's layout, added as they are
    folder = tmp_path / "hive"
    df.where("id >= 300").write.partitionBy("p").parquet(str(folder))
    added = catalog.create_table("db.added", table.schema(), partition_by=["p"])
    result = ispark.add_files(spark, added, str(folder))
    assert result.added_files_count > 0
    assert sorted(r.id for r in ispark.read(spark, added).collect()) == list(range(300, 400))

    stats = ispark.compute_table_stats(spark, table, columns=["v"])
    assert stats is not None
    table.refresh()
    (statistics,) = table.metadata.statistics
    (blob,) = statistics.blob_metadata
    assert blob.type == "apache-datasketches-theta-v1"
    assert int(blob.properties["ndv"]) in range(95, 108)  # 101 distinct values, estimated


@pytest.fixture
def props(tmp_path: Path, s3_endpoint: dict[str, str]) -> dict[str, str]:
    return checks.catalog_props(tmp_path, s3_endpoint)


@pytest.mark.s3
def test_s3_tables_on_connect(connect_spark: Any, props: dict[str, str], tmp_path: Path) -> None:
    spark = connect_spark
    out = scenarios.write_modes(spark, props, "db.w")
    # the Connect server has no S3A either (asked with try_reflect, not through a JVM here)
    assert out["decisions"] == {"read": "python", "write": "python"}
    checks.check_table(props, "db.w", out["rows"], checks.expected_write_modes())
    out = scenarios.upkeep(spark, props, "db.u", str(tmp_path / "checkpoint"))
    checks.check_upkeep(props, "db.u", out)
    out = scenarios.orphans(spark, props, "db.o")
    assert out["dry_run"] == out["deleted"] == out["strays"] and out["left"] == []


@pytest.mark.s3
def test_s3a_settings_go_to_the_session_conf(
    connect_spark: Any, props: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the server to have S3A, the catalog's ``s3.*`` properties reach it as Spark conf
    (``fs.s3a.bucket.<bucket>.*``), where neither that key nor its global form (also as
    ``spark.hadoop.*``) is set (credentials always: a Connect client cannot read them);
    nothing goes through a JVM's Hadoop configuration."""
    spark = connect_spark
    monkeypatch.setattr(storage, "_schemes", {})
    assert not storage.spark_has_filesystem(spark, "s3a")  # this server: no hadoop-aws
    monkeypatch.setattr(storage, "spark_has_filesystem", lambda spark, scheme: True)
    catalog = load_catalog(scenarios.CATALOG_NAME, properties=props)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", _schema())
    bucket = props["warehouse"].split("/")[2]
    prefix = f"fs.s3a.bucket.{bucket}."
    spark.conf.set("spark.hadoop.fs.s3a.endpoint.region", "elsewhere")  # the user's: kept
    try:
        assert ispark.choose_write_path(table.metadata, spark=spark, io=table.io)[0] == "native"
        assert spark.conf.get(prefix + "endpoint") == props["s3.endpoint"]
        # credentials are set too, but a Connect client cannot read them back (redacted)
        applied = storage.configure_s3a(spark, props, [bucket])
        assert applied[prefix + "access.key"] == props["s3.access-key-id"]
        assert prefix + "endpoint" not in applied  # set already: not again
        assert spark.conf.get(prefix + "path.style.access") == "true"
        assert spark.conf.get(prefix + "endpoint.region", None) is None
    finally:
        for key in ("endpoint", "path.style.access", "access.key", "secret.key",
                    "connection.ssl.enabled", "aws.credentials.provider"):  # fmt: skip
            spark.conf.unset(prefix + key)
        spark.conf.unset("spark.hadoop.fs.s3a.endpoint.region")


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("id", pa.int64())])
