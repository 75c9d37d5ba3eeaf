"""Planning huge tables on Spark (``read.data-planning-mode``): the driver's plan against
plans whose manifests are read in Spark tasks, in ``local-cluster`` mode, next to Java's
``planFiles()`` on the same metadata.

    python -m bench.distributed_planning                       # 1M files, 1 and 2 executors
    python -m bench.distributed_planning --files 10000000 --per-manifest 100000 --rounds 2
    python -m bench.distributed_planning --executors 1 --executors 2 --executors 4

The tables are :mod:`bench.huge`'s (100 fast appends by Java's ``AppendFiles``, ``day(ts)``
over 365 days, id bounds: ``id = X`` keeps one file; the data files do not exist, only
planning is timed). For each cluster size a fresh driver process starts a
``local-cluster[N,1,1024]`` application (N executors of one core and 1 GB; the driver's JVM
1 GB), plans once to warm up (Python workers start, numba loads: reported as the first
plan), then ``--rounds`` times the point query and the whole table, each plan's tasks
counted as they stream (as ``for task in plan_files()``), the manifests read in Spark tasks
(``spark.sql.iceberg.data-planning-mode=distributed``). Reported: the median time, the
driver's peak RSS (the Python process that plans; its JVM's apart), and the tasks found,
which must be the local plan's. The local plan is :mod:`bench.huge`'s (a fresh process and a
warm one, no Spark), and Java's the warm ``planFiles()`` of one JVM.

On this 2-core machine, executors, driver and Java share two cores: more executors than
cores cannot speed anything up, and every figure moves with the machine's load (say it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import huge

ROOT = Path(__file__).resolve().parents[1]
WHATS = ("plan-point", "plan")


def _jvm_peak_mb(spark: Any) -> float:
    """The driver JVM's peak RSS (VmHWM), MB; 0 when it cannot be read."""
    try:
        pid = spark.sparkContext._gateway.proc.pid
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (AttributeError, OSError, ValueError):
        pass
    return 0.0


def _plan(spark: Any, table: Any, filter: str | None) -> dict[str, Any]:
    from importlib import import_module

    planning = import_module("icepark.spark.read.planning")
    started = time.perf_counter()
    tasks = size = 0
    first = None
    for task in planning.plan_scan(spark, table.scan(filter=filter)):
        tasks += 1
        size += task.file.file_size_in_bytes
        if first is None:
            first = task.file.file_path
    return {"seconds": time.perf_counter() - started, "tasks": tasks, "bytes": size, "first": first}


