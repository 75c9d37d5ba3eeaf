"""icepark on Spark Connect against icepark on a classic session (``python -m bench.run --only
connect``; bench/README.md): the Spark rows of the standard set, each timed through a classic
session and through a Connect session of the same Spark application (the bench's session
hosts a Connect server, ``SparkConnectPlugin`` on 127.0.0.1), alternating. Target: Connect
within 1.1x of classic.

Rows: the full-scan aggregate, 2 of 30 days, the point query on 10,000 files, a partitioned
write of 5M rows, a merge-on-read delete of 1% and a merge of 100k rows into 5M (each run on
a fresh table written before the timing), a ``write_stream`` sink of 10 micro-batches.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.timing import alternate

_MODE = "SPARK_CONNECT_MODE_ENABLED"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _mode(connect: bool) -> Iterator[None]:
    """pyspark builds Connect objects (``connect``) or classic ones in the block."""
    before = os.environ.pop(_MODE, None)
    if connect:
        os.environ[_MODE] = "1"
    try:
        yield
    finally:
        os.environ.pop(_MODE, None)
        if before is not None:
            os.environ[_MODE] = before


def connect_session(port: int) -> Any:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from icepark.spark import register

    with _mode(True):
        session = ConnectSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        for key, value in {
            "spark.sql.shuffle.partitions": "4",
            "spark.sql.session.timeZone": "UTC",
        }.items():
            session.conf.set(key, value)
        register(session)
    return session


def _both(fn: Callable[[Any], Any], classic: Any, connect: Any) -> dict[str, Callable[[], Any]]:
    def on_classic() -> Any:
        with _mode(False):
            return fn(classic)

    def on_connect() -> Any:
        with _mode(True):
            return fn(connect)

    return {"classic": on_classic, "connect": on_connect}


def measure(
    classic: Any,
    connect: Any,
    warehouse: Path,
    runs: int,
    point: int,
    write_rows: int,
    merge_rows: int,
    cols: list[str],
    small: bool,
) -> dict[str, dict[str, list[float]]]:
    from pyspark.sql import functions as F

    from bench.streaming import SINK_BATCHES, _rate, _until_batches, sink_rows
    from icepark.catalog import FileSystemCatalog
    from icepark.spark import delete, merge, read, write, write_stream

    catalog = FileSystemCatalog("bench", warehouse=str(warehouse))
    wide, many = catalog.load_table("bench.wide"), catalog.load_table("bench.many")
    schema = wide.schema()
    two_days = "ts >= '2024-01-05T00:00:00+00:00' and ts < '2024-01-07T00:00:00+00:00'"

    def aggs() -> list[Any]:
        return [F.count("*"), F.sum("amount"), F.max("note")]

    out: dict[str, dict[str, list[float]]] = {}

    def row(name: str, fn: Callable[[Any], Any]) -> None:
        times = alternate(_both(fn, classic, connect), runs)
        out[f"{name} (Connect)"] = {"icepark": times["connect"], "classic": times["classic"]}
        print(f"{name}: {times}", flush=True)

    row("full-scan aggregate", lambda s: read(s, wide).agg(*aggs()).collect())
    row("2 of 30 days aggregate", lambda s: read(s, wide, filter=two_days).agg(*aggs()).collect())
    row("point query (many files)", lambda s: read(s, many, filter=f"id = {point}").collect())

    scratch = Path(tempfile.mkdtemp(prefix="icepark-bench-connect-"))
    try:
        writes = FileSystemCatalog("cwrites", warehouse=str(scratch / "wh"))
        writes.create_namespace("w")
        counter = iter(range(10_000))

        def table(props: dict[str, str] | None = None) -> Any:
            return writes.create_table(
                f"w.t{next(counter)}", schema, partition_by=["day(ts)"], properties=props or {}
            )

        def source(s: Any) -> Any:
            return s.range(write_rows).selectExpr(*cols)

        row(
            "partitioned write",
            lambda s: write(source(s), table({"write.distribution-mode": "none"})),
        )

        from bench.run import ROW_LEVEL_PROPS

        # fresh tables for the row-level rows, written on the classic session, not timed
        def fresh_pool(n: int) -> list[Any]:
            with _mode(False):
                df = source(classic)
                made = []
                for _ in range(n):
                    t = table(ROW_LEVEL_PROPS)
                    write(df, t)
                    made.append(writes.load_table(t.name))
            return made

        pool = fresh_pool(2 * (runs + 1))
        row("MoR delete 1%", lambda s: delete(s, pool.pop(), F.col("id") % 100 == 7))
        half = merge_rows // 2
        step = write_rows // half

        def merged(s: Any) -> Any:
            ids = s.range(half).select((F.col("id") * step + 3).alias("id"))
            ids = ids.unionByName(s.range(write_rows, write_rows + half))
            src = ids.selectExpr(*cols).withColumn("amount", F.col("amount") + 1)
            return merge(
                s, pool.pop(), src, on="id", when_matched_update="*", when_not_matched_insert="*"
            )

        pool = fresh_pool(2 * (runs + 1))
        row(f"MoR merge {merge_rows // 1000}k", merged)

        rows = sink_rows(small)

        def sink(s: Any) -> None:
            n = next(counter)
            target = table()
            query = write_stream(
                _rate(s, rows, cols), target, checkpoint_location=str(scratch / f"chk{n}"),
                fanout=True,
            )  # fmt: skip
            try:
                # asked every 0.25 s: on Connect each ask is two RPCs, which at the streaming
                # bench's 0.05 s took CPU from the server's batches on this 2-core machine
                _until_batches(query, SINK_BATCHES, poll=0.25)
            finally:
                query.stop()

        started = time.perf_counter()
        row(f"sink {rows * SINK_BATCHES // 1_000_000}M rows, {SINK_BATCHES} batches", sink)
        print(f"sink rows took {time.perf_counter() - started:.0f} s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out
