"""Iceberg types and schemas as Avro schemas, and values between the two representations.

The Avro schemas follow the Java implementation (``AvroSchemaUtil`` / ``TypeToSchema``), so that
files written here read the same in Java and the other way round:

* a struct is a record named ``r{field id}`` after the field that holds it (the top level takes
  the name it is given); each Avro field carries ``field-id``, optional fields are unions
  ``["null", T]`` with ``"default": null``; names that are not valid Avro names are sanitized as
  Java does and the original name kept under ``iceberg-field-name``;
* a list is an array with ``element-id``; a map with string keys is an Avro map with ``key-id``
  and ``value-id``; a map with other keys is an array of ``k{key id}_v{value id}`` records
  (fields ``key`` and ``value``) with ``"logicalType": "map"``;
* date -> int/date, time -> long/time-micros, timestamp(tz) -> long/timestamp-micros and
  timestamp(tz)_ns -> long/timestamp-nanos with ``adjust-to-utc``, decimal(P,S) -> fixed
  ``decimal_P_S`` of the fewest bytes that hold P digits with logicalType decimal, uuid ->
  fixed[16] ``uuid_fixed`` with logicalType uuid, fixed[L] -> fixed ``fixed_L``, binary -> bytes,
  unknown -> null.

Values are handed to and taken from fastavro in their *raw* Avro form: icepark never lets
fastavro apply logical types (files are read with :func:`strip_logical_types` applied to the
reader schema). So dates, times and timestamps stay ints, a decimal is its fixed-size
two's-complement bytes and a uuid its 16 bytes. :func:`to_avro_value` and
:func:`from_avro_value` convert between that form and icepark's internal representation.
"""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from icepark.errors import InvalidSchemaError, InvalidValueError
from icepark.spec.conversions import decimal_to_unscaled, unscaled_to_decimal
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

__all__ = [
    "FIELD_ID_PROP",
    "ELEMENT_ID_PROP",
    "KEY_ID_PROP",
    "VALUE_ID_PROP",
    "ICEBERG_FIELD_NAME_PROP",
    "schema_to_avro",
    "type_to_avro",
    "avro_to_type",
    "avro_to_schema",
    "named_avro_types",
    "expanded_avro",
    "strip_logical_types",
    "to_avro_value",
    "from_avro_value",
    "decimal_required_bytes",
    "is_valid_avro_name",
    "make_compatible_name",
]

FIELD_ID_PROP = "field-id"
ELEMENT_ID_PROP = "element-id"
KEY_ID_PROP = "key-id"
VALUE_ID_PROP = "value-id"
ICEBERG_FIELD_NAME_PROP = "iceberg-field-name"
_ADJUST_TO_UTC = "adjust-to-utc"

_PRIMITIVE_AVRO: dict[type[PrimitiveType], Any] = {
    BooleanType: "boolean",
    IntegerType: "int",
    LongType: "long",
    FloatType: "float",
    DoubleType: "double",
    StringType: "string",
    BinaryType: "bytes",
    UnknownType: "null",
    DateType: {"type": "int", "logicalType": "date"},
    TimeType: {"type": "long", "logicalType": "time-micros"},
    TimestampType: {"type": "long", "logicalType": "timestamp-micros", _ADJUST_TO_UTC: False},
    TimestamptzType: {"type": "long", "logicalType": "timestamp-micros", _ADJUST_TO_UTC: True},
    TimestampNanoType: {"type": "long", "logicalType": "timestamp-nanos", _ADJUST_TO_UTC: False},
    TimestamptzNanoType: {"type": "long", "logicalType": "timestamp-nanos", _ADJUST_TO_UTC: True},
}


def decimal_required_bytes(precision: int) -> int:
    """The fewest bytes whose two's-complement range holds every ``precision``-digit value."""
    if precision < 1:
        raise InvalidSchemaError(f"Invalid decimal precision: {precision}")
    n = 1
    while 2 ** (8 * n - 1) - 1 < 10**precision:
        n += 1
    return n


# -- names -----------------------------------------------------------------------------------


def _is_letter(ch: str) -> bool:
    return unicodedata.category(ch).startswith("L")


def _is_digit(ch: str) -> bool:
    return unicodedata.category(ch) == "Nd"


def _utf16_units(name: str) -> list[str]:
    """The name as Java sees it: UTF-16 code units, surrogates as lone characters."""
    raw = name.encode("utf-16-be", "surrogatepass")
    return [chr(int.from_bytes(raw[i : i + 2], "big")) for i in range(0, len(raw), 2)]


