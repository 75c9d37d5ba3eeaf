"""Reading data files into Arrow record batches of a projected Iceberg schema.

:func:`read_data_file` streams one data file (Parquet, Avro or ORC, by its
``file_format``) as batches whose schema is exactly ``schema_to_arrow(projected_schema)``,
following the spec's "Column Projection". It is the one place data files are read: scans,
row-level changes, rewrites and equality delete files all come through it. Each format gives
its columns as Arrow fields carrying field ids (Parquet's own ids; Avro's ``field-id``
properties, see :mod:`icepark.arrow.avro_reader`; ORC's ``iceberg.id`` attributes, see
:mod:`icepark.arrow.orc_reader`), and one projection plan does the rest:

* file columns are matched to the projected fields by field id (``PARQUET:field_id``), so
  renamed, reordered and dropped columns read right; a file without any field id is read
  through the table's name mapping (``schema.name-mapping.default``), as Java does (a file
  with ids ignores the mapping); without ids and without a mapping the read fails;
* a field the file lacks reads as the identity partition value of the file when the field is
  the source of an identity partition field of the file's spec, else as the field's
  ``initial_default``, else as null (a required field with neither is an error);
* nested struct fields are matched by id too (a struct field added later reads as null or
  its default), inside lists and maps as well;
* promoted types are cast: int -> long, float -> double, decimal(P,S) -> decimal(P',S),
  date -> timestamp(_ns), and the Arrow variants Parquet readers produce (large strings,
  dictionaries, ``ms`` timestamps, ...) to icepark's Arrow types;
* the metadata columns ``_file``, ``_pos``, ``_spec_id``, ``_partition`` and ``_deleted``
  (always false here: deletes are applied by the caller) are produced when the projected
  schema holds their reserved field ids (:mod:`icepark.spec.metadata_columns`).

A row filter (bound to the table schema) is evaluated against the file's own columns with
SQL null semantics (see :mod:`icepark.arrow.expressions`): Parquet row groups whose
statistics rule it out are skipped, and the remaining rows are filtered. ``_pos`` is always
the row's position in the file, whatever was skipped or filtered out. Memory use is bounded
by a row group's (Avro: a batch's, ORC: a stripe's) worth of the selected columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from icepark.arrow._projection import (
    Const,
    MetaValues,
    Node,
    Planner,
    Pos,
    Read,
    StructNode,
    project,
)
from icepark.arrow.avro_reader import AvroDataFile, plan_selection
from icepark.arrow.expressions import storage_type, to_arrow_expression, to_arrow_scalar
from icepark.arrow.file_layout import FileColumn, file_layout, file_schema_with_ids, index_file
from icepark.arrow.orc_reader import OrcDataFile
from icepark.arrow.read_errors import typed_read_errors
from icepark.arrow.schema import (
    schema_to_arrow,
    type_to_arrow,
)
from icepark.errors import (
    InvalidValueError,
    NoSuchFileError,
    UnsupportedOperationError,
    ValidationError,
)
from icepark.expressions import AlwaysFalse, AlwaysTrue, Expression
from icepark.io.fileio import FileIO
from icepark.spec.manifests import DataFile, FileFormat
from icepark.spec.metadata_columns import (
    FILE_PATH_FIELD_ID,
    POS_FIELD,
    POS_FIELD_ID,
    SPEC_ID_FIELD_ID,
)
from icepark.spec.name_mapping import NameMapping
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import IdentityTransform
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    UUIDType,
)

if TYPE_CHECKING:
    import pyarrow.dataset as ds

__all__ = ["DEFAULT_BATCH_SIZE", "read_data_file", "read_file_table", "file_schema_with_ids"]

DEFAULT_BATCH_SIZE = 131072

_POS_COLUMN = "__icepark_pos__"
_SMALL_FILE_BYTES = 1 << 20  # below: no pre-buffering (local files) and one thread a file
_PRE_BUFFER_BYTES = 8 << 20  # a local file's chosen column chunks pre-buffered at most
_BUFFER_SIZE = 1 << 20  # else: the buffer of each column's stream


def read_data_file(
    io: FileIO,
    data_file: DataFile,
    *,
    projected_schema: Schema,
    table_schema: Schema,
    partition_spec: PartitionSpec | None,
    row_filter: Expression | None,
    name_mapping: NameMapping | None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    include_positions: bool = False,
    start: int = 0,
    length: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of a data file as batches of ``schema_to_arrow(projected_schema)``.

    ``partition_spec`` is the spec of ``data_file.partition`` (``data_file.spec_id``); None
    for an unpartitioned file. ``row_filter`` is a bound expression (bound to
    ``table_schema``) or None; only matching rows are returned. With ``include_positions``
    a ``_pos`` column (:data:`~icepark.spec.metadata_columns.POS_FIELD`) is added at the end
    unless the projected schema has one, so that position deletes can be applied.
    Batches hold at most ``batch_size`` rows; empty batches are not returned. The file is
    opened on the first ``next()`` and closed when the iterator is exhausted or closed.

    ``start`` and ``length`` select a split of the file, as a scan task gives it: only the row
    groups (Avro blocks, ORC stripes) whose first byte (Java's ``getStartingPos``) lies in
    ``[start, start + length)`` are read (``length`` None: to the end of the file).
    """
    if batch_size < 1:
        raise ValidationError(f"batch_size must be positive: {batch_size}")
    read = _FORMAT_READERS.get(data_file.file_format)
    if read is None:
        raise UnsupportedOperationError(
            f"Cannot read {data_file.file_format} data file {data_file.file_path}: "
            "only Parquet, Avro and ORC data files are supported"
        )
    output = projected_schema
    if include_positions and output.field_or_none(POS_FIELD_ID) is None:
        output = Schema(*output.fields, POS_FIELD, schema_id=output.schema_id)
    filter_expr = None if row_filter is None or isinstance(row_filter, AlwaysTrue) else row_filter
    if isinstance(filter_expr, AlwaysFalse):
        return iter(())
    split = (start, None if length is None else start + length)
    batches = read(
        io,
        data_file,
        output,
        table_schema,
        partition_spec,
        filter_expr,
        name_mapping,
        batch_size,
        split,
    )
    return typed_read_errors(io, data_file, batches)


