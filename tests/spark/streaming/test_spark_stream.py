"""Structured Streaming on icepark tables in one Spark session: the source (offsets, read
limits, Trigger.AvailableNow, bad input) and the sink (append and complete, exactly once when
Spark replays a batch it had not recorded as done)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int32())])
QUERY_ID = "spark.sql.streaming.queryId"
EPOCH_ID = "spark.sql.streaming.epochId"


def _rows(ids: list[int], parts: int = 1) -> pa.Table:
    return pa.table({"id": ids, "p": [i % parts for i in ids]}, schema=SCHEMA)


def _memory_ids(spark: Any, name: str) -> list[int]:
    return sorted(r.id for r in spark.sql(f"SELECT id FROM {name}").collect())


def _until(check: Any, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.5)


def _error(query: Any, timeout: float = 120.0) -> str:
    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException) as info:
        query.awaitTermination(timeout)
        raise AssertionError("the query did not fail")
    return str(info.value)


# -- source ------------------------------------------------------------------------------------


def test_source_follows_appends(spark: Any, catalog: Any, tmp_path: Path) -> None:
    from icepark.spark import read_stream

    table = catalog.create_table("db.ev", SCHEMA, partition_by=["p"])
    table.append(_rows(list(range(10)), parts=2))
    table.delete("id = 3")  # history before the stream starts does not matter
    df = read_stream(spark, table)
    query = (
        df.writeStream.format("memory")
        .queryName("follow")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        query.processAllAvailable()
        assert _memory_ids(spark, "follow") == [i for i in range(10) if i != 3]
        table.append(_rows([10, 11], parts=2))
        table.append(_rows([12]))
        _until(lambda: len(_memory_ids(spark, "follow")) == 12)
        assert _memory_ids(spark, "follow") == [i for i in range(13) if i != 3]
        head = table.refresh().current_snapshot().snapshot_id

        def end_offset() -> dict[str, Any]:
            progress = query.lastProgress
            return {} if progress is None else dict(json.loads(progress["sources"][0]["endOffset"]))

        # the memory sink shows a batch's rows before Spark posts that batch's progress
        _until(lambda: end_offset().get("snapshot_id") == head)
        assert set(end_offset()) == {"version", "snapshot_id", "position", "scan_all_files"}
        # a delete stops the query, naming the snapshot and the option that skips it
        table.delete("id = 12")
        deleted = table.current_snapshot().snapshot_id
        message = _error(query)
        assert f"delete snapshot: {deleted}" in message
        assert "streaming-skip-delete-snapshots=true" in message
    finally:
        query.stop()


def test_source_read_limits_and_available_now(spark: Any, catalog: Any, tmp_path: Path) -> None:
    table = catalog.create_table("db.lim", SCHEMA, partition_by=["p"])
    for i in range(5):
        table.append(_rows([10 * i + j for j in range(3)], parts=3))  # 3 files each
    first = table.snapshots()[0].snapshot_id
    table.delete("id = 1")
    table.append(_rows([100]))
    df = (
        spark.readStream.format("icepark")
        .options(type="filesystem", warehouse=catalog.properties["warehouse"])
        .option("table", "db.lim")
        .option("start-snapshot-id", str(first))
        .option("streaming-max-files-per-micro-batch", "4")
        .option("streaming-skip-delete-snapshots", "true")
        .load()
    )
    query = (
        df.writeStream.format("memory")
        .queryName("limited")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert query.exception() is None
    # the appended rows, each once (the later delete does not retract streamed rows)
    assert _memory_ids(spark, "limited") == [*range(3), *range(10, 13), *range(20, 23),
                                              *range(30, 33), *range(40, 43), 100]  # fmt: skip
    inputs = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert len(inputs) == 4  # 16 files, at most 4 per micro-batch
    assert sum(inputs) == 16
    # rows: a soft limit
    rows_df = (
        spark.readStream.format("icepark")
        .options(type="filesystem", warehouse=catalog.properties["warehouse"])
        .option("table", "db.lim")
        .option("start-snapshot-id", str(first))
        .option("streaming-max-rows-per-micro-batch", "5")
        .option("streaming-skip-delete-snapshots", "true")
        .load()
    )
    query = (
        rows_df.writeStream.format("memory")
        .queryName("limited_rows")
        .option("checkpointLocation", str(tmp_path / "chk2"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    inputs = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert inputs == [5, 5, 5, 1]  # files of one row: five files reach the limit


def test_source_plans_a_snapshot_in_its_read_tasks(
    spark: Any, catalog: Any, tmp_path: Path
) -> None:
    """``read.data-planning-mode=distributed``: the first micro-batches read the current
    snapshot in full, planned by their own Spark tasks (deletes applied, the filter's files
    only); then appends follow."""
    from icepark.spark import read_stream

    table = catalog.create_table(
        "db.dist",
        SCHEMA,
        partition_by=["p"],
        properties={
            "write.delete.mode": "merge-on-read",
            "read.data-planning-mode": "distributed",
        },
    )
    for i in range(3):
        table.append(_rows(list(range(10 * i, 10 * i + 10)), parts=3))  # 3 files each
    table.delete("id = 4")
    df = read_stream(spark, table, filter="id >= 2", streaming_max_files_per_micro_batch=4)
    query = (
        df.writeStream.format("memory")
        .queryName("dist")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert query.exception() is None
    assert _memory_ids(spark, "dist") == [i for i in range(2, 30) if i != 4]
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    assert len(batches) == 3  # 9 files, 4 a micro-batch
    # the source (as Spark drives it on the driver): the first batch's tasks plan themselves
    from icepark.spark.streaming.source import IcebergStreamReader

    options = {
        "table": "db.dist",
        "type": "filesystem",
        "warehouse": catalog.properties["warehouse"],
        "streaming-max-files-per-micro-batch": "4",
    }
    reader = IcebergStreamReader(options, df.schema)
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert end["position"] == 4 and end["scan_all_files"]
    parts = reader.partitions(start, end)
    assert parts and all(p.task is None and p.slices for p in parts)  # type: ignore[attr-defined]
    assert sum(b.num_rows for p in parts for b in reader.read(p)) > 0


def test_source_bad_input(
    spark: Any, catalog: Any, catalog_options: dict[str, str], tmp_path: Path
) -> None:
    from icepark.errors import ValidationError
    from icepark.spark import read_stream

    table = catalog.create_table("db.bad", SCHEMA)
    table.append(_rows([1]))
    with pytest.raises(ValidationError, match="Unknown option 'streaming-max-filez"):
        read_stream(spark, table, **{"streaming-max-filez-per-micro-batch": "2"})
    with pytest.raises(ValidationError, match="streaming-max-files-per-micro-batch must be"):
        read_stream(spark, table, streaming_max_files_per_micro_batch="x")

    def start(name: str, **options: str) -> Any:
        df = (
            spark.readStream.format("icepark")
            .options(**catalog_options, table="db.bad", **options)
            .load()
        )
        return (
            df.writeStream.format("memory")
            .queryName(name)
            .option("checkpointLocation", str(tmp_path / name))
            .trigger(processingTime="1 second")
            .start()
        )

    message = _error(start("unknown", bogus="1"))
    assert "Unknown option 'bogus'" in message
    message = _error(start("missing", **{"start-snapshot-id": "12345"}))
    assert "Cannot find snapshot 12345 (start-snapshot-id)" in message
    # a start timestamp after the last snapshot: no error, the stream waits
    later = table.current_snapshot().timestamp_ms + 1
    waiting = start("waiting", **{"stream-from-timestamp": str(later)})
    try:
        waiting.processAllAvailable()
        assert waiting.exception() is None
        assert _memory_ids(spark, "waiting") == []
        time.sleep(0.01)
        table.append(_rows([2]))
        _until(lambda: _memory_ids(spark, "waiting") == [2])
        # a table dropped under the running query
        catalog.drop_table("db.bad")
        message = _error(waiting)
        assert "db.bad" in message
    finally:
        waiting.stop()


# -- sink --------------------------------------------------------------------------------------


def _json_input(folder: Path, batches: list[list[int]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n, ids in enumerate(batches):
        with open(folder / f"part-{n:03d}.json", "w") as f:
            for i in ids:
                f.write(json.dumps({"id": i, "p": i % 3}) + "\n")


def _file_stream(spark: Any, folder: Path) -> Any:
    return (
        spark.readStream.schema("id long, p int").option("maxFilesPerTrigger", 1).json(str(folder))
    )


def _summaries(table: Any) -> list[tuple[str | None, str | None]]:
    return [(s.summary.get(QUERY_ID), s.summary.get(EPOCH_ID)) for s in table.refresh().snapshots()]


@pytest.mark.parametrize("entry", ["format", "write_stream"])
def test_sink_exactly_once_when_a_batch_is_replayed(
    spark: Any, catalog: Any, catalog_options: dict[str, str], tmp_path: Path, entry: str
) -> None:
    from icepark.spark import write_stream

    table = catalog.create_table("db.sink", SCHEMA, partition_by=["p"])
    source = tmp_path / "in"
    _json_input(source, [list(range(0, 10)), list(range(10, 20)), list(range(20, 30))])
    checkpoint = tmp_path / "chk"

    def run() -> Any:
        df = _file_stream(spark, source)
        if entry == "format":
            query = (
                df.writeStream.format("icepark")
                .options(**catalog_options, table="db.sink")
                .option("checkpointLocation", str(checkpoint))
                .trigger(availableNow=True)
                .start()
            )
        else:
            query = write_stream(
                df,
                "db.sink",
                catalog=catalog_options,
                checkpoint_location=str(checkpoint),
                trigger={"availableNow": True},
            )
        query.awaitTermination(180)
        assert query.exception() is None
        return query

    query = run()
    summaries = _summaries(table)
    assert [e for _, e in summaries] == ["0", "1", "2"]
    assert {q for q, _ in summaries} == {str(query.id)}
    # as if the driver died after committing batch 2 and before Spark recorded it
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink(missing_ok=True)
    run()
    assert _summaries(table) == summaries  # the replayed epoch committed nothing
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(30))
    # new input continues with the next epoch
    _json_input(source, [list(range(0, 10)), list(range(10, 20)), list(range(20, 30)), [30]])
    run()
    assert [e for _, e in _summaries(table)] == ["0", "1", "2", "3"]
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(31))
    # the files written for the skipped replay were deleted: every data file is live
    live = {t.file.file_path.removeprefix("file:") for t in table.scan().plan_files()}
    data = Path(table.location.removeprefix("file:")) / "data"
    assert {str(p) for p in data.rglob("*.parquet")} == live


def test_stopping_write_stream_mid_batch_stops_cleanly_and_a_restart_writes_the_batch(
    spark: Any, catalog: Any, tmp_path: Path
) -> None:
    from icepark.spark import write_stream

    rows = 400_000  # a batch's write takes long enough to be stopped in the middle
    table = catalog.create_table("db.stopped", SCHEMA)
    checkpoint = str(tmp_path / "chk")
    tracker = spark.sparkContext.statusTracker()

    def start() -> Any:
        df = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", rows)
            .option("numPartitions", 2)
            .load()
            .selectExpr("value AS id", "CAST(value % 3 AS INT) AS p")
        )
        return write_stream(df, table, checkpoint_location=checkpoint)

    query = start()
    _until(lambda: bool(query.lastProgress))  # batch 0 committed, batch 1 under way
    deadline = time.monotonic() + 60
    while not (query.status["isTriggerActive"] and tracker.getActiveJobsIds()):
        assert time.monotonic() < deadline, "no batch was seen writing"
        time.sleep(0.005)
    query.stop()  # while a batch's write job runs
    # Spark took it for a stop: a Py4J error's full text overflowed its stream thread's stack
    assert query.status["message"] == "Stopped"
    assert query.exception() is None
    committed = len(table.refresh().snapshots())
    query = start()  # from the checkpoint: the stopped batch is written again, once
    _until(lambda: bool(query.lastProgress) and query.lastProgress["batchId"] >= committed)
    query.stop()  # mid-batch again, or not: either way what is committed is whole
    assert query.status["message"] == "Stopped"
    ids = table.refresh().scan().to_arrow().column("id").to_pylist()
    epochs = [e for _, e in _summaries(table)]
    assert epochs == [str(e) for e in range(len(epochs))] and len(epochs) > committed
    assert sorted(ids) == list(range(len(epochs) * rows))


def test_sink_complete_mode_and_options(
    spark: Any, catalog: Any, catalog_options: dict[str, str], tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    counts = catalog.create_table(
        "db.counts", pa.schema([pa.field("p", pa.int32()), pa.field("n", pa.int64())])
    )
    source = tmp_path / "in"
    _json_input(source, [list(range(0, 6)), list(range(6, 9))])
    agg = _file_stream(spark, source).groupBy("p").agg(F.count("*").alias("n"))
    query = (
        agg.writeStream.format("icepark")
        .options(**catalog_options, table="db.counts")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .option("snapshot-property.owner", "tests")
        .option("write.parquet.compression-codec", "snappy")
        .outputMode("complete")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert query.exception() is None
    rows = sorted(tuple(r.values()) for r in counts.refresh().scan().to_arrow().to_pylist())
    assert rows == [(0, 3), (1, 3), (2, 3)]  # the last batch's full result, not a sum
    last = counts.current_snapshot()
    assert last.summary.get("owner") == "tests"
    assert last.summary.get(EPOCH_ID) == "1"
    # write_stream in complete mode: the same
    from icepark.spark import write_stream

    again = catalog.create_table("db.counts2", counts.schema())
    query = write_stream(
        agg,
        again,
        mode="complete",
        checkpoint_location=str(tmp_path / "chk3"),
        trigger={"availableNow": True},
    )
    query.awaitTermination(180)
    assert query.exception() is None
    assert sorted(tuple(r.values()) for r in again.refresh().scan().to_arrow().to_pylist()) == rows
    bad = (
        agg.writeStream.format("icepark")
        .options(**catalog_options, table="db.counts", bogus="1")
        .option("checkpointLocation", str(tmp_path / "chk2"))
        .outputMode("complete")
        .trigger(availableNow=True)
        .start()
    )
    assert "Unknown option 'bogus'" in _error(bad)


def test_catalog_options_of_a_catalog_made_directly(tmp_path: Path) -> None:
    """read_stream(spark, table) passes the table's catalog to the source by options: a
    catalog made without load_catalog must keep its type."""
    from icepark.catalog import FileSystemCatalog
    from icepark.spark.datasource import catalog_options
    from icepark.spark.tables import catalog_from_options

    catalog = FileSystemCatalog("direct", warehouse=str(tmp_path / "wh"))
    assert isinstance(catalog_from_options(catalog_options(catalog)), FileSystemCatalog)


def test_catalog_options_keep_a_sql_catalogs_name(tmp_path: Path) -> None:
    """A SQL catalog keeps its tables under its name: the options name it, so that the
    source and the sink (in other processes) find the tables of a catalog named e.g. 'lake'."""
    from icepark.catalog import load_catalog
    from icepark.spark.datasource import catalog_options
    from icepark.spark.tables import catalog_from_options

    props = {"uri": f"sqlite:///{tmp_path}/c.db", "warehouse": str(tmp_path / "wh")}
    catalog = load_catalog("lake", properties=props)
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    again = catalog_from_options(catalog_options(catalog))
    assert again.name == "lake" and again.table_exists("db.t")
