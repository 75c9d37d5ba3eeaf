"""Streaming benchmarks (``python -m bench.run --only streaming``): icepark's sink and source
beside Spark's own file sink and the reference engine's Iceberg streaming (bench/README.md).

* sink throughput: ``rate-micro-batch`` micro-batches of 500,000 rows (the bench columns
  computed from the row number) into a table partitioned by ``day(ts)``, until 10 batches
  (5M rows; 1M with ``--small``: batches of 100,000) are committed; icepark through
  ``write_stream`` (foreachBatch on the native write path) and through ``format("icepark")``
  (the Python stream writer), Spark's ``format("parquet").partitionBy`` file sink, and the
  reference engine's ``format("iceberg")`` sink (``fanout-enabled``);
* source catch-up: a query started at the first of 200 append snapshots (10,000 files; 1,000
  with ``--small``) reads everything with ``Trigger.AvailableNow`` into the ``noop`` sink;
  icepark's source and the reference engine's;
* latency: a query with a 1 s trigger follows a table while 50 small commits land about a
  second apart; the time from each commit returning to its rows reaching ``foreachBatch``,
  median (target: under 2 s).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

SNAPSHOTS = 200
SINK_BATCHES = 10


def sink_rows(small: bool) -> int:
    return 100_000 if small else 500_000


def catchup_files(small: bool) -> int:
    return 1_000 if small else 10_000


def ensure_appends_table(warehouse: Path, small: bool) -> str:
    """``bench.appends``: SNAPSHOTS append snapshots of (files / SNAPSHOTS) small files each,
    written once by icepark on this machine (a marker says it is complete)."""
    import pyarrow as pa

    from icepark.catalog import FileSystemCatalog

    name = f"bench.appends_{catchup_files(small)}"
    marker = warehouse / f".{name}-complete"
    catalog = FileSystemCatalog("bench", warehouse=str(warehouse))
    if marker.exists():
        return name
    if catalog.table_exists(name):
        catalog.drop_table(name, purge=True)
    per_snapshot = catchup_files(small) // SNAPSHOTS
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("part", pa.int32()),
            pa.field("amount", pa.float64()),
            pa.field("note", pa.string()),
        ]
    )
    table = catalog.create_table(name, schema, partition_by=["part"])
    rows_per_file = 100
    print(f"building {name}: {SNAPSHOTS} appends of {per_snapshot} files ...", flush=True)
    for s in range(SNAPSHOTS):
        n = per_snapshot * rows_per_file
        ids = list(range(s * n, (s + 1) * n))
        table.append(
            pa.table(
                {
                    "id": ids,
                    "part": [i % per_snapshot for i in ids],
                    "amount": [i / 7 for i in ids],
                    "note": [f"note-{i}" for i in ids],
                },
                schema=schema,
            )
        )
    marker.write_text("ok\n")
    return name


def _until_batches(query: Any, batches: int, timeout: float = 1800, poll: float = 0.05) -> None:
    """Until ``batches`` micro-batches have completed (Spark reports a batch's progress when
    it ends; batches run back to back, so the query is then stopped mid-batch), asking every
    ``poll`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        progress = query.lastProgress
        if progress and progress["batchId"] >= batches - 1:
            return
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(poll)


def _stop_idle(query: Any) -> None:
    deadline = time.monotonic() + 120
    while query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()


def _rate(spark: Any, rows: int, cols: list[str]) -> Any:
    return (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows)
        .option("numPartitions", 2)
        .load()
        .selectExpr("value AS id")
        .selectExpr(*cols)
    )


def measure(
    spark: Any, warehouse: Path, runs: int, small: bool, cols: list[str], schema: Any
) -> dict[str, dict[str, list[float]]]:
    from icepark.catalog import FileSystemCatalog
    from icepark.spark import read_stream, register, write_stream

    register(spark)
    out: dict[str, dict[str, list[float]]] = {}
    rows = sink_rows(small)
    scratch = Path(tempfile.mkdtemp(prefix="icepark-bench-stream-"))
    try:
        catalog = FileSystemCatalog("stream", warehouse=str(scratch / "wh"))
        catalog.create_namespace("s")
        options = {"type": "filesystem", "warehouse": str(scratch / "wh")}
        counter = iter(range(1000))

        def sink(kind: str) -> float:
            n = next(counter)
            chk = str(scratch / f"chk{n}")
            df = _rate(spark, rows, cols)
            started = time.perf_counter()
            if kind == "native":
                query = (
                    df.withColumn("ts_day", df["ts"].cast("date"))
                    .writeStream.format("parquet")
                    .partitionBy("ts_day")
                    .option("compression", "zstd")
                    .option("path", str(scratch / f"native{n}"))
                    .option("checkpointLocation", chk)
                    .start()
                )
            else:
                table = catalog.create_table(f"s.t{n}", schema, partition_by=["day(ts)"])
                if kind == "write_stream":
                    query = write_stream(df, table, checkpoint_location=chk, fanout=True)
                else:
                    query = (
                        df.writeStream.format("icepark")
                        .options(**options, table=f"s.t{n}")
                        .option("checkpointLocation", chk)
                        .start()
                    )
            _until_batches(query, SINK_BATCHES)
            took = time.perf_counter() - started
            query.stop()
            if kind != "native":
                table = catalog.load_table(f"s.t{n}")
                committed = table.scan().count()
                if committed < rows * SINK_BATCHES:
                    print(f"CHECK FAILED: {kind} committed {committed} rows", flush=True)
            return took

        times: dict[str, list[float]] = {"icepark": [], "format": [], "native": []}
        for kind in ("write_stream", "format", "native"):
            sink(kind)  # warm-up
        for r in range(runs):
            order = [("write_stream", "icepark"), ("format", "format"), ("native", "native")]
            for kind, key in order[r % 3 :] + order[: r % 3]:
                times[key].append(sink(kind))
        out[f"sink {rows * SINK_BATCHES // 1_000_000}M rows, {SINK_BATCHES} batches"] = {
            "icepark": times["icepark"],
            "native": times["native"],
            "icepark format(icepark) sink": times["format"],
        }
        print(f"sink: {times}", flush=True)

        name = ensure_appends_table(warehouse, small)
        source = FileSystemCatalog("bench", warehouse=str(warehouse)).load_table(name)
        first = min(source.snapshots(), key=lambda s: s.sequence_number).snapshot_id

        def catchup() -> float:
            chk = str(scratch / f"chk{next(counter)}")
            df = read_stream(spark, source, start_snapshot_id=first)
            started = time.perf_counter()
            query = (
                df.writeStream.format("noop")
                .option("checkpointLocation", chk)
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            took = time.perf_counter() - started
            read = sum(p["numInputRows"] for p in query.recentProgress)
            expected = catchup_files(small) * 100
            if read != expected:
                print(f"CHECK FAILED: catch-up read {read} rows, not {expected}", flush=True)
            return took

        catchup()
        out[f"source catch-up, {catchup_files(small):,} files"] = {
            "icepark": [catchup() for _ in range(runs)]
        }
        print(f"catch-up: {out[f'source catch-up, {catchup_files(small):,} files']}", flush=True)

        out["latency commit-to-visible (1 s trigger)"] = {
            "icepark": _latency(spark, catalog, scratch, read_stream)
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def _latency(spark: Any, catalog: Any, scratch: Path, read_stream: Any) -> list[float]:
    import pyarrow as pa

    schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
    table = catalog.create_table("s.latency", schema)
    table.append(pa.table({"id": [-1], "v": ["start"]}, schema=schema))
    committed: dict[int, float] = {}
    seen: dict[int, float] = {}

    def record(df: Any, batch_id: int) -> None:
        ids = [r.id for r in df.select("id").collect()]
        now = time.time()
        for i in ids:
            seen.setdefault(i, now)

    query = (
        read_stream(spark, table)
        .writeStream.foreachBatch(record)
        .option("checkpointLocation", str(scratch / "chk-latency"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        while -1 not in seen:
            time.sleep(0.1)
        writer = catalog.load_table("s.latency")

        def commit_loop() -> None:
            for i in range(50):
                writer.append(pa.table({"id": [i], "v": [f"c{i}"]}, schema=schema))
                committed[i] = time.time()
                time.sleep(1.1)

        thread = threading.Thread(target=commit_loop)
        thread.start()
        thread.join()
        deadline = time.monotonic() + 60
        while len([i for i in committed if i in seen]) < 50 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        _stop_idle(query)
    latencies = [seen[i] - committed[i] for i in committed if i in seen]
    if len(latencies) < 50:
        print(f"CHECK FAILED: {50 - len(latencies)} commits never seen", flush=True)
    print(
        f"latency over {len(latencies)} commits: median {statistics.median(latencies):.2f} s,"
        f" max {max(latencies):.2f} s",
        flush=True,
    )
    return latencies
