"""Reading an Iceberg table into a Spark DataFrame.

Planning happens with icepark (:meth:`DataScan.plan_files`): manifests, partitions and column
metrics prune files before Spark sees any; manifests are read on the driver or, for a big
table, in Spark tasks (``read.data-planning-mode``, see :mod:`~icepark.spark.read.planning`).
Then one of two paths reads the planned files; :func:`read` chooses per scan
(``path="auto"``):

**native** (the default): Spark's own Parquet reader over the planned file list, with a
schema whose ``StructField`` metadata carries the Iceberg field ids and
``spark.sql.parquet.fieldId.read.enabled`` (set on the session): columns are matched by id
(renames, reordering, dropped and added columns, nested structs, lists and maps), a column a
file lacks reads as null, promoted types (int -> long, float -> double, date -> timestamp,
wider decimals) are widened by Spark, only the needed columns are read, and the filter
becomes a Spark filter that Spark pushes to Parquet row groups (but not when a float or
double column is read whose files may hold NaN or zero: parquet-mr's row-group filters miss
NaNs and -0.0, see ``_row_group_filters_agree``; icepark's planning has pruned files
already). Identity
partition values of files that lack their source column, ``_file``, ``_spec_id`` and
``_partition`` come from a small broadcast table of per-file values joined on
``_metadata.file_path``; ``_pos`` is ``_metadata.row_index``. When the table's schema
history shows that names and ids of the columns read always went together (no rename, no
name reused by another column), the ids are left out and Spark matches by name, which is the
same and measurably cheaper. Position deletes and deletion vectors are read on the driver
(each delete file once) and their rows dropped by a bitmap filter over ``_metadata`` or a
broadcast anti join (see :mod:`icepark.spark.read.positions`).

**python**: each combined scan task (:meth:`DataScan.plan_tasks`) becomes a Spark task that
reads its files with :meth:`DataScan.read_task` (icepark's Arrow reader) and yields Arrow
batches cast to Spark's Arrow schema (``mapInArrow`` over the pickled tasks). Used when a
planned data file is Avro or ORC (the pip pyspark has no Avro reader; Spark's ORC reader
cannot match columns by Iceberg id), when a file has equality deletes (icepark applies them
as it reads), when more than ``MAX_NATIVE_DELETED_POSITIONS`` rows are deleted by position,
when the table has a name mapping (files may lack field ids), when a projected field has
an ``initial-default``, when a column is a uuid (Spark's reader cannot read Parquet UUIDs),
or when a metadata column other than ``_file``, ``_pos``, ``_spec_id``, ``_partition`` and
``_deleted`` is asked for.
"""

from __future__ import annotations

import datetime as dt
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from icepark.arrow.conform import value_to_arrow_scalar
from icepark.arrow.deletes import DeleteCache
from icepark.arrow.schema import type_to_arrow
from icepark.errors import InvalidValueError, ValidationError
from icepark.expressions import AlwaysTrue, BooleanExpression, referenced_names
from icepark.manifest import FileContent, FileFormat
from icepark.planning.planner import (
    CombinedScanTask,
    FileScanTask,
    SplitOptions,
    adjust_split_size,
    plan_tasks,
)
from icepark.spark.filters import quote_column, to_spark_column
from icepark.spark.paths import parquet_files, spark_reported_path, to_spark_location
from icepark.spark.read.delete_cache import deletes_key, remembered
from icepark.spark.read.metadata_tables import read_metadata_table, resolve_table_or_metadata
from icepark.spark.read.planning import plan_scan
from icepark.spark.read.positions import DELETED_PATH, DELETED_POS, DeletedPositions, drop_deleted
from icepark.spark.runtime import TASK_PAYLOAD, default_parallelism, task_frame
from icepark.spark.setup import prepare_session, temporary_conf
from icepark.spark.storage import choose_storage_path
from icepark.spark.types import cast_to_spark_arrow, spark_arrow_schema, to_spark_schema
from icepark.spec import properties as P
from icepark.spec.conversions import from_bytes
from icepark.spec.metadata import TableMetadata
from icepark.spec.metadata_columns import (
    FILE_PATH_FIELD_ID,
    IS_DELETED_FIELD_ID,
    PARTITION_FIELD_ID,
    POS_FIELD_ID,
    SPEC_ID_FIELD_ID,
    is_metadata_field_id,
)
from icepark.spec.schema import Schema, walk_fields
from icepark.spec.types import (
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    UUIDType,
)
from icepark.table import Table
from icepark.table.scan import DataScan
from icepark.table.write.row_delta import deleted_positions

