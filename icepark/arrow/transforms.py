"""Partition transforms on whole Arrow arrays, for writing data.

``apply_transform(transform, source_type, array)`` gives exactly what
``transform.apply(source_type, v)`` gives for each value ``v`` (see
:mod:`icepark.spec.transforms`), with nulls kept. Integer-like values (ints, longs, dates,
times, timestamps) and fixed-width binary are hashed with a vectorised Murmur3 built from
pyarrow.compute kernels; strings, binary and decimals are hashed value by value with ``mmh3``.

Result types: ``bucket``, ``year``, ``month`` and ``hour`` give ``int32``; ``day`` gives
``date32`` (its Iceberg result type is ``date``); ``identity`` and ``truncate`` keep the input
type; ``void`` gives nulls of the input type. Chunked arrays give chunked arrays.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import mmh3
import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import InvalidTransformError, InvalidValueError
from icepark.spec.conversions import MICROS_PER_DAY, NANOS_PER_DAY
from icepark.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TimeTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
    hash_value,
)
from icepark.spec.types import (
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["apply_transform"]

_NANO_TS = (TimestampNanoType, TimestamptzNanoType)
_MICRO_TS = (TimestampType, TimestamptzType)
_INT_LIKE = (IntegerType, LongType, DateType, TimeType, *_MICRO_TS, *_NANO_TS)
_UNIT_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_LITTLE_ENDIAN = sys.byteorder == "little"

_U32 = pa.uint32()


@functools.cache
def _murmur_constants() -> tuple[pa.Scalar, ...]:
    # made on first use: building Arrow scalars imports pandas when it is installed, which
    # importing icepark must not do
    return tuple(
        pa.scalar(v, _U32) for v in (0xCC9E2D51, 0x1B873593, 5, 0xE6546B64, 0x85EBCA6B, 0xC2B2AE35)
    )


def apply_transform(
    transform: Transform, source_type: IcebergType, array: pa.Array | pa.ChunkedArray
) -> pa.Array | pa.ChunkedArray:
    """Apply ``transform`` to every value of ``array`` (values of Iceberg type ``source_type``).

    Raises InvalidTransformError when the transform does not accept ``source_type`` and
    InvalidValueError when a value cannot be transformed (e.g. a result out of range).
    """
    transform.result_type(source_type)  # checks that the source type is accepted
    if isinstance(array, pa.ChunkedArray):
        chunks = [_apply(transform, source_type, c) for c in array.chunks]
        result_type = _apply(transform, source_type, pa.array([], type=array.type)).type
        return pa.chunked_array(chunks, type=result_type)
    return _apply(transform, source_type, array)


def _apply(transform: Transform, source_type: IcebergType, arr: pa.Array) -> pa.Array:
    if isinstance(transform, IdentityTransform):
        return arr
    if isinstance(transform, VoidTransform):
        return pa.nulls(len(arr), type=arr.type)
    arr = _plain(arr)
    try:
        if isinstance(transform, BucketTransform):
            return _bucket(source_type, arr, transform.num_buckets)
        if isinstance(transform, TruncateTransform):
            return _truncate(transform, source_type, arr)
        if isinstance(transform, TimeTransform):
            return _time(transform, source_type, arr)
    except pa.ArrowInvalid as exc:
        raise InvalidValueError(
            f"Cannot apply {transform} to {arr.type} values of type {source_type}: {exc}"
        ) from exc
    raise InvalidTransformError(f"Cannot apply transform {transform} to Arrow arrays")


def _plain(arr: pa.Array) -> pa.Array:
    """The array without dictionary encoding or extension type."""
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def _is_string(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _is_binary(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
    )


def _by_value(arr: pa.Array, fn: Callable[[Any], Any], result_type: pa.DataType) -> pa.Array:
    return pa.array([None if v is None else fn(v) for v in arr.to_pylist()], type=result_type)


def _keep_nulls(arr: pa.Array, result: pa.Array) -> pa.Array:
    if arr.null_count == 0:
        return result
    return pc.if_else(pc.is_valid(arr), result, pa.scalar(None, result.type))


# -- integer arithmetic --------------------------------------------------------------------------


def _i64(value: int) -> pa.Scalar:
    return pa.scalar(value, pa.int64())


def _floordiv(a: pa.Array, d: int) -> pa.Array:
    """Floor division of an int64 array by a positive constant (pc.divide truncates)."""
    q = pc.divide(a, _i64(d))
    r = pc.subtract(a, pc.multiply(q, _i64(d)))
    return pc.if_else(pc.less(r, _i64(0)), pc.subtract(q, _i64(1)), q)


def _floormod(a: pa.Array, d: int) -> pa.Array:
    """The non-negative remainder of an int64 array by a positive constant."""
    r = pc.subtract(a, pc.multiply(pc.divide(a, _i64(d)), _i64(d)))
    return pc.if_else(pc.less(r, _i64(0)), pc.add(r, _i64(d)), r)


def _int64_values(source_type: IcebergType, arr: pa.Array) -> pa.Array:
    """The values as int64 in Iceberg's units for ``source_type`` (days, µs or ns).

    Integers are taken as they are; Arrow dates and times of another unit are converted
    (flooring when the unit is finer than Iceberg's).
    """
    t = arr.type
    if pa.types.is_integer(t):
        return pc.cast(arr, pa.int64())
    if pa.types.is_date32(t):
        values, per_day = pc.cast(pc.cast(arr, pa.int32()), pa.int64()), 1
    elif pa.types.is_date64(t):
        values, per_day = pc.cast(arr, pa.int64()), 86_400_000
    elif pa.types.is_timestamp(t) or pa.types.is_time(t):
        values, per_day = pc.cast(arr, pa.int64()), 86_400 * _UNIT_PER_SECOND[t.unit]
    else:
        raise InvalidValueError(f"Cannot read Arrow {t} values as Iceberg type {source_type}")
    if isinstance(source_type, DateType):
        target_per_day = 1
    elif isinstance(source_type, _NANO_TS):
        target_per_day = NANOS_PER_DAY
    else:
        target_per_day = MICROS_PER_DAY
    if per_day < target_per_day:
        return pc.multiply_checked(values, _i64(target_per_day // per_day))
    if per_day > target_per_day:
        return _floordiv(values, per_day // target_per_day)
    return values


def _to_int32(values: pa.Array) -> pa.Array:
    return pc.cast(values, pa.int32())


# -- murmur3 -------------------------------------------------------------------------------------


def _rotl(x: pa.Array, r: int) -> pa.Array:
    return pc.bit_wise_or(
        pc.shift_left(x, pa.scalar(r, _U32)), pc.shift_right(x, pa.scalar(32 - r, _U32))
    )


def _murmur3_words(words: list[pa.Array], length: int) -> pa.Array:
    """Murmur3 x86_32 (seed 0) of equal-length keys given as little-endian uint32 blocks."""
    c1, c2, m5, n1, f1, f2 = _murmur_constants()
    h: pa.Array | None = None
    for k in words:
        k = pc.multiply(_rotl(pc.multiply(k, c1), 15), c2)
        h = k if h is None else pc.bit_wise_xor(h, k)
        h = pc.add(pc.multiply(_rotl(h, 13), m5), n1)
    assert h is not None
    h = pc.bit_wise_xor(h, pa.scalar(length, _U32))
    h = pc.bit_wise_xor(h, pc.shift_right(h, pa.scalar(16, _U32)))
    h = pc.multiply(h, f1)
    h = pc.bit_wise_xor(h, pc.shift_right(h, pa.scalar(13, _U32)))
    h = pc.multiply(h, f2)
    return pc.bit_wise_xor(h, pc.shift_right(h, pa.scalar(16, _U32)))


def _fixed_words(buffer: pa.Buffer, count: int, width: int) -> list[pa.Array]:
    """Columns of 32-bit little-endian words of ``count`` consecutive ``width``-byte values."""
    blocks = width // 4
    flat = pa.Array.from_buffers(_U32, count * blocks, [None, buffer])
    rows = pa.FixedSizeListArray.from_arrays(flat, blocks)
    return [pc.list_element(rows, i) for i in range(blocks)]


def _bucket_of_hashes(hashes: pa.Array, n: int) -> pa.Array:
    positive = pc.cast(pc.bit_wise_and(hashes, pa.scalar(0x7FFFFFFF, _U32)), pa.int64())
    return _to_int32(_floormod(positive, n))


def _bucket(source_type: IcebergType, arr: pa.Array, n: int) -> pa.Array:
    if len(arr) == 0:
        return pa.array([], type=pa.int32())
    if _LITTLE_ENDIAN and isinstance(source_type, _INT_LIKE):
        values = _int64_values(source_type, arr)
        if isinstance(source_type, _NANO_TS):
            values = _floordiv(values, 1000)  # hashed as microseconds
        values = pc.fill_null(values, _i64(0)) if values.null_count else values
        data = values.buffers()[1].slice(values.offset * 8, len(values) * 8)
        hashes = _murmur3_words(_fixed_words(data, len(values), 8), 8)
        return _keep_nulls(arr, _bucket_of_hashes(hashes, n))
    if (
        _LITTLE_ENDIAN
        and isinstance(source_type, UUIDType | FixedType)
        and pa.types.is_fixed_size_binary(arr.type)
        and arr.type.byte_width % 4 == 0
    ):
        width = arr.type.byte_width
        data = arr.buffers()[1].slice(arr.offset * width, len(arr) * width)
        hashes = _murmur3_words(_fixed_words(data, len(arr), width), width)
        return _keep_nulls(arr, _bucket_of_hashes(hashes, n))
    if _is_string(arr.type):
        arr = pc.cast(arr, pa.large_binary())  # hash the UTF-8 bytes as they are
    if _is_binary(arr.type):  # strings, binary, fixed and uuid: hashed on their raw bytes
        values = arr.to_pylist()
        hashes = pa.array([0 if v is None else _murmur(v) for v in values], pa.int32())
        return _keep_nulls(arr, _bucket_of_hashes(hashes.view(_U32), n))

    def bucket(value: Any) -> int:
        h = hash_value(source_type, value)
        assert h is not None
        return (h & 0x7FFFFFFF) % n

    return _by_value(arr, bucket, pa.int32())


def _murmur(data: bytes) -> int:
    return int(mmh3.hash(data, 0, signed=True))


# -- truncate ------------------------------------------------------------------------------------


def _truncate(transform: TruncateTransform, source_type: IcebergType, arr: pa.Array) -> pa.Array:
    w = transform.width
    if isinstance(source_type, IntegerType | LongType):
        values = _int64_values(source_type, arr)
        result = pc.subtract_checked(values, _floormod(values, w))
        return pc.cast(result, arr.type)
    if isinstance(source_type, DecimalType):
        return _by_value(arr, transform.bind(source_type), arr.type)
    if _is_string(arr.type):
        return pc.utf8_slice_codeunits(arr, 0, w)
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        return pc.binary_slice(arr, 0, w)
    return _by_value(arr, transform.bind(source_type), arr.type)


# -- year, month, day, hour ----------------------------------------------------------------------


def _days(source_type: IcebergType, values: pa.Array) -> pa.Array:
    if isinstance(source_type, DateType):
        return values
    return _floordiv(values, NANOS_PER_DAY if isinstance(source_type, _NANO_TS) else MICROS_PER_DAY)


def _civil(days: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(year, month) of int64 day numbers, proleptic Gregorian (see ``days_to_civil``)."""
    z = pc.add(days, _i64(719_468))
    era = _floordiv(z, 146_097)
    doe = pc.subtract(z, pc.multiply(era, _i64(146_097)))
    yoe = pc.divide(
        pc.subtract(
            pc.add(pc.subtract(doe, pc.divide(doe, _i64(1_460))), pc.divide(doe, _i64(36_524))),
            pc.divide(doe, _i64(146_096)),
        ),
        _i64(365),
    )
    doy = pc.subtract(
        doe,
        pc.subtract(
            pc.add(pc.multiply(yoe, _i64(365)), pc.divide(yoe, _i64(4))),
            pc.divide(yoe, _i64(100)),
        ),
    )
    mp = pc.divide(pc.add(pc.multiply(doy, _i64(5)), _i64(2)), _i64(153))
    month = pc.if_else(pc.less(mp, _i64(10)), pc.add(mp, _i64(3)), pc.subtract(mp, _i64(9)))
    january_or_february = pc.cast(pc.less_equal(month, _i64(2)), pa.int64())
    year = pc.add(pc.add(yoe, pc.multiply(era, _i64(400))), january_or_february)
    return year, month


def _time(transform: TimeTransform, source_type: IcebergType, arr: pa.Array) -> pa.Array:
    values = _int64_values(source_type, arr)
    if isinstance(transform, HourTransform):
        per_hour = 3_600 * (1_000_000_000 if isinstance(source_type, _NANO_TS) else 1_000_000)
        return _to_int32(_floordiv(values, per_hour))
    days = _days(source_type, values)
    if isinstance(transform, DayTransform):
        return pc.cast(_to_int32(days), pa.date32())
    year, month = _civil(days)
    years = pc.subtract(year, _i64(1970))
    if isinstance(transform, YearTransform):
        return _to_int32(years)
    if isinstance(transform, MonthTransform):
        return _to_int32(pc.add(pc.multiply(years, _i64(12)), pc.subtract(month, _i64(1))))
    raise InvalidTransformError(f"Cannot apply transform {transform} to Arrow arrays")