# -- reading -----------------------------------------------------------------------------------


def read_file_table(
    io: FileIO,
    data_file: DataFile,
    schema: Schema,
    *,
    table_schema: Schema | None = None,
    name_mapping: NameMapping | None = None,
) -> pa.Table:
    """Every row of one file (a delete file, a file of rows icepark wrote) as one Arrow table
    of ``schema``: :func:`read_data_file` with no partition and no filter, ``table_schema``
    defaulting to ``schema``."""
    batches = read_data_file(
        io,
        data_file,
        projected_schema=schema,
        table_schema=table_schema or schema,
        partition_spec=None,
        row_filter=None,
        name_mapping=name_mapping,
    )
    return pa.Table.from_batches(list(batches), schema=schema_to_arrow(schema))


def _type_at(schema: pa.Schema, path: tuple[str, ...]) -> pa.DataType:
    t: pa.DataType = schema.field(path[0]).type
    for name in path[1:]:
        t = t.field(name).type
    return t


class _Reader:
    def __init__(
        self,
        data_file: DataFile,
        output: Schema,
        table_schema: Schema,
        spec: PartitionSpec | None,
    ) -> None:
        self.data_file = data_file
        self.location = data_file.file_path
        self.table_schema = table_schema
        self.spec = spec
        self.output = output
        self.target = schema_to_arrow(output)
        self.constants = self._identity_constants()

    def _identity_constants(self) -> dict[int, tuple[Any, IcebergType]]:
        spec, partition = self.spec, self.data_file.partition
        if spec is None:
            return {}
        if len(partition) != len(spec.fields):
            raise ValidationError(
                f"Data file {self.location} has {len(partition)} partition values, but "
                f"partition spec {spec.spec_id} has {len(spec.fields)} fields"
            )
        constants: dict[int, tuple[Any, IcebergType]] = {}
        for pf, value in zip(spec.fields, partition):
            source = self.table_schema.field_or_none(pf.source_id)
            if isinstance(pf.transform, IdentityTransform) and source is not None:
                constants[pf.source_id] = (value, source.field_type)
        return constants

    # -- filter columns --

    def filter_column(
        self,
        field_id: int,
        schema: pa.Schema,
        index: dict[int, FileColumn],
        used: set[tuple[str, ...]],
    ) -> pc.Expression:
        """The expression of a filter column over a file (or batch) with ``schema``; the
        file columns it reads are added to ``used``."""
        if field_id == FILE_PATH_FIELD_ID:
            return pc.scalar(self.location)
        if field_id == SPEC_ID_FIELD_ID:
            return pc.scalar(pa.scalar(self._spec_id(), pa.int32()))
        field = self.table_schema.find_field(field_id)
        column = index.get(field_id)
        if column is not None:
            if column.repeated:
                raise ValidationError(
                    f"Cannot filter on field {field.name!r}: it is inside a list or a map"
                )
            used.add(column.path)
            expr = pc.field(*column.path)
            target = type_to_arrow(field.field_type)
            actual = _type_at(schema, column.path)
            if isinstance(field.field_type, UUIDType | StructType | ListType | MapType):
                return expr
            return expr if actual.equals(target) else expr.cast(target)
        return self._missing_filter_column(field, index, used)

    def _missing_filter_column(
        self, field: NestedField, index: dict[int, FileColumn], used: set[tuple[str, ...]]
    ) -> pc.Expression:
        storage = storage_type(type_to_arrow(field.field_type))
        null = pc.scalar(pa.scalar(None, storage))
        if field.field_id in self.constants:
            value, value_type = self.constants[field.field_id]
            return null if value is None else pc.scalar(to_arrow_scalar(value, value_type, storage))
        value = field.initial_default
        parent = self.table_schema.parent_id(field.field_id)
        while parent is not None and parent not in index:
            # a missing struct on the path: its own default decides whether it is null
            if self.table_schema.find_field(parent).initial_default is None:
                return null
            parent = self.table_schema.parent_id(parent)
        if value is None:
            return null
        scalar = pc.scalar(to_arrow_scalar(value, field.field_type, storage))
        if parent is None:
            return scalar
        used.add(index[parent].path)
        present = pc.field(*index[parent].path).is_valid()
        return pc.if_else(present, scalar, null)

    def _spec_id(self) -> int:
        return self.spec.spec_id if self.spec is not None else self.data_file.spec_id

    def meta_values(self) -> MetaValues:
        return MetaValues(self.location, self._spec_id(), self.spec, self.data_file.partition)


