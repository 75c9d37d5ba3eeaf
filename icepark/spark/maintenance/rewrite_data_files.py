"""``rewrite_data_files`` on Spark: compaction by bin-packing, sorting or Z-ordering.

Java's ``RewriteDataFilesSparkAction`` with its runners (``SparkBinPackFileRewriteRunner``,
``SparkSortFileRewriteRunner``, ``SparkZOrderFileRewriteRunner``). Planning, concurrency,
partial progress and commits are
:class:`icepark.table.maintenance.rewrite_data_files.RewriteDataFiles`'s;
this module rewrites one file group as one Spark job, in a session of its own (so that
concurrent groups each have their own settings; adaptive execution off, as in Java):

* it reads the group's files with icepark's read path (:func:`icepark.spark.read.reader.read_tasks`:
  Spark's Parquet reader with the position deletes and DVs dropped by a bitmap filter, or
  icepark's reader in Python tasks where equality deletes apply). A group of small files
  (under ``SMALL_FILE_BYTES`` on average) is read in Python tasks: Spark's reader lists every
  file on the driver and pays a few milliseconds per file, icepark's reader opens files from
  the manifests' sizes (measured: 1,000 files of 2.7 KB rewrite about twice as fast). When
  its files are tiny (under ``SPREAD_FILE_BYTES`` on average), every core reads part of it
  and a shuffle gathers the rows into the output files: opening the files costs more than
  moving their few bytes;
* **binpack**: Spark packs the files into read splits of the group's split size (files open
  for free, no minimum number of partitions), each split becomes one file; rows are sorted
  within a split by partition and the table's sort order when it has one (else written as
  they come, a file per partition open, as Java's fanout writers do), and moved by a shuffle
  only when the group's files are of another spec than the output spec (or are tiny, above);
* **sort**: rows are range-partitioned into the group's expected number of output files by the
  output spec's partition and the sort order (the table's, or ``sort_order="id desc nulls
  last, ts"``), and sorted within each;
* **zorder** (``sort_order="zorder(a, b)"``): the same by a Z-order value of the columns
  (:mod:`icepark.arrow.zorder`, computed by an Arrow UDF), dropped before writing;
* it writes with icepark's write path (:func:`icepark.spark.write.writer.write_files`: Spark's
  Parquet writer with field ids) into the group's output spec, capping the rows of a file so that a
  file stays under the group's largest output size (estimated from the input's bytes per row).

The result is a
:class:`~icepark.table.maintenance.rewrite_data_files.RewriteDataFilesResult` with Java's
columns; ``result.to_df(spark)`` gives Java's one-row DataFrame.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from icepark.arrow.zorder import PRIMITIVE_BUFFER_SIZE, zorder_values
from icepark.errors import ValidationError
from icepark.expressions import AlwaysTrue, BooleanExpression, as_filter, bind
from icepark.manifest import DataFile
from icepark.spark.filters import quote_column
from icepark.spark.read.reader import ReadPath, read_tasks
from icepark.spark.runtime import default_parallelism
from icepark.spark.tables import resolve_table
from icepark.spark.write.writer import Cluster, write_files
from icepark.spec import properties as P
from icepark.spec.builder import MetadataBuilder
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.spec.sorting import UNSORTED_ORDER, SortOrder, build_sort_order
from icepark.spec.types import DecimalType, FixedType, UUIDType
from icepark.spec.updates import (
    AddSortOrderUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetPropertiesUpdate,
)
from icepark.table import Table
from icepark.table.maintenance.rewrite_data_files import (
    ProgressListener,
    RewriteDataFiles,
    RewriteDataFilesResult,
)
from icepark.table.maintenance.rewrite_planner import RewriteFileGroup, RewriteOptions
from icepark.table.scan import DataScan

__all__ = ["rewrite_data_files", "SMALL_FILE_BYTES", "SPREAD_FILE_BYTES", "STRATEGIES"]

STRATEGIES = ("binpack", "sort")
SHUFFLE_PARTITIONS_PER_FILE = "shuffle-partitions-per-file"
MAX_OUTPUT_SIZE = "max-output-size"
VAR_LENGTH_CONTRIBUTION = "var-length-contribution"
_Z_COLUMN = "__icepark_zvalue__"
SMALL_FILE_BYTES = 1024 * 1024
SPREAD_FILE_BYTES = 64 * 1024
_ZORDER = re.compile(r"^\s*zorder\s*\((?P<cols>.*)\)\s*$", re.IGNORECASE)


def rewrite_data_files(
    spark: SparkSession,
    table: Table | str,
    strategy: str = "binpack",
    sort_order: str | None = None,
    where: str | BooleanExpression | None = None,
    options: Mapping[str, Any] | None = None,
    branch: str | None = None,
    *,
    catalog: Any = None,
    case_sensitive: bool = True,
    progress: ProgressListener | None = None,
) -> RewriteDataFilesResult:
    """Compact ``table``'s data files on Spark (Java's ``rewrite_data_files`` procedure):
    plan file groups, rewrite each as one Spark job, commit ``replace`` snapshots (see the
    module docstring and :mod:`icepark.table.maintenance.rewrite_data_files`). Unknown
    strategies, options and sort columns are refused before anything is written; when it
    raises, nothing is committed and the files written for it are deleted (with
    ``partial-progress.enabled``, the groups committed before stay).

    Args:
        spark: the session (classic or Spark Connect).
        table: a Table, or a name looked up in ``catalog``.
        strategy: ``"binpack"`` (combine small files, split large ones) or ``"sort"``.
        sort_order: with ``"sort"``: sort terms (``"id desc nulls last, ts"``) or
            ``"zorder(a, b)"``; default the table's sort order.
        where: an icepark filter string or expression; only files that may hold matching
            rows are considered.
        options: Java's options (``target-file-size-bytes``, ``min-input-files``,
            ``rewrite-all``, ``max-concurrent-file-group-rewrites``,
            ``partial-progress.enabled``, ``remove-dangling-deletes``...).
        branch: the branch rewritten (default ``main``).
        catalog: a Catalog, a configured catalog name or a mapping of catalog properties
            where ``table`` is a name (default: ``icepark.load_catalog()``).
        case_sensitive: whether column names in ``where`` and ``sort_order`` match
            case-sensitively.
        progress: told ``("started" | "written" | "committed" | "failed", group, plan)`` for
            each file group.

    Returns:
        Java's columns: ``rewritten_data_files_count``, ``added_data_files_count``,
        ``rewritten_bytes_count``, ``failed_data_files_count``,
        ``removed_delete_files_count`` (``result.to_df(spark)`` gives Java's one-row
        DataFrame).

    Raises:
        ValidationError: an unknown strategy or option, a bad option value, a sort order
            without strategy ``"sort"``, a filter or sort term naming no column, or (with
            partial progress) more failed commits than ``partial-progress.max-failed-commits``.
        CommitFailedError: a concurrent change conflicts with the rewrite.
        CommitStateUnknownError: the catalog's answer to a commit was lost.
        NoSuchTableError: the table does not exist.
    """
    resolved = resolve_table(table, catalog)
    metadata = resolved.metadata
    strategy = (strategy or "binpack").strip().lower()
    if strategy not in STRATEGIES:
        raise ValidationError(
            f"Unknown rewrite strategy {strategy!r} for table {resolved.name}: use one of "
            f"{', '.join(STRATEGIES)}"
        )
    if sort_order is not None and strategy != "sort":
        raise ValidationError(
            f"Cannot rewrite table {resolved.name} with strategy {strategy!r} and a sort order: "
            "a sort order needs strategy 'sort'"
        )
    row_filter = _filter(where, metadata, case_sensitive)
    name = branch or MAIN_BRANCH
    runner: _Runner
    if strategy == "binpack":
        runner = _BinPack(spark, resolved, metadata, name, case_sensitive)
    else:
        zorder = _ZORDER.match(sort_order or "")
        if zorder:
            columns = _split_terms(zorder.group("cols"))
            runner = _ZOrder(spark, resolved, metadata, name, case_sensitive, columns)
        else:
            order = _sort_order(metadata, sort_order, case_sensitive, resolved.name)
            runner = _Sort(spark, resolved, metadata, name, case_sensitive, order)
    action = RewriteDataFiles(
        resolved,
        runner,
        options=options,
        where=row_filter,
        branch=name,
        case_sensitive=case_sensitive,
        shuffling=strategy == "sort",
        runner_options=runner.options,
        description=runner.description,
        progress=progress,
    )
    runner.init(action.options)
    return action.execute()


# -- arguments ---------------------------------------------------------------------------------


def _filter(
    where: str | BooleanExpression | None, metadata: TableMetadata, case_sensitive: bool
) -> BooleanExpression:
    expr = as_filter(where)
    bind(metadata.schema(), expr, case_sensitive)  # names a missing column now
    return expr


def _split_terms(text: str) -> list[str]:
    """Split at top-level commas (``bucket(16, id) desc, ts``)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _sort_order(
    metadata: TableMetadata, text: str | None, case_sensitive: bool, name: str
) -> SortOrder:
    if text is None:
        order = metadata.sort_order()
        if order.is_unsorted:
            raise ValidationError(
                f"Cannot sort data files of table {name}: it has no sort order; give sort_order"
            )
        return order
    terms = _split_terms(text)
    if not terms:
        raise ValidationError(f"Cannot sort data files of table {name}: empty sort order")
    order = build_sort_order(metadata.schema(), terms, case_sensitive=case_sensitive)
    for existing in metadata.sort_orders:
        if existing.same_order(order):
            return existing
    return order


