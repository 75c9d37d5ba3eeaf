"""Scan planning on Spark: where a Spark read plans its files.

``read.data-planning-mode`` and ``read.delete-planning-mode`` (table properties; the session
confs ``spark.sql.iceberg.data-planning-mode`` and ``spark.sql.iceberg.delete-planning-mode``
win over them, as in Java's ``SparkReadConf``) say where manifests are read: ``local`` on the
driver, ``distributed`` in Spark tasks, ``auto`` (the default) in Spark tasks only when it
pays (:func:`icepark.planning.distributed.plans_remotely`). :func:`plan_scan` plans a scan
that way; :func:`icepark.spark.read` and the scans of :func:`icepark.spark.sql` go through
it (the streaming source, whose reader has no session, lets its read tasks plan a snapshot
read in full: :mod:`icepark.spark.streaming.source`). The tasks are those of a local plan
either way (:mod:`icepark.planning.distributed` says how).

How a remote plan runs (:class:`SparkRunner`): the manifests are pickled into a
:func:`~icepark.spark.runtime.task_frame` (:data:`TASKS_PER_CORE` Spark tasks a core of the
cluster, or more so that no task's parts may pass :data:`TASK_BYTES`; each takes a run of
manifests); ``mapInArrow`` runs the planning work on them with
the table's FileIO pickled along (its properties: the way every icepark Spark task reaches
storage), each part it makes pickled and compressed (lz4) into a row. When the manifests are
small enough that whatever they keep is small (:data:`COLLECT_BYTES`), the rows are collected
(one job); else the result is persisted and its size summed (one job, every task at once),
then read back at once when small or a partition at a time (``toLocalIterator``), so the
driver holds one partition's parts, not the plan. Parts are put back in manifest order as
they arrive. Classic and Spark Connect sessions alike.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icepark.errors import ValidationError
from icepark.manifest import ManifestFile
from icepark.planning.distributed import ManifestWork, RemotePlanning
from icepark.planning.planner import PlannedFiles
from icepark.spark.runtime import TASK_INDEX, TASK_PAYLOAD, default_parallelism, task_frame
from icepark.spec import properties as P
from icepark.table.scan import DataScan

__all__ = [
    "DATA_PLANNING_MODE_CONF",
    "DELETE_PLANNING_MODE_CONF",
    "SparkRunner",
    "TASK_BYTES",
    "plan_scan",
    "remote_planning",
]

DATA_PLANNING_MODE_CONF = "spark.sql.iceberg.data-planning-mode"
DELETE_PLANNING_MODE_CONF = "spark.sql.iceberg.delete-planning-mode"
TASKS_PER_CORE = 1
"""Spark tasks a remote plan runs, at most, for each core of the cluster: one wave, each task
taking a run of manifests. A Python task costs some 0.1-0.2 s to start (about 1 s on this
machine at load average 9, measured between two waves of 25 manifests each on 2 executors),
and each partition is fetched by a job of its own (Java's one task a manifest costs a JVM
task a few milliseconds)."""
TASK_BYTES = 64 * 1024 * 1024
"""The most a task's parts may take (as sent, by :func:`_most_sent`): they are cached in the
executor as one block, and fetched by the driver's JVM whole (two tasks planning the whole
10M-file table, some 375 MB of parts each, ran an executor of 1 GB out of heap)."""
COLLECT_BYTES = 64 * 1024 * 1024
"""Parts (as sent, compressed) up to this size come back in one job; more, a partition at a
time."""
_CODEC = "lz4"
_SCHEMA = "i int, part int, last boolean, size long, data binary"
_ARROW = pa.schema(
    [
        ("i", pa.int32()),
        ("part", pa.int32()),
        ("last", pa.bool_()),
        ("size", pa.int64()),
        ("data", pa.binary()),
    ]
)


def plan_scan(spark: SparkSession, scan: DataScan) -> PlannedFiles:
    """``scan``'s file scan tasks, its manifests read where the planning modes say (see the
    module docstring)."""
    return scan.plan_files(remote_planning(spark, scan))


def remote_planning(spark: SparkSession, scan: DataScan) -> RemotePlanning | None:
    """How ``scan`` plans on ``spark``: None when every manifest is read on the driver (both
    modes ``local``, or the table's catalog plans scans itself)."""
    if scan.planner is not None:  # a REST catalog's server-side planning
        return None
    props = scan.metadata.properties
    data = _mode(spark, DATA_PLANNING_MODE_CONF, P.DATA_PLANNING_MODE, props)
    deletes = _mode(spark, DELETE_PLANNING_MODE_CONF, P.DELETE_PLANNING_MODE, props)
    if data == "local" and deletes == "local":
        return None
    return RemotePlanning(SparkRunner(spark), data, deletes, remote_workers=_task_cpus(spark))


def _mode(spark: SparkSession, conf: str, prop: P.Property[str], props: dict[str, str]) -> str:
    raw = spark.conf.get(conf, None)
    if raw is None or not str(raw).strip():
        return prop.get(props)
    value = str(raw).strip().lower()
    if value not in P.PLANNING_MODES:
        raise ValidationError(
            f"Invalid Spark conf {conf}={raw!r}: use one of {', '.join(P.PLANNING_MODES)}"
        )
    return value


def _task_cpus(spark: SparkSession) -> int:
    raw = spark.conf.get("spark.task.cpus", "1")
    return int(raw) if raw and str(raw).strip().isdigit() else 1


class SparkRunner:
    """Runs planning work in Spark tasks of ``spark`` (see the module docstring)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._parallelism: int | None = None

    @property
    def parallelism(self) -> int:
        if self._parallelism is None:
            self._parallelism = default_parallelism(self.spark)
        return self._parallelism

    def run(self, work: ManifestWork, inputs: Sequence[Any], what: str) -> Iterator[Any]:
        if not inputs:
            return
        payloads = [pickle.dumps(x) for x in inputs]
        most = _most_sent(inputs)
        tasks = TASKS_PER_CORE * self.parallelism
        if most != float("inf"):  # no task's share of the result bigger than TASK_BYTES
            tasks = max(tasks, math.ceil(most / TASK_BYTES))
        tasks = min(len(inputs), tasks)
        frame = task_frame(self.spark, payloads, partitions=tasks)
        out = frame.mapInArrow(_Work(work), _SCHEMA)
        if most <= COLLECT_BYTES:  # small whatever is kept: one job
            yield from _parts(out.collect())
            return
        out = out.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            # one job runs every task; the parts wait in the executors' storage
            found = out.agg(F.sum(F.length("data")).alias("n")).first()
            sent = int(found[0] or 0) if found is not None else 0
            # small: at once; else a partition at a time
            yield from _parts(out.collect() if sent <= COLLECT_BYTES else out.toLocalIterator(True))
        finally:
            out.unpersist()


def _most_sent(inputs: Sequence[Any]) -> float:
    """About the most bytes the parts of ``inputs`` take as sent, if they are manifests:
    their records compress about half as well with lz4 as the manifests' own codecs (deflate
    or zstd) did; unknown inputs are taken as big."""
    if not all(isinstance(m, ManifestFile) for m in inputs):
        return float("inf")
    return 2.5 * sum(m.manifest_length for m in inputs)


def _parts(rows: Iterable[Any]) -> Iterator[Any]:
    for size, data in _in_order((r[0], r[1], r[2], r[3], r[4]) for r in rows):
        yield pickle.loads(pa.decompress(data, decompressed_size=size, codec=_CODEC))


def _in_order(
    rows: Iterator[tuple[int, int, bool, int, Any]],
) -> Iterator[tuple[int, Any]]:
    """The parts of ``rows`` (``i``, ``part``, ``last``, size, data) in the order of the
    inputs and of their parts: rows arrive in that order from a task frame's partitions; any
    that arrive early wait here."""
    waiting: dict[tuple[int, int], tuple[bool, int, Any]] = {}
    expected = (0, 0)
    for i, part, last, size, data in rows:
        waiting[(i, part)] = (last, size, data)
        while expected in waiting:
            last, size, data = waiting.pop(expected)
            if last:
                expected = (expected[0] + 1, 0)
            else:
                yield size, data
                expected = (expected[0], expected[1] + 1)
    if waiting:
        raise RuntimeError(f"planning results missing before input {expected[0]}")


@dataclass(frozen=True)
class _Work:
    """The function ``mapInArrow`` runs: ``work`` over the task's inputs, each part a row
    (pickled, compressed), and a last row for each input."""

    work: ManifestWork

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        indexes: list[int] = []
        inputs: list[Any] = []
        for batch in batches:
            indexes.extend(batch.column(TASK_INDEX).to_pylist())
            inputs.extend(pickle.loads(p) for p in batch.column(TASK_PAYLOAD).to_pylist())
        parts = [0] * len(inputs)
        done = 0
        for k, part in self.work(inputs):
            while done < k:  # inputs before k made all their parts
                yield _row(indexes[done], parts[done], True, b"")
                done += 1
            data = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
            yield _row(indexes[k], parts[k], False, data)
            parts[k] += 1
        for k in range(done, len(inputs)):
            yield _row(indexes[k], parts[k], True, b"")


def _row(i: int, part: int, last: bool, data: bytes) -> pa.RecordBatch:
    packed = pa.compress(data, codec=_CODEC, asbytes=True) if data else b""
    return pa.RecordBatch.from_arrays(
        [
            pa.array([i], pa.int32()),
            pa.array([part], pa.int32()),
            pa.array([last]),
            pa.array([len(data)], pa.int64()),
            pa.array([packed], pa.binary()),
        ],
        schema=_ARROW,
    )
