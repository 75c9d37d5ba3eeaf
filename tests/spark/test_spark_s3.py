"""Tables on S3 (a moto server) from Spark (the shared ``local[2]`` session): every operation
through icepark's Python tasks (this pyspark has no S3A), judged against a model of the
operations, icepark's one-machine read and PyIceberg; the storage decision and the S3A
settings it derives; faults (throttling through a proxy) and bad input (credentials, bucket,
endpoint), reported before any Spark job starts. The scenarios of ``s3_scenarios.py`` run once
a ``make test``: on local-cluster in ``test_spark_cluster.py`` (executors in JVMs of their own,
the stronger test), here on ``local[2]`` only where that is switched off
(``ICEPARK_SPARK_CLUSTER=0``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import s3_checks as checks
import s3_scenarios as scenarios
from s3_faults import FaultyS3Proxy
from services import free_port

from icepark import spark as ispark
from icepark.catalog import load_catalog
from icepark.errors import IceparkError, StorageError
from icepark.spark import storage

pytestmark = [pytest.mark.spark, pytest.mark.s3]


@pytest.fixture
def props(tmp_path: Path, s3_endpoint: dict[str, str]) -> dict[str, str]:
    return checks.catalog_props(tmp_path, s3_endpoint)


# -- every operation -----------------------------------------------------------------------------

on_local_only_without_cluster = pytest.mark.skipif(
    os.environ.get("ICEPARK_SPARK_CLUSTER") != "0",
    reason="run on local-cluster by test_spark_cluster.py (ICEPARK_SPARK_CLUSTER=0 runs it here)",
)


@on_local_only_without_cluster
def test_write_modes_and_pruned_read(spark: Any, props: dict[str, str]) -> None:
    out = scenarios.write_modes(spark, props, "db.w")
    assert out["decisions"] == {"read": "python", "write": "python"}
    checks.check_table(props, "db.w", out["rows"], checks.expected_write_modes())
    assert out["pruned"] == [
        r for r in checks.expected_write_modes() if r[1] == "n0" and r[0] < 150
    ]
    assert 0 < out["planned"] < out["files"]
    assert out["operations"] == ["append", "append", "overwrite", "overwrite"]


@on_local_only_without_cluster
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_row_level(spark: Any, props: dict[str, str], mode: str) -> None:
    out = scenarios.row_level(spark, props, "db.r", mode)
    checks.check_table(props, "db.r", out["rows"], checks.expected_row_level())
    assert (out["delete_files"] > 0) == (mode == "merge-on-read")
    assert len(out["operations"]) == 5


@on_local_only_without_cluster
def test_data_source(spark: Any, props: dict[str, str]) -> None:
    out = scenarios.source(spark, props, "db.s")
    checks.check_table(props, "db.s", out["rows"], checks.expected_source())


@on_local_only_without_cluster
def test_orphan_removal(spark: Any, props: dict[str, str]) -> None:
    out = scenarios.orphans(spark, props, "db.o")
    assert out["dry_run"] == out["deleted"] == out["strays"]
    assert out["left"] == []
    checks.check_table(props, "db.o", out["rows"], checks.model_rows(0, 60))


@on_local_only_without_cluster
def test_streaming_and_compaction(spark: Any, props: dict[str, str], tmp_path: Path) -> None:
    out = scenarios.upkeep(spark, props, "db.u", str(tmp_path / "checkpoint"))
    checks.check_upkeep(props, "db.u", out)


def test_paths_give_identical_rows_and_metrics(
    spark: Any, props: dict[str, str], tmp_path: Path
) -> None:
    """The same DataFrame written natively (local table) and through Python tasks (S3
    table): the same rows and, partition by partition, the same file metrics."""
    local = load_catalog("local", type="filesystem", warehouse=str(tmp_path / "local"))
    remote = load_catalog(scenarios.CATALOG_NAME, properties=props)
    df = scenarios._source(spark, 0, 500)
    tables = []
    for catalog in (local, remote):
        catalog.create_namespace_if_not_exists("db")
        tables.append(
            ispark.create_table_from(spark, df, "db.same", partition_by=["name"], catalog=catalog)
        )
    native, python = tables
    assert ispark.choose_write_path(native.metadata, spark=spark, io=native.io)[0] == "native"
    assert ispark.choose_write_path(python.metadata, spark=spark, io=python.io)[0] == "python"
    assert scenarios.spark_rows(ispark.read(spark, native)) == scenarios.spark_rows(
        ispark.read(spark, python)
    )

    def metrics(table: Any) -> dict[Any, Any]:
        out = {}
        for task in table.scan().plan_files():
            f = task.file
            out[tuple(f.partition)] = (
                f.record_count,
                f.value_counts,
                f.null_value_counts,
                f.nan_value_counts or {},  # footers carry no NaN counts: None natively
                f.lower_bounds,
                f.upper_bounds,
            )
        return out

    assert metrics(native) == metrics(python)
    assert len(metrics(native)) == 3


# -- the decision ---------------------------------------------------------------------------------


def test_decision_asks_the_jvm_once_and_logs(
    spark: Any,
    props: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(storage, "_schemes", {})
    io = load_catalog("d", properties=props).io
    location = props["warehouse"] + "/db/t"
    with caplog.at_level(logging.INFO, logger="icepark.spark.storage"):
        first = storage.choose_storage_path(spark, io, [location, location + "/data/a.parquet"])
        second = storage.choose_storage_path(spark, io, [location])
    assert first[0] == second[0] == "python"
    assert "hadoop-aws" in first[1]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1, messages
    assert "no Hadoop file system for s3a://" in messages[0]
    assert "Traceback" not in messages[0] and "py4j" not in messages[0].lower()
    # local files never ask
    assert storage.choose_storage_path(spark, io, ["/tmp/x", "file:/tmp/y"]) == (
        "native",
        "local files",
    )


def test_s3a_settings_from_catalog_properties() -> None:
    props = {
        "s3.endpoint": "http://127.0.0.1:9000/",
        "s3.access-key-id": "AK",
        "s3.secret-access-key": "SK",
        "s3.session-token": "TOKEN",
        "s3.region": "eu-west-1",
        "s3.retry.num-retries": "3",
    }
    p = "fs.s3a.bucket.lake."
    assert storage.s3a_settings(props, "lake") == {
        p + "endpoint": "http://127.0.0.1:9000",
        p + "connection.ssl.enabled": "false",
        p + "path.style.access": "true",
        p + "access.key": "AK",
        p + "secret.key": "SK",
        p + "session.token": "TOKEN",
        p + "aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
        p + "endpoint.region": "eu-west-1",
        p + "retry.limit": "3",
    }
    static = storage.s3a_settings(
        {"s3.access-key-id": "AK", "s3.secret-access-key": "SK", "s3.path-style-access": "false"},
        "b",
    )
    assert static == {
        "fs.s3a.bucket.b.path.style.access": "false",
        "fs.s3a.bucket.b.access.key": "AK",
        "fs.s3a.bucket.b.secret.key": "SK",
        "fs.s3a.bucket.b.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }
    # nothing from the driver's environment: executors find their own credentials
    assert storage.s3a_settings({}, "b") == {}


def test_native_path_when_spark_has_s3a(
    spark: Any, props: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a file system for s3a:// (hadoop-aws), reads and writes take Spark's native
    path on s3a:// locations and the session gets the S3A settings nobody set."""
    monkeypatch.setattr(storage, "_schemes", {})
    monkeypatch.setattr(storage, "spark_has_filesystem", lambda spark, scheme: True)
    catalog = load_catalog(scenarios.CATALOG_NAME, properties=props)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", _id_schema())
    bucket = props["warehouse"].split("/")[2]
    prefix = f"fs.s3a.bucket.{bucket}."
    spark.conf.set("fs.s3a.path.style.access", "false")  # the user's own: kept
    keys = [
        prefix + k
        for k in ("endpoint", "path.style.access", "access.key", "secret.key", "endpoint.region")
    ]
    try:
        assert ispark.choose_write_path(table.metadata, spark=spark, io=table.io) == (
            "native",
            "Spark's Parquet writer with field ids",
        )
        scan = table.scan()
        assert ispark.choose_path(scan, scan.plan_files(), spark=spark)[0] == "native"
        assert spark.conf.get(prefix + "endpoint") == props["s3.endpoint"]
        assert spark.conf.get(prefix + "access.key") == props["s3.access-key-id"]
        assert spark.conf.get(prefix + "secret.key") == props["s3.secret-access-key"]
        assert spark.conf.get(prefix + "endpoint.region") == props["s3.region"]
        assert spark.conf.get(prefix + "path.style.access", None) is None
        from icepark.spark.paths import spark_reported_path, to_spark_location

        assert to_spark_location(table.location).startswith("s3a://")
        assert spark_reported_path(table.location + "/data/x.parquet").startswith(
            f"s3a://{bucket}/"
        )
    finally:
        for key in [
            *keys,
            prefix + "connection.ssl.enabled",
            prefix + "aws.credentials.provider",
            "fs.s3a.path.style.access",
        ]:
            spark.conf.unset(key)