# -- runners -----------------------------------------------------------------------------------


class _Runner:
    """Rewrites one file group as a Spark job (called from several threads at once)."""

    description = "BIN-PACK"
    options: frozenset[str] = frozenset()

    def __init__(
        self,
        spark: SparkSession,
        table: Table,
        metadata: TableMetadata,
        branch: str,
        case_sensitive: bool,
    ) -> None:
        self.spark = spark
        self.table = table
        self.metadata = metadata
        self.branch = branch
        self.case_sensitive = case_sensitive

    def init(self, options: RewriteOptions) -> None:
        """Read the runner's own options."""

    def __call__(self, group: RewriteFileGroup) -> list[DataFile]:
        session = self.spark.newSession()
        for key, value in self._conf(group).items():
            session.conf.set(key, value)
        scan = DataScan(
            self.table.io,
            self.metadata,
            AlwaysTrue(),
            ref=None if self.branch == MAIN_BRANCH else self.branch,
            case_sensitive=self.case_sensitive,
            use_snapshot_schema=False,
            options=self._split_options(group),
        )
        path: ReadPath = "python" if self._small(group) else "auto"
        df = read_tasks(session, scan, group.tasks, path=path)
        target = self._target_metadata(group)
        files = write_files(
            df,
            self.table,
            metadata=target,
            cluster=self._cluster(group),
            max_records_per_file=_max_records(group),
            fanout=self._fanout(group),
        )
        known = {o.order_id for o in self.metadata.sort_orders}
        return [
            f if f.sort_order_id in known or f.sort_order_id is None else _unsorted(f)
            for f in files
        ]

    def _small(self, group: RewriteFileGroup) -> bool:
        return group.input_size < SMALL_FILE_BYTES * group.input_file_count

    def _spread(self, group: RewriteFileGroup) -> bool:
        """Whether the group is read by every core and shuffled into its output files: for
        many tiny files, where what each file costs to open outweighs moving the bytes."""
        cores = default_parallelism(self.spark)
        return (
            self._small(group)
            and group.input_size < SPREAD_FILE_BYTES * group.input_file_count
            and group.input_file_count >= 2 * cores > 2
        )

    def _split_options(self, group: RewriteFileGroup) -> dict[str, str]:
        """Read splits (python path): one per output file, or one per core when spread."""
        split = group.input_split_size
        if self._spread(group):
            split = group.input_size // default_parallelism(self.spark) + 1
        return {P.SPLIT_SIZE.name: str(split), P.SPLIT_OPEN_FILE_COST.name: "0"}

    def _conf(self, group: RewriteFileGroup) -> dict[str, str]:
        return {
            "spark.sql.adaptive.enabled": "false",
            "spark.sql.files.maxPartitionBytes": str(group.input_split_size),
            "spark.sql.files.openCostInBytes": "0",
            "spark.sql.files.minPartitionNum": "1",
        }

    def _sort_order(self) -> SortOrder:
        return self.metadata.sort_order()

    def _target_metadata(self, group: RewriteFileGroup) -> TableMetadata:
        """The metadata to write with: the group's output spec, the runner's sort order and
        the group's largest output size as the target file size (for the python path)."""
        order = self._sort_order()
        updates: list[Any] = [
            SetPropertiesUpdate(
                {P.WRITE_TARGET_FILE_SIZE_BYTES.name: str(group.max_output_file_size)}
            )
        ]
        if group.output_spec_id != self.metadata.default_spec_id:
            updates.append(SetDefaultSpecUpdate(group.output_spec_id))
        current = self.metadata.sort_order()
        if order.is_unsorted:
            if not current.is_unsorted:
                updates += _set_order(self.metadata, UNSORTED_ORDER)
        elif order is not current:
            updates += _set_order(self.metadata, order)
        return MetadataBuilder(self.metadata).apply_all(updates).build()

    def _fanout(self, group: RewriteFileGroup) -> bool:
        """Whether each task's rows are written as they come, a file per partition open, not
        sorted by partition first: when nothing asks for an order (no sort order, no change
        of spec), as Java's writes default to fanout writers on an unsorted table."""
        return self._sort_order().is_unsorted and not self._repartitions(group)

    def _repartitions(self, group: RewriteFileGroup) -> bool:
        """The group's files are of another spec than the output spec."""
        return group.tasks[0].spec_id != group.output_spec_id

    def _cluster(self, group: RewriteFileGroup) -> Cluster:
        repartition = self._repartitions(group)
        spread = self._spread(group)
        fanout = self._fanout(group)

        def cluster(df: DataFrame, partition: list[Column], sort: list[Column]) -> DataFrame:
            if repartition and partition:
                df = df.repartition(*partition)
            elif spread:
                df = df.repartition(group.expected_output_files)
            if (partition or sort) and not fanout:
                df = df.sortWithinPartitions(*partition, *sort)
            return df

        return cluster


