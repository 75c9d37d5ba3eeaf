"""Iceberg schemas to and from Arrow schemas, with field ids in ``PARQUET:field_id`` metadata.

Iceberg -> Arrow (what icepark writes; Parquet gets the types of spec Appendix A):

=================  ==========================================================================
boolean            ``bool_``
int / long         ``int32`` / ``int64``
float / double     ``float32`` / ``float64``
decimal(P,S)       ``decimal128(P, S)``
date               ``date32``
time               ``time64('us')``
timestamp(tz)      ``timestamp('us')`` / ``timestamp('us', tz='UTC')``
timestamp(tz)_ns   ``timestamp('ns')`` / ``timestamp('ns', tz='UTC')``
string             ``string`` (32-bit offsets, what Spark's Arrow path uses; large_string read)
uuid               ``pa.uuid()``: Parquet ``fixed_len_byte_array(16)`` annotated ``UUID``,
                   as Java writes and reads it. Compute kernels need ``arr.storage``.
fixed(L)           ``fixed_size_binary(L)``
binary             ``binary``
unknown            ``null`` (always nullable; the spec says to omit it from data files)
struct             ``struct``
list               ``list_`` with the element field named ``element``
map                ``map_`` with fields ``key`` and ``value``
=================  ==========================================================================

Arrow -> Iceberg also accepts: int8/int16/uint8/uint16 -> int, uint32 -> long (uint64 is
rejected), float16 -> float, large_string/string_view -> string, large_binary/binary_view ->
binary, decimal32/64/256 (precision <= 38) -> decimal, date64 -> date, time32 and time64('ns')
-> time, timestamps in 's' or 'ms' -> timestamp(tz) (values must be cast to 'us' when read),
'ns' -> timestamp(tz)_ns, any time zone -> the tz variant (Arrow stores UTC instants whatever
the zone), large/fixed-size/view lists -> list, dictionary and run-end encoded columns -> their
value type, other extension types -> their storage type (``arrow.bool8`` -> boolean).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import lru_cache

import pyarrow as pa

from icepark.errors import InvalidSchemaError
from icepark.spec.name_mapping import NameMapping
from icepark.spec.schema import Schema, assign_fresh_ids
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

__all__ = [
    "FIELD_ID_KEY",
    "DOC_KEY",
    "schema_to_arrow",
    "type_to_arrow",
    "primitive_to_arrow",
    "arrow_to_schema",
    "assign_fresh_ids_from_arrow",
    "primitive_from_arrow",
    "field_id_of",
    "apply_name_mapping",
]

#: the Arrow field metadata key pyarrow maps to and from Parquet field ids
FIELD_ID_KEY = b"PARQUET:field_id"
#: the Arrow field metadata key holding an Iceberg field's doc string
DOC_KEY = b"doc"
# keys read as field ids, first match wins
_FIELD_ID_KEYS = (FIELD_ID_KEY, b"field_id", b"parquet.field.id")

_ELEMENT = "element"
_KEY = "key"
_VALUE = "value"


# -- Iceberg -> Arrow ------------------------------------------------------------------------


def schema_to_arrow(
    schema_or_struct: Schema | StructType, *, include_field_ids: bool = True
) -> pa.Schema:
    """The Arrow schema of an Iceberg schema; every field (list elements, map keys and values
    included) carries its id in ``PARQUET:field_id`` metadata unless ``include_field_ids`` is
    False. Required fields are non-nullable; docs go to ``doc`` metadata.

    Remembered for recent schemas: a scan asks for the same one for every file it reads."""
    try:
        return _remembered_schema_to_arrow(schema_or_struct, include_field_ids)
    except TypeError:  # unhashable (a default value that is a list or a map)
        return _schema_to_arrow(schema_or_struct, include_field_ids)


@lru_cache(maxsize=64)
def _remembered_schema_to_arrow(
    schema_or_struct: Schema | StructType, include_field_ids: bool
) -> pa.Schema:
    return _schema_to_arrow(schema_or_struct, include_field_ids)


def _schema_to_arrow(schema_or_struct: Schema | StructType, include_field_ids: bool) -> pa.Schema:
    struct = (
        schema_or_struct.as_struct() if isinstance(schema_or_struct, Schema) else schema_or_struct
    )
    return pa.schema([_field_to_arrow(f, include_field_ids) for f in struct.fields])


def type_to_arrow(t: IcebergType, *, include_field_ids: bool = True) -> pa.DataType:
    """The Arrow type of an Iceberg type (nested fields carry their ids as in schema_to_arrow)."""
    if isinstance(t, StructType):
        return pa.struct([_field_to_arrow(f, include_field_ids) for f in t.fields])
    if isinstance(t, ListType):
        return pa.list_(_field_to_arrow(t.element_field, include_field_ids))
    if isinstance(t, MapType):
        return pa.map_(
            _field_to_arrow(t.key_field, include_field_ids),
            _field_to_arrow(t.value_field, include_field_ids),
        )
    if isinstance(t, PrimitiveType):
        return primitive_to_arrow(t)
    raise InvalidSchemaError(f"Cannot convert {t!r} to an Arrow type")


def _field_to_arrow(f: NestedField, include_field_ids: bool) -> pa.Field:
    metadata: dict[bytes, bytes] = {}
    if include_field_ids:
        metadata[FIELD_ID_KEY] = str(f.field_id).encode()
    if f.doc is not None:
        metadata[DOC_KEY] = f.doc.encode()
    arrow_type = type_to_arrow(f.field_type, include_field_ids=include_field_ids)
    # Arrow has no non-nullable null type; unknown columns are always optional anyway
    nullable = f.optional or isinstance(f.field_type, UnknownType)
    return pa.field(f.name, arrow_type, nullable=nullable, metadata=metadata or None)


_SIMPLE_TO_ARROW: dict[type[PrimitiveType], Callable[[], pa.DataType]] = {
    BooleanType: pa.bool_,
    IntegerType: pa.int32,
    LongType: pa.int64,
    FloatType: pa.float32,
    DoubleType: pa.float64,
    DateType: pa.date32,
    TimeType: lambda: pa.time64("us"),
    TimestampType: lambda: pa.timestamp("us"),
    TimestamptzType: lambda: pa.timestamp("us", tz="UTC"),
    TimestampNanoType: lambda: pa.timestamp("ns"),
    TimestamptzNanoType: lambda: pa.timestamp("ns", tz="UTC"),
    StringType: pa.string,
    UUIDType: pa.uuid,
    BinaryType: pa.binary,
    UnknownType: pa.null,
}


def primitive_to_arrow(t: PrimitiveType) -> pa.DataType:
    """The Arrow type icepark uses for an Iceberg primitive type."""
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    make = _SIMPLE_TO_ARROW.get(type(t))
    if make is None:
        raise InvalidSchemaError(f"Cannot convert Iceberg type {t} to an Arrow type")
    return make()


# -- Arrow -> Iceberg ------------------------------------------------------------------------


def field_id_of(f: pa.Field) -> int | None:
    """The field id in an Arrow field's metadata (``PARQUET:field_id``, ``field_id`` or
    ``parquet.field.id``), or None. A malformed id raises InvalidSchemaError."""
    metadata = f.metadata
    if not metadata:
        return None
    for key in _FIELD_ID_KEYS:
        raw = metadata.get(key)
        if raw is None:
            continue
        try:
            return int(raw)
        except ValueError:
            raise InvalidSchemaError(
                f"Field {f.name!r} has an invalid field id {raw!r} in {key.decode()!r}"
            ) from None
    return None


def arrow_to_schema(
    pa_schema: pa.Schema | pa.StructType,
    *,
    name_mapping: NameMapping | None = None,
    assign_ids: bool = False,
) -> Schema:
    """The Iceberg schema of an Arrow schema, reading field ids from field metadata.

    A field without an id takes the id its name path has in ``name_mapping`` (lists through
    ``element``, maps through ``key``/``value``); a field the mapping does not cover (or maps
    without a field-id) is left out of the result, as Java's readers leave unmapped columns
    out of a projection, and a list or map whose element, key or value is left out goes too.
    Without a mapping, a missing id raises InvalidSchemaError naming the field.

    With ``assign_ids`` every field (ids in the metadata are ignored) gets a fresh id, breadth
    first from 1, as Java's ``TypeUtil.assignFreshIds`` does.
    """
    fields = list(pa_schema)
    converter = _ArrowToIceberg(name_mapping, assign_ids)
    converted = [f for f in (converter.field(a, (a.name,)) for a in fields) if f is not None]
    if assign_ids:
        return assign_fresh_ids(StructType(*converted))
    return Schema(*converted)


def assign_fresh_ids_from_arrow(pa_schema: pa.Schema | pa.StructType) -> Schema:
    """The Iceberg schema of an Arrow schema with fresh ids (1, 2, ... breadth first)."""
    return arrow_to_schema(pa_schema, assign_ids=True)


def _path_str(path: tuple[str, ...]) -> str:
    return ".".join(path)


class _ArrowToIceberg:
    def __init__(self, name_mapping: NameMapping | None, assign_ids: bool) -> None:
        self._mapping = name_mapping
        self._assign_ids = assign_ids
        # placeholder ids, replaced by assign_fresh_ids; only need to be distinct
        self._placeholder = itertools.count(1)

    def _resolve_id(self, f: pa.Field, path: tuple[str, ...]) -> int | None:
        if self._assign_ids:
            return next(self._placeholder)
        field_id = field_id_of(f)
        if field_id is not None:
            return field_id
        if self._mapping is None:
            raise InvalidSchemaError(
                f"Field {_path_str(path)!r} has no field id ({FIELD_ID_KEY.decode()} metadata) "
                "and no name mapping was given to resolve it"
            )
        mapped = self._mapping.find(*path)
        return None if mapped is None else mapped.field_id

    def field(self, f: pa.Field, path: tuple[str, ...]) -> NestedField | None:
        field_id = self._resolve_id(f, path)
        if field_id is None:
            return None
        field_type = self.convert_type(f.type, path)
        if field_type is None:
            return None
        doc = (f.metadata or {}).get(DOC_KEY)
        return NestedField(
            field_id=field_id,
            name=f.name,
            field_type=field_type,
            required=not f.nullable,
            doc=doc.decode() if doc is not None else None,
        )

    def convert_type(self, t: pa.DataType, path: tuple[str, ...]) -> IcebergType | None:
        """The Iceberg type of ``t``; None when a nested part could not be given an id."""
        if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
            return self.convert_type(t.value_type, path)
        if isinstance(t, pa.BaseExtensionType):
            known = _EXTENSIONS.get(t.extension_name)
            return known if known is not None else self.convert_type(t.storage_type, path)
        if pa.types.is_struct(t):
            children = [self.field(c, (*path, c.name)) for c in t]
            return StructType(*(c for c in children if c is not None))
        if _is_list_like(t):
            element = self.field(t.value_field, (*path, _ELEMENT))
            if element is None:
                return None
            return ListType(element.field_id, element.field_type, element.required)
        if pa.types.is_map(t):
            key = self.field(t.key_field, (*path, _KEY))
            value = self.field(t.item_field, (*path, _VALUE))
            if key is None or value is None:
                return None
            return MapType(
                key.field_id, key.field_type, value.field_id, value.field_type, value.required
            )
        try:
            return primitive_from_arrow(t)
        except InvalidSchemaError as e:
            raise InvalidSchemaError(f"Field {_path_str(path)!r}: {e}") from None


def _is_list_like(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


_SIMPLE_FROM_ARROW: tuple[tuple[Callable[[pa.DataType], bool], PrimitiveType], ...] = (
    (pa.types.is_boolean, BooleanType()),
    (pa.types.is_int8, IntegerType()),
    (pa.types.is_int16, IntegerType()),
    (pa.types.is_int32, IntegerType()),
    (pa.types.is_uint8, IntegerType()),
    (pa.types.is_uint16, IntegerType()),
    (pa.types.is_int64, LongType()),
    (pa.types.is_uint32, LongType()),
    (pa.types.is_float16, FloatType()),
    (pa.types.is_float32, FloatType()),
    (pa.types.is_float64, DoubleType()),
    (pa.types.is_date32, DateType()),
    (pa.types.is_date64, DateType()),
    (pa.types.is_time32, TimeType()),
    (pa.types.is_time64, TimeType()),
    (pa.types.is_string, StringType()),
    (pa.types.is_large_string, StringType()),
    (pa.types.is_string_view, StringType()),
    (pa.types.is_binary, BinaryType()),
    (pa.types.is_large_binary, BinaryType()),
    (pa.types.is_binary_view, BinaryType()),
    (pa.types.is_null, UnknownType()),
)


_EXTENSIONS: dict[str, PrimitiveType] = {"arrow.uuid": UUIDType(), "arrow.bool8": BooleanType()}


@lru_cache(maxsize=256)  # a pure function of the type; called for every column of every file
def primitive_from_arrow(t: pa.DataType) -> PrimitiveType:
    """The Iceberg primitive type of a non-nested Arrow type (dictionary and run-end encoded
    types by their value type, extension types by name or else by storage type).

    Raises InvalidSchemaError for types Iceberg cannot hold (uint64, durations, intervals,
    decimals wider than 38 digits, nested types, ...).
    """
    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        return primitive_from_arrow(t.value_type)
    if isinstance(t, pa.BaseExtensionType):
        known = _EXTENSIONS.get(t.extension_name)
        return known if known is not None else primitive_from_arrow(t.storage_type)
    if pa.types.is_timestamp(t):
        nanos = t.unit == "ns"
        if t.tz is None:
            return TimestampNanoType() if nanos else TimestampType()
        return TimestamptzNanoType() if nanos else TimestamptzType()
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise InvalidSchemaError(
                f"Arrow type {t} has precision {t.precision}; Iceberg decimals hold at most 38"
            )
        return DecimalType(t.precision, t.scale)
    if pa.types.is_fixed_size_binary(t):
        return FixedType(t.byte_width)
    for test, iceberg_type in _SIMPLE_FROM_ARROW:
        if test(t):
            return iceberg_type
    if pa.types.is_uint64(t):
        raise InvalidSchemaError(
            "Arrow type uint64 has no Iceberg type: values above 2**63-1 do not fit a long"
        )
    raise InvalidSchemaError(f"Arrow type {t} has no Iceberg type")


# -- name mapping on Arrow schemas -----------------------------------------------------------


def apply_name_mapping(pa_schema: pa.Schema, mapping: NameMapping) -> pa.Schema:
    """``pa_schema`` with ``PARQUET:field_id`` metadata added from ``mapping`` to every field
    that has no id yet and whose name path is mapped to an id; other fields are unchanged
    (fields not in the mapping stay without ids). Schema-level metadata is kept."""
    fields = [_apply_to_field(f, (f.name,), mapping) for f in pa_schema]
    return pa.schema(fields, metadata=pa_schema.metadata)


def _apply_to_field(f: pa.Field, path: tuple[str, ...], mapping: NameMapping) -> pa.Field:
    new_type = _apply_to_type(f.type, path, mapping)
    if new_type is not f.type:
        f = f.with_type(new_type)
    if field_id_of(f) is None:
        mapped = mapping.find(*path)
        if mapped is not None and mapped.field_id is not None:
            metadata = dict(f.metadata or {})
            metadata[FIELD_ID_KEY] = str(mapped.field_id).encode()
            f = f.with_metadata(metadata)
    return f


def _apply_to_type(t: pa.DataType, path: tuple[str, ...], mapping: NameMapping) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([_apply_to_field(c, (*path, c.name), mapping) for c in t])
    if pa.types.is_map(t):
        key = _apply_to_field(t.key_field, (*path, _KEY), mapping)
        item = _apply_to_field(t.item_field, (*path, _VALUE), mapping)
        return pa.map_(key, item, keys_sorted=t.keys_sorted)
    if _is_list_like(t):
        element = _apply_to_field(t.value_field, (*path, _ELEMENT), mapping)
        if pa.types.is_list(t):
            return pa.list_(element)
        if pa.types.is_large_list(t):
            return pa.large_list(element)
        if pa.types.is_fixed_size_list(t):
            return pa.list_(element, t.list_size)
        if pa.types.is_list_view(t):
            return pa.list_view(element)
        return pa.large_list_view(element)
    return t
