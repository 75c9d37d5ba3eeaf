"""Reading data files into Arrow record batches of a projected Iceberg schema.

:func:`read_data_file` streams one Parquet data file as batches whose schema is exactly
``schema_to_arrow(projected_schema)``, following the spec's "Column Projection":

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
SQL null semantics (see :mod:`icepark.arrow.expressions`): row groups whose statistics rule
it out are skipped, and the remaining rows are filtered. ``_pos`` is always the row's
position in the file, whatever was skipped or filtered out. Memory use is bounded by a row
group's worth of the selected columns, not by the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from icepark.arrow.expressions import storage_type, to_arrow_expression, to_arrow_scalar
from icepark.arrow.schema import (
    apply_name_mapping,
    field_id_of,
    primitive_from_arrow,
    schema_to_arrow,
    type_to_arrow,
)
from icepark.errors import (
    InvalidSchemaError,
    InvalidValueError,
    NoSuchFileError,
    UnsupportedOperationError,
    ValidationError,
)
from icepark.expressions import AlwaysFalse, AlwaysTrue, Expression
from icepark.io.fileio import FileIO
from icepark.manifest.models import DataFile, FileFormat
from icepark.spec.metadata_columns import (
    FILE_PATH_FIELD_ID,
    IS_DELETED_FIELD_ID,
    PARTITION_FIELD_ID,
    POS_FIELD,
    POS_FIELD_ID,
    SPEC_ID_FIELD_ID,
)
from icepark.spec.name_mapping import NameMapping
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import IdentityTransform
from icepark.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    UnknownType,
    UUIDType,
)

__all__ = ["DEFAULT_BATCH_SIZE", "read_data_file", "file_schema_with_ids"]

DEFAULT_BATCH_SIZE = 131072

_META_IDS = frozenset(
    {FILE_PATH_FIELD_ID, POS_FIELD_ID, SPEC_ID_FIELD_ID, PARTITION_FIELD_ID, IS_DELETED_FIELD_ID}
)
_POS_COLUMN = "__icepark_pos__"


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
) -> Iterator[pa.RecordBatch]:
    """The rows of a Parquet data file as batches of ``schema_to_arrow(projected_schema)``.

    ``partition_spec`` is the spec of ``data_file.partition`` (``data_file.spec_id``); None
    for an unpartitioned file. ``row_filter`` is a bound expression (bound to
    ``table_schema``) or None; only matching rows are returned. With ``include_positions``
    a ``_pos`` column (:data:`~icepark.spec.metadata_columns.POS_FIELD`) is added at the end
    unless the projected schema has one, so that position deletes can be applied.
    Batches hold at most ``batch_size`` rows; empty batches are not returned. The file is
    opened on the first ``next()`` and closed when the iterator is exhausted or closed.
    """
    if batch_size < 1:
        raise ValidationError(f"batch_size must be positive: {batch_size}")
    if data_file.file_format != FileFormat.PARQUET:
        raise UnsupportedOperationError(
            f"Cannot read {data_file.file_format} data file {data_file.file_path}: "
            "only Parquet data files are supported"
        )
    output = projected_schema
    if include_positions and output.field_or_none(POS_FIELD_ID) is None:
        output = Schema(*output.fields, POS_FIELD, schema_id=output.schema_id)
    filter_expr = None if row_filter is None or isinstance(row_filter, AlwaysTrue) else row_filter
    if isinstance(filter_expr, AlwaysFalse):
        return iter(())
    return _read_parquet(
        io, data_file, output, table_schema, partition_spec, filter_expr, name_mapping, batch_size
    )


def file_schema_with_ids(
    arrow_schema: pa.Schema, name_mapping: NameMapping | None, location: str
) -> pa.Schema:
    """A data file's Arrow schema with field ids: as it is when any field has an id, else
    with ids from ``name_mapping``; a file without ids and without a mapping is an error."""
    if _has_ids(arrow_schema):
        return arrow_schema
    if name_mapping is None:
        raise InvalidSchemaError(
            f"Data file {location} has no field ids and no name mapping was given to read it "
            "(set the table property schema.name-mapping.default)"
        )
    return apply_name_mapping(arrow_schema, name_mapping)


def _has_ids(schema: pa.Schema) -> bool:
    def walk(f: pa.Field) -> bool:
        if field_id_of(f) is not None:
            return True
        return any(walk(c) for c in _child_fields(f.type))

    return any(walk(f) for f in schema)


def _child_fields(t: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(t):
        return list(t)
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if _is_list_like(t):
        return [t.value_field]
    return []


def _is_list_like(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


# -- projection plan ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Const:
    """A column the file lacks: one value (or null) for every row."""

    scalar: pa.Scalar | None  # of storage_type(arrow_type); None for null
    arrow_type: pa.DataType

    def array(self, length: int) -> pa.Array:
        storage = storage_type(self.arrow_type)
        if self.scalar is None:
            arr = pa.nulls(length, storage)
        else:
            arr = pa.repeat(self.scalar, length)
        return arr if arr.type.equals(self.arrow_type, check_metadata=True) else arr.cast(
            self.arrow_type
        )


@dataclass(frozen=True)
class _Prim:
    arrow_type: pa.DataType


@dataclass(frozen=True)
class _Struct:
    arrow_type: pa.StructType
    children: tuple[_Read | _Const, ...]


@dataclass(frozen=True)
class _List:
    arrow_type: pa.ListType
    element: _Node


@dataclass(frozen=True)
class _Map:
    arrow_type: pa.MapType
    key: _Node
    value: _Node


_Node = _Prim | _Struct | _List | _Map


@dataclass(frozen=True)
class _Read:
    """A column read from the file (by the name it has there) and projected by ``node``."""

    name: str
    node: _Node


@dataclass(frozen=True)
class _Pos:
    """The ``_pos`` metadata column."""


@dataclass(frozen=True)
class _MetaValues:
    """The values of the constant metadata columns for one data file."""

    file_path: str
    spec_id: int
    spec: PartitionSpec | None
    partition: tuple[Any, ...]

    def constant(self, f: NestedField, arrow_type: pa.DataType) -> _Const:
        value: Any
        if f.field_id == FILE_PATH_FIELD_ID:
            value = self.file_path
        elif f.field_id == SPEC_ID_FIELD_ID:
            value = self.spec_id
        elif f.field_id == IS_DELETED_FIELD_ID:
            value = False
        else:  # _partition: by partition field id, null for fields not in the file's spec
            by_id: dict[int, Any] = {}
            if self.spec is not None:
                by_id = {pf.field_id: v for pf, v in zip(self.spec.fields, self.partition)}
            if not isinstance(f.field_type, StructType):
                raise InvalidSchemaError(f"The _partition column must be a struct: {f}")
            value = {c.field_id: by_id.get(c.field_id) for c in f.field_type.fields}
        return _Const(to_arrow_scalar(value, f.field_type, arrow_type), arrow_type)


class _Planner:
    """Matches the projected schema to the file's columns by id and builds the plan."""

    def __init__(self, location: str, constants: dict[int, tuple[Any, IcebergType]]) -> None:
        self.location = location
        self.constants = constants

    def top(
        self, output: Schema, target: pa.Schema, file_schema: pa.Schema, meta: _MetaValues
    ) -> list[_Read | _Const | _Pos]:
        plan: list[_Read | _Const | _Pos] = []
        by_id = _by_id(list(file_schema))
        for f, tf in zip(output.fields, target):
            if f.field_id == POS_FIELD_ID:
                plan.append(_Pos())
            elif f.field_id in _META_IDS:
                plan.append(meta.constant(f, tf.type))
            else:
                plan.append(self._child(f, tf, by_id, f.name))
        return plan

    def _child(
        self, f: NestedField, tf: pa.Field, by_id: dict[int, pa.Field], path: str
    ) -> _Read | _Const:
        file_field = by_id.get(f.field_id)
        if file_field is None or isinstance(f.field_type, UnknownType):
            return self._missing(f, tf, path)
        return _Read(file_field.name, self._node(f.field_type, tf.type, file_field, path))

    def _missing(self, f: NestedField, tf: pa.Field, path: str) -> _Const:
        if f.field_id in self.constants:
            value, value_type = self.constants[f.field_id]
        else:
            value, value_type = f.initial_default, f.field_type
            if value is None and f.required and not isinstance(f.field_type, UnknownType):
                raise InvalidSchemaError(
                    f"Missing required field {path!r} (id {f.field_id}) in data file "
                    f"{self.location}, and it has no initial default"
                )
        scalar = None if value is None else to_arrow_scalar(value, value_type, tf.type)
        return _Const(scalar, tf.type)

    def _node(self, t: IcebergType, target: pa.DataType, file_field: pa.Field, path: str) -> _Node:
        ft = file_field.type
        if pa.types.is_dictionary(ft):
            ft = ft.value_type
        if isinstance(t, StructType):
            if not pa.types.is_struct(ft):
                raise self._mismatch(path, t, ft)
            by_id = _by_id(list(ft))
            children = tuple(
                self._child(c, tc, by_id, f"{path}.{c.name}") for c, tc in zip(t.fields, target)
            )
            return _Struct(target, children)
        if isinstance(t, ListType):
            if not _is_list_like(ft):
                raise self._mismatch(path, t, ft)
            element = self._nested(t.element_id, ft.value_field, path, "element")
            return _List(
                target, self._node(t.element_type, target.value_type, element, f"{path}.element")
            )
        if isinstance(t, MapType):
            if not pa.types.is_map(ft):
                raise self._mismatch(path, t, ft)
            key = self._nested(t.key_id, ft.key_field, path, "key")
            value = self._nested(t.value_id, ft.item_field, path, "value")
            return _Map(
                target,
                self._node(t.key_type, target.key_type, key, f"{path}.key"),
                self._node(t.value_type, target.item_type, value, f"{path}.value"),
            )
        assert isinstance(t, PrimitiveType)
        if _is_list_like(ft) or pa.types.is_struct(ft) or pa.types.is_map(ft):
            raise self._mismatch(path, t, ft)
        try:
            file_type = primitive_from_arrow(ft)
        except InvalidSchemaError as e:
            raise InvalidSchemaError(f"Column {path!r} of data file {self.location}: {e}") from e
        if not _readable_as(file_type, t):
            raise InvalidSchemaError(
                f"Cannot read column {path!r} of data file {self.location} as {t}: "
                f"the file holds {file_type}"
            )
        return _Prim(target)

    def _nested(self, expected_id: int, file_field: pa.Field, path: str, what: str) -> pa.Field:
        found = field_id_of(file_field)
        if found != expected_id:
            raise InvalidSchemaError(
                f"The {what} of column {path!r} in data file {self.location} has field id "
                f"{found}, the table expects {expected_id}"
            )
        return file_field

    def _mismatch(self, path: str, t: IcebergType, ft: pa.DataType) -> InvalidSchemaError:
        return InvalidSchemaError(
            f"Cannot read column {path!r} of data file {self.location} as {t}: "
            f"the file holds Arrow type {ft}"
        )


