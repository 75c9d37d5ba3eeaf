"""icepark on Spark against Spark's own Parquet reader and writer, and the reference engine.

    python -m bench.run [--small] [--runs N] [--warehouse DIR] [--no-reference]
    python -m bench.run --scale large   # the large set (bench/large.py)

See bench/README.md. Builds the standard tables once (with the reference engine), then times
each query side by side in one run, on local[2], and prints a table of medians and ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import queries as Q
from bench import upkeep
from bench.timing import alternate

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ICEPARK_SHARED", ROOT.parent / "shared"))
REF_PYTHON = Path(os.environ.get("ICEPARK_REF_VENV", ROOT / ".venv-ref")) / "bin" / "python"
MAKE_TABLES = SHARED / "bench-tables" / "make_tables.py"
COLS = """id, TIMESTAMP '2024-01-01 00:00:00' + make_interval(0,0,0,0,0,0, id % (30*86400)) AS ts,
  concat('cat-', CAST(id % 100 AS STRING)) AS category, CAST(id % 1000 AS DOUBLE) / 7 AS amount,
  CAST(id % 97 AS INT) AS qty, id % 3 = 0 AS flag, sha2(CAST(id AS STRING), 256) AS note"""
SECTIONS = {
    "reads",
    "writes",
    "row-level",
    "upkeep",
    "avro",
    "inspect",
    "local",
    "compaction",
    "streaming",
    "rest",
    "sql",
    "connect",
}
# sections that build tables of their own (the standard tables are not needed for them)
_OWN_TABLES = {"upkeep", "avro", "rest"}


def _ensure_tables(warehouse: Path, rows: int, files: int, commits: int) -> None:
    marker = warehouse / ".icepark-bench-complete"
    if marker.exists():
        return
    if not REF_PYTHON.exists() or not MAKE_TABLES.exists():
        sys.exit(f"Need {REF_PYTHON} (make reference) and {MAKE_TABLES} to build the tables")
    shutil.rmtree(warehouse, ignore_errors=True)
    warehouse.mkdir(parents=True)
    print(f"building tables in {warehouse} ({rows} rows, {files} files) ...", flush=True)
    subprocess.run(
        [str(REF_PYTHON), str(MAKE_TABLES), str(warehouse), str(rows), str(files), str(commits)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    marker.write_text("ok\n")


def _reference(
    warehouse: Path,
    runs: int,
    point: int,
    write_rows: int,
    merge_rows: int,
    sections: set[str],
    upkeep_root: Path,
    snapshots: int,
    streaming: tuple[int, str] | None = None,
    extra: dict[str, object] | None = None,
) -> dict[str, Any]:
    script = Path(__file__).with_name("ref_timings.py")
    args: dict[str, object] = {
        **(extra or {}),
        "warehouse": str(warehouse),
        "runs": runs,
        "point": point,
        "write_rows": write_rows,
        "merge_rows": merge_rows,
        "sections": sorted(sections),
        "upkeep_root": str(upkeep_root),
        "snapshots": snapshots,
    }
    if streaming:
        args["sink_rows_per_batch"], args["appends_table"] = streaming[0], str(streaming[1])
    done = subprocess.run(
        [str(REF_PYTHON), str(script), json.dumps(args)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:  # show why: the last lines Java printed
        errors = [line for line in done.stderr.splitlines() if "WARN" not in line]
        sys.exit("reference engine failed:\n" + "\n".join(errors[-30:]))
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return dict(json.loads(lines[-1]))


CONNECT_PORT: list[int] = []  # the Connect server of the bench's session, when asked for


def _session(connect: bool = False) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("icepark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if connect:  # a Spark Connect server in the same application (bench/connect.py)
        from bench.connect import free_port

        CONNECT_PORT.append(free_port())
        builder = (
            builder.config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
            .config("spark.connect.grpc.binding.address", "127.0.0.1")
            .config("spark.connect.grpc.binding.port", str(CONNECT_PORT[-1]))
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _measure(
    spark: Any,
    warehouse: Path,
    runs: int,
    point: int,
    write_rows: int,
    merge_rows: int,
    sections: set[str] = SECTIONS,
    small: bool = False,
) -> dict[str, dict[str, list[float]]]:
    from pyspark.sql import functions as F

    from bench.avro_bench import measure as measure_avro
    from icepark.catalog import FileSystemCatalog
    from icepark.spark import write

    if sections == {"avro"}:  # needs only its own table
        return measure_avro(spark, warehouse, runs, write_rows, _check)
    catalog = FileSystemCatalog("bench", warehouse=str(warehouse))
    out: dict[str, dict[str, list[float]]] = {}
    if "compaction" in sections:
        out.update(_measure_compaction(spark, catalog, runs, write_rows))
    if sections <= {"compaction"}:
        return out
    wide = catalog.load_table("bench.wide")
    many = catalog.load_table("bench.many")
    schema = wide.schema()
    if "reads" in sections:
        out.update(read_rows(spark, wide, many, point, runs))

    if "writes" in sections:
        scratch = Path(tempfile.mkdtemp(prefix="icepark-bench-write-"))
        try:
            writes = FileSystemCatalog("writes", warehouse=str(scratch / "wh"))
            writes.create_namespace("w")
            df = spark.range(write_rows).selectExpr(*[c.strip() for c in _split_cols(COLS)])
            counter = iter(range(1000))

            def ours(mode: str) -> None:
                name = f"w.t{next(counter)}"
                props = {"write.distribution-mode": mode}
                table = writes.create_table(
                    name, schema, partition_by=["day(ts)"], properties=props
                )
                write(df, table)

            def native() -> None:
                target = scratch / f"native-{next(counter)}"
                (
                    df.withColumn("ts_day", F.to_date("ts"))
                    .write.option("compression", "zstd")
                    .partitionBy("ts_day")
                    .parquet(str(target))
                )

            writes_timed = alternate(
                {"icepark": lambda: ours("none"), "hash": lambda: ours("hash"), "native": native},
                runs,
            )
            out["partitioned write"] = {
                "icepark": writes_timed["icepark"],
                "native": writes_timed["native"],
            }
            out["partitioned write (hash distribution)"] = {
                "icepark": writes_timed["hash"],
                "native": writes_timed["native"],
            }
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    if "sql" in sections:
        from bench import sql_bench

        out.update(
            sql_bench.measure(
                spark,
                warehouse,
                runs,
                point,
                write_rows,
                merge_rows,
                COLS,
                _check,
                CHECKS,
            )
        )
    if "row-level" in sections:
        out.update(_measure_row_level(spark, schema, runs, write_rows, merge_rows))
    if "avro" in sections:
        out.update(measure_avro(spark, warehouse, runs, write_rows, _check))
    if "inspect" in sections:
        from bench.inspect_bench import measure_inspect

        out.update(measure_inspect(warehouse, runs, CHECKS))
    if "local" in sections:
        from bench.local_reads import measure_local

        out.update(measure_local(warehouse, runs, point, CHECKS))
    if "streaming" in sections:
        from bench import streaming

        cols = [c.strip() for c in _split_cols(COLS)]
        out.update(streaming.measure(spark, warehouse, runs, small, cols, schema))
    if "connect" in sections:
        from bench import connect

        cols = [c.strip() for c in _split_cols(COLS)]
        remote = connect.connect_session(CONNECT_PORT[-1])
        try:
            out.update(
                connect.measure(
                    spark, remote, warehouse, runs, point, write_rows, merge_rows, cols, small
                )
            )
        finally:  # its client's threads would keep the process alive after the report
            with connect._mode(True):
                remote.stop()
    return out


SUMMARIES: dict[str, list[Any]] = {}  # the read rows' answers, checked against Java's


def read_rows(
    spark: Any,
    wide: Any,
    point_table: Any,
    point: int,
    runs: int,
    python_path: bool = True,
    loads: dict[str, str] | None = None,
) -> dict[str, dict[str, list[float]]]:
    """The read rows of ``bench/queries.py`` on these tables: icepark's ``read`` next to
    Spark's Parquet reader on the same files, alternating; each row's answer goes to
    :data:`SUMMARIES`. ``python_path`` adds the full scan through icepark's Python tasks;
    ``loads`` gets each row's load average (before -> after)."""
    loads = loads if loads is not None else {}
    from pyspark.sql import functions as F

    from icepark.spark import read
    from icepark.spark.paths import to_spark_location

    def paths(table: Any, filter: str | None = None) -> list[str]:
        tasks = table.scan(filter=filter).plan_files()
        return [to_spark_location(t.file.file_path) for t in tasks]

    wide_paths, point_paths = paths(wide), paths(point_table)
    day_paths = paths(wide, Q.TWO_DAYS_FILTER)
    aggs = [F.count("*"), F.sum("amount"), F.max("note")]
    in_days = (F.col("ts") >= F.timestamp_micros(F.lit(Q.DAY_5))) & (
        F.col("ts") < F.timestamp_micros(F.lit(Q.DAY_7))
    )
    out: dict[str, dict[str, list[float]]] = {}
    full = Q.FULL_SCAN
    started = load_average()
    out[full] = alternate(
        {
            "icepark": lambda: read(spark, wide).agg(*aggs).collect(),
            "native": lambda: spark.read.parquet(*wide_paths).agg(*aggs).collect(),
        },
        runs,
    )
    loads[full] = f"{started} -> {load_average()}"
    SUMMARIES[full] = Q.summary(read(spark, wide).agg(*aggs).collect())
    if python_path:  # in a group of its own: its Python workers would disturb the others
        timed = alternate(
            {"icepark": lambda: read(spark, wide, path="python").agg(*aggs).collect()}, runs
        )
        out[f"{full} (python path)"] = {"icepark": timed["icepark"], "native": out[full]["native"]}
    days = Q.TWO_DAYS
    started = load_average()
    out[days] = alternate(
        {
            "icepark": lambda: read(spark, wide, filter=Q.TWO_DAYS_FILTER).agg(*aggs).collect(),
            "native": lambda: spark.read.parquet(*wide_paths).filter(in_days).agg(*aggs).collect(),
            "native, files pruned by hand": lambda: (
                spark.read.parquet(*day_paths).filter(in_days).agg(*aggs).collect()
            ),
        },
        runs,
    )
    loads[days] = f"{started} -> {load_average()}"
    SUMMARIES[days] = Q.summary(read(spark, wide, filter=Q.TWO_DAYS_FILTER).agg(*aggs).collect())
    name = Q.point_name(point_table.name)
    started = load_average()
    out[name] = alternate(
        {
            "icepark": lambda: read(spark, point_table, filter=f"id = {point}").collect(),
            "native": lambda: (
                spark.read.parquet(*point_paths).filter(F.col("id") == point).collect()
            ),
        },
        runs,
    )
    loads[name] = f"{started} -> {load_average()}"
    SUMMARIES[name] = Q.summary(read(spark, point_table, filter=f"id = {point}").collect())
    return out


