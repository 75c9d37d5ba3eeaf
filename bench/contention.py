"""Appends under contention: N processes each load one table once, then append single-row
batches in a loop, through one SQL catalog (SQLite file or PostgreSQL); icepark and PyIceberg
on the same harness. Every process uses the table's default commit properties.

    python -m bench.contention                          # icepark and PyIceberg, SQLite, 1/4/8
    python -m bench.contention --writers 8 --appends 50 --engines icepark --uri postgresql://...

Prints, per engine and writer count: appends landed (of attempted), whether the table's rows
are exactly the landed appends, total commits per second, and p50/p99 commit latency (ms).
The figures are also returned by :func:`run` for the bench's summary.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("worker", pa.int32())])


@dataclass
class Result:
    engine: str
    catalog: str
    writers: int
    appends: int
    landed: int
    rows_exact: bool
    seconds: float
    commits_per_s: float
    p50_ms: float
    p99_ms: float
    errors: list[str]


def _row(worker: int, i: int, appends: int) -> pa.Table:
    ident = worker * appends + i
    return pa.table(
        {"id": pa.array([ident], pa.int64()), "worker": pa.array([worker], pa.int32())},
        schema=SCHEMA,
    )


def _icepark_worker(uri: str, warehouse: str, worker: int, appends: int, start: float) -> Any:
    from icepark.catalog import SqlCatalog

    table = SqlCatalog("bench", uri=uri, warehouse=warehouse).load_table("db.t")
    return _loop(lambda data: table.append(data), worker, appends, start)


def _pyiceberg_worker(uri: str, warehouse: str, worker: int, appends: int, start: float) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    table = PySqlCatalog("bench", uri=uri, warehouse=f"file://{warehouse}").load_table("db.t")
    return _loop(lambda data: table.append(data), worker, appends, start)


def _loop(append: Any, worker: int, appends: int, start: float) -> Any:
    while time.time() < start:  # every process starts appending at the same moment
        time.sleep(0.001)
    landed, latencies, errors = [], [], []
    for i in range(appends):
        t0 = time.perf_counter()
        try:
            append(_row(worker, i, appends))
            landed.append(worker * appends + i)
            latencies.append((time.perf_counter() - t0) * 1000)
        except Exception as exc:  # counted, as a pipeline would see it
            errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")
    return landed, latencies, errors


def _create(engine: str, uri: str, warehouse: Path) -> None:
    if engine == "icepark":
        from icepark.catalog import SqlCatalog

        cat = SqlCatalog("bench", uri=uri, warehouse=str(warehouse))
        cat.create_namespace_if_not_exists("db")
        if cat.table_exists("db.t"):
            cat.drop_table("db.t")
        cat.create_table("db.t", SCHEMA)
    else:
        from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

        py = PySqlCatalog("bench", uri=uri, warehouse=f"file://{warehouse}")
        py.create_namespace_if_not_exists("db")
        if py.table_exists("db.t"):
            py.drop_table("db.t")
        py.create_table("db.t", SCHEMA)


def _count(engine: str, uri: str, warehouse: Path) -> list[int]:
    if engine == "icepark":
        from icepark.catalog import SqlCatalog

        table = SqlCatalog("bench", uri=uri, warehouse=str(warehouse)).load_table("db.t")
        return sorted(table.scan().to_arrow().column("id").to_pylist())
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    py = PySqlCatalog("bench", uri=uri, warehouse=f"file://{warehouse}").load_table("db.t")
    return sorted(py.scan().to_arrow().column("id").to_pylist())


def run_one(engine: str, uri: str | None, writers: int, appends: int, root: Path) -> Result:
    """One engine, one writer count, on a fresh table."""
    warehouse = root / f"{engine}-{writers}"
    warehouse.mkdir(parents=True, exist_ok=True)
    uri = uri or f"sqlite:///{root}/{engine}-{writers}.db"
    _create(engine, uri, warehouse)
    target = _icepark_worker if engine == "icepark" else _pyiceberg_worker
    ctx = mp.get_context("spawn")
    start = time.time() + 3.0  # the processes' imports are done by then
    with ctx.Pool(writers) as pool:
        jobs = [
            pool.apply_async(target, (uri, str(warehouse), w, appends, start))
            for w in range(writers)
        ]
        results = [j.get(timeout=3600) for j in jobs]
    seconds = time.time() - start
    landed = sorted(i for r in results for i in r[0])
    latencies = sorted(x for r in results for x in r[1])
    errors = [e for r in results for e in r[2]]
    rows = _count(engine, uri, warehouse)

    def pct(p: float) -> float:
        if not latencies:
            return float("nan")
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))]

    return Result(
        engine,
        "postgresql" if uri.startswith("postgresql") else "sqlite",
        writers,
        writers * appends,
        len(landed),
        rows == landed,
        round(seconds, 2),
        round(len(landed) / seconds, 2),
        round(statistics.median(latencies), 1) if latencies else float("nan"),
        round(pct(0.99), 1),
        errors[:3],
    )


def run(
    engines: list[str], writers: list[int], appends: int, uri: str | None = None
) -> list[Result]:
    root = Path(tempfile.mkdtemp(prefix="icepark-contention-"))
    try:
        return [run_one(e, uri, w, appends, root) for w in writers for e in engines]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default="icepark,pyiceberg")
    parser.add_argument("--writers", default="1,4,8")
    parser.add_argument("--appends", type=int, default=50)
    parser.add_argument("--uri", default=None, help="a PostgreSQL URL (default: SQLite files)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = run(
        args.engines.split(","), [int(w) for w in args.writers.split(",")], args.appends, args.uri
    )
    if args.json:
        print(json.dumps([asdict(r) for r in results]))
        return
    print(
        f"{'engine':10} {'catalog':10} {'writers':>7} {'landed':>9} {'exact':>5} "
        f"{'commits/s':>9} {'p50 ms':>8} {'p99 ms':>8}"
    )
    for r in results:
        print(
            f"{r.engine:10} {r.catalog:10} {r.writers:>7} {r.landed:>4}/{r.appends:<4} "
            f"{'yes' if r.rows_exact else 'NO':>5} {r.commits_per_s:>9} {r.p50_ms:>8} "
            f"{r.p99_ms:>8}"
        )
        for e in r.errors:
            print(f"    e.g. {e}")


if __name__ == "__main__":
    main()
