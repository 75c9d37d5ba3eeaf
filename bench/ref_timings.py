"""The reference engine's timings for the benchmark queries (run with .venv-ref's python).

  .venv-ref/bin/python bench/ref_timings.py '{"warehouse": "...", "runs": 3, ...}'

One JSON object says what to run: ``warehouse``, ``runs``, ``point`` (the point query's id),
``write_rows``; optional ``merge_rows`` (default write_rows / 50), ``sections`` (a list;
default reads, writes, row-level, compaction), ``upkeep_root`` and ``snapshots`` (for
``upkeep``), ``sink_rows_per_batch`` and ``appends_table`` (for ``streaming``),
``base_snapshot`` and ``write_runs`` (for ``large``: the large set of ``bench/large.py`` on
the warehouse's ``bench.wide``, set back to ``base_snapshot`` after its writes).

Prints one JSON object {query: [seconds, ...]} on its last line; keys starting with
``check:`` hold the row-level benchmarks' results (counts, sums) instead of timings.
"""

import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
for cand in (
    os.path.join(here, "..", "..", "shared", "reference-iceberg"),
    os.environ.get("ICEPARK_REF_DIR", ""),
):
    if cand and os.path.exists(os.path.join(cand, "refspark.py")):
        sys.path.insert(0, cand)
sys.path.insert(0, os.path.dirname(here))  # the repository: sql_bench imports bench.timing
import refspark  # noqa: E402
import sql_bench  # noqa: E402  (bench/, on the path as this script's folder)

from bench import queries as Q  # noqa: E402

COLS = """id, TIMESTAMP '2024-01-01 00:00:00' + make_interval(0,0,0,0,0,0, id % (30*86400)) AS ts,
  concat('cat-', CAST(id % 100 AS STRING)) AS category, CAST(id % 1000 AS DOUBLE) / 7 AS amount,
  CAST(id % 97 AS INT) AS qty, id % 3 = 0 AS flag, sha2(CAST(id AS STRING), 256) AS note"""
ROW_LEVEL_PROPS = (
    "'format-version'='2', 'write.delete.mode'='merge-on-read',"
    " 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'"
)
AGG = Q.AGG_SQL


def _load() -> str:
    return "{:.1f}/{:.1f}".format(*os.getloadavg()[:2])


def _timed(spark, sql: str) -> float:
    start = time.perf_counter()
    spark.sql(sql).collect()
    return time.perf_counter() - start


def _fresh_table(spark, name: str, write_rows: int) -> None:
    """A merge-on-read v2 table of WRITE_ROWS rows partitioned by days(ts) (not timed)."""
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.sql(
        f"CREATE TABLE {name} (id bigint, ts timestamp, category string, amount double,"
        " qty int, flag boolean, note string) USING iceberg PARTITIONED BY (days(ts))"
        f" TBLPROPERTIES ({ROW_LEVEL_PROPS})"
    )
    spark.sql(f"INSERT INTO {name} SELECT {COLS} FROM range({write_rows})")


