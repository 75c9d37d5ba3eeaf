"""Iceberg's types, and :func:`schema` to build a schema without thinking about field ids.

::

    import icepark
    from icepark.types import struct, list_of, map_of

    schema = icepark.schema(
        ("id", "long", True),                      # (name, type, required)
        ("ts", "timestamptz"),
        ("amount", "decimal(12, 2)"),
        ("point", struct(("x", "double", True), ("y", "double"))),
        ("tags", list_of("string")),
        ("attrs", map_of("string", "string")),
        identifier_fields=["id"],
    )

Types are given as Iceberg type objects (``icepark.types.LongType()``) or as their names in
the spec's JSON form (``"long"``, ``"decimal(12, 2)"``, ``"fixed[16]"``, ``"timestamptz"``).
Field ids are assigned as Java assigns them to a new table (1, 2, ... breadth first); a
catalog's ``create_table`` assigns fresh ids in any case. A pyarrow schema works wherever a
schema is asked for, too.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from icepark.errors import ValidationError
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
    parse_primitive_type,
)

__all__ = [
    "BinaryType",
    "BooleanType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FixedType",
    "FloatType",
    "IcebergType",
    "IntegerType",
    "ListType",
    "LongType",
    "MapType",
    "NestedField",
    "PrimitiveType",
    "Schema",
    "StringType",
    "StructType",
    "TimeType",
    "TimestampNanoType",
    "TimestampType",
    "TimestamptzNanoType",
    "TimestamptzType",
    "UUIDType",
    "UnknownType",
    "list_of",
    "map_of",
    "schema",
    "struct",
]

FieldLike = tuple[str, "TypeLike"] | tuple[str, "TypeLike", bool] | NestedField
"""A field: ``(name, type)``, ``(name, type, required)`` or a :class:`NestedField`."""


@dataclass(frozen=True)
class _Struct:
    fields: tuple[FieldLike, ...]


@dataclass(frozen=True)
class _List:
    element: TypeLike
    element_required: bool


@dataclass(frozen=True)
class _Map:
    key: TypeLike
    value: TypeLike
    value_required: bool


TypeLike = IcebergType | str | _Struct | _List | _Map
"""A type: an Iceberg type, a primitive type's name, or :func:`struct`, :func:`list_of`,
:func:`map_of`."""


def struct(*fields: FieldLike) -> _Struct:
    """A struct type for a field of :func:`schema`, its ids assigned with the schema's.

    Args:
        *fields: each ``(name, type)`` or ``(name, type, required)``, as for :func:`schema`.

    Returns:
        A struct type to use as a field's type (``("point", struct(("x", "double")))``).
    """
    return _Struct(tuple(fields))


def list_of(element: TypeLike, element_required: bool = False) -> _List:
    """A list type for a field of :func:`schema`, its element id assigned with the schema's.

    Args:
        element: the element type (a type object, a type name, or a nested
            :func:`struct` / :func:`list_of` / :func:`map_of`).
        element_required: whether elements may not be null (default: they may).

    Returns:
        A list type to use as a field's type (``("tags", list_of("string"))``).
    """
    return _List(element, element_required)


def map_of(key: TypeLike, value: TypeLike, value_required: bool = False) -> _Map:
    """A map type for a field of :func:`schema`, its key and value ids assigned with the
    schema's. Keys are always required.

    Args:
        key: the key type (a type object, a type name, or a nested type).
        value: the value type.
        value_required: whether values may not be null (default: they may).

    Returns:
        A map type to use as a field's type (``("attrs", map_of("string", "long"))``).
    """
    return _Map(key, value, value_required)


def _type(t: TypeLike, ids: Iterator[int]) -> IcebergType:
    if isinstance(t, str):
        try:
            return parse_primitive_type(t.strip().lower())
        except Exception as exc:
            raise ValidationError(f"Unknown type {t!r}: {exc}") from None
    if isinstance(t, _Struct):
        return StructType(*(_field(f, ids) for f in t.fields))
    if isinstance(t, _List):
        return ListType(next(ids), _type(t.element, ids), t.element_required)
    if isinstance(t, _Map):
        key_id, value_id = next(ids), next(ids)
        return MapType(key_id, _type(t.key, ids), value_id, _type(t.value, ids), t.value_required)
    if isinstance(t, IcebergType):
        return t
    raise ValidationError(f"Not a type: {t!r}")


def _field(f: FieldLike, ids: Iterator[int]) -> NestedField:
    if isinstance(f, NestedField):
        return NestedField(next(ids), f.name, f.field_type, f.required, f.doc)
    if not isinstance(f, tuple) or len(f) not in (2, 3) or not isinstance(f[0], str):
        raise ValidationError(f"A field is (name, type) or (name, type, required), got {f!r}")
    required = bool(f[2]) if len(f) == 3 else False
    return NestedField(next(ids), f[0], _type(f[1], ids), required)


def schema(*fields: FieldLike, identifier_fields: Sequence[str] = ()) -> Schema:
    """Build a schema from ``(name, type[, required])`` tuples, with field ids assigned as
    Java assigns them to a new table (1, 2, ... breadth first); see the module docstring.

    Args:
        *fields: each ``(name, type)`` or ``(name, type, required)`` (optional by default),
            or a :class:`NestedField`; a type is an Iceberg type object, a type name
            (``"long"``, ``"decimal(12, 2)"``, ``"timestamptz"``) or :func:`struct`,
            :func:`list_of`, :func:`map_of`.
        identifier_fields: names (dotted for nested fields) of required primitive columns
            that together identify a row (used by upserts and changelog update images).

    Returns:
        The :class:`Schema`.

    Raises:
        ValidationError: a field that is not such a tuple, or an unknown type name.
        InvalidSchemaError: duplicate field names, or an identifier field that does not
            exist or is not a required primitive column.
    """
    ids = itertools.count(1)
    built = Schema(*(_field(f, ids) for f in fields))
    fresh = assign_fresh_ids(built)
    if not identifier_fields:
        return fresh
    try:
        id_list = [fresh.find_field_id(name) for name in identifier_fields]
    except Exception as exc:
        raise ValidationError(f"Unknown identifier field: {exc}") from None
    return Schema(*fresh.fields, schema_id=fresh.schema_id, identifier_field_ids=id_list)
