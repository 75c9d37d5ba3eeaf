"""Structured Streaming judged by the reference engine, with drivers killed (SIGKILL) and
restarted from their checkpoints:

* the reference engine appends 10 snapshots while an icepark streaming query follows the
  table (processing-time trigger): every row arrives once;
* one driver running that source over 12 appends and icepark's sinks (``format("icepark")``
  and ``write_stream``), killed mid-stream and restarted from its checkpoints: the source
  delivers every row once, every input row of the sinks is in their tables once, the snapshot
  summaries carry one query id and increasing epoch ids, and the reference engine reads the
  same rows and snapshots;
* the reference engine's own streaming read (``readStream.format("iceberg")``) of a table
  icepark's sink wrote gives the same rows.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from refengine import REF_SCRIPT, REF_VENV, RefEngine

from icepark.catalog import FileSystemCatalog

pytestmark = [pytest.mark.spark, pytest.mark.interop]

JOB = Path(__file__).with_name("stream_job.py")
QUERY_ID = "spark.sql.streaming.queryId"
EPOCH_ID = "spark.sql.streaming.epochId"


def _until(check: Any, timeout: float = 240.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


class _Job:
    """tests/spark/streaming/stream_job.py in a process of its own (killed with SIGKILL)."""

    def __init__(self, *args: str, log: Path) -> None:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        self.log = open(log, "a")
        self.proc = subprocess.Popen(
            [sys.executable, str(JOB), *args],
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "READY" not in line:
            self.kill()
            raise AssertionError(f"stream job did not start: {line!r}; see {log}")

    def kill(self) -> None:
        """SIGKILL the driver (and the Python workers and JVM it started)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=60)
        self.log.close()


def _create_reference_table(refspark: RefEngine, c: str) -> None:
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {c}.db.events (id bigint, p int) USING iceberg",
        ]
    )


def _append(refspark: RefEngine, c: str, n: int) -> list[int]:
    """Snapshot ``n``: 50 new ids in two files."""
    ids = list(range(n * 50, n * 50 + 50))
    refspark.request(
        [
            f"INSERT INTO {c}.db.events SELECT /*+ REPARTITION(2) */ id, CAST(id % 2 AS int)"
            f" FROM range({ids[0]}, {ids[-1] + 1})"
        ]
    )
    return ids


