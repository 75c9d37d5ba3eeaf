"""Iceberg's data types: primitives, struct, list and map, with their field ids.

Values of each type are held in Python as (the "internal representation" used everywhere in
icepark): boolean -> bool; int, long -> int; float, double -> float; decimal -> decimal.Decimal;
date -> int days since 1970-01-01; time -> int microseconds since midnight; timestamp and
timestamptz -> int microseconds since the epoch (UTC); timestamp_ns and timestamptz_ns -> int
nanoseconds since the epoch; string -> str; uuid -> uuid.UUID; fixed, binary -> bytes;
struct -> tuple (by position) or dict keyed by field id; list -> list; map -> dict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from icepark.errors import InvalidSchemaError

__all__ = [
    "type_label",
    "IcebergType",
    "PrimitiveType",
    "NestedType",
    "BooleanType",
    "IntegerType",
    "LongType",
    "FloatType",
    "DoubleType",
    "DecimalType",
    "DateType",
    "TimeType",
    "TimestampType",
    "TimestamptzType",
    "TimestampNanoType",
    "TimestamptzNanoType",
    "StringType",
    "UUIDType",
    "FixedType",
    "BinaryType",
    "UnknownType",
    "NestedField",
    "StructType",
    "ListType",
    "MapType",
    "parse_primitive_type",
    "type_from_json",
    "type_to_json",
    "MAX_DECIMAL_PRECISION",
    "RESERVED_FIELD_ID_START",
    "required_format_version",
]

MAX_DECIMAL_PRECISION = 38
# Field ids from 2147483447 (Integer.MAX_VALUE - 200) up are reserved for metadata columns.
RESERVED_FIELD_ID_START = 2_147_483_447


class IcebergType:
    """Base of all Iceberg types."""

    @property
    def is_primitive(self) -> bool:
        """Whether this is a primitive type (not a struct, list or map)."""
        return isinstance(self, PrimitiveType)

    @property
    def is_nested(self) -> bool:
        """Whether this is a struct, list or map."""
        return isinstance(self, NestedType)

    @property
    def is_struct(self) -> bool:
        """Whether this is a struct."""
        return isinstance(self, StructType)


class PrimitiveType(IcebergType):
    """A primitive type; ``str(t)`` is its name as the spec writes it."""

    name: ClassVar[str] = ""
    #: the lowest table format version that supports this type
    min_format_version: ClassVar[int] = 1

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


def type_label(t: IcebergType) -> str:
    """A type as a schema tree shows it: ``struct``, ``list`` or ``map`` for a nested type
    (its fields are rows of their own), else the primitive's name."""
    if isinstance(t, StructType):
        return "struct"
    if isinstance(t, ListType):
        return "list"
    if isinstance(t, MapType):
        return "map"
    return str(t)


def required_format_version(t: IcebergType) -> int:
    """The lowest format version whose tables may hold type ``t`` (nested types included)."""
    if isinstance(t, PrimitiveType):
        return t.min_format_version
    if isinstance(t, StructType):
        return max((required_format_version(f.field_type) for f in t.fields), default=1)
    if isinstance(t, ListType):
        return required_format_version(t.element_type)
    if isinstance(t, MapType):
        return max(required_format_version(t.key_type), required_format_version(t.value_type))
    return 1


class BooleanType(PrimitiveType):
    """``boolean``: true or false."""

    name = "boolean"


class IntegerType(PrimitiveType):
    """``int``: a 32-bit signed integer."""

    name = "int"


class LongType(PrimitiveType):
    """``long``: a 64-bit signed integer."""

    name = "long"


class FloatType(PrimitiveType):
    """``float``: a 32-bit IEEE 754 floating point number."""

    name = "float"


class DoubleType(PrimitiveType):
    """``double``: a 64-bit IEEE 754 floating point number."""

    name = "double"


class DateType(PrimitiveType):
    """``date``: a calendar date, without time or zone."""

    name = "date"


class TimeType(PrimitiveType):
    """``time``: a time of day in microseconds, without date or zone."""

    name = "time"


class TimestampType(PrimitiveType):
    """``timestamp``: a date and time in microseconds, without zone."""

    name = "timestamp"


