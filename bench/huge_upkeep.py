"""Upkeep of the huge table: ``expire_snapshots``, ``remove_orphan_files`` (one machine and on
Spark), ``rewrite_manifests`` and ``icepark doctor``, icepark next to the Java procedures
(``CALL system.expire_snapshots``, ``remove_orphan_files``, ``rewrite_manifests``) on the
same metadata (``python -m bench.huge``; ``--upkeep-only`` for these rows alone).

The table is the huge bench table (``bench/huge.py``: ``files / per_manifest`` fast appends by
the reference engine's ``AppendFiles``), built once more *at the working path* (a Hadoop
catalog warehouse ``wh`` with ``bench.huge`` in it) and kept as a template: its metadata
holds absolute paths, so a copy of the shared cache would point back at the cache, and an
expiry would delete the cache's manifest lists. Before every operation (both engines) the
metadata folder is restored from the template (not timed). For orphan removal every data
file the table references exists as an empty file (created once, with 1,000 orphans spread
over the partition folders and the metadata folder), all dated 10 days back; both engines
run it as a dry run (listing and comparing everything, deleting nothing).

Each operation runs in a fresh process of its own, both engines: icepark's timed from the
catalog's load of the table (imports done first), Java's from the ``CALL`` (its Spark
session started first; its peak RSS is the JVM's whole life, ``VmHWM``). Expiry keeps the
last 10 of the 100 snapshots: on fast appends every manifest stays live, so it deletes 90
manifest lists and reads no manifest (Java's action still reads them all).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.huge import CACHE, REF_VENV, ROOT, _java, _peak_rss_mb

DAY = 86_400
OPERATIONS = ("expire_snapshots", "remove_orphan_files", "rewrite_manifests", "doctor")
REFSPARK = ROOT.parent / "shared" / "reference-iceberg" / "refspark.py"
ORPHANS = 1_000


def _root(files: int, per_manifest: int) -> Path:
    return CACHE / f"upkeep-{files}-{per_manifest}"


def _table_dir(root: Path) -> Path:
    return root / "wh" / "bench" / "huge"


def prepare(files: int, per_manifest: int) -> Path:
    """The working folder (built once): the table, its template metadata, its data files as
    empty files and the orphans."""
    root = _root(files, per_manifest)
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    table_dir = _table_dir(root)
    table_dir.parent.mkdir(parents=True)
    print(f"building {files:,} files in {table_dir} ...", file=sys.stderr, flush=True)
    _java("build", str(table_dir), str(max(files // per_manifest, 1)), str(per_manifest))
    subprocess.run(
        [sys.executable, "-m", "bench.huge_upkeep", "--touch", str(root)], cwd=ROOT, check=True
    )
    shutil.copytree(table_dir / "metadata", root / "template")  # with its orphans
    (root / ".complete").touch()
    return root


def _touch(root: Path) -> None:
    """Every referenced data file as an empty file, the orphans, all dated 10 days back."""
    from icepark.catalog import FileSystemCatalog

    table = FileSystemCatalog("w", warehouse=str(root / "wh")).load_table("bench.huge")
    moment = time.time() - 10 * DAY
    folders: set[str] = set()
    for batch in table.inspect.batches("files"):
        for path in batch.column("file_path").to_pylist():
            folder = path.rpartition("/")[0]
            if folder not in folders:
                os.makedirs(folder, exist_ok=True)
                folders.add(folder)
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
            os.utime(path, (moment, moment))
    places = [*sorted(folders), str(_table_dir(root) / "metadata")]
    for i in range(ORPHANS):
        path = Path(places[i % len(places)]) / f"orphan-{i:05d}.parquet"
        path.write_bytes(b"orphan")
        os.utime(path, (moment, moment))


def restore(root: Path) -> None:
    """The table's metadata folder as built."""
    metadata = _table_dir(root) / "metadata"
    shutil.rmtree(metadata)
    shutil.copytree(root / "template", metadata)


