"""A Spark Connect client without a JVM: pyspark-client and icepark in a venv of their own
(``make client-venv``: scripts/make_client_venv.sh), against the test run's Connect server,
whose Python workers have icepark. The job (client_job.py) creates, writes, reads, merges,
runs SQL and streams; the tables it leaves are judged here by icepark on one machine."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from icepark.catalog import load_catalog

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[3]
CLIENT_VENV = Path(os.environ.get("ICEPARK_CLIENT_VENV", ROOT / ".venv-client"))
JOB = Path(__file__).with_name("client_job.py")


def test_a_client_without_a_jvm_creates_writes_reads_merges_and_streams(
    connect_url: str, tmp_path: Path
) -> None:
    python = CLIENT_VENV / "bin" / "python"
    if not (CLIENT_VENV / ".icepark-client").exists():
        pytest.skip(f"no Spark Connect client venv at {CLIENT_VENV} (make client-venv)")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SPARK_", "PYSPARK_", "VIRTUAL_ENV", "PYTHONPATH"))
    }
    done = subprocess.run(
        [str(python), str(JOB), connect_url, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["session"].startswith("pyspark.sql.connect")
    assert seen["count"] == 1100
    assert seen["filtered"] == 125  # ids 1, 5, ..., 497
    assert seen["merged"] == 20 and seen["after_merge"] == 1110
    by_cat = dict(seen["sql"])
    assert by_cat["merged"] == 20 and sum(by_cat.values()) == 1110
    assert seen["after_delete"] == 1090
    # what the job wrote, read on one machine
    catalog = load_catalog(
        "client",
        type="sql",
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=str(tmp_path / "wh"),
    )
    assert catalog.load_table("db.events").scan().to_arrow().num_rows == 1090
    copy = catalog.load_table("db.copy")
    assert seen["stream_copy"] == copy.scan().to_arrow().num_rows == 1090
    # each micro-batch committed once, with the query's id and epoch in its summary
    summaries = [s.summary for s in copy.snapshots()]
    assert {s.get("spark.sql.streaming.queryId") for s in summaries} == {seen["query_id"]}
    epochs = [int(s["spark.sql.streaming.epochId"]) for s in summaries]
    assert epochs == list(range(len(epochs)))