def _read_parquet(
    io: FileIO,
    data_file: DataFile,
    output: Schema,
    table_schema: Schema,
    spec: PartitionSpec | None,
    row_filter: Expression | None,
    name_mapping: NameMapping | None,
    batch_size: int,
    split: tuple[int, int | None],
) -> Iterator[pa.RecordBatch]:
    reader = _Reader(data_file, output, table_schema, spec)
    location = data_file.file_path
    with _open(io, location) as opened:
        fragment = opened.fragment() if row_filter is not None else None
        # pre_buffer: the column chunks of the row groups read are fetched in coalesced
        # reads, in parallel, and held until the file is read (on local disks ~20% faster
        # for a few columns; on S3 far fewer requests). A small local file is read faster
        # without it and on one thread: 0.12 ms against 0.26 ms for a 3 KB file, where the
        # threads' hand-offs are the cost. A local file whose chosen chunks are large is
        # read through buffered streams instead (see _pre_buffered).
        small = data_file.file_size_in_bytes < _SMALL_FILE_BYTES
        local = opened.is_local
        pf = pq.ParquetFile(
            opened.source(),
            metadata=fragment.metadata if fragment is not None else None,
            pre_buffer=not local,
            buffer_size=_BUFFER_SIZE if local and not small else 0,
        )
        layout = file_layout(pf.schema_arrow, name_mapping, location)
        index = layout.index
        planner = Planner(location, reader.constants)
        plan = layout.plan(planner, output, reader.target, reader.meta_values())
        row_groups = _row_groups_in_split(pf.metadata, split)
        row_expr: pc.Expression | None = None
        filter_paths: set[tuple[str, ...]] = set()
        if row_filter is not None and fragment is not None:
            phys = fragment.physical_schema
            prune_expr = to_arrow_expression(
                row_filter,
                lambda fid: reader.filter_column(fid, phys, index, set()),
                for_pruning=True,
            )
            kept = {f.row_groups[0].id for f in fragment.split_by_row_group(prune_expr)}
            row_groups = [rg for rg in row_groups if rg in kept]
            batch_schema = pf.schema_arrow
            row_expr = to_arrow_expression(
                row_filter,
                lambda fid: reader.filter_column(fid, batch_schema, index, filter_paths),
            )
        columns = _read_paths(plan, filter_paths)
        if local and not small and _pre_buffered(pf.metadata, row_groups, columns):
            pf = pq.ParquetFile(opened.source(), metadata=pf.metadata, pre_buffer=True)
        starts = _row_group_starts(pf.metadata)

        def batches() -> Iterator[tuple[int, pa.RecordBatch]]:
            for run in _runs(row_groups):
                offset = starts[run[0]]
                for batch in pf.iter_batches(
                    batch_size=batch_size, row_groups=run, columns=columns, use_threads=not small
                ):
                    yield offset, batch
                    offset += batch.num_rows

        yield from _finish(batches(), reader.target, plan, row_expr, batch_size, location)