__all__ = [
    "read",
    "read_scan",
    "read_tasks",
    "read_resolved",
    "resolve_path",
    "ReadPath",
    "choose_path",
]

ReadPath = Literal["auto", "native", "python"]

_NATIVE_META = frozenset(
    {FILE_PATH_FIELD_ID, POS_FIELD_ID, SPEC_ID_FIELD_ID, PARTITION_FIELD_ID, IS_DELETED_FIELD_ID}
)
_PATH_KEY = "__icepark_file__"
# Deleted positions beyond this many are applied by icepark's reader in Python tasks instead
# of on the native path (they are gathered on the driver).
MAX_NATIVE_DELETED_POSITIONS = 5_000_000


def read(
    spark: SparkSession,
    table: Table | str,
    filter: str | BooleanExpression | None = None,
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    as_of: int | dt.datetime | dt.date | None = None,
    ref: str | None = None,
    *,
    case_sensitive: bool = True,
    catalog: Any = None,
    path: ReadPath = "auto",
) -> DataFrame:
    """A DataFrame of the table's rows matching ``filter`` (an icepark filter string such
    as ``"ts >= '2024-01-01' and id = 5"`` or an expression), with ``columns`` (metadata
    columns ``_file``, ``_pos``, ``_spec_id``, ``_partition`` included), at a snapshot, time
    (``as_of``: epoch ms or datetime) or ref. ``table`` is a Table or a name loaded from
    ``catalog`` (default ``icepark.load_catalog()``). ``path`` forces the native or python
    path (see the module docstring).

    Args:
        spark: the session (classic or Spark Connect).
        table: a Table, or a name (``"db.events"``, or ``"db.events.files"`` for a metadata
            table).
        filter: rows to keep; it also prunes manifests and files before Spark sees them.
        columns: the columns to read (default: all).
        snapshot_id: read this snapshot.
        as_of: read the snapshot current at this time.
        ref: read the head of this branch or tag.
        case_sensitive: whether column names match case-sensitively.
        catalog: where ``table`` is looked up when it is a name.
        path: ``"auto"``, ``"native"`` or ``"python"``.

    Returns:
        A DataFrame; nothing is read until an action runs.

    Raises:
        NoSuchTableError: the table does not exist.
        ValidationError: the filter does not parse or bind, or no snapshot matches.
        SparkSetupError: Spark's Python workers cannot import icepark.
    """
    resolved, metadata_name = resolve_table_or_metadata(table, catalog)
    if metadata_name is not None:  # "db.events.files": a metadata table, as in Java
        return read_metadata_table(
            spark,
            resolved,
            metadata_name,
            filter=filter,
            columns=columns,
            snapshot_id=snapshot_id,
            as_of=as_of,
            ref=ref,
            case_sensitive=case_sensitive,
        )
    scan = resolved.scan(filter, columns, snapshot_id, as_of, ref, case_sensitive)
    return read_scan(spark, scan, path=path)


def _fields_need_python(fields: Sequence[NestedField]) -> str | None:
    for f in fields:
        if f.initial_default is not None:
            return f"column {f.name!r} has an initial default"
        reason = _type_needs_python(f.field_type, f.name)
        if reason:
            return reason
    return None


def _type_needs_python(t: IcebergType, name: str) -> str | None:
    if isinstance(t, UUIDType):
        return f"column {name!r} is a uuid"
    if isinstance(t, StructType):
        return _fields_need_python(t.fields)
    if isinstance(t, ListType | MapType):
        return _fields_need_python(t.fields)
    return None


