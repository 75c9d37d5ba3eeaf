"""The ``avro`` section of the benchmark (``python -m bench.run --only avro``).

The reference engine writes ``bench.avro`` (``ref_timings.py``, not timed): the 7-column bench
schema, WRITE_ROWS rows (5M; 1M with ``--small``) partitioned by ``days(ts)``,
``write.format.default=avro`` (Java's gzip/deflate level 9). Timed on the same files:

* one machine, all 7 columns to Arrow: icepark (``table.scan().to_batches()``: planning,
  block reading, decompression, column decoding, Arrow batches) next to fastavro decoding the
  same files into Python records (``fastavro.reader``, its default logical types: the floor of
  pure-Python Avro readers; target: icepark at most 1.5x), and PyIceberg's scan of the table;
* one machine, 2 of the 7 columns (``id``, ``qty``): next to all 7 (the skip must show);
* Spark: ``read(spark, table).agg(count, sum(amount), max(note))`` (Python tasks) next to the
  reference engine's scan of the same table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.timing import alternate

__all__ = ["measure", "AVRO_TABLE"]

AVRO_TABLE = "bench.avro"


def _drain(batches: Any) -> int:
    return sum(b.num_rows for b in batches)


def measure(
    spark: Any,
    warehouse: Path,
    runs: int,
    expected_rows: int,
    check: Callable[[bool, str], None],
) -> dict[str, dict[str, list[float]]]:
    import fastavro
    from pyspark.sql import functions as F

    from icepark.catalog import FileSystemCatalog
    from icepark.spark import read

    catalog = FileSystemCatalog("bench-avro", warehouse=str(warehouse))
    table = catalog.load_table(AVRO_TABLE)
    paths = [t.file.file_path.removeprefix("file:") for t in table.scan().plan_files()]
    formats = {t.file.file_format.value for t in table.scan().plan_files()}
    check(formats == {"AVRO"}, f"bench.avro holds {formats} files")

    def icepark_all() -> int:
        return _drain(catalog.load_table(AVRO_TABLE).scan().to_batches())

    def icepark_two() -> int:
        scan = catalog.load_table(AVRO_TABLE).scan(columns=["id", "qty"])
        return _drain(scan.to_batches())

    def fastavro_records() -> int:
        n = 0
        for path in paths:
            with open(path, "rb") as f:
                for _ in fastavro.reader(f):
                    n += 1
        return n

    check(icepark_all() == expected_rows, "icepark read a different number of rows")
    check(fastavro_records() == expected_rows, "fastavro read a different number of rows")
    out: dict[str, dict[str, list[float]]] = {}
    one = alternate({"icepark": icepark_all, "fastavro records": fastavro_records}, runs)
    pyiceberg = _pyiceberg(table.metadata_location, runs)
    out["Avro read 7 columns (one machine)"] = {
        "icepark": one["icepark"],
        "fastavro records": one["fastavro records"],
        **({"pyiceberg": pyiceberg} if pyiceberg else {}),
    }
    two = alternate({"icepark": icepark_two, "all 7 columns": icepark_all}, runs)
    out["Avro read 2 of 7 columns (one machine)"] = two
    aggs = [F.count("*"), F.sum("amount"), F.max("note")]
    got = read(spark, table).agg(*aggs).collect()[0]
    check(got[0] == expected_rows, f"Spark read {got[0]} rows")
    out["Avro full-scan aggregate (Spark)"] = alternate(
        {"icepark": lambda: read(spark, catalog.load_table(AVRO_TABLE)).agg(*aggs).collect()},
        runs,
    )
    return out


def _pyiceberg(metadata_location: str, runs: int) -> list[float]:
    """PyIceberg's scan of the table, or nothing (with the reason printed) if it cannot."""
    try:
        from pyiceberg.table import StaticTable

        table = StaticTable.from_metadata(metadata_location)
        table.scan().to_arrow()
    except Exception as exc:
        print(f"PyIceberg cannot read the Avro table: {type(exc).__name__}: {exc}"[:300])
        return []
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        table.scan().to_arrow()
        times.append(time.perf_counter() - start)
    return times
