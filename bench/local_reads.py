"""One-machine reads, planning and commits under contention (``--only local``): icepark next
to ``pyarrow.dataset`` on the same files and PyIceberg (with pyiceberg-core when installed)
on the same tables, as ratios.

* **read 2 of 7 columns**: ``table.scan(columns=["id", "amount"]).to_arrow()`` on
  ``bench.wide`` against ``pyarrow.dataset.dataset(files).to_table(columns=...)`` and
  PyIceberg's ``scan(selected_fields=...).to_arrow()``;
* **stream 7 columns**: ``for b in table.scan().to_batches()`` against the dataset's
  ``to_batches()``; each variant runs in a fresh process (alternating), which reads twice and
  reports both times (the second, warm, is the row's figure) and its peak RSS;
* **plan a point query** on ``bench.many`` (10,000 files): ``scan(filter="id = N")
  .plan_files()``, imports done (in one process, first plan then repeated), and in a fresh
  process the import plus the first plan; against PyIceberg's ``plan_files()``;
* **appends under contention**: :mod:`bench.contention` (8 processes x 50 single-row
  appends; 1, 4 and 8 writers) on SQLite, and on PostgreSQL when ``scripts/postgres.sh``
  can start one.

Each timed figure is the median of ``runs`` after a warm-up (the page cache is warm); the
in-process rows alternate their variants, over at least 9 rounds.
"""

from __future__ import annotations

import importlib
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.timing import alternate

__all__ = ["measure_local"]

ROOT = Path(__file__).resolve().parents[1]


def _tables(warehouse: Path) -> tuple[Any, Any]:
    from icepark.catalog import load_catalog

    catalog = load_catalog("bench", type="filesystem", warehouse=str(warehouse))
    return catalog.load_table("bench.wide"), catalog.load_table("bench.many")


_SHORT_ROUNDS = 9


def _medians(fns: dict[str, Any], runs: int) -> dict[str, list[float]]:
    """The median of each variant, as one-element lists, timed alternating over at least
    ``_SHORT_ROUNDS`` rounds: these rows take ~0.1 s, and over 3 rounds, all of one variant
    and then all of the other, the 2-of-7 ratio moved between 1.04x and 1.32x from run to
    run."""
    times = alternate(fns, max(runs, _SHORT_ROUNDS))
    return {name: [statistics.median(t)] for name, t in times.items()}


def _child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.local_reads", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


_PLAN_MODULES = {
    # what each side's first plan would otherwise import while it is timed
    "icepark-plan": (
        "encodings.utf_8_sig",
        "icepark.catalog.filesystem",
        "icepark.table",
        "icepark.manifest.pruned",
    ),
    "pyiceberg-plan": (
        "encodings.utf_8_sig",
        "pyiceberg.avro.decoder_fast",
        "pyiceberg.catalog.noop",
        "pyiceberg.io.pyarrow",
        "pyiceberg.manifest",
        "pyiceberg.serializers",
        "pyiceberg.table",
    ),
}


def _variant(kind: str, warehouse: Path, point: int) -> dict[str, Any]:
    """Run in a fresh process: one variant, its time (and import time) and peak RSS, and
    the modules imported while it was timed (``late_imports``: none, for a plan)."""
    location = ""
    if kind == "pyiceberg-plan":  # found by a child of its own: icepark is not imported here
        location = _child(["locate", str(warehouse), "bench.many"])["location"]
    t0 = time.perf_counter()
    if kind.startswith("icepark"):
        from icepark.catalog import load_catalog
    else:
        from pyiceberg.table import StaticTable
    if kind.endswith("dataset"):
        importlib.import_module("pyarrow.dataset")
    for module in _PLAN_MODULES.get(kind, ()):
        importlib.import_module(module)
    imported = time.perf_counter() - t0
    loaded = set(sys.modules)
    start = time.perf_counter()
    if kind == "icepark-plan":
        table = load_catalog("bench", type="filesystem", warehouse=str(warehouse)).load_table(
            "bench.many"
        )
        n = len(table.scan(filter=f"id = {point}").plan_files())
    elif kind == "pyiceberg-plan":
        from pyiceberg.expressions import EqualTo

        static = StaticTable.from_metadata(location)
        n = len(list(static.scan(row_filter=EqualTo("id", point)).plan_files()))
    elif kind in ("icepark-batches", "icepark-dataset"):
        return _stream(kind, warehouse, imported)
    else:
        raise SystemExit(f"unknown variant {kind}")
    seconds = time.perf_counter() - start
    return {
        "kind": kind,
        "import": imported,
        "late_imports": sorted(set(sys.modules) - loaded),
        "seconds": seconds,
        "rows": n,
        "rss_mb": _peak_rss_mb(),
    }