def _set_order(metadata: TableMetadata, order: SortOrder) -> list[Any]:
    """Updates that make ``order`` the default: by id when the table has it, else added."""
    existing = metadata.sort_order_by_id(order.order_id)
    if existing is not None and existing.same_order(order):
        return [SetDefaultSortOrderUpdate(order.order_id)]
    return [AddSortOrderUpdate(order), SetDefaultSortOrderUpdate(-1)]


def _max_records(group: RewriteFileGroup) -> int | None:
    rows = group.input_record_count
    if not rows or not group.input_size:
        return None
    per_row = group.input_size / rows
    return max(1, int(group.max_output_file_size / per_row))


def _unsorted(f: DataFile) -> DataFile:
    return f.replace(sort_order_id=None)


class _BinPack(_Runner):
    description = "BIN-PACK"


class _Shuffling(_Runner):
    """Range-partitions the group into its expected number of files (Java's
    ``SparkShufflingFileRewriteRunner``)."""

    options = frozenset({SHUFFLE_PARTITIONS_PER_FILE})

    def init(self, options: RewriteOptions) -> None:
        per_file = options.integer(SHUFFLE_PARTITIONS_PER_FILE, 1)
        options.require(per_file > 0, SHUFFLE_PARTITIONS_PER_FILE, "must be > 0")
        self.per_file = per_file

    def _conf(self, group: RewriteFileGroup) -> dict[str, str]:
        return {"spark.sql.adaptive.enabled": "false"}

    def _split_options(self, group: RewriteFileGroup) -> dict[str, str]:
        return {}  # the table's read splits: the rows are shuffled anyway

    def _keys(self, df: DataFrame, sort: list[Column]) -> tuple[DataFrame, list[Column], list[str]]:
        """The DataFrame with any extra sort columns, the sort columns, the extra names."""
        return df, sort, []

    def _fanout(self, group: RewriteFileGroup) -> bool:
        return False  # the rows are sorted by the strategy's order

    def _cluster(self, group: RewriteFileGroup) -> Cluster:
        partitions = max(1, group.expected_output_files * self.per_file)

        def cluster(df: DataFrame, partition: list[Column], sort: list[Column]) -> DataFrame:
            keyed, keys, extra = self._keys(df, sort)
            ordering = [*[c.asc_nulls_first() for c in partition], *keys]
            out = keyed.repartitionByRange(partitions, *ordering)
            if self.per_file > 1:
                out = out.coalesce(max(1, group.expected_output_files))
            out = out.sortWithinPartitions(*ordering)
            return out.drop(*extra) if extra else out

        return cluster


