"""Writing a Spark DataFrame into an Iceberg table: executors write data files, the driver
commits one snapshot.

The DataFrame's columns are matched to the table schema by name (case-insensitively; extra
columns are an error, missing optional columns are null) and cast to the table's types.
Rows are then clustered: with ``write.distribution-mode`` ``hash`` (the default for
partitioned tables, as in Java) they are repartitioned by their partition values, with
``range`` range-partitioned by the sort order, with ``none`` left where they are; each task
sorts its rows by partition and then by the table's sort order. Two paths write the files;
:func:`write` chooses per table (``path="auto"``):

**native** (the default): Spark's own Parquet writer, with the Iceberg field ids in the
schema (``spark.sql.parquet.fieldId.write.enabled``), microsecond timestamps, the table's
compression codec, and ``partitionBy`` hidden columns holding the exact partition values
(computed by Spark functions, :mod:`icepark.spark.transforms`), into a folder of its own under
the table's data location. The driver then reads the footers of the files written and makes
their manifest entries (:mod:`icepark.arrow.footer`). Used when every column is a
boolean, int, long, float, double, decimal, date, timestamp(tz), string or binary (structs of
them included) and every partition transform is identity, year, month, day, hour, void or
truncate of an int, long, string or binary.

**python**: ``mapInArrow`` runs icepark's Arrow writer (:func:`write_data_files`) on each
task's batches, streamed; each task yields the pickled entries of its files. Used for lists,
maps, uuids, fixed, time and unknown columns (Spark's writer gives list elements and map
keys and values no field ids) and for bucket and decimal truncate partitions.

Committing: ``append`` adds the files; ``overwrite`` replaces the rows matching ``filter``
(all rows without one) with them; ``overwrite-partitions`` replaces the partitions they
touch. If the Spark job fails or is cancelled nothing is committed and the files written are
deleted (the native path's whole output folder; the python path's files by their write
uuid); a commit that definitely failed deletes them too.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from icepark.arrow.footer import data_file_from_footer
from icepark.arrow.metrics import MetricsConfig
from icepark.arrow.writer import data_location
from icepark.errors import ValidationError
from icepark.expressions import BooleanExpression, as_filter
from icepark.io import FileIO
from icepark.manifest import DataFile
from icepark.planning.planner import FileScanTask
from icepark.spark.filters import quote_column
from icepark.spark.paths import to_spark_location
from icepark.spark.runtime import spark_summary
from icepark.spark.setup import prepare_session, temporary_conf
from icepark.spark.storage import choose_storage_path
from icepark.spark.tables import resolve_table
from icepark.spark.transforms import transform_column, transform_sql
from icepark.spark.types import FIELD_ID_KEY, to_spark_type
from icepark.spark.write.task_files import write_task_files
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.spec.sorting import UNSORTED_ORDER, NullOrder, SortDirection, SortOrder
from icepark.spec.transforms import DayTransform
from icepark.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)
from icepark.table import Table
from icepark.table.update.wap import staged, with_wap_id
from icepark.table.write.data_files import rewrite_without
from icepark.table.write.operations import AppendAction, OverwriteAction, ReplacePartitionsAction

__all__ = [
    "Cluster",
    "write",
    "write_action",
    "write_files",
    "WriteMode",
    "WritePath",
    "choose_write_path",
    "align_to_schema",
    "distribute",
    "fanout_enabled",
    "python_partition_columns",
]

WriteMode = Literal["append", "overwrite", "overwrite-partitions"]
WritePath = Literal["auto", "native", "python"]
Cluster = Callable[[DataFrame, list[Column], list[Column]], DataFrame]
"""Lays rows out before they are written: given the DataFrame (table columns plus the
partition columns), its partition columns and the sort order's columns, returns it
distributed and sorted within each Spark partition (partition columns first). The default
follows ``write.distribution-mode`` and sorts by partition and sort order."""

_NATIVE_TYPES = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimestampType,
    TimestamptzType,
    StringType,
    BinaryType,
)
# partitions a native task writes at once with fanout (Spark's concurrent output writers)
_FANOUT_WRITERS = 100
_SPARK_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "brotli": "brotli",
    "none": "none",
    "uncompressed": "none",
}


def _native_type(t: IcebergType) -> bool:
    if isinstance(t, StructType):
        return all(_native_type(f.field_type) for f in t.fields)
    return isinstance(t, _NATIVE_TYPES)


def choose_write_path(
    metadata: TableMetadata, *, spark: SparkSession | None = None, io: FileIO | None = None
) -> tuple[WritePath, str]:
    """Which path writes into a table, and why: ``"native"`` (Spark's Parquet writer with
    field ids) or ``"python"`` (icepark's Arrow writer in Python tasks), the choice
    :func:`write` makes with ``path="auto"``. The python path is chosen for a file format
    other than Parquet, a Parquet codec Spark lacks, column types Spark's writer does not
    write as Iceberg means them (lists, maps, uuid, time, fixed, nanosecond timestamps...)
    and partition transforms it cannot compute.

    Args:
        metadata: the table's metadata (``table.metadata``).
        spark: with ``io``, first whether Spark's file systems can write where the table's
            data goes (:func:`~icepark.spark.storage.choose_storage_path`), which also checks
            the bucket once.
        io: the table's FileIO (``table.io``), with ``spark``.

    Returns:
        ``(path, why)``: ``"native"`` or ``"python"`` and the reason in words.

    Raises:
        StorageError: with ``spark`` and ``io``, the table's bucket cannot be used (naming the
            bucket and endpoint).
    """
    if spark is not None and io is not None:
        locations = [metadata.location, data_location(metadata.location, metadata.properties)]
        storage, why = choose_storage_path(spark, io, locations)
        if storage == "python":
            return "python", why
    schema = metadata.schema()
    for f in schema.fields:
        if not _native_type(f.field_type):
            return "python", f"column {f.name!r} is a {f.field_type}"
    if P.DEFAULT_FILE_FORMAT.get(metadata.properties) != "parquet":
        return "python", "the table's file format is not Parquet"
    codec = P.PARQUET_COMPRESSION.get(metadata.properties)
    if codec not in _SPARK_CODECS:
        return "python", f"codec {codec}"
    for pf in metadata.spec().fields:
        source = schema.find_field(pf.source_id)
        if transform_sql(pf.transform, source.field_type, "NULL") is None:
            return "python", f"partition transform {pf.transform} of {source.name!r}"
    return "native", "Spark's Parquet writer with field ids"


def align_to_schema(df: DataFrame, schema: Schema, *, with_ids: bool) -> DataFrame:
    """``df``'s columns matched by name (case-insensitively) to the table schema, in its
    order, cast to its types; missing optional columns are null, a null in a required column
    fails the job."""
    by_lower: dict[str, str] = {}
    for name in df.columns:
        if name.lower() in by_lower:
            raise ValidationError(f"DataFrame has two columns named {name!r} (ignoring case)")
        by_lower[name.lower()] = name
    names = {f.name.lower() for f in schema.fields}
    extra = [n for n in df.columns if n.lower() not in names]
    if extra:
        raise ValidationError(f"DataFrame columns {extra} are not in the table schema")
    columns: list[Column] = []
    for f in schema.fields:
        spark_type = to_spark_type(f.field_type, with_ids=with_ids)
        source = by_lower.get(f.name.lower())
        if source is None:
            if f.required:
                raise ValidationError(f"DataFrame lacks required column {f.name!r}")
            c = F.lit(None).cast(spark_type)
        else:
            c = F.col(quote_column(source))
            if df.schema[source].dataType != spark_type:
                c = c.cast(spark_type)
            if f.required and df.schema[source].nullable:
                message = f"Null value in required column {f.name!r}"
                c = F.when(c.isNull(), F.raise_error(F.lit(message))).otherwise(c)
        metadata = {FIELD_ID_KEY: f.field_id} if with_ids else {}
        columns.append(c.alias(f.name, metadata=metadata))
    return df.select(*columns)


def _source_name(schema: Schema, source_id: int) -> str:
    """The back-quoted name of the column with id ``source_id``, for Spark SQL."""
    name = schema.find_column_name(source_id)
    if name is None:
        raise ValidationError(f"No column with id {source_id}")
    return quote_column(name)


def _source_column(schema: Schema, source_id: int) -> Column:
    return F.col(_source_name(schema, source_id))


def _partition_columns(schema: Schema, spec: PartitionSpec) -> list[tuple[str, Column]]:
    """(hidden column name, exact Spark expression) per non-void partition field; the name is
    the partition field's (so folders read ``ts_day=2024-01-05``) unless a column has it."""
    out = []
    taken = {f.name.lower() for f in schema.fields}
    for i, pf in enumerate(spec.fields):
        if pf.transform.is_void:
            continue
        source = schema.find_field(pf.source_id)
        expr = transform_column(pf.transform, source.field_type, _source_name(schema, pf.source_id))
        if expr is None:
            continue
        if isinstance(source.field_type, BinaryType) and (
            pf.transform.is_identity or "truncate" in str(pf.transform)
        ):
            expr = F.hex(expr)  # Spark cannot partition by binary: hex is one to one
        if isinstance(pf.transform, DayTransform):
            expr = F.date_from_unix_date(expr)  # one to one, and a readable folder name
        name = pf.name if pf.name.lower() not in taken else f"{pf.name}__p{i}"
        taken.add(name.lower())
        out.append((name, expr))
    return out