def choose_path(
    scan: DataScan, tasks: Sequence[FileScanTask], *, spark: SparkSession | None = None
) -> tuple[ReadPath, str]:
    """Which path reads a planned scan, and why: ``"native"`` (Spark's Parquet reader with
    field ids) or ``"python"`` (icepark's Arrow reader in Python tasks), the choice
    :func:`read` makes with ``path="auto"``. The python path is chosen for files Spark's
    reader cannot read as Iceberg means them: Avro or ORC files, equality deletes, a name
    mapping, metadata columns other than ``_file``, ``_pos``, ``_spec_id``, ``_partition``
    and ``_deleted``, columns with an initial default, and uuid columns.

    Args:
        scan: the planned scan (:meth:`Table.scan`).
        tasks: its file scan tasks (the ones to read).
        spark: when given, first whether Spark's file systems can read the files at all
            (:func:`~icepark.spark.storage.choose_storage_path`), which also checks each
            bucket once.

    Returns:
        ``(path, why)``: ``"native"`` or ``"python"`` and the reason in words.

    Raises:
        StorageError: with ``spark``, a bucket the files are in cannot be used (naming the
            bucket and endpoint).
    """
    if spark is not None:
        files = (t.file.file_path for t in tasks)
        storage, why = choose_storage_path(spark, scan.io, [scan.metadata.location, *files])
        if storage == "python":
            return "python", why
    formats = {t.file.file_format for t in tasks} - {FileFormat.PARQUET}
    if formats:  # the pip pyspark has no Avro reader, and Spark's ORC reader no field ids
        return "python", f"files in {', '.join(sorted(formats))}"
    if any(d.content == FileContent.EQUALITY_DELETES for t in tasks for d in t.delete_files):
        return "python", "files have equality deletes"
    if P.DEFAULT_NAME_MAPPING.get(scan.metadata.properties):
        return "python", "the table has a name mapping (files may lack field ids)"
    for f in scan.projected_schema.fields:
        if is_metadata_field_id(f.field_id) and f.field_id not in _NATIVE_META:
            return "python", f"metadata column {f.name!r}"
    data_fields = [f for f in scan.projected_schema.fields if not is_metadata_field_id(f.field_id)]
    reason = _fields_need_python(data_fields)
    if reason:
        return "python", reason
    return "native", "Spark's Parquet reader with field ids"


def read_scan(spark: SparkSession, scan: DataScan, *, path: ReadPath = "auto") -> DataFrame:
    """Read a planned :class:`~icepark.table.DataScan` as a DataFrame, as :func:`read` does
    once it has made the scan (its filter, projection, snapshot and options). Its manifests
    are read on the driver or in Spark tasks as the planning modes say
    (:mod:`~icepark.spark.read.planning`).

    Args:
        spark: the session (classic or Spark Connect).
        scan: the scan, e.g. ``table.scan(filter, columns, snapshot_id=...)``.
        path: ``"auto"`` (:func:`choose_path` decides), ``"native"`` (Spark's Parquet reader)
            or ``"python"`` (icepark's Arrow reader in Python tasks).

    Returns:
        A DataFrame of the scan's rows; nothing is read until an action runs.

    Raises:
        ValidationError: ``path="native"`` where the files cannot be read natively (naming
            why), or a planning mode that is not ``auto``, ``local`` or ``distributed``.
        StorageError: a bucket the files are in cannot be used.
        SparkSetupError: Spark's Python workers cannot import icepark.
    """
    return read_tasks(spark, scan, list(plan_scan(spark, scan)), path=path)


