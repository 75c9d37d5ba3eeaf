"""The projection plan of a data file read: how each projected field is produced from the
file's columns (matched by field id), constants or metadata columns, and how a batch of file
columns is projected to the Arrow form of the projected schema. Used by
:mod:`icepark.arrow.reader`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.arrow.expressions import storage_type, to_arrow_scalar
from icepark.arrow.schema import field_id_of, primitive_from_arrow
from icepark.errors import InvalidSchemaError
from icepark.spec.metadata_columns import (
    FILE_PATH_FIELD_ID,
    IS_DELETED_FIELD_ID,
    PARTITION_FIELD_ID,
    POS_FIELD_ID,
    SPEC_ID_FIELD_ID,
)
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
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

__all__ = [
    "META_IDS",
    "Const",
    "Prim",
    "StructNode",
    "ListNode",
    "MapNode",
    "Node",
    "Read",
    "Pos",
    "MetaValues",
    "Planner",
    "project",
    "child_fields",
    "is_list_like",
]

META_IDS = frozenset(
    {FILE_PATH_FIELD_ID, POS_FIELD_ID, SPEC_ID_FIELD_ID, PARTITION_FIELD_ID, IS_DELETED_FIELD_ID}
)


def child_fields(t: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(t):
        return list(t)
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if is_list_like(t):
        return [t.value_field]
    return []


def is_list_like(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


# -- projection plan ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Const:
    """A column the file lacks: one value (or null) for every row."""

    scalar: pa.Scalar | None  # of storage_type(arrow_type); None for null
    arrow_type: pa.DataType

    def array(self, length: int) -> pa.Array:
        storage = storage_type(self.arrow_type)
        if self.scalar is None:
            arr = pa.nulls(length, storage)
        else:
            arr = pa.repeat(self.scalar, length)
        return (
            arr
            if arr.type.equals(self.arrow_type, check_metadata=True)
            else arr.cast(self.arrow_type)
        )


@dataclass(frozen=True)
class Prim:
    arrow_type: pa.DataType


@dataclass(frozen=True)
class StructNode:
    arrow_type: pa.StructType
    children: tuple[Read | Const, ...]


@dataclass(frozen=True)
class ListNode:
    arrow_type: pa.ListType
    element: Node


@dataclass(frozen=True)
class MapNode:
    arrow_type: pa.MapType
    key: Node
    value: Node


Node = Prim | StructNode | ListNode | MapNode


@dataclass(frozen=True)
class Read:
    """A column read from the file (by the name it has there) and projected by ``node``."""

    name: str
    node: Node


@dataclass(frozen=True)
class Pos:
    """The ``_pos`` metadata column."""


@dataclass(frozen=True)
class MetaValues:
    """The values of the constant metadata columns for one data file."""

    file_path: str
    spec_id: int
    spec: PartitionSpec | None
    partition: tuple[Any, ...]

    def constant(self, f: NestedField, arrow_type: pa.DataType) -> Const:
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
        return Const(to_arrow_scalar(value, f.field_type, arrow_type), arrow_type)


class Planner:
    """Matches the projected schema to the file's columns by id and builds the plan."""

    def __init__(self, location: str, constants: dict[int, tuple[Any, IcebergType]]) -> None:
        self.location = location
        self.constants = constants

    def top(
        self,
        output: Schema,
        target: pa.Schema,
        file_schema: pa.Schema,
        meta: MetaValues,
        known: Sequence[Read | None] = (),
    ) -> list[Read | Const | Pos]:
        """The plan of ``output`` (as ``target``) over a file with ``file_schema``; an item
        of ``known`` that is not None is taken as it is (a read planned over a file of the
        same schema)."""
        plan: list[Read | Const | Pos] = []
        by_id = _by_id(list(file_schema))
        for i, (f, tf) in enumerate(zip(output.fields, target)):
            item = known[i] if i < len(known) else None
            if item is not None:
                plan.append(item)
            elif f.field_id == POS_FIELD_ID:
                plan.append(Pos())
            elif f.field_id in META_IDS:
                plan.append(meta.constant(f, tf.type))
            else:
                plan.append(self._child(f, tf, by_id, f.name))
        return plan

    def _child(
        self, f: NestedField, tf: pa.Field, by_id: dict[int, pa.Field], path: str
    ) -> Read | Const:
        file_field = by_id.get(f.field_id)
        if file_field is None or isinstance(f.field_type, UnknownType):
            return self._missing(f, tf, path)
        return Read(file_field.name, self._node(f.field_type, tf.type, file_field, path))

    def _missing(self, f: NestedField, tf: pa.Field, path: str) -> Const:
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
        return Const(scalar, tf.type)

    def _node(self, t: IcebergType, target: pa.DataType, file_field: pa.Field, path: str) -> Node:
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
            return StructNode(target, children)
        if isinstance(t, ListType):
            if not is_list_like(ft):
                raise self._mismatch(path, t, ft)
            element = self._nested(t.element_id, ft.value_field, path, "element")
            return ListNode(
                target, self._node(t.element_type, target.value_type, element, f"{path}.element")
            )
        if isinstance(t, MapType):
            if not pa.types.is_map(ft):
                raise self._mismatch(path, t, ft)
            key = self._nested(t.key_id, ft.key_field, path, "key")
            value = self._nested(t.value_id, ft.item_field, path, "value")
            return MapNode(
                target,
                self._node(t.key_type, target.key_type, key, f"{path}.key"),
                self._node(t.value_type, target.item_type, value, f"{path}.value"),
            )
        assert isinstance(t, PrimitiveType)
        if is_list_like(ft) or pa.types.is_struct(ft) or pa.types.is_map(ft):
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
        return Prim(target)

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
    """Whether a file column of ``file_type`` may be read as ``expected``: the spec's type
    promotions, plus the Parquet variants Java reads too (INT96 / nanosecond timestamps as
    microseconds, either UTC adjustment, fixed[16] as uuid, binary as string)."""
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
        if isinstance(file_type, DateType):  # v3: date -> timestamp(_ns), never to tz types
            return isinstance(expected, TimestampType | TimestampNanoType)
        return isinstance(file_type, _TIMESTAMPS)
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


def project(arr: pa.Array, node: Node) -> pa.Array:
    if isinstance(arr, pa.DictionaryArray):
        arr = arr.dictionary_decode()
    if isinstance(node, Prim):
        return _cast(arr, node.arrow_type)
    mask = arr.is_null() if arr.null_count else None
    if isinstance(node, StructNode):
        children = [
            project(arr.field(c.name), c.node) if isinstance(c, Read) else c.array(len(arr))
            for c in node.children
        ]
        return pa.StructArray.from_arrays(children, fields=list(node.arrow_type), mask=mask)
    if isinstance(node, ListNode):
        if not pa.types.is_list(arr.type):
            arr = arr.cast(pa.list_(arr.type.value_field))
        offsets, values = _rebased(arr.offsets, arr.values)
        elements = project(values, node.element)
        return pa.ListArray.from_arrays(offsets, elements, type=node.arrow_type, mask=mask)
    offsets, entries = _rebased(arr.offsets, arr.values)
    return pa.MapArray.from_arrays(
        offsets,
        project(entries.field(0), node.key),
        project(entries.field(1), node.value),
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
