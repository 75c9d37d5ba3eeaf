"""A streaming driver of its own, for the tests that kill it (SIGKILL) and restart it from its
checkpoint (tests/spark/streaming/test_spark_stream_interop.py). Run with the project's interpreter:

    stream_job.py source WAREHOUSE TABLE CHECKPOINT OUT
        follows TABLE (a file-system catalog at WAREHOUSE) with the icepark source
        (1 s processing-time trigger, at most 4 files per micro-batch); each micro-batch's
        rows go to OUT/batch-<id>.json (replacing the file when Spark replays the batch)
    stream_job.py sink WAREHOUSE TABLE CHECKPOINT ROWS_PER_SECOND
        streams Spark's rate source into TABLE through format("icepark") and into
        TABLE_fb through icepark.spark.write_stream (checkpoints CHECKPOINT/format and
        CHECKPOINT/foreach), 1 s processing-time trigger

    stream_job.py both WAREHOUSE TABLE CHECKPOINT OUT SINK_TABLE ROWS_PER_SECOND
        the two above in one driver (checkpoints CHECKPOINT/source and CHECKPOINT/sink): one
        JVM started and killed instead of two

Prints ``READY`` once the queries run, then runs until killed.
"""

from __future__ import annotations

import json
import os
import sys
import time


def _session():  # type: ignore[no-untyped-def]
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("icepark-stream-job")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "768m")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _forever() -> None:
    print("READY", flush=True)
    while True:
        time.sleep(1)


def source(warehouse: str, table: str, checkpoint: str, out: str, *, wait: bool = True) -> None:
    import icepark.spark as ispark

    spark = _session()
    os.makedirs(out, exist_ok=True)

    def save(df, batch_id):  # type: ignore[no-untyped-def]
        rows = sorted(r.id for r in df.select("id").collect())
        tmp = os.path.join(out, f".batch-{batch_id}.tmp")
        with open(tmp, "w") as f:
            json.dump(rows, f)
        os.replace(tmp, os.path.join(out, f"batch-{batch_id}.json"))

    df = ispark.read_stream(
        spark,
        table,
        catalog={"type": "filesystem", "warehouse": warehouse},
        streaming_max_files_per_micro_batch=4,
    )
    query = (
        df.writeStream.foreachBatch(save)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    if wait:
        _forever()
    # the source's Python runner connects once the first micro-batch is planned: let it start
    # before other queries start theirs (a loaded machine makes a crowd of them time out)
    deadline = time.monotonic() + 180
    while query.lastProgress is None and query.isActive and time.monotonic() < deadline:
        time.sleep(0.5)


def sink(warehouse: str, table: str, checkpoint: str, rate: str) -> None:
    import icepark.spark as ispark

    spark = _session()
    options = {"type": "filesystem", "warehouse": warehouse}
    ispark.register(spark)
    df = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", rate)
        .option("numPartitions", "2")
        .load()
    )
    (
        df.writeStream.format("icepark")
        .option("table", table)
        .options(**options)
        .option("checkpointLocation", f"{checkpoint}/format")
        .trigger(processingTime="1 second")
        .start()
    )
    ispark.write_stream(
        df,
        f"{table}_fb",
        catalog=options,
        checkpoint_location=f"{checkpoint}/foreach",
        trigger={"processingTime": "1 second"},
    )
    _forever()


def both(warehouse: str, table: str, checkpoint: str, out: str, sink_table: str, rate: str) -> None:
    source(warehouse, table, f"{checkpoint}/source", out, wait=False)
    sink(warehouse, sink_table, f"{checkpoint}/sink", rate)


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    {"source": source, "sink": sink, "both": both}[mode](*args)