class TimestamptzType(PrimitiveType):
    """``timestamptz``: an instant in microseconds, stored as UTC."""

    name = "timestamptz"


class TimestampNanoType(PrimitiveType):
    """``timestamp_ns``: a date and time in nanoseconds, without zone (format version 3)."""

    name = "timestamp_ns"
    min_format_version = 3


class TimestamptzNanoType(PrimitiveType):
    """``timestamptz_ns``: an instant in nanoseconds, stored as UTC (format version 3)."""

    name = "timestamptz_ns"
    min_format_version = 3


class StringType(PrimitiveType):
    """``string``: UTF-8 text."""

    name = "string"


class UUIDType(PrimitiveType):
    """``uuid``: a 16-byte universally unique identifier."""

    name = "uuid"


class BinaryType(PrimitiveType):
    """``binary``: bytes of any length."""

    name = "binary"


class UnknownType(PrimitiveType):
    """v3's ``unknown``: a column whose type is not known yet; always null."""

    name = "unknown"
    min_format_version = 3


class DecimalType(PrimitiveType):
    """``decimal(P,S)``: P digits in all, S of them after the point; P at most 38.

    Args:
        precision: P, the number of digits (1 to 38).
        scale: S, the digits after the point.

    Raises:
        InvalidSchemaError: a precision out of range.
    """

    name = "decimal"
    __slots__ = ("precision", "scale")

    def __init__(self, precision: int, scale: int) -> None:
        if not 0 < precision <= MAX_DECIMAL_PRECISION:
            raise InvalidSchemaError(
                f"decimal precision must be between 1 and {MAX_DECIMAL_PRECISION}: {precision}"
            )
        self.precision = precision
        self.scale = scale

    def __str__(self) -> str:
        return f"decimal({self.precision}, {self.scale})"

    def __repr__(self) -> str:
        return f"DecimalType({self.precision}, {self.scale})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DecimalType)
            and other.precision == self.precision
            and other.scale == self.scale
        )

    def __hash__(self) -> int:
        return hash(("decimal", self.precision, self.scale))


class FixedType(PrimitiveType):
    """``fixed[L]``: exactly L bytes.

    Args:
        length: L, the number of bytes (at least 1).

    Raises:
        InvalidSchemaError: a length below 1.
    """

    name = "fixed"
    __slots__ = ("length",)

    def __init__(self, length: int) -> None:
        if length < 1:
            raise InvalidSchemaError(f"fixed length must be positive: {length}")
        self.length = length

    def __str__(self) -> str:
        return f"fixed[{self.length}]"

    def __repr__(self) -> str:
        return f"FixedType({self.length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FixedType) and other.length == self.length

    def __hash__(self) -> int:
        return hash(("fixed", self.length))


class NestedType(IcebergType):
    """Base of struct, list and map."""

    @property
    def fields(self) -> tuple[NestedField, ...]:
        raise NotImplementedError


@dataclass(frozen=True)
class NestedField:
    """A field of a struct (or the element, key or value of a list or map) with its id.

    Args:
        field_id: the field's id, unique within the table's schema (new tables and
            :func:`icepark.schema` assign fresh ones).
        name: the field's name.
        field_type: its type.
        required: whether it may not be null.
        doc: its documentation (a column comment).
        initial_default: (v3) the value readers give the field in rows written before it
            existed.
        write_default: (v3) the value writers use when a row gives none.

    Both defaults are held in the internal representation of the field's type (see the
    module docstring).
    """

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None

    @property
    def optional(self) -> bool:
        """Whether the field may be null (not ``required``)."""
        return not self.required

    def __str__(self) -> str:
        req = "required" if self.required else "optional"
        doc = f" ({self.doc})" if self.doc else ""
        return f"{self.field_id}: {self.name}: {req} {self.field_type}{doc}"