class _Sort(_Shuffling):
    description = "SORT"

    def __init__(
        self,
        spark: SparkSession,
        table: Table,
        metadata: TableMetadata,
        branch: str,
        case_sensitive: bool,
        order: SortOrder,
    ) -> None:
        super().__init__(spark, table, metadata, branch, case_sensitive)
        self.order = order

    def _sort_order(self) -> SortOrder:
        return self.order


class _ZOrder(_Shuffling):
    description = "Z-ORDER"
    options = frozenset({SHUFFLE_PARTITIONS_PER_FILE, MAX_OUTPUT_SIZE, VAR_LENGTH_CONTRIBUTION})

    def __init__(
        self,
        spark: SparkSession,
        table: Table,
        metadata: TableMetadata,
        branch: str,
        case_sensitive: bool,
        columns: Sequence[str],
    ) -> None:
        super().__init__(spark, table, metadata, branch, case_sensitive)
        self.columns = self._valid_columns(columns)

    def _valid_columns(self, columns: Sequence[str]) -> list[str]:
        """Java's validZOrderColNames: known columns, identity partition sources skipped."""
        if not columns:
            raise ValidationError("Cannot Z-order when no columns are specified")
        schema = self.metadata.schema()
        identity = {pf.source_id for pf in self.metadata.spec().fields if pf.transform.is_identity}
        valid = []
        for name in columns:
            try:
                f = schema.find_field(name, self.case_sensitive)
            except ValidationError:
                raise ValidationError(
                    f"Cannot Z-order by {name!r}: no such column in table {self.table.name} "
                    f"(case sensitive = {self.case_sensitive})"
                ) from None
            if isinstance(f.field_type, DecimalType | FixedType | UUIDType) or not (
                f.field_type.is_primitive
            ):
                raise ValidationError(
                    f"Cannot Z-order by {name!r}: type {f.field_type} is not supported"
                )
            if f.field_id not in identity:
                valid.append(schema.find_column_name(f.field_id) or f.name)
        if not valid:
            raise ValidationError(
                "Cannot Z-order: all columns given are identity partition columns"
            )
        return valid

    def init(self, options: RewriteOptions) -> None:
        super().init(options)
        self.max_output = options.integer(MAX_OUTPUT_SIZE, 2**31 - 1)
        options.require(self.max_output > 0, MAX_OUTPUT_SIZE, "must be > 0")
        self.var_length = options.integer(VAR_LENGTH_CONTRIBUTION, PRIMITIVE_BUFFER_SIZE)
        options.require(self.var_length > 0, VAR_LENGTH_CONTRIBUTION, "must be > 0")

    def _sort_order(self) -> SortOrder:
        return UNSORTED_ORDER

    def _keys(self, df: DataFrame, sort: list[Column]) -> tuple[DataFrame, list[Column], list[str]]:
        var_length, max_output = self.var_length, self.max_output

        def zvalue(*arrays: pa.Array) -> pa.Array:
            return zorder_values(arrays, var_length, max_output)

        udf = F.arrow_udf(zvalue, T.BinaryType())  # type: ignore[call-overload]
        columns = [F.col(quote_column(c)) for c in self.columns]
        keyed = df.withColumn(_Z_COLUMN, udf(*columns))
        return keyed, [F.col(_Z_COLUMN).asc_nulls_last()], [_Z_COLUMN]
