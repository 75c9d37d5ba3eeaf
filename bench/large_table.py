"""Builds the large bench table with the reference engine (run with .venv-ref's python).

    .venv-ref/bin/python bench/large_table.py WAREHOUSE ROWS FILES

``ref.bench.wide`` in a Hadoop catalog at WAREHOUSE: ROWS rows of the standard tables' 7
columns (``make_tables.py``'s, the same expressions), partitioned by ``days(ts)`` over 30 days,
in exactly FILES Parquet files written by one ``append`` of Iceberg's Spark writer. Each file
holds a contiguous slice of one day's seconds, sorted by ``ts``: the days share the files out
as evenly as they can (100 files over 30 days: 4 files for each of the first 10 days, 3 for
each of the others), so that ``2 of 30 days`` prunes to the files of those days.

The layout is chosen explicitly: each row gets its file's slot, and a key whose Spark hash
lands in that slot's shuffle partition (``pmod(hash(key), FILES) == slot``, found by Spark
itself) distributes the rows, one shuffle partition per file, adaptive execution off so that
no partitions are merged; the write's options ``distribution-mode=none`` and
``fanout-enabled`` keep Iceberg from adding a shuffle or a sort of its own. The table is
format version 2 with merge-on-read deletes, updates and merges (the row-level rows'
properties), its other properties Java's defaults.

Prints one JSON line: the files written, rows, bytes and the snapshot id.
"""

import json
import sys

# ref_timings (bench/, this script's folder) puts the reference engine's refspark on the path
from ref_timings import COLS, ROW_LEVEL_PROPS, _split_cols

import refspark  # isort: skip  (after ref_timings, which finds it)

DAY = 86400
PERIOD = 30 * DAY  # ts = 2024-01-01 + (id % PERIOD) seconds, as in make_tables.py


def slot_sql(rows: int, files: int) -> str:
    """The SQL expression of a row's file slot (0 .. files - 1) from its ``id``."""
    days = -(-min(rows, PERIOD) // DAY)  # the days ts covers
    if files < days:
        raise SystemExit(f"{files} files cannot hold {days} daily partitions")
    base, extra = divmod(files, days)  # day d gets base + (d < extra) files
    sec = f"(id % {PERIOD})"
    day = f"({sec} div {DAY})"
    share = f"({base} + IF({day} < {extra}, 1, 0))"
    first = f"({day} * {base} + least({day}, {extra}))"
    return f"CAST({first} + ({sec} % {DAY}) * {share} div {DAY} AS INT)"


def main() -> None:
    warehouse, rows, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    spark = refspark.session(
        warehouse,
        conf=[
            ("spark.sql.adaptive.enabled", "false"),
            ("spark.sql.shuffle.partitions", str(files)),
        ],
    )
    # a key per shuffle partition: pmod(hash(key), files) is the partition Spark sends it to
    found = spark.sql(
        f"SELECT pmod(hash(id), {files}) AS p, min(id) AS k FROM range({files * 1000}) GROUP BY 1"
    ).collect()
    keys = dict((r["p"], r["k"]) for r in found)
    if len(keys) != files:
        raise SystemExit(f"found keys for {len(keys)} of {files} partitions")
    # bigint keys: Spark hashes an int differently from the bigint the keys were found as
    key_of_slot = "array(" + ", ".join(f"{keys[s]}L" for s in range(files)) + ")"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ref.bench")
    spark.sql("DROP TABLE IF EXISTS ref.bench.wide")
    spark.sql(
        "CREATE TABLE ref.bench.wide (id bigint, ts timestamp, category string, amount double,"
        " qty int, flag boolean, note string) USING iceberg PARTITIONED BY (days(ts))"
        f" TBLPROPERTIES ({ROW_LEVEL_PROPS})"
    )
    cols = [c.strip() for c in _split_cols(COLS)]
    df = (
        spark.range(rows)
        .selectExpr(*cols, f"element_at({key_of_slot}, {slot_sql(rows, files)} + 1) AS k")
        .repartition(files, "k")
        .sortWithinPartitions("ts")
        .drop("k")
    )
    writer = df.writeTo("ref.bench.wide").option("distribution-mode", "none")
    writer.option("fanout-enabled", "true").append()
    got = spark.sql(
        "SELECT count(*), sum(record_count), sum(file_size_in_bytes) FROM ref.bench.wide.files"
    ).collect()[0]
    snapshot = spark.sql(
        "SELECT snapshot_id FROM ref.bench.wide.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()[0][0]
    print(
        json.dumps({"files": got[0], "rows": got[1], "bytes": got[2], "snapshot_id": snapshot}),
        flush=True,
    )
    spark.stop()


if __name__ == "__main__":
    main()
