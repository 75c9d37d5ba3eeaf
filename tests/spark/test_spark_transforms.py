"""Partition transforms computed by Spark functions equal icepark's (whatever the session
time zone, before and after 1970)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from icepark.spark.transforms import transform_column
from icepark.spec.transforms import parse_transform
from icepark.spec.types import (
    DateType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

pytestmark = pytest.mark.spark

MICROS = [
    -86_400_000_001,
    -3_600_000_000,
    -1,
    0,
    1,
    3_599_999_999,
    86_399_999_999,
    951_782_400_000_000,
    1_704_067_199_999_999,
    1_709_164_800_123_456,
    4_102_444_800_000_000,
]
DAYS = [-1_000, -366, -1, 0, 1, 59, 365, 11_016, 19_782, 47_000]
INTS = [-1_000_001, -11, -10, -9, -1, 0, 1, 9, 10, 11, 2_000_000_000]
STRINGS = ["", "a", "abcdef", "ünïcödé-string", "😀😀😀😀"]


def test_transforms_match_icepark(spark: Any) -> None:
    cases = [
        (TimestamptzType(), "timestamp_micros(v)", MICROS, ["year", "month", "day", "hour"]),
        (TimestampType(), None, MICROS, ["year", "month", "day", "hour"]),
        (DateType(), "date_from_unix_date(CAST(v AS INT))", DAYS, ["year", "month", "day"]),
        (IntegerType(), "CAST(v AS INT)", INTS[1:], ["truncate[10]", "identity"]),
        (LongType(), "v", INTS, ["truncate[10]", "truncate[7]"]),
    ]
    for source, expr, values, transforms in cases:
        if expr is None:  # timestamps without zone, from naive datetimes
            epoch = dt.datetime(1970, 1, 1)
            rows = [(epoch + dt.timedelta(microseconds=v),) for v in values]
            df = spark.createDataFrame(rows, "c timestamp_ntz")
        else:
            df = spark.createDataFrame([(v,) for v in values], "v long").selectExpr(f"{expr} AS c")
        for name in transforms:
            transform = parse_transform(name)
            column = transform_column(transform, source, "c")
            assert column is not None
            got = [r[0] for r in df.select(column).collect()]
            want = [transform.apply(source, v) for v in values]
            assert got == want, (source, name)
    strings = spark.createDataFrame([(s,) for s in STRINGS], "c string")
    transform = parse_transform("truncate[3]")
    got = [
        r[0]
        for r in strings.select(transform_column(transform, StringType(), "c")).collect()
    ]
    assert got == [transform.apply(StringType(), s) for s in STRINGS]