def _ts(seconds: float) -> str:
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
    return f"TIMESTAMP '{moment.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def _measure(root: Path, operation: str) -> dict[str, Any]:
    """One icepark operation on the restored table, in this process."""
    from icepark import spark as ispark  # noqa: F401 - imports are not timed
    from icepark.catalog import FileSystemCatalog
    from icepark.table.maintenance.doctor import diagnose

    catalog = FileSystemCatalog("w", warehouse=str(root / "wh"))
    started = time.perf_counter()
    table = catalog.load_table("bench.huge")
    if operation == "expire_snapshots":
        found: Any = table.expire_snapshots(older_than=int(time.time() * 1000), retain_last=10)
        what = f"{sum(found.counts().values()):,} files deleted"
    elif operation == "remove_orphan_files":
        older = int((time.time() - 2 * DAY) * 1000)
        found = table.remove_orphan_files(older_than=older, dry_run=True)
        what = f"{len(found.orphan_file_locations):,} orphans"
    elif operation == "rewrite_manifests":
        found = table.rewrite_manifests()
        what = f"{found.rewritten_manifests_count} manifests into {found.added_manifests_count}"
    else:
        report = diagnose(table, orphans_older_than=int((time.time() - 2 * DAY) * 1000))
        orphans = report.orphans["count"] if report.orphans is not None else 0
        what = f"{report.data_files['count']:,} files, {orphans:,} orphans"
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "peak_mb": _peak_rss_mb(), "found": what}


def _icepark(root: Path, operation: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.huge_upkeep", "--measure", str(root), operation],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _java_peak(pid: int) -> float:
    """The largest ``VmHWM`` (MB) among ``pid``'s descendants (the JVM)."""
    peak = 0.0
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for child in children:
        status = Path(f"/proc/{child}/status").read_text()
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]) / 1024)
        peak = max(peak, _java_peak(int(child)))
    return peak


