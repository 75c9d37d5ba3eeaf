"""Structured Streaming on a Spark Connect session: ``read_stream`` / ``format("icepark")``
sources and the two exactly-once sinks (``write_stream``, whose batch function runs in a Python
process beside the server and finds Spark's query id in the checkpoint, and
``format("icepark")``), restarted from their checkpoint after a batch Spark had not recorded
as done: the replayed epoch commits nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark import spark as ispark

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int32())])
QUERY_ID, EPOCH_ID = "spark.sql.streaming.queryId", "spark.sql.streaming.epochId"


def _json_input(folder: Path, batches: list[list[int]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n, ids in enumerate(batches):
        with open(folder / f"part-{n:03d}.json", "w") as f:
            for i in ids:
                f.write(json.dumps({"id": i, "p": i % 3}) + "\n")


def _summaries(table: Any) -> list[tuple[str | None, str | None]]:
    return [(s.summary.get(QUERY_ID), s.summary.get(EPOCH_ID)) for s in table.refresh().snapshots()]


@pytest.mark.parametrize("entry", ["format", "write_stream"])
def test_sinks_commit_each_epoch_once_across_a_restart(
    connect_spark: Any, catalog: Any, catalog_options: dict[str, str], tmp_path: Path, entry: str
) -> None:
    spark = connect_spark
    table = catalog.create_table("db.sink", SCHEMA, partition_by=["p"])
    source = tmp_path / "in"
    _json_input(source, [list(range(0, 10)), list(range(10, 20)), list(range(20, 30))])
    checkpoint = tmp_path / "chk"

    def run() -> Any:
        df = (
            spark.readStream.schema("id long, p int")
            .option("maxFilesPerTrigger", 1)
            .json(str(source))
        )
        if entry == "format":
            query = (
                df.writeStream.format("icepark")
                .options(**catalog_options, table="db.sink")
                .option("checkpointLocation", str(checkpoint))
                .trigger(availableNow=True)
                .start()
            )
        else:
            query = ispark.write_stream(
                df, "db.sink", catalog=catalog_options, checkpoint_location=str(checkpoint),
                trigger={"availableNow": True},
            )  # fmt: skip
        query.awaitTermination(300)
        assert query.exception() is None
        return query

    query = run()
    summaries = _summaries(table)
    assert summaries == [(str(query.id), str(e)) for e in range(3)]
    # as if the server died after committing batch 2 and before Spark recorded it
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink(missing_ok=True)
    _json_input(source, [list(range(0, 10)), list(range(10, 20)), list(range(20, 30)), [30]])
    run()
    assert _summaries(table) == [*summaries, (str(query.id), "3")]  # epoch 2 not again
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(31))


def test_sources_follow_a_table(connect_spark: Any, catalog: Any, tmp_path: Path) -> None:
    spark = connect_spark
    table = catalog.create_table("db.ev", SCHEMA, partition_by=["p"])
    for i in range(3):
        table.append(pa.table({"id": [3 * i, 3 * i + 1, 3 * i + 2], "p": [0, 1, 2]}, SCHEMA))
    copy = catalog.create_table("db.copy", SCHEMA)
    stream = ispark.read_stream(spark, table, streaming_max_files_per_micro_batch=3)
    query = ispark.write_stream(
        stream, copy, checkpoint_location=str(tmp_path / "chk"), trigger={"availableNow": True}
    )
    query.awaitTermination(300)
    assert query.exception() is None
    assert sorted(copy.refresh().scan().to_arrow().column("id").to_pylist()) == list(range(9))
    epochs = [e for _, e in _summaries(copy)]
    assert epochs == ["0", "1", "2"]  # three files a micro-batch
    # the data source's source, into a memory sink
    frame = (
        spark.readStream.format("icepark")
        .options(type="filesystem", warehouse=catalog.properties["warehouse"], table="db.ev")
        .load()
    )
    memory = (
        frame.writeStream.format("memory").queryName("followed")
        .option("checkpointLocation", str(tmp_path / "chk2")).trigger(availableNow=True).start()
    )  # fmt: skip
    memory.awaitTermination(300)
    assert sorted(r.id for r in spark.sql("SELECT id FROM followed").collect()) == list(range(9))


class _Writer:
    """A DataStreamWriter whose first ``failures`` starts fail with ``message``."""

    def __init__(self, failures: int, message: str) -> None:
        self.failures, self.message, self.starts = failures, message, 0

    def start(self) -> str:
        self.starts += 1
        if self.starts <= self.failures:
            raise RuntimeError(self.message)
        return "query"


def test_a_start_whose_batch_process_did_not_connect_back_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from icepark.spark.streaming import queries

    monkeypatch.setattr(queries.time, "sleep", lambda s: None)
    lost = "[PYTHON_WORKER] Python worker failed to connect back."
    writer = _Writer(2, lost)
    assert queries._start(writer, "db.t") == "query" and writer.starts == 3
    writer = _Writer(3, lost)  # every attempt lost: the last error is the user's
    with pytest.raises(RuntimeError, match="failed to connect back"):
        queries._start(writer, "db.t")
    assert writer.starts == queries.START_ATTEMPTS
    writer = _Writer(1, "[TABLE_OR_VIEW_NOT_FOUND] nope")  # any other error: no retry
    with pytest.raises(RuntimeError, match="TABLE_OR_VIEW_NOT_FOUND"):
        queries._start(writer, "db.t")
    assert writer.starts == 1


def test_workers_are_checked_by_the_client_not_by_each_batch_process(
    connect_spark: Any, catalog: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark import cloudpickle

    from icepark.spark import setup
    from icepark.spark.streaming.sink import BatchCommitter

    table = catalog.create_table("db.checked", SCHEMA)
    source = tmp_path / "in"
    _json_input(source, [[1, 2]])
    stream = connect_spark.readStream.schema("id long, p int").json(str(source))

    def refused(spark: Any, module: str = "icepark") -> None:
        raise setup.SparkSetupError("the server's workers cannot import icepark")

    # write_stream checks the server's workers itself, before a query starts
    monkeypatch.setattr(setup, "_checked", set())
    monkeypatch.setattr(setup, "_check_connect_workers", refused)
    with pytest.raises(setup.SparkSetupError, match="cannot import icepark"):
        ispark.write_stream(stream, table, checkpoint_location=str(tmp_path / "chk"))
    assert connect_spark.streams.active == []
    # the batch function, unpickled in the process the server starts for the batches (its
    # workers' interpreter, icepark imported), takes the server as checked: no probe job
    committer = BatchCommitter(lambda: table, "append", None, "auto")  # type: ignore[arg-type]
    assert committer._on_server is False
    assert cloudpickle.loads(cloudpickle.dumps(committer))._on_server is True
    setup.mark_workers_checked(connect_spark)
    setup.check_python_workers(connect_spark)  # would raise if it probed


def _routes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The way each ``write_stream`` call writes: ``data source`` or ``foreachBatch``."""
    from icepark.spark.streaming import queries

    taken: list[str] = []
    for name, route in (("_data_source_writer", "data source"), ("_batch_writer", "foreachBatch")):
        inner = getattr(queries, name)

        def spy(*args: Any, _inner: Any = inner, _route: str = route, **kwargs: Any) -> Any:
            taken.append(_route)
            return _inner(*args, **kwargs)

        monkeypatch.setattr(queries, name, spy)
    return taken