def _sort_columns(schema: Schema, order: SortOrder) -> tuple[list[Column], bool]:
    """The sort order as Spark sort columns, and whether all of it could be expressed."""
    out: list[Column] = []
    for sf in order.fields:
        source = schema.find_field(sf.source_id)
        expr = transform_column(sf.transform, source.field_type, _source_name(schema, sf.source_id))
        if expr is None:
            return out, False
        asc = sf.direction == SortDirection.ASC
        first = sf.null_order == NullOrder.NULLS_FIRST
        if asc:
            out.append(expr.asc_nulls_first() if first else expr.asc_nulls_last())
        else:
            out.append(expr.desc_nulls_first() if first else expr.desc_nulls_last())
    return out, True


def distribute(
    df: DataFrame, metadata: TableMetadata, partition: list[Column], sort: list[Column]
) -> DataFrame:
    """``df``'s rows spread over tasks by the table's ``write.distribution-mode`` (default
    ``hash`` when partitioned, else ``none``): by partition, by range of partition and sort
    columns, or as they are. A streaming DataFrame can be spread this way too."""
    spec = metadata.spec()
    default = "none" if spec.is_unpartitioned else "hash"
    mode = P.WRITE_DISTRIBUTION_MODE.get(metadata.properties) or default
    if mode == "hash" and partition:
        return df.repartition(*partition)
    if mode == "range" and (partition or sort):
        return df.repartitionByRange(*partition, *sort)
    return df