class _Refspark:
    """The reference engine's Spark session (``refspark.py --serve``) over the working
    warehouse as catalog ``w``, started when made."""

    def __init__(self, root: Path) -> None:
        self.server = subprocess.Popen(
            [str(REF_VENV / "bin" / "python"), str(REFSPARK), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._ask({"catalogs": {"w": str(root / "wh")}, "sql": ["SELECT 1"]})

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.server.stdin is not None and self.server.stdout is not None
        self.server.stdin.write(json.dumps(request) + "\n")
        self.server.stdin.flush()
        while True:
            line = self.server.stdout.readline()
            if not line:
                raise RuntimeError(f"reference engine ended on {request}")
            if line.startswith("{"):
                return dict(json.loads(line))

    def rows(self, sql: str) -> list[list[Any]]:
        answer = self._ask({"sql": [sql]})
        result = answer.get("results", [{}])[0]
        if "error" in answer or "error" in result:
            raise RuntimeError(f"{sql}: {answer}")
        return list(result["rows"])

    def close(self) -> None:
        assert self.server.stdin is not None
        self.server.stdin.close()
        self.server.wait(timeout=120)


def _reference(root: Path, operation: str) -> dict[str, Any]:
    """Java's procedure, in a Spark session of its own (started before the clock)."""
    calls = {
        "expire_snapshots": f"CALL w.system.expire_snapshots(table => 'bench.huge', "
        f"older_than => {_ts(time.time())}, retain_last => 10)",
        "remove_orphan_files": f"CALL w.system.remove_orphan_files(table => 'bench.huge', "
        f"older_than => {_ts(time.time() - 2 * DAY)}, dry_run => true)",
        "rewrite_manifests": "CALL w.system.rewrite_manifests('bench.huge')",
    }
    java = _Refspark(root)
    try:
        started = time.perf_counter()
        rows = java.rows(calls[operation])
        seconds = time.perf_counter() - started
        found = f"{len(rows):,} orphans" if operation == "remove_orphan_files" else str(rows)
        return {"seconds": seconds, "peak_mb": _java_peak(java.server.pid), "found": found}
    finally:
        java.close()


_ENTRIES = (
    "SELECT count(*), sum(xxhash64(snapshot_id, sequence_number, file_sequence_number,"
    " to_json(data_file))) FROM w.bench.huge.entries WHERE status != 2"
)


def _java_view(root: Path) -> dict[str, Any]:
    """What the reference engine reads of the table as it is: Java's ``planFiles`` (tasks
    and their bytes, ``bench/java/ManyFiles.java``), the ``files`` metadata table's count,
    the live entries (a count and an order-free hash of each one's snapshot id, sequence
    numbers and whole data file), their statuses and the manifests."""
    metadata = max(
        (_table_dir(root) / "metadata").glob("v*.metadata.json"),
        key=lambda p: int(p.name[1:].split(".")[0]),
    )
    plan = json.loads(_java("plan", str(metadata), "1").stdout.splitlines()[0])
    java = _Refspark(root)
    try:
        return {
            "plan_tasks": plan["tasks"],
            "plan_bytes": plan["bytes"],
            "files": java.rows("SELECT count(*) FROM w.bench.huge.files")[0][0],
            "entries": java.rows(_ENTRIES)[0],
            "statuses": java.rows(
                "SELECT status, count(*) FROM w.bench.huge.entries GROUP BY status ORDER BY 1"
            ),
            "manifests": java.rows("SELECT count(*) FROM w.bench.huge.manifests")[0][0],
        }
    finally:
        java.close()


def check_rewrite(files: int, per_manifest: int) -> dict[str, Any]:
    """icepark's ``rewrite_manifests`` judged by the reference engine: what Java reads of
    the table before and after it (:func:`_java_view`) is the same files, tasks and
    entries, now all EXISTING in fewer manifests. The table is restored afterwards."""
    root = prepare(files, per_manifest)
    restore(root)
    before = _java_view(root)
    ours = _icepark(root, "rewrite_manifests")
    after = _java_view(root)
    restore(root)
    same = ("plan_tasks", "plan_bytes", "files", "entries")
    return {
        "icepark": ours,
        "before": before,
        "after": after,
        "same": all(before[k] == after[k] for k in same),
        "all_existing": [s for s, _ in after["statuses"]] == [0],
    }


def compare(
    files: int,
    per_manifest: int,
    operations: tuple[str, ...] = OPERATIONS,
    reference: bool = True,
) -> list[dict[str, Any]]:
    """Each operation once per engine (Java's unless ``reference`` is false), each in a
    fresh process on the restored table, with the load average when it ended."""
    root = prepare(files, per_manifest)
    rows = []
    for operation in operations:
        restore(root)
        ours = _icepark(root, operation)
        ours["load"] = os.getloadavg()[0]
        java: dict[str, Any] | None = None
        if operation != "doctor" and reference:
            restore(root)
            java = _reference(root, operation)
        row = {
            "files": files,
            "operation": operation,
            "icepark_s": round(ours["seconds"], 2),
            "icepark_peak_mb": round(ours["peak_mb"]),
            "icepark_found": ours["found"],
            "icepark_load": round(ours["load"], 1),
            "java_load": round(os.getloadavg()[0], 1) if java else None,
            "java_s": round(java["seconds"], 2) if java else None,
            "java_peak_mb": round(java["peak_mb"]) if java else None,
            "java_found": java["found"] if java else None,
            "ratio": round(ours["seconds"] / java["seconds"], 2) if java else None,
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    restore(root)
    return rows


def table_text(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| files | operation | icepark | peak RSS | Java procedure | JVM peak RSS | ratio "
        "| load average (icepark / Java) |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        java = "-" if r["java_s"] is None else f"{r['java_s']:.1f} s"
        jpeak = "-" if r["java_peak_mb"] is None else f"{r['java_peak_mb']} MB"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        lines.append(
            f"| {r['files']:,} | {r['operation']} | {r['icepark_s']:.1f} s "
            f"| {r['icepark_peak_mb']} MB | {java} | {jpeak} | {ratio} "
            f"| {r['icepark_load']} / {'-' if r['java_load'] is None else r['java_load']} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``[FILES] [--only OPERATION]... [--no-reference] [--check-rewrite]`` (and the
    internal ``--measure`` / ``--touch``)."""
    if argv[:1] == ["--measure"]:
        print(json.dumps(_measure(Path(argv[1]), argv[2])))
        return 0
    if argv[:1] == ["--touch"]:
        _touch(Path(argv[1]))
        return 0
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.huge_upkeep")
    parser.add_argument("files", nargs="?", type=int, default=1_000_000)
    parser.add_argument("--only", action="append", choices=OPERATIONS)
    parser.add_argument("--no-reference", action="store_true", help="icepark's side only")
    parser.add_argument(
        "--check-rewrite", action="store_true", help="the reference engine judges the rewrite"
    )
    args = parser.parse_args(argv)
    if args.check_rewrite:
        print(json.dumps(check_rewrite(args.files, 10_000)))
        return 0
    operations = tuple(args.only) if args.only else OPERATIONS
    rows = compare(args.files, 10_000, operations, reference=not args.no_reference)
    print(table_text(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
