"""Binding a ``CALL``'s arguments to a procedure's parameters, as Java's ``ResolveProcedures``
and ``ProcedureInput`` do: positional or ``name => value`` (not both), names matched
case-insensitively, required ones present, none twice or unknown, and each value of a type
that Spark up-casts to the parameter's, as Java requires (else "Wrong arg type ... cannot
cast StringType to LongType"): a long takes an integer, an int one that fits 32 bits, a
boolean only ``true``/``false``, a timestamp ``TIMESTAMP '...'``, ``TIMESTAMP_NTZ '...'`` or
``DATE '...'`` (in the session's time zone; not a string or a number), a string any string,
number or boolean, ``map(...)`` a dict of strings, ``array(...)`` a list of the element's type.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from icepark.spark.sql import ext_ast as A
from icepark.spark.sql.errors import ProcedureArgumentError

__all__ = ["Param", "bind_arguments"]


@dataclass(frozen=True)
class Param:
    """A parameter: ``kind`` is ``string``, ``long``, ``int``, ``boolean``, ``timestamp``
    (epoch milliseconds), ``map`` (str -> str), ``long_array`` or ``string_array``."""

    name: str
    kind: str
    required: bool = False


def bind_arguments(
    procedure: str,
    params: tuple[Param, ...],
    call: A.Call,
    time_zone: str,
) -> dict[str, Any]:
    """The call's arguments by parameter name, converted; parameters not given are absent."""
    names = [p.name for p in params]

    def fail(argument: str, problem: str) -> ProcedureArgumentError:
        return ProcedureArgumentError(procedure, argument, problem, names, call.sql)

    named = [a for a in call.arguments if a.name is not None]
    if named and len(named) != len(call.arguments):
        raise fail(named[0].name or "", "Named and positional arguments cannot be mixed")
    given: dict[str, A.CallArgument] = {}
    if named:
        for arg in call.arguments:
            key = (arg.name or "").lower()
            if key not in names:
                raise fail(arg.name or "", "Unknown argument")
            if key in given:
                raise fail(key, "Duplicate argument")
            given[key] = arg
    else:
        if len(call.arguments) > len(params):
            raise fail(str(len(call.arguments)), "Too many arguments")
        given = {p.name: a for p, a in zip(params, call.arguments, strict=False)}
    missing = [p.name for p in params if p.required and p.name not in given]
    if missing:
        raise fail(", ".join(missing), "Missing required arguments")
    by_name = {p.name: p for p in params}
    out: dict[str, Any] = {}
    for key, arg in given.items():
        if arg.value is None:
            continue
        try:
            out[key] = _convert(by_name[key].kind, arg.value, time_zone)
        except TypeError as exc:
            raise fail(key, str(exc)) from None
        except ValueError as exc:
            raise fail(key, f"Invalid value {arg.value!r} ({exc})") from None
    return out


_SPARK_KIND = {
    "string": "StringType",
    "long": "LongType",
    "int": "IntegerType",
    "boolean": "BooleanType",
    "timestamp": "TimestampType",
    "map": "MapType(StringType,StringType,true)",
    "long_array": "ArrayType(LongType,true)",
    "string_array": "ArrayType(StringType,true)",
}
_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1


def _spark_type(value: Any) -> str:
    """The Spark type of a ``CALL`` constant, as Java's error names it."""
    if isinstance(value, bool):
        return "BooleanType"
    if isinstance(value, int):
        return "IntegerType" if -_INT_MAX - 1 <= value <= _INT_MAX else "LongType"
    if isinstance(value, float):
        return "DecimalType"
    if isinstance(value, str):
        return "StringType"
    if isinstance(value, A.TypedLiteral):
        return value.type_name.title().replace("_", "") + "Type"
    if isinstance(value, tuple):
        return "MapType"
    if isinstance(value, list):
        return f"ArrayType({_spark_type(value[0]) if value else 'NullType'})"
    return type(value).__name__  # pragma: no cover


def _wrong(kind: str, value: Any) -> TypeError:
    return TypeError(f"Wrong arg type: cannot cast {_spark_type(value)} to {_SPARK_KIND[kind]}")


def _convert(kind: str, value: Any, time_zone: str) -> Any:
    if kind == "string":
        if not isinstance(value, str | int | float):  # a bool is an int
            raise _wrong(kind, value)
        return _text(value)
    if kind in ("long", "int"):
        limit = _INT_MAX if kind == "int" else _LONG_MAX
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not -limit - 1 <= value <= limit
        ):
            raise _wrong(kind, value)
        return value
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        raise _wrong(kind, value)
    if kind == "timestamp":
        if not isinstance(value, A.TypedLiteral):
            raise _wrong(kind, value)
        return _timestamp_ms(value, time_zone)
    if kind == "map":
        if not isinstance(value, tuple):
            raise _wrong(kind, value)
        return {
            _convert("string", k, time_zone): _convert("string", v, time_zone) for k, v in value
        }
    if kind in ("long_array", "string_array"):
        if not isinstance(value, list):
            raise _wrong(kind, value)
        element = "long" if kind == "long_array" else "string"
        try:
            return [_convert(element, v, time_zone) for v in value]
        except TypeError:
            raise _wrong(kind, value) from None
    raise TypeError(f"unknown parameter kind {kind}")  # pragma: no cover


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _timestamp_ms(value: A.TypedLiteral, time_zone: str) -> int:
    """Epoch milliseconds of a timestamp argument, as Spark casts it to a timestamp (a
    timestamp without zone or a date in the session's time zone)."""
    if value.type_name not in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP_NTZ", "DATE"):
        raise _wrong("timestamp", value)
    text = value.value.strip()
    text = text.replace(" ", "T", 1) if " " in text else text
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = dt.datetime.fromisoformat(text)
    if parsed.tzinfo is None or value.type_name == "TIMESTAMP_NTZ":
        parsed = parsed.replace(tzinfo=ZoneInfo(time_zone))
    return int(parsed.timestamp() * 1000)