def _by_id(fields: list[pa.Field]) -> dict[int, pa.Field]:
    out: dict[int, pa.Field] = {}
    for f in fields:
        fid = field_id_of(f)
        if fid is not None:
            out.setdefault(fid, f)
    return out


_TIMESTAMPS = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)


def _readable_as(file_type: PrimitiveType, expected: PrimitiveType) -> bool:
    """Whether a file column of ``file_type`` may be read as ``expected`` (type promotion,
    plus the Parquet variants Java reads too: INT96 and ms/ns timestamps, UTC adjustment,
    fixed[16] for uuid, binary for string)."""
    if file_type == expected:
        return True
    if isinstance(expected, LongType):
        return isinstance(file_type, IntegerType)
    if isinstance(expected, DoubleType):
        return isinstance(file_type, FloatType)
    if isinstance(expected, DecimalType):
        return (
            isinstance(file_type, DecimalType)
            and file_type.scale == expected.scale
            and file_type.precision <= expected.precision
        )
    if isinstance(expected, _TIMESTAMPS):
        return isinstance(file_type, DateType | TimestampType | TimestamptzType) or (
            isinstance(file_type, TimestampNanoType | TimestamptzNanoType)
        )
    if isinstance(expected, UUIDType):
        return isinstance(file_type, FixedType) and file_type.length == 16
    if isinstance(expected, StringType):
        return isinstance(file_type, BinaryType)
    return False


