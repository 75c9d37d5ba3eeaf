"""Partition transforms: identity, bucket[N], truncate[W], year, month, day, hour and void.

A transform is an immutable value (equal and hashable by kind and parameter); ``str(t)`` is its
spec name (``bucket[16]``) and :func:`parse_transform` reads it back. ``t.apply(source_type,
value)`` transforms one value in icepark's internal representation (``t.bind(source_type)``
returns the same function, checked once, for use in loops); the vectorised equivalents for
Arrow arrays live in :mod:`icepark.arrow.transforms`.

Result types follow the Java implementation, so that manifests we write declare the partition
types the reference engine expects: ``bucket``, ``year``, ``month`` and ``hour`` give ``int``;
``day`` gives ``date`` (the spec's table says ``int``; both are stored as an Avro int counting
days from 1970-01-01 and the value is the same); ``identity``, ``truncate`` and ``void`` give the
source type. Time transforms floor towards negative infinity (1969-12-31 is day -1, year -1).
"""

from __future__ import annotations

import functools
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import mmh3

from icepark.errors import InvalidTransformError, InvalidValueError
from icepark.spec.conversions import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    MICROS_PER_DAY,
    NANOS_PER_DAY,
    days_to_civil,
    decimal_to_unscaled,
    partition_value_to_str,
    unscaled_to_decimal,
    unscaled_to_min_bytes,
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
    "Transform",
    "IdentityTransform",
    "BucketTransform",
    "TruncateTransform",
    "YearTransform",
    "MonthTransform",
    "DayTransform",
    "HourTransform",
    "VoidTransform",
    "UnknownTransform",
    "TimeTransform",
    "parse_transform",
    "hash_value",
]

_LONG = struct.Struct("<q")
_DOUBLE = struct.Struct("<d")
_CANONICAL_NAN = _LONG.pack(0x7FF8000000000000)
_MICROS_PER_HOUR = 3_600_000_000
_NANOS_PER_HOUR = 3_600_000_000_000

# source types stored as (or hashed as) a long
_LONG_HASHED = (IntegerType, LongType, DateType, TimeType, TimestampType, TimestamptzType)
_MICRO_TS = (TimestampType, TimestamptzType)
_NANO_TS = (TimestampNanoType, TimestamptzNanoType)
_BUCKET_SOURCES = (
    *_LONG_HASHED,
    *_NANO_TS,
    DecimalType,
    StringType,
    UUIDType,
    FixedType,
    BinaryType,
)
_TRUNCATE_SOURCES = (IntegerType, LongType, DecimalType, StringType, BinaryType)


def _bad_value(t: IcebergType, value: Any, why: str) -> InvalidValueError:
    return InvalidValueError(f"Invalid value for type {t}: {value!r}: {why}"[:400])


# -- hashing -------------------------------------------------------------------------------------


def _murmur(data: bytes) -> int:
    return int(mmh3.hash(data, 0, signed=True))


def _pack_long(t: IcebergType, value: Any) -> bytes:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _bad_value(t, value, "expected an int")
    try:
        return _LONG.pack(value)
    except struct.error:
        raise _bad_value(t, value, "out of range for a long") from None


