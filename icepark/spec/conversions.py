"""Binary single-value serialization (spec Appendix D) and human-readable partition values.

The binary form is what manifests store for column lower/upper bounds and what manifest lists
store for partition field summaries. Values use icepark's internal representation (see
:mod:`icepark.spec.types`).

``partition_value_to_str`` gives the human string the Java implementation writes into partition
paths for a value of a given type (``Transform.toHumanString`` in Java). The calendar helpers
(``days_to_civil``, ``civil_to_days``) are shared with the JSON serialization and the
transforms; they work for any year, unlike :mod:`datetime`.
"""

from __future__ import annotations

import base64
import math
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from icepark.errors import InvalidValueError
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
    LongType,
    PrimitiveType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

__all__ = [
    "to_bytes",
    "from_bytes",
    "from_bytes_reader",
    "decimal_to_unscaled",
    "unscaled_to_decimal",
    "unscaled_to_min_bytes",
    "bytes_to_unscaled",
    "partition_value_to_str",
    "days_to_civil",
    "civil_to_days",
    "INT_MIN",
    "INT_MAX",
    "LONG_MIN",
    "LONG_MAX",
    "MICROS_PER_DAY",
    "NANOS_PER_DAY",
]

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
MICROS_PER_SECOND = 1_000_000
NANOS_PER_SECOND = 1_000_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND
NANOS_PER_DAY = 86_400 * NANOS_PER_SECOND

_INT = struct.Struct("<i")
_LONG = struct.Struct("<q")
_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")

# types stored as a 4-byte int / an 8-byte long
_INT_TYPES = (IntegerType, DateType)
_LONG_TYPES = (
    LongType,
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNanoType,
    TimestamptzNanoType,
)


def _invalid(t: IcebergType, value: Any, why: str = "") -> InvalidValueError:
    text = repr(value)
    if len(text) > 200:
        text = text[:200] + "..."
    suffix = f": {why}" if why else ""
    return InvalidValueError(f"Invalid value for type {t}: {text}{suffix}")


# -- decimals ------------------------------------------------------------------------------------