def _stream(kind: str, warehouse: Path, imported: float) -> dict[str, Any]:
    """Stream every column of ``bench.wide`` twice in this process, with icepark's
    ``to_batches()`` or ``pyarrow.dataset``'s over the files icepark plans: ``first`` is the
    first read (the process's pools, caches and allocator cold), ``seconds`` the second
    (warm), ``cpu`` the process's CPU seconds in it (all threads: less disturbed than the
    wall time by other jobs on the machine); ``rss_mb`` the peak over both."""
    import pyarrow.dataset as ds

    from icepark.catalog import load_catalog

    catalog = load_catalog("bench", type="filesystem", warehouse=str(warehouse))
    times, cpu, rows = [], [], []
    for _ in range(2):
        start, cpu_start = time.perf_counter(), time.process_time()
        table = catalog.load_table("bench.wide")
        if kind == "icepark-batches":
            n = sum(b.num_rows for b in table.scan().to_batches())
        else:  # the files are planned outside the timing
            files = [t.file.file_path.removeprefix("file:") for t in table.scan().plan_files()]
            start, cpu_start = time.perf_counter(), time.process_time()
            n = sum(b.num_rows for b in ds.dataset(files, format="parquet").to_batches())
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
        rows.append(n)
    return {
        "kind": kind,
        "import": imported,
        "first": times[0],
        "seconds": times[1],
        "cpu": cpu[1],
        "rows": rows[1],
        "rss_mb": _peak_rss_mb(),
    }


def _peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike ``ru_maxrss`` it starts afresh at
    exec, so a child forked from a big parent does not report the parent's peak)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _interleaved(
    kinds: tuple[str, ...], warehouse: Path, point: int, runs: int
) -> dict[str, list[dict[str, Any]]]:
    """``runs`` fresh processes of each variant, alternating (the machine drifts over a run:
    all of one variant and then all of the other measured the drift, up to 20%)."""
    out: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for _ in range(runs):
        for kind in kinds:
            out[kind].append(_child([kind, str(warehouse), str(point)]))
    return out


def measure_local(
    warehouse: Path, runs: int, point: int, checks: dict[str, str] | None = None
) -> dict[str, dict[str, list[float]]]:
    """The section's rows: query -> {"icepark": [s], peer: [s], ...} (medians); what was
    checked goes to ``checks``."""
    import pyarrow.dataset as ds
    from pyiceberg.expressions import EqualTo
    from pyiceberg.table import StaticTable

    checks = checks if checks is not None else {}
    wide, many = _tables(warehouse)
    files = [t.file.file_path.removeprefix("file:") for t in wide.scan().plan_files()]
    cols = ["id", "amount"]
    py_wide = StaticTable.from_metadata(wide.metadata_location)
    ours = wide.scan(columns=cols).to_arrow()
    theirs = ds.dataset(files, format="parquet").to_table(columns=cols)
    checks["local read 2 of 7"] = f"{ours.num_rows:,} rows (pyarrow.dataset {theirs.num_rows:,})"
    out: dict[str, dict[str, list[float]]] = {}
    out["local read 2 of 7 columns"] = _medians(
        {
            "icepark": lambda: wide.scan(columns=cols).to_arrow(),
            "pyarrow.dataset": lambda: ds.dataset(files, format="parquet").to_table(columns=cols),
            "pyiceberg": lambda: py_wide.scan(selected_fields=tuple(cols)).to_arrow(),
        },
        runs,
    )
    out.update(stream_rows(warehouse, runs, checks))
    plans = _interleaved(("icepark-plan", "pyiceberg-plan"), warehouse, point, runs)
    out["plan point query (10,000 files), first in a process"] = {
        "icepark": [statistics.median(r["seconds"] for r in plans["icepark-plan"])],
        "pyiceberg": [statistics.median(r["seconds"] for r in plans["pyiceberg-plan"])],
    }
    out["plan point query, fresh process: import + first plan"] = {
        "icepark": [statistics.median(r["seconds"] + r["import"] for r in plans["icepark-plan"])],
        "pyiceberg": [
            statistics.median(r["seconds"] + r["import"] for r in plans["pyiceberg-plan"])
        ],
    }
    py_many = StaticTable.from_metadata(many.metadata_location)
    out["plan point query, repeated in a process"] = _medians(
        {
            "icepark": lambda: many.scan(filter=f"id = {point}").plan_files(),
            "pyiceberg": lambda: list(py_many.scan(row_filter=EqualTo("id", point)).plan_files()),
        },
        runs,
    )
    counts = {r["kind"]: r["rows"] for rs in plans.values() for r in rs}
    checks["plan point query"] = f"files planned: {counts}"
    return out


