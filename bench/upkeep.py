"""The upkeep benchmarks: expiring snapshots and removing orphan files (``--only upkeep``).

One table, built once by icepark and kept as a template: ``bench.upkeep``, SNAPSHOTS merge
appends of 10 files each (10 identity partitions), so 10,000 data files for 1,000 snapshots
(100 snapshots with ``--small``). Every timed run, and its warm-up, first restores the table
from the template at the same absolute paths (not timed), so that both engines start from the
same files:

* **expire_snapshots**, keeping the last 10: ``table.expire_snapshots(older_than=now,
  retain_last=10)`` against the reference engine's ``CALL ref.system.expire_snapshots(table
  => 'bench.upkeep', older_than => TIMESTAMP now, retain_last => 10)``;
* **remove_orphan_files** with one orphan per 10 files (1,000) spread over the data and
  metadata folders, every file dated 10 days back: ``table.remove_orphan_files(older_than=
  2 days ago)`` on one machine and ``icepark.spark.remove_orphan_files(spark, ...)`` against
  ``CALL ref.system.remove_orphan_files(table => 'bench.upkeep', older_than => ...)``.

This module is imported by ``bench/run.py`` (icepark's side) and by ``bench/ref_timings.py``
(the reference engine's, which has no icepark): only the file helpers are at module level.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

FILES_PER_SNAPSHOT = 10
RETAIN_LAST = 10
NAMESPACE, NAME = "bench", "upkeep"
DAY = 86_400


def expire_name(snapshots: int) -> str:
    return f"expire_snapshots ({snapshots:,} snapshots, keep {RETAIN_LAST})"


def orphans_name(snapshots: int) -> str:
    files = snapshots * FILES_PER_SNAPSHOT
    return f"remove_orphan_files ({files:,} files, {files // 10:,} orphans)"


def paths(root: Path) -> tuple[Path, Path, Path]:
    """The working warehouse, the table folder in it, and the template copy."""
    warehouse = root / "wh"
    return warehouse, warehouse / NAMESPACE / NAME, root / "template"


def restore(root: Path) -> None:
    """Put the table back as built (same files, same absolute paths)."""
    _, table_dir, template = paths(root)
    shutil.rmtree(table_dir, ignore_errors=True)
    shutil.copytree(template, table_dir)


def add_orphans(root: Path, snapshots: int) -> list[str]:
    """One orphan per 10 files: in every partition folder and in the metadata folder, all
    files dated 10 days back (so that they are old enough for both engines)."""
    _, table_dir, _ = paths(root)
    folders = sorted(p for p in (table_dir / "data").iterdir() if p.is_dir())
    folders.append(table_dir / "metadata")
    count = snapshots * FILES_PER_SNAPSHOT // 10
    made = []
    for i in range(count):
        folder = folders[i % len(folders)]
        suffix = ".avro" if folder.name == "metadata" else ".parquet"
        path = folder / f"orphan-{i:05d}{suffix}"
        path.write_bytes(b"orphan" * 100)
        made.append(str(path))
    moment = time.time() - 10 * DAY
    for path in table_dir.rglob("*"):
        os.utime(path, (moment, moment))
    return made


def build(root: Path, snapshots: int) -> None:
    """Build the template once (a marker file says it finished)."""
    marker = root / ".icepark-upkeep-complete"
    if marker.exists():
        return
    import pyarrow as pa

    from icepark.catalog import FileSystemCatalog

    shutil.rmtree(root, ignore_errors=True)
    warehouse, table_dir, template = paths(root)
    warehouse.mkdir(parents=True)
    print(f"building {NAMESPACE}.{NAME}: {snapshots:,} snapshots ...", flush=True)
    catalog = FileSystemCatalog("upkeep", warehouse=str(warehouse))
    catalog.create_namespace(NAMESPACE)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
    table = catalog.create_table(
        f"{NAMESPACE}.{NAME}",
        schema,
        partition_by=["part"],
        properties={
            "format-version": "2",
            # keep the metadata folder small: 1,000 commits would leave 1,000 metadata files
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": "10",
        },
    )
    for s in range(snapshots):
        ids = list(range(s * 100, s * 100 + 100))
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "part": pa.array([i % FILES_PER_SNAPSHOT for i in ids], pa.int32()),
                }
            )
        )
    shutil.copytree(table_dir, template)
    marker.write_text("ok\n")


def measure(
    spark: Any, root: Path, snapshots: int, runs: int
) -> tuple[dict[str, dict[str, list[float]]], dict[str, str]]:
    """icepark's timings (a warm-up, then ``runs`` runs, each on a restored table), and what
    each run found (checks)."""
    from icepark import spark as ispark
    from icepark.catalog import FileSystemCatalog

    warehouse, _, _ = paths(root)
    catalog = FileSystemCatalog("upkeep", warehouse=str(warehouse))
    ident = f"{NAMESPACE}.{NAME}"

    def expire() -> Any:
        table = catalog.load_table(ident)
        return table.expire_snapshots(older_than=int(time.time() * 1000), retain_last=RETAIN_LAST)

    def orphans_local() -> Any:
        table = catalog.load_table(ident)
        return table.remove_orphan_files(older_than=int((time.time() - 2 * DAY) * 1000))

    def orphans_spark() -> Any:
        table = catalog.load_table(ident)
        return ispark.remove_orphan_files(
            spark, table, older_than=int((time.time() - 2 * DAY) * 1000)
        )

    out: dict[str, dict[str, list[float]]] = {}
    checks: dict[str, str] = {}
    timed: dict[str, list[float]] = {"icepark": []}
    for i in range(runs + 1):
        restore(root)
        started = time.perf_counter()
        result = expire()
        took = time.perf_counter() - started
        if i:
            timed["icepark"].append(took)
        left = len(catalog.load_table(ident).snapshots())
        checks["expire"] = (
            f"{left} snapshots left; {sum(result.counts().values()):,} files deleted "
            f"({result.deleted_data_files_count:,} data, {result.deleted_manifest_files_count:,} "
            f"manifests, {result.deleted_manifest_lists_count:,} manifest lists)"
        )
    out[expire_name(snapshots)] = {"icepark": timed["icepark"]}

    times: dict[str, list[float]] = {"icepark": [], "icepark on Spark": []}
    for i in range(runs + 1):
        for label, fn in (("icepark", orphans_local), ("icepark on Spark", orphans_spark)):
            restore(root)
            made = add_orphans(root, snapshots)
            started = time.perf_counter()
            result = fn()
            took = time.perf_counter() - started
            if i:
                times[label].append(took)
            ok = sorted(result) == sorted(made)
            key = "orphans" if label == "icepark" else "orphans on Spark"
            checks[key] = f"{len(result):,} deleted, as planted: {ok}"
    out[orphans_name(snapshots)] = times
    return out, checks


def reference(spark: Any, root: Path, snapshots: int, runs: int) -> dict[str, list[Any]]:
    """The reference engine's timings (run by bench/ref_timings.py with its Spark session):
    ``CALL system.expire_snapshots`` and ``CALL system.remove_orphan_files`` on the same
    restored table, through a Hadoop catalog ``upkeep`` over the working warehouse."""
    import datetime as dt

    warehouse, _, _ = paths(root)
    spark.conf.set("spark.sql.catalog.upkeep", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.upkeep.type", "hadoop")
    spark.conf.set("spark.sql.catalog.upkeep.warehouse", "file://" + str(warehouse.resolve()))
    table = f"upkeep.{NAMESPACE}.{NAME}"

    def ts(seconds: float) -> str:
        moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
        return f"TIMESTAMP '{moment.strftime('%Y-%m-%d %H:%M:%S.%f')}'"

    out: dict[str, list[Any]] = {expire_name(snapshots): [], orphans_name(snapshots): []}
    for i in range(runs + 1):
        restore(root)
        spark.sql(f"REFRESH TABLE {table}")
        started = time.perf_counter()
        row = spark.sql(
            f"CALL upkeep.system.expire_snapshots(table => '{NAMESPACE}.{NAME}',"
            f" older_than => {ts(time.time())}, retain_last => {RETAIN_LAST})"
        ).collect()[0]
        took = time.perf_counter() - started
        if i:
            out[expire_name(snapshots)].append(took)
        left = spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0]
        out["check: expire"] = [f"{left} snapshots left; {sum(row):,} files deleted {list(row)}"]
    for i in range(runs + 1):
        restore(root)
        made = add_orphans(root, snapshots)
        spark.sql(f"REFRESH TABLE {table}")
        started = time.perf_counter()
        rows = spark.sql(
            f"CALL upkeep.system.remove_orphan_files(table => '{NAMESPACE}.{NAME}',"
            f" older_than => {ts(time.time() - 2 * DAY)})"
        ).collect()
        took = time.perf_counter() - started
        if i:
            out[orphans_name(snapshots)].append(took)
        found = sorted(r[0].removeprefix("file:") for r in rows)
        out["check: orphans"] = [f"{len(rows):,} deleted, as planted: {found == sorted(made)}"]
    return out
