"""Writing Arrow data as a table's data files (Parquet, Avro or ORC), ready to be committed.

:func:`write_data_files` takes the rows (a table, a record batch reader or any iterable of
record batches), matches them to the table schema by name (:mod:`icepark.arrow.conform`),
splits them by partition, sorts them by the table's sort order, writes them as Parquet files
under ``<table location>/data/<partition path>/`` (or ``write.data.path``) and returns their
:class:`~icepark.spec.manifests.DataFile` entries with the metrics Java reports
(:mod:`icepark.arrow.metrics`).

Files are named as Java's ``OutputFileFactory`` names them:
``{task_id:05d}-{attempt_id}-{write_uuid}-{file number:05d}.parquet``, numbered from 1 within
one call, and are created through the FileIO, never overwriting a file.

Memory stays bounded for streamed input: batches are processed one at a time; rows wait in a
per-partition buffer until they make a row group (``write.parquet.row-group-size-bytes``,
estimated from the Arrow size of the rows and the compression seen so far) or until all
buffers together pass :data:`BUFFER_BUDGET_BYTES`, when the largest is written out. At most
:data:`MAX_OPEN_FILES` partitions have an open file; the least recently used is closed when
another is needed. A file is closed when its size reaches ``write.target-file-size-bytes``
(measured as it is written) and the partition's next rows go to a new file.

Sorting: a :class:`pyarrow.Table` is sorted as a whole, so every file it gives is sorted. A
stream cannot be sorted with bounded memory: each batch is sorted on its own (as Spark sorts
each task's rows), so a file holding the rows of more than one batch is not sorted. A file's
``sort_order_id`` is the table's order id when its rows are known to be sorted, else 0 (what
Java writes for unsorted files).

Parquet: format version 2.6 logical types (timestamps in µs or ns, ``isAdjustedToUTC`` true for
timestamptz only), decimals with precision up to 9 / 18 as int32 / int64, uuids as
``fixed_len_byte_array(16)`` annotated ``UUID``, list elements named ``element``, a field id
on every field. ``write.parquet.compression-codec`` (zstd, snappy, gzip, lz4, brotli, none /
uncompressed) and ``write.parquet.compression-level``, ``write.parquet.page-size-bytes``,
``write.parquet.page-row-limit`` and ``write.parquet.dict-size-bytes`` are honoured.

Avro (``write.format.default=avro``, or ``file_format`` per call): Iceberg's Avro schema with
field ids and logical types, ``write.avro.compression-codec`` / ``-level`` (gzip = deflate
at level 9 by default, as Java), blocks of about 64 KB, rolled at the target size like
Parquet files; an Avro file's entry has a record count and no column metrics, as Java's
(see :mod:`icepark.arrow.avro_writer`). ORC (``write.format.default=orc``): the type tree
Java's ORC writer writes, ids in ``iceberg.id`` attributes, ``write.orc.compression-codec``
and stripe size, metrics from the rows (see :mod:`icepark.arrow.orc_writer`).

If anything fails, the files this call wrote are deleted before the error is raised.
"""

from __future__ import annotations

import contextlib
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.arrow._rows import (
    from_internal_value,
    hashable,
    iter_batches,
    nested_column,
    sort_indices,
    to_internal_arrow,
)
from icepark.arrow.avro_writer import AvroOpenFile
from icepark.arrow.conform import conform_batch, file_schema
from icepark.arrow.metrics import Metrics, MetricsCollector, MetricsConfig
from icepark.arrow.orc_writer import OrcOpenFile
from icepark.arrow.schema import schema_to_arrow
from icepark.arrow.sink import StreamSink
from icepark.arrow.transforms import apply_transform
from icepark.errors import UnsupportedOperationError, ValidationError
from icepark.io.fileio import FileIO
from icepark.spec import properties as P
from icepark.spec.manifests import DataFile, FileContent, FileFormat
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.sorting import SortOrder

__all__ = [
    "write_data_files",
    "data_location",
    "data_file_name",
    "data_file_format",
    "parquet_writer_options",
    "MAX_OPEN_FILES",
    "BUFFER_BUDGET_BYTES",
]