def _default_cluster(metadata: TableMetadata, fanout: bool = False) -> Cluster:
    """The table's distribution mode, then each task's rows sorted by partition and sort
    order; with ``fanout`` (Java's ``fanout-enabled``) and no sort order, not sorted: the
    writers keep a file per partition open instead."""

    def cluster(df: DataFrame, partition: list[Column], sort: list[Column]) -> DataFrame:
        clustered = distribute(df, metadata, partition, sort)
        if (partition or sort) and not (fanout and not sort):
            clustered = clustered.sortWithinPartitions(*partition, *sort)
        return clustered

    return cluster


# -- native -----------------------------------------------------------------------------------


def _write_native(
    df: DataFrame,
    table: Table,
    write_uuid: str,
    metadata: TableMetadata,
    cluster: Cluster | None = None,
    max_records_per_file: int | None = None,
    fanout: bool = False,
) -> list[DataFile]:
    schema, spec, order = metadata.schema(), metadata.spec(), metadata.sort_order()
    aligned = align_to_schema(df, schema, with_ids=True)
    hidden = _partition_columns(schema, spec)
    sort, complete = _sort_columns(schema, order)
    with_parts = aligned.select("*", *[expr.alias(name) for name, expr in hidden])
    part_refs = [F.col(quote_column(name)) for name, _ in hidden]
    fans_out = fanout and not sort  # a cluster given with fanout does not sort either
    clustered = (cluster or _default_cluster(metadata, fanout))(with_parts, part_refs, sort)
    props = metadata.properties
    codec = _SPARK_CODECS[P.PARQUET_COMPRESSION.get(props)]
    out = f"{data_location(metadata.location, props)}/{write_uuid}"
    io = table.io
    writer = (
        clustered.write.mode("error")  # "errorifexists" is classic-only
        .option("compression", codec)
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
    )
    row_group = P.PARQUET_ROW_GROUP_SIZE_BYTES.raw(props)
    if row_group:
        writer = writer.option("parquet.block.size", row_group)
    if max_records_per_file:
        writer = writer.option("maxRecordsPerFile", str(max_records_per_file))
    if hidden:
        writer = writer.partitionBy(*[name for name, _ in hidden])
    settings = {
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.parquet.fieldId.write.enabled": "true",
        "spark.sql.parquet.writeLegacyFormat": "false",
    }
    if fans_out:  # a writer per partition instead of sorting each task's rows
        settings["spark.sql.maxConcurrentOutputFileWriters"] = str(_FANOUT_WRITERS)
    try:
        with temporary_conf(clustered.sparkSession, settings):
            writer.parquet(to_spark_location(out))
        entries = [e for e in io.list_prefix(out)]
        data = [e for e in entries if _is_data_file(e.location)]
        for e in entries:
            if not _is_data_file(e.location):
                io.delete_quietly(e.location)
        config = MetricsConfig.from_properties(props, schema, order)
        # as Java's: a file not known to be sorted has the unsorted order's id (0)
        sorted_order = order if complete and not order.is_unsorted else UNSORTED_ORDER

        def entry(e: Any) -> DataFile:
            location = _table_location(out, e.location)
            return data_file_from_footer(
                io,
                location,
                e.size,
                schema=schema,
                spec=spec,
                sort_order=sorted_order,
                config=config,
            )

        with ThreadPoolExecutor(max_workers=8) as pool:
            return list(pool.map(entry, data))
    except BaseException:
        _delete_prefix_quietly(io, out)
        raise