def decimal_to_unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` (``14.20`` at scale 2 -> ``1420``).

    A value with fewer fraction digits is scaled up exactly; one that would lose digits raises
    :class:`InvalidValueError`.
    """
    if not isinstance(value, Decimal) or not value.is_finite():
        raise InvalidValueError(f"Invalid decimal value at scale {scale}: {value!r}")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # finite
    magnitude = int("".join(map(str, digits))) if digits else 0
    shift = exponent + scale
    if shift >= 0:
        magnitude *= 10**shift
    else:
        magnitude, rest = divmod(magnitude, 10**-shift)
        if rest:
            raise InvalidValueError(
                f"Decimal value {value} has more than {scale} digits after the point"
            )
    return -magnitude if sign else magnitude


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    """The decimal whose unscaled value is ``unscaled`` at ``scale`` (exact, no rounding)."""
    sign = 1 if unscaled < 0 else 0
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((sign, digits, -scale))


def unscaled_to_min_bytes(unscaled: int) -> bytes:
    """Two's-complement big-endian bytes of ``unscaled`` in the fewest bytes (Java's
    ``BigInteger.toByteArray``): ``0`` -> ``00``, ``128`` -> ``00 80``, ``-128`` -> ``80``."""
    bits = (unscaled if unscaled >= 0 else ~unscaled).bit_length() + 1
    return unscaled.to_bytes((bits + 7) // 8, "big", signed=True)


def bytes_to_unscaled(b: bytes) -> int:
    """The integer held in two's-complement big-endian bytes (at least one byte)."""
    if len(b) == 0:
        raise InvalidValueError("Cannot read a decimal from zero bytes")
    return int.from_bytes(b, "big", signed=True)


def _check_decimal_precision(t: DecimalType, unscaled: int, value: Any) -> None:
    if abs(unscaled) >= 10**t.precision:
        raise _invalid(t, value, f"more than {t.precision} digits")


# -- binary serialization ------------------------------------------------------------------------


def _as_int(t: IcebergType, value: Any, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _invalid(t, value, "expected an int")
    if not low <= value <= high:
        raise _invalid(t, value, "out of range")
    return value


def _as_float(t: IcebergType, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(t, value, "expected a float")
    return float(value)


def _as_bytes(t: IcebergType, value: Any) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _invalid(t, value, "expected bytes")
    return bytes(value)


def to_bytes(t: PrimitiveType, value: Any) -> bytes:
    """Serialize one value of primitive type ``t`` to its binary single-value form."""
    if value is None:
        raise _invalid(t, value, "null has no binary form")
    if isinstance(t, BooleanType):
        if not isinstance(value, bool):
            raise _invalid(t, value, "expected a bool")
        return b"\x01" if value else b"\x00"
    if isinstance(t, _INT_TYPES):
        return _INT.pack(_as_int(t, value, INT_MIN, INT_MAX))
    if isinstance(t, _LONG_TYPES):
        return _LONG.pack(_as_int(t, value, LONG_MIN, LONG_MAX))
    if isinstance(t, FloatType):
        try:
            return _FLOAT.pack(_as_float(t, value))
        except OverflowError:
            raise _invalid(t, value, "out of range for a 32-bit float") from None
    if isinstance(t, DoubleType):
        return _DOUBLE.pack(_as_float(t, value))
    if isinstance(t, StringType):
        if not isinstance(value, str):
            raise _invalid(t, value, "expected a str")
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _invalid(t, value, f"not encodable as UTF-8 ({exc.reason})") from None
    if isinstance(t, UUIDType):
        if not isinstance(value, uuid.UUID):
            raise _invalid(t, value, "expected a uuid.UUID")
        return value.bytes
    if isinstance(t, FixedType):
        raw = _as_bytes(t, value)
        if len(raw) != t.length:
            raise _invalid(t, value, f"expected {t.length} bytes, got {len(raw)}")
        return raw
    if isinstance(t, BinaryType):
        return _as_bytes(t, value)
    if isinstance(t, DecimalType):
        unscaled = _decimal_unscaled(t, value)
        _check_decimal_precision(t, unscaled, value)
        return unscaled_to_min_bytes(unscaled)
    raise _invalid(t, value, "type has no binary single-value serialization")


def _decimal_unscaled(t: DecimalType, value: Any) -> int:
    if not isinstance(value, Decimal):
        raise _invalid(t, value, "expected a decimal.Decimal")
    try:
        return decimal_to_unscaled(value, t.scale)
    except InvalidValueError as exc:
        raise _invalid(t, value, str(exc)) from None


def from_bytes_reader(t: PrimitiveType) -> Callable[[bytes], Any]:
    """``lambda b: from_bytes(t, b)``, quicker for the types stored as a 4-byte int or an
    8-byte long (what evaluating column bounds reads most); any other length still goes
    through :func:`from_bytes`, which raises the same error."""
    if isinstance(t, _INT_TYPES):
        unpack_int = _INT.unpack

        def read_int(b: bytes) -> Any:
            return unpack_int(b)[0] if len(b) == 4 else from_bytes(t, b)

        return read_int
    if isinstance(t, _LONG_TYPES):
        unpack_long, unpack_int = _LONG.unpack, _INT.unpack
        promoted = isinstance(t, LongType)  # may be stored in 4 bytes, as an int was

        def read_long(b: bytes) -> Any:
            n = len(b)
            if n == 8:
                return unpack_long(b)[0]
            if n == 4 and promoted:
                return unpack_int(b)[0]
            return from_bytes(t, b)

        return read_long
    return lambda b: from_bytes(t, b)


def _expect_length(t: IcebergType, b: bytes, *lengths: int) -> None:
    if len(b) not in lengths:
        expected = " or ".join(str(n) for n in lengths)
        raise _invalid(t, b, f"expected {expected} bytes, got {len(b)}")


def from_bytes(t: PrimitiveType, b: bytes) -> Any:
    """Read one value of primitive type ``t`` from its binary single-value form.

    As in Java, a ``long`` may be stored in 4 bytes and a ``double`` in 4 (values written
    before the column was promoted from ``int`` / ``float``).
    """
    if not isinstance(b, bytes | bytearray | memoryview):
        raise _invalid(t, b, "expected bytes")
    b = bytes(b)
    if isinstance(t, BooleanType):
        _expect_length(t, b, 1)
        return b != b"\x00"
    if isinstance(t, _INT_TYPES):
        _expect_length(t, b, 4)
        return _INT.unpack(b)[0]
    if isinstance(t, LongType) and len(b) == 4:
        return _INT.unpack(b)[0]
    if isinstance(t, _LONG_TYPES):
        _expect_length(t, b, 8)
        return _LONG.unpack(b)[0]
    if isinstance(t, FloatType):
        _expect_length(t, b, 4)
        return _FLOAT.unpack(b)[0]
    if isinstance(t, DoubleType):
        _expect_length(t, b, 8, 4)
        return (_DOUBLE if len(b) == 8 else _FLOAT).unpack(b)[0]
    if isinstance(t, StringType):
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _invalid(t, b, f"not valid UTF-8 ({exc.reason})") from None
    if isinstance(t, UUIDType):
        _expect_length(t, b, 16)
        return uuid.UUID(bytes=b)
    if isinstance(t, FixedType):
        _expect_length(t, b, t.length)
        return b
    if isinstance(t, BinaryType):
        return b
    if isinstance(t, DecimalType):
        if not b:
            raise _invalid(t, b, "a decimal needs at least one byte")
        return unscaled_to_decimal(bytes_to_unscaled(b), t.scale)
    raise _invalid(t, b, "type has no binary single-value serialization")


# -- calendar ------------------------------------------------------------------------------------


def days_to_civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of the proleptic Gregorian date ``days`` after 1970-01-01."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


def civil_to_days(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the proleptic Gregorian date (no range checks)."""
    y = year - (1 if month <= 2 else 0)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


# -- human strings (Java Transform.toHumanString) ------------------------------------------------


def _iso_year(year: int) -> str:
    """A year as java.time's ISO formatters print it: 4+ digits, ``+`` above 9999."""
    if year > 9999:
        return f"+{year}"
    if year < 0:
        return f"-{-year:04d}"
    return f"{year:04d}"


def _fraction(value: int, digits: int) -> str:
    """``.fff`` with trailing zeros dropped, or nothing for zero (java.time ISO formatting)."""
    if value == 0:
        return ""
    return "." + f"{value:0{digits}d}".rstrip("0")


def _human_timestamp(value: int, per_second: int, digits: int, zone: bool) -> str:
    days, rest = divmod(value, 86_400 * per_second)
    seconds, frac = divmod(rest, per_second)
    year, month, day = days_to_civil(days)
    hour, minute, second = seconds // 3600, seconds // 60 % 60, seconds % 60
    text = (
        f"{_iso_year(year)}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
        f"{_fraction(frac, digits)}"
    )
    return text + "+00:00" if zone else text


def _human_time(micros: int) -> str:
    """java.time ``LocalTime.toString``: seconds only when non-zero, fraction in 3/6 digits."""
    seconds, frac = divmod(micros, MICROS_PER_SECOND)
    text = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}"
    if seconds % 60 or frac:
        text += f":{seconds % 60:02d}"
    if frac:
        text += f".{frac // 1000:03d}" if frac % 1000 == 0 else f".{frac:06d}"
    return text


def _human_day(days: int) -> str:
    year, month, day = days_to_civil(days)
    return f"{year:04d}-{month:02d}-{day:02d}"


def _shortest_digits(x: float, single: bool) -> str:
    """The shortest decimal string that reads back as ``x`` (as a 32-bit float if single)."""
    if not single:
        return repr(x)
    target = _FLOAT.pack(x)
    for precision in range(1, 10):
        text = f"{x:.{precision}g}"
        try:
            if _FLOAT.pack(float(text)) == target:
                return text
        except OverflowError:  # rounded up past the largest float
            continue
    return repr(x)


def _java_float_str(x: float, single: bool) -> str:
    """Java's ``Double.toString`` / ``Float.toString``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(_shortest_digits(x, single)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    exponent += len(digit_tuple) - len(digits)
    sci = len(digits) - 1 + exponent  # value = d.ddd * 10**sci
    prefix = "-" if sign else ""
    if -3 <= sci < 7:
        if sci >= 0:
            whole = digits[: sci + 1].ljust(sci + 1, "0")
            frac = digits[sci + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-sci - 1) + digits
        return f"{prefix}{whole}.{frac}"
    return f"{prefix}{digits[0]}.{digits[1:] or '0'}E{sci}"


def partition_value_to_str(t: IcebergType, value: Any) -> str:
    """The human string of a value of type ``t`` as Java writes it into partition paths.

    ``null`` for None; dates ``2024-01-05``; times ``10:00`` / ``10:00:01.5``-style
    (``LocalTime.toString``); timestamps ``2024-01-05T10:00:00`` with the fraction only when
    non-zero; timestamptz adds ``+00:00``; fixed and binary in base64; decimals as
    ``BigDecimal.toString``; booleans ``true``/``false``; floats as Java prints them.
    """
    if value is None:
        return "null"
    if isinstance(t, BooleanType):
        return "true" if value else "false"
    if isinstance(t, DateType):
        return _human_day(value)
    if isinstance(t, TimeType):
        return _human_time(value)
    if isinstance(t, TimestampType | TimestamptzType):
        return _human_timestamp(value, MICROS_PER_SECOND, 6, isinstance(t, TimestamptzType))
    if isinstance(t, TimestampNanoType | TimestamptzNanoType):
        zone = isinstance(t, TimestamptzNanoType)
        return _human_timestamp(value, NANOS_PER_SECOND, 9, zone)
    if isinstance(t, FixedType | BinaryType):
        return base64.b64encode(_as_bytes(t, value)).decode("ascii")
    if isinstance(t, DecimalType):
        return str(unscaled_to_decimal(_decimal_unscaled(t, value), t.scale))
    if isinstance(t, FloatType | DoubleType):
        return _java_float_str(_as_float(t, value), isinstance(t, FloatType))
    if isinstance(t, UnknownType):
        return "null"
    return str(value)
