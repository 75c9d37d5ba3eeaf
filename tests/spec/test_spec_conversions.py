"""Binary single-value serialization (spec Appendix D) and partition human strings."""

from __future__ import annotations

import math
import re
import struct
import uuid
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import InvalidValueError
from icepark.spec.conversions import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    bytes_to_unscaled,
    civil_to_days,
    days_to_civil,
    decimal_to_unscaled,
    from_bytes,
    from_bytes_reader,
    partition_value_to_str,
    to_bytes,
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

UUID_VALUE = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")

# EXPECTED.md 7.3: Java TestConversions byte vectors
JAVA_VECTORS: list[tuple[PrimitiveType, Any, str]] = [
    (BooleanType(), False, "00"),
    (BooleanType(), True, "01"),
    (IntegerType(), 84202, "ea480100"),
    (LongType(), 200, "c800000000000000"),
    (FloatType(), -4.5, "000090c0"),
    (DoubleType(), 6.0, "0000000000001840"),
    (DateType(), 1000, "e8030000"),
    (TimeType(), 10000, "1027000000000000"),
    (TimestampType(), 400000, "801a060000000000"),
    (TimestamptzType(), 400000, "801a060000000000"),
    (TimestampNanoType(), 400000000, "0084d71700000000"),
    (TimestamptzNanoType(), 400000000, "0084d71700000000"),
    (StringType(), "ABC", "414243"),
    (UUIDType(), UUID_VALUE, "f79c3e09677c4bbda4793f349cb785e7"),
    (FixedType(2), b"ab", "6162"),
    (BinaryType(), b"Z", "5a"),
    (DecimalType(3, 2), Decimal("3.45"), "0159"),
    (DecimalType(7, 4), Decimal("123.4567"), "12d687"),
    (DecimalType(7, 4), Decimal("-123.4567"), "ed2979"),
    (DecimalType(10, 3), Decimal("0.011"), "0b"),
]


@pytest.mark.parametrize(("t", "value", "hex_bytes"), JAVA_VECTORS, ids=lambda x: str(x))
def test_java_vectors(t: PrimitiveType, value: Any, hex_bytes: str) -> None:
    assert to_bytes(t, value).hex() == hex_bytes
    assert from_bytes(t, bytes.fromhex(hex_bytes)) == value


def test_boolean_any_nonzero_byte_is_true() -> None:
    assert from_bytes(BooleanType(), b"\x02") is True
    assert from_bytes(BooleanType(), b"\xff") is True
    assert from_bytes(BooleanType(), b"\x00") is False


def test_promoted_values_read_from_narrower_bytes() -> None:
    # a long column promoted from int, a double promoted from float (Java reads both)
    assert from_bytes(LongType(), struct.pack("<i", -5)) == -5
    assert from_bytes(DoubleType(), struct.pack("<f", 1.5)) == 1.5


def test_decimal_minimum_bytes() -> None:
    assert unscaled_to_min_bytes(0) == b"\x00"
    assert unscaled_to_min_bytes(127) == b"\x7f"
    assert unscaled_to_min_bytes(128) == b"\x00\x80"
    assert unscaled_to_min_bytes(-128) == b"\x80"
    assert unscaled_to_min_bytes(-129) == b"\xff\x7f"
    assert unscaled_to_min_bytes(1420) == b"\x05\x8c"
    assert bytes_to_unscaled(b"\x80") == -128
    assert to_bytes(DecimalType(5, 2), Decimal("-1.28")) == b"\x80"


def test_decimal_helpers() -> None:
    assert decimal_to_unscaled(Decimal("14.20"), 2) == 1420
    assert decimal_to_unscaled(Decimal("14.2"), 2) == 1420  # scaled up exactly
    assert decimal_to_unscaled(Decimal("2E+20"), -20) == 2
    assert unscaled_to_decimal(1420, 2) == Decimal("14.20")
    assert str(unscaled_to_decimal(1420, 2)) == "14.20"
    assert str(unscaled_to_decimal(2, -20)) == "2E+20"
    assert str(unscaled_to_decimal(0, 2)) == "0.00"
    with pytest.raises(InvalidValueError):
        decimal_to_unscaled(Decimal("14.205"), 2)
    with pytest.raises(InvalidValueError):
        decimal_to_unscaled(Decimal("NaN"), 2)
    with pytest.raises(InvalidValueError):
        bytes_to_unscaled(b"")


