"""Table scans: choose a snapshot (time travel), plan files and read them as Arrow.

The Arrow read path (:mod:`icepark.arrow`, and pyarrow with it) is imported when a scan first
reads rows: planning, explaining and counting from metadata never need it, and a fresh process
that only plans starts about twice as fast without it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from icepark.errors import ValidationError
from icepark.expressions import AlwaysTrue, BooleanExpression, as_filter, bind
from icepark.io import FileIO
from icepark.planning.explain import ScanExplanation, explain_scan
from icepark.planning.planner import (
    CombinedScanTask,
    FileScanTask,
    PlannedFiles,
    SplitOptions,
    iter_plan_files,
    plan_tasks,
)
from icepark.planning.scan_metrics import PlanCounts
from icepark.planning.walk import parallel_map
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.metadata_columns import PARTITION_FIELD_NAME, metadata_field, partition_field
from icepark.spec.name_mapping import NameMapping
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot
from icepark.spec.types import NestedField, StructType

if TYPE_CHECKING:
    import pyarrow as pa

    from icepark.arrow.deletes import DeleteCache
    from icepark.planning.distributed import RemotePlanning
    from icepark.table.interface import TableLike

__all__ = ["DataScan", "resolve_snapshot", "table_scan", "to_epoch_ms"]

# rows per batch when a scan is read whole (to_arrow): about a row group of a 128 MB file
_TABLE_BATCH_SIZE = 1 << 20


def to_epoch_ms(value: int | dt.datetime | dt.date) -> int:
    """Epoch milliseconds of ``value``: an int as it is, a datetime (naive: UTC), a date (its
    midnight UTC)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return int(
            dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp() * 1000
        )
    return int(value)


def resolve_snapshot(
    metadata: TableMetadata,
    snapshot_id: int | None = None,
    as_of: int | dt.datetime | dt.date | None = None,
    ref: str | None = None,
) -> Snapshot | None:
    """The snapshot a scan reads: by id, by time (ms or datetime), by branch or tag, or the
    current one. Errors name the table's location and what was asked for."""
    given = [x is not None for x in (snapshot_id, as_of, ref)]
    if sum(given) > 1:
        raise ValidationError("Give at most one of snapshot_id, as_of and ref")
    if snapshot_id is not None:
        snapshot = metadata.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise ValidationError(
                f"Cannot find snapshot {snapshot_id} in table {metadata.location}"
            )
        return snapshot
    if as_of is not None:
        ms = to_epoch_ms(as_of)
        snapshot = metadata.snapshot_as_of(ms)
        if snapshot is None:
            raise ValidationError(
                f"Cannot find a snapshot older than {ms} ms in table {metadata.location}"
            )
        return snapshot
    if ref is not None:
        if metadata.ref(ref) is None:
            raise ValidationError(f"Cannot find ref {ref!r} in table {metadata.location}")
        return metadata.snapshot_by_name(ref)
    return metadata.current_snapshot()


