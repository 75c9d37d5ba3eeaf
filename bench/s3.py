"""Tables on S3 (a moto server on loopback) from Spark, beside the same tables on local disk.

    python -m bench.s3 [--rows N] [--write-rows N] [--runs N]

Builds a 7-column table of ``--rows`` rows (bench.run's columns) on S3 and on local disk
(SQLite catalogs; on S3 Spark writes through icepark's Python tasks, as the pip pyspark has
no S3A), then times, median of ``--runs``:

* a read of 2 of the 7 columns (``sum(amount), max(qty)``) through Spark (local[2]) from S3
  and from local disk, and icepark's one-machine read of the same columns from S3;
* a partitioned (``day(ts)``) write of ``--write-rows`` rows through Spark to S3 and to local
  disk.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from bench.run import COLS

ONE_MACHINE = "read 2/7 columns, one machine, S3"
_CREDENTIALS = {
    "s3.access-key-id": "testing",
    "s3.secret-access-key": "testing",
    "s3.region": "us-east-1",
}


def _moto(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
            return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    sys.exit("moto did not start")


def _median(runs: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--write-rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=5099)
    args = parser.parse_args()

    import pyarrow.compute as pc
    import pyarrow.fs as pafs

    from icepark import spark as ispark
    from icepark.catalog import load_catalog

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    endpoint = f"http://127.0.0.1:{args.port}"
    moto = _moto(args.port)
    work = tempfile.mkdtemp(prefix="icepark-bench-s3-")
    try:
        pafs.S3FileSystem(
            access_key="testing",
            secret_key="testing",
            endpoint_override=f"127.0.0.1:{args.port}",
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
        ).create_dir("bench")
        s3 = load_catalog(
            "s3",
            properties={
                "uri": f"sqlite:///{work}/s3.db",
                "warehouse": "s3://bench/wh",
                "s3.endpoint": endpoint,
                **_CREDENTIALS,
            },
        )
        local = load_catalog(
            "local", properties={"uri": f"sqlite:///{work}/local.db", "warehouse": f"{work}/wh"}
        )
        spark = ispark.session(
            "local[2]", "icepark-bench-s3", {"spark.ui.showConsoleProgress": "false"}
        )
        spark.sparkContext.setLogLevel("ERROR")
        source = spark.range(args.rows).selectExpr(*[c.strip() for c in _split(COLS)])
        tables = {}
        for name, catalog in (("s3", s3), ("local", local)):
            catalog.create_namespace_if_not_exists("b")
            started = time.perf_counter()
            tables[name] = ispark.create_table_from(spark, source, "b.t", catalog=catalog)
            print(f"built {name}: {time.perf_counter() - started:.1f} s", flush=True)

        def spark_read(table: Any) -> Callable[[], Any]:
            return lambda: (
                ispark.read(spark, table, columns=["amount", "qty"])
                .selectExpr("sum(amount)", "max(qty)")
                .collect()
            )

        def one_machine() -> Any:
            arrow = tables["s3"].scan(columns=["amount", "qty"]).to_arrow()
            return pc.sum(arrow["amount"]), pc.max(arrow["qty"])

        results = {
            "read 2/7 columns, Spark, S3": _median(args.runs, spark_read(tables["s3"])),
            "read 2/7 columns, Spark, local disk": _median(args.runs, spark_read(tables["local"])),
            ONE_MACHINE: _median(args.runs, one_machine),
        }
        write_source = source.limit(args.write_rows)
        for name, catalog in (("s3", s3), ("local", local)):
            counter = iter(range(args.runs))

            def write(catalog: Any = catalog, counter: Any = counter) -> None:
                ispark.create_table_from(
                    spark,
                    write_source,
                    f"b.w{next(counter)}",
                    partition_by=["day(ts)"],
                    catalog=catalog,
                )

            label = "S3" if name == "s3" else "local disk"
            results[f"partitioned write, Spark, {label}"] = _median(args.runs, write)
        print(f"rows {args.rows:,} (writes {args.write_rows:,}), median of {args.runs}")
        for label, seconds in results.items():
            print(f"  {label:40s} {seconds:7.2f} s")
        spark_s3 = results["read 2/7 columns, Spark, S3"]
        print(f"  Spark S3 / one machine S3: {spark_s3 / results[ONE_MACHINE]:.2f}x")
    finally:
        moto.terminate()
        moto.wait(timeout=30)


def _split(cols: str) -> list[str]:
    """bench.run's column list split at its top-level commas."""
    out, depth, current = [], 0, ""
    for ch in cols:
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    return [*out, current]


if __name__ == "__main__":
    main()