def read_tasks(
    spark: SparkSession,
    scan: DataScan,
    tasks: Sequence[FileScanTask],
    *,
    path: ReadPath = "auto",
    spark_file_paths: bool = False,
) -> DataFrame:
    """Read the given file scan tasks of ``scan`` (a subset of its planned tasks, e.g. the
    files a row-level change touches) with ``scan``'s projection and filter; each task's
    residual applies on the python path. With ``spark_file_paths`` the native path gives
    ``_file`` as Spark reports it (``_metadata.file_path``, see
    :func:`~icepark.spark.paths.spark_reported_path`) instead of joining the table's form in,
    which is cheaper; the python path always gives the table's form."""
    chosen, deleted = resolve_path(scan, tasks, path, spark=spark)
    return read_resolved(spark, scan, tasks, chosen, deleted, spark_file_paths=spark_file_paths)


def read_resolved(
    spark: SparkSession,
    scan: DataScan,
    tasks: Sequence[FileScanTask],
    chosen: Literal["native", "python"],
    deleted: DeletedPositions | None,
    *,
    spark_file_paths: bool = False,
) -> DataFrame:
    """:func:`read_tasks` with the path and deleted positions :func:`resolve_path` gave."""
    if chosen == "python":
        props = {**scan.metadata.properties, **scan.options}
        options = SplitOptions.from_properties(props)
        if P.SPLIT_SIZE.name not in scan.options and P.ADAPTIVE_SPLIT_SIZE_ENABLED.get(props):
            # as Java's SparkScan: a small scan still gives every core a task
            size = sum(t.size + sum(d.file_size_in_bytes for d in t.delete_files) for t in tasks)
            parallelism = default_parallelism(spark)
            target = adjust_split_size(size, max(1, parallelism), options.target_size)
            options = replace(options, target_size=target)
        return _read_python(spark, scan, plan_tasks(tasks, options))
    return _read_native(spark, scan, tasks, deleted, spark_file_paths)


def resolve_path(
    scan: DataScan,
    tasks: Sequence[FileScanTask],
    path: ReadPath = "auto",
    *,
    spark: SparkSession,
) -> tuple[Literal["native", "python"], DeletedPositions | None]:
    """The path that reads ``tasks`` in ``spark`` (``path`` unless it is ``auto``) and, for
    the native path, the positions deleted by position deletes and DVs (see
    :func:`read_tasks`)."""
    chosen, why = choose_path(scan, tasks, spark=spark)
    if path == "native" and chosen == "python":
        raise ValidationError(f"Cannot read natively: {why}")
    if path == "python" or chosen == "python":
        return "python", None
    deleted = _deleted_positions(scan, tasks)
    if deleted is not None and deleted.count > MAX_NATIVE_DELETED_POSITIONS:
        if path == "native":
            raise ValidationError(
                f"Cannot read natively: {deleted.count} deleted positions (more than "
                f"{MAX_NATIVE_DELETED_POSITIONS} are applied on the python path)"
            )
        return "python", None
    return "native", deleted


def _deleted_positions(scan: DataScan, tasks: Sequence[FileScanTask]) -> DeletedPositions | None:
    """The rows the tasks' position deletes and deletion vectors delete, read on the driver
    (each delete file once, several at a time) or kept from an earlier query with the same
    deletes (:mod:`~icepark.spark.read.delete_cache`); None when no task has any."""
    key = deletes_key(tasks)
    if not key:
        return None
    found: DeletedPositions | None = remembered(key, lambda: _load_deleted_positions(scan, tasks))
    return found


def _load_deleted_positions(
    scan: DataScan, tasks: Sequence[FileScanTask]
) -> DeletedPositions | None:
    cache = DeleteCache()
    with_deletes = {t.file.file_path: t for t in tasks if t.delete_files}
    cache.load_positions(scan.io, with_deletes.values())
    positions: dict[str, np.ndarray] = {}
    for path, task in with_deletes.items():
        deleted = deleted_positions(scan.io, task, cache)
        if len(deleted):
            positions[spark_reported_path(path)] = deleted
    return DeletedPositions(positions) if positions else None


# -- native -----------------------------------------------------------------------------------


