"""Iceberg SQL through ``ispark.sql`` against the reference engine's Spark SQL (issue 24).

    python -m bench.run --only sql [--small]

The same statements, on the same standard tables (``bench.wide``, ``bench.many``), run
through ``ispark.sql`` on icepark's file-system catalog and through Java's Spark SQL
(``bench/ref_timings.py``, section ``sql``):

* the pruned 2-of-30-days aggregate and the point query on the 10,000-file table, each also
  through ``ispark.read`` with the same filter (the SQL front end should add nothing);
* ``count(*)``, ``min``/``max`` of ``id`` and ``ts`` (exact bounds: answered from the
  manifests by both engines) and ``max(note)`` (a 64-character string whose bounds are
  truncated: both engines fall back to a scan);
* ``INSERT INTO ... SELECT`` of ``write_rows`` rows, ``DELETE`` of 1% (merge-on-read) and
  ``MERGE INTO`` of ``merge_rows`` rows (half updates, half inserts) into ``write_rows``, each
  on a fresh table written (not timed) by the same engine's SQL;
* the statement's own cost: ``ispark.sql(...)`` returning the DataFrame of a query, without
  running Spark's job (parse, name resolution, icepark's planning, Spark's analysis).

Answers are checked outside the timing and against the reference engine's.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.timing import alternate

__all__ = [
    "measure",
    "statements",
    "merge_source_sql",
    "ROW_LEVEL_PROPERTIES",
    "TWO_DAYS",
    "POINT",
    "FROM_METADATA",
    "TRUNCATED",
    "OVERHEAD",
]

TWO_DAYS = "2 of 30 days aggregate (SQL)"
POINT = "point query, many files (SQL)"
FROM_METADATA = "count/min/max from metadata (SQL)"
TRUNCATED = "max of a truncated string: a scan (SQL)"
OVERHEAD = "parse + plan of a statement (no job)"
ROW_LEVEL_PROPERTIES = (
    "'format-version'='2', 'write.delete.mode'='merge-on-read',"
    " 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'"
)
TABLE_COLUMNS = (
    "id bigint, ts timestamp, category string, amount double, qty int, flag boolean, note string"
)


def statements(catalog: str, point: int) -> dict[str, str]:
    """The read statements, their tables under ``catalog`` (a prefix with its dot, or "")."""
    wide, many = f"{catalog}bench.wide", f"{catalog}bench.many"
    return {
        TWO_DAYS: f"SELECT count(*), sum(amount), max(note) FROM {wide}"
        " WHERE ts >= TIMESTAMP '2024-01-05 00:00:00' AND ts < TIMESTAMP '2024-01-07 00:00:00'",
        POINT: f"SELECT * FROM {many} WHERE id = {point}",
        FROM_METADATA: f"SELECT count(*), min(id), max(id), min(ts), max(ts) FROM {wide}",
        TRUNCATED: f"SELECT count(*), max(note) FROM {wide}",
    }


def insert_name(rows: int) -> str:
    return f"INSERT INTO ... SELECT {rows / 1e6:g}M rows (SQL)"


def delete_name() -> str:
    return "DELETE 1%, merge-on-read (SQL)"


def merge_name(merge_rows: int, rows: int) -> str:
    return f"MERGE INTO {merge_rows // 1000}k into {rows / 1e6:g}M (SQL)"


def create_sql(name: str, properties: str = ROW_LEVEL_PROPERTIES) -> str:
    return (
        f"CREATE TABLE {name} ({TABLE_COLUMNS}) USING iceberg PARTITIONED BY (days(ts))"
        f" TBLPROPERTIES ({properties})"
    )


def insert_sql(name: str, columns: str, rows: int) -> str:
    return f"INSERT INTO {name} SELECT {columns} FROM range({rows})"


DELETE_SQL = "DELETE FROM {} WHERE id % 100 = 7"
MERGE_SQL = (
    "MERGE INTO {} t USING merge_source s ON t.id = s.id"
    " WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)


def merge_source_sql(columns: str, rows: int, merge_rows: int) -> str:
    """The temporary view ``merge_source``: half of its ids in the table (spread over it),
    half new; ``amount`` the table's + 1."""
    half = merge_rows // 2
    step = rows // half
    return (
        "CREATE OR REPLACE TEMP VIEW merge_source AS SELECT id, ts, category,"
        f" amount + 1 AS amount, qty, flag, note FROM (SELECT {columns} FROM ("
        f"SELECT id * {step} + 3 AS id FROM range({half})"
        f" UNION ALL SELECT id FROM range({rows}, {rows + half})))"
    )


