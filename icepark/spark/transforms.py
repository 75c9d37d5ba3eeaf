"""Iceberg partition and sort transforms as Spark column expressions, where Spark's own
functions compute exactly the same values (so no Python runs per row).

=====================  =============================================================
identity               the column
year / month / day /   from ``unix_micros`` (timestamptz, time-zone free), the date part
hour                   (timestamp without zone) or ``unix_date`` (date), with floor
                       division, as the spec defines them (years, months, days or hours
                       from 1970-01-01T00:00 UTC)
truncate[W]            ints and longs ``v - pmod(v, W)``; strings ``substring(v, 1, W)``
                       (code points, as Iceberg); binary ``substring`` (bytes)
void                   null
bucket[N], truncate    None: Spark's hash functions differ from Iceberg's murmur3 of the
of decimals            spec's encoding, so these are computed in Python (Arrow)
=====================  =============================================================
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from icepark.spec.transforms import (
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from icepark.spec.types import (
    BinaryType,
    DateType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

__all__ = ["transform_column"]

_MICROS_PER_HOUR = 3_600_000_000
_MICROS_PER_DAY = 86_400_000_000


def _int_floor_div(value: Column, divisor: int) -> Column:
    return ((value - F.pmod(value, F.lit(divisor))) / F.lit(divisor)).cast("int")


def _days(source: IcebergType, c: Column) -> Column | None:
    if isinstance(source, DateType):
        return F.unix_date(c)
    if isinstance(source, TimestamptzType):
        return _int_floor_div(F.unix_micros(c), _MICROS_PER_DAY)
    if isinstance(source, TimestampType):
        return F.unix_date(c.cast("date"))
    return None


def _year_month(source: IcebergType, c: Column) -> tuple[Column, Column] | None:
    if isinstance(source, DateType | TimestampType):
        # the date part of a timestamp without zone does not depend on the session zone
        return F.year(c), F.month(c)
    if isinstance(source, TimestamptzType):
        day = F.date_from_unix_date(_int_floor_div(F.unix_micros(c), _MICROS_PER_DAY))
        return F.year(day), F.month(day)
    return None


def transform_column(transform: Transform, source: IcebergType, c: Column) -> Column | None:
    """A Spark column computing ``transform`` of ``c`` (of Iceberg type ``source``) exactly
    as Iceberg does, or None when Spark has no exact equivalent."""
    if isinstance(transform, IdentityTransform):
        return c
    if isinstance(transform, VoidTransform):
        return F.lit(None)
    if isinstance(transform, DayTransform):
        return _days(source, c)
    if isinstance(transform, HourTransform):
        if isinstance(source, TimestamptzType):
            return _int_floor_div(F.unix_micros(c), _MICROS_PER_HOUR)
        if isinstance(source, TimestampType):
            return F.unix_date(c.cast("date")) * F.lit(24) + F.hour(c)
        return None
    if isinstance(transform, YearTransform | MonthTransform):
        parts = _year_month(source, c)
        if parts is None:
            return None
        year, month = parts
        years = year - F.lit(1970)
        if isinstance(transform, YearTransform):
            return years
        return years * F.lit(12) + month - F.lit(1)
    if isinstance(transform, TruncateTransform):
        width = transform.width
        if isinstance(source, IntegerType):
            return (c - F.pmod(c, F.lit(width))).cast("int")
        if isinstance(source, LongType):
            return (c - F.pmod(c, F.lit(width).cast("bigint"))).cast("bigint")
        if isinstance(source, StringType | BinaryType):
            return F.substring(c, 1, width)
        return None
    return None
