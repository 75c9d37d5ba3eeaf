"""Structured Streaming sink: each micro-batch one commit, exactly once.

Two entry points, both exactly-once::

    df.writeStream.format("icepark").option("table", "db.events")
      .option("checkpointLocation", "/chk/events").outputMode("append").start()
    icepark.spark.write_stream(df, "db.events", checkpoint_location="/chk/events")

* ``format("icepark")`` is the Python data source's stream writer
  (:class:`IcebergStreamWriter`): each Spark task writes its Arrow batches with icepark's
  writer (partition fan-out, file rolling, metrics) and sends back the files; Spark then calls
  ``commit(messages, batchId)`` on the driver in a Python worker of its own, which loads the
  table from the options and commits.
* :func:`write_stream` runs ``foreachBatch`` with the batch write path of
  :func:`icepark.spark.write` (Spark's own Parquet writer where it can, see
  :mod:`icepark.spark.write.writer`), which is faster, then commits on the driver. On a
  Spark Connect session the function runs in a Python process beside the server, not in the
  client: it is pickled there with the table's name and catalog properties
  (:class:`TableRef`) and loads the table itself.

Exactly once, as Java's ``SparkWrite`` streaming writes: every commit records the query id and
the epoch (Spark's batch id) in the snapshot summary (``spark.sql.streaming.queryId``,
``spark.sql.streaming.epochId``). Before committing epoch E, the branch's history is walked
from its head to the newest snapshot of the same query; if that snapshot's epoch is E or
later, the epoch was committed before (the query died after committing and before Spark
recorded the batch as done, and now replays it) and nothing is committed: the files written
for the replay are deleted. The check runs again on every commit attempt (a retry after a
conflict re-reads the history), so it holds against concurrent writers too. The query id is
Spark's (stable across restarts from one checkpoint): tasks read it from the job's local
properties (``sql.streaming.queryId``), as does :func:`write_stream`'s batch function on a
classic session; on Spark Connect, whose batch function sees no job properties, and in the
data source's commit when tasks sent none, it comes from the checkpoint's ``metadata`` file
(``{"id": ...}``, written when the query starts). A Connect query without a checkpoint
location (Spark then uses a temporary one, so it cannot restart) gets an id of its own.

Output modes: ``append`` adds the batch's files (a fast append, as Java's); ``complete``
replaces the table's rows with the batch (an overwrite of every row). Options: ``table``
and the catalog as in batch writes, ``branch``, ``fanout-enabled`` (default: the table's
``write.spark.fanout.enabled`` when set, else true, as Java's writes; icepark's Arrow writer
keeps a file per partition open whatever the input order, and with it the native path also
skips sorting each task's rows by partition), ``snapshot-property.<key>``, and the table's
write properties for this stream only (their names, e.g. ``write.target-file-size-bytes``, or
Java's write options ``target-file-size-bytes``, ``compression-codec``,
``compression-level``, ``distribution-mode``, ``write-format``).
"""

from __future__ import annotations

import json
import pickle
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from icepark.errors import IceparkError, ValidationError
from icepark.expressions import AlwaysTrue
from icepark.io import FileIO, load_file_io
from icepark.manifest import DataFile
from icepark.spark.runtime import SNAPSHOT_PROPERTY_PREFIX, local_property, spark_summary
from icepark.spark.setup import mark_workers_checked
from icepark.spark.tables import CATALOG_OPTION_KEYS, catalog_from_options
from icepark.spark.write.writer import WritePath
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table import Table
from icepark.table.write.data_files import write_arrow
from icepark.table.write.operations import Action, AppendAction, OverwriteAction, Staged

__all__ = [
    "EPOCH_ID_PROPERTY",
    "IcebergStreamWriter",
    "QUERY_ID_PROPERTY",
    "SinkOptions",
    "commit_epoch",
    "last_committed_epoch",
    "sink_options",
    "BatchCommitter",
    "BatchInterruptedError",
    "OutputMode",
    "TableRef",
    "with_write_properties",
]

QUERY_ID_PROPERTY = "spark.sql.streaming.queryId"
EPOCH_ID_PROPERTY = "spark.sql.streaming.epochId"
_QUERY_ID_LOCAL_PROPERTY = "sql.streaming.queryId"  # Spark's StreamExecution.QUERY_ID_KEY
_JAVA_WRITE_OPTIONS = {
    "target-file-size-bytes": P.WRITE_TARGET_FILE_SIZE_BYTES.name,
    "compression-codec": P.PARQUET_COMPRESSION.name,
    "compression-level": P.PARQUET_COMPRESSION_LEVEL.name,
    "distribution-mode": P.WRITE_DISTRIBUTION_MODE.name,
    "write-format": P.DEFAULT_FILE_FORMAT.name,
}
_SINK_OPTIONS = frozenset(
    {"table", "catalog", *CATALOG_OPTION_KEYS, "branch", "fanout-enabled", "checkpointlocation"}
)

