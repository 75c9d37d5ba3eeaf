"""The ``icepark`` Python data source: Iceberg tables through Spark's own reader and writer
APIs and SQL.

After :func:`register`::

    spark.read.format("icepark").option("table", "db.t").load()
    spark.read.format("icepark").load("/path/to/metadata/v3.metadata.json")   # read-only
    spark.readStream.format("icepark").option("table", "db.t").load()   # stream_source
    df.writeStream.format("icepark").option("table", "db.t").start()    # stream_sink
    df.write.format("icepark").option("table", "db.t").mode("append").save()
    spark.sql("CREATE TEMPORARY VIEW t USING icepark OPTIONS (table 'db.t')")  # SELECT, INSERT

Options: ``table``; the catalog as ``catalog`` (a configured name), ``uri``, ``warehouse``,
``type`` and ``catalog.<property>``; for reads ``snapshot-id``, ``as-of-timestamp`` (epoch
ms), ``branch`` or ``tag``, ``filter`` (an icepark filter string); for writes
``overwrite-mode`` = ``dynamic`` to replace only the partitions written (``mode("overwrite")``
otherwise replaces the whole table), ``branch`` and ``snapshot-property.<key>`` (an entry of
the commit's snapshot summary, as Java's). Commits record Spark's application id and version
as Java's Spark writes do (``spark.app.id``, ``app-id``, ``engine-name``,
``engine-version``): :func:`register` gives Spark a subclass of :class:`IcebergDataSource`
that carries them, since the commit runs in a Python worker, which has no session to ask.

This path always runs through Python (icepark's Arrow reader and writer in each task): Spark
offers Python data sources no column pruning, so every column is read. Spark's filters are
not pushed down by default: Spark (4.1 to 4.3) keeps the reader of the last query that pushed
filters and reuses it, partitions and pushed filters included, for a later query on the same
DataFrame or view that pushes none, which then returns the earlier query's rows. To prune,
give an icepark ``filter`` option; ``pushdown`` = ``true`` (with
``spark.sql.python.filterPushdown.enabled``) accepts Spark's filters anyway, for DataFrames
queried once. Without pushed filters each task plans the scan itself when it runs, so a view
queried again sees the table's current snapshot (tasks starting while a commit lands may
see different snapshots). For speed use :func:`icepark.spark.read` and
:func:`icepark.spark.write`, which use Spark's native Parquet reader and writer where they
can.

Everything a task or the commit needs travels in the options and in pickled values: reads
plan on the driver and send each task its scan tasks; writes send back the entries of the
files they wrote, and ``commit`` (which Spark runs in a Python worker of its own) reloads the
table from the catalog the options name.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType as SparkStructType

from icepark.errors import ValidationError
from icepark.expressions import AlwaysTrue, BooleanExpression, parse_filter
from icepark.spark.filters import from_spark_filters
from icepark.spark.runtime import snapshot_properties
from icepark.spark.tables import catalog_from_options, resolve_catalog
from icepark.spark.types import cast_to_spark_arrow, spark_arrow_schema, to_spark_schema
from icepark.table import Table
from icepark.table.scan import DataScan

__all__ = ["IcebergDataSource", "register", "register_tables", "SOURCE_NAME"]

SOURCE_NAME = "icepark"
_MAX_SLOTS = 64

try:  # Spark 4.1+: writers that receive Arrow batches
    from pyspark.sql.datasource import DataSourceArrowWriter as _WriterBase
except ImportError:  # pragma: no cover - older Spark
    _WriterBase = DataSourceWriter  # type: ignore[misc, assignment]


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in options.items()}


def _load_table(options: Mapping[str, str]) -> Table:
    opts = _lower(options)
    name = opts.get("table")
    if name:
        loaded: Table = catalog_from_options(options).load_table(name)
        return loaded
    path = opts.get("path")
    if path:
        return Table.from_metadata(path)
    raise ValidationError("The icepark data source needs option 'table' (or a metadata file path)")


def _scan(options: Mapping[str, str]) -> DataScan:
    opts = _lower(options)
    table = _load_table(options)
    snapshot_id = int(opts["snapshot-id"]) if opts.get("snapshot-id") else None
    as_of = int(opts["as-of-timestamp"]) if opts.get("as-of-timestamp") else None
    ref = opts.get("branch") or opts.get("tag")
    return table.scan(opts.get("filter"), None, snapshot_id, as_of, ref)


@dataclass
class _Partition(InputPartition):
    """What one read task gets: the pickled scan and its pickled combined task; or, for a
    scan without pushed filters, its slot among ``slots`` tasks that plan for themselves."""

    scan: bytes | None
    task: bytes | None
    slot: int = 0
    slots: int = 0


class _Reader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: SparkStructType) -> None:
        self.options = dict(options)
        self.schema = schema
        self.pushed: BooleanExpression = AlwaysTrue()

    def partitions(self) -> list[InputPartition]:
        scan = _scan(self.options)
        if isinstance(self.pushed, AlwaysTrue):
            # Spark keeps the partitions of a relation read without pushed filters (a view
            # queried again would read the old snapshot): each task plans for itself then
            slots = max(1, min(len(scan.plan_tasks()), _MAX_SLOTS))
            return [_Partition(None, None, i, slots) for i in range(slots)]
        scan = scan.filter(self.pushed)
        payload = pickle.dumps(scan)
        combined = scan.plan_tasks()
        if not combined:
            return [_Partition(payload, None)]
        return [_Partition(payload, pickle.dumps(c)) for c in combined]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Partition)
        target = spark_arrow_schema(self.schema)
        if partition.slots:
            scan = _scan(self.options)
            mine = scan.plan_tasks()[partition.slot :: partition.slots]
            tasks = [t for combined in mine for t in combined.tasks]
        elif partition.task is None or partition.scan is None:
            return
        else:
            scan = pickle.loads(partition.scan)
            tasks = list(pickle.loads(partition.task).tasks)
        for task in tasks:
            for batch in scan.read_task(task):
                if batch.num_rows:
                    yield cast_to_spark_arrow(batch, target)


class _PushdownReader(_Reader):
    """A reader taking Spark's filters (option ``pushdown`` = ``true``)."""

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:
        scan = _scan(self.options)
        taken, rest = from_spark_filters(filters, scan.schema)
        self.pushed = taken
        return rest