def _table_location(out: str, listed: str) -> str:
    """A listed file's location in the form the table uses (the output folder's scheme)."""
    if listed.startswith(out):
        return listed
    marker = out.split("://", 1)[-1].lstrip("/")
    index = listed.find(marker)
    return out + listed[index + len(marker) :] if index >= 0 else listed


def _is_data_file(location: str) -> bool:
    name = location.rsplit("/", 1)[-1]
    return name.endswith(".parquet") and not name.startswith((".", "_"))


def _delete_prefix_quietly(io: FileIO, location: str) -> None:
    try:
        io.delete_prefix(location)
    except Exception:
        pass


# -- python -----------------------------------------------------------------------------------


class _TaskWriter:
    """The function ``mapInArrow`` runs: write a task's batches as data files."""

    def __init__(self, io: FileIO, metadata: TableMetadata, write_uuid: str) -> None:
        self.io = io
        self.metadata = metadata
        self.write_uuid = write_uuid

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files = write_task_files(self.io, self.metadata, batches, self.write_uuid)
        yield pa.RecordBatch.from_pydict(
            {"files": [pickle.dumps(files)]}, schema=pa.schema([("files", pa.binary())])
        )


def python_partition_columns(schema: Schema, spec: PartitionSpec) -> list[Column]:
    """The columns the python path groups a write's rows by: the partition values where
    Spark computes the transforms; where it computes none of them (only bucket and the
    like), their source columns, which keep each partition in one task as well."""
    hidden = _partition_columns(schema, spec)
    if not hidden and not spec.is_unpartitioned:
        for pf in spec.fields:
            if not pf.transform.is_void:
                hidden.append((f"src{pf.source_id}", _source_column(schema, pf.source_id)))
    return [expr for _, expr in hidden]