@dataclass(frozen=True, init=False)
class StructType(NestedType):
    """A tuple of named fields, each with an id unique within the table schema.

    Args:
        *fields: the fields, in order.
    """

    _fields: tuple[NestedField, ...] = field()

    def __init__(self, *fields: NestedField) -> None:
        object.__setattr__(self, "_fields", tuple(fields))

    @property
    def fields(self) -> tuple[NestedField, ...]:
        """The fields, in order."""
        return self._fields

    def field(self, field_id: int) -> NestedField | None:
        """The field of this struct (not of structs nested in it) with an id.

        Args:
            field_id: the field id.

        Returns:
            The field, or None.
        """
        for f in self._fields:
            if f.field_id == field_id:
                return f
        return None

    def field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        """The field of this struct (not of structs nested in it) with a name.

        Args:
            name: the field's name.
            case_sensitive: whether the name matches case-sensitively.

        Returns:
            The field, or None.
        """
        if case_sensitive:
            return next((f for f in self._fields if f.name == name), None)
        lowered = name.lower()
        return next((f for f in self._fields if f.name.lower() == lowered), None)

    def __str__(self) -> str:
        return "struct<" + ", ".join(str(f) for f in self._fields) + ">"

    def __repr__(self) -> str:
        return "StructType(" + ", ".join(repr(f) for f in self._fields) + ")"

    def __len__(self) -> int:
        return len(self._fields)


@dataclass(frozen=True)
class ListType(NestedType):
    """A list of elements of one type; the element has a field id of its own.

    Args:
        element_id: the element's field id.
        element_type: the elements' type.
        element_required: whether elements may not be null.
    """

    element_id: int
    element_type: IcebergType
    element_required: bool = True

    @property
    def element_field(self) -> NestedField:
        """The element as a field named ``element``, with its id and nullability."""
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        """The element field, as a one-field tuple (for walking nested types alike)."""
        return (self.element_field,)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True)
class MapType(NestedType):
    """A map; keys are always required, key and value each have a field id.

    Args:
        key_id: the key's field id.
        key_type: the keys' type.
        value_id: the value's field id.
        value_type: the values' type.
        value_required: whether values may not be null.
    """

    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = True

    @property
    def key_field(self) -> NestedField:
        """The key as a required field named ``key``, with its id."""
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        """The value as a field named ``value``, with its id and nullability."""
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        """The key and value fields (for walking nested types alike)."""
        return (self.key_field, self.value_field)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


_SIMPLE: dict[str, PrimitiveType] = {
    t.name: t()
    for t in (
        BooleanType,
        IntegerType,
        LongType,
        FloatType,
        DoubleType,
        DateType,
        TimeType,
        TimestampType,
        TimestamptzType,
        TimestampNanoType,
        TimestamptzNanoType,
        StringType,
        UUIDType,
        BinaryType,
        UnknownType,
    )
}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
_FIXED = re.compile(r"^fixed\[\s*(\d+)\s*\]$")


def parse_primitive_type(text: str) -> PrimitiveType:
    """Parse a primitive type as the spec writes it: ``long``, ``decimal(9,2)``, ``fixed[16]``."""
    s = text.strip().lower()
    if s in _SIMPLE:
        return _SIMPLE[s]
    if m := _DECIMAL.match(s):
        return DecimalType(int(m.group(1)), int(m.group(2)))
    if m := _FIXED.match(s):
        return FixedType(int(m.group(1)))
    raise InvalidSchemaError(f"Unknown primitive type: {text!r}")


def type_to_json(t: IcebergType, *, default_to_json: Any = None) -> Any:
    """The JSON form of a type (a string for primitives, an object for nested types).

    ``default_to_json(value, type)`` serialises field defaults; it is supplied by the schema
    module so that this module stays free of value conversion.
    """
    if isinstance(t, PrimitiveType):
        return str(t)  # decimal(P, S) with the space, as Java and PyIceberg write it
    if isinstance(t, StructType):
        out_fields = []
        for f in t.fields:
            d: dict[str, Any] = {
                "id": f.field_id,
                "name": f.name,
                "required": f.required,
                "type": type_to_json(f.field_type, default_to_json=default_to_json),
            }
            if f.doc is not None:
                d["doc"] = f.doc
            if f.initial_default is not None and default_to_json is not None:
                d["initial-default"] = default_to_json(f.initial_default, f.field_type)
            if f.write_default is not None and default_to_json is not None:
                d["write-default"] = default_to_json(f.write_default, f.field_type)
            out_fields.append(d)
        return {"type": "struct", "fields": out_fields}
    if isinstance(t, ListType):
        return {
            "type": "list",
            "element-id": t.element_id,
            "element": type_to_json(t.element_type, default_to_json=default_to_json),
            "element-required": t.element_required,
        }
    if isinstance(t, MapType):
        return {
            "type": "map",
            "key-id": t.key_id,
            "key": type_to_json(t.key_type, default_to_json=default_to_json),
            "value-id": t.value_id,
            "value": type_to_json(t.value_type, default_to_json=default_to_json),
            "value-required": t.value_required,
        }
    raise InvalidSchemaError(f"Cannot serialise type {t!r}")