def _row_level(spark, runs: int, write_rows: int, merge_rows: int) -> dict[str, list[float]]:
    """MoR delete of 1%, full scans before and after it, and a merge of MERGE_ROWS rows (half
    updates, half inserts); a fresh table for every run (one more for the warm-up)."""
    out: dict[str, list[float]] = {}
    tables = [f"ref.bench.rl{i}" for i in range(runs + 2)]
    times = []
    for i, name in enumerate(tables[:-1]):
        _fresh_table(spark, name, write_rows)
        took = _timed(spark, Q.DELETE_SQL.format(name))
        if i:  # the first is the warm-up
            times.append(took)
    out["MoR delete 1%"] = times
    after, before = tables[-2], tables[-1]
    _fresh_table(spark, before, write_rows)
    for label, name in (("after", after), ("before", before)):
        spark.sql(AGG.format(name)).collect()  # warm-up
        out[f"full scan {label} MoR delete"] = [
            _timed(spark, AGG.format(name)) for _ in range(runs)
        ]
    count = spark.sql(AGG.format(after)).collect()[0][0]
    deletes = spark.sql(f"SELECT count(*) FROM {after}.delete_files").collect()[0][0]
    out["check: MoR delete 1%"] = [count, deletes]
    for name in tables:
        spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")

    spark.sql(sql_bench.merge_source_sql(COLS, write_rows, merge_rows))
    times = []
    for i, name in enumerate(tables[: runs + 1]):
        _fresh_table(spark, name, write_rows)
        took = _timed(
            spark,
            f"MERGE INTO {name} t USING merge_source s ON t.id = s.id"
            " WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        )
        if i:
            times.append(took)
        if i == runs:
            row = spark.sql(
                f"SELECT count(*), count(DISTINCT id), sum(amount) FROM {name}"
            ).collect()[0]
            deletes = spark.sql(f"SELECT count(*) FROM {name}.delete_files").collect()[0][0]
            out["check: merge"] = [row[0], row[1], row[2], deletes]
        spark.sql(f"DROP TABLE {name} PURGE")
    out[merge_name(merge_rows)] = times
    return out


def _reads(spark, runs: int, wide: str, point_table: str, point: int) -> dict[str, list]:
    """The read rows of bench/queries.py over these tables: a warm-up, then ``runs`` timed
    runs each; ``check: <row>`` holds the answer's summary."""
    out: dict[str, list] = {}
    for name, sql in Q.read_sql(wide, point_table, point).items():
        started = _load()
        out[f"check: {name}"] = Q.summary(spark.sql(sql).collect())  # also the warm-up
        out[name] = [_timed(spark, sql) for _ in range(runs)]
        out[f"load: {name}"] = f"{started} -> {_load()}"
    return out


def _compact(spark, name: str) -> tuple[float, float]:
    """rewrite_position_delete_files, then rewrite_data_files of the files with deletes, on
    ``name`` (``ref.<namespace>.<table>``): the seconds of each."""
    short = name.removeprefix("ref.")
    took = _timed(spark, Q.REWRITE_DELETES_SQL.format(short))
    return took, _timed(spark, Q.REWRITE_DATA_SQL.format(short))


def _large(spark, runs: int, base: int, write_runs: int) -> dict[str, list]:
    """The large set's writes on ``ref.bench.wide`` itself (too big to copy for each run):
    before each run its ``main`` is set back to the snapshot it was built with, and what
    the runs wrote is expired (Java's expire_snapshots deletes the files only they reached).
    ``write_runs`` deletes of 1% (no warm-up: each reads the whole table), the full scan
    after the last, then ``write_runs`` compactions after a fresh delete (the first on that
    delete), the full scan after the last."""
    name, short = "ref.bench.wide", "bench.wide"
    out: dict[str, list] = {}

    def reset() -> None:
        head = spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'").collect()
        if head[0][0] != base:
            spark.sql(f"CALL ref.system.set_current_snapshot('{short}', {base})")
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() + 1))
            time.sleep(1.1)
            spark.sql(
                f"CALL ref.system.expire_snapshots(table => '{short}',"
                f" older_than => TIMESTAMP '{stamp}', retain_last => 1)"
            )

    def scans(label: str) -> None:
        started = _load()
        out[f"check: {label}"] = [
            *Q.summary(spark.sql(AGG.format(name)).collect()),  # also the warm-up
            spark.sql(f"SELECT count(*) FROM {name}.data_files").collect()[0][0],
            spark.sql(f"SELECT count(*) FROM {name}.delete_files").collect()[0][0],
        ]
        out[label] = [_timed(spark, AGG.format(name)) for _ in range(runs)]
        out[f"load: {label}"] = f"{started} -> {_load()}"

    times = []
    for _ in range(write_runs):
        reset()
        started = _load()
        times.append(_timed(spark, Q.DELETE_SQL.format(name)))
        out[f"load: {Q.DELETE}"] = f"{started} -> {_load()}"
    out[Q.DELETE] = times
    scans(Q.AFTER_DELETE)
    deletes_times, data_times = [], []
    for i in range(write_runs):
        if i:
            reset()
            spark.sql(Q.DELETE_SQL.format(name))
        started = _load()
        took, took_data = _compact(spark, name)
        out[f"load: {Q.COMPACTION_DATA}"] = f"{started} -> {_load()}"
        out[f"load: {Q.COMPACTION_DELETES}"] = out[f"load: {Q.COMPACTION_DATA}"]
        deletes_times.append(took)
        data_times.append(took_data)
    out[Q.COMPACTION_DELETES] = deletes_times
    out[Q.COMPACTION_DATA] = data_times
    scans(Q.COMPACTION_SCAN)
    reset()
    return out