def _write_python(
    df: DataFrame,
    table: Table,
    write_uuid: str,
    metadata: TableMetadata,
    cluster: Cluster | None = None,
    fanout: bool = False,
) -> list[DataFile]:
    schema, spec, order = metadata.schema(), metadata.spec(), metadata.sort_order()
    aligned = align_to_schema(df, schema, with_ids=False)
    sort, _ = _sort_columns(schema, order)
    parts = python_partition_columns(schema, spec)
    clustered = (cluster or _default_cluster(metadata, fanout))(aligned, parts, sort)
    writer = _TaskWriter(table.io, metadata, write_uuid)
    try:
        rows = clustered.mapInArrow(
            writer, T.StructType([T.StructField("files", T.BinaryType())])
        ).collect()
    except BaseException:
        _delete_written(table.io, metadata, write_uuid)
        raise
    return files_of([row["files"] for row in rows])


def _delete_written(io: FileIO, metadata: TableMetadata, write_uuid: str) -> None:
    """Delete the data files a failed job wrote (their names hold the write uuid)."""
    try:
        entries = io.list_prefix(data_location(metadata.location, metadata.properties))
    except Exception:
        return
    for e in entries:
        if write_uuid in e.location.rsplit("/", 1)[-1]:
            io.delete_quietly(e.location)


# -- entry point ------------------------------------------------------------------------------


def write_action(
    table: Table,
    files: list[DataFile],
    mode: WriteMode,
    row_filter: BooleanExpression,
    branch: str,
    snapshot_properties: Mapping[str, str],
    case_sensitive: bool,
) -> Any:
    """The commit action for files a write produced: an append, an overwrite of the rows
    ``row_filter`` matches, or a replacement of the partitions the files touch."""
    io = table.io
    props = dict(snapshot_properties)
    isolation = P.DELETE_ISOLATION_LEVEL.get(table.metadata.properties)
    if mode == "append":
        return AppendAction(io, files, branch, props, merge=True)
    if mode == "overwrite":

        def rewrite(
            task: FileScanTask, base: TableMetadata, expr: BooleanExpression
        ) -> list[DataFile]:
            return rewrite_without(io, base, task, expr, case_sensitive)

        return OverwriteAction(
            io,
            files,
            branch,
            props,
            row_filter=row_filter,
            rewrite=rewrite,
            isolation=isolation,
            case_sensitive=case_sensitive,
        )
    if mode == "overwrite-partitions":
        return ReplacePartitionsAction(io, files, branch, props, isolation=isolation)
    raise ValidationError(f"Unknown write mode {mode!r} (append, overwrite, overwrite-partitions)")


def write_files(
    df: DataFrame,
    table: Table,
    *,
    path: WritePath = "auto",
    metadata: TableMetadata | None = None,
    cluster: Cluster | None = None,
    max_records_per_file: int | None = None,
    fanout: bool | None = None,
) -> list[DataFile]:
    """Write ``df`` as data files of ``table`` (executors write, nothing is committed) and
    return their entries; if the job fails the files it wrote are deleted.

    ``metadata`` (default: the table's) gives the schema, spec, sort order and properties to
    write with (a rewrite passes its output spec); ``cluster`` lays the rows out (see
    :data:`Cluster`); ``max_records_per_file`` caps the rows of a file on the native path
    (the python path rolls files at ``write.target-file-size-bytes``). With ``fanout``
    (Java's ``fanout-enabled``; by default :func:`fanout_enabled`) and no sort order, each
    task's rows are not sorted by partition: a file per partition stays open instead (a
    ``cluster`` given with it must not sort them either)."""
    prepare_session(df.sparkSession)
    metadata = metadata or table.metadata
    if fanout is None:
        fanout = fanout_enabled(metadata)
    chosen, why = choose_write_path(metadata, spark=df.sparkSession, io=table.io)
    if path == "native" and chosen == "python":
        raise ValidationError(f"Cannot write natively: {why}")
    write_uuid = str(uuid.uuid4())
    if path == "python" or chosen == "python":
        files = _write_python(df, table, write_uuid, metadata, cluster, fanout)
    else:
        files = _write_native(
            df, table, write_uuid, metadata, cluster, max_records_per_file, fanout
        )
    for f in files:
        if f.record_count == 0:  # Spark writes a schema-only file for an empty input
            table.io.delete_quietly(f.file_path)
    return [f for f in files if f.record_count > 0]


