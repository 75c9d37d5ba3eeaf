"""Spark Connect sessions: built by ``ispark.session(remote=...)``, their Python workers
checked on the server, and the session helpers (icepark.spark.runtime) giving on Connect what
a classic session gives."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from icepark.errors import IceparkError
from icepark.spark import runtime, setup
from icepark.spark.runtime import TASK_INDEX, TASK_PAYLOAD

pytestmark = pytest.mark.spark


def test_session_remote_builds_a_checked_connect_session(
    connect_spark: Any, connect_url: str
) -> None:
    from icepark import spark as ispark

    session = ispark.session(remote=connect_url)
    assert runtime.is_connect(session)
    assert session.conf.get("spark.sql.parquet.fieldId.read.enabled") == "true"
    assert session.conf.get("spark.sql.session.timeZone") == "UTC"
    with pytest.raises(IceparkError, match="not both"):
        ispark.session("local[2]", remote=connect_url)
    # what a classic session would be asked through sparkContext, asked at the DataFrame level
    assert runtime.default_parallelism(session) == 2
    # and counted when spark.default.parallelism is not set (the test server sets it)
    assert runtime._range_partitions(session) == 2
    with pytest.raises(AttributeError, match="JVM_ATTRIBUTE_NOT_SUPPORTED"):
        session.sparkContext  # noqa: B018  (what icepark never touches on Connect)


def test_server_workers_without_icepark_are_named(connect_spark: Any) -> None:
    # the probe runs in the server's Python worker and imports a module no interpreter has,
    # as one without icepark would fail to import it
    with pytest.raises(setup.SparkSetupError) as raised:
        setup._check_connect_workers(connect_spark, module="icepark_not_installed_here")
    message = str(raised.value)
    assert "Spark Connect server's Python workers run" in message
    worker = os.environ["PYSPARK_PYTHON"]  # what the server was started with
    assert worker in message or os.path.realpath(worker) in message
    assert "icepark_not_installed_here" in message and "PYSPARK_PYTHON" in message
    setup._check_connect_workers(connect_spark)  # this server's workers have icepark


@pytest.mark.parametrize("partitions", [None, 2])
def test_task_frame_spreads_payloads_over_partitions(any_spark: Any, partitions: Any) -> None:
    payloads = [f"p{i}".encode() * (i + 1) for i in range(7)]
    frame = runtime.task_frame(any_spark, payloads, partitions=partitions)
    rows = frame.select(TASK_INDEX, TASK_PAYLOAD, F.spark_partition_id().alias("part")).collect()
    assert sorted((r[TASK_INDEX], bytes(r[TASK_PAYLOAD])) for r in rows) == list(
        enumerate(payloads)
    )
    parts = {r[TASK_INDEX]: r.part for r in rows}
    if partitions is None:
        assert sorted(parts.values()) == list(range(7))  # one payload a task
    else:  # in order, over two tasks
        assert sorted(set(parts.values())) == [0, 1]
        assert [parts[i] for i in range(7)] == sorted(parts[i] for i in range(7))

    def lengths(batches: Any) -> Any:
        for b in batches:
            yield pa.RecordBatch.from_pydict(
                {"n": [len(p) for p in b.column(TASK_PAYLOAD).to_pylist()]}
            )

    got = frame.mapInArrow(lengths, "n long").collect()
    assert sorted(r.n for r in got) == sorted(len(p) for p in payloads)
    assert runtime.task_frame(any_spark, []).count() == 0