def _files_per_snapshot(table: Any) -> list[int]:
    snapshots = table.refresh().snapshots()
    return [int(s.summary["added-data-files"]) for s in snapshots]


def test_write_stream_writes_through_the_data_source_with_the_batch_layout(
    connect_spark: Any, catalog: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Connect, ``write_stream`` into a table without a sort order goes through the data
    source's stream writer (no ``foreachBatch`` process), with the layout, options and
    summaries of the batch write: rows spread by partition (one file per partition and
    batch), ``distribution-mode`` none (a file per partition and input task: Spark reads the
    4 small files of a batch in 2 tasks), the application's id and
    ``snapshot-property.<key>``."""
    routes = _routes(monkeypatch)
    source = tmp_path / "in"
    # 8 files, 4 a trigger: 2 micro-batches, each input task with rows of all 3 partitions
    _json_input(source, [list(range(10 * n, 10 * n + 10)) for n in range(8)])
    for name, options, files in (
        ("spread", {"snapshot-property.source": "json"}, 3),
        ("kept", {"distribution-mode": "none"}, 6),
    ):
        table = catalog.create_table(f"db.{name}", SCHEMA, partition_by=["p"])
        stream = (
            connect_spark.readStream.schema("id long, p int")
            .option("maxFilesPerTrigger", 4)
            .json(str(source))
        )
        query = ispark.write_stream(
            stream, table, checkpoint_location=str(tmp_path / f"chk-{name}"),
            trigger={"availableNow": True}, options=options,
        )  # fmt: skip
        query.awaitTermination(300)
        assert query.exception() is None
        assert _files_per_snapshot(table) == [files, files]
        assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(80))
        for (query_id, epoch), snapshot in zip(_summaries(table), table.snapshots(), strict=True):
            assert query_id == str(query.id) and epoch in ("0", "1")
            assert snapshot.summary["spark.app.id"] == connect_spark.conf.get("spark.app.id")
            assert snapshot.summary.get("source") == options.get("snapshot-property.source")
    assert routes == ["data source", "data source"]


def test_write_stream_into_a_sorted_table_writes_each_batch_sorted(
    connect_spark: Any, catalog: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streaming DataFrame cannot be sorted, so on Connect a table with a sort order (and
    a write with fan-out off, or the native path) is written by a ``foreachBatch``
    function, which sorts each batch as the batch write does."""
    from icepark.spark.streaming import queries

    routes = _routes(monkeypatch)
    source = tmp_path / "in"
    _json_input(source, [[5, 3, 9, 1], [8, 2, 7]])
    table = catalog.create_table("db.sorted", SCHEMA, sort_by=["id"])
    stream = connect_spark.readStream.schema("id long, p int").json(str(source))
    query = ispark.write_stream(
        stream, table, checkpoint_location=str(tmp_path / "chk"), trigger={"availableNow": True}
    )
    query.awaitTermination(300)
    assert query.exception() is None
    assert routes == ["foreachBatch"]
    import pyarrow.parquet as pq

    tasks = list(table.refresh().scan().plan_files())
    assert {t.file.sort_order_id for t in tasks} == {table.sort_order().order_id}
    for t in tasks:  # each file's rows in the table's order
        ids = pq.read_table(t.file.file_path.removeprefix("file:")).column("id").to_pylist()
        assert ids == sorted(ids)
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 5, 7, 8, 9]
    # a table without a sort order: the data source, unless fan-out is off or path native
    plain = catalog.create_table("db.plain", SCHEMA)
    for fanout, path, expected in (
        (None, "auto", True),
        (None, "python", True),
        (False, "auto", False),
        (None, "native", False),
    ):
        chosen = queries._through_data_source(plain.metadata, fanout, path)  # type: ignore[arg-type]
        assert chosen is expected, (fanout, path)
    plain = plain.set_properties({"write.spark.fanout.enabled": "false"})  # the table's choice
    assert not queries._through_data_source(plain.metadata, None, "auto")