def is_valid_avro_name(name: str) -> bool:
    """Whether Java would keep ``name`` as an Avro field name unchanged."""
    if not name:
        return False
    units = _utf16_units(name)
    if not (_is_letter(units[0]) or units[0] == "_"):
        return False
    return all(_is_letter(c) or _is_digit(c) or c == "_" for c in units[1:])


def _sanitize_char(ch: str) -> str:
    if _is_digit(ch):
        return "_" + ch
    return "_x" + format(ord(ch), "X")


def make_compatible_name(name: str) -> str:
    """The Avro-safe form of ``name``, exactly as Java's ``AvroSchemaUtil.makeCompatibleName``."""
    if is_valid_avro_name(name):
        return name
    if not name:
        raise InvalidSchemaError("Empty field name")
    units = _utf16_units(name)
    first = units[0]
    out = [first if (_is_letter(first) or first == "_") else _sanitize_char(first)]
    for c in units[1:]:
        out.append(c if (_is_letter(c) or _is_digit(c) or c == "_") else _sanitize_char(c))
    return "".join(out)


# -- Iceberg -> Avro -------------------------------------------------------------------------


class _ToAvro:
    """One conversion: remembers the named types already defined so they are referenced after."""

    def __init__(self) -> None:
        self._defined: set[str] = set()

    def _named(self, definition: dict[str, Any]) -> Any:
        name = definition["name"]
        if name in self._defined:
            return name
        self._defined.add(name)
        return definition

    def convert(self, t: IcebergType, owner_id: int | None, record_name: str | None = None) -> Any:
        if isinstance(t, StructType):
            return self.struct(t, record_name or f"r{owner_id}")
        if isinstance(t, ListType):
            items = self.convert(t.element_type, t.element_id)
            if not t.element_required:
                items = _optional(items)
            return {"type": "array", "items": items, ELEMENT_ID_PROP: t.element_id}
        if isinstance(t, MapType):
            return self.map(t)
        if isinstance(t, PrimitiveType):
            return self.primitive(t)
        raise InvalidSchemaError(f"Cannot convert type to Avro: {t!r}")

    def struct(self, t: StructType, name: str) -> Any:
        fields = []
        for f in t.fields:
            avro_type = self.convert(f.field_type, f.field_id)
            if f.optional:
                avro_type = _optional(avro_type)
            valid = is_valid_avro_name(f.name)
            field: dict[str, Any] = {
                "name": f.name if valid else make_compatible_name(f.name),
                "type": avro_type,
            }
            if f.doc is not None:
                field["doc"] = f.doc
            if f.optional:
                field["default"] = None
            if not valid:
                field[ICEBERG_FIELD_NAME_PROP] = f.name
            field[FIELD_ID_PROP] = f.field_id
            fields.append(field)
        return self._named({"type": "record", "name": name, "fields": fields})

    def map(self, t: MapType) -> Any:
        string_keys = isinstance(t.key_type, StringType)
        # named types are defined where they first appear in the JSON: the key comes first
        key = None if string_keys else self.convert(t.key_type, t.key_id)
        value = self.convert(t.value_type, t.value_id)
        if not t.value_required:
            value = _optional(value)
        if string_keys:
            return {
                "type": "map",
                "values": value,
                KEY_ID_PROP: t.key_id,
                VALUE_ID_PROP: t.value_id,
            }
        record = self._named(
            {
                "type": "record",
                "name": f"k{t.key_id}_v{t.value_id}",
                "fields": [
                    {"name": "key", "type": key, FIELD_ID_PROP: t.key_id},
                    {"name": "value", "type": value, FIELD_ID_PROP: t.value_id},
                ],
            }
        )
        return {"type": "array", "items": record, "logicalType": "map"}

    def primitive(self, t: PrimitiveType) -> Any:
        simple = _PRIMITIVE_AVRO.get(type(t))
        if simple is not None:
            return dict(simple) if isinstance(simple, dict) else simple
        if isinstance(t, DecimalType):
            return self._named(
                {
                    "type": "fixed",
                    "name": f"decimal_{t.precision}_{t.scale}",
                    "size": decimal_required_bytes(t.precision),
                    "logicalType": "decimal",
                    "precision": t.precision,
                    "scale": t.scale,
                }
            )
        if isinstance(t, UUIDType):
            return self._named(
                {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}
            )
        if isinstance(t, FixedType):
            return self._named({"type": "fixed", "name": f"fixed_{t.length}", "size": t.length})
        raise InvalidSchemaError(f"Cannot convert type to Avro: {t}")


