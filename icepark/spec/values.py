"""JSON single-value serialization (spec Appendix D), used for field defaults and REST.

``to_json(value, t)`` turns a value in icepark's internal representation (see
:mod:`icepark.spec.types`) into a JSON-compatible Python object; ``from_json(obj, t)`` reads it
back, checking the JSON kind strictly (``true`` is not an int, ``1`` is not a string). Structs
are read as ``{field_id: value}`` dicts holding every field of the struct (missing ones None).

Formats follow the spec and the Java ``SingleValueParser``: decimals as strings at the type's
scale (``"14.20"``, ``"2E+20"``); ISO dates, times and timestamps with 6 fraction digits (9 for
the ``_ns`` types); timestamptz with a ``+00:00`` offset (only a zero offset is accepted on
read); uuids in lowercase; fixed and binary in lowercase hex (read in either case).
"""

from __future__ import annotations

import math
import re
import struct
import uuid
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from icepark.errors import InvalidValueError
from icepark.spec.conversions import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    civil_to_days,
    days_to_civil,
    decimal_to_unscaled,
    unscaled_to_decimal,
)
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

__all__ = ["to_json", "from_json"]

_FLOAT = struct.Struct("<f")
_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

_DATE = r"(?P<year>[+-]?\d{4,9})-(?P<month>\d{2})-(?P<day>\d{2})"
_TIME = r"(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.(?P<fraction>\d{1,9}))?)?"
_OFFSET = r"(?P<offset>[Zz]|[+-]\d{2}:\d{2}(?::\d{2})?)"
_DATE_RE = re.compile(f"^{_DATE}$")
_TIME_RE = re.compile(f"^{_TIME}$")
_TIMESTAMP_RE = re.compile(f"^{_DATE}[Tt]{_TIME}{_OFFSET}?$")
_DECIMAL_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
_HEX_RE = re.compile(r"^(?:[0-9a-fA-F]{2})*$")

_TS_TYPES = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)
_ZONED = (TimestamptzType, TimestamptzNanoType)
_NANO = (TimestampNanoType, TimestamptzNanoType)


def _invalid(t: IcebergType, value: Any, why: str = "") -> InvalidValueError:
    text = repr(value)
    if len(text) > 200:
        text = text[:200] + "..."
    suffix = f": {why}" if why else ""
    return InvalidValueError(f"Invalid value for type {t}: {text}{suffix}")


# -- writing -------------------------------------------------------------------------------------