def _require(obj: dict[str, Any], key: str, what: str) -> Any:
    if key not in obj:
        raise InvalidSchemaError(f"Cannot parse {what} from json: missing {key!r} in {obj}")
    return obj[key]


def _optional_str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidSchemaError(f"Field {key!r} must be a string: {obj}")
    return value


def _require_int(obj: dict[str, Any], key: str, what: str) -> int:
    value = _require(obj, key, what)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidSchemaError(f"Cannot parse {what} from json: {key!r} must be an integer")
    return value


def _require_bool(obj: dict[str, Any], key: str, what: str) -> bool:
    value = _require(obj, key, what)
    if not isinstance(value, bool):
        raise InvalidSchemaError(f"Cannot parse {what} from json: {key!r} must be a boolean")
    return value


def type_from_json(obj: Any, *, default_from_json: Any = None) -> IcebergType:
    """Parse a type from its JSON form; ``default_from_json(json, type)`` parses defaults."""
    if isinstance(obj, str):
        return parse_primitive_type(obj)
    if not isinstance(obj, dict):
        raise InvalidSchemaError(f"Cannot parse type from json: {obj!r}")
    kind = obj.get("type")
    if kind == "struct":
        fields_json = _require(obj, "fields", "struct")
        if not isinstance(fields_json, list):
            raise InvalidSchemaError(f"Cannot parse struct fields from json: {fields_json!r}")
        fields = []
        for fj in fields_json:
            if not isinstance(fj, dict):
                raise InvalidSchemaError(f"Cannot parse struct field from json: {fj!r}")
            ftype = type_from_json(
                _require(fj, "type", "field"), default_from_json=default_from_json
            )
            required = _require(fj, "required", "field")
            if not isinstance(required, bool):
                raise InvalidSchemaError(f"Field 'required' must be a boolean: {fj}")
            initial = fj.get("initial-default")
            write = fj.get("write-default")
            if default_from_json is not None:
                initial = None if initial is None else default_from_json(initial, ftype)
                write = None if write is None else default_from_json(write, ftype)
            field_id = _require(fj, "id", "field")
            name = _require(fj, "name", "field")
            if not isinstance(field_id, int) or isinstance(field_id, bool):
                raise InvalidSchemaError(f"Field id must be an integer: {fj}")
            if not isinstance(name, str):
                raise InvalidSchemaError(f"Field name must be a string: {fj}")
            fields.append(
                NestedField(
                    field_id=field_id,
                    name=name,
                    field_type=ftype,
                    required=required,
                    doc=_optional_str(fj, "doc"),
                    initial_default=initial,
                    write_default=write,
                )
            )
        return StructType(*fields)
    if kind == "list":
        return ListType(
            element_id=_require_int(obj, "element-id", "list"),
            element_type=type_from_json(
                _require(obj, "element", "list"), default_from_json=default_from_json
            ),
            element_required=_require_bool(obj, "element-required", "list"),
        )
    if kind == "map":
        return MapType(
            key_id=_require_int(obj, "key-id", "map"),
            key_type=type_from_json(
                _require(obj, "key", "map"), default_from_json=default_from_json
            ),
            value_id=_require_int(obj, "value-id", "map"),
            value_type=type_from_json(
                _require(obj, "value", "map"), default_from_json=default_from_json
            ),
            value_required=_require_bool(obj, "value-required", "map"),
        )
    raise InvalidSchemaError(f"Cannot parse type from json: {obj!r}")