# -- projecting batches ------------------------------------------------------------------------

_TRUNCATING_CAST = {"allow_time_truncate": True}


def _cast(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if arr.type.equals(target, check_metadata=True):
        return arr
    if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target):
        # INT96 / nanosecond files read as microseconds: Java truncates the same way
        return pc.cast(arr, options=pc.CastOptions(target, **_TRUNCATING_CAST))
    return arr.cast(target)


def _project(arr: pa.Array, node: _Node) -> pa.Array:
    if isinstance(arr, pa.DictionaryArray):
        arr = arr.dictionary_decode()
    if isinstance(node, _Prim):
        return _cast(arr, node.arrow_type)
    mask = arr.is_null() if arr.null_count else None
    if isinstance(node, _Struct):
        children = [
            _project(arr.field(c.name), c.node) if isinstance(c, _Read) else c.array(len(arr))
            for c in node.children
        ]
        return pa.StructArray.from_arrays(children, fields=list(node.arrow_type), mask=mask)
    if isinstance(node, _List):
        if not pa.types.is_list(arr.type):
            arr = arr.cast(pa.list_(arr.type.value_field))
        offsets, values = _rebased(arr.offsets, arr.values)
        elements = _project(values, node.element)
        return pa.ListArray.from_arrays(offsets, elements, type=node.arrow_type, mask=mask)
    offsets, entries = _rebased(arr.offsets, arr.values)
    return pa.MapArray.from_arrays(
        offsets,
        _project(entries.field(0), node.key),
        _project(entries.field(1), node.value),
        type=node.arrow_type,
        mask=mask,
    )