def _check_int(t: IcebergType, value: Any, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _invalid(t, value, "expected an int")
    if not low <= value <= high:
        raise _invalid(t, value, "out of range")
    return value


def _float_to_json(t: IcebergType, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(t, value, "expected a float")
    x = float(value)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if isinstance(t, FloatType):
        try:
            packed = _FLOAT.pack(x)
        except OverflowError:
            raise _invalid(t, value, "out of range for a 32-bit float") from None
        # the shortest decimal that reads back as the same 32-bit float
        for precision in range(1, 10):
            candidate = float(f"{x:.{precision}g}")
            if _packs_to(candidate, packed):
                return candidate
    return x


def _packs_to(x: float, packed: bytes) -> bool:
    try:
        return _FLOAT.pack(x) == packed
    except OverflowError:
        return False


def _iso_year(year: int) -> str:
    if year > 9999:
        return f"+{year}"
    if year < 0:
        return f"-{-year:04d}"
    return f"{year:04d}"


def _iso_date(days: int) -> str:
    year, month, day = days_to_civil(days)
    return f"{_iso_year(year)}-{month:02d}-{day:02d}"


def _iso_time(seconds: int, fraction: int, digits: int) -> str:
    hms = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return f"{hms}.{fraction:0{digits}d}"


def _timestamp_to_json(t: IcebergType, value: Any) -> str:
    value = _check_int(t, value, LONG_MIN, LONG_MAX)
    per_second, digits = (10**9, 9) if isinstance(t, _NANO) else (10**6, 6)
    days, rest = divmod(value, 86_400 * per_second)
    seconds, fraction = divmod(rest, per_second)
    text = f"{_iso_date(days)}T{_iso_time(seconds, fraction, digits)}"
    return text + "+00:00" if isinstance(t, _ZONED) else text


def _decimal_to_json(t: DecimalType, value: Any) -> str:
    if not isinstance(value, Decimal):
        raise _invalid(t, value, "expected a decimal.Decimal")
    try:
        unscaled = decimal_to_unscaled(value, t.scale)
    except InvalidValueError as exc:
        raise _invalid(t, value, str(exc)) from None
    if abs(unscaled) >= 10**t.precision:
        raise _invalid(t, value, f"more than {t.precision} digits")
    exact = unscaled_to_decimal(unscaled, t.scale)
    # a scale >= 0 is written plainly ("14.20"); a negative one in scientific notation
    return format(exact, "f") if t.scale >= 0 else str(exact)


def _bytes_to_json(t: IcebergType, value: Any) -> str:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _invalid(t, value, "expected bytes")
    raw = bytes(value)
    if isinstance(t, FixedType) and len(raw) != t.length:
        raise _invalid(t, value, f"expected {t.length} bytes, got {len(raw)}")
    return raw.hex()


def _struct_to_json(t: StructType, value: Any) -> dict[str, Any]:
    fields = t.fields
    if isinstance(value, Mapping):
        known = {f.field_id for f in fields}
        extra = [k for k in value if k not in known]
        if extra:
            raise _invalid(t, value, f"no fields with ids {extra}")
        items = [(f, value.get(f.field_id)) for f in fields]
    elif isinstance(value, tuple | list):
        if len(value) != len(fields):
            raise _invalid(t, value, f"expected {len(fields)} values, got {len(value)}")
        items = list(zip(fields, value))
    else:
        raise _invalid(t, value, "expected a tuple or a dict keyed by field id")
    return {str(f.field_id): to_json(v, f.field_type) for f, v in items if v is not None}


def to_json(value: Any, t: IcebergType) -> Any:
    """The JSON single-value form of ``value`` (of type ``t``); None for null."""
    if value is None:
        return None
    if isinstance(t, BooleanType):
        if not isinstance(value, bool):
            raise _invalid(t, value, "expected a bool")
        return value
    if isinstance(t, IntegerType):
        return _check_int(t, value, INT_MIN, INT_MAX)
    if isinstance(t, LongType):
        return _check_int(t, value, LONG_MIN, LONG_MAX)
    if isinstance(t, FloatType | DoubleType):
        return _float_to_json(t, value)
    if isinstance(t, DecimalType):
        return _decimal_to_json(t, value)
    if isinstance(t, DateType):
        return _iso_date(_check_int(t, value, INT_MIN, INT_MAX))
    if isinstance(t, TimeType):
        micros = _check_int(t, value, 0, 86_400 * 10**6 - 1)
        return _iso_time(micros // 10**6, micros % 10**6, 6)
    if isinstance(t, _TS_TYPES):
        return _timestamp_to_json(t, value)
    if isinstance(t, StringType):
        if not isinstance(value, str):
            raise _invalid(t, value, "expected a str")
        return value
    if isinstance(t, UUIDType):
        if not isinstance(value, uuid.UUID):
            raise _invalid(t, value, "expected a uuid.UUID")
        return str(value)
    if isinstance(t, FixedType | BinaryType):
        return _bytes_to_json(t, value)
    if isinstance(t, StructType):
        return _struct_to_json(t, value)
    if isinstance(t, ListType):
        if not isinstance(value, list | tuple):
            raise _invalid(t, value, "expected a list")
        return [to_json(v, t.element_type) for v in value]
    if isinstance(t, MapType):
        if not isinstance(value, Mapping):
            raise _invalid(t, value, "expected a dict")
        return {
            "keys": [to_json(k, t.key_type) for k in value],
            "values": [to_json(v, t.value_type) for v in value.values()],
        }
    if isinstance(t, UnknownType):
        raise _invalid(t, value, "unknown values are always null")
    raise _invalid(t, value, "type has no JSON single-value serialization")


# -- reading -------------------------------------------------------------------------------------


def _read_int(t: IcebergType, obj: Any, low: int, high: int) -> int:
    if not isinstance(obj, int) or isinstance(obj, bool):
        raise _invalid(t, obj, "expected a JSON integer")
    if not low <= obj <= high:
        raise _invalid(t, obj, "out of range")
    return obj


def _read_float(t: IcebergType, obj: Any) -> float:
    if isinstance(obj, str) and obj in _SPECIAL_FLOATS:
        x = _SPECIAL_FLOATS[obj]
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        x = float(obj)
    else:
        raise _invalid(t, obj, "expected a JSON number")
    if isinstance(t, FloatType) and math.isfinite(x):
        try:
            x = _FLOAT.unpack(_FLOAT.pack(x))[0]
        except OverflowError:
            raise _invalid(t, obj, "out of range for a 32-bit float") from None
    return x


def _read_str(t: IcebergType, obj: Any) -> str:
    if not isinstance(obj, str):
        raise _invalid(t, obj, "expected a JSON string")
    return obj


def _read_decimal(t: DecimalType, obj: Any) -> Decimal:
    text = _read_str(t, obj)
    if not _DECIMAL_RE.match(text):
        raise _invalid(t, obj, "not a decimal number")
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise _invalid(t, obj, "not a decimal number") from None
    exponent = value.as_tuple().exponent
    if exponent != -t.scale:
        raise _invalid(t, obj, f"the scale must be {t.scale}")
    if len(value.as_tuple().digits) > t.precision and value != 0:
        raise _invalid(t, obj, f"more than {t.precision} digits")
    return value


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _parse_date(t: IcebergType, obj: Any, m: re.Match[str]) -> int:
    year, month, day = int(m["year"]), int(m["month"]), int(m["day"])
    if not 1 <= month <= 12 or not 1 <= day <= _days_in_month(year, month):
        raise _invalid(t, obj, "not a valid date")
    return civil_to_days(year, month, day)


def _parse_time(t: IcebergType, obj: Any, m: re.Match[str], digits: int) -> int:
    """The time of day of a matched ``_TIME`` in units of 10**-digits seconds."""
    hour, minute, second = int(m["hour"]), int(m["minute"]), int(m["second"] or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise _invalid(t, obj, "not a valid time")
    fraction = (m["fraction"] or "").ljust(9, "0")
    if fraction[digits:].strip("0"):
        raise _invalid(t, obj, f"more precise than {digits} fraction digits")
    return (hour * 3600 + minute * 60 + second) * 10**digits + int(fraction[:digits] or 0)


def _read_timestamp(t: IcebergType, obj: Any) -> int:
    text = _read_str(t, obj)
    m = _TIMESTAMP_RE.match(text)
    if m is None:
        raise _invalid(t, obj, "not an ISO-8601 timestamp")
    offset = m["offset"]
    if isinstance(t, _ZONED):
        if offset is None:
            raise _invalid(t, obj, "a timestamptz needs the offset +00:00")
        if offset not in ("Z", "z") and offset[1:].replace(":", "").strip("0"):
            raise _invalid(t, obj, "the offset must be +00:00")
    elif offset is not None:
        raise _invalid(t, obj, "a timestamp without zone must not have an offset")
    digits = 9 if isinstance(t, _NANO) else 6
    days = _parse_date(t, obj, m)
    value = days * 86_400 * 10**digits + _parse_time(t, obj, m, digits)
    if not LONG_MIN <= value <= LONG_MAX:
        raise _invalid(t, obj, "out of range")
    return value


def _read_bytes(t: IcebergType, obj: Any) -> bytes:
    text = _read_str(t, obj)
    if not _HEX_RE.match(text):
        raise _invalid(t, obj, "not a hexadecimal string of whole bytes")
    if isinstance(t, FixedType) and len(text) != 2 * t.length:
        raise _invalid(t, obj, f"expected {t.length} bytes ({2 * t.length} hex digits)")
    return bytes.fromhex(text)


def _read_struct(t: StructType, obj: Any) -> dict[int, Any]:
    if not isinstance(obj, dict):
        raise _invalid(t, obj, "expected a JSON object keyed by field id")
    return {f.field_id: from_json(obj.get(str(f.field_id)), f.field_type) for f in t.fields}


def _read_map(t: MapType, obj: Any) -> dict[Any, Any]:
    if not isinstance(obj, dict) or not isinstance(obj.get("keys"), list):
        raise _invalid(t, obj, 'expected {"keys": [...], "values": [...]}')
    keys, values = obj["keys"], obj.get("values")
    if not isinstance(values, list):
        raise _invalid(t, obj, 'expected {"keys": [...], "values": [...]}')
    if len(keys) != len(values):
        raise _invalid(t, obj, f"{len(keys)} keys but {len(values)} values")
    out: dict[Any, Any] = {}
    for k, v in zip(keys, values):
        key = from_json(k, t.key_type)
        try:
            duplicate = key in out
        except TypeError:
            raise _invalid(t, obj, f"map keys of type {t.key_type} cannot be held") from None
        if duplicate:
            raise _invalid(t, obj, f"duplicate key {k!r}")
        out[key] = from_json(v, t.value_type)
    return out


def from_json(obj: Any, t: IcebergType) -> Any:
    """Read a value of type ``t`` from its JSON single-value form; None for null."""
    if obj is None:
        return None
    if isinstance(t, BooleanType):
        if not isinstance(obj, bool):
            raise _invalid(t, obj, "expected a JSON boolean")
        return obj
    if isinstance(t, IntegerType):
        return _read_int(t, obj, INT_MIN, INT_MAX)
    if isinstance(t, LongType):
        return _read_int(t, obj, LONG_MIN, LONG_MAX)
    if isinstance(t, FloatType | DoubleType):
        return _read_float(t, obj)
    if isinstance(t, DecimalType):
        return _read_decimal(t, obj)
    if isinstance(t, DateType):
        m = _DATE_RE.match(_read_str(t, obj))
        if m is None:
            raise _invalid(t, obj, "not an ISO-8601 date")
        days = _parse_date(t, obj, m)
        if not INT_MIN <= days <= INT_MAX:
            raise _invalid(t, obj, "out of range")
        return days
    if isinstance(t, TimeType):
        m = _TIME_RE.match(_read_str(t, obj))
        if m is None:
            raise _invalid(t, obj, "not an ISO-8601 time")
        return _parse_time(t, obj, m, 6)
    if isinstance(t, _TS_TYPES):
        return _read_timestamp(t, obj)
    if isinstance(t, StringType):
        return _read_str(t, obj)
    if isinstance(t, UUIDType):
        text = _read_str(t, obj)
        if not _UUID_RE.match(text):
            raise _invalid(t, obj, "not a uuid")
        return uuid.UUID(text)
    if isinstance(t, FixedType | BinaryType):
        return _read_bytes(t, obj)
    if isinstance(t, StructType):
        return _read_struct(t, obj)
    if isinstance(t, ListType):
        if not isinstance(obj, list):
            raise _invalid(t, obj, "expected a JSON array")
        return [from_json(v, t.element_type) for v in obj]
    if isinstance(t, MapType):
        return _read_map(t, obj)
    if isinstance(t, UnknownType):
        raise _invalid(t, obj, "unknown values are always null")
    raise _invalid(t, obj, "type has no JSON single-value serialization")
