"""A job of a Spark Connect client without a JVM, run by test_connect_client.py in the venv
``scripts/make_client_venv.sh`` makes (pyspark-client + icepark, no pyspark jars, no Py4J):

    .venv-client/bin/python tests/spark/connect/client_job.py sc://127.0.0.1:PORT WORK_DIR

Against a Connect server whose Python workers have icepark: creates a table from a DataFrame,
appends, reads with a filter, merges, runs Iceberg SQL, and streams the table into another
(``read_stream``, ``write_stream``). Prints what it saw as one JSON object, and the time of
each step on stderr.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

_T0 = time.monotonic()


def _step(name: str) -> None:
    print(f"{time.monotonic() - _T0:7.2f}s {name}", file=sys.stderr, flush=True)


def main(url: str, work: str) -> None:
    assert importlib.util.find_spec("py4j") is None, "this venv has Py4J"
    from icepark import load_catalog
    from icepark import spark as ispark

    _step("imported")
    spark = ispark.session(remote=url)  # checks the server's Python workers
    _step("session")
    out: dict[str, object] = {"session": type(spark).__module__}
    root = Path(work)
    props = {
        "type": "sql",
        "uri": f"sqlite:///{root / 'catalog.db'}",
        "warehouse": str(root / "wh"),
    }
    catalog = load_catalog("client", **props)
    catalog.create_namespace("db")
    events = spark.range(0, 1000).selectExpr(
        "id",
        "concat('c', CAST(id % 4 AS STRING)) AS cat",
        "timestamp_micros(1704067200000000 + id * 3600000000) AS ts",
    )
    table = ispark.create_table_from(
        spark, events, "db.events", partition_by=["day(ts)"], sort_by=["id"], catalog=catalog
    )
    _step("created")
    ispark.write(events.where("id < 100").selectExpr("id + 1000 AS id", "cat", "ts"), table)
    _step("written")
    out["count"] = ispark.read(spark, table).count()
    out["filtered"] = ispark.read(spark, table, filter="cat = 'c1' and id < 500").count()
    updates = spark.range(1090, 1110).selectExpr(
        "id", "'merged' AS cat", "timestamp_micros(1704067200000000) AS ts"
    )
    _step("read")
    ispark.merge(
        spark, table, updates, on="id", when_matched_update="*", when_not_matched_insert="*"
    )
    _step("merged")
    out["merged"] = ispark.read(spark, table, filter="cat = 'merged'").count()
    out["after_merge"] = ispark.read(spark, table).count()
    rows = ispark.sql(
        spark, "SELECT cat, count(*) AS n FROM db.events GROUP BY cat ORDER BY cat", catalog
    ).collect()
    out["sql"] = [[r.cat, r.n] for r in rows]
    ispark.sql(spark, "DELETE FROM db.events WHERE cat = 'merged'", catalog)
    out["after_delete"] = ispark.read(spark, "db.events", catalog=catalog).count()
    _step("sql")

    # streaming: the table into a copy (the source and the exactly-once sink; their restarts
    # are tests/spark/connect/test_connect_streaming.py's)
    copy = catalog.create_table("db.copy", table.schema())
    stream = ispark.read_stream(spark, "db.events", catalog=catalog)
    query = ispark.write_stream(
        stream, copy, checkpoint_location=str(root / "chk"), trigger={"availableNow": True}
    )
    query.awaitTermination(300)
    _step("streamed")
    out["stream_copy"] = ispark.read(spark, copy.refresh()).count()
    out["query_id"] = str(query.id)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