#: partitions that may have an open file at once
MAX_OPEN_FILES = 100
#: rows buffered (Arrow bytes) across all partitions before the largest buffer is written
BUFFER_BUDGET_BYTES = 256 * 1024 * 1024
_CHUNK_ROWS = 65_536  # rows per batch when splitting an in-memory table
_MAX_ROW_GROUP_ROWS = 1_048_576  # Arrow's own limit; one write call is one row group
_ZSTD_DEFAULT_LEVEL = 3  # parquet-java's default
_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "brotli": "brotli",
    "none": "none",
    "uncompressed": "none",
}


# -- small public helpers ----------------------------------------------------------------------


def data_location(table_location: str, properties: Mapping[str, str]) -> str:
    """Where data files go: ``write.data.path``, else ``<table location>/data``."""
    return P.data_folder(table_location, properties)


def data_file_name(
    task_id: int,
    attempt_id: int,
    write_uuid: str,
    file_number: int,
    file_format: FileFormat = FileFormat.PARQUET,
) -> str:
    """Java's data file name: ``00000-0-<uuid>-00001.parquet`` (``.avro``, ``.orc``)."""
    extension = file_format.value.lower()
    return f"{task_id:05d}-{attempt_id}-{write_uuid}-{file_number:05d}.{extension}"


def data_file_format(properties: Mapping[str, str], delete: bool = False) -> FileFormat:
    """The format of new data files (``write.format.default``) or, with ``delete``, of new
    delete files (``write.delete.format.default``, else the data files' format)."""
    name = P.DEFAULT_FILE_FORMAT.get(properties)
    if delete:
        name = P.DELETE_DEFAULT_FILE_FORMAT.get(properties) or name
    return FileFormat.parse(name)


