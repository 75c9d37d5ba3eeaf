"""The REST catalog's cost: the same operations through ``icepark serve`` and directly on its
SQL catalog, on loopback, one run.

    python -m bench.rest [--appends 200] [--snapshots 1000] [--writers 8] [--json]

Three measurements, each on a fresh SQLite catalog in a temporary folder, the server a real
``icepark --uri ... serve`` process on a free 127.0.0.1 port and the client icepark's
``RestCatalog``:

* **commit**: ``--appends`` single-row appends in a row by one client, each timed from the
  call to its return (the data file, manifest and manifest list are written by the client in
  both cases; through REST the commit is ``POST .../tables/t`` and the server writes the
  metadata file and swaps the pointer): p50 and p99, through REST and directly, on two tables
  of the same catalog;
* **load**: ``load_table`` of a table with ``--snapshots`` snapshots (built directly, not
  timed), 200 times through REST and 200 times directly, interleaved;
* **writers**: ``--writers`` processes x 50 appends racing on one table (the harness of
  :mod:`bench.contention`: each process loads the table once and appends single-row batches
  from a common start time), through the server and directly: total commits per second,
  appends landed and whether the rows are exactly the landed appends.

Prints a table of absolute milliseconds and ratios (REST / direct); :func:`run` returns them.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.contention import SCHEMA, _loop, _row

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serve(uri: str, warehouse: Path, log: Path) -> Iterator[str]:
    """``icepark --uri URI --warehouse W serve --port P`` as its own process; yields its URL."""
    port = _free_port()
    cmd = [sys.executable, "-c", "from icepark.cli.main import main; main()"]
    cmd += ["--uri", uri, "--warehouse", str(warehouse), "serve", "--port", str(port)]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    url = f"http://127.0.0.1:{port}"
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text()[-2000:]
                    raise RuntimeError(f"icepark serve did not start: {tail}") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def _summary(rest: list[float], direct: list[float]) -> dict[str, float]:
    out = {
        "rest_p50_ms": statistics.median(rest),
        "rest_p99_ms": _pct(rest, 0.99),
        "direct_p50_ms": statistics.median(direct),
        "direct_p99_ms": _pct(direct, 0.99),
    }
    out["added_p50_ms"] = out["rest_p50_ms"] - out["direct_p50_ms"]
    out["ratio_p50"] = out["rest_p50_ms"] / out["direct_p50_ms"]
    out["ratio_p99"] = out["rest_p99_ms"] / out["direct_p99_ms"]
    return {k: round(v, 2) for k, v in out.items()}


def _timed(fn: Callable[..., Any], *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - t0) * 1000


def commit_latency(root: Path, appends: int) -> dict[str, float]:
    import icepark

    uri, warehouse = f"sqlite:///{root}/commit.db", root / "commit-wh"
    direct = icepark.load_catalog(uri=uri, warehouse=str(warehouse))
    direct.create_namespace("db")
    for name in ("direct", "rest"):
        direct.create_table(f"db.{name}", SCHEMA)
    with serve(uri, warehouse, root / "serve-commit.log") as url:
        rest = icepark.load_catalog(type="rest", uri=url)
        tables = {"direct": direct.load_table("db.direct"), "rest": rest.load_table("db.rest")}
        times: dict[str, list[float]] = {"direct": [], "rest": []}
        for i in range(appends + 5):  # the first 5 of each warm up
            for name, table in tables.items():
                ms = _timed(table.append, _row(0, i, appends + 5))
                if i >= 5:
                    times[name].append(ms)
    return _summary(times["rest"], times["direct"])


def load_latency(root: Path, snapshots: int, loads: int = 200) -> dict[str, float]:
    import icepark

    uri, warehouse = f"sqlite:///{root}/load.db", root / "load-wh"
    direct = icepark.load_catalog(uri=uri, warehouse=str(warehouse))
    direct.create_namespace("db")
    table = direct.create_table("db.t", SCHEMA)
    for i in range(snapshots):
        table.append(_row(0, i, snapshots))
    assert len(direct.load_table("db.t").snapshots()) == snapshots
    with serve(uri, warehouse, root / "serve-load.log") as url:
        rest = icepark.load_catalog(type="rest", uri=url)
        times: dict[str, list[float]] = {"direct": [], "rest": []}
        for i in range(loads + 5):
            for name, cat in (("direct", direct), ("rest", rest)):
                ms = _timed(cat.load_table, "db.t")
                if i >= 5:
                    times[name].append(ms)
        assert len(rest.load_table("db.t").snapshots()) == snapshots
    return _summary(times["rest"], times["direct"])


def _rest_worker(url: str, worker: int, appends: int, start: float) -> Any:
    import icepark

    table = icepark.load_catalog(type="rest", uri=url).load_table("db.t")
    return _loop(lambda data: table.append(data), worker, appends, start)


def _direct_worker(uri: str, warehouse: str, worker: int, appends: int, start: float) -> Any:
    import icepark

    table = icepark.load_catalog(uri=uri, warehouse=warehouse).load_table("db.t")
    return _loop(lambda data: table.append(data), worker, appends, start)


def _race(target: Callable[..., Any], args: tuple[Any, ...], writers: int, appends: int) -> Any:
    ctx = mp.get_context("spawn")
    start = time.time() + 4.0  # the processes' imports are done by then
    with ctx.Pool(writers) as pool:
        jobs = [pool.apply_async(target, (*args, w, appends, start)) for w in range(writers)]
        results = [j.get(timeout=3600) for j in jobs]
    return results, time.time() - start


def writers_throughput(root: Path, writers: int, appends: int) -> dict[str, Any]:
    import icepark

    out: dict[str, Any] = {}
    for name in ("direct", "rest"):
        uri, warehouse = f"sqlite:///{root}/writers-{name}.db", root / f"writers-{name}-wh"
        cat = icepark.load_catalog(uri=uri, warehouse=str(warehouse))
        cat.create_namespace("db")
        cat.create_table("db.t", SCHEMA)
        if name == "rest":
            with serve(uri, warehouse, root / "serve-writers.log") as url:
                results, seconds = _race(_rest_worker, (url,), writers, appends)
        else:
            results, seconds = _race(_direct_worker, (uri, str(warehouse)), writers, appends)
        landed = sorted(i for r in results for i in r[0])
        rows = sorted(cat.load_table("db.t").scan().to_arrow().column("id").to_pylist())
        out[name] = {
            "landed": len(landed),
            "attempted": writers * appends,
            "rows_exact": rows == landed,
            "commits_per_s": round(len(landed) / seconds, 1),
            "errors": [e for r in results for e in r[2]][:3],
        }
    out["ratio"] = round(out["rest"]["commits_per_s"] / out["direct"]["commits_per_s"], 2)
    return out


def run(appends: int = 200, snapshots: int = 1000, writers: int = 8) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="icepark-bench-rest-"))
    try:
        return {
            "commit": commit_latency(root, appends),
            "load": load_latency(root, snapshots),
            "writers": writers_throughput(root, writers, 50),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def report(results: dict[str, Any], appends: int, snapshots: int, writers: int) -> str:
    c, ld, w = results["commit"], results["load"], results["writers"]
    lines = [
        f"{'REST vs direct (SQLite, loopback)':44} {'REST':>14} {'direct':>14} {'ratio':>6}",
    ]
    for label, r in ((f"commit, {appends} appends", c), (f"load, {snapshots} snapshots", ld)):
        for p in ("p50", "p99"):
            rest, direct = r[f"rest_{p}_ms"], r[f"direct_{p}_ms"]
            lines.append(
                f"{label + ' ' + p:44} {rest:>11.2f} ms {direct:>11.2f} ms {r[f'ratio_{p}']:>5.2f}x"
            )
        lines.append(f"{'  added at p50':44} {r['added_p50_ms']:>11.2f} ms")
    rest_w, direct_w = w["rest"], w["direct"]
    lines.append(
        f"{f'{writers} writers x 50 appends, commits/s':44} {rest_w['commits_per_s']:>14} "
        f"{direct_w['commits_per_s']:>14} {w['ratio']:>5.2f}x"
    )
    for name in ("rest", "direct"):
        r = w[name]
        lines.append(
            f"  {name}: {r['landed']}/{r['attempted']} landed, rows exact: {r['rows_exact']}"
            + (f", e.g. {r['errors'][0]}" if r["errors"] else "")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--snapshots", type=int, default=1000)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = run(args.appends, args.snapshots, args.writers)
    if args.json:
        print(json.dumps(results))
    else:
        print(report(results, args.appends, args.snapshots, args.writers))


if __name__ == "__main__":
    main()