def measure(
    spark: Any,
    warehouse: Path,
    runs: int,
    point: int,
    write_rows: int,
    merge_rows: int,
    columns: str,
    check: Callable[[bool, str], None],
    checks: dict[str, str],
) -> dict[str, dict[str, list[float]]]:
    """icepark's side of the SQL benchmarks (see the module docstring)."""
    from icepark import spark as ispark
    from icepark.catalog import FileSystemCatalog

    catalog = FileSystemCatalog("bench", warehouse=str(warehouse))
    wide = catalog.load_table("bench.wide")
    many = catalog.load_table("bench.many")
    queries = statements("", point)
    two_days = "ts >= '2024-01-05T00:00:00+00:00' and ts < '2024-01-07T00:00:00+00:00'"
    out: dict[str, dict[str, list[float]]] = {}

    def sql(text: str) -> list[Any]:
        return list(ispark.sql(spark, text, catalog=catalog).collect())

    out[TWO_DAYS] = alternate(
        {
            "icepark": lambda: sql(queries[TWO_DAYS]),
            "ispark.read": lambda: (
                ispark.read(spark, wide, filter=two_days)
                .selectExpr("count(*)", "sum(amount)", "max(note)")
                .collect()
            ),
        },
        runs,
    )
    out[POINT] = alternate(
        {
            "icepark": lambda: sql(queries[POINT]),
            "ispark.read": lambda: ispark.read(spark, many, filter=f"id = {point}").collect(),
        },
        runs,
    )
    out[FROM_METADATA] = alternate({"icepark": lambda: sql(queries[FROM_METADATA])}, runs)
    out[TRUNCATED] = alternate({"icepark": lambda: sql(queries[TRUNCATED])}, runs)
    answers = {name: [tuple(r) for r in sql(text)] for name, text in queries.items()}
    scanned = spark.sql(
        f"SELECT count(*), min(id), max(id), min(ts), max(ts), max(note)"
        f" FROM parquet.`{wide.location}/data`"
    ).collect()[0]
    check(
        answers[FROM_METADATA] == [tuple(scanned[:5])],
        f"count/min/max {answers[FROM_METADATA]} != scan {tuple(scanned[:5])}",
    )
    check(answers[TRUNCATED][0][1] == scanned[5], "max(note) differs from a scan")
    check(len(answers[POINT]) == 1, f"point query found {len(answers[POINT])} rows")
    for name, rows in answers.items():
        checks[name] = str([str(r) for r in rows])

    overhead: list[float] = []
    for _ in range(runs * 5 + 1):
        for text in (queries[TWO_DAYS], queries[POINT]):
            start = time.perf_counter()
            ispark.sql(spark, text, catalog=catalog)
            overhead.append(time.perf_counter() - start)
    out[OVERHEAD] = {"icepark": overhead[2:]}  # the first round warms up

    out.update(_writes(spark, runs, write_rows, merge_rows, columns, check, checks))
    return out


def _writes(
    spark: Any,
    runs: int,
    write_rows: int,
    merge_rows: int,
    columns: str,
    check: Callable[[bool, str], None],
    checks: dict[str, str],
) -> dict[str, dict[str, list[float]]]:
    """INSERT, DELETE and MERGE through ``ispark.sql`` on fresh tables of a scratch
    warehouse; each run (and the warm-up) gets its own table, written before the timing."""
    from icepark import spark as ispark
    from icepark.catalog import FileSystemCatalog

    scratch = Path(tempfile.mkdtemp(prefix="icepark-bench-sql-"))
    out: dict[str, dict[str, list[float]]] = {}
    try:
        catalog = FileSystemCatalog("sqlbench", warehouse=str(scratch / "wh"))
        catalog.create_namespace("s")
        counter = iter(range(10_000))

        def sql(text: str) -> Any:
            return ispark.sql(spark, text, catalog=catalog)

        def created() -> str:
            name = f"s.t{next(counter)}"
            sql(create_sql(name))
            return name

        def fresh() -> str:
            name = created()
            sql(insert_sql(name, columns, write_rows))
            return name

        empty = [created() for _ in range(runs + 1)]
        targets = list(empty)
        out[insert_name(write_rows)] = alternate(
            {"icepark": lambda: sql(insert_sql(targets.pop(), columns, write_rows))}, runs
        )
        count = sql(f"SELECT count(*) FROM {empty[0]}").collect()[0][0]
        check(count == write_rows, f"INSERT wrote {count} rows")

        pool = [fresh() for _ in range(runs + 1)]
        targets = list(pool)
        out[delete_name()] = alternate(
            {"icepark": lambda: sql(DELETE_SQL.format(targets.pop()))}, runs
        )
        left = sql(f"SELECT count(*) FROM {pool[0]}").collect()[0][0]
        deletes = sql(f"SELECT count(*) FROM {pool[0]}.delete_files").collect()[0][0]
        expected = write_rows - len(range(7, write_rows, 100))
        check(left == expected, f"count after the DELETE {left} != {expected}")
        check(deletes > 0, "the DELETE wrote no delete file")
        checks["SQL DELETE"] = f"{left:,} rows left, {deletes} delete files"

        spark.sql(merge_source_sql(columns, write_rows, merge_rows))
        pool = [fresh() for _ in range(runs + 1)]
        targets = list(pool)
        out[merge_name(merge_rows, write_rows)] = alternate(
            {"icepark": lambda: sql(MERGE_SQL.format(targets.pop()))}, runs
        )
        row = sql(f"SELECT count(*), count(DISTINCT id), sum(amount) FROM {pool[0]}").collect()[0]
        deletes = sql(f"SELECT count(*) FROM {pool[0]}.delete_files").collect()[0][0]
        check(row[0] == write_rows + merge_rows // 2, f"count after the MERGE {row[0]}")
        check(row[0] == row[1], f"{row[0] - row[1]} duplicate ids after the MERGE")
        checks["SQL MERGE"] = f"{row[0]:,} rows, sum(amount) {row[2]:.6g}, {deletes} delete files"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def overhead_summary(times: list[float]) -> str:
    """Median and 90th percentile in milliseconds."""
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"median {statistics.median(times) * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms"