def _sql(spark, runs: int, point: int, write_rows: int, merge_rows: int) -> dict[str, list]:
    """The statements of bench/sql_bench.py through Java's Spark SQL (aggregate push-down on,
    Java's default), on the standard tables and on fresh tables of the same catalog."""
    out: dict[str, list] = {}
    for name, sql in sql_bench.statements("ref.", point).items():
        spark.sql(sql).collect()  # warm-up
        out[name] = [_timed(spark, sql) for _ in range(runs)]
        out[f"check: {name}"] = [str(tuple(r)) for r in spark.sql(sql).collect()]  # as ours
    tables = [f"ref.bench.sql{i}" for i in range(runs + 1)]

    def timed_on_fresh(statement: str, filled: bool) -> list[float]:
        times = []
        for i, name in enumerate(tables):
            spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
            spark.sql(sql_bench.create_sql(name))
            if filled:
                spark.sql(sql_bench.insert_sql(name, COLS, write_rows))
            took = _timed(spark, statement.format(name))
            if i:  # the first is the warm-up
                times.append(took)
        return times

    out[sql_bench.insert_name(write_rows)] = timed_on_fresh(
        sql_bench.insert_sql("{}", COLS, write_rows), filled=False
    )
    out[sql_bench.delete_name()] = timed_on_fresh(sql_bench.DELETE_SQL, filled=True)
    left = spark.sql(f"SELECT count(*) FROM {tables[-1]}").collect()[0][0]
    deletes = spark.sql(f"SELECT count(*) FROM {tables[-1]}.delete_files").collect()[0][0]
    out["check: SQL DELETE"] = [f"{left:,} rows left, {deletes} delete files"]
    spark.sql(sql_bench.merge_source_sql(COLS, write_rows, merge_rows))
    out[sql_bench.merge_name(merge_rows, write_rows)] = timed_on_fresh(
        sql_bench.MERGE_SQL, filled=True
    )
    row = spark.sql(f"SELECT count(*), sum(amount) FROM {tables[-1]}").collect()[0]
    deletes = spark.sql(f"SELECT count(*) FROM {tables[-1]}.delete_files").collect()[0][0]
    out["check: SQL MERGE"] = [f"{row[0]:,} rows, sum(amount) {row[1]:.6g}, {deletes} delete files"]
    for name in tables:
        spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    return out


def _compaction(spark, runs: int, write_rows: int) -> dict[str, list]:
    """Java's procedures on the same work as bench/run.py's compaction section: bin-pack the
    copy of bench.many (set back to its first snapshot after every run), and after a 1%
    merge-on-read delete on fresh tables, rewrite_position_delete_files then
    rewrite_data_files, with full scans after them, after the delete alone and before it."""
    out: dict[str, list] = {}
    copy = "ref.bench.many_compact"
    spark.sql(f"REFRESH TABLE {copy}")
    start = spark.sql(f"SELECT snapshot_id FROM {copy}.refs WHERE name = 'main'").collect()[0][0]
    files = spark.sql(f"SELECT count(*) FROM {copy}.files").collect()[0][0]
    times = []
    for i in range(runs + 1):
        took = _timed(spark, "CALL ref.system.rewrite_data_files(table => 'bench.many_compact')")
        if i:
            times.append(took)
        if i == runs:
            after = spark.sql(f"SELECT count(*) FROM {copy}.files").collect()[0][0]
            rows = spark.sql(f"SELECT count(*) FROM {copy}").collect()[0][0]
            out["check: bin-pack"] = [f"{files:,} files into {after}, {rows:,} rows"]
        spark.sql(f"CALL ref.system.set_current_snapshot('bench.many_compact', {start})")
    out[f"bin-pack {files:,} small files"] = times

    tables = [f"ref.bench.cp{i}" for i in range(runs + 3)]
    deletes_times, data_times = [], []
    for i, name in enumerate(tables[: runs + 1]):
        _fresh_table(spark, name, write_rows)
        spark.sql(Q.DELETE_SQL.format(name))
        took, took_data = _compact(spark, name)
        if i:
            deletes_times.append(took)
            data_times.append(took_data)
    out["rewrite_position_delete_files after it"] = deletes_times
    out["rewrite_data_files after the 1% delete"] = data_times
    compacted, deleted, before = tables[runs], tables[runs + 1], tables[runs + 2]
    _fresh_table(spark, deleted, write_rows)
    spark.sql(Q.DELETE_SQL.format(deleted))
    _fresh_table(spark, before, write_rows)
    for label, name in (
        ("full scan after both rewrites", compacted),
        ("full scan after the delete", deleted),
        ("full scan before the delete", before),
    ):
        spark.sql(AGG.format(name)).collect()  # warm-up
        out[label] = [_timed(spark, AGG.format(name)) for _ in range(runs)]
    count = spark.sql(f"SELECT count(*) FROM {compacted}").collect()[0][0]
    data = spark.sql(f"SELECT count(*) FROM {compacted}.data_files").collect()[0][0]
    deletes = spark.sql(f"SELECT count(*) FROM {compacted}.delete_files").collect()[0][0]
    out["check: compaction"] = [f"{count:,} rows, {data} data files, {deletes} delete files live"]
    for name in tables:
        spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    return out


