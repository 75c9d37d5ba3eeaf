"""icepark on Spark with executors in processes of their own (``local-cluster``): nothing may
depend on driver-only state but the catalog. Slow (it starts a cluster of its own in a
subprocess): runs when ICEPARK_SPARK_CLUSTER=1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

SCRIPT = r"""
import json, os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
from icepark.catalog import load_catalog
from icepark import spark as ispark

spark = (SparkSession.builder.master("local-cluster[2,1,1024]")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
         .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable).getOrCreate())
ispark.register(spark)
options = {"type": "filesystem", "warehouse": sys.argv[1]}
catalog = load_catalog("cluster", **options)
catalog.create_namespace("db")
df = spark.range(0, 500).selectExpr("id", "concat('n', CAST(id % 4 AS STRING)) AS name")
native = ispark.create_table_from(spark, df, "db.n", partition_by=["name"], catalog=catalog)
python = ispark.create_table_from(spark, df, "db.p", partition_by=["bucket(3, id)"],
                                  catalog=catalog)
out = {
    "native": ispark.read(spark, native).count(),
    "python": ispark.read(spark, python, path="python").count(),
    "filtered": ispark.read(spark, native, filter="name = 'n1'").count(),
    "source": spark.read.format("icepark").options(**options, table="db.p").load().count(),
}
df.write.format("icepark").options(**options).option("table", "db.n").mode("append").save()
out["appended"] = ispark.read(spark, "db.n", catalog=catalog).count()
for name in ("db.n", "db.p"):
    catalog.load_table(name).set_properties({"write.delete.mode": "merge-on-read",
                                             "write.merge.mode": "merge-on-read"})
ispark.delete(spark, "db.p", "id < 100", catalog=catalog)
ispark.update(spark, "db.n", set={"name": "'n9'"}, where="id >= 490", catalog=catalog)
ispark.merge(spark, "db.p", spark.range(450, 550).selectExpr("id", "'m' AS name"), on="id",
             when_matched_update="*", when_not_matched_insert="*", catalog=catalog)
out["deleted"] = ispark.read(spark, "db.p", catalog=catalog).count()
out["merged"] = ispark.read(spark, "db.p", filter="name = 'm'", catalog=catalog).count()
out["updated"] = ispark.read(spark, "db.n", filter="name = 'n9'", catalog=catalog).count()
print(json.dumps(out))
spark.stop()
"""


@pytest.mark.skipif(
    os.environ.get("ICEPARK_SPARK_CLUSTER") != "1", reason="set ICEPARK_SPARK_CLUSTER=1"
)
def test_local_cluster(tmp_path: Path) -> None:
    script = tmp_path / "cluster.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "wh")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {
        "native": 500,
        "python": 500,
        "filtered": 125,
        "source": 500,
        "appended": 1000,
        "deleted": 450,
        "merged": 100,
        "updated": 20,
    }