def _hash_input(t: IcebergType, value: Any) -> bytes:
    """The bytes Iceberg hashes for ``value`` of type ``t`` (spec Appendix B)."""
    if isinstance(t, _LONG_HASHED):
        return _pack_long(t, value)
    if isinstance(t, _NANO_TS):
        # nanoseconds are hashed as microseconds (floor), like the Java implementation
        return _pack_long(t, _check_time_value(t, value) // 1000)
    if isinstance(t, DecimalType):
        try:
            return unscaled_to_min_bytes(decimal_to_unscaled(value, t.scale))
        except InvalidValueError as exc:
            raise _bad_value(t, value, str(exc)) from None
    if isinstance(t, StringType):
        if not isinstance(value, str):
            raise _bad_value(t, value, "expected a str")
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise _bad_value(t, value, "not encodable as UTF-8") from None
    if isinstance(t, UUIDType):
        if not hasattr(value, "bytes"):
            raise _bad_value(t, value, "expected a uuid.UUID")
        return bytes(value.bytes)
    if isinstance(t, FixedType | BinaryType):
        if not isinstance(value, bytes | bytearray | memoryview):
            raise _bad_value(t, value, "expected bytes")
        return bytes(value)
    if isinstance(t, BooleanType):
        return _LONG.pack(1 if value else 0)
    if isinstance(t, FloatType | DoubleType):
        x = float(value)
        if x != x:
            return _CANONICAL_NAN
        return _DOUBLE.pack(0.0 if x == 0 else x)
    raise _bad_value(t, value, "no hash is defined for this type")


def hash_value(t: IcebergType, value: Any) -> int | None:
    """Iceberg's 32-bit hash (Murmur3 x86, seed 0; signed) of a value of type ``t``.

    Covers the bucketable types and, as Java does, boolean, float and double. None (and any
    value of type ``unknown``) has no hash.
    """
    if value is None or isinstance(t, UnknownType):
        return None
    return _murmur(_hash_input(t, value))


# -- base ----------------------------------------------------------------------------------------


class Transform:
    """A partition (or sort) transform; subclasses are frozen dataclasses."""

    name: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.name

    # properties ---------------------------------------------------------------------------------

    @property
    def is_identity(self) -> bool:
        return False

    @property
    def is_void(self) -> bool:
        return False

    @property
    def preserves_order(self) -> bool:
        """Whether ``a < b`` implies ``apply(a) <= apply(b)``."""
        return False

    @property
    def dedup_name(self) -> str:
        """Name used to reject two similar transforms of one source (time transforms: "time")."""
        return str(self)

    # types --------------------------------------------------------------------------------------

    def can_transform(self, source: IcebergType) -> bool:
        """Whether the transform accepts values of type ``source``."""
        raise NotImplementedError

    def _result_type(self, source: IcebergType) -> IcebergType:
        return source

    def result_type(self, source: IcebergType) -> IcebergType:
        """The type of transformed values; InvalidTransformError if ``source`` is not accepted."""
        self._check_source(source)
        return self._result_type(source)

    def _check_source(self, source: IcebergType) -> None:
        if not self.can_transform(source):
            raise InvalidTransformError(f"Cannot apply transform {self} to type {source}")

    # values -------------------------------------------------------------------------------------

    def _function(self, source: IcebergType) -> Callable[[Any], Any]:
        """The function for non-null values of an accepted source type."""
        raise NotImplementedError

    def bind(self, source: IcebergType) -> Callable[[Any], Any]:
        """A function applying this transform to values of type ``source`` (None -> None)."""
        try:
            return _bound(self, source)
        except TypeError:  # an unhashable (nested) source type: build it uncached
            return _make_bound(self, source)

    def apply(self, source: IcebergType, value: Any) -> Any:
        """Transform one value of type ``source``; None gives None."""
        return self.bind(source)(value)

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        """The transformed value as written in partition paths (``"null"`` for None).

        ``result_type`` is the partition field's type (``result_type(source)``).
        """
        return partition_value_to_str(result_type, value)

    # ordering -----------------------------------------------------------------------------------

    def satisfies_order_of(self, other: Transform, source: IcebergType | None = None) -> bool:
        """Whether data ordered by this transform is also ordered by ``other``'s results."""
        return self == other


def _make_bound(transform: Transform, source: IcebergType) -> Callable[[Any], Any]:
    transform._check_source(source)
    fn = transform._function(source)

    def apply(value: Any) -> Any:
        return None if value is None else fn(value)

    return apply


@functools.lru_cache(maxsize=4096)
def _bound(transform: Transform, source: IcebergType) -> Callable[[Any], Any]:
    return _make_bound(transform, source)


# -- identity, void, unknown ---------------------------------------------------------------------


@dataclass(frozen=True)
class IdentityTransform(Transform):
    """The source value, unchanged."""

    name: ClassVar[str] = "identity"

    @property
    def is_identity(self) -> bool:
        return True

    @property
    def preserves_order(self) -> bool:
        return True

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, PrimitiveType)

    def _function(self, source: IcebergType) -> Callable[[Any], Any]:
        return _identity

    def satisfies_order_of(self, other: Transform, source: IcebergType | None = None) -> bool:
        return other.preserves_order


