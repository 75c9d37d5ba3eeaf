"""Metadata tables: ``table.inspect.files()`` against PyIceberg's, in the same process.

Two tables: ``bench.many`` (the standard set's small-files table: 10,000 files, 1,000 with
``--small``) and ``bench.files100k``, a table of 100,000 file entries made cheaply once: the
data files of ``bench.many`` appended again and again under new paths through icepark's
``Transaction.append_files`` (metadata only: the copies have no data behind them, which a
files table never reads). Both libraries open the table from the same metadata file; each
variant runs once to warm up (PyIceberg and icepark both keep manifest lists they have
read), then in rounds with the order rotating, as the other sections run. Each row is
reported twice: wall time, and CPU time of the process (both libraries run on one core
here, whatever their threads do), which other jobs on a shared machine disturb less. A
check compares the two results (same rows, by path).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["LARGE_TABLE", "ensure_large_files_table", "measure_inspect"]

LARGE_TABLE = "bench.files100k"
LARGE_ENTRIES = 100_000
_CHUNK = 10_000


def ensure_large_files_table(warehouse: Path, entries: int = LARGE_ENTRIES) -> None:
    """Make ``bench.files100k`` (``entries`` file entries) once in ``warehouse``."""
    from icepark.catalog import FileSystemCatalog
    from icepark.planning.walk import live_entries

    marker = warehouse / f".icepark-bench-files-{entries}"
    if marker.exists():
        return
    catalog = FileSystemCatalog("bench", warehouse=str(warehouse))
    try:
        catalog.drop_table(LARGE_TABLE, purge=True)
    except Exception:  # not there yet
        pass
    many = catalog.load_table("bench.many")
    files = [
        e.data_file
        for _, found in live_entries(many.io, many.metadata, many.current_snapshot())
        for e in found
    ]
    table = catalog.create_table(
        LARGE_TABLE,
        many.schema(),
        partition_by=["day(ts)"],
        properties={"format-version": "2", "commit.manifest-merge.enabled": "false"},
    )
    spec_id = table.spec().spec_id
    made = 0
    copy = 0
    while made < entries:
        batch = []
        for f in files:
            if made + len(batch) >= entries or len(batch) >= _CHUNK:
                break
            path = f.file_path.replace(".parquet", f"-copy{copy}.parquet")
            batch.append(f.replace(file_path=path, spec_id=spec_id))
        with table.transaction() as tx:
            tx.append_files(batch)
        made += len(batch)
        copy += 1
    marker.write_text("ok\n")


def _time_both(
    fns: dict[str, Callable[[], Any]], runs: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each function: once to warm up, then ``runs`` rounds with
    the order rotating."""
    for fn in fns.values():
        fn()
    wall: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(runs):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start, start_cpu = time.perf_counter(), time.process_time()
            fns[name]()
            cpu[name].append(time.process_time() - start_cpu)
            wall[name].append(time.perf_counter() - start)
    return wall, cpu


def measure_inspect(
    warehouse: Path, runs: int, checks: dict[str, str]
) -> dict[str, dict[str, list[float]]]:
    """``inspect.files()`` on ``bench.many`` and ``bench.files100k``, icepark and PyIceberg."""
    from pyiceberg.table import StaticTable

    from icepark.catalog import FileSystemCatalog

    catalog = FileSystemCatalog("bench", warehouse=str(warehouse))
    out: dict[str, dict[str, list[float]]] = {}
    for name in ("bench.many", LARGE_TABLE):
        table = catalog.load_table(name)
        theirs = StaticTable.from_metadata(table.metadata_location)
        ours_rows = table.inspect.files()
        their_rows = theirs.inspect.files()
        same = sorted(ours_rows.column("file_path").to_pylist()) == sorted(
            their_rows.column("file_path").to_pylist()
        )
        label = f"inspect.files() ({ours_rows.num_rows:,} files)"
        checks[label] = f"{ours_rows.num_rows:,} rows, PyIceberg {their_rows.num_rows:,}" + (
            "" if same else " (CHECK FAILED: different files)"
        )
        if not same:
            print(f"CHECK FAILED: {label}: icepark and PyIceberg list different files")
        wall, cpu = _time_both(
            {"icepark": table.inspect.files, "pyiceberg": theirs.inspect.files}, runs
        )
        out[label] = wall
        out[f"{label}, CPU time"] = cpu
    return out
