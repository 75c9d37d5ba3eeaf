"""Huge tables: planning and metadata of tables of 100,000 to 10,000,000 data files, icepark
next to the Java implementation (Iceberg 1.10.2) on the same metadata.

    python -m bench.huge                      # 10k, 100k and 1M files
    python -m bench.huge --files 1000000 --rounds 5
    python -m bench.huge --build-only --files 10000000 --per-manifest 100000
    python -m bench.huge --files 1000000 --upkeep-only   # upkeep rows only (bench/huge_upkeep.py)

The tables are built once (cached under the bench folder of the temporary directory) by the
reference engine's own API, ``AppendFiles`` through a small Java program
(``bench/java/ManyFiles.java``, compiled here with javac against the reference engine's
jars; it is a benchmark tool, not part of icepark): ``files / per_manifest`` fast appends of
``per_manifest`` data files each, partitioned by ``day(ts)`` over 365 days, each file with
metrics for its five columns and ids ``[i * 1000, i * 1000 + 999]``, so that ``id = X``
keeps one file. The data files themselves do not exist: only planning and metadata are timed.

Each icepark measurement runs in a fresh process (its peak RSS is its own; imports are done
before the clock starts), Java's in one JVM (its first, cold plan reported apart from the
warm ones), alternating.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REF_VENV = Path(os.environ.get("ICEPARK_REF_VENV", ROOT / ".venv-ref"))
JAVA_SOURCE = Path(__file__).with_name("java") / "ManyFiles.java"
CACHE = Path(tempfile.gettempdir()) / "icepark-bench"


def _classpath() -> str:
    jars = (REF_VENV / "reference-jars.txt").read_text().split()
    pyspark = next((REF_VENV / "lib").glob("python3*/site-packages/pyspark/jars"))
    return ":".join([*jars, f"{pyspark}/*"])


def _compiled() -> str:
    """The classpath with ManyFiles compiled (once per source version)."""
    out = CACHE / "java-classes"
    stamp = out / f".{int(JAVA_SOURCE.stat().st_mtime)}"
    if not stamp.exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["javac", "-nowarn", "-d", str(out), "-cp", _classpath(), str(JAVA_SOURCE)],
            check=True,
        )
        stamp.touch()
    return f"{out}:{_classpath()}"


def _java(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ManyFiles with ``args`` to its end."""
    return subprocess.run(
        ["java", "-Xmx4g", "-cp", _compiled(), "ManyFiles", *args],
        capture_output=True,
        text=True,
        check=True,
    )


