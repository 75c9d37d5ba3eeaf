"""Converting literals (Python values and strings) to a column type's internal representation.

:func:`to_literal` gives the exact internal value (see :mod:`icepark.spec.types`) or raises
:class:`~icepark.errors.ValidationError`. :func:`convert_literal` is what binding uses: besides
exact values it may give

* :data:`ABOVE_MAX` / :data:`BELOW_MIN` when the value is beyond the type's range (a long for
  an ``int`` column, a double beyond ``float``'s range, a decimal with too many digits). As in
  Java, binding turns ``int_col < 2**40`` into ``true`` and ``int_col = 2**40`` into ``false``.
* :class:`Inexact` when the value falls strictly between two values of the type (a decimal
  with more fraction digits than the column's scale, ``2.5`` for an integer column, a
  timestamp that is not midnight for a date column, nanoseconds for a microsecond timestamp).
  Binding then rewrites the predicate exactly instead of rounding (Java rounds decimals,
  which can change results): ``= x`` is ``false``, ``!= x`` is ``true``, ``< x`` and ``<= x``
  become ``<= floor``, ``> x`` and ``>= x`` become ``> floor``; such values are dropped from
  ``in`` / ``not in`` sets.

Accepted inputs per type: boolean (bool, ``'true'``/``'false'``); int/long (int, integral
Decimal/float, numeric strings); float/double (int, float, Decimal, numeric strings; a float
column rounds the value to the nearest 32-bit float, as Java does); decimal (Decimal, int,
float, numeric strings); date (days as int, ``date``, ``datetime``, ``'2024-01-01'`` or a
timestamp string); time (micros as int, ``time``, ``'10:30:00.5'``); timestamp / timestamptz
and their ``_ns`` forms (micros/nanos as int, ``date``, ``datetime``, strings
``'2024-01-01'``, ``'2024-01-01T10:00:00'``, ``'2024-01-01 10:00:00.123456+02:00'``). Zone
offsets are converted to UTC for ``timestamptz`` (a naive value is taken as UTC) and for
``date``; a ``timestamp`` (without zone) refuses them. string (str); uuid (UUID, str, 16
bytes); fixed (bytes of the exact length); binary (bytes).
"""

from __future__ import annotations

import datetime
import math
import re
import struct
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from icepark.errors import ValidationError
from icepark.spec.conversions import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    MICROS_PER_DAY,
    NANOS_PER_DAY,
    civil_to_days,
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
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["ABOVE_MAX", "BELOW_MIN", "Inexact", "convert_literal", "to_literal"]


class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


ABOVE_MAX: Any = _Sentinel("ABOVE_MAX")
"""The value is above every value of the column type."""
BELOW_MIN: Any = _Sentinel("BELOW_MIN")
"""The value is below every value of the column type."""


class Inexact:
    """The value lies strictly between ``floor`` and the next value of the column type."""

    __slots__ = ("floor",)

    def __init__(self, floor: Any) -> None:
        self.floor = floor

    def __repr__(self) -> str:
        return f"Inexact(floor={self.floor!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Inexact) and other.floor == self.floor

    def __hash__(self) -> int:
        return hash(("Inexact", self.floor))


_FLOAT32 = struct.Struct("<f")
_FLOAT32_MAX = 3.4028234663852886e38
_MICROS_PER_SECOND = 1_000_000


class _Mismatch(Exception):
    """Internal: the value cannot be converted; the message says why (may be empty)."""


def to_literal(value: Any, iceberg_type: IcebergType, column: str | None = None) -> Any:
    """``value`` in the internal representation of ``iceberg_type``; ValidationError if it
    cannot be converted exactly (wrong kind, unparsable string, out of range, inexact)."""
    result = convert_literal(value, iceberg_type, column)
    if result is ABOVE_MAX or result is BELOW_MIN:
        raise _error(value, iceberg_type, column, "out of range for the type")
    if isinstance(result, Inexact):
        raise _error(value, iceberg_type, column, "not exactly representable in the type")
    return result


