"""One ``local-cluster[2,1,1024]`` Spark session (executors in JVMs of their own) that runs
the scenarios of ``s3_scenarios.py`` on request, for the whole test session.

Started by ``test_spark_cluster.py``; speaks JSON lines: it prints ``READY`` once the session
is up, then reads ``{"scenario": name, "kwargs": {...}}`` per line from stdin and answers
each with one line ``RESULT {"ok": ...}`` or ``RESULT {"error": traceback}``. Spark's own
output goes to stderr. Ends when stdin closes.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

MARKER = "RESULT "
MASTER = "local-cluster[2,1,1024]"


def _session() -> object:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(MASTER)
        .appName("icepark-cluster-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.executor.memory", "768m")
        .config("spark.driver.memory", "768m")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    from icepark.spark import register

    register(spark)
    return spark


def main() -> None:
    from s3_scenarios import SCENARIOS

    out = sys.stdout
    sys.stdout = sys.stderr  # anything else printed goes to the log, not the protocol
    spark = _session()
    out.write("READY\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            result = {"ok": SCENARIOS[request["scenario"]](spark, **request.get("kwargs", {}))}
        except BaseException:
            result = {"error": traceback.format_exc()}
        out.write(MARKER + json.dumps(result) + "\n")
        out.flush()
    spark.stop()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