def fanout_enabled(metadata: TableMetadata) -> bool:
    """Whether Spark writes keep a file per partition open (on a table without a sort order)
    rather than sort each task's rows by partition: ``write.spark.fanout.enabled`` when the
    table sets it, else true. That is what Java's Spark writes do, whatever the property's
    documented default of false: ``SparkWriteConf.writeRequirements`` asks for no local
    order on an unsorted table unless the property (or the ``fanout-enabled`` option) is
    false, and ``useFanoutWriter`` then picks the fanout writers."""
    prop = P.SPARK_WRITE_PARTITIONED_FANOUT_ENABLED
    return prop.raw(metadata.properties) is None or prop.get(metadata.properties)


def write(
    df: DataFrame,
    table: Table | str,
    mode: WriteMode = "append",
    filter: str | BooleanExpression | None = None,
    *,
    catalog: Any = None,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    case_sensitive: bool = True,
    path: WritePath = "auto",
    wap_id: str | None = None,
) -> Table:
    """Write ``df`` into ``table`` as one snapshot (see the module docstring). With
    ``wap_id`` (and ``write.wap.enabled=true``) the snapshot is staged, not made current
    (:mod:`icepark.table.update.wap`).

    Args:
        df: the rows; columns match the table's by name.
        table: a Table, or a name looked up in ``catalog``.
        mode: ``"append"``, ``"overwrite"`` (the rows matching ``filter``, or the whole
            table) or ``"overwrite-partitions"`` (the partitions the rows touch).
        filter: with ``mode="overwrite"``, the rows replaced; new rows must match it.
        catalog: a Catalog, a configured catalog name or a mapping of properties, where
            ``table`` is a name (default: ``icepark.load_catalog()``).
        branch: the branch changed (default ``main``).
        snapshot_properties: extra entries for the new snapshot's summary.
        case_sensitive: whether column names in ``filter`` match case-sensitively.
        wap_id: with ``write.wap.enabled=true``, stage the snapshot under this id.
        path: ``"auto"``, ``"native"`` (Spark's Parquet writer) or ``"python"``.

    Returns:
        The table with its new metadata.

    Raises:
        ValidationError: a condition or value does not fit the table (naming it).
        CommitFailedError: a concurrent commit conflicts (``write.<op>.isolation-level``);
            the files written for it are deleted.
    """
    resolved = resolve_table(table, catalog)
    props = with_wap_id(
        resolved.metadata, spark_summary(df.sparkSession, snapshot_properties), wap_id,
        resolved.name,
    )  # fmt: skip
    if mode not in ("append", "overwrite", "overwrite-partitions"):
        raise ValidationError(
            f"Unknown write mode {mode!r} (append, overwrite, overwrite-partitions)"
        )
    if filter is not None and mode != "overwrite":
        raise ValidationError("A filter applies to mode='overwrite' only")
    row_filter = as_filter(filter)
    files = write_files(df, resolved, path=path)
    action = staged(
        write_action(resolved, files, mode, row_filter, branch, props, case_sensitive), wap_id
    )
    tx = resolved.transaction()
    try:
        tx.add_action(action)
    except BaseException:
        action.abort(resolved.io)
        raise
    tx.commit_transaction()  # a definite failure deletes the files; an unknown state keeps them
    return resolved


def files_of(results: Sequence[bytes]) -> list[DataFile]:
    """Unpickle the data file lists tasks sent back."""
    out: list[DataFile] = []
    for payload in results:
        out.extend(pickle.loads(payload))
    return out
