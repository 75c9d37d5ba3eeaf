"""Binding a ``CALL``'s arguments to a procedure's parameters, as Java's ``ResolveProcedures``
and ``ProcedureInput`` do: positional or ``name => value`` (not both), names matched
case-insensitively, required ones present, none twice or unknown, and each value converted to
the parameter's type (a string ``'5'`` is a long, ``TIMESTAMP '...'`` or a string is a
timestamp in the session's time zone, a number a timestamp in seconds, ``map(...)`` a dict).
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
        except (ValueError, TypeError) as exc:
            raise fail(key, f"Invalid value {arg.value!r} ({exc})") from None
    return out


def _convert(kind: str, value: Any, time_zone: str) -> Any:
    if kind == "string":
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise TypeError("expected a string")
        return str(value)
    if kind in ("long", "int"):
        if isinstance(value, bool):
            raise TypeError("expected an integer")
        if isinstance(value, str):
            return int(value.strip())
        if isinstance(value, int):
            return value
        raise TypeError("expected an integer")
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise TypeError("expected a boolean")
    if kind == "timestamp":
        return _timestamp_ms(value, time_zone)
    if kind == "map":
        if not isinstance(value, tuple):
            raise TypeError("expected map(key, value, ...)")
        return {str(k): _text(v) for k, v in value}
    if kind in ("long_array", "string_array"):
        if not isinstance(value, list):
            raise TypeError("expected array(...)")
        element = "long" if kind == "long_array" else "string"
        return [_convert(element, v, time_zone) for v in value]
    raise TypeError(f"unknown parameter kind {kind}")  # pragma: no cover


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _timestamp_ms(value: Any, time_zone: str) -> int:
    """Epoch milliseconds of a timestamp argument, as Spark casts it to a timestamp."""
    if isinstance(value, A.TypedLiteral):
        if value.type_name not in ("TIMESTAMP", "TIMESTAMP_LTZ", "DATE"):
            raise TypeError(f"expected a timestamp, got {value.type_name}")
        value = value.value
    if isinstance(value, bool):
        raise TypeError("expected a timestamp")
    if isinstance(value, int | float):
        return round(value * 1000)  # Spark: a number cast to a timestamp is seconds
    if not isinstance(value, str):
        raise TypeError("expected a timestamp")
    text = value.strip().replace(" ", "T", 1) if " " in value.strip() else value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = dt.datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=ZoneInfo(time_zone))
    return int(parsed.timestamp() * 1000)