def _avro(spark, runs: int, write_rows: int) -> dict[str, list[float]]:
    """Build ref.bench.avro (the bench schema in Avro data files, WRITE_ROWS rows; kept for
    later runs) and time the aggregate over it."""
    name = "ref.bench.avro"
    try:
        have = spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0]
    except Exception:
        have = None
    if have != write_rows:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ref.bench")
        spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
        spark.sql(
            f"CREATE TABLE {name} (id bigint, ts timestamp, category string, amount double,"
            " qty int, flag boolean, note string) USING iceberg PARTITIONED BY (days(ts))"
            " TBLPROPERTIES ('format-version'='2', 'write.format.default'='avro')"
        )
        spark.sql(f"INSERT INTO {name} SELECT {COLS} FROM range({write_rows}) ORDER BY ts")
    sql = AGG.format(name)
    spark.sql(sql).collect()  # warm-up
    return {"Avro full-scan aggregate (Spark)": [_timed(spark, sql) for _ in range(runs)]}


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


def merge_name(merge_rows: int) -> str:
    return f"MoR merge {merge_rows // 1000}k (half updates, half inserts)"


def main() -> None:
    args = json.loads(sys.argv[1])
    warehouse, runs, point = args["warehouse"], int(args["runs"]), int(args["point"])
    write_rows = int(args["write_rows"])
    merge_rows = int(args.get("merge_rows") or write_rows // 50)
    sections = set(args.get("sections") or ("reads", "writes", "row-level", "compaction"))
    spark = refspark.session(warehouse)
    out: dict[str, list[float]] = {}
    if "reads" in sections:
        out.update(_reads(spark, runs, "ref.bench.wide", "ref.bench.many", point))
    if "large" in sections:
        out.update(_reads(spark, runs, "ref.bench.wide", "ref.bench.wide", point))
        out.update(_large(spark, runs, int(args["base_snapshot"]), int(args["write_runs"])))
    if "writes" in sections:
        times = []
        for i in range(runs):
            name = f"ref.bench.w{i}"
            spark.sql(
                f"CREATE TABLE {name} (id bigint, ts timestamp, category string, amount double,"
                " qty int, flag boolean, note string) USING iceberg PARTITIONED BY (days(ts))"
                " TBLPROPERTIES ('format-version'='2')"
            )
            start = time.perf_counter()
            spark.sql(f"INSERT INTO {name} SELECT {COLS} FROM range({write_rows})")
            times.append(time.perf_counter() - start)
            spark.sql(f"DROP TABLE {name} PURGE")
        out["partitioned write"] = times
    if "row-level" in sections:
        out.update(_row_level(spark, runs, write_rows, merge_rows))
    if "compaction" in sections:
        out.update(_compaction(spark, runs, write_rows))
    if "sql" in sections:
        out.update(_sql(spark, runs, point, write_rows, merge_rows))
    if "upkeep" in sections:
        from pathlib import Path

        import upkeep

        out.update(upkeep.reference(spark, Path(args["upkeep_root"]), int(args["snapshots"]), runs))
    if "avro" in sections:
        out.update(_avro(spark, runs, write_rows))
    if "inspect" in sections:  # the files metadata table, every column materialised
        for table in ("ref.bench.many", "ref.bench.files100k"):
            n = spark.sql(f"SELECT count(*) FROM {table}.files").collect()[0][0]
            sql = f"SELECT * FROM {table}.files"
            spark.sql(sql).write.format("noop").mode("overwrite").save()  # warm-up
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                spark.sql(sql).write.format("noop").mode("overwrite").save()
                times.append(time.perf_counter() - start)
            out[f"inspect.files() ({n:,} files)"] = times
    if "streaming" in sections:
        sys.path.insert(0, here)
        from ref_streaming import streaming

        cols = [c.strip() for c in _split_cols(COLS)]
        out.update(
            streaming(spark, runs, int(args["sink_rows_per_batch"]), args["appends_table"], cols)
        )
    print(json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