@dataclass
class _Written(WriterCommitMessage):
    files: bytes


class _Writer(_WriterBase):
    def __init__(
        self, options: Mapping[str, str], overwrite: bool, engine: Mapping[str, str]
    ) -> None:
        table = _load_table(options)
        if table.read_only:
            raise ValidationError(f"Table {table.name} was opened from a metadata file: read-only")
        self.options = dict(options)
        self.overwrite = overwrite
        self.summary = {**engine, **snapshot_properties(options)}
        self.io = table.io
        self.metadata = table.metadata
        self.write_uuid = str(uuid.uuid4())

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        from icepark.spark.write.task_files import arrow_batches, write_task_files

        files = write_task_files(self.io, self.metadata, arrow_batches(iterator), self.write_uuid)
        return _Written(pickle.dumps(files))

    def _files(self, messages: list[WriterCommitMessage | None]) -> list[Any]:
        files: list[Any] = []
        for m in messages:
            if isinstance(m, _Written):
                files.extend(pickle.loads(m.files))
        return files

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        from icepark.spark.write.writer import write_action

        table = _load_table(self.options)
        opts = _lower(self.options)
        mode = "append"
        if self.overwrite:
            dynamic = opts.get("overwrite-mode", "static").lower() == "dynamic"
            mode = "overwrite-partitions" if dynamic else "overwrite"
        files = self._files(messages)
        row_filter = (
            parse_filter(opts["filter"])
            if opts.get("filter") and mode == "overwrite"
            else AlwaysTrue()
        )
        branch = opts.get("branch", "main")
        action = write_action(table, files, mode, row_filter, branch, self.summary, True)  # type: ignore[arg-type]
        tx = table.transaction()
        tx.add_action(action)
        tx.commit_transaction()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        for f in self._files(messages):
            try:
                self.io.delete(f.file_path)
            except Exception:
                pass


class IcebergDataSource(DataSource):
    """The ``icepark`` data source (``format("icepark")``): Iceberg tables through Spark's own
    reader and writer APIs, streaming and SQL; see the module docstring. Spark makes it
    from a query's options once :func:`register` has run; it is not built by hand.

    The metadata tables, the streaming reader and writer and the write path are imported
    where they are used: a Spark task's Python worker unpickles this module and should not
    pay for the others (a streaming source's worker started ~0.1 s sooner).

    Attributes:
        options: (given by Spark) the query's options: ``table`` (or a metadata file
            path), the catalog (``catalog``, ``uri``, ``warehouse``, ``type``,
            ``catalog.<property>``), and the read, write or stream options the module
            docstring lists.
        engine_summary: the summary entries naming Spark's application that every commit
            records; :func:`register` registers a subclass that sets them.
    """

    engine_summary: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def name(cls) -> str:
        """The format name Spark knows the source by: ``"icepark"``.

        Returns:
            ``"icepark"``.
        """
        return SOURCE_NAME

    def schema(self) -> SparkStructType:
        """The table's (or metadata table's) columns as Spark sees them (Spark calls this
        when a read gives no schema).

        Returns:
            The Spark schema.

        Raises:
            NoSuchTableError: the table the options name does not exist.
            ValidationError: an option that does not parse.
        """
        from icepark.spark.read.metadata_tables import metadata_source, metadata_spark_schema

        meta = metadata_source(self.options)  # "db.t.files": a metadata table
        if meta is not None:
            return metadata_spark_schema(meta.table, meta.name)
        return to_spark_schema(_scan(self.options).schema, with_ids=False)

    def reader(self, schema: SparkStructType) -> DataSourceReader:
        """The batch reader Spark runs a read with (Spark calls it).

        Args:
            schema: the schema Spark reads with.

        Returns:
            The reader: the table's files read by icepark's Arrow reader in Python tasks.
        """
        from icepark.spark.read.metadata_tables import MetadataTableReader, metadata_source

        if metadata_source(self.options) is not None:
            return MetadataTableReader(self.options, schema)
        if _lower(self.options).get("pushdown", "false").lower() == "true":
            return _PushdownReader(self.options, schema)
        return _Reader(self.options, schema)

    def writer(self, schema: SparkStructType, overwrite: bool) -> DataSourceWriter:
        """The batch writer Spark runs a write with (Spark calls it).

        Args:
            schema: the rows' schema.
            overwrite: ``mode("overwrite")``: replace the table's rows (or, with
                ``overwrite-mode=dynamic``, the partitions written).

        Returns:
            The writer: each task writes its rows with icepark's writer, the driver commits.
        """
        return _Writer(self.options, overwrite, self.engine_summary)

    def streamReader(self, schema: SparkStructType) -> DataSourceStreamReader:
        """The streaming reader of a ``readStream`` query (Spark calls it); see
        :mod:`icepark.spark.streaming.source`.

        Args:
            schema: the schema Spark reads with.

        Returns:
            The stream reader.

        Raises:
            ValidationError: an unknown option or a bad value, naming it.
        """
        from icepark.spark.streaming.source import IcebergStreamReader

        return IcebergStreamReader(self.options, schema)

    def streamWriter(self, schema: SparkStructType, overwrite: bool) -> DataSourceStreamWriter:
        """The streaming writer of a ``writeStream`` query (Spark calls it): one exactly-once
        commit per micro-batch; see :mod:`icepark.spark.streaming.sink`.

        Args:
            schema: the rows' schema.
            overwrite: ``outputMode("complete")``: each batch replaces the table's rows.

        Returns:
            The stream writer.

        Raises:
            ValidationError: an unknown option or a bad value, naming it.
        """
        from icepark.spark.streaming.sink import IcebergStreamWriter

        return IcebergStreamWriter(self.options, overwrite, self.engine_summary)