def _pre_buffered(metadata: pq.FileMetaData, row_groups: list[int], columns: list[str]) -> bool:
    """Whether a local file is read pre-buffered: when the chunks of ``columns`` in
    ``row_groups`` hold at most :data:`_PRE_BUFFER_BYTES` (compressed). Pre-buffering holds
    every chosen chunk of the row groups read at once, so a file of large row groups read
    whole (the 100M-row bench table's files: 29 MB of a 64-character string column in one
    row group) would hold each file's data twice, compressed and decoded, while two files
    are read at once; buffered streams hold :data:`_BUFFER_SIZE` per column and read as fast
    from local disk (the same CPU time, measured; the peak RSS of a process streaming the
    100M rows twice went from 425-451 MB to 347-356 MB)."""
    schema = metadata.schema
    chosen, prefixes = set(columns), tuple(f"{c}." for c in columns)
    leaves = [
        j
        for j in range(metadata.num_columns)
        if (path := schema.column(j).path) in chosen or path.startswith(prefixes)
    ]
    total = 0
    for rg in row_groups:
        group = metadata.row_group(rg)
        total += sum(group.column(j).total_compressed_size for j in leaves)
        if total > _PRE_BUFFER_BYTES:
            return False
    return True


def _finish(
    batches: Iterator[tuple[int, pa.RecordBatch]],
    target: pa.Schema,
    plan: list[Read | Const | Pos],
    row_expr: pc.Expression | None,
    batch_size: int,
    location: str,
) -> Iterator[pa.RecordBatch]:
    """Batches of file columns (each with the file position of its first row) filtered by
    ``row_expr`` and projected to ``target``."""
    positions = _Positions(batch_size) if any(isinstance(p, Pos) for p in plan) else None
    for offset, file_batch in batches:
        batch = file_batch
        n = batch.num_rows
        pos = positions.at(offset, n) if positions is not None else None
        if row_expr is not None:
            if pos is not None:
                batch = batch.append_column(_POS_COLUMN, pos)
            batch = batch.filter(row_expr)
            pos = batch.column(_POS_COLUMN) if pos is not None else None
        if batch.num_rows == 0:
            continue
        yield _assemble(target, plan, batch, pos, location)