# -- faults ---------------------------------------------------------------------------------------


def test_throttled_s3_writes_and_commits_succeed_or_fail_cleanly(
    spark: Any, tmp_path: Path, s3_endpoint: dict[str, str]
) -> None:
    direct = checks.catalog_props(tmp_path, s3_endpoint)
    with FaultyS3Proxy(s3_endpoint["s3.endpoint"], share=0.1, seed=3) as proxy:
        props = {**direct, "s3.endpoint": proxy.endpoint}
        catalog = load_catalog(scenarios.CATALOG_NAME, properties=props)
        catalog.create_namespace("db")
        df = scenarios._source(spark, 0, 300)
        table = ispark.create_table_from(
            spark,
            df,
            "db.t",
            partition_by=["name"],
            catalog=catalog,
            properties={"write.delete.mode": "merge-on-read"},
        )
        ispark.write(scenarios._source(spark, 300, 400), table)
        ispark.delete(spark, table, "id < 50")
        assert proxy.served_errors > 0, proxy.requests
        expected = checks.model_rows(50, 400)
        assert scenarios.spark_rows(ispark.read(spark, table)) == expected
        checks.check_table(direct, "db.t", expected, expected)
        # compaction through the same faults: it lands, or it fails typed having committed
        # nothing; either way the rows are the same and every file the table references exists
        served = proxy.served_errors
        try:
            ispark.rewrite_data_files(spark, table, options={"min-input-files": "2"})
        except IceparkError:
            pass
        assert proxy.served_errors > served, proxy.requests
        assert scenarios.spark_rows(ispark.read(spark, table)) == expected
        checks.check_table(direct, "db.t", expected, expected)

        # every metadata write now fails (after 2 retries): the write fails with an error
        # naming the endpoint, commits nothing, and deletes the data files it wrote
        before = catalog.load_table("db.t")
        data_before = {e.location for e in before.io.list_prefix(before.location + "/data")}
        props_strict = {**props, "s3.retry.num-retries": "2"}
        strict = load_catalog(scenarios.CATALOG_NAME, properties=props_strict).load_table("db.t")
        proxy.share = 0.0  # only the metadata writes fail now, every time
        proxy.fail_when = lambda method, path: method in ("PUT", "POST") and "/metadata/" in path
        with pytest.raises(StorageError, match=proxy.endpoint):
            ispark.write(scenarios._source(spark, 400, 500), strict)
        proxy.fail_when = None
    after = load_catalog(scenarios.CATALOG_NAME, properties=direct).load_table("db.t")
    assert after.metadata_location == before.metadata_location
    assert {e.location for e in after.io.list_prefix(after.location + "/data")} == data_before
    checks.check_table(direct, "db.t", expected, expected)


