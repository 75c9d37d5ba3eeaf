"""The path a user takes: a script started as ``.venv/bin/python job.py`` without an activated
venv. A plain SparkSession then has Python workers on the ``python3`` of PATH, which has no
icepark: icepark says so, naming what to set, before any job runs; ``icepark.spark.session()``
builds a session that works. Each case runs in a process of its own (its own Spark)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

_JOB = """
import sys
import pyarrow as pa
from pyspark.sql import SparkSession
import icepark
from icepark import spark as ispark

catalog = icepark.load_catalog(uri=f"sqlite:///{sys.argv[1]}/c.db", warehouse=f"{sys.argv[1]}/wh")
catalog.create_namespace_if_not_exists("db")
table = catalog.create_table("db.t", icepark.schema(("id", "long", True), ("tags", icepark.types.list_of("long"))))
if sys.argv[2] == "plain":
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
else:
    spark = ispark.session("local[1]", config={"spark.ui.enabled": "false"})
df = spark.range(5).selectExpr("id", "array(id) AS tags")  # a list takes the Python path
try:
    ispark.write(df, table, mode="append")
except icepark.IceparkError as e:
    print("ICEPARK-ERROR", type(e).__name__, e)
    sys.exit(3)
print("ROWS", ispark.read(spark, "db.t", catalog=catalog).count())
"""


def _run(tmp_path: Path, how: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(_JOB))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.pop("VIRTUAL_ENV", None)
    # PATH as a user without an activated venv has it: python3 is the system one
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path), how],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def _system_python_lacks_icepark() -> bool:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    python = shutil.which("python3", path=env["PATH"])
    if python is None:
        return True
    done = subprocess.run(
        [python, "-c", "import icepark"], capture_output=True, env=env, check=False
    )
    return done.returncode != 0


def test_a_plain_session_with_the_wrong_workers_is_refused_with_what_to_set(tmp_path: Path) -> None:
    if not _system_python_lacks_icepark():
        pytest.skip("the python3 on PATH has icepark: the misconfiguration cannot happen here")
    done = _run(tmp_path, "plain")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "ICEPARK-ERROR SparkSetupError" in done.stdout
    assert f"PYSPARK_PYTHON={sys.executable}" in done.stdout
    assert "ModuleNotFoundError" not in done.stdout + done.stderr  # refused before any job


def test_icepark_session_works_from_a_bare_interpreter(tmp_path: Path) -> None:
    done = _run(tmp_path, "icepark")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "ROWS 5" in done.stdout