def _optional(avro_type: Any) -> Any:
    if avro_type == "null":
        return avro_type  # an unknown column is null already
    return ["null", avro_type]


def type_to_avro(t: IcebergType, name: str | None = None) -> Any:
    """The Avro schema of type ``t``; a top-level struct becomes a record called ``name``."""
    if isinstance(t, StructType) and name is None:
        raise InvalidSchemaError("A struct needs a record name to convert to Avro")
    return _ToAvro().convert(t, None, name)


def schema_to_avro(schema: Schema | StructType, name: str = "table") -> dict[str, Any]:
    """The Avro record schema of an Iceberg schema (or struct), with field ids."""
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    result = _ToAvro().struct(struct, name)
    assert isinstance(result, dict)
    return result


# -- Avro -> Iceberg -------------------------------------------------------------------------


class _FromAvro:
    def __init__(self, named_types: Mapping[str, Any] | None = None) -> None:
        self._named: dict[str, Any] = dict(named_types or {})

    def resolve(self, avro: Any) -> Any:
        if isinstance(avro, str) and avro in self._named:
            return self._named[avro]
        if (
            isinstance(avro, dict)
            and avro.get("type") in ("record", "fixed", "enum")
            and "name" in avro
        ):
            self._named[avro["name"]] = avro
        return avro

    def field_type(self, avro: Any) -> tuple[IcebergType, bool]:
        """The type of an Avro field or element, and whether it is optional."""
        avro = self.resolve(avro)
        if isinstance(avro, list):
            branches = [b for b in avro if b != "null"]
            if len(branches) == len(avro):
                raise InvalidSchemaError(f"Unsupported Avro union (no null branch): {avro}")
            if not branches:
                return UnknownType(), True
            if len(branches) > 1:
                raise InvalidSchemaError(f"Unsupported Avro union: {avro}")
            return self.convert(branches[0]), True
        converted = self.convert(avro)
        return converted, isinstance(converted, UnknownType)

    def convert(self, avro: Any) -> IcebergType:
        avro = self.resolve(avro)
        if isinstance(avro, str):
            return self.primitive(avro, {})
        if isinstance(avro, list):
            t, _ = self.field_type(avro)
            return t
        if not isinstance(avro, dict):
            raise InvalidSchemaError(f"Cannot read Avro schema: {avro!r}")
        kind = avro.get("type")
        if kind == "record":
            return self.record(avro)
        if kind == "array":
            items = self.resolve(avro.get("items"))
            if (
                avro.get("logicalType") == "map"
                and isinstance(items, dict)
                and items.get("type") == "record"
            ):
                return self.array_map(items)
            element, optional = self.field_type(items)
            return ListType(_id(avro, ELEMENT_ID_PROP), element, not optional)
        if kind == "map":
            value, optional = self.field_type(avro.get("values"))
            return MapType(
                _id(avro, KEY_ID_PROP), StringType(), _id(avro, VALUE_ID_PROP), value, not optional
            )
        if isinstance(kind, dict | list):
            return self.convert(kind)
        return self.primitive(str(kind), avro)

    def record(self, avro: dict[str, Any]) -> StructType:
        fields = []
        for f in avro.get("fields", []):
            t, optional = self.field_type(f.get("type"))
            fields.append(
                NestedField(
                    field_id=_id(f, FIELD_ID_PROP),
                    name=f.get(ICEBERG_FIELD_NAME_PROP, f.get("name")),
                    field_type=t,
                    required=not optional,
                    doc=f.get("doc"),
                )
            )
        return StructType(*fields)

    def array_map(self, record: dict[str, Any]) -> MapType:
        by_name = {f.get("name"): f for f in record.get("fields", [])}
        if "key" not in by_name or "value" not in by_name:
            raise InvalidSchemaError(f"Invalid Avro map record: {record}")
        key, _ = self.field_type(by_name["key"]["type"])
        value, optional = self.field_type(by_name["value"]["type"])
        key_id = _id(by_name["key"], FIELD_ID_PROP)
        value_id = _id(by_name["value"], FIELD_ID_PROP)
        return MapType(key_id, key, value_id, value, not optional)

    def primitive(self, kind: str, avro: dict[str, Any]) -> IcebergType:
        logical = avro.get("logicalType")
        utc = bool(avro.get(_ADJUST_TO_UTC, False))
        if kind == "int" and logical == "date":
            return DateType()
        if kind in ("int", "long") and logical in ("time-micros", "time-millis"):
            return TimeType()
        if kind == "long" and logical in ("timestamp-micros", "timestamp-millis"):
            return TimestamptzType() if utc else TimestampType()
        if kind == "long" and logical == "local-timestamp-micros":
            return TimestampType()
        if kind == "long" and logical == "timestamp-nanos":
            return TimestamptzNanoType() if utc else TimestampNanoType()
        if kind in ("fixed", "bytes") and logical == "decimal":
            return DecimalType(int(avro["precision"]), int(avro.get("scale", 0)))
        if kind in ("fixed", "string") and logical == "uuid":
            return UUIDType()
        if kind == "fixed":
            return FixedType(int(avro["size"]))
        simple = {
            "boolean": BooleanType(),
            "int": IntegerType(),
            "long": LongType(),
            "float": FloatType(),
            "double": DoubleType(),
            "string": StringType(),
            "bytes": BinaryType(),
            "null": UnknownType(),
            "enum": StringType(),
        }
        if kind in simple:
            return simple[kind]
        raise InvalidSchemaError(f"Unsupported Avro type: {kind!r}")