OutputMode = Literal["append", "complete"]


# -- exactly once ------------------------------------------------------------------------------


def last_committed_epoch(metadata: TableMetadata, branch: str, query_id: str) -> int | None:
    """The epoch of the newest snapshot on ``branch`` committed by ``query_id`` (None when
    it committed none), as Java's ``findLastCommittedEpochId``."""
    head = metadata.snapshot_by_name(branch)
    for snapshot in metadata.ancestors_of(head.snapshot_id if head else None):
        summary = snapshot.summary
        if summary is not None and summary.get(QUERY_ID_PROPERTY) == query_id:
            epoch = summary.get(EPOCH_ID_PROPERTY)
            return int(epoch) if epoch is not None else None
    return None


class _AlreadyCommitted(IceparkError):
    """The epoch was committed by an earlier run of the query: commit nothing."""


class _EpochGuard(Action):
    """Runs ``inner`` unless the branch already holds this query's epoch (checked on the
    base of every attempt)."""

    def __init__(self, inner: Action, query_id: str, epoch_id: int, branch: str) -> None:
        self.inner = inner
        self.query_id = query_id
        self.epoch_id = epoch_id
        self.branch = branch
        self.revalidates = inner.revalidates

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        last = last_committed_epoch(base, self.branch, self.query_id)
        if last is not None and self.epoch_id <= last:
            raise _AlreadyCommitted(
                f"Epoch {self.epoch_id} of query {self.query_id} is already committed"
            )
        return self.inner.stage(base, start)

    def committed(self, io: FileIO) -> None:
        self.inner.committed(io)

    def abort(self, io: FileIO) -> None:
        self.inner.abort(io)


