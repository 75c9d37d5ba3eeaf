"""to_literal / convert_literal for every primitive type."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from typing import Any

import pytest

from icepark.errors import ValidationError
from icepark.expressions import ABOVE_MAX, BELOW_MIN, Inexact, convert_literal, to_literal
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
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

DAY_2024 = 19723  # 2024-01-01
MICROS_2024 = DAY_2024 * 86_400_000_000
U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (BooleanType(), True, True),
        (BooleanType(), "FALSE", False),
        (IntegerType(), 5, 5),
        (IntegerType(), "-17", -17),
        (IntegerType(), Decimal("3.000"), 3),
        (IntegerType(), 4.0, 4),
        (LongType(), 2**40, 2**40),
        (LongType(), " 12 ", 12),
        (FloatType(), 1, 1.0),
        (FloatType(), 0.1, 0.10000000149011612),  # rounded to a 32-bit float, as Java does
        (FloatType(), "1.5", 1.5),
        (FloatType(), float("inf"), float("inf")),
        (DoubleType(), Decimal("0.1"), 0.1),
        (DoubleType(), "-2.5e3", -2500.0),
        (DoubleType(), 3, 3.0),
        (DecimalType(9, 2), Decimal("1.5"), Decimal("1.50")),
        (DecimalType(9, 2), "14.20", Decimal("14.20")),
        (DecimalType(9, 2), 3, Decimal("3.00")),
        (DecimalType(9, 2), 0.25, Decimal("0.25")),
        (
            DecimalType(38, 10),
            "1234567890123456789012345678.0123456789",
            Decimal("1234567890123456789012345678.0123456789"),
        ),
        (DateType(), 19723, 19723),
        (DateType(), "2024-01-01", DAY_2024),
        (DateType(), datetime.date(2024, 1, 1), DAY_2024),
        (DateType(), "1969-12-31", -1),
        (DateType(), datetime.datetime(2024, 1, 1), DAY_2024),
        (TimeType(), "10:30", 37_800_000_000),
        (TimeType(), "10:30:01.5", 37_801_500_000),
        (TimeType(), datetime.time(0, 0, 1), 1_000_000),
        (TimeType(), 7, 7),
        (TimestampType(), "2024-01-01", MICROS_2024),
        (TimestampType(), "2024-01-01T00:00:01.000001", MICROS_2024 + 1_000_001),
        (TimestampType(), "2024-01-01 00:00:01", MICROS_2024 + 1_000_000),
        (TimestampType(), datetime.datetime(2024, 1, 1, 0, 0, 1), MICROS_2024 + 1_000_000),
        (TimestampType(), datetime.date(2024, 1, 1), MICROS_2024),
        (TimestampType(), "2024-01-01T00:00:00Z", MICROS_2024),
        (TimestampType(), 123, 123),
        (TimestamptzType(), "2024-01-01T02:00:00+02:00", MICROS_2024),
        (TimestamptzType(), "2024-01-01T00:00:00", MICROS_2024),  # naive is UTC
        (TimestamptzType(), "2023-12-31 19:00:00-0500", MICROS_2024),
        (
            TimestamptzType(),
            datetime.datetime(2024, 1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
            MICROS_2024,
        ),
        (TimestampNanoType(), "2024-01-01T00:00:00.000000001", MICROS_2024 * 1000 + 1),
        (TimestamptzNanoType(), "2024-01-01T01:00:00+01:00", MICROS_2024 * 1000),
        (TimestampType(), "1969-12-31T23:59:59.999999", -1),
        (StringType(), "abc", "abc"),
        (UUIDType(), U, U),
        (UUIDType(), str(U).upper(), U),
        (UUIDType(), U.bytes, U),
        (FixedType(3), b"abc", b"abc"),
        (FixedType(3), bytearray(b"abc"), b"abc"),
        (BinaryType(), b"\x00\x01", b"\x00\x01"),
    ],
)
def test_to_literal(t: IcebergType, value: Any, expected: Any) -> None:
    result = to_literal(value, t)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (IntegerType(), 2**31, ABOVE_MAX),
        (IntegerType(), -(2**31) - 1, BELOW_MIN),
        (IntegerType(), 2**31 - 1, 2**31 - 1),
        (LongType(), 2**63, ABOVE_MAX),
        (IntegerType(), float("inf"), ABOVE_MAX),
        (FloatType(), 1e39, ABOVE_MAX),
        (FloatType(), -1e39, BELOW_MIN),
        (DecimalType(4, 2), Decimal("100.00"), ABOVE_MAX),
        (DecimalType(4, 2), Decimal("99.99"), Decimal("99.99")),
        (DecimalType(4, 2), Decimal("-100"), BELOW_MIN),
        (DecimalType(4, 2), Decimal("-99.995"), BELOW_MIN),
        (DecimalType(4, 2), Decimal("99.995"), Inexact(Decimal("99.99"))),
        (DateType(), 2**31, ABOVE_MAX),
        (IntegerType(), Decimal("2.5"), Inexact(2)),
        (IntegerType(), -2.5, Inexact(-3)),
        (DecimalType(9, 2), Decimal("1.005"), Inexact(Decimal("1.00"))),
        (DecimalType(9, 2), Decimal("-1.005"), Inexact(Decimal("-1.01"))),
        (DateType(), "2024-01-01T12:00:00", Inexact(DAY_2024)),
        (DateType(), "1969-12-31T12:00:00", Inexact(-1)),
        (DateType(), "2024-01-01T01:00:00+02:00", Inexact(DAY_2024 - 1)),
        (TimestampType(), "2024-01-01T00:00:00.0000015", Inexact(MICROS_2024 + 1)),
        (TimeType(), "00:00:00.0000015", Inexact(1)),
    ],
)
def test_convert_literal_range_and_inexact(t: IcebergType, value: Any, expected: Any) -> None:
    assert convert_literal(value, t) == expected
    if expected is ABOVE_MAX or expected is BELOW_MIN or isinstance(expected, Inexact):
        with pytest.raises(ValidationError):
            to_literal(value, t)


@pytest.mark.parametrize(
    ("t", "value"),
    [
        (BooleanType(), 1),
        (BooleanType(), "yes"),
        (IntegerType(), "abc"),
        (IntegerType(), True),
        (IntegerType(), float("nan")),
        (IntegerType(), b"1"),
        (DoubleType(), "x"),
        (DoubleType(), float("nan")),
        (DecimalType(9, 2), "1.2.3"),
        (DecimalType(9, 2), Decimal("NaN")),
        (DateType(), "2024-02-30"),
        (DateType(), "2024-13-01"),
        (DateType(), "01/02/2024"),
        (DateType(), 1.5),
        (TimeType(), "25:00"),
        (TimeType(), "noon"),
        (TimestampType(), "2024-01-01T10:00:00+02:00"),  # no zone for timestamp
        (TimestampType(), "2024-01-01 25:00:00"),
        (TimestamptzType(), "2024-01-01T10:00:00+25:00"),
        (StringType(), 5),
        (StringType(), b"abc"),
        (UUIDType(), "not-a-uuid"),
        (UUIDType(), b"short"),
        (FixedType(3), b"ab"),
        (FixedType(3), "abc"),
        (BinaryType(), "abc"),
        (UnknownType(), 1),
        (ListType(1, IntegerType()), [1]),
    ],
)
def test_invalid_literals(t: IcebergType, value: Any) -> None:
    with pytest.raises(ValidationError):
        convert_literal(value, t)


def test_error_names_column_and_value() -> None:
    with pytest.raises(ValidationError, match=r"literal 'abc' for column 'id' of type long"):
        to_literal("abc", LongType(), "id")
    with pytest.raises(ValidationError, match="null"):
        to_literal(None, LongType())
