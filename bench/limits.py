"""Limits: a table with 100,000 snapshots and one with 1,000,000 data files; time and peak
memory (RSS) of loading, planning, ``inspect.files()`` and expiring them.

    python -m bench.limits                       # 100,000 snapshots, 1,000,000 files
    python -m bench.limits --snapshots 20000 --files 200000

The tables are built with icepark's own metadata paths, not by writing data: the snapshot
table gets one small real data file in one manifest, then N snapshots committed at once
(each with a manifest list of its own naming that manifest, as a table with N appends of
nothing new would have), the files table gets one real file whose manifest entry is appended
again under 1,000,000 paths by 100 commits of ``Transaction.append_files`` (100 manifests of
10,000 entries, partitions 0-99). Each measurement runs in a fresh process, so its peak RSS
is its own; interpreter and imports are counted (a bare ``import icepark`` process is
reported as the baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent


def _catalog(folder: Path) -> Any:
    import icepark

    return icepark.load_catalog(uri=f"sqlite:///{folder}/catalog.db", warehouse=str(folder))


def _small(table: Any) -> None:
    table.append(
        pa.table(
            {
                "id": pa.array(range(10), pa.int64()),
                "part": pa.array([0] * 10, pa.int32()),
            }
        )
    )


def build_snapshots(folder: Path, count: int) -> None:
    from icepark.manifest import write_manifest_list
    from icepark.planning.walk import manifests_of
    from icepark.spec.snapshots import Operation, Snapshot, Summary
    from icepark.spec.updates import AddSnapshotUpdate, SetSnapshotRefUpdate

    catalog = _catalog(folder)
    catalog.create_namespace("limits")
    table = catalog.create_table(
        "limits.snapshots",
        pa.schema([("id", pa.int64()), ("part", pa.int32())]),
        properties={"format-version": "2"},
    )
    _small(table)
    table = table.refresh()
    first = table.current_snapshot()
    manifests = manifests_of(table.io, first)
    updates: list[Any] = []
    parent, seq = first.snapshot_id, first.sequence_number
    start_ms = first.timestamp_ms
    meta = f"{table.location}/metadata"
    for i in range(count - 1):
        snapshot_id = 10_000_000 + i
        seq += 1
        path = f"{meta}/snap-{snapshot_id}-bench.avro"
        write_manifest_list(
            table.io.new_output(path),
            manifests,
            format_version=2,
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent,
            sequence_number=seq,
        )
        summary = Summary(Operation.APPEND, {"added-data-files": "0", "total-records": "10"})
        updates.append(
            AddSnapshotUpdate(
                Snapshot(snapshot_id, parent, seq, start_ms + i + 1, path, summary, 0)
            )
        )
        parent = snapshot_id
    updates.append(SetSnapshotRefUpdate("main", parent))
    table.commit([], updates)


def build_files(folder: Path, count: int) -> None:
    catalog = _catalog(folder)
    catalog.create_namespace("limits")
    table = catalog.create_table(
        "limits.files",
        pa.schema([("id", pa.int64()), ("part", pa.int32())]),
        partition_by=["part"],
        properties={"format-version": "2", "commit.manifest-merge.enabled": "false"},
    )
    _small(table)
    table = table.refresh()
    base = next(t.file for t in table.scan().plan_files())
    per_commit = 10_000
    made = 0
    for _ in range(max(count // per_commit, 1)):
        batch = []
        for _ in range(min(per_commit, count - made)):
            batch.append(
                base.replace(
                    file_path=base.file_path.replace(".parquet", f"-{made}.parquet"),
                    partition=(made % 100,),
                )
            )
            made += 1
        with table.transaction() as tx:
            tx.append_files(batch)


# -- measurements (each in a process of its own) ---------------------------------------------


def _measure(folder: Path, name: str, what: str) -> dict[str, Any]:
    """One step's time (after the catalog is open; ``load`` is the table load itself) and
    the process's peak RSS at its end."""
    if what == "baseline":
        started = time.perf_counter()
        import icepark  # noqa: F401
    else:
        catalog = _catalog(folder)
        started = time.perf_counter()
        table = catalog.load_table(name)
        if what != "load":
            started = time.perf_counter()
        if what == "plan":
            assert table.scan().plan_files()
        elif what == "plan-point":
            table.scan(filter="part = 7").plan_files()
        elif what == "plan-oldest":
            oldest = min(table.metadata.snapshots, key=lambda s: s.sequence_number)
            table.scan(snapshot_id=oldest.snapshot_id).plan_files()
        elif what == "inspect-files":
            table.inspect.files()
        elif what == "inspect-snapshots":
            table.inspect.snapshots()
        elif what == "expire":
            now = int(time.time() * 1000)
            table.expire_snapshots(older_than=now, retain_last=10)
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"what": what, "seconds": round(seconds, 3), "peak_rss_mb": round(peak_kb / 1024)}


def _run(folder: Path, name: str, what: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.limits", "--measure", str(folder), name, what],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--snapshots", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--measure", nargs=3, metavar=("FOLDER", "TABLE", "WHAT"))
    args = parser.parse_args(argv)
    if args.measure:
        folder, name, what = args.measure
        print(json.dumps(_measure(Path(folder), name, what)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        rows.append(("-", _run(base, "-", "baseline")))
        t0 = time.perf_counter()
        build_snapshots(base / "s", args.snapshots)
        print(f"built {args.snapshots:,} snapshots in {time.perf_counter() - t0:.0f} s")
        meta = sorted((base / "s").rglob("*.metadata.json"))[-1]
        print(f"metadata file: {os.path.getsize(meta) / 1e6:.1f} MB")
        for what in ("load", "plan", "plan-oldest", "inspect-snapshots", "expire"):
            measured = _run(base / "s", "limits.snapshots", what)
            rows.append((f"{args.snapshots:,} snapshots", measured))
        t0 = time.perf_counter()
        build_files(base / "f", args.files)
        print(f"built {args.files:,} data files in {time.perf_counter() - t0:.0f} s")
        for what in ("load", "plan", "plan-point", "inspect-files", "expire"):
            rows.append((f"{args.files:,} files", _run(base / "f", "limits.files", what)))
    print("\n| table | step | seconds | peak RSS (MB) |\n| --- | --- | ---: | ---: |")
    for table, r in rows:
        print(f"| {table} | {r['what']} | {r['seconds']:.2f} | {r['peak_rss_mb']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