def test_source_follows_reference_appends(spark: Any, refspark: RefEngine, tmp_path: Path) -> None:
    from icepark.spark import read_stream

    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    _create_reference_table(refspark, c)
    expected = _append(refspark, c, 0)
    df = read_stream(
        spark,
        "db.events",
        catalog={"type": "filesystem", "warehouse": str(warehouse)},
        streaming_max_files_per_micro_batch=3,
    )
    query = (
        df.writeStream.format("memory")
        .queryName("ref_follow")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        for n in range(1, 11):
            expected += _append(refspark, c, n)
        _until(
            lambda: spark.sql("SELECT count(*) FROM ref_follow").first()[0] >= len(expected),
            what="the stream to catch up",
        )
        query.processAllAvailable()
        got = sorted(r.id for r in spark.sql("SELECT id FROM ref_follow").collect())
        assert got == sorted(expected)  # every row once
    finally:
        query.stop()


def _values(table: Any) -> list[int]:
    return sorted(table.refresh().scan(columns=["value"]).to_arrow().column("value").to_pylist())


def test_source_and_sinks_killed_and_restarted(refspark: RefEngine, tmp_path: Path) -> None:
    """One driver runs the icepark source over a table the reference engine appends to, and
    both icepark sinks over Spark's rate source; it is SIGKILLed mid-stream and restarted from
    its checkpoints (one JVM started twice, not two)."""
    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    _create_reference_table(refspark, c)
    expected = _append(refspark, c, 0)
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    schema = pa.schema(
        [pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("value", pa.int64())]
    )
    tables = [
        catalog.create_table(name, schema, partition_by=["truncate(100, value)"])
        for name in ("db.s", "db.s_fb")
    ]
    out = tmp_path / "out"
    args = ("both", str(warehouse), "db.events", str(tmp_path / "chk"), str(out), "db.s", "40")

    def delivered() -> list[int]:
        ids: list[int] = []
        for f in sorted(out.glob("batch-*.json")):
            ids.extend(json.loads(f.read_text()))
        return ids

    def commits(t: Any) -> int:
        return len(t.refresh().snapshots())

    job = _Job(*args, log=tmp_path / "job.log")
    try:
        for n in range(1, 7):
            expected += _append(refspark, c, n)
        _until(
            lambda: len(delivered()) >= 150 and all(commits(t) >= 3 for t in tables),
            what="a few micro-batches and commits",
        )
    finally:
        job.kill()  # mid-stream: batches planned, written, committed or not
    before = [commits(t) for t in tables]
    for n in range(7, 13):
        expected += _append(refspark, c, n)
    job = _Job(*args, log=tmp_path / "job.log")
    try:
        _until(
            lambda: (
                len(delivered()) >= len(expected)
                and all(commits(t) >= b + 3 for t, b in zip(tables, before))
            ),
            what="the restarted streams",
        )
        time.sleep(2)  # nothing more may come from the source
    finally:
        job.kill()
    assert sorted(delivered()) == sorted(expected)  # no gap, no repeat across the restart
    for t in tables:
        values = _values(t)
        assert values == list(range(len(values)))  # every input row exactly once
        summaries = [(s.summary.get(QUERY_ID), s.summary.get(EPOCH_ID)) for s in t.snapshots()]
        assert len({q for q, _ in summaries}) == 1
        epochs = [int(e) for _, e in summaries]
        assert epochs == sorted(set(epochs))  # increasing, none twice
        name = t.name
        (theirs,) = refspark.rows(
            f"SELECT count(*), count(DISTINCT value), min(value), max(value) FROM {c}.{name}"
        )
        assert theirs == [len(values), len(values), 0, len(values) - 1]
        snapshots = refspark.rows(
            f"SELECT summary['{QUERY_ID}'], summary['{EPOCH_ID}'] FROM {c}.{name}.snapshots"
            " ORDER BY committed_at"
        )
        assert [tuple(r) for r in snapshots] == summaries


JAVA_STREAM = """
import json, sys
sys.path.insert(0, {refdir!r})
from refspark import session
spark = session({warehouse!r})
df = spark.readStream.format("iceberg").load("ref.db.written")
q = df.writeStream.format("memory").queryName("m").option("checkpointLocation", {chk!r})
q = q.trigger(availableNow=True).start()
q.awaitTermination()
rows = spark.sql("SELECT id, p FROM m").collect()
print("ROWS " + json.dumps(sorted([list(r) for r in rows])))
spark.stop()
"""


def test_reference_streams_what_the_sink_wrote(
    spark: Any, refspark: RefEngine, catalog_options: dict[str, str], catalog: Any, tmp_path: Path
) -> None:
    from icepark.spark import write_stream

    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int32())])
    table = catalog.create_table("db.written", schema, partition_by=["p"])
    source = tmp_path / "in"
    source.mkdir()
    for n in range(3):
        with open(source / f"part-{n}.json", "w") as f:
            for i in range(n * 10, n * 10 + 10):
                f.write(json.dumps({"id": i, "p": i % 2}) + "\n")
    stream = spark.readStream.schema("id long, p int").option("maxFilesPerTrigger", 1)
    first = (
        stream.json(str(source))
        .writeStream.format("icepark")
        .options(**catalog_options, table="db.written")
        .option("checkpointLocation", str(tmp_path / "chk1"))
        .trigger(availableNow=True)
        .start()
    )
    first.awaitTermination(180)
    with open(source / "part-3.json", "w") as f:
        f.write(json.dumps({"id": 30, "p": 0}) + "\n")
    second = write_stream(
        stream.json(str(source)),
        table,
        checkpoint_location=str(tmp_path / "chk2"),
        trigger={"availableNow": True},
    )
    second.awaitTermination(180)
    ours = sorted([r["id"], r["p"]] for r in table.refresh().scan().to_arrow().to_pylist())
    assert len(ours) == 30 + 31  # two queries over the same input
    script = tmp_path / "java_stream.py"
    script.write_text(
        JAVA_STREAM.format(
            refdir=str(REF_SCRIPT.parent),
            warehouse=catalog_options["warehouse"],
            chk=str(tmp_path / "java_chk"),
        )
    )
    out = subprocess.run(
        [str(REF_VENV / "bin" / "python"), str(script)], capture_output=True, text=True, timeout=600
    )
    lines = [x for x in out.stdout.splitlines() if x.startswith("ROWS ")]
    assert lines, out.stderr[-3000:]
    assert json.loads(lines[0][5:]) == ours