def convert_literal(value: Any, iceberg_type: IcebergType, column: str | None = None) -> Any:
    """Like :func:`to_literal`, but gives ABOVE_MAX, BELOW_MIN or an Inexact (see the module
    docstring) instead of raising for out-of-range and inexact values."""
    if value is None:
        raise _error(value, iceberg_type, column, "null is not a literal (use is null)")
    converter = _CONVERTERS.get(type(iceberg_type))
    if converter is None:
        raise _error(value, iceberg_type, column, "the type cannot be compared with literals")
    try:
        return converter(value, iceberg_type)
    except _Mismatch as exc:
        raise _error(value, iceberg_type, column, str(exc)) from None


def _error(value: Any, t: IcebergType, column: str | None, why: str) -> ValidationError:
    text = repr(value)
    if len(text) > 120:
        text = text[:120] + "..."
    where = f" for column {column!r}" if column else ""
    return ValidationError(f"Invalid literal {text}{where} of type {t}: {why}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind_error(expected: str) -> _Mismatch:
    return _Mismatch(f"expected {expected}")


# -- numbers -------------------------------------------------------------------------------------


def _parse_number(text: str) -> int | Decimal:
    s = text.strip()
    if re.fullmatch(r"[+-]?\d+", s):
        return int(s)
    try:
        d = Decimal(s)
    except InvalidOperation:
        raise _Mismatch("not a number") from None
    if not d.is_finite():
        raise _Mismatch("not a finite number")
    return d


def _floor_scaled(value: Decimal, scale: int) -> tuple[int, bool]:
    """(floor(value * 10**scale), whether that is exact), in exact integer arithmetic."""
    if not value.is_finite():
        raise _Mismatch("not a finite number")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    magnitude = int("".join(map(str, digits))) if digits else 0
    shift = exponent + scale
    if shift >= 0:
        scaled = magnitude * 10**shift
        return (-scaled if sign else scaled), True
    q, r = divmod(magnitude, 10**-shift)
    if sign:
        return (-q - 1 if r else -q), r == 0
    return q, r == 0


def _integral(value: Any, low: int, high: int) -> Any:
    if isinstance(value, str):
        value = _parse_number(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise _Mismatch("NaN is not an integer")
        if math.isinf(value):
            return ABOVE_MAX if value > 0 else BELOW_MIN
        value = Decimal(repr(value))
    if isinstance(value, Decimal):
        floor, exact = _floor_scaled(value, 0)
        if not exact:
            if floor > high:
                return ABOVE_MAX
            if floor < low:
                return BELOW_MIN
            return Inexact(floor)
        value = floor
    if not _is_int(value):
        raise _kind_error("an integer")
    if value > high:
        return ABOVE_MAX
    if value < low:
        return BELOW_MIN
    return value


def _to_int(value: Any, t: IcebergType) -> Any:
    return _integral(value, INT_MIN, INT_MAX)


def _to_long(value: Any, t: IcebergType) -> Any:
    return _integral(value, LONG_MIN, LONG_MAX)


def _as_python_float(value: Any) -> float:
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise _Mismatch("not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise _kind_error("a number")
    if isinstance(value, Decimal) and value.is_nan():
        raise _Mismatch("NaN is not a literal (use is nan)")
    return float(value)


def _to_double(value: Any, t: IcebergType) -> Any:
    x = _as_python_float(value)
    if math.isnan(x):
        raise _Mismatch("NaN is not a literal (use is nan)")
    return x


def _to_float(value: Any, t: IcebergType) -> Any:
    x = _to_double(value, t)
    if math.isinf(x):
        return x
    if x > _FLOAT32_MAX:
        return ABOVE_MAX
    if x < -_FLOAT32_MAX:
        return BELOW_MIN
    try:
        rounded: float = _FLOAT32.unpack(_FLOAT32.pack(x))[0]
    except OverflowError:
        return ABOVE_MAX if x > 0 else BELOW_MIN
    return rounded


def _to_decimal(value: Any, t: IcebergType) -> Any:
    assert isinstance(t, DecimalType)
    if isinstance(value, str):
        value = _parse_number(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            if math.isnan(value):
                raise _Mismatch("NaN is not a literal (use is nan)")
            return ABOVE_MAX if value > 0 else BELOW_MIN
        value = Decimal(repr(value))
    if _is_int(value):
        value = Decimal(value)
    if not isinstance(value, Decimal):
        raise _kind_error("a decimal number")
    floor, exact = _floor_scaled(value, t.scale)
    limit = 10**t.precision
    if floor >= limit:
        return ABOVE_MAX
    if floor <= -limit:
        return BELOW_MIN
    result = unscaled_to_decimal(floor, t.scale)
    return result if exact else Inexact(result)


def _to_boolean(value: Any, t: IcebergType) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _kind_error("a boolean")


# -- dates and times -----------------------------------------------------------------------------

_DATETIME = re.compile(
    r"^\s*([+-]?\d{4,})-(\d{1,2})-(\d{1,2})"
    r"(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"\s*(Z|z|UTC|[+-]\d{2}(?::?\d{2})?)?\s*$"
)
_TIME = re.compile(r"^\s*(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s*$")


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _nanos_of_day(h: str, mi: str, s: str | None, frac: str | None) -> int:
    hour, minute, second = int(h), int(mi), int(s or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise _Mismatch("not a valid time of day")
    nanos = int((frac or "").ljust(9, "0")) if frac else 0
    return ((hour * 60 + minute) * 60 + second) * 1_000_000_000 + nanos


def _parse_datetime(text: str) -> tuple[int, bool, int | None]:
    """(nanos since epoch before applying the offset, whether a time was given, offset secs)."""
    m = _DATETIME.match(text)
    if m is None:
        raise _Mismatch("not a date or timestamp like '2024-01-31' or '2024-01-31T10:00:00'")
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if not 1 <= month <= 12 or not 1 <= day <= _days_in_month(year, month):
        raise _Mismatch("not a valid calendar date")
    has_time = m.group(4) is not None
    nanos = civil_to_days(year, month, day) * NANOS_PER_DAY
    if has_time:
        nanos += _nanos_of_day(m.group(4), m.group(5), m.group(6), m.group(7))
    offset: int | None = None
    zone = m.group(8)
    if zone is not None:
        if not has_time:
            raise _Mismatch("a zone offset needs a time of day")
        if zone in ("Z", "z", "UTC"):
            offset = 0
        else:
            digits = zone[1:].replace(":", "")
            hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
            if hours > 18 or minutes > 59:
                raise _Mismatch("not a valid zone offset")
            offset = (hours * 3600 + minutes * 60) * (1 if zone[0] == "+" else -1)
    return nanos, has_time, offset


def _datetime_nanos(value: datetime.datetime) -> tuple[int, int | None]:
    naive = value.replace(tzinfo=None)
    days = civil_to_days(naive.year, naive.month, naive.day)
    nanos = (
        days * NANOS_PER_DAY
        + ((naive.hour * 60 + naive.minute) * 60 + naive.second) * 1_000_000_000
        + naive.microsecond * 1000
    )
    offset_delta = value.utcoffset()
    offset = None if offset_delta is None else int(offset_delta.total_seconds())
    return nanos, offset


def _epoch_nanos(value: Any, with_zone: bool | None) -> int:
    """Nanoseconds since the epoch (UTC) of a date, datetime or string value.

    ``with_zone``: True (timestamptz: offsets applied, naive is UTC), False (timestamp:
    offsets refused), None (date: offsets applied).
    """
    offset: int | None
    if isinstance(value, str):
        nanos, _, offset = _parse_datetime(value)
    elif isinstance(value, datetime.datetime):
        nanos, offset = _datetime_nanos(value)
    elif isinstance(value, datetime.date):
        nanos, offset = civil_to_days(value.year, value.month, value.day) * NANOS_PER_DAY, None
    else:
        raise _kind_error("a date, datetime or ISO string")
    if offset is not None:
        if with_zone is False and offset != 0:
            raise _Mismatch(
                "a timestamp without zone does not take a zone offset (use a local time)"
            )
        nanos -= offset * 1_000_000_000
    return nanos


def _floor_div(nanos: int, unit: int, low: int, high: int) -> Any:
    q, r = divmod(nanos, unit)
    if q > high:
        return ABOVE_MAX
    if q < low:
        return BELOW_MIN
    return Inexact(q) if r else q


def _to_date(value: Any, t: IcebergType) -> Any:
    if _is_int(value):
        return _integral(value, INT_MIN, INT_MAX)
    return _floor_div(_epoch_nanos(value, None), NANOS_PER_DAY, INT_MIN, INT_MAX)


def _to_time(value: Any, t: IcebergType) -> Any:
    if _is_int(value):
        return value
    if isinstance(value, datetime.time):
        if value.utcoffset() not in (None, datetime.timedelta(0)):
            raise _Mismatch("a time does not take a zone offset")
        seconds = (value.hour * 60 + value.minute) * 60 + value.second
        return seconds * _MICROS_PER_SECOND + value.microsecond
    if isinstance(value, str):
        m = _TIME.match(value)
        if m is None:
            raise _Mismatch("not a time like '10:30:00'")
        return _floor_div(_nanos_of_day(*m.groups()), 1000, 0, MICROS_PER_DAY - 1)
    raise _kind_error("a time, an int of microseconds or a string like '10:30:00'")


def _to_timestamp(value: Any, t: IcebergType) -> Any:
    if _is_int(value):
        return _integral(value, LONG_MIN, LONG_MAX)
    with_zone = isinstance(t, TimestamptzType | TimestamptzNanoType)
    nanos = _epoch_nanos(value, with_zone)
    if isinstance(t, TimestampNanoType | TimestamptzNanoType):
        return _integral(nanos, LONG_MIN, LONG_MAX)
    return _floor_div(nanos, 1000, LONG_MIN, LONG_MAX)


# -- other types ---------------------------------------------------------------------------------


def _to_string(value: Any, t: IcebergType) -> Any:
    if not isinstance(value, str):
        raise _kind_error("a string")
    return value


def _to_uuid(value: Any, t: IcebergType) -> Any:
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return uuid.UUID(value.strip())
        except ValueError:
            raise _Mismatch("not a UUID") from None
    if isinstance(value, bytes) and len(value) == 16:
        return uuid.UUID(bytes=value)
    raise _kind_error("a UUID, a UUID string or 16 bytes")


def _to_fixed(value: Any, t: IcebergType) -> Any:
    assert isinstance(t, FixedType)
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _kind_error("bytes")
    raw = bytes(value)
    if len(raw) != t.length:
        raise _Mismatch(f"expected {t.length} bytes, got {len(raw)}")
    return raw


def _to_binary(value: Any, t: IcebergType) -> Any:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _kind_error("bytes")
    return bytes(value)


_CONVERTERS: dict[type, Any] = {
    BooleanType: _to_boolean,
    IntegerType: _to_int,
    LongType: _to_long,
    FloatType: _to_float,
    DoubleType: _to_double,
    DecimalType: _to_decimal,
    DateType: _to_date,
    TimeType: _to_time,
    TimestampType: _to_timestamp,
    TimestamptzType: _to_timestamp,
    TimestampNanoType: _to_timestamp,
    TimestamptzNanoType: _to_timestamp,
    StringType: _to_string,
    UUIDType: _to_uuid,
    FixedType: _to_fixed,
    BinaryType: _to_binary,
}