@pytest.mark.parametrize(
    ("t", "raw"),
    [
        (IntegerType(), b"\x01\x02"),
        (DateType(), b"\x01\x02\x03\x04\x05"),
        (LongType(), b"\x01\x02\x03"),
        (TimestampType(), b"\x01\x02\x03\x04"),
        (FloatType(), b"\x00" * 8),
        (DoubleType(), b"\x00" * 3),
        (UUIDType(), b"\x00" * 15),
        (FixedType(3), b"ab"),
        (BooleanType(), b""),
        (DecimalType(9, 2), b""),
    ],
    ids=lambda x: str(x),
)
def test_wrong_length_is_rejected(t: PrimitiveType, raw: bytes) -> None:
    with pytest.raises(InvalidValueError, match=re.escape(str(t))):
        from_bytes(t, raw)


def test_bad_utf8_is_rejected() -> None:
    with pytest.raises(InvalidValueError, match="string"):
        from_bytes(StringType(), b"\xff\xfe")
    with pytest.raises(InvalidValueError, match="string"):
        to_bytes(StringType(), "\ud800")


@pytest.mark.parametrize(
    ("t", "value"),
    [
        (UnknownType(), None),
        (UnknownType(), 1),
        (IntegerType(), True),
        (IntegerType(), 2**31),
        (LongType(), 2**63),
        (LongType(), "1"),
        (BooleanType(), 1),
        (FloatType(), 1e39),
        (DoubleType(), "1.0"),
        (StringType(), b"abc"),
        (UUIDType(), str(UUID_VALUE)),
        (FixedType(2), b"abc"),
        (BinaryType(), "abc"),
        (DecimalType(3, 2), Decimal("12.345")),
        (DecimalType(3, 2), Decimal("123.45")),
        (DecimalType(3, 2), 1.5),
    ],
    ids=repr,
)
def test_invalid_values_are_rejected(t: PrimitiveType, value: Any) -> None:
    with pytest.raises(InvalidValueError):
        to_bytes(t, value)


def test_unknown_has_no_binary_form() -> None:
    with pytest.raises(InvalidValueError, match="unknown"):
        from_bytes(UnknownType(), b"\x00")


# -- round trips ----------------------------------------------------------------------------------


@st.composite
def decimals(draw: st.DrawFn) -> tuple[DecimalType, Decimal]:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(-5, precision))
    unscaled = draw(st.integers(-(10**precision) + 1, 10**precision - 1))
    return DecimalType(precision, scale), unscaled_to_decimal(unscaled, scale)


def primitive_values() -> st.SearchStrategy[tuple[PrimitiveType, Any]]:
    longs = st.integers(LONG_MIN, LONG_MAX)
    pairs: list[st.SearchStrategy[tuple[PrimitiveType, Any]]] = [
        st.tuples(st.just(BooleanType()), st.booleans()),
        st.tuples(st.just(IntegerType()), st.integers(INT_MIN, INT_MAX)),
        st.tuples(st.just(DateType()), st.integers(INT_MIN, INT_MAX)),
        st.tuples(st.just(LongType()), longs),
        st.tuples(st.just(TimeType()), st.integers(0, 86_400_000_000 - 1)),
        st.tuples(st.just(TimestampType()), longs),
        st.tuples(st.just(TimestamptzType()), longs),
        st.tuples(st.just(TimestampNanoType()), longs),
        st.tuples(st.just(TimestamptzNanoType()), longs),
        st.tuples(st.just(FloatType()), st.floats(width=32)),
        st.tuples(st.just(DoubleType()), st.floats()),
        st.tuples(st.just(StringType()), st.text()),
        st.tuples(st.just(UUIDType()), st.uuids()),
        st.integers(1, 40).flatmap(
            lambda n: st.tuples(st.just(FixedType(n)), st.binary(min_size=n, max_size=n))
        ),
        st.tuples(st.just(BinaryType()), st.binary()),
        decimals(),
    ]
    return st.one_of(pairs)


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b) and type(a) is type(b)


@given(primitive_values())
def test_round_trip(pair: tuple[PrimitiveType, Any]) -> None:
    t, value = pair
    assert same_value(from_bytes(t, to_bytes(t, value)), value)


@given(decimals())
def test_decimal_uses_minimum_bytes(pair: tuple[DecimalType, Decimal]) -> None:
    t, value = pair
    raw = to_bytes(t, value)
    if len(raw) > 1:  # a shorter encoding would change the value
        shorter = raw[1:]
        assert int.from_bytes(shorter, "big", signed=True) != int.from_bytes(
            raw, "big", signed=True
        )


# -- calendar -------------------------------------------------------------------------------------


