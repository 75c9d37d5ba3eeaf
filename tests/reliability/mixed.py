"""A mixed workload on one table: processes appending, overwriting, deleting rows (merge-on-read
deletes across every partition), and running expiry and manifest rewrites, all at once for a
bounded time. Each process logs what it did: the snapshot each landed write made (its sequence
number orders the writes) and the typed error of each write that did not land.

:func:`replay` applies the landed writes to a model of the rows in commit order; with
serializable commits the table must hold exactly that.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.errors import CommitFailedError, IceparkError, ValidationError
from tests.reliability.crash import CatalogSpec

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("worker", pa.int32(), nullable=False),
        pa.field("v", pa.int32(), nullable=False),
    ]
)
Row = tuple[int, int, int]

# who does what: three appenders (values below 90: under serializable isolation a delete of
# v >= 90 does not conflict with their files, whose metrics show it; an overwrite of worker
# 0's low values does), Spark (a streaming sink's micro-batches of such rows, and compaction),
# an overwriter of worker 0's low values (new values anywhere), two deleters of high values in
# every partition, and the upkeep (expiry and manifest rewrites)
ROLES = ("append", "append", "append", "spark", "overwrite", "delete", "delete", "upkeep")


@dataclass
class Logged:
    """One write: ``kind`` and its arguments, the sequence number of the snapshot it made
    (None: it did not land) and the error it raised."""

    kind: str
    rows: list[Row] = field(default_factory=list)
    worker: int = 0
    threshold: int = 0
    sequence_number: int | None = None
    error: str | None = None


def _batch(rows: list[Row]) -> pa.Table:
    ids, workers, values = zip(*rows, strict=True) if rows else ((), (), ())
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "worker": pa.array(workers, pa.int32()),
            "v": pa.array(values, pa.int32()),
        },
        schema=SCHEMA,
    )


def worker(spec: CatalogSpec, name: str, index: int, seconds: float, start: float) -> list[Any]:
    """Runs role ``ROLES[index]`` until ``seconds`` after ``start``; returns its log."""
    role = ROLES[index]
    rng = random.Random(index)
    table = spec.open().load_table(name)
    if role == "spark":
        return [vars(e) for e in _spark_worker(table, index, rng, seconds, start)]
    log: list[Logged] = []
    start = _common_start(table, start)
    while time.time() < start:
        time.sleep(0.001)
    counter = 0
    while time.time() < start + seconds:
        counter += 1
        entry: Logged
        try:
            if role == "append":
                rows = [
                    ((index + 1) * 1_000_000 + counter * 10 + i, index, rng.randrange(90))
                    for i in range(5)
                ]
                entry = Logged("append", rows=rows)
                table.append(_batch(rows))
            elif role == "overwrite":
                rows = [
                    ((index + 1) * 1_000_000 + counter * 10 + i, 0, rng.randrange(100))
                    for i in range(3)
                ]
                entry = Logged("overwrite", rows=rows, worker=0, threshold=20)
                table.overwrite(_batch(rows), "worker = 0 and v < 20")
            elif role == "delete":
                threshold = rng.randrange(90, 100)
                entry = Logged("delete", threshold=threshold)
                table.delete(f"v >= {threshold}")
            else:
                entry = Logged("upkeep")
                if counter % 2:
                    table.expire_snapshots(older_than=int(time.time() * 1000), retain_last=5)
                else:
                    table.rewrite_manifests()
                table = table.refresh()
                log.append(entry)
                time.sleep(0.2)
                continue
            snapshot = table.current_snapshot()
            assert snapshot is not None
            entry.sequence_number = snapshot.sequence_number
        except (CommitFailedError, ValidationError) as exc:  # a conflict: typed, nothing landed
            entry.error = f"{type(exc).__name__}: {exc}"
            table = table.refresh()
        except IceparkError as exc:
            entry.error = f"UNEXPECTED {type(exc).__name__}: {exc}"
            table = table.refresh()
        log.append(entry)
    return [vars(e) for e in log]


def _spark_worker(
    table: Any, index: int, rng: random.Random, seconds: float, start: float
) -> list[Logged]:
    """Spark's role: a streaming sink (a file source, Trigger.AvailableNow, one checkpoint)
    taking a new file of rows each round, and compaction, in turn until the time is up, each
    at least once. The rows are worker ``index``'s with values below 90, which no overwrite or
    delete of this workload touches, so they must all be there at the end, once; a query that
    fails is run again on its checkpoint, as a restarted job would be (exactly once)."""
    from icepark import spark as ispark
    from icepark.spark.session import session

    folder = _stream_folder(table)
    inbox = folder / "in"
    inbox.mkdir(parents=True, exist_ok=True)
    try:
        spark = session(
            "local[1]",
            "icepark-mixed",
            {
                "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "2",
                "spark.driver.memory": "768m",
            },
        )
    finally:  # the others start even if Spark does not (its error then fails the test)
        (folder / "ready").touch()
    log: list[Logged] = []
    start = _common_start(table, start)
    while time.time() < start:
        time.sleep(0.01)
    counter = 0
    while counter < 2 or time.time() < start + seconds:
        counter += 1
        if counter % 2:
            rows = [
                ((index + 1) * 1_000_000 + counter * 10 + i, index, rng.randrange(90))
                for i in range(5)
            ]
            pq.write_table(_batch(rows), inbox / f"part-{counter:04}.parquet")
            entry = Logged("stream", rows=rows)
            for _attempt in range(5):
                source = spark.readStream.schema(_SPARK_SCHEMA).parquet(str(inbox))
                query = ispark.write_stream(
                    source,
                    table,
                    checkpoint_location=str(folder / "checkpoint"),
                    trigger={"availableNow": True},
                )
                try:
                    query.awaitTermination(300)
                    entry.error = None
                    break
                except Exception as exc:  # the batch is retried from the checkpoint
                    entry.error = f"UNEXPECTED stream kept failing: {type(exc).__name__}: {exc}"
        else:
            entry = Logged("compaction")
            try:
                ispark.rewrite_data_files(spark, table.refresh(), options={"min-input-files": "2"})
            except (CommitFailedError, ValidationError) as exc:
                entry.error = f"{type(exc).__name__}: {exc}"
            except IceparkError as exc:
                entry.error = f"UNEXPECTED {type(exc).__name__}: {exc}"
        log.append(entry)
    spark.stop()
    return log


_SPARK_SCHEMA = "id bigint, worker int, v int"


def _stream_folder(table: Any) -> Path:
    return Path(table.location.removeprefix("file://") + "-stream")


def _common_start(table: Any, start: float) -> float:
    """When every process starts: ``start``, or once Spark's session is up (its ``ready``
    file, half a second after it appeared), so that Spark works alongside the others."""
    ready = _stream_folder(table) / "ready"
    deadline = time.time() + 300
    while not ready.exists() and time.time() < deadline:
        time.sleep(0.01)
    return max(start, ready.stat().st_mtime + 0.5) if ready.exists() else start


def replay(initial: list[Row], logs: list[list[dict[str, Any]]]) -> list[Row]:
    """The rows after applying every landed write to ``initial`` in commit order."""
    writes = sorted(
        (e for log in logs for e in log if e["sequence_number"] is not None),
        key=lambda e: e["sequence_number"],
    )
    rows = {r[0]: r for r in initial}
    for e in (e for log in logs for e in log if e["kind"] == "stream"):
        rows.update({r[0]: tuple(r) for r in e["rows"]})  # no later write touches them
    for e in writes:
        if e["kind"] == "append":
            rows.update({r[0]: tuple(r) for r in e["rows"]})
        elif e["kind"] == "overwrite":
            rows = {
                k: r for k, r in rows.items() if not (r[1] == e["worker"] and r[2] < e["threshold"])
            }
            rows.update({r[0]: tuple(r) for r in e["rows"]})
        elif e["kind"] == "delete":
            rows = {k: r for k, r in rows.items() if r[2] < e["threshold"]}
    return sorted(rows.values())
