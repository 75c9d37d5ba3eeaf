"""The large bench set: ``python -m bench.run --scale large`` (``--scale tiny``: the same
steps on small tables, a smoke run of a few minutes).

Builds once, with the reference engine, a table of 100M rows in 100 Parquet files
(``bench/large_table.py``: the standard tables' 7 columns, ``days(ts)`` over 30 days; cached
as ``large-<rows>-<files>`` in the bench folder, beside the standard tables) and times, on
those files, icepark next to Java (Iceberg 1.10.2 on Spark 3.5, its own process first, then
icepark's session: never two Spark JVMs at once):

* the read rows of ``bench/queries.py`` (full-scan aggregate, 2 of 30 days, a point query:
  ``id = N`` prunes no file of this table, so both read the ``id`` column of every file),
  icepark also next to Spark's Parquet reader on the same files;
* a merge-on-read delete of 1% (``id % 100 = 7``), the full scan after it, compaction
  (``rewrite_position_delete_files`` then ``rewrite_data_files`` of the files with deletes,
  the options of the standard set) and the full scan after it. These change the table, which
  is too big to copy for every run: before each run ``main`` is set back to the snapshot the
  table was built with and the snapshots since are expired (each engine with its own
  ``expire_snapshots``, which deletes the files only they reached; a last sweep removes any
  file of the data folder the built snapshot does not hold);
* planning (``bench/huge.py``'s rows: the metadata tables of 10,000, 100,000 and 1,000,000
  files written by Java's ``AppendFiles``, every file and a point query, Java's
  ``planFiles()`` warm in its JVM against icepark's), and how each cost grows;
* streaming all 7 columns of the 100M rows on one machine: ``to_batches()`` against
  ``pyarrow.dataset`` (``bench/local_reads.py``: fresh processes alternating, each reading
  twice; the warm second read and the peak RSS).

Every answer is checked: the read rows' count, sum and max against Java's, the plans' files,
the rows left after the delete and after compaction. The load average is printed with each
row (the machine is shared). Read rows run a warm-up and ``--runs`` timed runs; the writes
run ``--write-runs`` times (default 1), without a warm-up: each reads the whole table.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import queries as Q
from bench.timing import alternate

__all__ = ["SCALES", "Scale", "main"]


@dataclass(frozen=True)
class Scale:
    rows: int
    files: int
    plan_files: tuple[int, ...]
    per_manifest: int

    @property
    def point(self) -> int:
        return self.rows // 2 + 7


SCALES = {
    "large": Scale(100_000_000, 100, (10_000, 100_000, 1_000_000), 10_000),
    "tiny": Scale(3_000_000, 40, (1_000, 10_000), 1_000),
}
_MARKER = ".icepark-bench-complete"


def _ref_python() -> Path:
    from bench.run import REF_PYTHON

    return REF_PYTHON


def ensure_table(root: Path, scale: Scale) -> tuple[Path, dict[str, Any]]:
    """The warehouse of the large table (built by the reference engine when absent or
    damaged) and what its build reported: files, rows, bytes, snapshot_id."""
    warehouse = root / f"large-{scale.rows}-{scale.files}"
    marker = warehouse / _MARKER
    if marker.exists():
        info = dict(json.loads(marker.read_text()))
        missing = _missing_files(warehouse, info)
        if not missing:
            return warehouse, info
        print(f"{missing} data files of {warehouse} are missing: building it again", flush=True)
    shutil.rmtree(warehouse, ignore_errors=True)
    warehouse.mkdir(parents=True)
    print(
        f"building {scale.rows:,} rows in {scale.files} files in {warehouse} with the reference"
        " engine ...",
        flush=True,
    )
    started = time.perf_counter()
    done = subprocess.run(
        [
            str(_ref_python()),
            str(Path(__file__).with_name("large_table.py")),
            str(warehouse),
            str(scale.rows),
            str(scale.files),
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "WARN" not in line]
        sys.exit("building the large table failed:\n" + "\n".join(errors[-30:]))
    info = json.loads([ln for ln in done.stdout.splitlines() if ln.startswith("{")][-1])
    info["build_s"] = round(time.perf_counter() - started)
    if (info["files"], info["rows"]) != (scale.files, scale.rows):
        sys.exit(f"the large table has {info['files']} files, {info['rows']} rows: {info}")
    marker.write_text(json.dumps(info) + "\n")
    print(f"built in {info['build_s']} s: {info}", flush=True)
    return warehouse, info


def _base_files(warehouse: Path, snapshot_id: int) -> list[str]:
    from icepark.catalog import FileSystemCatalog

    table = FileSystemCatalog("bench", warehouse=str(warehouse)).load_table("bench.wide")
    tasks = table.scan(snapshot_id=snapshot_id).plan_files()
    return [t.file.file_path.removeprefix("file:") for t in tasks]


def _missing_files(warehouse: Path, info: dict[str, Any]) -> int:
    try:
        files = _base_files(warehouse, int(info["snapshot_id"]))
    except Exception as e:  # a table that does not load is damaged
        print(f"cannot plan {warehouse}: {e}", flush=True)
        return info.get("files", 1) or 1
    return sum(not os.path.exists(f) for f in files) + abs(len(files) - info["files"])


def restore(warehouse: Path, base: int) -> int:
    """Set ``bench.wide``'s ``main`` back to ``base``, expire the snapshots since (icepark's
    expire_snapshots deletes the files only they reached) and remove any file left in the
    data folder that ``base`` does not hold (a run that stopped half way). Returns the files
    the sweep removed."""
    from bench.run import _reset
    from icepark.catalog import FileSystemCatalog

    catalog = FileSystemCatalog("bench", warehouse=str(warehouse))
    table = catalog.load_table("bench.wide")
    head = table.current_snapshot()
    if head is None or head.snapshot_id != base:
        _reset(table, base)
    table = catalog.load_table("bench.wide")
    if len(table.metadata.snapshots) > 1:
        time.sleep(0.01)
        table.expire_snapshots(older_than=int(time.time() * 1000), retain_last=1)
    keep = {os.path.basename(f) for f in _base_files(warehouse, base)}
    removed = 0
    for folder, _, names in os.walk(warehouse / "bench" / "wide" / "data"):
        for name in names:
            if name.removeprefix(".").removesuffix(".crc") not in keep:
                os.remove(os.path.join(folder, name))
                removed += 1
    return removed


@contextmanager
def _locked(warehouse: Path) -> Iterator[None]:
    """One large run at a time on a warehouse (its writes set the shared table back)."""
    with open(warehouse / ".lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.exit(f"another large bench run is using {warehouse}")
        yield


def _load() -> str:
    from bench.run import load_average

    return load_average()


LOADS: dict[str, str] = {}  # row -> load average (1 and 5 minutes) when it was measured


def _timed_row(name: str, fn: Any) -> Any:
    before = _load()
    out = fn()
    LOADS[name] = f"{before} -> {_load()}"
    return out


def measure_icepark(
    spark: Any, warehouse: Path, base: int, point: int, runs: int, write_runs: int
) -> dict[str, dict[str, list[float]]]:
    """icepark's side of the large set's Spark rows (Java's: ``ref_timings._large``)."""
    from pyspark.sql import functions as F

    from bench import run
    from icepark.catalog import FileSystemCatalog
    from icepark.spark import read

    catalog = FileSystemCatalog("bench", warehouse=str(warehouse))
    restore(warehouse, base)
    wide = catalog.load_table("bench.wide")
    out = run.read_rows(spark, wide, wide, point, runs, python_path=False, loads=LOADS)
    aggs = [F.count("*"), F.sum("amount"), F.max("note")]

    def scans(label: str) -> None:
        table = catalog.load_table("bench.wide")
        run.SUMMARIES[label] = Q.summary(read(spark, table).agg(*aggs).collect())
        out[label] = _timed_row(
            label,
            lambda: alternate({"icepark": lambda: read(spark, table).agg(*aggs).collect()}, runs),
        )
        tasks = table.scan().plan_files()
        deletes = len({d.file_path for t in tasks for d in t.delete_files})
        run.CHECKS[f"files: {label}"] = f"{len(tasks)} data files, {deletes} delete files"

    def delete_once() -> float:
        table = catalog.load_table("bench.wide")
        started = time.perf_counter()
        run.delete_one_percent(spark, table)
        return time.perf_counter() - started

    times = []
    for _ in range(write_runs):
        restore(warehouse, base)
        times.append(_timed_row(Q.DELETE, delete_once))
    out[Q.DELETE] = {"icepark": times}
    scans(Q.AFTER_DELETE)
    deletes_times, data_times = [], []
    for i in range(write_runs):
        if i:
            restore(warehouse, base)
            delete_once()
        took, took_data, _ = _timed_row(
            Q.COMPACTION_DATA,
            lambda: run.compact(spark, catalog, catalog.load_table("bench.wide")),
        )
        LOADS[Q.COMPACTION_DELETES] = LOADS[Q.COMPACTION_DATA]
        deletes_times.append(took)
        data_times.append(took_data)
    out[Q.COMPACTION_DELETES] = {"icepark": deletes_times}
    out[Q.COMPACTION_DATA] = {"icepark": data_times}
    scans(Q.COMPACTION_SCAN)
    swept = restore(warehouse, base)
    run.CHECKS["set back"] = f"{swept} files swept from the data folder after expiry"
    # the ratios of run._print: before the delete = the full scan of the built table
    full = out[Q.FULL_SCAN]["icepark"]
    out[Q.AFTER_DELETE]["icepark before the delete"] = full
    out[Q.COMPACTION_SCAN]["icepark before the delete"] = full
    out[Q.COMPACTION_SCAN]["icepark after the delete, not compacted"] = out[Q.AFTER_DELETE][
        "icepark"
    ]
    return out


def _reference(
    warehouse: Path, info: dict[str, Any], scale: Scale, runs: int, write_runs: int
) -> dict[str, Any]:
    from bench import run

    started = _load()
    ref = run._reference(
        warehouse,
        runs,
        scale.point,
        0,
        0,
        {"large"},
        warehouse,
        0,
        extra={"base_snapshot": int(info["snapshot_id"]), "write_runs": write_runs},
    )
    LOADS["reference engine"] = f"{started} -> {_load()}"
    for label in (Q.AFTER_DELETE, Q.COMPACTION_SCAN):  # Java's files, printed by the checks
        found = ref.get(f"check: {label}")
        if found:
            ref[f"check: files: {label}"] = f"{found[3]} data files, {found[4]} delete files"
            ref[f"check: {label}"] = found[:3]
    full = ref.get(Q.FULL_SCAN)
    ref["full scan before MoR delete"] = full
    ref["full scan before the delete"] = full
    ref["full scan after the delete"] = ref.get(Q.AFTER_DELETE)
    return ref


def planning(scale: Scale, rounds: int) -> list[dict[str, Any]]:
    """bench/huge.py's planning rows at each of the scale's sizes."""
    from bench import huge, run

    rows: list[dict[str, Any]] = []
    for files in scale.plan_files:
        before = _load()
        found = huge.compare(files, scale.per_manifest, rounds)
        for row in found:
            row["load"] = f"{before} -> {_load()}"
            run._check(row["same_files"], f"plan of {files:,} files ({row['what']}): other files")
        rows.extend(found)
    return rows


def _save(warehouse: Path, results: Any, ref: Any, plans: Any = None) -> None:
    """What was measured so far, as JSON beside the table (a run that stops late keeps it)."""
    everything = {"results": results, "reference": ref, "planning": plans, "loads": LOADS}
    (warehouse / "last-run.json").write_text(json.dumps(everything, indent=1, default=str))
    print(f"(measured so far: {warehouse / 'last-run.json'})", flush=True)


def main(scale_name: str, runs: int, write_runs: int, no_reference: bool) -> None:
    from bench import huge, local_reads, run

    scale = SCALES[scale_name]
    root = Path(os.environ.get("ICEPARK_BENCH_CACHE", huge.CACHE))
    warehouse, info = ensure_table(root, scale)
    base = int(info["snapshot_id"])
    with _locked(warehouse):
        restore(warehouse, base)
        ref: dict[str, Any] = {}
        if not no_reference:
            print("timing the reference engine ...", flush=True)
            ref = _reference(warehouse, info, scale, runs, write_runs)
        print("timing icepark and native Spark ...", flush=True)
        spark = run._session()
        try:
            results = measure_icepark(spark, warehouse, base, scale.point, runs, write_runs)
        finally:
            spark.stop()
        run.check_summaries(ref)
        _save(warehouse, results, ref)
        print("planning (bench/huge.py) ...", flush=True)
        plans = planning(scale, runs)
        _save(warehouse, results, ref, plans)
        print("streaming 7 columns on one machine ...", flush=True)
        before = _load()
        label = f" ({scale.rows / 1e6:g}M rows)"
        stream = local_reads.stream_rows(warehouse, runs, run.CHECKS, label)
        for name in stream:
            LOADS[name] = f"{before} -> {_load()}"
        results.update(stream)
        _save(warehouse, results, ref, plans)
    header = (
        f"{scale_name}: {info['rows']:,} rows in {info['files']} files "
        f"({info['bytes'] / 2**30:.1f} GiB, built by the reference engine), local[2]; "
        f"reads: median of {runs} runs after a warm-up, writes: {write_runs} run(s); "
        f"load average (1/5 min) before -> after each row"
    )
    run._print(results, ref, header, LOADS)
    print("\nplanning (Java planFiles() warm in one JVM; icepark warm in one process):")
    print(huge.table_text(plans))
    print("\nhow each cost grows:")
    print(huge.growth_text(plans))
    print(
        "load average during each size: "
        + ", ".join(f"{r['files']:,} {r['what']}: {r['load']}" for r in plans)
    )
    if "reference engine" in LOADS:
        print(f"load average while the reference engine ran: {LOADS['reference engine']}")