def _read_avro(
    io: FileIO,
    data_file: DataFile,
    output: Schema,
    table_schema: Schema,
    spec: PartitionSpec | None,
    row_filter: Expression | None,
    name_mapping: NameMapping | None,
    batch_size: int,
    split: tuple[int, int | None],
) -> Iterator[pa.RecordBatch]:
    reader = _Reader(data_file, output, table_schema, spec)
    location = data_file.file_path
    with AvroDataFile(io, location, name_mapping) as avro:
        file_schema = avro.arrow_schema
        plan, row_expr, filter_paths = _plan(reader, file_schema, row_filter)
        selection = plan_selection(plan, file_schema, filter_paths)
        batches = avro.batches(selection, batch_size, split[0], split[1])
        yield from _finish(batches, reader.target, plan, row_expr, batch_size, location)


def _read_orc(
    io: FileIO,
    data_file: DataFile,
    output: Schema,
    table_schema: Schema,
    spec: PartitionSpec | None,
    row_filter: Expression | None,
    name_mapping: NameMapping | None,
    batch_size: int,
    split: tuple[int, int | None],
) -> Iterator[pa.RecordBatch]:
    reader = _Reader(data_file, output, table_schema, spec)
    location = data_file.file_path
    with OrcDataFile(io, location, name_mapping) as orc:
        file_schema = orc.arrow_schema
        plan, row_expr, filter_paths = _plan(reader, file_schema, row_filter)
        columns = _read_paths(plan, filter_paths)
        batches = orc.batches(columns, batch_size, split[0], split[1], data_file.split_offsets)
        yield from _finish(batches, reader.target, plan, row_expr, batch_size, location)


def _plan(
    reader: _Reader, file_schema: pa.Schema, row_filter: Expression | None
) -> tuple[list[Read | Const | Pos], pc.Expression | None, set[tuple[str, ...]]]:
    """The projection plan over a file's columns, the filter over them and the column paths
    the filter reads."""
    index = index_file(file_schema, reader.location)
    planner = Planner(reader.location, reader.constants)
    plan = planner.top(reader.output, reader.target, file_schema, reader.meta_values())
    filter_paths: set[tuple[str, ...]] = set()
    row_expr = None
    if row_filter is not None:
        row_expr = to_arrow_expression(
            row_filter,
            lambda fid: reader.filter_column(fid, file_schema, index, filter_paths),
        )
    return plan, row_expr, filter_paths


_FORMAT_READERS = {
    FileFormat.PARQUET: _read_parquet,
    FileFormat.AVRO: _read_avro,
    FileFormat.ORC: _read_orc,
}


def _assemble(
    target: pa.Schema,
    plan: list[Read | Const | Pos],
    batch: pa.RecordBatch,
    pos: pa.Array | None,
    location: str,
) -> pa.RecordBatch:
    n = batch.num_rows
    arrays: list[pa.Array] = []
    try:
        for item in plan:
            if isinstance(item, Read):
                arrays.append(project(batch.column(item.name), item.node))
            elif isinstance(item, Const):
                arrays.append(item.array(n))
            else:
                assert pos is not None
                arrays.append(pos)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InvalidValueError(f"Cannot read data file {location}: {e}") from e
    if not arrays:  # no column projected (a count): keep the row count
        return batch.select([]).replace_schema_metadata(target.metadata)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _read_paths(plan: list[Read | Const | Pos], filter_paths: set[tuple[str, ...]]) -> list[str]:
    """The Parquet column paths to read: struct fields are pruned to what is used, lists,
    maps and names holding dots are read whole."""
    paths: set[tuple[str, ...]] = set()

    def collect(prefix: tuple[str, ...], node: Node) -> None:
        reads = (
            [c for c in node.children if isinstance(c, Read)]
            if isinstance(node, StructNode)
            else []
        )
        if not isinstance(node, StructNode) or not reads:
            paths.add(prefix)  # a leaf, a list or map, or a struct needed only for its nulls
            return
        for c in reads:
            collect((*prefix, c.name), c.node)

    for item in plan:
        if isinstance(item, Read):
            collect((item.name,), item.node)
    paths.update(filter_paths)
    cleaned = {p if not any("." in name for name in p) else p[:1] for p in paths}
    minimal = [p for p in cleaned if not any(q != p and p[: len(q)] == q for q in cleaned)]
    return [".".join(p) for p in sorted(minimal)]