# -- bad input --------------------------------------------------------------------------------------


@pytest.fixture
def no_jobs(spark: Any) -> Iterator[None]:
    """Fails the test if a Spark job ran inside it."""
    sc = spark.sparkContext
    group = f"no-jobs-{os.getpid()}-{id(sc)}"
    sc.setJobGroup(group, "must not start a job")
    yield
    jobs = sc.statusTracker().getJobIdsForGroup(group)
    sc.setLocalProperty("spark.jobGroup.id", None)
    assert list(jobs) == [], "a Spark job started"


def test_wrong_credentials(
    spark: Any, tmp_path: Path, s3_with_auth: dict[str, str], no_jobs: None
) -> None:
    good = {"uri": f"sqlite:///{tmp_path}/c.db", "warehouse": "s3://secured/wh", **s3_with_auth}
    catalog = load_catalog(scenarios.CATALOG_NAME, properties=good)
    catalog.create_namespace("db")
    catalog.create_table("db.t", _id_schema())
    bad = load_catalog(scenarios.CATALOG_NAME, properties={**good, "s3.secret-access-key": "wrong"})
    with pytest.raises(StorageError) as error:
        ispark.read(spark, "db.t", catalog=bad)
    message = str(error.value)
    assert "Access denied" in message and "'secured'" in message
    assert s3_with_auth["s3.endpoint"] in message and "s3.secret-access-key" in message
    df = spark.range(5).selectExpr("id")
    with pytest.raises(StorageError, match="Access denied to S3 bucket 'secured'"):
        ispark.write(df, "db.t", catalog=bad)


def test_missing_bucket(spark: Any, props: dict[str, str], no_jobs: None) -> None:
    catalog = load_catalog(scenarios.CATALOG_NAME, properties=props)
    catalog.create_namespace("db")
    df = spark.range(5).selectExpr("id")
    # the table's data goes to a bucket that does not exist: refused before the job
    table = catalog.create_table(
        "db.t",
        _id_schema(),
        properties={"write.data.path": "s3://no-such-bucket-x/data"},
    )
    with pytest.raises(
        StorageError,
        match="bucket 'no-such-bucket-x' does not exist at endpoint " + props["s3.endpoint"],
    ):
        ispark.write(df, table)
    # a warehouse in a bucket that does not exist: refused when the table is created
    nowhere = {**props, "warehouse": "s3://no-such-bucket-y/wh"}
    other = load_catalog("n", properties=nowhere)
    other.create_namespace("db")
    with pytest.raises(StorageError, match="bucket 'no-such-bucket-y' does not exist"):
        ispark.create_table_from(spark, df, "db.t", catalog=other)


def _id_schema() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field("id", pa.int64())])


def test_endpoint_that_does_not_answer(spark: Any, tmp_path: Path, no_jobs: None) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    props = {
        "uri": f"sqlite:///{tmp_path}/c.db",
        "warehouse": "s3://lake/wh",
        "s3.endpoint": endpoint,
        "s3.access-key-id": "a",
        "s3.secret-access-key": "b",
        "s3.region": "us-east-1",
        "s3.retry.num-retries": "1",
    }
    catalog = load_catalog("gone", properties=props)
    catalog.create_namespace("db")
    with pytest.raises(
        StorageError, match=f"Cannot reach S3 endpoint {endpoint} for bucket 'lake'"
    ):
        ispark.create_table_from(spark, spark.range(3).selectExpr("id"), "db.t", catalog=catalog)