def _read_schema(scan: DataScan, row_filter: BooleanExpression) -> Schema:
    """The data columns to read: the projected ones plus those the filter needs."""
    projected = [f for f in scan.projected_schema.fields if not is_metadata_field_id(f.field_id)]
    have = {f.field_id for f in projected}
    extra: list[NestedField] = []
    names = referenced_names(row_filter) if not _is_true(row_filter) else set()
    for name in sorted(names):
        top = scan.schema.find_field(name.split(".", 1)[0], scan.case_sensitive)
        if top.field_id not in have:
            have.add(top.field_id)
            extra.append(top)
    return Schema(*projected, *extra)


def _is_true(expr: BooleanExpression) -> bool:
    return isinstance(expr, AlwaysTrue)


def _may_lack(task: FileScanTask, field_id: int) -> bool:
    """Whether a file may lack a column: its metrics do not mention the column."""
    f = task.file
    for metrics in (f.value_counts, f.null_value_counts, f.column_sizes):
        if metrics and field_id in metrics:
            return False
    return True


@dataclass(frozen=True)
class _Constant:
    field: NestedField
    positions: dict[int, int]  # spec id -> position in that spec's partition tuple


def _identity_constants(
    scan: DataScan, read: Schema, tasks: Sequence[FileScanTask]
) -> list[_Constant]:
    """Identity-partition source columns that some planned file may lack."""
    out: list[_Constant] = []
    top_ids = {f.field_id: f for f in read.fields}
    for field_id, f in top_ids.items():
        positions: dict[int, int] = {}
        for spec in scan.metadata.partition_specs:
            for i, pf in enumerate(spec.fields):
                if pf.source_id == field_id and pf.transform.is_identity:
                    positions[spec.spec_id] = i
        if not positions:
            continue
        if any(t.spec_id in positions and _may_lack(t, field_id) for t in tasks):
            out.append(_Constant(f, positions))
    return out


def _files_table(
    scan: DataScan, tasks: Sequence[FileScanTask], constants: list[_Constant]
) -> pa.Table:
    """Per-file values: Spark's path, ``_file``, ``_spec_id``, ``_partition``, constants."""
    files: dict[str, FileScanTask] = {}
    for t in tasks:
        files.setdefault(t.file.file_path, t)
    ptype = scan.partition_type
    columns: dict[str, pa.Array] = {
        _PATH_KEY: pa.array([spark_reported_path(p) for p in files], pa.string()),
        "_file": pa.array(list(files), pa.string()),
        "_spec_id": pa.array([t.spec_id for t in files.values()], pa.int32()),
    }
    if len(ptype.fields):
        rows = []
        for t in files.values():
            spec = scan.metadata.spec_by_id(t.spec_id)
            by_id = {pf.field_id: v for pf, v in zip(spec.fields, t.file.partition)} if spec else {}
            rows.append({pf.field_id: by_id.get(pf.field_id) for pf in ptype.fields})
        columns["_partition"] = _struct_array(ptype, rows)
    for c in constants:
        t_arrow = type_to_arrow(c.field.field_type, include_field_ids=False)
        values = []
        for t in files.values():
            pos = c.positions.get(t.spec_id)
            value = t.file.partition[pos] if pos is not None else None
            values.append(_arrow_value(value, c.field.field_type, t_arrow))
        columns[_const_name(c.field)] = pa.array(values, t_arrow)
    return pa.table(columns)


def _arrow_value(value: Any, t: IcebergType, arrow_type: pa.DataType) -> Any:
    if value is None:
        return None
    return value_to_arrow_scalar(value, t, arrow_type).as_py()


def _struct_array(ptype: StructType, rows: list[dict[int, Any]]) -> pa.Array:
    children = []
    fields = []
    for pf in ptype.fields:
        at = type_to_arrow(pf.field_type, include_field_ids=False)
        if pa.types.is_null(at):
            at = pa.string()  # a dropped source column: always null
        children.append(
            pa.array([_arrow_value(r[pf.field_id], pf.field_type, at) for r in rows], at)
        )
        fields.append(pa.field(pf.name, at))
    return pa.StructArray.from_arrays(children, fields=fields)


def _const_name(f: NestedField) -> str:
    return f"__icepark_const_{f.field_id}__"


