"""Structured Streaming source: a query that follows an Iceberg table as snapshots land.

After :func:`icepark.spark.register`::

    spark.readStream.format("icepark").option("table", "db.events").load()
    icepark.spark.read_stream(spark, "db.events", streaming_max_files_per_micro_batch=100)

Options (Java's names and meaning; see :mod:`icepark.table.incremental.micro_batches` for the
rules):
``stream-from-timestamp`` (epoch ms), ``start-snapshot-id``,
``streaming-skip-delete-snapshots``, ``streaming-skip-overwrite-snapshots``,
``streaming-max-files-per-micro-batch``, ``streaming-max-rows-per-micro-batch`` (soft: the
file that crosses it is taken whole), ``branch``; ``split-size``, ``lookback`` and
``file-open-cost`` as Java's read options; ``filter`` (an icepark filter string; Spark offers
Python stream readers no pushdown); the catalog as in batch reads (``catalog``, ``uri``,
``warehouse``, ``type``, ``catalog.<property>``). Any other option is an error naming it.

How it flows: Spark keeps one :class:`IcebergStreamReader` on the driver for the query. At
each trigger ``latestOffset(start, limit)`` reloads the table and asks the planner how far the
next micro-batch goes within the read limit (Spark passes ``ReadAllAvailable`` for
``Trigger.Once``, the limit of :meth:`getDefaultReadLimit` otherwise; the pip pyspark has no
composite limit, so with both max options the files limit travels and the rows option is
applied with it). ``partitions(start, end)`` plans the files between the two offsets (the
same walk, so a batch replayed from the checkpoint reads the same files), bin-packs them into
combined tasks as batch reads do, and each Spark task reads its files with icepark's reader
(:meth:`DataScan.read_task`: the batch source's read path) and yields Arrow batches.
``Trigger.AvailableNow`` caps the stream at the head committed when the query starts and
still honours the read limits.

A first micro-batch that reads the table's snapshot in full plans in its own tasks when the
table's ``read.data-planning-mode`` says so (``distributed``; ``auto`` by the rule of
:func:`~icepark.planning.distributed.plans_remotely`, the micro-batch's most tasks standing
for the cluster's cores; the reader has no session, so the Spark conf does not count here):
the driver counts the snapshot's files by its manifest list (read limits on files only; with
a rows or bytes limit the files are listed on the driver), and each task reads its share of
the manifests, keeps the entries at the batch's positions that the filter may match and
reads them (:class:`~icepark.planning.distributed.SnapshotSlices`): the same files as a
driver's plan. Offsets are Java's JSON (``snapshot_id``, ``position``,
``scan_all_files``).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType as SparkStructType

from icepark.arrow.batches import coalesce_batches
from icepark.errors import ValidationError
from icepark.expressions import AlwaysTrue, parse_filter
from icepark.manifest import ManifestFile
from icepark.planning.distributed import SnapshotSlices, plans_remotely
from icepark.planning.planner import CombinedScanTask, FileScanTask, SplitOptions, plan_tasks
from icepark.spark.tables import CATALOG_OPTION_KEYS, catalog_from_options
from icepark.spark.types import cast_to_spark_arrow, spark_arrow_schema
from icepark.spec import properties as P
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table import Table
from icepark.table.incremental.micro_batches import (
    FROM_TIMESTAMP_OPTION,
    SKIP_DELETE_OPTION,
    SKIP_OVERWRITE_OPTION,
    START_SNAPSHOT_OPTION,
    MicroBatchPlanner,
    ReadLimits,
    StreamingOffset,
    StreamSettings,
)
from icepark.table.scan import DataScan

__all__ = [
    "IcebergStreamReader",
    "MAX_FILES_OPTION",
    "MAX_ROWS_OPTION",
    "STREAM_OPTIONS",
    "stream_options",
]

#: Spark tasks a micro-batch is read with, at most: twice the cores of the machine planning
#: it, within 8 to 64. A Python task costs ~25-30 ms to start: a catch-up of 10,000 small
#: files took 5.1 s in 64 tasks on 2 cores, 4.2 s in 8.
MAX_PARTITIONS = min(64, max(8, 2 * (os.cpu_count() or 4)))
#: rows of the Arrow batches handed to Spark, at least (but a task's last): each batch
#: crosses to the JVM on its own, and a backlog of small files gave a batch a file
BATCH_ROWS = 65_536
MAX_FILES_OPTION = "streaming-max-files-per-micro-batch"
MAX_ROWS_OPTION = "streaming-max-rows-per-micro-batch"
_SPLIT_OPTIONS = {"split-size", "lookback", "file-open-cost"}
STREAM_OPTIONS = frozenset(
    {
        "table",
        "path",
        "catalog",
        *CATALOG_OPTION_KEYS,
        FROM_TIMESTAMP_OPTION,
        START_SNAPSHOT_OPTION,
        SKIP_DELETE_OPTION,
        SKIP_OVERWRITE_OPTION,
        MAX_FILES_OPTION,
        MAX_ROWS_OPTION,
        "branch",
        "filter",
        *_SPLIT_OPTIONS,
    }
)


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): str(v) for k, v in options.items()}


def _int_option(opts: Mapping[str, str], name: str, positive: bool = False) -> int | None:
    raw = opts.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"Option {name} must be an integer, not {raw!r}") from None
    if positive and value <= 0:
        raise ValidationError(f"Option {name} must be positive, not {value}")
    return value


def _bool_option(opts: Mapping[str, str], name: str) -> bool:
    raw = opts.get(name)
    if raw is None:
        return False
    try:
        return P.parse_bool(raw)
    except (ValueError, ValidationError):
        raise ValidationError(f"Option {name} must be true or false, not {raw!r}") from None


@dataclass(frozen=True)
class _Parsed:
    settings: StreamSettings
    max_files: int | None
    max_rows: int | None
    split: dict[str, str]


def stream_options(options: Mapping[str, str]) -> _Parsed:
    """The stream settings the options give; an unknown option or a bad value is a
    :class:`ValidationError` naming it."""
    opts = _lower(options)
    for key in opts:
        if key not in STREAM_OPTIONS and not key.startswith("catalog."):
            raise ValidationError(
                f"Unknown option {key!r} for the icepark streaming source (known: "
                f"{', '.join(sorted(STREAM_OPTIONS))}, catalog.<property>)"
            )
    if not opts.get("table") and not opts.get("path"):
        raise ValidationError("The icepark streaming source needs option 'table'")
    raw_filter = opts.get("filter")
    settings = StreamSettings(
        start_snapshot_id=_int_option(opts, START_SNAPSHOT_OPTION),
        from_timestamp_ms=_int_option(opts, FROM_TIMESTAMP_OPTION),
        skip_delete=_bool_option(opts, SKIP_DELETE_OPTION),
        skip_overwrite=_bool_option(opts, SKIP_OVERWRITE_OPTION),
        branch=opts.get("branch") or MAIN_BRANCH,
        row_filter=parse_filter(raw_filter) if raw_filter else AlwaysTrue(),
    )
    split = {
        P.SPLIT_SIZE.name: opts.get("split-size", ""),
        P.SPLIT_LOOKBACK.name: opts.get("lookback", ""),
        P.SPLIT_OPEN_FILE_COST.name: opts.get("file-open-cost", ""),
    }
    return _Parsed(
        settings,
        _int_option(opts, MAX_FILES_OPTION, positive=True),
        _int_option(opts, MAX_ROWS_OPTION, positive=True),
        {k: v for k, v in split.items() if v},
    )


def _spread(combined: list[CombinedScanTask], most: int) -> list[CombinedScanTask]:
    """At most ``most`` Spark tasks: each takes the next combined task while it is the least
    loaded (a Python task costs more to start than a JVM one, and a micro-batch of many
    small files packs into many combined tasks)."""
    if len(combined) <= most:
        return combined
    loads = [0] * most
    groups: list[list[FileScanTask]] = [[] for _ in range(most)]
    for c in sorted(combined, key=lambda c: -c.size):
        i = loads.index(min(loads))
        loads[i] += c.size
        groups[i].extend(c.tasks)
    return [CombinedScanTask(tuple(g)) for g in groups]


def _load_table(options: Mapping[str, str]) -> Table:
    opts = _lower(options)
    name = opts.get("table")
    if name:
        loaded: Table = catalog_from_options(options).load_table(name)
        return loaded
    return Table.from_metadata(opts["path"])


@dataclass
class _Partition(InputPartition):
    """One Spark task of a micro-batch: the pickled scan and its combined task, or the
    entries of a snapshot read in full that it plans itself (pickled
    :class:`~icepark.planning.distributed.SnapshotSlices`)."""

    scan: bytes
    task: bytes | None
    slices: bytes | None = None


class IcebergStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("icepark")``'s reader (see the module docstring).

    Spark makes one on the driver per query (kept across micro-batches) and pickles one into
    the read function of its tasks: the table and planner are made on first use and never
    pickled."""

    def __init__(self, options: Mapping[str, str], schema: SparkStructType) -> None:
        self.options = dict(options)
        self.schema = schema
        self.parsed = stream_options(options)
        self._planner: MicroBatchPlanner | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_planner": None}

    @property
    def planner(self) -> MicroBatchPlanner:
        if self._planner is None:
            self._planner = MicroBatchPlanner(
                _load_table(self.options), self.parsed.settings, remote=self._plans_in_tasks
            )
        return self._planner

    def _plans_in_tasks(self, manifests: Sequence[ManifestFile]) -> bool:
        """Do the read tasks plan a snapshot read in full (``read.data-planning-mode``; for
        ``auto``, the micro-batch's most tasks stand for the cluster's cores)?"""
        assert self._planner is not None
        mode = P.DATA_PLANNING_MODE.get(self._planner.table.metadata.properties)
        return plans_remotely(mode, manifests, MAX_PARTITIONS)

    # -- offsets ---------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        return self.planner.initial_offset().to_json()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.parsed.max_files is not None:
            return ReadMaxFiles(self.parsed.max_files)
        if self.parsed.max_rows is not None:
            return ReadMaxRows(self.parsed.max_rows)
        return ReadAllAvailable()

    def _limits(self, limit: ReadLimit) -> ReadLimits:
        if isinstance(limit, ReadAllAvailable):
            return ReadLimits()
        files = self.parsed.max_files
        rows = self.parsed.max_rows
        limits = ReadLimits(
            max_files=files if files is not None else float("inf"),
            max_rows=rows if rows is not None else float("inf"),
        )
        if isinstance(limit, ReadMaxFiles):
            return replace(limits, max_files=limit.max_files)
        if isinstance(limit, ReadMaxRows):
            return replace(limits, max_rows=limit.max_rows)
        if isinstance(limit, ReadMaxBytes):
            return replace(limits, max_bytes=limit.max_bytes)
        if isinstance(limit, ReadMinRows):
            return replace(limits, min_rows=limit.min_rows)
        return limits

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        offset = StreamingOffset.from_json(start)
        return self.planner.latest_offset(offset, self._limits(limit)).to_json()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        latest = self.planner.report_latest()
        return latest.to_json() if latest is not None else None

    def prepareForTriggerAvailableNow(self) -> None:
        self.planner.cap_at_head()

    def commit(self, end: dict[str, Any]) -> None:
        pass  # nothing to release: file lists are kept in a bounded cache

    # -- planning and reading --------------------------------------------------------------

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        planner = self.planner
        tasks, remote = planner.plan_parts(
            StreamingOffset.from_json(start), StreamingOffset.from_json(end)
        )
        if not tasks and (remote is None or not remote.slices):
            return []
        table = planner.table
        scan = table.scan(columns=self.schema.fieldNames())
        payload = pickle.dumps(scan)
        partitions: list[InputPartition] = []
        if tasks:
            props = {**table.metadata.properties, **self.parsed.split}
            combined = plan_tasks(tasks, SplitOptions.from_properties(props))
            partitions.extend(
                _Partition(payload, pickle.dumps(c)) for c in _spread(combined, MAX_PARTITIONS)
            )
        if remote is not None and remote.slices:
            partitions.extend(
                _Partition(payload, None, pickle.dumps(share))
                for share in remote.split(MAX_PARTITIONS)
            )
        return partitions

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Partition)
        scan: DataScan = pickle.loads(partition.scan)
        target = spark_arrow_schema(self.schema)
        if partition.slices is not None:
            share: SnapshotSlices = pickle.loads(partition.slices)
            tasks: Iterable[FileScanTask] = share.tasks(scan.io, scan.metadata)
        else:
            assert partition.task is not None
            tasks = pickle.loads(partition.task).tasks
        batches = (
            cast_to_spark_arrow(batch, target)
            for task in tasks
            for batch in scan.read_task(task)
            if batch.num_rows
        )
        yield from coalesce_batches(batches, BATCH_ROWS)