STREAM = "local stream 7 columns"


def stream_rows(
    warehouse: Path, runs: int, checks: dict[str, str] | None = None, label: str = ""
) -> dict[str, dict[str, list[float]]]:
    """Streaming every column of the warehouse's ``bench.wide`` with ``to_batches()``
    against ``pyarrow.dataset`` on the same files: ``runs`` fresh processes of each,
    alternating, each reading twice; the rows give the medians of the second (warm) reads,
    of the first reads, and the highest peak RSS. ``label`` is added to the rows' names."""
    stream = _interleaved(("icepark-batches", "icepark-dataset"), warehouse, 0, runs)
    ours, theirs = stream["icepark-batches"], stream["icepark-dataset"]
    if checks is not None:
        checks[f"{STREAM}{label}"] = (
            f"{ours[0]['rows']:,} rows (pyarrow.dataset {theirs[0]['rows']:,}); warm reads "
            f"icepark {[round(r['seconds'], 2) for r in ours]}, "
            f"pyarrow {[round(r['seconds'], 2) for r in theirs]}"
        )
    return {
        f"{STREAM}{label}, warm second read": {
            "icepark": [statistics.median(r["seconds"] for r in ours)],
            "pyarrow.dataset": [statistics.median(r["seconds"] for r in theirs)],
        },
        f"{STREAM}{label}, CPU seconds of the warm read": {
            "icepark": [statistics.median(r["cpu"] for r in ours)],
            "pyarrow.dataset": [statistics.median(r["cpu"] for r in theirs)],
        },
        f"{STREAM}{label}, first read in a process": {
            "icepark": [statistics.median(r["first"] for r in ours)],
            "pyarrow.dataset": [statistics.median(r["first"] for r in theirs)],
        },
        f"{STREAM}{label}, peak RSS in MB": {
            "icepark": [max(r["rss_mb"] for r in ours)],
            "pyarrow.dataset": [max(r["rss_mb"] for r in theirs)],
        },
    }


def contention(appends: int = 50) -> list[dict[str, Any]]:
    """8 processes x ``appends`` single-row appends (1, 4, 8 writers), icepark and PyIceberg,
    on SQLite and (when it starts) PostgreSQL."""
    from dataclasses import asdict

    from bench.contention import run

    results = [asdict(r) for r in run(["icepark", "pyiceberg"], [1, 4, 8], appends)]
    started = subprocess.run(
        ["bash", str(ROOT / "scripts" / "postgres.sh"), "start"], capture_output=True, check=False
    )
    if started.returncode == 0:
        url = subprocess.run(
            ["bash", str(ROOT / "scripts" / "postgres.sh"), "url"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        results += [asdict(r) for r in run(["icepark", "pyiceberg"], [1, 4, 8], appends, url)]
    return results


def _locate(warehouse: Path, name: str) -> dict[str, Any]:
    from icepark.catalog import load_catalog

    table = load_catalog("bench", type="filesystem", warehouse=str(warehouse)).load_table(name)
    return {"location": table.metadata_location}


if __name__ == "__main__":
    if sys.argv[1] == "locate":
        print(json.dumps(_locate(Path(sys.argv[2]), sys.argv[3])))
    else:
        print(json.dumps(_variant(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))))