@dataclass(frozen=True)
class DataScan:
    """A scan of one table snapshot; build it with :meth:`~icepark.table.Table.scan`,
    refine it with :meth:`filter` and :meth:`select`, and consume it with ``to_arrow()``,
    ``to_batches()``, ``count()``, ``plan_files()`` or ``explain()``. Nothing is read
    before.

    Args:
        io: the table's FileIO.
        metadata: the table's metadata.
        row_filter: the rows to keep, as an expression.
        selected: the columns to read (None: all).
        snapshot_id: the snapshot read (None: see ``as_of`` and ``ref``, else the current).
        as_of: read the snapshot current at this time (epoch ms, datetime or date).
        ref: read the head of this branch or tag.
        case_sensitive: whether column names match case-sensitively.
        use_snapshot_schema: read with the schema of the snapshot read rather than the
            current one (None: for time travel by id or ref, as Java does).
        options: scan options as Java names them (``split-size``, ``lookback``...).
        planner: plans the scan elsewhere instead of locally (a REST catalog's server-side
            planning).
        reporter: told of each local plan once complete: the scan, its tasks' totals and
            the planning time in nanoseconds (a REST catalog's scan report); it must not
            raise.
    """

    io: FileIO
    metadata: TableMetadata
    row_filter: BooleanExpression = field(default_factory=AlwaysTrue)
    selected: tuple[str, ...] | None = None
    snapshot_id: int | None = None
    as_of: int | dt.datetime | dt.date | None = None
    ref: str | None = None
    case_sensitive: bool = True
    use_snapshot_schema: bool | None = None
    options: dict[str, str] = field(default_factory=dict)
    # plans the scan elsewhere (a REST catalog's server-side planning) instead of locally
    planner: Callable[[DataScan], Iterator[FileScanTask]] | None = field(
        default=None, compare=False, repr=False
    )
    # told of each local plan once it is complete: the scan, its tasks' totals and the
    # planning time in nanoseconds (a REST catalog's scan report); it must not raise
    reporter: Callable[[DataScan, PlanCounts, int], None] | None = field(
        default=None, compare=False, repr=False
    )

    def __getstate__(self) -> dict[str, object]:
        # a pickled scan (what a Spark task reads) leaves its planner and reporter behind:
        # tasks read, the driver plans, and both hold a live HTTP session
        return {**self.__dict__, "planner": None, "reporter": None}

    # -- refinement ------------------------------------------------------------------------

    def filter(self, expr: str | BooleanExpression) -> DataScan:
        """This scan with one more filter (and-ed with the one it has).

        Args:
            expr: an icepark filter string or expression.

        Returns:
            A new scan; this one is unchanged.

        Raises:
            ValidationError: the filter string does not parse.
        """
        extra = as_filter(expr)
        combined = extra if isinstance(self.row_filter, AlwaysTrue) else self.row_filter & extra
        return replace(self, row_filter=combined)

    def select(self, *columns: str) -> DataScan:
        """This scan reading only some columns.

        Args:
            *columns: column names (dotted for nested fields; metadata columns such as
                ``_file`` and ``_pos`` too); ``"*"`` is all.

        Returns:
            A new scan; this one is unchanged.
        """
        return replace(self, selected=tuple(columns))

    # -- resolution ------------------------------------------------------------------------

    @cached_property
    def snapshot(self) -> Snapshot | None:
        """The snapshot the scan reads (by id, time or ref, else the current one); None for a
        table never written. A ValidationError names a snapshot id, time or ref that matches
        none.
        """
        return resolve_snapshot(self.metadata, self.snapshot_id, self.as_of, self.ref)

    @cached_property
    def schema(self) -> Schema:
        """The table schema the scan reads with: the snapshot's own schema when time
        travelling by id or time (or to a tag), else the current one."""
        use_snapshot = self.use_snapshot_schema
        if use_snapshot is None:
            tag = (
                self.ref is not None
                and (r := self.metadata.ref(self.ref)) is not None
                and not r.is_branch
            )
            use_snapshot = self.snapshot_id is not None or self.as_of is not None or tag
        snap = self.snapshot
        if use_snapshot and snap is not None and snap.schema_id is not None:
            found = self.metadata.schema_by_id(snap.schema_id)
            if found is not None:
                return found
        return self.metadata.schema()

    @cached_property
    def partition_type(self) -> StructType:
        """The union of every spec's partition fields (by field id), as Java's ``_partition``."""
        fields: dict[int, NestedField] = {}
        for spec in sorted(self.metadata.partition_specs, key=lambda sp: sp.spec_id):
            for f in spec.partition_type(self.schema).fields:
                fields.setdefault(f.field_id, f)
        return StructType(*fields.values())

    def _metadata_column(self, name: str) -> NestedField | None:
        if name == PARTITION_FIELD_NAME:
            return partition_field(self.partition_type)
        return metadata_field(name)

    @cached_property
    def projected_schema(self) -> Schema:
        """The columns asked for, in the order asked (metadata columns like ``_file`` too)."""
        if self.selected is None or "*" in self.selected:
            return self.schema
        fields: list[NestedField] = []
        data_columns = [n for n in self.selected if self._metadata_column(n) is None]
        projected = self.schema.select(data_columns, self.case_sensitive)
        by_name = {f.name if self.case_sensitive else f.name.lower(): f for f in projected.fields}
        for name in self.selected:
            meta = self._metadata_column(name)
            if meta is not None:
                fields.append(meta)
                continue
            top = name.split(".", 1)[0]
            found = by_name.pop(top if self.case_sensitive else top.lower(), None)
            if found is not None:
                fields.append(found)
        return Schema(*fields, schema_id=self.schema.schema_id)

    @property
    def _name_mapping(self) -> NameMapping | None:
        return self.metadata.name_mapping()

    # -- planning --------------------------------------------------------------------------

    def plan_files(self, remote: RemotePlanning | None = None) -> PlannedFiles:
        """The file scan tasks: data files (or byte ranges) that may hold matching rows, with
        the delete files that apply and the residual filter. Produced as they are iterated
        (a plan of a million files streams; each iteration plans anew); ``len()``, indexing
        and slicing plan once and keep the list (:class:`PlannedFiles`).

        Args:
            remote: read the manifests where its modes say
                (:mod:`icepark.planning.distributed`: Spark tasks); the same tasks either way.

        Returns:
            The planned tasks.

        Raises:
            ValidationError: the filter names an unknown column, or no snapshot matches.
        """
        return PlannedFiles(lambda: self.iter_plan_files(remote), self.iter_plan_files(remote))

    def iter_plan_files(self, remote: RemotePlanning | None = None) -> Iterator[FileScanTask]:
        """:meth:`plan_files` as a stream, manifest by manifest (reading can start early);
        through the table's ``planner`` when it has one (server-side planning).

        Args:
            remote: read the manifests where its modes say (Spark tasks).

        Returns:
            An iterator of file scan tasks.

        Raises:
            ValidationError: the filter names an unknown column, or no snapshot matches.
        """
        bind(self.schema, self.row_filter, self.case_sensitive)  # fail early on bad columns
        if self.planner is not None:
            return self.planner(self)
        args = (self.io, self.metadata, self.snapshot, self.row_filter, self.schema)
        if remote is not None:
            from icepark.planning import distributed

            tasks = distributed.iter_plan_files(remote, *args, self.case_sensitive)
        else:
            tasks = iter_plan_files(*args, self.case_sensitive)
        return tasks if self.reporter is None else self._reported(tasks, self.reporter)

    def _reported(
        self,
        tasks: Iterator[FileScanTask],
        reporter: Callable[[DataScan, PlanCounts, int], None],
    ) -> Iterator[FileScanTask]:
        """``tasks`` passed through, added up; once the last is out, the totals go to
        ``reporter`` (a reader that stops early ends planning without a report, as Java's)."""
        start = time.perf_counter_ns()
        counts = PlanCounts()
        for task in tasks:
            counts.add(task)
            yield task
        reporter(self, counts, time.perf_counter_ns() - start)

    def explain(self, table_name: str = "", *, time_planning: bool = True) -> ScanExplanation:
        """The pruning funnel of this scan: manifests and files kept by each step, delete
        files attached, residuals per spec, what is left to read, and each step's time (see
        :mod:`icepark.planning.explain`); ``print()`` it, or ``.to_dict()`` for JSON.

        Args:
            table_name: the name to show in it.
            time_planning: also time a real planning run (as long again); False skips it.

        Returns:
            The explanation.

        Raises:
            ValidationError: the filter names an unknown column, or no snapshot matches.
        """
        bind(self.schema, self.row_filter, self.case_sensitive)
        return explain_scan(
            self.io,
            self.metadata,
            self.snapshot,
            self.row_filter,
            self.schema,
            self.case_sensitive,
            table_name,
            time_planning=time_planning,
        )

    def plan_tasks(self) -> list[CombinedScanTask]:
        """The planned files combined into read tasks of about ``read.split.target-size``
        bytes (files split at row groups, small ones packed together, as Java's planning).

        Returns:
            The combined tasks.

        Raises:
            ValidationError: the filter names an unknown column, or no snapshot matches.
        """
        props = {**self.metadata.properties, **self.options}
        return plan_tasks(self.plan_files(), SplitOptions.from_properties(props))

    # -- reading ---------------------------------------------------------------------------

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the rows the scan gives (its projected columns, with field ids)."""
        from icepark.arrow.schema import schema_to_arrow

        return schema_to_arrow(self.projected_schema)

    @cached_property
    def _delete_cache(self) -> DeleteCache:
        from icepark.arrow.deletes import DeleteCache

        return DeleteCache()

    def read_task(
        self, task: FileScanTask, batch_size: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """The rows of one planned task, its deletes and residual applied.

        Args:
            task: a task of :meth:`plan_files`.
            batch_size: at most this many rows per batch (default: the reader's).

        Returns:
            An iterator of Arrow record batches of the projected columns.

        Raises:
            NoSuchFileError: the task's file or a delete file is missing.
            StorageError: storage refused a read (naming the file).
        """
        return self._read_task(task, self.projected_schema, batch_size)

    def _read_task(
        self, task: FileScanTask, projected: Schema, batch_size: int | None
    ) -> Iterator[pa.RecordBatch]:
        from icepark.arrow.deletes import read_task
        from icepark.arrow.reader import DEFAULT_BATCH_SIZE

        residual = None
        if not isinstance(task.residual, AlwaysTrue):
            residual = bind(self.schema, task.residual, self.case_sensitive)
        yield from read_task(
            self.io,
            task,
            projected_schema=projected,
            table_schema=self.schema,
            partition_spec=self.metadata.spec_by_id(task.spec_id),
            row_filter=residual,
            name_mapping=self._name_mapping,
            cache=self._delete_cache,
            batch_size=batch_size or DEFAULT_BATCH_SIZE,
        )

    def _files_at_once(self, read_ahead: int | None) -> int:
        if read_ahead is not None:
            return max(1, read_ahead)
        return P.READ_AHEAD_FILES.get({**self.metadata.properties, **self.options})

    def to_batches(self, read_ahead: int | None = None) -> Iterator[pa.RecordBatch]:
        """Stream the matching rows batch by batch, in planned-file order.

        ``read_ahead`` files (default ``read.read-ahead.files``, 2) are read at once; memory
        stays bounded by a few batches per file being read, not by the table.

        Args:
            read_ahead: how many files are read at once.

        Returns:
            An iterator of Arrow record batches of the projected columns.

        Raises:
            ValidationError: the filter names an unknown column or a value does not fit its
                type, or no snapshot matches the scan's snapshot id, time or ref.
            NoSuchFileError: a file the metadata references is missing.
            StorageError: storage refused a read (naming the file).
        """
        yield from self._read(read_ahead, None)

    def _read(self, read_ahead: int | None, batch_size: int | None) -> Iterator[pa.RecordBatch]:
        from icepark.arrow.readahead import read_ahead as read_ahead_batches

        def read(task: FileScanTask) -> Iterator[pa.RecordBatch]:
            return self.read_task(task, batch_size)

        yield from read_ahead_batches(self.iter_plan_files(), read, self._files_at_once(read_ahead))

    def to_arrow(self, read_ahead: int | None = None) -> pa.Table:
        """All matching rows as one Arrow table. The whole result is held anyway, so files
        are read in batches of up to a row group (Parquet decodes fewer, larger batches
        faster) and at least 4 at once.

        Args:
            read_ahead: how many files are read at once (default: at least 4, or
                ``read.read-ahead.files``).

        Returns:
            A ``pyarrow.Table`` of the projected columns.

        Raises:
            ValidationError: the filter names an unknown column or a value does not fit its
                type, or no snapshot matches the scan's snapshot id, time or ref.
            NoSuchFileError: a file the metadata references is missing.
            StorageError: storage refused a read (naming the file).
        """
        import pyarrow as pa

        files = read_ahead if read_ahead is not None else max(4, self._files_at_once(None))
        batches = list(self._read(files, _TABLE_BATCH_SIZE))
        return pa.Table.from_batches(batches, schema=self.arrow_schema)

    def count(self, read_ahead: int | None = None) -> int:
        """The number of matching rows; from metadata alone when no residual or delete
        applies to a file, else by reading the files.

        Args:
            read_ahead: how many files are read at once when files must be read.

        Returns:
            The count.

        Raises:
            ValidationError: the filter names an unknown column or a value does not fit its
                type, or no snapshot matches the scan's snapshot id, time or ref.
            NoSuchFileError: a file the metadata references is missing.
            StorageError: storage refused a read (naming the file).
        """
        from icepark.arrow.deletes import live_row_count

        total = 0
        to_read: list[FileScanTask] = []
        for task in self.plan_files():
            if (
                isinstance(task.residual, AlwaysTrue)
                and not task.delete_files
                and task.is_whole_file
            ):
                total += task.file.record_count
            elif (
                isinstance(task.residual, AlwaysTrue)
                and (live := live_row_count(self.io, task, self._delete_cache)) is not None
            ):
                total += live
            else:
                to_read.append(task)

        # the files read for their residual or deletes are read for no column: the reader
        # reads the filter's and the equality deletes' columns alone and keeps the row count
        nothing = Schema(schema_id=self.schema.schema_id)

        def rows(task: FileScanTask) -> int:
            return sum(b.num_rows for b in self._read_task(task, nothing, None))

        return total + sum(parallel_map(rows, to_read, self._files_at_once(read_ahead)))

    def columns(self) -> Sequence[str]:
        """The names of the columns the scan reads, in order.

        Returns:
            The top-level column names (metadata columns included).
        """
        return [f.name for f in self.projected_schema.fields]


def table_scan(
    table: TableLike,
    filter: str | BooleanExpression | None = None,
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    as_of: int | dt.datetime | dt.date | None = None,
    ref: str | None = None,
    case_sensitive: bool = True,
    options: dict[str, str] | None = None,
    use_snapshot_schema: bool | None = None,
) -> DataScan:
    """A scan of ``table`` (``table.scan(...)``); ``filter`` is an expression or a string like
    ``"ts >= '2024-01-01'"``; ``as_of`` is epoch milliseconds or a datetime; ``ref`` a branch
    or tag. Time travel reads with the snapshot's schema unless ``use_snapshot_schema=False``.
    ``options`` are Java's read options (``split-size``, ...)."""
    return DataScan(
        table.io,
        table.metadata,
        as_filter(filter),
        tuple(columns) if columns is not None else None,
        snapshot_id,
        as_of,
        ref,
        case_sensitive,
        use_snapshot_schema=use_snapshot_schema,
        options=dict(options or {}),
        planner=getattr(table, "scan_planner", None),
        reporter=getattr(table, "scan_reporter", None),
    )