def commit_epoch(
    table: Table,
    files: Sequence[DataFile],
    *,
    query_id: str,
    epoch_id: int,
    mode: OutputMode = "append",
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> bool:
    """Commit one micro-batch's files (``append``: add them; ``complete``: replace every row
    with them) unless the epoch is already committed; True when it committed. Either way the
    files are owned: a skipped or failed commit deletes them."""
    props = {
        **dict(snapshot_properties or {}),
        QUERY_ID_PROPERTY: query_id,
        EPOCH_ID_PROPERTY: str(epoch_id),
    }
    io = table.io
    inner: Action
    if mode == "append":
        inner = AppendAction(io, list(files), branch, props, merge=False)
    elif mode == "complete":
        # as Java's streaming overwrite: every row replaced, no conflict validation
        inner = OverwriteAction(
            io, list(files), branch, props, row_filter=AlwaysTrue(), isolation=P.SNAPSHOT
        )
    else:
        raise ValidationError(f"Unsupported output mode {mode!r} (append, complete)")
    tx = table.transaction()
    tx.add_action(_EpochGuard(inner, query_id, epoch_id, branch))
    try:
        tx.commit_transaction()
    except _AlreadyCommitted:
        return False
    return True


# -- options -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SinkOptions:
    branch: str
    fanout: bool | None
    properties: dict[str, str]  # table write properties for this stream
    snapshot_properties: dict[str, str]
    checkpoint: str | None


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    """The sink's options; an unknown one is a :class:`ValidationError` naming it."""
    properties: dict[str, str] = {}
    snapshot_properties: dict[str, str] = {}
    fanout: bool | None = None
    for key, value in options.items():
        lowered = key.lower()
        if lowered in _JAVA_WRITE_OPTIONS:
            properties[_JAVA_WRITE_OPTIONS[lowered]] = value
        elif lowered in P.ALL and lowered.startswith("write."):
            properties[lowered] = value
        elif lowered.startswith(SNAPSHOT_PROPERTY_PREFIX):
            snapshot_properties[key[len(SNAPSHOT_PROPERTY_PREFIX) :]] = value
        elif lowered == "fanout-enabled":
            try:
                fanout = P.parse_bool(value)
            except ValueError:
                raise ValidationError(
                    f"Option fanout-enabled must be true or false, not {value!r}"
                ) from None
        elif lowered not in _SINK_OPTIONS and not lowered.startswith("catalog."):
            raise ValidationError(
                f"Unknown option {key!r} for the icepark streaming sink (known: "
                f"{', '.join(sorted(_SINK_OPTIONS | set(_JAVA_WRITE_OPTIONS)))}, "
                "catalog.<property>, snapshot-property.<key>, write.<table property>)"
            )
    lowered_opts = {k.lower(): v for k, v in options.items()}
    return SinkOptions(
        lowered_opts.get("branch") or MAIN_BRANCH,
        fanout,
        properties,
        snapshot_properties,
        lowered_opts.get("checkpointlocation"),
    )


def with_write_properties(metadata: TableMetadata, overrides: Mapping[str, str]) -> TableMetadata:
    """The metadata files are written against: the table's, with the stream's write
    properties (never committed)."""
    if not overrides:
        return metadata
    return replace(metadata, properties={**metadata.properties, **overrides})


def _load(options: Mapping[str, str]) -> Table:
    name = {k.lower(): v for k, v in options.items()}.get("table")
    if not name:
        raise ValidationError("The icepark streaming sink needs option 'table'")
    table: Table = catalog_from_options(options).load_table(name)
    return table


def _query_id_from_checkpoint(location: str | None) -> str | None:
    """The query id Spark keeps in ``<checkpoint>/metadata`` (``{"id": ...}``)."""
    if not location:
        return None
    path = location.rstrip("/") + "/metadata"
    try:
        text = load_file_io({}, path).new_input(path).read_bytes()
        found = json.loads(text.decode().splitlines()[0]).get("id")
    except Exception:
        return None
    return str(found) if found else None


# -- the Python data source's stream writer ------------------------------------------------


@dataclass
class _EpochFiles(WriterCommitMessage):
    files: bytes
    query_id: str | None


class IcebergStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("icepark")``'s writer (see the module docstring)."""

    def __init__(
        self, options: Mapping[str, str], overwrite: bool, engine: Mapping[str, str]
    ) -> None:
        self.options = dict(options)
        self.engine = dict(engine)  # Spark's application (IcebergDataSource.engine_summary)
        self.mode: OutputMode = "complete" if overwrite else "append"
        self.parsed = sink_options(options)
        table = _load(options)
        self.io = table.io
        self.metadata = with_write_properties(table.metadata, self.parsed.properties)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        from pyspark import TaskContext

        from icepark.spark.write.task_files import arrow_batches

        context = TaskContext.get()
        files = write_arrow(
            self.io,
            self.metadata,
            arrow_batches(iterator),
            context.partitionId() if context is not None else 0,
            write_uuid=str(uuid.uuid4()),
            attempt_id=context.attemptNumber() if context is not None else 0,
        )
        query_id = context.getLocalProperty(_QUERY_ID_LOCAL_PROPERTY) if context else None
        return _EpochFiles(pickle.dumps(files), query_id)

    @staticmethod
    def _files(messages: Sequence[WriterCommitMessage | None]) -> list[DataFile]:
        out: list[DataFile] = []
        for m in messages:
            if isinstance(m, _EpochFiles):
                out.extend(pickle.loads(m.files))
        return out

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        files = self._files(messages)
        ids = {m.query_id for m in messages if isinstance(m, _EpochFiles) and m.query_id}
        query_id = next(iter(ids)) if len(ids) == 1 else None
        query_id = query_id or _query_id_from_checkpoint(self.parsed.checkpoint)
        table = _load(self.options)
        if query_id is None:
            for f in files:
                table.io.delete_quietly(f.file_path)
            raise ValidationError(
                f"Cannot commit epoch {batchId} to table {table.name} exactly once: the "
                "streaming query id is unknown (set option checkpointLocation)"
            )
        commit_epoch(
            table,
            files,
            query_id=query_id,
            epoch_id=batchId,
            mode=self.mode,
            branch=self.parsed.branch,
            snapshot_properties={**self.engine, **self.parsed.snapshot_properties},
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        for f in self._files(messages):
            self.io.delete_quietly(f.file_path)


# -- foreachBatch on the batch write path ------------------------------------------------------


# What Spark's stream thread takes for an interruption in a Python ``foreachBatch`` function
# (``StreamExecution.isInterruptionException``): a Py4J error of one of these Java classes.
_INTERRUPTIONS = (
    "java.lang.InterruptedException",
    "java.io.InterruptedIOException",
    "java.nio.channels.ClosedByInterruptException",
)
_SPARK_EXCEPTION = "org.apache.spark.SparkException"
_JOB_GROUP_LOCAL_PROPERTY = "spark.jobGroup.id"  # SparkContext.SPARK_JOB_GROUP_ID


class BatchInterruptedError(IceparkError):
    """A micro-batch's write was interrupted (or its job cancelled), as it is when its query
    is stopped mid-batch.

    Spark tells a stop from a failure of a Python ``foreachBatch`` function by a pattern over
    the error's text, which names the interrupted Py4J call; over the text of the Py4J error
    itself (its Java stack trace, ~12,000 characters) the pattern overflowed the stream
    thread's stack, and every stop mid-batch printed a ``StackOverflowError`` instead of
    stopping quietly. This error says the same in one line, so the query stops as Spark
    means it to. The batch was not committed; a restart from the checkpoint writes it again.
    """


def _interruption(error: BaseException, job_group: str | None = None) -> str | None:
    """The Java class of an interruption in the chain of causes of ``error`` (a Py4J error,
    which carries its Java exception), if any.

    A stopped query's jobs are cancelled before its thread is interrupted, so its batch's
    write can fail with the cancellation instead: a ``SparkException`` without a cause that
    says "cancelled" and names the query's job group (``job_group``, Spark's
    ``spark.jobGroup.id``). Spark takes that for an interruption too
    (``StreamExecution.isInterruptionException``), and so does this: it is reported as an
    ``InterruptedException``, the name Spark's pattern looks for."""
    cause = getattr(error, "java_exception", None)
    for _ in range(16):
        if cause is None:
            return None
        name = str(cause.getClass().getName())
        if name in _INTERRUPTIONS:
            return name
        following = cause.getCause()
        if job_group and name == _SPARK_EXCEPTION and following is None:
            text = str(cause.getMessage() or "")
            if "cancelled" in text and job_group in text:
                return f"{_INTERRUPTIONS[0]} (the write's job was cancelled: the query stopped)"
        cause = following
    return None


class TableRef:
    """The table :func:`write_stream` writes, for its batch function: the Table itself in
    this process; pickled (Spark Connect sends the function to a Python process beside the
    server), its name and catalog properties, from which that process loads it once and
    refreshes it after."""

    def __init__(self, table: Table, catalog_options: Mapping[str, str]) -> None:
        self.table: Table | None = table
        self.name = ".".join(table.identifier)
        self.options = dict(catalog_options)

    def __getstate__(self) -> dict[str, object]:
        return {"table": None, "name": self.name, "options": self.options}

    def __call__(self) -> Table:
        if self.table is None:
            self.table = catalog_from_options(self.options).load_table(self.name)
            return self.table
        return self.table.refresh()


class BatchCommitter:
    """The ``foreachBatch`` function of :func:`write_stream`.

    ``query_id`` is used when neither the job's properties (classic sessions) nor
    ``checkpoint``'s metadata file (read once) give Spark's query id."""

    def __init__(
        self,
        load: Callable[[], Table],
        mode: OutputMode,
        parsed: SinkOptions,
        path: WritePath,
        *,
        checkpoint: str | None = None,
        query_id: str | None = None,
    ) -> None:
        self.load = load
        self.mode = mode
        self.parsed = parsed
        self.path = path
        self.checkpoint = checkpoint
        self.query_id = query_id
        self._checkpoint_id: str | None = None
        self._on_server = False

    def __setstate__(self, state: dict[str, object]) -> None:
        # unpickled: this is the Python process a Connect server started for the query's
        # batches, with its workers' interpreter, and it has imported icepark
        self.__dict__.update(state)
        self._on_server = True

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        try:
            self._commit(df, batch_id)
        except Exception as exc:
            group = None
            if getattr(exc, "java_exception", None) is not None:  # a Py4J error
                group = local_property(df.sparkSession, _JOB_GROUP_LOCAL_PROPERTY)
            interruption = _interruption(exc, group)
            if interruption is None:
                raise
            message = (
                "py4j.protocol.Py4JJavaError: An error occurred while calling the write of "
                f"micro-batch {batch_id}: {interruption}"
            )
            raise BatchInterruptedError(message) from None

    def _query_id(self, df: DataFrame) -> str | None:
        found = local_property(df.sparkSession, _QUERY_ID_LOCAL_PROPERTY)
        if found:
            return found
        if self._checkpoint_id is None and self.checkpoint:
            self._checkpoint_id = _query_id_from_checkpoint(self.checkpoint)
        return self._checkpoint_id or self.query_id

    def _commit(self, df: DataFrame, batch_id: int) -> None:
        from icepark.spark.write.writer import write_files

        if self._on_server:  # once: the first batch of this process
            mark_workers_checked(df.sparkSession)
            self._on_server = False
        query_id = self._query_id(df)
        if not query_id:
            raise ValidationError("write_stream's batch function runs outside a streaming query")
        table = self.load()
        last = last_committed_epoch(table.metadata, self.parsed.branch, query_id)
        if last is not None and batch_id <= last:
            return  # a replay of a committed epoch: nothing to write
        writing = Table(
            table.identifier,
            with_write_properties(table.metadata, self.parsed.properties),
            table.metadata_location,
            table.io,
            None,
        )
        # as Java: the option, else the table's choice (writer.fanout_enabled)
        files = write_files(df, writing, path=self.path, fanout=self.parsed.fanout)
        commit_epoch(
            table,
            files,
            query_id=query_id,
            epoch_id=batch_id,
            mode=self.mode,
            branch=self.parsed.branch,
            snapshot_properties=spark_summary(df.sparkSession, self.parsed.snapshot_properties),
        )