def table(files: int, per_manifest: int = 10_000) -> Path:
    """The metadata file of the cached table of ``files`` data files (built when absent)."""
    folder = CACHE / f"huge-{files}-{per_manifest}"
    done = folder / ".complete"
    if not done.exists():
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        started = time.perf_counter()
        print(f"building {files:,} files in {folder} ...", file=sys.stderr, flush=True)
        _java("build", str(folder), str(max(files // per_manifest, 1)), str(per_manifest))
        print(f"built in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        done.touch()
    metadata = sorted(
        (folder / "metadata").glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0])
    )
    return metadata[-1]


# -- icepark's side ----------------------------------------------------------------------------


def _measure(metadata: str, what: str, point: int) -> dict[str, Any]:
    """One plan (or metadata table) of the table at ``metadata``, timed from the table's
    load; with the process's peak RSS so far."""
    from icepark.table import Table

    started = time.perf_counter()
    t = Table.from_metadata(metadata)
    tasks = 0
    size = 0
    first = None
    if what in ("plan", "plan-point"):
        scan = t.scan(filter=f"id = {point}") if what == "plan-point" else t.scan()
        for task in scan.plan_files():
            tasks += 1
            size += task.file.file_size_in_bytes
            if first is None:
                first = task.file.file_path
    elif what == "inspect-files":
        tasks = t.inspect.files().num_rows
    elif what == "inspect-files-batches":
        tasks = sum(batch.num_rows for batch in t.inspect.batches("files"))
    elif what.startswith("inspect-"):
        tasks = t.inspect.table(what[len("inspect-") :]).num_rows
    seconds = time.perf_counter() - started
    peak = _peak_rss_mb()
    return {"seconds": seconds, "tasks": tasks, "bytes": size, "first": first, "peak_mb": peak}


def _peak_rss_mb() -> float:
    """This process's peak RSS. ``VmHWM`` belongs to the process's own memory; ``ru_maxrss``
    starts from the parent's peak at ``fork`` (a child of the large set's Spark process
    reported 479 MB for every plan)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _fresh(metadata: Path, what: str, point: int) -> dict[str, Any]:
    """:func:`_measure` in a process of its own (imports done before the clock starts; the
    compiled decoder's first load in the process is timed)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.huge", "--measure", str(metadata), what, str(point)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


class _Server:
    """A long-lived process answering one request per line with one JSON line (Java's
    ``ManyFiles serve`` or ``bench.huge --serve``): warm plans, alternated between engines."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def ask(self, line: str) -> list[dict[str, Any]]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answers = []
        while True:
            text = self.process.stdout.readline()
            if not text:
                raise RuntimeError(f"server ended while answering {line!r}")
            if not text.startswith("{"):
                continue
            answers.append(json.loads(text))
            if "heap_in_use" in answers[-1] or "peak_mb" in answers[-1]:
                return answers

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _serve() -> int:
    import icepark.table  # noqa: F401 - imports are not timed

    for line in sys.stdin:
        metadata, what, point = line.split()
        print(json.dumps(_measure(metadata, what, int(point))), flush=True)
    return 0


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def compare(files: int, per_manifest: int, rounds: int) -> list[dict[str, Any]]:
    """Java and icepark planning the table of ``files`` files: cold (Java's first plan in
    its JVM, icepark's first in a fresh process) and warm (``rounds`` plans each,
    alternating the engines), with the same files found."""
    metadata = table(files, per_manifest)
    point = (files // 3) * 1000 + 17  # inside the id bounds of file files // 3
    java = _Server(["java", "-Xmx4g", "-cp", _compiled(), "ManyFiles", "serve"])
    ours = _Server([sys.executable, "-m", "bench.huge", "--serve"])
    rows = []
    try:
        for what, java_args in (("plan", str(metadata)), ("plan-point", f"{metadata} {point}")):
            java_cold = java.ask(java_args)[0]
            fresh = _fresh(metadata, what, point)
            ours.ask(f"{metadata} {what} {point}")  # the server's first plan, as Java's above
            java_warm: list[float] = []
            ours_warm: list[float] = []
            java_heap = 0
            for _ in range(rounds):
                answer = java.ask(java_args)
                java_warm.append(answer[0]["seconds"])
                java_heap = max(java_heap, answer[-1]["heap_in_use"])
                mine = ours.ask(f"{metadata} {what} {point}")[0]
                ours_warm.append(mine["seconds"])
            same = (fresh["tasks"], fresh["bytes"]) == (java_cold["tasks"], java_cold["bytes"])
            row = {
                "files": files,
                "what": what,
                "java_first_s": round(java_cold["seconds"], 3),
                "java_warm_s": round(_median(java_warm), 3),
                "java_heap_mb": round(java_heap / 2**20),
                "icepark_first_s": round(fresh["seconds"], 3),
                "icepark_warm_s": round(_median(ours_warm), 3),
                "icepark_peak_mb": round(fresh["peak_mb"]),
                "warm_ratio": round(_median(ours_warm) / _median(java_warm), 2),
                "tasks": fresh["tasks"],
                "same_files": same,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        java.close()
        ours.close()
    return rows


def _kind(row: dict[str, Any]) -> str:
    return "point query" if row["what"] == "plan-point" else "whole table"


def table_text(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`compare` as a Markdown table."""
    lines = [
        "| files | plan | Java first | Java warm | icepark first (fresh process) "
        "| icepark warm | warm ratio | icepark peak RSS | Java heap | same files |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['files']:,} | {_kind(r)} "
            f"| {r['java_first_s']:.2f} s | {r['java_warm_s']:.2f} s "
            f"| {r['icepark_first_s']:.2f} s | {r['icepark_warm_s']:.2f} s "
            f"| {r['warm_ratio']:.2f}x | {r['icepark_peak_mb']} MB | {r['java_heap_mb']} MB "
            f"| {'yes' if r['same_files'] else 'NO'} |"
        )
    return "\n".join(lines)


def growth_text(rows: list[dict[str, Any]]) -> str:
    """How each cost grows with the table: for each plan, each size's warm times, first
    plans and peak RSS as multiples of the previous size's (files x10 each step)."""
    lines = [
        "| plan | files | x files | Java warm | icepark warm | Java first | icepark first "
        "| icepark peak RSS |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    keys = ("java_warm_s", "icepark_warm_s", "java_first_s", "icepark_first_s", "icepark_peak_mb")
    for kind in ("whole table", "point query"):
        mine = sorted((r for r in rows if _kind(r) == kind), key=lambda r: r["files"])
        for before, now in itertools.pairwise(mine):
            grown = [now[k] / before[k] if before[k] else float("nan") for k in keys]
            lines.append(
                f"| {kind} | {before['files']:,} -> {now['files']:,} "
                f"| x{now['files'] / before['files']:g} | "
                + " | ".join(f"x{g:.1f}" for g in grown)
                + " |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, action="append")
    parser.add_argument("--per-manifest", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--no-upkeep", action="store_true", help="skip the upkeep rows")
    parser.add_argument("--upkeep-only", action="store_true", help="only the upkeep rows")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", nargs=3, metavar=("METADATA", "WHAT", "POINT"))
    args = parser.parse_args(argv)
    if args.serve:
        return _serve()
    if args.measure:
        metadata, what, point = args.measure
        import icepark.table  # noqa: F401 - imports are not timed

        print(json.dumps(_measure(metadata, what, int(point))))
        return 0
    rows = []
    sizes = args.files or [10_000, 100_000, 1_000_000]
    for files in sizes:
        if args.build_only:
            table(files, args.per_manifest)
            continue
        if not args.upkeep_only:
            rows.extend(compare(files, args.per_manifest, args.rounds))
    if rows:
        print("\n" + table_text(rows))
        print("\n" + growth_text(rows))
    if not (args.build_only or args.no_upkeep):
        from bench import huge_upkeep

        # expire_snapshots, remove_orphan_files, rewrite_manifests, doctor: the largest table
        upkeep = huge_upkeep.compare(max(sizes), args.per_manifest)
        print("\n" + huge_upkeep.table_text(upkeep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