@given(st.integers(-800_000, 3_000_000))
def test_days_to_civil_matches_datetime(days: int) -> None:
    epoch = date(1970, 1, 1)
    try:
        expected = epoch + timedelta(days=days)
    except OverflowError:
        return
    assert days_to_civil(days) == (expected.year, expected.month, expected.day)
    assert civil_to_days(expected.year, expected.month, expected.day) == days


@given(st.integers(-(2**40), 2**40))
def test_civil_round_trip_any_year(days: int) -> None:
    assert civil_to_days(*days_to_civil(days)) == days


# -- human strings (Java Transform.toHumanString) -------------------------------------------------

TS_2024 = 1_704_448_800_000_000  # 2024-01-05T10:00:00


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (IntegerType(), None, "null"),
        (BooleanType(), True, "true"),
        (IntegerType(), -34, "-34"),
        (LongType(), 2**40, "1099511627776"),
        (StringType(), "a/b c", "a/b c"),
        (DateType(), 19727, "2024-01-05"),
        (DateType(), -1, "1969-12-31"),
        (TimeType(), 36_000_000_000, "10:00"),
        (TimeType(), 36_001_000_000, "10:00:01"),
        (TimeType(), 36_001_500_000, "10:00:01.500"),
        (TimeType(), 36_001_000_001, "10:00:01.000001"),
        (TimestampType(), TS_2024, "2024-01-05T10:00:00"),
        (TimestampType(), TS_2024 + 120_000, "2024-01-05T10:00:00.12"),
        (TimestampType(), TS_2024 + 1, "2024-01-05T10:00:00.000001"),
        (TimestampType(), -1, "1969-12-31T23:59:59.999999"),
        (TimestamptzType(), TS_2024, "2024-01-05T10:00:00+00:00"),
        (TimestampNanoType(), TS_2024 * 1000 + 1, "2024-01-05T10:00:00.000000001"),
        (TimestamptzNanoType(), TS_2024 * 1000, "2024-01-05T10:00:00+00:00"),
        (UUIDType(), UUID_VALUE, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        (BinaryType(), b"\x00\x01\x02\x03", "AAECAw=="),
        (FixedType(3), b"foo", "Zm9v"),
        (DecimalType(9, 2), Decimal("14.20"), "14.20"),
        (DecimalType(9, 2), Decimal("-0.05"), "-0.05"),
        (DecimalType(9, 8), Decimal("0.00000001"), "1E-8"),
        (DecimalType(1, -20), Decimal("2E+20"), "2E+20"),
        (DoubleType(), 1.0, "1.0"),
        (DoubleType(), 1e10, "1.0E10"),
        (DoubleType(), 1234567.5, "1234567.5"),
        (DoubleType(), 0.001, "0.001"),
        (DoubleType(), 0.00015, "1.5E-4"),
        (DoubleType(), -0.0, "-0.0"),
        (DoubleType(), math.nan, "NaN"),
        (DoubleType(), -math.inf, "-Infinity"),
        (FloatType(), struct.unpack("<f", struct.pack("<f", 0.1))[0], "0.1"),
        (UnknownType(), None, "null"),
    ],
    ids=repr,
)
def test_partition_value_to_str(t: PrimitiveType, value: Any, expected: str) -> None:
    assert partition_value_to_str(t, value) == expected


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float_human_string_reads_back(x: float) -> None:
    text = partition_value_to_str(FloatType(), x)
    assert struct.unpack("<f", struct.pack("<f", float(text)))[0] == x


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_human_string_reads_back(x: float) -> None:
    assert float(partition_value_to_str(DoubleType(), x)) == x


_READER_TYPES: list[PrimitiveType] = [
    IntegerType(),
    DateType(),
    LongType(),
    TimeType(),
    TimestampType(),
    TimestamptzType(),
    TimestampNanoType(),
    TimestamptzNanoType(),
    DoubleType(),
    StringType(),
]


@given(t=st.sampled_from(_READER_TYPES), raw=st.binary(min_size=0, max_size=10))
def test_from_bytes_reader_is_from_bytes(t: PrimitiveType, raw: bytes) -> None:
    try:
        expected: Any = from_bytes(t, raw)
    except InvalidValueError as exc:
        with pytest.raises(InvalidValueError, match=re.escape(str(exc))):
            from_bytes_reader(t)(raw)
        return
    got = from_bytes_reader(t)(raw)
    assert got == expected or (math.isnan(got) and math.isnan(expected))
    assert type(got) is type(expected)