def measure(
    metadata: str, executors: int, rounds: int, point: int, whats: tuple[str, ...] = WHATS
) -> dict[str, Any]:
    """In this process: a local-cluster application of ``executors`` executors planning the
    table ``rounds`` times each way (see the module docstring)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from icepark.table import Table

    spark = (
        SparkSession.builder.master(f"local-cluster[{executors},1,1024]")
        .appName("icepark-distributed-planning")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.iceberg.data-planning-mode", "distributed")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        table = Table.from_metadata(metadata)
        point_filter = f"id = {point}"
        first = _plan(spark, table, point_filter)
        timed: dict[str, list[dict[str, Any]]] = {what: [] for what in whats}
        for _ in range(rounds):
            for what in whats:
                timed[what].append(
                    _plan(spark, table, point_filter if what == "plan-point" else None)
                )
        return {
            "executors": executors,
            "first_s": first["seconds"],
            **{
                what: {
                    "seconds": statistics.median(r["seconds"] for r in runs),
                    "tasks": runs[0]["tasks"],
                    "bytes": runs[0]["bytes"],
                    "first": runs[0]["first"],
                }
                for what, runs in timed.items()
            },
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "jvm_peak_mb": _jvm_peak_mb(spark),
        }
    finally:
        spark.stop()


def _fresh(
    metadata: Path, executors: int, rounds: int, point: int, whats: tuple[str, ...]
) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.distributed_planning",
            "--measure",
            str(metadata),
            str(executors),
            str(rounds),
            str(point),
            ",".join(whats),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _local(metadata: Path, what: str, point: int, rounds: int) -> dict[str, Any]:
    """The driver's own plan (bench.huge): a fresh process, then the median of ``rounds``
    warm ones."""
    fresh = huge._fresh(metadata, what, point)
    server = huge._Server([sys.executable, "-m", "bench.huge", "--serve"])
    try:
        warm = [server.ask(f"{metadata} {what} {point}")[0]["seconds"] for _ in range(rounds)]
    finally:
        server.close()
    return {**fresh, "warm_s": statistics.median(warm)}


def _java(metadata: Path, what: str, point: int, rounds: int) -> dict[str, Any]:
    java = huge._Server(["java", "-Xmx4g", "-cp", huge._compiled(), "ManyFiles", "serve"])
    args = str(metadata) if what == "plan" else f"{metadata} {point}"
    try:
        cold = java.ask(args)[0]
        warm = [java.ask(args)[0]["seconds"] for _ in range(rounds)]
    finally:
        java.close()
    return {"first_s": cold["seconds"], "warm_s": statistics.median(warm), "tasks": cold["tasks"]}


def compare(
    files: int,
    per_manifest: int,
    executors: list[int],
    rounds: int,
    java: bool,
    whats: tuple[str, ...] = WHATS,
) -> list[dict[str, Any]]:
    metadata = huge.table(files, per_manifest)
    point = (files // 3) * 1000 + 17  # inside the id bounds of file files // 3
    rows = []
    clusters = {n: _fresh(metadata, n, rounds, point, whats) for n in executors}
    for what in whats:
        local = _local(metadata, what, point, rounds)
        ref = _java(metadata, what, point, rounds) if java else None
        row: dict[str, Any] = {
            "files": files,
            "manifests": max(files // per_manifest, 1),
            "what": what,
            "local_first_s": round(local["seconds"], 2),
            "local_warm_s": round(local["warm_s"], 2),
            "local_peak_mb": round(local["peak_mb"]),
            "java_warm_s": round(ref["warm_s"], 2) if ref else None,
            "java_first_s": round(ref["first_s"], 2) if ref else None,
        }
        for n, found in clusters.items():
            mine = found[what]
            row[f"x{n}_s"] = round(mine["seconds"], 2)
            row[f"x{n}_first_s"] = round(found["first_s"], 2)
            row[f"x{n}_peak_mb"] = round(found["peak_mb"])
            row[f"x{n}_jvm_peak_mb"] = round(found["jvm_peak_mb"])
            row[f"x{n}_same"] = (mine["tasks"], mine["bytes"]) == (local["tasks"], local["bytes"])
        row["tasks"] = local["tasks"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def _table_text(rows: list[dict[str, Any]], executors: list[int]) -> str:
    head = (
        "| files (manifests) | plan | local (fresh / warm) | Java warm (first) | "
        + " | ".join(f"{n} x 1 core: time, driver RSS (its JVM)" for n in executors)
        + " | same tasks |"
    )
    lines = [head, "| " + " | ".join(["---"] * (4 + len(executors))) + " | --- |"]
    for r in rows:
        kind = "point query" if r["what"] == "plan-point" else "whole table"
        java = f"{r['java_warm_s']:.2f} s ({r['java_first_s']:.2f} s)" if r["java_warm_s"] else "-"
        cells = [
            f"{r[f'x{n}_s']:.2f} s, {r[f'x{n}_peak_mb']} MB ({r[f'x{n}_jvm_peak_mb']} MB)"
            for n in executors
        ]
        same = all(r[f"x{n}_same"] for n in executors)
        lines.append(
            f"| {r['files']:,} ({r['manifests']}) | {kind} "
            f"| {r['local_first_s']:.2f} / {r['local_warm_s']:.2f} s, {r['local_peak_mb']} MB "
            f"| {java} | " + " | ".join(cells) + f" | {'yes' if same else 'NO'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, action="append")
    parser.add_argument("--per-manifest", type=int, default=10_000)
    parser.add_argument("--executors", type=int, action="append")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-java", action="store_true")
    parser.add_argument(
        "--what", choices=WHATS, action="append", help="the plans to time (default: both)"
    )
    parser.add_argument(
        "--measure", nargs=5, metavar=("METADATA", "EXECUTORS", "ROUNDS", "POINT", "WHATS")
    )
    args = parser.parse_args(argv)
    if args.measure:
        metadata, executors, rounds, point, whats = args.measure
        chosen = tuple(whats.split(","))
        print(json.dumps(measure(metadata, int(executors), int(rounds), int(point), chosen)))
        return 0
    executors = args.executors or [1, 2]
    rows = []
    for files in args.files or [1_000_000]:
        whats = tuple(args.what or WHATS)
        rows.extend(
            compare(files, args.per_manifest, executors, args.rounds, not args.no_java, whats)
        )
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}\n")
    print(_table_text(rows, executors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
