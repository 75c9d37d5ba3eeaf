"""The reference engine's timings for the benchmark queries (run with .venv-ref's python).

  .venv-ref/bin/python bench/ref_timings.py WAREHOUSE RUNS POINT_ID WRITE_ROWS

Prints one JSON object {query: [seconds, ...]} on its last line.
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


def main() -> None:
    warehouse, runs, point, write_rows = sys.argv[1:5]
    spark = refspark.session(warehouse)
    queries = {
        "full-scan aggregate": "SELECT count(*), sum(amount), max(note) FROM ref.bench.wide",
        "2 of 30 days aggregate": "SELECT count(*), sum(amount), max(note) FROM ref.bench.wide"
        " WHERE ts >= TIMESTAMP '2024-01-05 00:00:00' AND ts < TIMESTAMP '2024-01-07 00:00:00'",
        "point query (many files)": f"SELECT * FROM ref.bench.many WHERE id = {int(point)}",
    }
    out: dict[str, list[float]] = {}
    for name, sql in queries.items():
        spark.sql(sql).collect()  # warm-up
        times = []
        for _ in range(int(runs)):
            start = time.perf_counter()
            spark.sql(sql).collect()
            times.append(time.perf_counter() - start)
        out[name] = times
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
    print(json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