def _identity(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class VoidTransform(Transform):
    """Always null: used to drop a partition field in v1 tables."""

    name: ClassVar[str] = "void"

    @property
    def is_void(self) -> bool:
        return True

    def can_transform(self, source: IcebergType) -> bool:
        return True

    def _function(self, source: IcebergType) -> Callable[[Any], Any]:
        return _always_null

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null"


def _always_null(value: Any) -> None:
    return None


@dataclass(frozen=True)
class UnknownTransform(Transform):
    """A transform this implementation does not know, kept so that tables using it can be read.

    Readers ignore such partition fields; writing with one is refused.
    """

    text: str

    def __str__(self) -> str:
        return self.text

    def can_transform(self, source: IcebergType) -> bool:
        return True

    def _result_type(self, source: IcebergType) -> IcebergType:
        return StringType()

    def _function(self, source: IcebergType) -> Callable[[Any], Any]:
        raise InvalidTransformError(f"Cannot apply unsupported transform: {self.text}")


# -- bucket --------------------------------------------------------------------------------------


def _check_parameter(kind: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= INT_MAX:
        raise InvalidTransformError(f"Invalid {kind} parameter: {value!r} (must be > 0)")


@dataclass(frozen=True)
class BucketTransform(Transform):
    """``(murmur3_x86_32(value) & 0x7FFFFFFF) % num_buckets``."""

    num_buckets: int

    def __post_init__(self) -> None:
        _check_parameter("bucket", self.num_buckets)

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _BUCKET_SOURCES)

    def _result_type(self, source: IcebergType) -> IcebergType:
        return IntegerType()

    def _function(self, source: IcebergType) -> Callable[[Any], Any]:
        n = self.num_buckets

        def bucket(value: Any) -> int:
            return (_murmur(_hash_input(source, value)) & 0x7FFFFFFF) % n

        return bucket

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else str(value)


# -- truncate ------------------------------------------------------------------------------------


def _check_range(t: IcebergType, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise _bad_value(t, value, "the truncated value is out of range")
    return value


@dataclass(frozen=True)
class TruncateTransform(Transform):
    """Integers and decimals down to a multiple of ``width``; strings to ``width`` code points;
    binary to ``width`` bytes."""

    width: int

    def __post_init__(self) -> None:
        _check_parameter("truncate", self.width)

    def __str__(self) -> str:
        return f"truncate[{self.width}]"

    @property
    def preserves_order(self) -> bool:
        return True

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _TRUNCATE_SOURCES)

    def _function(self, source: IcebergType) -> Callable[[Any], Any]:
        w = self.width
        if isinstance(source, IntegerType | LongType):
            is_int = isinstance(source, IntegerType)
            low, high = (INT_MIN, INT_MAX) if is_int else (LONG_MIN, LONG_MAX)

            def truncate_int(value: Any) -> int:
                if not isinstance(value, int) or isinstance(value, bool):
                    raise _bad_value(source, value, "expected an int")
                return _check_range(source, value - value % w, low, high)

            return truncate_int
        if isinstance(source, DecimalType):
            scale, limit = source.scale, 10**source.precision

            def truncate_decimal(value: Any) -> Any:
                try:
                    unscaled = decimal_to_unscaled(value, scale)
                except InvalidValueError as exc:
                    raise _bad_value(source, value, str(exc)) from None
                result = unscaled - unscaled % w
                if result <= -limit:
                    raise _bad_value(source, value, "the truncated value has too many digits")
                return unscaled_to_decimal(result, scale)

            return truncate_decimal
        if isinstance(source, StringType):
            return lambda value: value[:w]
        return lambda value: bytes(value[:w])

    def satisfies_order_of(self, other: Transform, source: IcebergType | None = None) -> bool:
        """A longer prefix orders by a shorter one (strings, binary); a width orders by its
        multiples (numbers). Without ``source`` only an equal width is known to satisfy."""
        if not isinstance(other, TruncateTransform):
            return False
        if isinstance(source, StringType | BinaryType):
            return self.width >= other.width
        if isinstance(source, IntegerType | LongType | DecimalType):
            return other.width % self.width == 0
        return self.width == other.width


# -- time transforms -----------------------------------------------------------------------------


def _to_days(source: IcebergType) -> Callable[[int], int]:
    if isinstance(source, DateType):
        return _identity
    per_day = MICROS_PER_DAY if isinstance(source, _MICRO_TS) else NANOS_PER_DAY
    return lambda value: value // per_day


def _check_time_value(source: IcebergType, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _bad_value(source, value, "expected an int")
    return value


class TimeTransform(Transform):
    """Base of year, month, day and hour: order-preserving, floor for values before 1970."""

    #: the size of one result unit in hours, for ``satisfies_order_of``
    _granularity_hours: ClassVar[int] = 0
    _sources: ClassVar[tuple[type, ...]] = (DateType, *_MICRO_TS, *_NANO_TS)

    @property
    def preserves_order(self) -> bool:
        return True

    @property
    def dedup_name(self) -> str:
        return "time"

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, self._sources)

    def _result_type(self, source: IcebergType) -> IcebergType:
        return IntegerType()

    def _from_days(self, days: int) -> int:
        raise NotImplementedError

    def _function(self, source: IcebergType) -> Callable[[Any], Any]:
        to_days = _to_days(source)

        def transform(value: Any) -> int:
            result = self._from_days(to_days(_check_time_value(source, value)))
            return _check_range(source, result, INT_MIN, INT_MAX)

        return transform

    def satisfies_order_of(self, other: Transform, source: IcebergType | None = None) -> bool:
        if not isinstance(other, TimeTransform):
            return False
        return self._granularity_hours <= other._granularity_hours


@dataclass(frozen=True)
class YearTransform(TimeTransform):
    """Years from 1970."""

    name: ClassVar[str] = "year"
    _granularity_hours: ClassVar[int] = 24 * 366

    def _from_days(self, days: int) -> int:
        return days_to_civil(days)[0] - 1970

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else f"{1970 + value:04d}"


@dataclass(frozen=True)
class MonthTransform(TimeTransform):
    """Months from 1970-01."""

    name: ClassVar[str] = "month"
    _granularity_hours: ClassVar[int] = 24 * 31

    def _from_days(self, days: int) -> int:
        year, month, _ = days_to_civil(days)
        return (year - 1970) * 12 + month - 1

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        if value is None:
            return "null"
        return f"{1970 + value // 12:04d}-{value % 12 + 1:02d}"


def _human_day(days: int) -> str:
    year, month, day = days_to_civil(days)
    return f"{year:04d}-{month:02d}-{day:02d}"


@dataclass(frozen=True)
class DayTransform(TimeTransform):
    """Days from 1970-01-01; its result type is ``date``, as in Java."""

    name: ClassVar[str] = "day"
    _granularity_hours: ClassVar[int] = 24

    def _result_type(self, source: IcebergType) -> IcebergType:
        return DateType()

    def _from_days(self, days: int) -> int:
        return days

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else _human_day(value)


@dataclass(frozen=True)
class HourTransform(TimeTransform):
    """Hours from 1970-01-01 00:00 (timestamps only)."""

    name: ClassVar[str] = "hour"
    _granularity_hours: ClassVar[int] = 1
    _sources: ClassVar[tuple[type, ...]] = (*_MICRO_TS, *_NANO_TS)

    def _function(self, source: IcebergType) -> Callable[[Any], Any]:
        per_hour = _MICROS_PER_HOUR if isinstance(source, _MICRO_TS) else _NANOS_PER_HOUR

        def hour(value: Any) -> int:
            result = _check_time_value(source, value) // per_hour
            return _check_range(source, result, INT_MIN, INT_MAX)

        return hour

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        if value is None:
            return "null"
        days, hour = divmod(value, 24)
        return f"{_human_day(days)}-{hour:02d}"


# -- parsing -------------------------------------------------------------------------------------

_SIMPLE: dict[str, Transform] = {
    t.name: t
    for t in (
        IdentityTransform(),
        YearTransform(),
        MonthTransform(),
        DayTransform(),
        HourTransform(),
        VoidTransform(),
    )
}
_PARAMETERIZED = re.compile(r"^(bucket|truncate)\[\s*(\d+)\s*\]$")


def parse_transform(text: str, *, allow_unknown: bool = False) -> Transform:
    """Parse a transform's spec name (case-insensitive): ``identity``, ``bucket[16]``, ...

    Unknown names raise InvalidTransformError, or give an :class:`UnknownTransform` with
    ``allow_unknown`` (readers must tolerate transforms they do not know).
    """
    if not isinstance(text, str):
        raise InvalidTransformError(f"Invalid transform: {text!r}")
    lowered = text.strip().lower()
    if lowered in _SIMPLE:
        return _SIMPLE[lowered]
    m = _PARAMETERIZED.match(lowered)
    if m is not None:
        param = int(m.group(2))
        return BucketTransform(param) if m.group(1) == "bucket" else TruncateTransform(param)
    if allow_unknown and lowered:
        return UnknownTransform(text.strip())
    raise InvalidTransformError(f"Unknown transform: {text!r}")
