"""The reference engine's streaming timings (imported by bench/ref_timings.py, which runs
with .venv-ref's python): its Iceberg sink on the same ``rate-micro-batch`` input as icepark's
(bench/streaming.py) and its Iceberg source catching up on the same append table."""

import shutil
import tempfile
import time

SINK_BATCHES = 10


def _until_batches(query, batches):
    while True:
        progress = query.lastProgress
        if progress and progress["batchId"] >= batches - 1:
            return
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        time.sleep(0.05)


def streaming(spark, runs, rows, appends_table, cols):
    out = {}
    scratch = tempfile.mkdtemp(prefix="ref-bench-stream-")
    try:
        times = []
        for i in range(runs + 1):
            name = f"ref.bench.ssink{i}"
            spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
            spark.sql(
                f"CREATE TABLE {name} (id bigint, ts timestamp, category string, amount double,"
                " qty int, flag boolean, note string) USING iceberg PARTITIONED BY (days(ts))"
            )
            df = (
                spark.readStream.format("rate-micro-batch")
                .option("rowsPerBatch", rows)
                .option("numPartitions", 2)
                .load()
                .selectExpr("value AS id")
                .selectExpr(*cols)
            )
            started = time.perf_counter()
            query = (
                df.writeStream.format("iceberg")
                .outputMode("append")
                .option("fanout-enabled", "true")
                .option("checkpointLocation", f"{scratch}/sink{i}")
                .toTable(name)
            )
            _until_batches(query, SINK_BATCHES)
            took = time.perf_counter() - started
            query.stop()
            if i:  # the first is the warm-up
                times.append(took)
            count = spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0]
            out["check: sink"] = [count]
            spark.sql(f"DROP TABLE {name} PURGE")
        out[f"sink {rows * SINK_BATCHES // 1_000_000}M rows, {SINK_BATCHES} batches"] = times

        times = []
        for i in range(runs + 1):
            started = time.perf_counter()
            query = (
                spark.readStream.table(f"ref.{appends_table}")
                .writeStream.format("noop")
                .option("checkpointLocation", f"{scratch}/source{i}")
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            took = time.perf_counter() - started
            if i:
                times.append(took)
            out["check: catch-up"] = [sum(p["numInputRows"] for p in query.recentProgress)]
        files = int(appends_table.rsplit("_", 1)[-1])
        out[f"source catch-up, {files:,} files"] = times
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out