def _names_are_ids(metadata: TableMetadata, read: Schema) -> bool:
    """Whether matching file columns by name gives what matching by field id gives: in every
    schema of the table, each column read has one name (ignoring case, as Spark matches) and
    no other column ever had it. Then Spark's plain name matching is used, which is cheaper."""
    wanted = {f.field_id: path.lower() for path, f in walk_fields(read.as_struct())}
    names: dict[str, int] = {}
    for schema in metadata.schemas:
        for path, f in walk_fields(schema.as_struct()):
            lowered = path.lower()
            if names.setdefault(lowered, f.field_id) != f.field_id:
                return False
            if f.field_id in wanted and wanted[f.field_id] != lowered:
                return False
    return all(names.get(path, field_id) == field_id for field_id, path in wanted.items())


_DRIVER_LISTING_PATHS = 32  # spark.sql.sources.parallelPartitionDiscovery.threshold's default

# parquet-mr's row-group filters that Spark's pushed filters drive: its statistics ignore the
# NaNs that pyarrow leaves out of min/max (Spark's "d > 5" skipped a row group holding a NaN,
# which Spark orders above 5), its statistics, dictionary and bloom filters tell -0.0 from 0.0
_NO_ROW_GROUP_FILTERS = (
    "parquet.filter.stats.enabled",
    "parquet.filter.dictionary.enabled",
    "parquet.filter.columnindex.enabled",
    "parquet.filter.bloom.enabled",
)


def _row_group_filters_agree(schema: Schema, tasks: Sequence[FileScanTask]) -> bool:
    """Whether parquet-mr's row-group filters keep every row Spark's predicates keep: true
    unless a float or double column is read from a file whose metrics do not rule out NaN
    and zero (either sign) for it. A column of nulls only is safe; missing metrics are not."""
    floating = [
        (f.field_id, f.field_type)
        for _, f in walk_fields(schema.as_struct())
        if isinstance(f.field_type, FloatType | DoubleType)
    ]
    for task in tasks if floating else ():
        f = task.file
        values, nulls, nans = f.value_counts or {}, f.null_value_counts or {}, f.nan_value_counts
        lower, upper = f.lower_bounds or {}, f.upper_bounds or {}
        for fid, t in floating:
            count = values.get(fid)
            if count is not None and count == nulls.get(fid):
                continue
            if (nans or {}).get(fid) != 0 or fid not in lower or fid not in upper:
                return False
            try:
                low, high = from_bytes(t, lower[fid]), from_bytes(t, upper[fid])
            except InvalidValueError:
                return False
            if low <= 0.0 <= high:
                return False
    return True


