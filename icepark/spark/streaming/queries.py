"""Starting streaming queries on icepark tables: :func:`read_stream` (the source of
:mod:`icepark.spark.streaming.source`) and :func:`write_stream` (an exactly-once commit per
micro-batch, :mod:`icepark.spark.streaming.sink`).

::

    from icepark import spark as ispark
    events = ispark.read_stream(spark, "db.events", streaming_max_files_per_micro_batch=100)
    query = ispark.write_stream(events, "db.copy", checkpoint_location="/chk/copy")
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from icepark.errors import ValidationError
from icepark.spark.datasource import SOURCE_NAME, catalog_options, register
from icepark.spark.runtime import is_connect
from icepark.spark.streaming.sink import BatchCommitter, OutputMode, TableRef, sink_options
from icepark.spark.streaming.source import stream_options
from icepark.spark.tables import resolve_table
from icepark.spark.write.writer import WritePath
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table import Table

__all__ = ["read_stream", "write_stream"]


def read_stream(
    spark: SparkSession, table: Table | str, *, catalog: Any = None, **options: Any
) -> DataFrame:
    """A streaming DataFrame following ``table`` (a Table, or a name in ``catalog``: a
    Catalog, a configured name or a mapping of properties; default ``load_catalog()``).
    ``options`` are the source's (see the module docstring); Python names with ``_`` stand
    for ``-`` (``start_snapshot_id=...``). Options are checked now: an unknown one is an
    error naming it."""
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
    """Start a streaming query writing ``df`` into ``table`` (a Table or a name in
    ``catalog``), one exactly-once commit per micro-batch (see the module docstring).
    ``trigger`` is passed to ``DataStreamWriter.trigger`` (``{"processingTime": "1 second"}``,
    ``{"availableNow": True}``); ``options`` are the sink's (write properties,
    ``snapshot-property.<key>``); ``path`` forces the native or python write path."""
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

    load = TableRef(resolved, catalog_options(resolved.catalog))
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
    if query_name:
        writer = writer.queryName(query_name)
    if trigger:
        writer = writer.trigger(**trigger)
    return writer.start()