def _row_groups_in_split(metadata: pq.FileMetaData, split: tuple[int, int | None]) -> list[int]:
    start, end = split
    if start <= 0 and end is None:
        return list(range(metadata.num_row_groups))
    out = []
    for i in range(metadata.num_row_groups):
        pos = _starting_pos(metadata.row_group(i))
        if pos >= start and (end is None or pos < end):
            out.append(i)
    return out


def _starting_pos(row_group: pq.RowGroupMetaData) -> int:
    """The offset of a row group's first page (its first column's dictionary page, if it has
    one before the first data page), as Java's ``BlockMetaData.getStartingPos``."""
    if row_group.num_columns == 0:
        return 0
    column = row_group.column(0)
    data = int(column.data_page_offset)
    dictionary = column.dictionary_page_offset
    if column.has_dictionary_page and dictionary is not None and 0 < dictionary < data:
        return int(dictionary)
    return data


def _row_group_starts(metadata: pq.FileMetaData) -> list[int]:
    starts, total = [], 0
    for i in range(metadata.num_row_groups):
        starts.append(total)
        total += metadata.row_group(i).num_rows
    return starts


def _runs(row_groups: list[int]) -> Iterator[list[int]]:
    run: list[int] = []
    for rg in row_groups:
        if run and rg != run[-1] + 1:
            yield run
            run = []
        run.append(rg)
    if run:
        yield run


class _Positions:
    """Row positions ``offset .. offset + n - 1`` as int64 arrays, without Python loops."""

    def __init__(self, size: int) -> None:
        self._base = self._make(size)

    @staticmethod
    def _make(size: int) -> pa.Array:
        ones = pa.repeat(pa.scalar(1, pa.int64()), size)
        return pc.subtract(pc.cumulative_sum(ones), pa.scalar(1, pa.int64()))

    def at(self, offset: int, n: int) -> pa.Array:
        if n > len(self._base):
            self._base = self._make(n)
        return pc.add(self._base.slice(0, n), pa.scalar(offset, pa.int64()))


class _Opened:
    """An open data file (one random access handle, opened on first use) for ParquetFile
    and for the dataset fragment used to prune row groups."""

    def __init__(self, io: FileIO, location: str) -> None:
        self._io = io
        self._location = location
        self._handle: Any = None
        try:
            self._fs, self._path = io.filesystem(location)
        except NotImplementedError:  # a FileIO not built on pyarrow: use its streams
            self._fs, self._path = None, location

    @property
    def is_local(self) -> bool:
        """Whether the file is on a local file system."""
        return isinstance(self._fs, pafs.LocalFileSystem)

    def source(self) -> Any:
        if self._handle is None:
            try:
                if self._fs is not None:
                    self._handle = self._fs.open_input_file(self._path)
                else:
                    stream = self._io.new_input(self._location).open()
                    self._handle = pa.PythonFile(stream, mode="r")
            except FileNotFoundError as e:
                raise NoSuchFileError(f"Data file not found: {self._location}") from e
        return self._handle

    def fragment(self) -> ds.ParquetFileFragment:
        """A fragment of the whole file, with its footer read (for row group pruning)."""
        # imported here: pyarrow.dataset imports pandas (~0.3 s), which unfiltered reads and
        # planning never need
        import pyarrow.dataset as ds

        frag = ds.ParquetFileFormat().make_fragment(self.source())
        frag.ensure_complete_metadata()
        return frag

    def __enter__(self) -> _Opened:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.close()


def _open(io: FileIO, location: str) -> _Opened:
    return _Opened(io, location)