def _id(obj: dict[str, Any], prop: str) -> int:
    value = obj.get(prop)
    if value is None:
        raise InvalidSchemaError(f"Avro schema element has no {prop}: {obj.get('name', obj)!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidSchemaError(f"Invalid {prop} {value!r} in Avro schema") from None


def avro_to_type(avro: Any, named_types: Mapping[str, Any] | None = None) -> IcebergType:
    """The Iceberg type of an Avro schema written with field ids (as Iceberg writers do).

    A union ``["null", T]`` gives T. ``named_types`` resolves references to named types
    defined elsewhere in an enclosing schema (see :func:`named_avro_types`).
    """
    return _FromAvro(named_types).convert(avro)


def named_avro_types(avro: Any) -> dict[str, Any]:
    """Every named type (record, fixed, enum) defined in ``avro``, by name."""
    found: dict[str, Any] = {}

    def visit(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item)
        elif isinstance(node, dict):
            if node.get("type") in ("record", "fixed", "enum") and "name" in node:
                found.setdefault(node["name"], node)
            for key in ("type", "items", "values"):
                if key in node:
                    visit(node[key])
            for f in node.get("fields", []) if isinstance(node.get("fields"), list) else []:
                visit(f)

    visit(avro)
    return found


_NOT_ENCODED = frozenset(("doc", "default", "aliases", "namespace"))
_NAMED_KINDS = frozenset(("record", "enum", "fixed"))
_COMPLEX_KINDS = frozenset((*_NAMED_KINDS, "array", "map"))
_AVRO_PRIMITIVES = frozenset(
    ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
)


def expanded_avro(avro: Any, named_types: Mapping[str, Any] | None = None) -> Any:
    """``avro`` with each named type written out where it is used and what changes neither
    the encoding nor what the values mean left out (docs, defaults, aliases, namespaces and
    the names of records, enums and fixed types). Values encoded in one schema read the same
    in another whose expanded form is equal (field names, field ids, logical types and the
    order of union branches all count), so such bytes may be copied from file to file."""
    named = named_avro_types(avro) if named_types is None else named_types

    def walk(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, str):
            if node in _AVRO_PRIMITIVES:
                return node
            name = node if node in named else node.rsplit(".", 1)[-1]
            if name not in named:
                raise InvalidSchemaError(f"Unknown Avro type {node!r}")
            if name in seen:
                raise InvalidSchemaError(f"Recursive Avro type {node!r}")
            return walk(named[name], seen | {name})
        if isinstance(node, list):
            return [walk(branch, seen) for branch in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        kind = kind if isinstance(kind, str) else None
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _NOT_ENCODED or (key == "name" and kind in _NAMED_KINDS):
                continue
            if key == "type" and kind in _COMPLEX_KINDS:
                out[key] = value
            elif key in ("type", "items", "values"):
                out[key] = walk(value, seen)
            elif key == "fields" and isinstance(value, list):
                out[key] = [walk(f, seen) for f in value]
            else:
                out[key] = value
        return out

    return walk(avro, frozenset())


def avro_to_schema(avro: Any) -> Schema:
    """The Iceberg schema of an Avro record schema with field ids."""
    t = avro_to_type(avro)
    if not isinstance(t, StructType):
        raise InvalidSchemaError(f"An Avro record schema is needed, got {t}")
    return Schema(*t.fields)


def strip_logical_types(avro: Any) -> Any:
    """A copy of ``avro`` without ``logicalType`` anywhere: fastavro then leaves values raw."""
    if isinstance(avro, list):
        return [strip_logical_types(a) for a in avro]
    if not isinstance(avro, dict):
        return avro
    out: dict[str, Any] = {}
    for key, value in avro.items():
        if key == "logicalType":
            continue
        if key in ("type", "items", "values"):
            out[key] = strip_logical_types(value)
        elif key == "fields" and isinstance(value, list):
            out[key] = [strip_logical_types(f) for f in value]
        else:
            out[key] = value
    return out


# -- values ----------------------------------------------------------------------------------


def _avro_names(t: StructType) -> list[str]:
    return [make_compatible_name(f.name) for f in t.fields]


def to_avro_value(t: IcebergType, value: Any) -> Any:
    """An internal-representation value of ``t`` in the raw form fastavro writes."""
    if value is None:
        return None
    if isinstance(t, StructType):
        names = _avro_names(t)
        if isinstance(value, dict):
            return {
                name: to_avro_value(f.field_type, value.get(f.field_id))
                for name, f in zip(names, t.fields)
            }
        items = list(value)
        if len(items) != len(t.fields):
            raise InvalidValueError(f"Expected {len(t.fields)} values for {t}, got {len(items)}")
        return {name: to_avro_value(f.field_type, v) for name, f, v in zip(names, t.fields, items)}
    if isinstance(t, ListType):
        return [to_avro_value(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        if isinstance(t.key_type, StringType):
            return {k: to_avro_value(t.value_type, v) for k, v in value.items()}
        return [
            {"key": to_avro_value(t.key_type, k), "value": to_avro_value(t.value_type, v)}
            for k, v in value.items()
        ]
    if isinstance(t, DecimalType):
        if not isinstance(value, Decimal):
            raise InvalidValueError(f"Invalid value for type {t}: {value!r}: expected a Decimal")
        unscaled = decimal_to_unscaled(value, t.scale)
        size = decimal_required_bytes(t.precision)
        try:
            return unscaled.to_bytes(size, "big", signed=True)
        except OverflowError:
            raise InvalidValueError(
                f"Invalid value for type {t}: {value}: too many digits"
            ) from None
    if isinstance(t, UUIDType):
        if isinstance(value, uuid.UUID):
            return value.bytes
        if isinstance(value, bytes | bytearray) and len(value) == 16:
            return bytes(value)
        raise InvalidValueError(f"Invalid value for type uuid: {value!r}")
    if isinstance(t, FixedType | BinaryType):
        return bytes(value)
    if isinstance(t, FloatType | DoubleType):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidValueError(f"Invalid value for type {t}: {value!r}")
        return float(value)
    if isinstance(t, UnknownType):
        return None
    return value


def from_avro_value(t: IcebergType, value: Any) -> Any:
    """A raw value read by fastavro as the internal representation of ``t``.

    Structs come back as tuples in field order.
    """
    if value is None:
        return None
    if isinstance(t, StructType):
        names = _avro_names(t)
        return tuple(from_avro_value(f.field_type, value.get(n)) for n, f in zip(names, t.fields))
    if isinstance(t, ListType):
        return [from_avro_value(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        pairs: Iterable[tuple[Any, Any]]
        if isinstance(value, dict):
            pairs = value.items()
        else:
            pairs = ((kv["key"], kv["value"]) for kv in value)
        return {from_avro_value(t.key_type, k): from_avro_value(t.value_type, v) for k, v in pairs}
    if isinstance(t, DecimalType):
        if isinstance(value, Decimal):
            return value
        return unscaled_to_decimal(int.from_bytes(value, "big", signed=True), t.scale)
    if isinstance(t, UUIDType):
        if isinstance(value, uuid.UUID):
            return value
        if isinstance(value, str):
            return uuid.UUID(value)
        return uuid.UUID(bytes=bytes(value))
    if isinstance(t, FixedType | BinaryType):
        return bytes(value)
    if isinstance(t, UnknownType):
        return None
    return value