def load_average() -> str:
    """The machine's load average over 1 and 5 minutes (it is shared: say it with figures)."""
    return "{:.1f}/{:.1f}".format(*os.getloadavg()[:2])


def check_summaries(ref: dict[str, Any]) -> None:
    """Each read row's answer against the reference engine's (a CHECK FAILED when they
    differ), into :data:`CHECKS`."""
    for name, mine in SUMMARIES.items():
        theirs = ref.get(f"check: {name}")
        if theirs is None:
            CHECKS[name] = f"{mine}"
            continue
        agree = Q.same(mine, theirs)
        _check(agree, f"{name}: icepark {mine} != reference {theirs}")
        CHECKS[name] = f"{mine} ({'the same as' if agree else 'DIFFERS from'} the reference's)"


ROW_LEVEL_PROPS = {
    "format-version": "2",
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    "write.distribution-mode": "hash",  # as the reference engine's INSERT: a file per day
}
CHECKS: dict[str, str] = {}  # what the row-level runs checked, printed under the table


def merge_name(merge_rows: int) -> str:
    return f"MoR merge {merge_rows // 1000}k (half updates, half inserts)"


def _measure_row_level(
    spark: Any, schema: Any, runs: int, write_rows: int, merge_rows: int
) -> dict[str, dict[str, list[float]]]:
    """A merge-on-read delete of 1% of the rows, full scans before and after it, and a merge
    of ``merge_rows`` rows (half updates, half inserts). Every run (and the warm-up) changes a
    fresh table of ``write_rows`` rows, written before the timing."""
    from pyspark.sql import functions as F

    from icepark.catalog import FileSystemCatalog
    from icepark.spark import merge, read, write

    aggs = [F.count("*"), F.sum("amount"), F.max("note")]
    df = spark.range(write_rows).selectExpr(*[c.strip() for c in _split_cols(COLS)])
    scratch = Path(tempfile.mkdtemp(prefix="icepark-bench-rowlevel-"))
    out: dict[str, dict[str, list[float]]] = {}
    try:
        catalog = FileSystemCatalog("rowlevel", warehouse=str(scratch / "wh"))
        catalog.create_namespace("r")
        counter = iter(range(1000))

        def fresh() -> Any:
            name = f"r.t{next(counter)}"
            table = catalog.create_table(
                name, schema, partition_by=["day(ts)"], properties=ROW_LEVEL_PROPS
            )
            write(df, table)
            return catalog.load_table(name)

        def delete_files(table: Any) -> int:
            tasks = catalog.load_table(table.name).scan().plan_files()
            return len({d.file_path for t in tasks for d in t.delete_files})

        # 1. delete 1% of the rows, spread over every file (icepark cannot parse "%")
        pool = [fresh() for _ in range(runs + 1)]
        targets = list(pool)
        deleted = alternate({"icepark": lambda: delete_one_percent(spark, targets.pop())}, runs)
        out[Q.DELETE] = deleted

        # 2. full scan before and after it
        before = fresh()
        after = catalog.load_table(pool[-1].name)
        scans = alternate(
            {
                "icepark": lambda: read(spark, after).agg(*aggs).collect(),
                "before": lambda: read(spark, before).agg(*aggs).collect(),
            },
            runs,
        )
        out[Q.AFTER_DELETE] = {
            "icepark": scans["icepark"],
            "icepark before the delete": scans["before"],
        }
        n_before = read(spark, before).agg(*aggs).collect()[0]
        n_after = read(spark, after).agg(*aggs).collect()[0]
        expected = write_rows - len(range(7, write_rows, 100))
        _check(n_before[0] == write_rows, f"count before the delete {n_before[0]}")
        _check(n_after[0] == expected, f"count after the delete {n_after[0]} != {expected}")
        files = delete_files(after)
        _check(files > 0, "the MoR delete wrote no delete file")
        CHECKS[Q.DELETE] = f"{n_after[0]:,} rows left, {files} delete files"

        # 3. merge: half of the source's ids are in the table (spread over it), half new
        half = merge_rows // 2
        step = write_rows // half
        ids = spark.range(half).select((F.col("id") * step + 3).alias("id"))
        ids = ids.unionByName(spark.range(write_rows, write_rows + half))
        source = ids.selectExpr(*[c.strip() for c in _split_cols(COLS)]).withColumn(
            "amount", F.col("amount") + 1
        )
        pool = [fresh() for _ in range(runs + 1)]
        targets = list(pool)
        name = merge_name(merge_rows)
        out[name] = alternate(
            {
                "icepark": lambda: merge(
                    spark,
                    targets.pop(),
                    source,
                    on="id",
                    when_matched_update="*",
                    when_not_matched_insert="*",
                )
            },
            runs,
        )
        merged = read(spark, catalog.load_table(pool[0].name))
        got = merged.agg(F.count("*"), F.countDistinct("id"), F.sum("amount")).collect()[0]
        inserted = source.filter(F.col("id") >= write_rows).agg(F.sum("amount")).collect()[0][0]
        want_sum = n_before[1] + half + inserted
        _check(got[0] == write_rows + half, f"count after the merge {got[0]}")
        _check(got[1] == got[0], f"{got[0] - got[1]} duplicate ids after the merge")
        _check(abs(got[2] - want_sum) < 1e-6 * abs(want_sum), f"sum {got[2]} != {want_sum}")
        files = delete_files(pool[0])
        _check(files > 0, "the MoR merge wrote no delete file")
        CHECKS["merge"] = f"{got[0]:,} rows, sum(amount) {got[2]:.6g}, {files} delete files"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