def _read_native(
    spark: SparkSession,
    scan: DataScan,
    tasks: Sequence[FileScanTask],
    deleted: DeletedPositions | None = None,
    spark_file_paths: bool = False,
) -> DataFrame:
    # When every file's residual is true (the filter is decided by partition values or
    # metrics, e.g. whole days of a day-partitioned table), rows need no filtering and the
    # filter's columns need not be read.
    row_filter = scan.row_filter
    if all(_is_true(t.residual) for t in tasks):
        row_filter = AlwaysTrue()
    read_schema = _read_schema(scan, row_filter)
    by_name = _names_are_ids(scan.metadata, read_schema)
    if not by_name:
        prepare_session(spark)
    spark_schema = to_spark_schema(read_schema, with_ids=not by_name)
    if not tasks:
        return spark.createDataFrame([], to_spark_schema(scan.projected_schema))
    locations = list(dict.fromkeys(to_spark_location(t.file.file_path) for t in tasks))
    # list the given files on the driver (no listing job) and infer no partition columns;
    # up to Spark's default threshold they are anyway (and the setting costs JVM round trips)
    listing = (
        {"spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000"}
        if len(locations) > _DRIVER_LISTING_PATHS
        else {}
    )
    with temporary_conf(spark, listing):
        reader = spark.read.schema(spark_schema)
        if not _row_group_filters_agree(read_schema, tasks):
            for key in _NO_ROW_GROUP_FILTERS:
                reader = reader.option(key, "false")
        df = parquet_files(reader, spark, locations)
    projected = scan.projected_schema.fields
    meta_ids = {f.field_id for f in projected if is_metadata_field_id(f.field_id)}
    constants = _identity_constants(scan, read_schema, tasks)
    joined_meta = (
        {PARTITION_FIELD_ID} if spark_file_paths else {FILE_PATH_FIELD_ID, PARTITION_FIELD_ID}
    )
    needs_join = bool(constants) or bool(meta_ids & joined_meta)
    spec_ids = {t.spec_id for t in tasks}
    if SPEC_ID_FIELD_ID in meta_ids and len(spec_ids) > 1:
        needs_join = True
    # the file source's _metadata is only visible before the first join
    if POS_FIELD_ID in meta_ids:
        df = df.withColumn(DELETED_POS, F.col("_metadata.row_index"))
    if needs_join or FILE_PATH_FIELD_ID in meta_ids:
        df = df.withColumn(DELETED_PATH, F.col("_metadata.file_path"))
    if deleted is not None:
        df = drop_deleted(spark, df, deleted, tasks, scan.io)
    if needs_join:
        files = spark.createDataFrame(_files_table(scan, tasks, constants))
        df = df.join(F.broadcast(files), F.col(DELETED_PATH) == files[_PATH_KEY], "left")
        for c in constants:
            name = quote_column(c.field.name)
            df = df.withColumn(c.field.name, F.coalesce(F.col(name), F.col(_const_name(c.field))))
    condition = to_spark_column(row_filter, scan.schema, scan.case_sensitive)
    if condition is not None:
        df = df.filter(condition)
    # the file source's columns are the read schema's (asked of ``df`` they would cost
    # Spark Connect a round trip)
    read_names = [f.name for f in read_schema.fields]
    if (
        not meta_ids
        and not needs_join
        and deleted is None
        and read_names == [f.name for f in projected]
    ):
        return df
    selected: list[Column] = []
    for f in projected:
        if f.field_id == FILE_PATH_FIELD_ID and spark_file_paths:
            selected.append(F.col(DELETED_PATH).alias(f.name))
        else:
            selected.append(_output_column(f, spec_ids, needs_join).alias(f.name))
    return df.select(*selected)


def _output_column(f: NestedField, spec_ids: set[int], joined: bool) -> Column:
    if f.field_id == FILE_PATH_FIELD_ID:
        return F.col("_file")
    if f.field_id == POS_FIELD_ID:
        return F.col(DELETED_POS)
    if f.field_id == SPEC_ID_FIELD_ID:
        return (
            F.col("_spec_id") if joined and len(spec_ids) > 1 else F.lit(min(spec_ids)).cast("int")
        )
    if f.field_id == PARTITION_FIELD_ID:
        return F.col("_partition")
    if f.field_id == IS_DELETED_FIELD_ID:
        return F.lit(False)
    return F.col(quote_column(f.name))


# -- python -----------------------------------------------------------------------------------


class _TaskReader:
    """The function ``mapInArrow`` runs: read the pickled combined tasks of each input row."""

    def __init__(self, scan: DataScan, target: pa.Schema) -> None:
        self.scan = scan
        self.target = target

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column(TASK_PAYLOAD).to_pylist():
                combined = pickle.loads(payload)
                for task in combined.tasks:
                    for out in self.scan.read_task(task):
                        if out.num_rows:
                            yield cast_to_spark_arrow(out, self.target)


def _read_python(
    spark: SparkSession, scan: DataScan, combined: Sequence[CombinedScanTask]
) -> DataFrame:
    schema = to_spark_schema(scan.projected_schema)
    if not combined:
        return spark.createDataFrame([], schema)
    tasks = task_frame(spark, [pickle.dumps(c) for c in combined])
    reader = _TaskReader(scan, spark_arrow_schema(schema))
    return tasks.mapInArrow(reader, schema)
