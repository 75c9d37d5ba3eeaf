"""Iceberg partition and sort transforms as Spark SQL expressions, where Spark's own
functions compute exactly the same values (so no Python runs per row).

=====================  =============================================================
identity               the column
year / month / day /   from ``unix_micros`` (timestamptz, time-zone free), the date part
hour                   (timestamp without zone) or ``unix_date`` (date), with floor
                       division in integers (``div``), as the spec defines them (years,
                       months, days or hours from 1970-01-01T00:00 UTC)
truncate[W]            ints and longs ``v - pmod(v, W)``; strings ``substring(v, 1, W)``
                       (code points, as Iceberg); binary ``substring`` (bytes)
void                   null
bucket[N], truncate    None: Spark's hash functions differ from Iceberg's murmur3 of the
of decimals            spec's encoding, so these are computed in Python (Arrow:
                       :func:`icepark.arrow.transforms.apply_transform`)
=====================  =============================================================

:func:`transform_sql` is the one implementation, as SQL text over an argument's SQL (so
that ``ispark.sql`` can put it in a statement, e.g. for ``system.days(ts)``);
:func:`transform_column` is the same expression as a DataFrame column.
:func:`transform_function` registers the Python (Arrow) computation of any transform as a
temporary function of a session (an Arrow UDF, which works on Spark Connect too), for SQL
where :func:`transform_sql` has none.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from icepark.arrow.transforms import apply_transform
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

__all__ = ["transform_column", "transform_sql", "transform_function"]

_MICROS_PER_HOUR = 3_600_000_000
_MICROS_PER_DAY = 86_400_000_000


def _floor_div(value: str, divisor: int) -> str:
    """``floor(value / divisor)`` of a bigint as an int, in exact integer arithmetic."""
    return f"CAST((({value}) - pmod({value}, {divisor}L)) div {divisor}L AS INT)"


def _days(source: IcebergType, c: str) -> str | None:
    if isinstance(source, DateType):
        return f"unix_date({c})"
    if isinstance(source, TimestamptzType):
        return _floor_div(f"unix_micros({c})", _MICROS_PER_DAY)
    if isinstance(source, TimestampType):
        return f"unix_date(CAST({c} AS DATE))"
    return None


def _year_month(source: IcebergType, c: str) -> tuple[str, str] | None:
    if isinstance(source, DateType | TimestampType):
        # the date part of a timestamp without zone does not depend on the session zone
        return f"year({c})", f"month({c})"
    if isinstance(source, TimestamptzType):
        day = f"date_from_unix_date({_floor_div(f'unix_micros({c})', _MICROS_PER_DAY)})"
        return f"year({day})", f"month({day})"
    return None


def transform_sql(transform: Transform, source: IcebergType, c: str) -> str | None:
    """Spark SQL computing ``transform`` of the SQL expression ``c`` (of Iceberg type
    ``source``) exactly as Iceberg does, or None when Spark has no exact equivalent. The
    result has the transform's Iceberg result type as an integer (``day`` gives days from
    1970-01-01 as an int, not a date)."""
    c = f"({c})"
    if isinstance(transform, IdentityTransform):
        return c
    if isinstance(transform, VoidTransform):
        return "NULL"
    if isinstance(transform, DayTransform):
        return _days(source, c)
    if isinstance(transform, HourTransform):
        if isinstance(source, TimestamptzType):
            return _floor_div(f"unix_micros({c})", _MICROS_PER_HOUR)
        if isinstance(source, TimestampType):
            return f"(unix_date(CAST({c} AS DATE)) * 24 + hour({c}))"
        return None
    if isinstance(transform, YearTransform | MonthTransform):
        parts = _year_month(source, c)
        if parts is None:
            return None
        year, month = parts
        if isinstance(transform, YearTransform):
            return f"({year} - 1970)"
        return f"(({year} - 1970) * 12 + {month} - 1)"
    if isinstance(transform, TruncateTransform):
        width = transform.width
        if isinstance(source, IntegerType):
            return f"CAST({c} - pmod({c}, {width}) AS INT)"
        if isinstance(source, LongType):
            return f"CAST({c} - pmod({c}, {width}L) AS BIGINT)"
        if isinstance(source, StringType | BinaryType):
            return f"substring({c}, 1, {width})"
        return None
    return None


def transform_column(transform: Transform, source: IcebergType, c: str) -> Column | None:
    """:func:`transform_sql` of the SQL expression ``c`` (a back-quoted column name, see
    :func:`icepark.spark.filters.quote_column`) as a column, or None."""
    text = transform_sql(transform, source, c)
    return None if text is None else F.expr(text)


# the temporary functions registered in each session (a session forgets them when it ends)
_REGISTERED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def _apply_arrow(transform: Transform, source: IcebergType, values: pa.Array) -> pa.Array:
    """``transform`` of one Arrow batch of a Spark column (an Arrow UDF's body)."""
    if isinstance(source, IntegerType) and values.type != pa.int32():
        values = values.cast(pa.int32())  # Spark's tinyint and smallint: Iceberg ints
    return apply_transform(transform, source, values)


def _function_name(transform: Transform, source: IcebergType) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", f"icepark_{transform}_{source}").strip("_")


def transform_function(spark: SparkSession, transform: Transform, source: IcebergType) -> str:
    """The name of a temporary function of ``spark`` computing ``transform`` of values of
    Iceberg type ``source`` (one argument) with icepark's Arrow implementation, registered on
    first use; its result has the transform's result type (``bucket``: int)."""
    from icepark.spark.types import to_spark_type

    result = to_spark_type(transform.result_type(source), with_ids=False)
    name = _function_name(transform, source)
    done = _REGISTERED.setdefault(spark, set())
    if name not in done:

        def body(values: pa.Array) -> pa.Array:
            return _apply_arrow(transform, source, values)

        spark.udf.register(name, F.arrow_udf(body, result))  # type: ignore[call-overload]
        done.add(name)
    return name