def _rebased(offsets: pa.Array, values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Offsets starting at 0 (a fresh array) and the slice of values they cover."""
    if len(offsets) == 0:
        return pa.array([0], pa.int32()), values.slice(0, 0)
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    fresh = pc.subtract(offsets, pa.scalar(start, offsets.type))
    return fresh, values.slice(start, end - start)


# -- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FileColumn:
    path: tuple[str, ...]
    repeated: bool  # inside a list or map: cannot be filtered on


def _index_file(schema: pa.Schema) -> dict[int, _FileColumn]:
    out: dict[int, _FileColumn] = {}

    def walk(f: pa.Field, path: tuple[str, ...], repeated: bool) -> None:
        fid = field_id_of(f)
        if fid is not None:
            out.setdefault(fid, _FileColumn(path, repeated))
        t = f.type
        if pa.types.is_struct(t):
            for c in t:
                walk(c, (*path, c.name), repeated)
        else:
            for c in _child_fields(t):
                walk(c, (*path, c.name), True)

    for f in schema:
        walk(f, (f.name,), False)
    return out


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
        row_filter: Expression | None,
        batch_size: int,
    ) -> None:
        self.data_file = data_file
        self.location = data_file.file_path
        self.output = output
        self.table_schema = table_schema
        self.spec = spec
        self.row_filter = row_filter
        self.batch_size = batch_size
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
        self, field_id: int, schema: pa.Schema, index: dict[int, _FileColumn]
    ) -> pc.Expression:
        """The expression of a filter column over a file (or batch) with ``schema``."""
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
            expr = pc.field(*column.path)
            target = type_to_arrow(field.field_type)
            actual = _type_at(schema, column.path)
            if isinstance(field.field_type, UUIDType | StructType | ListType | MapType):
                return expr
            return expr if actual.equals(target) else expr.cast(target)
        return self._missing_filter_column(field, index)

    def _missing_filter_column(
        self, field: NestedField, index: dict[int, _FileColumn]
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
        present = pc.field(*index[parent].path).is_valid()
        return pc.if_else(present, scalar, null)

    def _spec_id(self) -> int:
        return self.spec.spec_id if self.spec is not None else self.data_file.spec_id

    def meta_values(self) -> _MetaValues:
        return _MetaValues(
            self.location, self._spec_id(), self.spec, self.data_file.partition
        )


def _read_parquet(
    io: FileIO,
    data_file: DataFile,
    output: Schema,
    table_schema: Schema,
    spec: PartitionSpec | None,
    row_filter: Expression | None,
    name_mapping: NameMapping | None,
    batch_size: int,
) -> Iterator[pa.RecordBatch]:
    reader = _Reader(data_file, output, table_schema, spec, row_filter, batch_size)
    location = data_file.file_path
    with _open(io, location) as opened:
        fragment = opened.fragment() if row_filter is not None else None
        pf = pq.ParquetFile(
            opened.source(), metadata=fragment.metadata if fragment is not None else None
        )
        file_schema = file_schema_with_ids(pf.schema_arrow, name_mapping, location)
        index = _index_file(file_schema)
        planner = _Planner(location, reader.constants)
        plan = planner.top(output, reader.target, file_schema, reader.meta_values())
        row_groups = list(range(pf.metadata.num_row_groups))
        row_expr: pc.Expression | None = None
        filter_ids: set[int] = set()
        if row_filter is not None and fragment is not None:
            phys = fragment.physical_schema

            def prune_column(fid: int) -> pc.Expression:
                filter_ids.add(fid)
                return reader.filter_column(fid, phys, index)

            prune_expr = to_arrow_expression(row_filter, prune_column)
            row_groups = sorted(f.row_groups[0].id for f in fragment.split_by_row_group(prune_expr))
            batch_schema = pf.schema_arrow
            row_expr = to_arrow_expression(
                row_filter, lambda fid: reader.filter_column(fid, batch_schema, index)
            )
        columns = _read_paths(plan, [index[i].path for i in filter_ids if i in index])
        needs_pos = any(isinstance(p, _Pos) for p in plan)
        starts = _row_group_starts(pf.metadata)
        positions = _Positions(batch_size) if needs_pos else None
        for run in _runs(row_groups):
            offset = starts[run[0]]
            for batch in pf.iter_batches(
                batch_size=batch_size, row_groups=run, columns=columns, use_threads=True
            ):
                n = batch.num_rows
                pos = positions.at(offset, n) if positions is not None else None
                offset += n
                if row_expr is not None:
                    if pos is not None:
                        batch = batch.append_column(_POS_COLUMN, pos)
                    batch = batch.filter(row_expr)
                    pos = batch.column(_POS_COLUMN) if pos is not None else None
                if batch.num_rows == 0:
                    continue
                yield _assemble(reader.target, plan, batch, pos, location)


def _assemble(
    target: pa.Schema,
    plan: list[_Read | _Const | _Pos],
    batch: pa.RecordBatch,
    pos: pa.Array | None,
    location: str,
) -> pa.RecordBatch:
    n = batch.num_rows
    arrays: list[pa.Array] = []
    try:
        for item in plan:
            if isinstance(item, _Read):
                arrays.append(_project(batch.column(item.name), item.node))
            elif isinstance(item, _Const):
                arrays.append(item.array(n))
            else:
                assert pos is not None
                arrays.append(pos)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InvalidValueError(f"Cannot read data file {location}: {e}") from e
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _read_paths(plan: list[_Read | _Const | _Pos], filter_paths: list[tuple[str, ...]]) -> list[str]:
    """The Parquet column paths to read: struct fields are pruned to what is used, lists,
    maps and names holding dots are read whole."""
    paths: set[tuple[str, ...]] = set()

    def collect(prefix: tuple[str, ...], node: _Node) -> None:
        reads = [c for c in node.children if isinstance(c, _Read)] if isinstance(
            node, _Struct
        ) else []
        if not isinstance(node, _Struct) or not reads:
            paths.add(prefix)  # a leaf, a list or map, or a struct needed only for its nulls
            return
        for c in reads:
            collect((*prefix, c.name), c.node)

    for item in plan:
        if isinstance(item, _Read):
            collect((item.name,), item.node)
    paths.update(filter_paths)
    cleaned = {p if not any("." in name for name in p) else p[:1] for p in paths}
    minimal = [p for p in cleaned if not any(q != p and p[: len(q)] == q for q in cleaned)]
    return [".".join(p) for p in sorted(minimal)]


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
    """An open data file: the source ParquetFile reads, and a dataset fragment for pruning."""

    def __init__(self, io: FileIO, location: str) -> None:
        self._io = io
        self._location = location
        self._handles: list[Any] = []
        try:
            self._fs, self._path = io.filesystem(location)
        except NotImplementedError:
            self._fs, self._path = None, location

    def _open(self) -> Any:
        try:
            if self._fs is not None:
                handle = self._fs.open_input_file(self._path)
            else:
                handle = pa.PythonFile(self._io.new_input(self._location).open(), mode="r")
        except FileNotFoundError as e:
            raise NoSuchFileError(f"Data file not found: {self._location}") from e
        self._handles.append(handle)
        return handle

    def source(self) -> Any:
        return self._open()

    def fragment(self) -> ds.ParquetFileFragment:
        """A fragment of the whole file, with its footer read (for row group pruning)."""
        frag = ds.ParquetFileFormat().make_fragment(self._open())
        frag.ensure_complete_metadata()
        return frag

    def __enter__(self) -> _Opened:
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.close()


def _open(io: FileIO, location: str) -> _Opened:
    return _Opened(io, location)