MANY_COPY = "bench.many_compact"
COMPACTION_DATA = Q.COMPACTION_DATA
COMPACTION_DELETES = Q.COMPACTION_DELETES
COMPACTION_SCAN = Q.COMPACTION_SCAN


def binpack_name(files: int) -> str:
    return f"bin-pack {files:,} small files"


def prepare_many_copy(warehouse: Path) -> tuple[int, int]:
    """A copy of bench.many that compaction may change: a new table holding the same data
    files (registered with add_files, not copied; compaction writes into the copy's own
    folder and never deletes them). Returns its snapshot id and file count."""
    from icepark.catalog import FileSystemCatalog

    catalog = FileSystemCatalog("bench", warehouse=str(warehouse))
    shutil.rmtree(warehouse / "bench" / "many_compact", ignore_errors=True)
    many = catalog.load_table("bench.many")
    files = [t.file.file_path for t in many.scan().plan_files()]
    copy = catalog.create_table(
        MANY_COPY,
        many.schema(),
        partition_by=["day(ts)"],
        properties={"format-version": "2", "commit.manifest-merge.enabled": "false"},
    )
    started = time.perf_counter()
    result = copy.add_files(files)
    took = time.perf_counter() - started
    print(f"add_files of {result.added_files_count:,} files into {MANY_COPY}: {took:.1f} s")
    head = catalog.load_table(MANY_COPY).current_snapshot()
    assert head is not None
    return head.snapshot_id, len(files)


