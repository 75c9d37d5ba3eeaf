"""Starting streaming queries on icepark tables: :func:`read_stream` (the source of
:mod:`icepark.spark.streaming.source`) and :func:`write_stream` (an exactly-once commit per
micro-batch, :mod:`icepark.spark.streaming.sink`).

::

    from icepark import spark as ispark
    events = ispark.read_stream(spark, "db.events", streaming_max_files_per_micro_batch=100)
    query = ispark.write_stream(events, "db.copy", checkpoint_location="/chk/copy")
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from icepark.errors import ValidationError
from icepark.spark.datasource import SOURCE_NAME, catalog_options, register
from icepark.spark.runtime import is_connect
from icepark.spark.setup import prepare_session
from icepark.spark.streaming.sink import (
    BatchCommitter,
    OutputMode,
    SinkOptions,
    TableRef,
    sink_options,
    with_write_properties,
)
from icepark.spark.streaming.source import stream_options
from icepark.spark.tables import resolve_table
from icepark.spark.write.writer import (
    WritePath,
    align_to_schema,
    distribute,
    fanout_enabled,
    python_partition_columns,
)
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table import Table

__all__ = ["read_stream", "write_stream"]

_LOG = logging.getLogger(__name__)
# Spark gives the Python process of a Connect query's foreachBatch function 10 seconds
# (hard-coded in PythonWorkerFactory) to start and connect back; on a loaded server it can
# miss them, and the query is then not started: starting again is safe.
_NOT_CONNECTED = "Python worker failed to connect back"
START_ATTEMPTS = 3


def read_stream(
    spark: SparkSession, table: Table | str, *, catalog: Any = None, **options: Any
) -> DataFrame:
    """A streaming DataFrame that follows ``table`` as snapshots land (the ``icepark``
    streaming source, :mod:`icepark.spark.streaming.source`): each micro-batch reads the
    files the table's next appends added. The options are checked now, before the query
    starts: an unknown option or a bad value is an error naming it.

    Args:
        spark: the session (classic or Spark Connect); the data source is registered on it.
        table: a Table, or a name looked up in ``catalog``. A read-only table (opened from
            a metadata file) is followed at that file.
        catalog: a Catalog, a configured catalog name or a mapping of catalog properties
            where ``table`` is a name (default: ``icepark.load_catalog()``, or the Table's
            own catalog).
        **options: the source's options as keyword arguments, ``_`` standing for ``-``:
            ``start_snapshot_id``, ``stream_from_timestamp`` (epoch ms),
            ``streaming_skip_delete_snapshots``, ``streaming_skip_overwrite_snapshots``,
            ``streaming_max_files_per_micro_batch``, ``streaming_max_rows_per_micro_batch``,
            ``branch``, ``filter``, ``split_size``, ``lookback``, ``file_open_cost``; None
            values are left out.

    Returns:
        A streaming DataFrame; start it with ``writeStream`` or :func:`write_stream`.

    Raises:
        ValidationError: an unknown option, a value that does not parse, or no table.
        SparkSetupError: the session's Python workers cannot import icepark.
    """
    register(spark)
    opts = {k.replace("_", "-"): str(v) for k, v in options.items() if v is not None}
    if isinstance(table, Table):
        if table.read_only:
            opts["path"] = table.metadata_location
        else:
            opts["table"] = table.name
            opts.update(catalog_options(catalog if catalog is not None else table.catalog))
    else:
        opts["table"] = table
        opts.update(catalog_options(catalog))
    stream_options(opts)
    return spark.readStream.format(SOURCE_NAME).options(**opts).load()


def write_stream(
    df: DataFrame,
    table: Table | str,
    *,
    mode: OutputMode = "append",
    checkpoint_location: str | None = None,
    trigger: Mapping[str, Any] | None = None,
    catalog: Any = None,
    branch: str = MAIN_BRANCH,
    fanout: bool | None = None,
    query_name: str | None = None,
    options: Mapping[str, str] | None = None,
    path: WritePath = "auto",
) -> StreamingQuery:
    """Start a streaming query writing ``df`` into ``table``, one exactly-once commit per
    micro-batch (:mod:`icepark.spark.streaming.sink`): each batch is written as
    :func:`icepark.spark.write` writes, and a batch Spark replays after a crash is not
    committed twice (its query id and epoch are in the snapshot summaries).

    On a classic session a ``foreachBatch`` function writes each batch; on a Spark Connect
    session the ``icepark`` data source's stream writer does, except where ``path`` says.

    Args:
        df: a streaming DataFrame; its columns match the table's by name.
        table: a Table, or a name looked up in ``catalog``.
        mode: ``"append"`` (each batch's rows are added) or ``"complete"`` (each batch
            replaces the table's rows).
        checkpoint_location: where Spark keeps the query's progress; a query restarted from
            the same location goes on where it stopped.
        trigger: keyword arguments of ``DataStreamWriter.trigger``, e.g.
            ``{"processingTime": "1 second"}`` or ``{"availableNow": True}``.
        catalog: a Catalog, a configured catalog name or a mapping of catalog properties
            where ``table`` is a name (default: ``icepark.load_catalog()``).
        branch: the branch committed to (default ``main``); it must exist.
        fanout: keep a file open per partition whatever the rows' order (default: the
            table's ``write.spark.fanout.enabled`` when set, else true, as Java's writes).
        query_name: the query's name (``DataStreamWriter.queryName``).
        options: the sink's options: Java's write options (``target-file-size-bytes``,
            ``compression-codec``, ``distribution-mode``...), ``write.*`` table properties
            for this query, ``snapshot-property.<key>`` for the snapshot summaries.
        path: ``"auto"``, ``"native"`` (Spark's Parquet writer) or ``"python"``
            (icepark's Arrow writer). On a Spark Connect session, ``auto`` and ``python``
            write through the ``icepark`` data source's stream writer (the python path,
            without the Python process a server starts for each ``foreachBatch`` query)
            unless the table has a sort order or fan-out is off.

    Returns:
        The started query (``query.awaitTermination()``, ``query.stop()``).

    Raises:
        ValidationError: an output mode other than append or complete, an unknown option
            or bad value, a read-only table, or a branch that does not exist.
        NoSuchTableError: the table does not exist.
        CatalogConfigError: ``catalog`` names no configured catalog.
        SparkSetupError: the session's Python workers cannot import icepark.
    """
    if mode not in ("append", "complete"):
        raise ValidationError(f"Unsupported output mode {mode!r} (append, complete)")
    opts = dict(options or {})
    opts["branch"] = branch
    if fanout is not None:
        opts["fanout-enabled"] = str(fanout).lower()
    parsed = sink_options(opts)
    resolved = resolve_table(table, catalog)
    if resolved.read_only:
        raise ValidationError(f"Table {resolved.name} was opened from a metadata file: read-only")
    if branch != MAIN_BRANCH and resolved.metadata.ref(branch) is None:
        raise ValidationError(f"Cannot find branch {branch!r} in table {resolved.name}")
    # checked here, once per server, and not by the batches: on Connect they run in a process
    # the server starts with its workers' interpreter (BatchCommitter.__setstate__)
    prepare_session(df.sparkSession)

    stream_metadata = with_write_properties(resolved.metadata, parsed.properties)
    if is_connect(df) and _through_data_source(stream_metadata, parsed.fanout, path):
        writer = _data_source_writer(df, stream_metadata, resolved, opts, mode, checkpoint_location)
    else:
        writer = _batch_writer(df, resolved, parsed, mode, path, checkpoint_location, query_name)
    if query_name:
        writer = writer.queryName(query_name)
    if trigger:
        writer = writer.trigger(**trigger)
    return _start(writer, resolved.name) if is_connect(df) else writer.start()


def _through_data_source(metadata: TableMetadata, fanout: bool | None, path: WritePath) -> bool:
    """Whether a Connect session's :func:`write_stream` writes through the ``icepark`` data
    source's stream writer (icepark's Arrow writer in the server's Python workers) rather
    than a ``foreachBatch`` function: unless ``path`` is ``native``, the table has a sort
    order or fan-out is off, since a streaming DataFrame cannot be sorted.

    A Connect server starts a Python process of its own for each ``foreachBatch`` query,
    about 2 s of every start here; the data source's writer needs none (bench/README.md,
    "Spark Connect"). ``metadata`` is the table's with the stream's write properties,
    ``fanout`` the stream's option (None: the table's choice)."""
    if path == "native":
        return False
    fans_out = fanout if fanout is not None else fanout_enabled(metadata)
    return fans_out and metadata.sort_order().is_unsorted


def _data_source_writer(
    df: DataFrame,
    metadata: TableMetadata,
    table: Table,
    options: Mapping[str, str],
    mode: OutputMode,
    checkpoint_location: str | None,
) -> Any:
    """``df`` aligned to the table's schema and spread by its distribution mode, as the
    python path of :func:`icepark.spark.write` lays out a batch, into the data source's
    stream writer (:class:`~icepark.spark.streaming.sink.IcebergStreamWriter`)."""
    spark = df.sparkSession
    register(spark)  # the data source, carrying this session's application
    schema = metadata.schema()
    aligned = align_to_schema(df, schema, with_ids=False)
    spread = distribute(aligned, metadata, python_partition_columns(schema, metadata.spec()), [])
    sink = {**options, **catalog_options(table.catalog), "table": table.name}
    writer = spread.writeStream.format(SOURCE_NAME).outputMode(mode).options(**sink)
    if checkpoint_location:
        writer = writer.option("checkpointLocation", checkpoint_location)
    return writer


def _batch_writer(
    df: DataFrame,
    table: Table,
    parsed: SinkOptions,
    mode: OutputMode,
    path: WritePath,
    checkpoint_location: str | None,
    query_name: str | None,
) -> Any:
    """``df`` into a ``foreachBatch`` function (:class:`BatchCommitter`) that writes each
    micro-batch as :func:`icepark.spark.write` does."""
    load = TableRef(table, catalog_options(table.catalog))
    checkpoint = checkpoint_location
    own_id = None
    if is_connect(df):  # the batch function sees no job properties: see BatchCommitter
        root = df.sparkSession.conf.get("spark.sql.streaming.checkpointLocation", None)
        if checkpoint is None and root and query_name:
            checkpoint = f"{str(root).rstrip('/')}/{query_name}"  # where Spark puts it
        if checkpoint is None:
            own_id = str(uuid.uuid4())
    committer = BatchCommitter(load, mode, parsed, path, checkpoint=checkpoint, query_id=own_id)
    writer = df.writeStream.outputMode(mode).foreachBatch(committer)
    if checkpoint_location:
        writer = writer.option("checkpointLocation", checkpoint_location)
    return writer


def _start(writer: Any, name: str) -> StreamingQuery:
    """``writer.start()`` on a Connect session, again (up to :data:`START_ATTEMPTS` times)
    when the server's foreachBatch process did not connect back in time."""
    for attempt in range(1, START_ATTEMPTS):
        try:
            return writer.start()
        except Exception as e:
            if _NOT_CONNECTED not in str(e):
                raise
            _LOG.warning(
                "The streaming write to %s did not start (attempt %d of %d: the server's "
                "Python process for foreachBatch did not connect back in time); starting "
                "it again",
                name,
                attempt,
                START_ATTEMPTS,
            )
            time.sleep(attempt)
    return writer.start()
