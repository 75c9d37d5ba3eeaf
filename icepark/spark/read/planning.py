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
(one job). Else the parts do not pass through Spark at all (a plan of 10M files keeps some
4 GB of them, which ran executors' and the driver's JVMs out of heap): each task writes its
parts, compressed, to files in a folder of its own under the table's metadata folder
(``planning-<uuid>``, through the table's FileIO, so wherever the table's storage is) and
sends back their names; the driver reads them a part at a time and deletes the folder when
the plan ends or stops (a plan killed midway leaves it to
``remove_orphan_files``). When that folder cannot be written (a reader with read-only
credentials), the result is persisted in Spark and read back a partition at a time
(``toLocalIterator``) instead. Parts are put back in manifest order as they arrive. Classic
and Spark Connect sessions alike.
"""

from __future__ import annotations

import contextlib
import logging
import math
import pickle
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.manifest import ManifestFile
from icepark.planning.distributed import ManifestWork, RemotePlanning
from icepark.planning.planner import PlannedFiles
from icepark.spark.runtime import (
    TASK_INDEX,
    TASK_PAYLOAD,
    default_parallelism,
    session_settings,
    task_frame,
)
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.table.scan import DataScan

__all__ = [
    "DATA_PLANNING_MODE_CONF",
    "DELETE_PLANNING_MODE_CONF",
    "SparkRunner",
    "TASK_BYTES",
    "plan_scan",
    "remote_planning",
    "spill_folder",
]

_LOG = logging.getLogger(__name__)

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
_Part = tuple[int, int, bool, int, bytes]
_SCHEMA = "i int, part int, last boolean, size long, data binary"
_SPILLED_SCHEMA = "i int, part int, last boolean, size long, path string"
_ARROW = pa.schema(
    [
        ("i", pa.int32()),
        ("part", pa.int32()),
        ("last", pa.bool_()),
        ("size", pa.int64()),
        ("data", pa.binary()),
    ]
)
_SPILLED_ARROW = pa.schema([*list(_ARROW)[:4], pa.field("path", pa.string())])


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
    conf = session_settings(spark, [DATA_PLANNING_MODE_CONF, DELETE_PLANNING_MODE_CONF, _TASK_CPUS])
    data = _mode(conf, DATA_PLANNING_MODE_CONF, P.DATA_PLANNING_MODE, props)
    deletes = _mode(conf, DELETE_PLANNING_MODE_CONF, P.DELETE_PLANNING_MODE, props)
    if data == "local" and deletes == "local":
        return None
    runner = SparkRunner(spark, spill=(scan.io, spill_folder(scan.metadata)))
    return RemotePlanning(runner, data, deletes, remote_workers=_task_cpus(conf))


def spill_folder(metadata: TableMetadata) -> str:
    """A new folder for one remote plan's parts: ``planning-<uuid>`` in the table's metadata
    folder (``write.metadata.path``, else ``<location>/metadata``)."""
    base = P.metadata_folder(metadata.location, metadata.properties).rstrip("/")
    return f"{base}/planning-{uuid.uuid4().hex}"


def _mode(
    settings: dict[str, str | None], conf: str, prop: P.Property[str], props: dict[str, str]
) -> str:
    raw = settings.get(conf)
    if raw is None or not str(raw).strip():
        return prop.get(props)
    value = str(raw).strip().lower()
    if value not in P.PLANNING_MODES:
        raise ValidationError(
            f"Invalid Spark conf {conf}={raw!r}: use one of {', '.join(P.PLANNING_MODES)}"
        )
    return value


_TASK_CPUS = "spark.task.cpus"


def _task_cpus(settings: dict[str, str | None]) -> int:
    raw = str(settings.get(_TASK_CPUS) or "1").strip()
    return int(raw) if raw.isdigit() else 1


class SparkRunner:
    """Runs planning work in Spark tasks of ``spark`` (see the module docstring); big
    results go through files under ``spill`` (a FileIO and a folder that is not there yet)
    when given."""

    def __init__(self, spark: SparkSession, spill: tuple[FileIO, str] | None = None) -> None:
        self.spark = spark
        self.spill = spill
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
        if self.spill is not None and _writable(*self.spill):
            io, folder = self.spill
            spilled = frame.mapInArrow(_Spilled(work, io, folder), _SPILLED_SCHEMA)
            yield from _read_spilled(io, folder, spilled)
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


def _writable(io: FileIO, folder: str) -> bool:
    """Can parts be written under ``folder`` (a probe file written and deleted)?"""
    probe = f"{folder}/probe"
    try:
        io.new_output(probe).write_bytes(b"", overwrite=True)
        io.delete(probe)
    except Exception as exc:  # e.g. read-only credentials: the parts go through Spark
        _LOG.info("planning parts go through Spark: cannot write %s (%s)", folder, exc)
        with contextlib.suppress(Exception):  # nothing of ours is there to lose
            io.delete_prefix(folder)  # a folder the probe made before it failed
        return False
    return True


def _read_spilled(io: FileIO, folder: str, spilled: Any) -> Iterator[Any]:
    """The parts the tasks of ``spilled`` wrote under ``folder``, in order; the folder is
    deleted when done (or stopped), at once: every part is written before the first is read,
    so deleting them one by one would free no more and cost a request each."""
    try:
        rows = spilled.collect()  # one job runs every task; only the files' names come back
        for size, location in _in_order((r[0], r[1], r[2], r[3], r[4]) for r in rows):
            data = io.new_input(location).read_bytes()
            yield pickle.loads(pa.decompress(data, decompressed_size=size, codec=_CODEC))
    finally:
        io.delete_prefix(folder)


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
        for i, part, last, size, packed in self.rows(batches):
            yield _row(_ARROW, i, part, last, size, packed)

    def rows(self, batches: Iterator[pa.RecordBatch]) -> Iterator[_Part]:
        """``(input, part, last, size, data)`` for each part (``data`` compressed, ``size``
        its size before) and, with ``last``, after each input's parts."""
        indexes: list[int] = []
        inputs: list[Any] = []
        for batch in batches:
            indexes.extend(batch.column(TASK_INDEX).to_pylist())
            inputs.extend(pickle.loads(p) for p in batch.column(TASK_PAYLOAD).to_pylist())
        parts = [0] * len(inputs)
        done = 0
        for k, part in self.work(inputs):
            while done < k:  # inputs before k made all their parts
                yield indexes[done], parts[done], True, 0, b""
                done += 1
            data = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
            packed = pa.compress(data, codec=_CODEC, asbytes=True)
            yield indexes[k], parts[k], False, len(data), packed
            parts[k] += 1
        for k in range(done, len(inputs)):
            yield indexes[k], parts[k], True, 0, b""


@dataclass(frozen=True)
class _Spilled:
    """The function ``mapInArrow`` runs when parts go through storage: ``work`` over the
    task's inputs, each part written (pickled, compressed) to a file of its own under
    ``folder`` and a row naming it, and a last row for each input."""

    work: ManifestWork
    io: FileIO
    folder: str

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for i, part, last, size, packed in _Work(self.work).rows(batches):
            location = ""
            if not last:
                location = f"{self.folder}/{i}-{part}.part"
                self.io.new_output(location).write_bytes(packed, overwrite=True)
            yield _row(_SPILLED_ARROW, i, part, last, size, location)


def _row(
    schema: pa.Schema, i: int, part: int, last: bool, size: int, value: bytes | str
) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([i], pa.int32()),
            pa.array([part], pa.int32()),
            pa.array([last]),
            pa.array([size], pa.int64()),
            pa.array([value], schema.field(4).type),
        ],
        schema=schema,
    )
