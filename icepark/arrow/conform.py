"""Matching user data to a table schema before it is written.

A user's Arrow data usually has no field ids, so columns are matched to the table's fields BY
NAME (struct fields too; list elements, map keys and values by position). Then every column is
cast to the type icepark writes for its field (:func:`icepark.arrow.schema.schema_to_arrow`),
so that each Parquet field carries its id. What is accepted for each Iceberg type:

=================  ==========================================================================
boolean            bool (``arrow.bool8`` too)
int                int8, int16, int32, uint8, uint16
long               any signed int, uint8/16/32 (uint64 when every value fits)
float / double     float16/32 / float16/32/64
decimal(P,S)       decimal with scale S and precision <= P
date               date32, date64 (whole days)
time               time32, time64 (no loss of precision below µs)
timestamp(_ns)     timestamp without zone in any unit (no loss of precision)
timestamptz(_ns)   timestamp with any zone in any unit (the instants are kept)
string             string, large_string, string_view
uuid               ``arrow.uuid``, fixed_size_binary(16)
fixed(L)           fixed_size_binary(L)
binary             binary, large_binary, binary_view, fixed_size_binary
struct/list/map    struct / list, large_list, fixed_size_list, list views / map
=================  ==========================================================================

Dictionary and run-end encoded columns are decoded first; a column of Arrow type ``null`` is
accepted for any optional field. Columns the schema does not have raise
:class:`~icepark.errors.ValidationError` naming them; a missing optional column is filled with
its field's write default, or nulls; a missing required column (without a write default), a
null in a required field (where its parent is not null) and an incompatible type raise
ValidationError naming the column. Columns of type ``unknown`` are left out of the result (the
spec keeps them out of data files); the data may hold them, but only as nulls.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.arrow.schema import primitive_to_arrow, schema_to_arrow
from icepark.errors import ValidationError
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BinaryType,
    BooleanType,
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
    TimeType,
    UnknownType,
    UUIDType,
)

__all__ = ["file_schema", "conform_batch", "value_to_arrow_scalar"]


def file_schema(schema: Schema) -> Schema:
    """The schema of the data files: ``schema`` without its fields of type ``unknown``."""

    def prune(t: IcebergType) -> IcebergType:
        if isinstance(t, StructType):
            return StructType(*(_prune_field(f) for f in t.fields if not _is_unknown(f)))
        if isinstance(t, ListType):
            return ListType(t.element_id, prune(t.element_type), t.element_required)
        if isinstance(t, MapType):
            return MapType(
                t.key_id, prune(t.key_type), t.value_id, prune(t.value_type), t.value_required
            )
        return t

    def _prune_field(f: NestedField) -> NestedField:
        return NestedField(
            f.field_id,
            f.name,
            prune(f.field_type),
            f.required,
            f.doc,
            f.initial_default,
            f.write_default,
        )

    fields = [_prune_field(f) for f in schema.fields if not _is_unknown(f)]
    return Schema(*fields, schema_id=schema.schema_id)


def _is_unknown(f: NestedField) -> bool:
    return isinstance(f.field_type, UnknownType)


def conform_batch(
    batch: pa.RecordBatch, schema: Schema, target: pa.Schema | None = None
) -> pa.RecordBatch:
    """``batch`` matched by name to ``schema`` and cast to the Arrow schema of its data files
    (``schema_to_arrow(file_schema(schema))``, which ``target`` may give ready made)."""
    target = target if target is not None else schema_to_arrow(file_schema(schema))
    columns = _by_name(batch.schema.names, batch.columns, "")
    arrays = _conform_fields(columns, schema.fields, list(target), batch.num_rows, "", None)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _by_name(names: list[str], arrays: list[pa.Array], prefix: str) -> dict[str, pa.Array]:
    dupes = sorted({prefix + n for n in names if names.count(n) > 1})
    if dupes:
        raise ValidationError(f"Duplicate columns in the data: {dupes}")
    return dict(zip(names, arrays))


def _conform_fields(
    columns: dict[str, pa.Array],
    fields: tuple[NestedField, ...],
    targets: list[pa.Field],
    n: int,
    prefix: str,
    parent_valid: pa.Array | None,
) -> list[pa.Array]:
    """The arrays of ``fields`` (of one struct) from ``columns``, in field order; fields of
    type unknown are checked to be null and left out, as ``targets`` leaves them out."""
    known = {f.name for f in fields}
    extra = [prefix + name for name in columns if name not in known]
    if extra:
        raise ValidationError(f"The data has columns the table schema does not have: {extra}")
    by_name = {t.name: t for t in targets}
    out = []
    for f in fields:
        path = prefix + f.name
        arr = columns.get(f.name)
        if isinstance(f.field_type, UnknownType):
            if arr is not None and _nulls_where(arr, parent_valid) != _valid_rows(n, parent_valid):
                raise ValidationError(f"Column {path!r} of type unknown must be null")
            continue
        arrow_type = by_name[f.name].type
        if arr is None:
            result = _missing(f, arrow_type, n, path, parent_valid)
        else:
            result = _conform_field(arr, f, arrow_type, path, parent_valid)
        # nulls left in a required field are under null structs; Parquet writers refuse them
        out.append(_without_nulls(result) if f.required and result.null_count else result)
    return out


def _without_nulls(arr: pa.Array) -> pa.Array:
    """``arr`` with its nulls replaced by placeholder values (zero, empty, all-null struct
    fields), for required fields whose nulls all lie under a null parent."""
    t = arr.type
    if pa.types.is_struct(t):
        children = [
            _without_nulls(arr.field(i))
            if not t.field(i).nullable and arr.field(i).null_count
            else arr.field(i)
            for i in range(t.num_fields)
        ]
        return pa.Array.from_buffers(t, len(arr), [None], null_count=0, children=children)
    if pa.types.is_list(t) or pa.types.is_map(t):
        # null slots hold empty ranges in conformed arrays (offsets rebuilt from lengths)
        offsets = arr.buffers()[1]
        return pa.Array.from_buffers(
            t, len(arr), [None, offsets], null_count=0, offset=arr.offset, children=[arr.values]
        )
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, _without_nulls(arr.storage))
    return pc.fill_null(arr, _placeholder(t))


def _placeholder(t: pa.DataType) -> pa.Scalar:
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(b"\x00" * t.byte_width, t)
    if pa.types.is_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_decimal(t):
        return pa.scalar(Decimal(0), t)
    if pa.types.is_date32(t):
        return pa.scalar(0, pa.int32()).cast(t)
    if pa.types.is_floating(t):
        return pa.scalar(0.0, t)
    return pa.scalar(0, pa.int64()).cast(t)


def _valid_rows(n: int, parent_valid: pa.Array | None) -> int:
    return n if parent_valid is None else int(parent_valid.true_count)


# -- one field ---------------------------------------------------------------------------------


def _missing(
    f: NestedField, arrow_type: pa.DataType, n: int, path: str, parent_valid: pa.Array | None
) -> pa.Array:
    if f.write_default is not None:
        return pa.repeat(value_to_arrow_scalar(f.write_default, f.field_type, arrow_type), n)
    if f.required and _valid_rows(n, parent_valid):
        raise ValidationError(f"Missing required column {path!r} of type {f.field_type}")
    return pa.nulls(n, arrow_type)


def _conform_field(
    arr: pa.Array,
    f: NestedField,
    arrow_type: pa.DataType,
    path: str,
    parent_valid: pa.Array | None,
) -> pa.Array:
    """``arr`` (values of field ``f``) as ``arrow_type``; ``parent_valid`` marks the rows
    whose enclosing structs are all non-null (None: all are)."""
    arr = _decode(arr)
    if pa.types.is_null(arr.type):
        if f.required and _nulls_where(arr, parent_valid):
            raise ValidationError(f"Required column {path!r} is null")
        return pa.nulls(len(arr), arrow_type)
    if f.required:
        bad = _nulls_where(arr, parent_valid)
        if bad:
            raise ValidationError(f"Required column {path!r} has {bad} null value(s)")
    return _conform_type(arr, f.field_type, arrow_type, path)


def _nulls_where(arr: pa.Array, parent_valid: pa.Array | None) -> int:
    if arr.null_count == 0:
        return 0
    if parent_valid is None:
        return int(arr.null_count)
    return int(pc.and_(arr.is_null(), parent_valid).true_count)


def _decode(arr: pa.Array) -> pa.Array:
    while True:
        t = arr.type
        if pa.types.is_dictionary(t):
            arr = arr.dictionary_decode()
        elif pa.types.is_run_end_encoded(t):
            arr = pc.run_end_decode(arr)
        elif isinstance(t, pa.BaseExtensionType) and t.extension_name != "arrow.uuid":
            arr = arr.storage
        else:
            return arr


def _conform_type(arr: pa.Array, t: IcebergType, arrow_type: pa.DataType, path: str) -> pa.Array:
    if isinstance(t, StructType):
        return _conform_struct(arr, t, arrow_type, path)
    if isinstance(t, ListType):
        return _conform_list(arr, t, arrow_type, path)
    if isinstance(t, MapType):
        return _conform_map(arr, t, arrow_type, path)
    assert isinstance(t, PrimitiveType)
    return _conform_primitive(arr, t, path)


def _incompatible(path: str, arrow_type: pa.DataType, t: IcebergType) -> ValidationError:
    return ValidationError(
        f"Cannot write column {path!r}: Arrow type {arrow_type} is not compatible with "
        f"Iceberg type {t}"
    )


def _conform_struct(arr: pa.Array, t: StructType, arrow_type: pa.DataType, path: str) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        raise _incompatible(path, arr.type, t)
    names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    # flatten() pushes the struct's nulls down into its fields
    columns = _by_name(names, arr.flatten(), path + ".")
    valid = arr.is_valid() if arr.null_count else None
    targets = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
    children = _conform_fields(columns, t.fields, targets, len(arr), path + ".", valid)
    validity = None if valid is None else valid.buffers()[1]
    # from_buffers, not from_arrays: a required field may hold nulls under null structs
    return pa.Array.from_buffers(
        arrow_type, len(arr), [validity], null_count=arr.null_count, children=children
    )


def _list_offsets(lengths: pa.Array) -> pa.Array:
    filled = pc.fill_null(lengths, 0) if lengths.null_count else lengths
    ends = pc.cumulative_sum_checked(pc.cast(filled, pa.int64()))
    offsets = pa.concat_arrays([pa.array([0], pa.int64()), ends])
    return pc.cast(offsets, pa.int32())


def _conform_list(arr: pa.Array, t: ListType, arrow_type: pa.DataType, path: str) -> pa.Array:
    lt = arr.type
    is_list = (
        pa.types.is_list(lt)
        or pa.types.is_large_list(lt)
        or pa.types.is_fixed_size_list(lt)
        or pa.types.is_list_view(lt)
        or pa.types.is_large_list_view(lt)
    )
    if not is_list:
        raise _incompatible(path, lt, t)
    values = pc.list_flatten(arr)  # the elements of the non-null lists only
    offsets = _list_offsets(pc.list_value_length(arr))
    element = _conform_field(
        values, t.element_field, arrow_type.value_type, f"{path}.element", None
    )
    mask = arr.is_null() if arr.null_count else None
    return pa.ListArray.from_arrays(offsets, element, type=arrow_type, mask=mask)


def _conform_map(arr: pa.Array, t: MapType, arrow_type: pa.DataType, path: str) -> pa.Array:
    if not pa.types.is_map(arr.type):
        raise _incompatible(path, arr.type, t)
    entries_type = pa.list_(
        pa.field("entries", pa.struct([arr.type.key_field, arr.type.item_field]), nullable=False)
    )
    as_list = arr.cast(entries_type)
    entries = pc.list_flatten(as_list)
    offsets = _list_offsets(pc.list_value_length(as_list))
    keys = _conform_field(entries.field(0), t.key_field, arrow_type.key_type, f"{path}.key", None)
    items = _conform_field(
        entries.field(1), t.value_field, arrow_type.item_type, f"{path}.value", None
    )
    mask = arr.is_null() if arr.null_count else None
    return pa.MapArray.from_arrays(offsets, keys, items, type=arrow_type, mask=mask)


# -- primitives --------------------------------------------------------------------------------


def _int_source(at: pa.DataType, long: bool) -> bool:
    if long:
        return bool(pa.types.is_integer(at))
    return bool(
        pa.types.is_int8(at)
        or pa.types.is_int16(at)
        or pa.types.is_int32(at)
        or pa.types.is_uint8(at)
        or pa.types.is_uint16(at)
    )


def _accepts(t: PrimitiveType, at: pa.DataType) -> bool:
    if isinstance(t, BooleanType):
        return bool(pa.types.is_boolean(at))
    if isinstance(t, IntegerType | LongType):
        return _int_source(at, isinstance(t, LongType))
    if isinstance(t, FloatType):
        return bool(pa.types.is_float16(at) or pa.types.is_float32(at))
    if isinstance(t, DoubleType):
        return bool(pa.types.is_floating(at))
    if isinstance(t, DecimalType):
        return bool(pa.types.is_decimal(at) and at.scale == t.scale and at.precision <= t.precision)
    if isinstance(t, DateType):
        return bool(pa.types.is_date(at))
    if isinstance(t, TimeType):
        return bool(pa.types.is_time(at))
    if isinstance(t, TimestampType | TimestampNanoType):
        return bool(pa.types.is_timestamp(at) and at.tz is None)
    if isinstance(t, TimestamptzType | TimestamptzNanoType):
        return bool(pa.types.is_timestamp(at) and at.tz is not None)
    if isinstance(t, StringType):
        return bool(
            pa.types.is_string(at) or pa.types.is_large_string(at) or pa.types.is_string_view(at)
        )
    if isinstance(t, UUIDType):
        is_uuid = isinstance(at, pa.BaseExtensionType) and at.extension_name == "arrow.uuid"
        return is_uuid or bool(pa.types.is_fixed_size_binary(at) and at.byte_width == 16)
    if isinstance(t, FixedType):
        return bool(pa.types.is_fixed_size_binary(at) and at.byte_width == t.length)
    if isinstance(t, BinaryType):
        return bool(
            pa.types.is_binary(at)
            or pa.types.is_large_binary(at)
            or pa.types.is_binary_view(at)
            or pa.types.is_fixed_size_binary(at)
        )
    return False


def _conform_primitive(arr: pa.Array, t: PrimitiveType, path: str) -> pa.Array:
    at = arr.type
    if not _accepts(t, at):
        raise _incompatible(path, at, t)
    target = primitive_to_arrow(t)
    if at == target:
        return arr
    try:
        if isinstance(t, UUIDType):
            storage = arr.storage if isinstance(at, pa.BaseExtensionType) else arr
            return pa.ExtensionArray.from_storage(target, storage)
        if isinstance(t, BinaryType) and pa.types.is_fixed_size_binary(at):
            arr = arr.cast(pa.large_binary())
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValidationError(
            f"Cannot write column {path!r} as Iceberg type {t}: {exc}"[:500]
        ) from exc


# -- defaults ----------------------------------------------------------------------------------


def value_to_arrow_scalar(value: Any, t: IcebergType, arrow_type: pa.DataType) -> pa.Scalar:
    """A value in icepark's internal representation as an Arrow scalar of ``arrow_type``."""
    if isinstance(t, DateType):
        return pa.scalar(value, pa.int32()).cast(arrow_type)
    if isinstance(t, TimeType | TimestampType | TimestamptzType):
        return pa.scalar(value, pa.int64()).cast(arrow_type)
    if isinstance(t, TimestampNanoType | TimestamptzNanoType):
        return pa.scalar(value, pa.int64()).cast(arrow_type)
    if isinstance(t, UUIDType):
        return pa.ExtensionScalar.from_storage(arrow_type, pa.scalar(value.bytes, pa.binary(16)))
    return pa.scalar(value, arrow_type)
