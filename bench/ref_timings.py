"""The reference engine's timings for the benchmark queries (run with .venv-ref's python).

  .venv-ref/bin/python bench/ref_timings.py WAREHOUSE RUNS POINT_ID WRITE_ROWS \
      [MERGE_ROWS [SECTIONS [SINK_ROWS_PER_BATCH APPENDS_TABLE]]]

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
import refspark  # noqa: E402

COLS = """id, TIMESTAMP '2024-01-01 00:00:00' + make_interval(0,0,0,0,0,0, id % (30*86400)) AS ts,
  concat('cat-', CAST(id % 100 AS STRING)) AS category, CAST(id % 1000 AS DOUBLE) / 7 AS amount,
  CAST(id % 97 AS INT) AS qty, id % 3 = 0 AS flag, sha2(CAST(id AS STRING), 256) AS note"""
ROW_LEVEL_PROPS = (
    "'format-version'='2', 'write.delete.mode'='merge-on-read',"
    " 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'"
)
AGG = "SELECT count(*), sum(amount), max(note) FROM {}"


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
        took = _timed(spark, f"DELETE FROM {name} WHERE id % 100 = 7")
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

    half = merge_rows // 2
    step = write_rows // half
    spark.sql(
        "CREATE OR REPLACE TEMP VIEW merge_source AS SELECT id, ts, category,"
        f" amount + 1 AS amount, qty, flag, note FROM (SELECT {COLS} FROM ("
        f"SELECT id * {step} + 3 AS id FROM range({half})"
        f" UNION ALL SELECT id FROM range({write_rows}, {write_rows + half})))"
    )
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
    warehouse, runs, point, write_rows = sys.argv[1:5]
    merge_rows = int(sys.argv[5]) if len(sys.argv) > 5 else int(write_rows) // 50
    sections = (
        set(sys.argv[6].split(",")) if len(sys.argv) > 6 else {"reads", "writes", "row-level"}
    )
    spark = refspark.session(warehouse)
    out: dict[str, list[float]] = {}
    if "reads" in sections:
        queries = {
            "full-scan aggregate": "SELECT count(*), sum(amount), max(note) FROM ref.bench.wide",
            "2 of 30 days aggregate": "SELECT count(*), sum(amount), max(note) FROM ref.bench.wide"
            " WHERE ts >= TIMESTAMP '2024-01-05 00:00:00' AND ts < TIMESTAMP '2024-01-07 00:00:00'",
            "point query (many files)": f"SELECT * FROM ref.bench.many WHERE id = {int(point)}",
        }
        for name, sql in queries.items():
            spark.sql(sql).collect()  # warm-up
            times = []
            for _ in range(int(runs)):
                start = time.perf_counter()
                spark.sql(sql).collect()
                times.append(time.perf_counter() - start)
            out[name] = times
    if "writes" in sections:
        times = []
        for i in range(int(runs)):
            name = f"ref.bench.w{i}"
            spark.sql(
                f"CREATE TABLE {name} (id bigint, ts timestamp, category string, amount double,"
                " qty int, flag boolean, note string) USING iceberg PARTITIONED BY (days(ts))"
                " TBLPROPERTIES ('format-version'='2')"
            )
            start = time.perf_counter()
            spark.sql(f"INSERT INTO {name} SELECT {COLS} FROM range({int(write_rows)})")
            times.append(time.perf_counter() - start)
            spark.sql(f"DROP TABLE {name} PURGE")
        out["partitioned write"] = times
    if "row-level" in sections:
        out.update(_row_level(spark, int(runs), int(write_rows), merge_rows))
    if "streaming" in sections:
        sys.path.insert(0, here)
        from ref_streaming import streaming

        cols = [c.strip() for c in _split_cols(COLS)]
        out.update(streaming(spark, int(runs), int(sys.argv[7]), sys.argv[8], cols))
    print(json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