def register(spark: SparkSession) -> None:
    """Register the ``icepark`` data source on a session, so that
    ``spark.read.format("icepark").option("table", "db.events").load()`` and
    ``df.write.format("icepark")`` work, and turn on the filter pushdown its options use.
    The session is prepared first (:func:`~icepark.spark.setup.prepare_session`).
    :func:`icepark.spark.session` calls this for its sessions.

    Args:
        spark: the session (classic or Spark Connect).

    Raises:
        SparkSetupError: the session's Python workers cannot import icepark.
    """
    from icepark.spark.runtime import spark_summary
    from icepark.spark.setup import prepare_session

    prepare_session(spark)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")  # for option pushdown
    # a class of its own, pickled with its attributes: commits run in Python workers
    source = type(
        "IcebergDataSource",
        (IcebergDataSource,),
        {"engine_summary": spark_summary(spark, None), "__doc__": IcebergDataSource.__doc__},
    )
    spark.dataSource.register(source)


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def catalog_options(catalog: Any) -> dict[str, str]:
    """Data source options naming a catalog: a Catalog (its name and properties), a
    configured name, or a mapping of properties."""
    if catalog is None:
        return {}
    if isinstance(catalog, str):
        return {"catalog": catalog}
    if isinstance(catalog, Mapping):
        return {f"catalog.{k}": str(v) for k, v in catalog.items()}
    from icepark.catalog import FileSystemCatalog

    props = dict(catalog.properties)
    if "type" not in props:  # a catalog made directly, not by load_catalog
        props["type"] = "filesystem" if isinstance(catalog, FileSystemCatalog) else "sql"
    # the name too: a SQL catalog keeps its tables under its name
    return {"catalog": catalog.name, **{f"catalog.{k}": str(v) for k, v in props.items()}}


def register_tables(spark: SparkSession, namespace: str, catalog: Any = None) -> list[str]:
    """Create a temporary view (``USING icepark``) for each table of ``namespace``, named as
    the table, so that plain Spark SQL reads them (``SELECT * FROM events``) and appends to
    them (``INSERT INTO events ...``). A view of the same name is replaced.

    Args:
        spark: the session (classic or Spark Connect); the data source is registered on it.
        namespace: the namespace whose tables get a view, e.g. ``"db"``.
        catalog: a Catalog, a configured catalog name or a mapping of catalog properties
            (default: ``icepark.load_catalog()``); the views read through the same catalog.

    Returns:
        The names of the views created.

    Raises:
        NoSuchNamespaceError: the namespace does not exist.
        CatalogConfigError: ``catalog`` names no configured catalog.
        SparkSetupError: the session's Python workers cannot import icepark.
    """
    register(spark)
    options = catalog_options(catalog)
    cat = resolve_catalog(catalog)
    views = []
    for identifier in cat.list_tables(namespace):
        name = identifier[-1]
        opts = {"table": ".".join(identifier), **options}
        rendered = ", ".join(f"`{k}` {_sql_string(v)}" for k, v in opts.items())
        spark.sql(
            f"CREATE OR REPLACE TEMPORARY VIEW `{name}` USING {SOURCE_NAME} OPTIONS ({rendered})"
        )
        views.append(name)
    return views