def parquet_writer_options(properties: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments for :class:`pyarrow.parquet.ParquetWriter` from table properties."""
    codec_name = P.PARQUET_COMPRESSION.get(properties)
    codec = _CODECS.get(codec_name)
    if codec is None:
        raise ValidationError(f"Unsupported Parquet compression codec: {codec_name!r}")
    level = P.PARQUET_COMPRESSION_LEVEL.get(properties)
    if level is None and codec == "zstd":
        level = _ZSTD_DEFAULT_LEVEL
    options: dict[str, Any] = {
        "version": "2.6",
        "compression": codec,
        "compression_level": level if codec != "none" else None,
        "store_decimal_as_integer": True,
        "store_schema": False,
        "use_compliant_nested_type": True,
        "write_statistics": True,
    }
    # pyarrow's own defaults unless a property is set
    if P.PARQUET_PAGE_SIZE_BYTES.raw(properties) is not None:
        options["data_page_size"] = P.PARQUET_PAGE_SIZE_BYTES.get(properties)
    if P.PARQUET_DICT_SIZE_BYTES.raw(properties) is not None:
        options["dictionary_pagesize_limit"] = P.PARQUET_DICT_SIZE_BYTES.get(properties)
    if P.PARQUET_PAGE_ROW_LIMIT.raw(properties) is not None:
        options["max_rows_per_page"] = P.PARQUET_PAGE_ROW_LIMIT.get(properties)
    return options


# -- one open file -----------------------------------------------------------------------------


class _OpenFile:
    def __init__(
        self,
        io: FileIO,
        location: str,
        arrow_schema: pa.Schema,
        options: Mapping[str, Any],
        collector: MetricsCollector,
    ) -> None:
        self.location = location
        self.collector = collector
        self.stream = io.new_output(location).create()
        self._sink = StreamSink(self.stream)
        self.chunks: set[int] = set()
        self.row_groups = 0
        try:
            self.writer = pq.ParquetWriter(self._sink, arrow_schema, **options)
        except BaseException:
            self.stream.abort()
            raise

    @property
    def position(self) -> int:
        return self.stream.tell()

    def write(self, table: pa.Table) -> None:
        self.writer.write_table(table, row_group_size=max(1, table.num_rows))
        self.collector.update(table)
        self.row_groups += 1

    def close(self) -> tuple[int, Metrics]:
        self.writer.close()
        metrics = self.collector.finish(self.writer.writer.metadata)
        size = self.stream.tell()
        self.stream.close()  # publishes the file
        return size, metrics

    def abort(self) -> None:
        self._sink.discard = True
        with contextlib.suppress(Exception):
            self.writer.close()
        self.stream.abort()


# -- per partition state -----------------------------------------------------------------------


@dataclass
class _Partition:
    partition: tuple[Any, ...]
    folder: str
    pending: list[tuple[int, pa.RecordBatch]] = field(default_factory=list)
    pending_rows: int = 0
    pending_bytes: int = 0
    file: _OpenFile | AvroOpenFile | OrcOpenFile | None = None
    ratio: float = 1.0  # Parquet bytes written per Arrow byte, as seen so far


class _DataWriter:
    def __init__(
        self,
        io: FileIO,
        table_location: str,
        schema: Schema,
        spec: PartitionSpec,
        sort_order: SortOrder,
        properties: Mapping[str, str],
        write_uuid: str,
        task_id: int,
        attempt_id: int,
        file_format: FileFormat,
    ) -> None:
        if file_format not in (FileFormat.PARQUET, FileFormat.AVRO, FileFormat.ORC):
            raise UnsupportedOperationError(
                f"Cannot write {file_format} data files: icepark writes Parquet, Avro and ORC"
            )
        self.io = io
        self.file_format = file_format
        self.properties = properties
        self.schema = schema
        self.file_schema = file_schema(schema)
        self.arrow_schema = schema_to_arrow(self.file_schema)
        self.spec = spec
        self.sort_order = sort_order
        self.metrics_config = MetricsConfig.from_properties(properties, schema, sort_order)
        parquet = file_format == FileFormat.PARQUET
        self.options = parquet_writer_options(properties) if parquet else {}
        self.target_size = (
            P.WRITE_TARGET_FILE_SIZE_BYTES.get(properties) or P.WRITE_TARGET_FILE_SIZE_BYTES.default
        )
        self.row_group_bytes = (
            P.PARQUET_ROW_GROUP_SIZE_BYTES.get(properties) or P.PARQUET_ROW_GROUP_SIZE_BYTES.default
        )
        # a row group never spans files: write one when it would fill the target size
        self.flush_bytes = min(self.row_group_bytes, self.target_size)
        self.data_location = data_location(table_location, properties)
        self.write_uuid = write_uuid
        self.task_id = task_id
        self.attempt_id = attempt_id
        self.partitions: OrderedDict[tuple[Any, ...], _Partition] = OrderedDict()
        self.buffered_bytes = 0
        self.file_count = 0
        self.published: list[str] = []
        self.data_files: list[DataFile] = []
        self.partition_type = spec.partition_type(schema)
        self._check_spec_and_order()

    def _check_spec_and_order(self) -> None:
        for pf in self.spec.fields:
            if pf.transform.is_void:
                continue
            source = self.file_schema.field_or_none(pf.source_id)
            if source is None or not pf.transform.can_transform(source.field_type):
                raise ValidationError(
                    f"Cannot write partition field {pf.name!r}: its source column (id "
                    f"{pf.source_id}) is missing or cannot be transformed by {pf.transform}"
                )
        if not self.sort_order.is_unsorted:
            self.sort_order.validate(self.schema)

    # -- input -------------------------------------------------------------------------------

    def write(self, data: Any) -> list[DataFile]:
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if isinstance(data, pa.Table):
            self._write_table(data)
        else:
            for chunk_id, batch in enumerate(iter_batches(data)):
                if batch.num_rows:
                    conformed = conform_batch(batch, self.schema, self.arrow_schema)
                    self._dispatch(self._sorted(conformed), chunk_id, False)
        for key in list(self.partitions):
            self._retire(key)
        return self.data_files

    def _write_table(self, table: pa.Table) -> None:
        pieces = (b for b in table.to_batches(max_chunksize=_CHUNK_ROWS) if b.num_rows)
        if self.sort_order.is_unsorted:
            for batch in pieces:
                self._dispatch(conform_batch(batch, self.schema, self.arrow_schema), 0, True)
            return
        conformed = [conform_batch(b, self.schema, self.arrow_schema) for b in pieces]
        if not conformed:
            return
        whole = pa.Table.from_batches(conformed, schema=self.arrow_schema)
        del conformed
        whole = whole.take(sort_indices(whole, self.file_schema, self.sort_order))
        for batch in whole.to_batches(max_chunksize=_CHUNK_ROWS):
            self._dispatch(batch, 0, True)

    def _sorted(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self.sort_order.is_unsorted or batch.num_rows < 2:
            return batch
        return batch.take(sort_indices(batch, self.file_schema, self.sort_order))

    # -- partitions --------------------------------------------------------------------------

    def _dispatch(self, batch: pa.RecordBatch, chunk_id: int, whole_sorted: bool) -> None:
        for partition, rows in self._split(batch):
            state = self._partition(partition)
            state.pending.append((-1 if whole_sorted else chunk_id, rows))
            state.pending_rows += rows.num_rows
            state.pending_bytes += rows.nbytes
            self.buffered_bytes += rows.nbytes
            if state.pending_bytes * state.ratio >= self.flush_bytes:
                self._flush(state)
            while self.buffered_bytes > BUFFER_BUDGET_BYTES:
                largest = max(self.partitions.values(), key=lambda p: p.pending_bytes)
                self._flush(largest)

    def _split(self, batch: pa.RecordBatch) -> list[tuple[tuple[Any, ...], pa.RecordBatch]]:
        if not self.spec.fields:
            return [((), batch)]
        keys: list[pa.Array | None] = []
        for pf, pfield in zip(self.spec.fields, self.partition_type.fields):
            if pf.transform.is_void:
                keys.append(None)
                continue
            source = self.file_schema.find_field(pf.source_id)
            column = nested_column(batch, self.file_schema, pf.source_id)
            values = apply_transform(pf.transform, source.field_type, column)
            keys.append(to_internal_arrow(values, pfield.field_type))
        present = {f"k{i}": k for i, k in enumerate(keys) if k is not None}
        if not present:
            return [(tuple(None for _ in keys), batch)]
        table = pa.table({**present, "i": pa.array(range(batch.num_rows), pa.int64())})
        groups = table.group_by(list(present), use_threads=False).aggregate([("i", "list")])
        columns = {name: groups.column(name).to_pylist() for name in present}
        indices = groups.column("i_list")
        ptype = self.partition_type
        out = []
        for g in range(groups.num_rows):
            partition = tuple(
                None if k is None else from_internal_value(columns[f"k{i}"][g], ptype, i)
                for i, k in enumerate(keys)
            )
            rows = batch if groups.num_rows == 1 else batch.take(indices[g].values)
            out.append((partition, rows))
        return out

    def _partition(self, partition: tuple[Any, ...]) -> _Partition:
        key = tuple(hashable(v) for v in partition)
        state = self.partitions.get(key)
        if state is not None:
            self.partitions.move_to_end(key)
            return state
        if self.spec.is_unpartitioned:
            folder = self.data_location
        else:
            folder = f"{self.data_location}/{self.spec.partition_to_path(partition, self.schema)}"
        state = _Partition(partition, folder)
        self.partitions[key] = state
        while len(self.partitions) > MAX_OPEN_FILES:
            oldest = next(iter(self.partitions))
            self._retire(oldest)
        return state

    def _retire(self, key: tuple[Any, ...]) -> None:
        state = self.partitions.pop(key)
        self._flush(state)
        if state.file is not None:
            self._close_file(state)

    # -- files -------------------------------------------------------------------------------

    def _flush(self, state: _Partition) -> None:
        while state.pending_rows:
            if state.file is None:
                state.file = self._open_file(state)
            f = state.file
            per_row = state.ratio * state.pending_bytes / state.pending_rows
            remaining = self.target_size - f.position
            fit = int(remaining // per_row) if per_row > 0 else state.pending_rows
            if fit < 1 and f.row_groups:
                self._close_file(state)
                continue
            n = min(state.pending_rows, max(1, fit), _MAX_ROW_GROUP_ROWS)
            rows, chunks, arrow_bytes = self._take(state, n)
            before = f.position
            f.write(rows)
            f.chunks |= chunks
            written = f.position - before
            if arrow_bytes > 0 and written > 0:
                state.ratio = written / arrow_bytes
            if f.position >= self.target_size:
                self._close_file(state)

    def _take(self, state: _Partition, n: int) -> tuple[pa.Table, set[int], int]:
        taken: list[pa.RecordBatch] = []
        chunks: set[int] = set()
        needed = n
        while needed:
            chunk_id, batch = state.pending[0]
            chunks.add(chunk_id)
            if batch.num_rows <= needed:
                state.pending.pop(0)
                taken.append(batch)
                needed -= batch.num_rows
            else:
                taken.append(batch.slice(0, needed))
                state.pending[0] = (chunk_id, batch.slice(needed))
                needed = 0
        nbytes = sum(b.nbytes for b in taken)
        state.pending_rows -= n
        state.pending_bytes = sum(b.nbytes for _, b in state.pending)
        self.buffered_bytes = sum(p.pending_bytes for p in self.partitions.values())
        if state.pending_rows == 0:
            state.pending_bytes = 0
        return pa.Table.from_batches(taken, schema=self.arrow_schema), chunks, nbytes

    def _open_file(self, state: _Partition) -> _OpenFile | AvroOpenFile | OrcOpenFile:
        self.file_count += 1
        name = data_file_name(
            self.task_id, self.attempt_id, self.write_uuid, self.file_count, self.file_format
        )
        if self.file_format == FileFormat.AVRO:
            return AvroOpenFile(
                self.io, f"{state.folder}/{name}", self.file_schema, self.properties
            )
        collector = MetricsCollector(self.file_schema, self.metrics_config)
        if self.file_format == FileFormat.ORC:
            return OrcOpenFile(
                self.io, f"{state.folder}/{name}", self.file_schema, self.properties, collector
            )
        return _OpenFile(
            self.io, f"{state.folder}/{name}", self.arrow_schema, self.options, collector
        )

    def _close_file(self, state: _Partition) -> None:
        f = state.file
        assert f is not None
        state.file = None
        column_metrics: dict[str, Any] = {}
        if isinstance(f, AvroOpenFile):  # Java records no column metrics for Avro files
            size = f.close()
            record_count = f.record_count
        else:
            size, metrics = f.close()
            record_count = metrics.record_count
            column_metrics = {
                "column_sizes": metrics.column_sizes,
                "value_counts": metrics.value_counts,
                "null_value_counts": metrics.null_value_counts,
                "nan_value_counts": metrics.nan_value_counts,
                "lower_bounds": metrics.lower_bounds,
                "upper_bounds": metrics.upper_bounds,
                "split_offsets": metrics.split_offsets,
            }
            if isinstance(f, OrcOpenFile):  # no column sizes or stripe offsets from pyarrow
                del column_metrics["column_sizes"], column_metrics["split_offsets"]
        self.published.append(f.location)
        sorted_rows = not self.sort_order.is_unsorted and (f.chunks == {-1} or len(f.chunks) == 1)
        self.data_files.append(
            DataFile(
                content=FileContent.DATA,
                file_path=f.location,
                file_format=self.file_format,
                partition=state.partition,
                record_count=record_count,
                file_size_in_bytes=size,
                sort_order_id=self.sort_order.order_id if sorted_rows else 0,
                spec_id=self.spec.spec_id,
                **column_metrics,
            )
        )

    def abort(self) -> None:
        for state in self.partitions.values():
            if state.file is not None:
                with contextlib.suppress(Exception):
                    state.file.abort()
                state.file = None
        for location in self.published:
            with contextlib.suppress(Exception):
                self.io.delete(location)


# -- entry point -------------------------------------------------------------------------------


def write_data_files(
    io: FileIO,
    *,
    table_location: str,
    schema: Schema,
    spec: PartitionSpec,
    sort_order: SortOrder,
    properties: Mapping[str, str],
    data: pa.Table | pa.RecordBatchReader | Iterable[pa.RecordBatch],
    write_uuid: str | None = None,
    task_id: int = 0,
    attempt_id: int = 0,
    file_format: FileFormat | str | None = None,
) -> list[DataFile]:
    """Write ``data`` as data files of a table; see the module docstring. ``file_format``
    (``"parquet"``, ``"avro"``, ``"orc"``) overrides ``write.format.default``.

    Returns the files written, in the order they were closed, with partition tuples in the
    internal representation of ``spec.partition_type(schema)`` and ``spec_id`` set. Raises
    :class:`~icepark.errors.ValidationError` for data that does not fit the schema; on any
    error the files written so far are deleted.
    """
    writer = _DataWriter(
        io,
        table_location,
        schema,
        spec,
        sort_order,
        properties,
        write_uuid or str(uuid.uuid4()),
        task_id,
        attempt_id,
        data_file_format(properties) if file_format is None else FileFormat.parse(file_format),
    )
    try:
        return writer.write(data)
    except BaseException:
        writer.abort()
        raise