def _reset(table: Any, snapshot_id: int) -> None:
    """Point main back at ``snapshot_id`` (the files written since stay, unreferenced)."""
    from icepark.spec.snapshots import SnapshotRefType
    from icepark.spec.updates import AssertRefSnapshotId, SetSnapshotRefUpdate

    table.refresh()
    head = table.current_snapshot()
    table.commit(
        [AssertRefSnapshotId("main", head.snapshot_id if head else None)],
        [SetSnapshotRefUpdate("main", snapshot_id, SnapshotRefType.BRANCH)],
    )


def _measure_compaction(
    spark: Any, catalog: Any, runs: int, write_rows: int
) -> dict[str, dict[str, list[float]]]:
    """Bin-pack the copy of bench.many (reset to its first snapshot after every run), and on
    fresh tables of ``write_rows`` rows, after a merge-on-read delete of 1%:
    rewrite_position_delete_files then rewrite_data_files, and full scans after them, after
    the delete alone and before it."""
    from pyspark.sql import functions as F

    from icepark.catalog import FileSystemCatalog
    from icepark.spark import (
        read,
        rewrite_data_files,
        write,
    )

    out: dict[str, dict[str, list[float]]] = {}
    copy = catalog.load_table(MANY_COPY)
    start = copy.current_snapshot().snapshot_id
    files = len(copy.scan().plan_files())
    results: list[Any] = []

    def binpack() -> None:
        table = catalog.load_table(MANY_COPY)
        results.append(rewrite_data_files(spark, table))
        after = catalog.load_table(MANY_COPY)
        CHECKS["bin-pack"] = (
            f"{results[-1].rewritten_data_files_count:,} files into "
            f"{len(after.scan().plan_files())}, {after.scan().count():,} rows"
        )
        _reset(after, start)

    out[binpack_name(files)] = alternate({"icepark": binpack}, runs)
    _check(results[-1].rewritten_data_files_count == files, f"bin-pack rewrote {results[-1]}")

    aggs = [F.count("*"), F.sum("amount"), F.max("note")]
    df = spark.range(write_rows).selectExpr(*[c.strip() for c in _split_cols(COLS)])
    scratch = Path(tempfile.mkdtemp(prefix="icepark-bench-compaction-"))
    try:
        tables = FileSystemCatalog("compaction", warehouse=str(scratch / "wh"))
        tables.create_namespace("c")
        counter = iter(range(1000))
        schema = catalog.load_table("bench.many").schema()

        def fresh(deleted: bool) -> Any:
            name = f"c.t{next(counter)}"
            table = tables.create_table(
                name, schema, partition_by=["day(ts)"], properties=ROW_LEVEL_PROPS
            )
            write(df, table)
            if deleted:
                delete_one_percent(spark, tables.load_table(name))
            return tables.load_table(name)

        pool = [fresh(True) for _ in range(runs + 1)]
        targets = list(pool)
        deletes_times: list[float] = []
        data_times: list[float] = []
        for i, table in enumerate(targets):
            took, took_data, result = compact(spark, tables, table)
            if i:  # the first is the warm-up
                deletes_times.append(took)
                data_times.append(took_data)
        out[COMPACTION_DELETES] = {"icepark": deletes_times}
        out[COMPACTION_DATA] = {"icepark": data_times}
        compacted = tables.load_table(pool[-1].name)
        deleted = fresh(True)
        before = fresh(False)
        scans = alternate(
            {
                "icepark": lambda: read(spark, compacted).agg(*aggs).collect(),
                "before": lambda: read(spark, before).agg(*aggs).collect(),
                "deleted": lambda: read(spark, deleted).agg(*aggs).collect(),
            },
            runs,
        )
        out[COMPACTION_SCAN] = {
            "icepark": scans["icepark"],
            "icepark before the delete": scans["before"],
            "icepark after the delete, not compacted": scans["deleted"],
        }
        count = read(spark, compacted).count()
        expected = write_rows - len(range(7, write_rows, 100))
        tasks = compacted.scan().plan_files()
        with_deletes = sum(1 for t in tasks if t.delete_files)
        _check(count == expected, f"count after compaction {count} != {expected}")
        _check(with_deletes == 0, f"{with_deletes} files still have deletes after compaction")
        CHECKS["compaction"] = (
            f"{count:,} rows, {len(tasks)} data files, {with_deletes} with deletes; last rewrite "
            f"{result.rewritten_data_files_count} files, {result.removed_delete_files_count} "
            f"delete files removed"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def delete_one_percent(spark: Any, table: Any) -> None:
    """The row-level rows' delete: ``id % 100 = 7``, 1% of the rows spread over every file
    (icepark's filter parser has no ``%``: a Spark Column)."""
    from pyspark.sql import functions as F

    from icepark.spark import delete

    delete(spark, table, F.col("id") % 100 == 7)


def compact(spark: Any, catalog: Any, table: Any) -> tuple[float, float, Any]:
    """After a delete: rewrite_position_delete_files, then rewrite_data_files of the files
    with deletes, with the options Java is given (bench/queries.py); the seconds of each
    and the data rewrite's result."""
    from icepark.spark import rewrite_data_files, rewrite_position_delete_files

    started = time.perf_counter()
    rewrite_position_delete_files(spark, table, options=Q.REWRITE_DELETES_OPTIONS)
    took = time.perf_counter() - started
    table = catalog.load_table(table.name)
    started = time.perf_counter()
    result = rewrite_data_files(spark, table, options=Q.REWRITE_DATA_OPTIONS)
    return took, time.perf_counter() - started, result


def _check(ok: bool, what: str) -> None:
    if not ok:
        print(f"CHECK FAILED: {what}", flush=True)
        CHECKS.setdefault("failed", "")
        CHECKS["failed"] += what + "; "


def _split_cols(cols: str) -> list[str]:
    """Split the SELECT list at top-level commas."""
    parts, depth, current = [], 0, ""
    for ch in cols:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    parts.append(current)
    return parts


def _fmt(times: list[float] | None) -> str:
    return "-" if not times else f"{statistics.median(times):8.2f}"


def _ratio(a: list[float] | None, b: list[float] | None) -> str:
    if not a or not b:
        return "-"
    return f"{statistics.median(a) / statistics.median(b):6.2f}x"


def _print(
    results: dict[str, dict[str, list[float]]],
    ref: dict[str, Any],
    header: str,
    loads: dict[str, str] | None = None,
) -> None:
    """The table of medians and ratios, the checks under it; ``loads`` (row -> load
    average) adds a column."""
    print(header)
    cols = (
        f"{'query':44} {'icepark s':>10} {'native s':>10} {'ice/nat':>8} {'ref s':>8}"
        f" {'ice/ref':>8}" + ("  load" if loads else "")
    )
    print(cols)
    print("-" * len(cols))
    for name, row in results.items():
        theirs = ref.get(name) or ref.get(name.split(" (")[0])
        native = row.get("native")
        print(
            f"{name:44} {_fmt(row['icepark']):>10} {_fmt(native):>10} "
            f"{_ratio(row['icepark'], native):>8} {_fmt(theirs):>8}"
            f" {_ratio(row['icepark'], theirs):>8}"
            + (f"  {loads.get(name, '')}" if loads else "")
            + (f"; ref {ref[f'load: {name}']}" if loads and f"load: {name}" in ref else "")
        )
        for extra, times in row.items():
            if extra not in ("icepark", "native"):
                print(f"  {extra:42} {'':>10} {_fmt(times):>10} {_ratio(row['icepark'], times):>8}")
    if "full scan after MoR delete" in results:
        scans = results["full scan after MoR delete"]
        mine = _ratio(scans["icepark"], scans["icepark before the delete"])
        theirs = _ratio(
            ref.get("full scan after MoR delete"), ref.get("full scan before MoR delete")
        )
        print(
            f"full scan after/before the MoR delete: icepark {mine.strip()},"
            f" reference {theirs.strip()}"
        )
    if COMPACTION_SCAN in results:
        scans = results[COMPACTION_SCAN]
        mine = _ratio(scans["icepark"], scans["icepark before the delete"])
        deleted = _ratio(
            scans["icepark after the delete, not compacted"], scans["icepark before the delete"]
        )
        theirs = _ratio(ref.get(COMPACTION_SCAN), ref.get("full scan before the delete"))
        theirs_deleted = _ratio(
            ref.get("full scan after the delete"), ref.get("full scan before the delete")
        )
        print(
            f"full scan after compaction / before the delete: icepark {mine.strip()}, reference"
            f" {theirs.strip()}; after the delete alone: icepark {deleted.strip()}, reference"
            f" {theirs_deleted.strip()}"
        )
    if "parse + plan of a statement (no job)" in results:
        from bench.sql_bench import OVERHEAD, overhead_summary

        print(f"{OVERHEAD}: {overhead_summary(results[OVERHEAD]['icepark'])}")
    for what, result in CHECKS.items():
        ref_result = ref.get(f"check: {what}")
        print(
            f"check {what}: icepark {result}" + (f"; reference {ref_result}" if ref_result else "")
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--small", action="store_true", help="2M rows / 1,000 files; 1M rows written, 20k merged"
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="timed runs per query (after a warm-up)"
    )
    parser.add_argument(
        "--scale",
        choices=("standard", "large", "tiny"),
        default="standard",
        help="large: the large set (bench/large.py: 100M rows in 100 files, planning at 10k,"
        " 100k and 1M files); tiny: the large set's steps on small tables",
    )
    parser.add_argument(
        "--write-runs", type=int, default=1, help="runs of each write of the large set"
    )
    parser.add_argument("--warehouse", help="where the tables are (built there if absent)")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference engine")
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(SECTIONS),
        help="run only these sections (repeatable; default: all)",
    )
    args = parser.parse_args(argv)
    if args.scale != "standard":
        from bench import large

        large.main(args.scale, args.runs, args.write_runs, args.no_reference)
        return
    sections = set(args.only or SECTIONS)
    if sections == {"rest"}:  # no Spark, no standard tables
        _rest_section()
        return
    rows, files, commits = (2_000_000, 1_000, 20) if args.small else (20_000_000, 10_000, 20)
    write_rows = 1_000_000 if args.small else 5_000_000
    merge_rows = 20_000 if args.small else 100_000
    mode = "small" if args.small else "full"
    warehouse = Path(
        args.warehouse or Path(tempfile.gettempdir()) / "icepark-bench" / f"{mode}-{rows}-{files}"
    )
    if sections - _OWN_TABLES:
        _ensure_tables(warehouse, rows, files, commits)
    else:
        warehouse.mkdir(parents=True, exist_ok=True)
    snapshots = 100 if args.small else 1_000
    upkeep_root = warehouse.parent / f"upkeep-{snapshots}"
    if "upkeep" in sections:
        upkeep.build(upkeep_root, snapshots)
    if "inspect" in sections:
        from bench.inspect_bench import ensure_large_files_table

        ensure_large_files_table(warehouse)
    if "compaction" in sections:
        prepare_many_copy(warehouse)
    point = files * 10 // 2 + 7
    streaming_args = None
    if "streaming" in sections:
        from bench import streaming

        appends = streaming.ensure_appends_table(warehouse, args.small)
        streaming_args = (streaming.sink_rows(args.small), appends)
    ref: dict[str, list[float]] = {}
    if not args.no_reference and sections - {"connect"}:  # Connect is timed against classic
        print("timing the reference engine ...", flush=True)
        ref = _reference(
            warehouse,
            args.runs,
            point,
            write_rows,
            merge_rows,
            sections - {"connect"},
            upkeep_root,
            snapshots,
            streaming_args,
        )
    print("timing icepark and native Spark ...", flush=True)
    spark = _session(connect="connect" in sections)
    results: dict[str, dict[str, list[float]]] = {}
    try:
        if sections - {"upkeep"}:
            results = _measure(
                spark, warehouse, args.runs, point, write_rows, merge_rows, sections, args.small
            )
        if "upkeep" in sections:
            timed, checks = upkeep.measure(spark, upkeep_root, snapshots, args.runs)
            results.update(timed)
            CHECKS.update(checks)
    finally:
        spark.stop()
    check_summaries(ref)
    _print(
        results,
        ref,
        f"{mode}: {rows:,} rows, {files:,} small files, {write_rows:,} rows written;"
        f" {merge_rows:,} rows merged; local[2]; median of {args.runs} runs after a warm-up",
    )
    if "local" in sections:  # appends under contention, after Spark has stopped
        from bench.local_reads import contention

        print("appends under contention (single-row appends, each process loads the table once)")
        for r in contention(50 if not args.small else 20):
            print(
                f"  {r['engine']:10} {r['catalog']:10} {r['writers']} writers: "
                f"{r['landed']}/{r['appends']} landed, exact rows: {r['rows_exact']}, "
                f"{r['commits_per_s']} commits/s, p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms"
            )
    if "rest" in sections:  # the REST catalog against its SQL catalog, after Spark has stopped
        _rest_section()


def _rest_section() -> None:
    from bench import rest

    print("REST catalog: icepark serve + icepark's RestCatalog vs the same SQL catalog directly")
    print(rest.report(rest.run(), 200, 1000, 8))


if __name__ == "__main__":
    main()