def test_write_stream_in_complete_mode_replaces_the_rows_each_batch(
    connect_spark: Any, catalog: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An aggregate in complete mode through the data source's writer, into a partitioned
    table (the aggregate's rows spread by partition): the last batch's whole result."""
    from pyspark.sql import functions as F

    routes = _routes(monkeypatch)
    counts = catalog.create_table(
        "db.counts",
        pa.schema([pa.field("p", pa.int32()), pa.field("n", pa.int64())]),
        partition_by=["p"],
    )
    source = tmp_path / "in"
    _json_input(source, [list(range(0, 6)), list(range(6, 9))])
    agg = (
        connect_spark.readStream.schema("id long, p int")
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .groupBy("p")
        .agg(F.count("*").alias("n"))
    )
    query = ispark.write_stream(
        agg, counts, mode="complete", checkpoint_location=str(tmp_path / "chk"),
        trigger={"availableNow": True},
    )  # fmt: skip
    query.awaitTermination(300)
    assert query.exception() is None
    assert routes == ["data source"]
    rows = sorted(tuple(r.values()) for r in counts.refresh().scan().to_arrow().to_pylist())
    assert rows == [(0, 3), (1, 3), (2, 3)]  # the last batch's full result, not a sum
    assert [e for _, e in _summaries(counts)] == ["0", "1"]
    assert counts.current_snapshot().summary["operation"] == "overwrite"
