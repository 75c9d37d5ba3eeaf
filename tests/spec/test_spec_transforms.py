"""Partition transforms: hashing, bucketing, truncation, time units, parsing and ordering."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import InvalidTransformError, InvalidValueError
from icepark.spec.conversions import LONG_MAX, LONG_MIN, unscaled_to_decimal
from icepark.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
    hash_value,
    parse_transform,
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

UUID_VALUE = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
TS = 1_510_871_468_000_000  # 2017-11-16T22:31:08
TS_1 = TS + 1  # 2017-11-16T22:31:08.000001

# EXPECTED.md 7.1: expected signed 32-bit hashes
HASHES: list[tuple[IcebergType, Any, int]] = [
    (IntegerType(), 34, 2017239379),
    (LongType(), 34, 2017239379),
    (DecimalType(9, 2), Decimal("14.20"), -500754589),
    (DateType(), 17486, -653330422),
    (TimeType(), 81_068_000_000, -662762989),
    (TimestampType(), TS, -2047944441),
    (TimestampType(), TS_1, -1207196810),
    (TimestamptzType(), TS, -2047944441),  # 2017-11-16T14:31:08-08:00
    (TimestamptzType(), TS_1, -1207196810),
    (TimestampNanoType(), TS * 1000, -2047944441),
    (TimestampNanoType(), TS_1 * 1000 + 1, -1207196810),  # the trailing 001 ns is dropped
    (TimestamptzNanoType(), TS * 1000, -2047944441),
    (TimestamptzNanoType(), TS_1 * 1000 + 1, -1207196810),
    (StringType(), "iceberg", 1210000089),
    (UUIDType(), UUID_VALUE, 1488055340),
    (FixedType(4), b"\x00\x01\x02\x03", -188683207),
    (BinaryType(), b"\x00\x01\x02\x03", -188683207),
    (BooleanType(), True, 1392991556),
    (FloatType(), 1.0, -142385009),
    (DoubleType(), 1.0, -142385009),
    (FloatType(), 0.0, 1669671676),
    (DoubleType(), -0.0, 1669671676),
]


@pytest.mark.parametrize(("t", "value", "expected"), HASHES, ids=lambda x: str(x))
def test_hash_vectors(t: IcebergType, value: Any, expected: int) -> None:
    assert hash_value(t, value) == expected


def test_hash_of_nan_is_canonical_and_unknown_has_none() -> None:
    assert hash_value(DoubleType(), float("nan")) == hash_value(FloatType(), float("-nan"))
    assert hash_value(UnknownType(), None) is None
    assert hash_value(IntegerType(), None) is None


# EXPECTED.md 7.1: bucket results
BUCKETS: list[tuple[IcebergType, Any, int, int]] = [
    (IntegerType(), 0, 2, 0),
    (IntegerType(), 34, 100, 79),
    (LongType(), 34, 100, 79),
    (DateType(), 17486, 100, 26),
    (TimeType(), 81_068_000_000, 100, 59),
    (TimestampType(), TS, 100, 7),
    (DecimalType(9, 2), Decimal("14.20"), 100, 59),
    (DecimalType(5, 2), Decimal("-1.28"), 16, 13),
    (StringType(), "iceberg", 100, 89),
    (UUIDType(), UUID_VALUE, 100, 40),
    (FixedType(3), b"foo", 128, 32),
    (BinaryType(), b"\x00\x01\x02\x03", 128, 57),
    (IntegerType(), 34, 16, 3),
    (StringType(), "iceberg", 16, 9),
    (UUIDType(), UUID_VALUE, 16, 12),
    (DateType(), 17486, 16, 10),
]


@pytest.mark.parametrize(("t", "value", "n", "expected"), BUCKETS, ids=lambda x: str(x))
def test_bucket_vectors(t: IcebergType, value: Any, n: int, expected: int) -> None:
    assert BucketTransform(n).apply(t, value) == expected


# EXPECTED.md 7.2: truncate
TRUNCATES: list[tuple[IcebergType, int, Any, Any]] = [
    (IntegerType(), 10, 1, 0),
    (IntegerType(), 10, -1, -10),
    (DecimalType(9, 2), 50, Decimal("10.65"), Decimal("10.50")),
    (StringType(), 3, "iceberg", "ice"),
    (BinaryType(), 3, b"\x01\x02\x03\x04\x05", b"\x01\x02\x03"),
    (DecimalType(9, 2), 10, Decimal("12.34"), Decimal("12.30")),
    (DecimalType(9, 2), 10, Decimal("12.30"), Decimal("12.30")),
    (DecimalType(9, 2), 10, Decimal("12.29"), Decimal("12.20")),
    (DecimalType(9, 2), 10, Decimal("0.05"), Decimal("0.00")),
    (DecimalType(9, 2), 10, Decimal("-0.05"), Decimal("-0.10")),
    (StringType(), 5, "abcdefg", "abcde"),
    (StringType(), 5, "abc", "abc"),
    (BinaryType(), 4, b"abcdefg", b"abcd"),
    (StringType(), 2, "\U0001f600\u00e9x", "\U0001f600\u00e9"),  # code points, not bytes
]
for _t in (IntegerType(), LongType()):
    for _v, _r in [(0, 0), (1, 0), (5, 0), (9, 0), (10, 10), (11, 10), (-1, -10), (-5, -10)]:
        TRUNCATES.append((_t, 10, _v, _r))
    TRUNCATES += [(_t, 10, -10, -10), (_t, 10, -11, -20)]


@pytest.mark.parametrize(("t", "width", "value", "expected"), TRUNCATES, ids=repr)
def test_truncate_vectors(t: IcebergType, width: int, value: Any, expected: Any) -> None:
    result = TruncateTransform(width).apply(t, value)
    assert result == expected
    assert str(result) == str(expected)  # decimals keep the scale


def test_truncate_rejects_bad_width_and_types() -> None:
    with pytest.raises(InvalidTransformError, match="truncate"):
        TruncateTransform(0)
    with pytest.raises(InvalidTransformError):
        BucketTransform(-1)
    with pytest.raises(InvalidTransformError, match=r"truncate\[4\].*unknown"):
        TruncateTransform(4).result_type(UnknownType())
    with pytest.raises(InvalidTransformError):
        TruncateTransform(4).apply(FixedType(4), b"abcd")


def test_truncate_out_of_range() -> None:
    with pytest.raises(InvalidValueError, match="digits"):
        TruncateTransform(10).apply(DecimalType(3, 1), Decimal("-99.9"))
    with pytest.raises(InvalidValueError):
        TruncateTransform(10).apply(IntegerType(), -(2**31))
    with pytest.raises(InvalidValueError):
        TruncateTransform(10).apply(LongType(), LONG_MIN)


# -- time transforms ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transform", "t", "value", "expected"),
    [
        (YearTransform(), DateType(), 17486, 47),
        (MonthTransform(), DateType(), 17486, 574),
        (DayTransform(), DateType(), 17486, 17486),
        (YearTransform(), DateType(), -1, -1),
        (MonthTransform(), DateType(), -1, -1),
        (DayTransform(), DateType(), -1, -1),
        (YearTransform(), DateType(), -365, -1),
        (YearTransform(), DateType(), -366, -2),
        (MonthTransform(), DateType(), -31, -1),
        (MonthTransform(), DateType(), -32, -2),
        (YearTransform(), TimestampType(), TS, 47),
        (MonthTransform(), TimestampType(), TS, 574),
        (DayTransform(), TimestampType(), TS, 17486),
        (HourTransform(), TimestampType(), TS, 419686),
        (YearTransform(), TimestampType(), -1, -1),
        (MonthTransform(), TimestampType(), -1, -1),
        (DayTransform(), TimestampType(), -1, -1),
        (HourTransform(), TimestampType(), -1, -1),
        (HourTransform(), TimestamptzType(), -3_600_000_000, -1),
        (HourTransform(), TimestamptzType(), -3_600_000_001, -2),
        # 1969-12-31T00:00:00.999999: floor gives day -1 (Java's convertMicros gives -2 here)
        (DayTransform(), TimestampType(), -86_400_000_000 + 999_999, -1),
        (DayTransform(), TimestampNanoType(), TS * 1000 + 1, 17486),
        (HourTransform(), TimestamptzNanoType(), -1, -1),
        (YearTransform(), TimestampNanoType(), -1, -1),
    ],
    ids=repr,
)
def test_time_transforms(transform: Transform, t: IcebergType, value: int, expected: int) -> None:
    assert transform.apply(t, value) == expected


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@given(st.integers(-62_135_596_800_000_000, 253_402_300_799_999_999))
def test_time_transforms_match_datetime(micros: int) -> None:
    dt = EPOCH + timedelta(microseconds=micros)
    assert YearTransform().apply(TimestampType(), micros) == dt.year - 1970
    assert MonthTransform().apply(TimestamptzType(), micros) == (dt.year - 1970) * 12 + dt.month - 1
    days = (dt.date() - EPOCH.date()).days
    assert DayTransform().apply(TimestampType(), micros) == days
    assert HourTransform().apply(TimestampType(), micros) == days * 24 + dt.hour
    assert DayTransform().apply(DateType(), days) == days
    assert MonthTransform().apply(DateType(), days) == (dt.year - 1970) * 12 + dt.month - 1
    nanos = micros * 1000 + 999
    assert HourTransform().apply(TimestampNanoType(), nanos) == days * 24 + dt.hour
    assert YearTransform().apply(TimestamptzNanoType(), nanos) == dt.year - 1970


def test_hour_out_of_int_range() -> None:
    with pytest.raises(InvalidValueError):
        HourTransform().apply(TimestampType(), LONG_MAX)


ORDERED = [YearTransform(), MonthTransform(), DayTransform(), HourTransform()]


@given(st.integers(LONG_MIN, LONG_MAX), st.integers(LONG_MIN, LONG_MAX))
def test_time_transforms_are_monotone(a: int, b: int) -> None:
    a, b = min(a, b), max(a, b)
    for t in (TimestampNanoType(), TimestampType()):
        for transform in ORDERED:
            try:
                low, high = transform.apply(t, a), transform.apply(t, b)
            except InvalidValueError:
                continue  # hours beyond the int range
            assert low <= high


# -- truncate properties --------------------------------------------------------------------------


@given(st.integers(1, 1000), st.integers(-(2**62), 2**62), st.integers(-(2**62), 2**62))
def test_truncate_long_properties(width: int, a: int, b: int) -> None:
    a, b = min(a, b), max(a, b)
    ta, tb = (
        TruncateTransform(width).apply(LongType(), a),
        TruncateTransform(width).apply(LongType(), b),
    )
    assert ta <= a and a - ta < width and ta % width == 0
    assert ta <= tb


@given(st.integers(1, 100), st.integers(1, 18), st.data())
def test_truncate_decimal_properties(width: int, scale: int, data: st.DataObject) -> None:
    t = DecimalType(38, scale)
    a, b = sorted(data.draw(st.lists(st.integers(-(10**30), 10**30), min_size=2, max_size=2)))
    da, db = unscaled_to_decimal(a, scale), unscaled_to_decimal(b, scale)
    ta, tb = TruncateTransform(width).apply(t, da), TruncateTransform(width).apply(t, db)
    assert ta <= da and ta <= tb
    assert ta.as_tuple().exponent == -scale


@given(st.integers(1, 10), st.text(), st.text())
def test_truncate_string_properties(width: int, a: str, b: str) -> None:
    a, b = min(a, b), max(a, b)
    ta, tb = (
        TruncateTransform(width).apply(StringType(), a),
        TruncateTransform(width).apply(StringType(), b),
    )
    assert a.startswith(ta) and len(ta) == min(width, len(a))
    assert ta <= a and ta <= tb


@given(st.integers(1, 10), st.binary(), st.binary())
def test_truncate_binary_properties(width: int, a: bytes, b: bytes) -> None:
    a, b = min(a, b), max(a, b)
    ta, tb = (
        TruncateTransform(width).apply(BinaryType(), a),
        TruncateTransform(width).apply(BinaryType(), b),
    )
    assert ta == a[:width] and ta <= tb


@given(st.integers(1, 1000), st.integers(LONG_MIN, LONG_MAX))
def test_bucket_in_range(n: int, value: int) -> None:
    assert 0 <= BucketTransform(n).apply(LongType(), value) < n


# -- types, parsing, names ------------------------------------------------------------------------

ALL_PRIMITIVES: list[IcebergType] = [
    BooleanType(),
    IntegerType(),
    LongType(),
    FloatType(),
    DoubleType(),
    DecimalType(9, 2),
    DateType(),
    TimeType(),
    TimestampType(),
    TimestamptzType(),
    TimestampNanoType(),
    TimestamptzNanoType(),
    StringType(),
    UUIDType(),
    FixedType(3),
    BinaryType(),
    UnknownType(),
]
ACCEPTS = {
    "identity": {str(t) for t in ALL_PRIMITIVES},
    "bucket[4]": {
        "int",
        "long",
        "decimal(9, 2)",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "string",
        "uuid",
        "fixed[3]",
        "binary",
    },
    "truncate[4]": {"int", "long", "decimal(9, 2)", "string", "binary"},
    "year": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "month": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "day": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "hour": {"timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "void": {str(t) for t in ALL_PRIMITIVES},
}


@pytest.mark.parametrize("name", sorted(ACCEPTS))
def test_accepted_source_types(name: str) -> None:
    transform = parse_transform(name)
    accepted = {str(t) for t in ALL_PRIMITIVES if transform.can_transform(t)}
    assert accepted == ACCEPTS[name]
    for t in ALL_PRIMITIVES:
        if str(t) not in accepted:
            with pytest.raises(InvalidTransformError, match=str(transform).replace("[", r"\[")):
                transform.result_type(t)


def test_nested_sources() -> None:
    nested = ListType(1, IntegerType())
    assert not IdentityTransform().can_transform(nested)
    assert not IdentityTransform().can_transform(StructType())
    assert VoidTransform().can_transform(nested)
    assert VoidTransform().apply(nested, [1]) is None


def test_result_types() -> None:
    assert BucketTransform(4).result_type(StringType()) == IntegerType()
    assert TruncateTransform(4).result_type(DecimalType(9, 2)) == DecimalType(9, 2)
    assert IdentityTransform().result_type(UUIDType()) == UUIDType()
    assert VoidTransform().result_type(FixedType(3)) == FixedType(3)
    assert YearTransform().result_type(TimestampType()) == IntegerType()
    assert MonthTransform().result_type(DateType()) == IntegerType()
    assert HourTransform().result_type(TimestamptzNanoType()) == IntegerType()
    # Java reports date for day; its Avro partition schema uses the date logical type
    assert DayTransform().result_type(TimestampType()) == DateType()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("identity", IdentityTransform()),
        ("IDENTITY", IdentityTransform()),
        (" bucket[16] ", BucketTransform(16)),
        ("Bucket[ 16 ]", BucketTransform(16)),
        ("truncate[4]", TruncateTransform(4)),
        ("year", YearTransform()),
        ("Month", MonthTransform()),
        ("day", DayTransform()),
        ("hour", HourTransform()),
        ("void", VoidTransform()),
    ],
)
def test_parse_transform(text: str, expected: Transform) -> None:
    parsed = parse_transform(text)
    assert parsed == expected
    assert parse_transform(str(parsed)) == parsed


@pytest.mark.parametrize(
    "text", ["", "bucket", "bucket[]", "bucket[0]", "truncate[-1]", "zorder", "years", "bucket[x]"]
)
def test_parse_transform_rejects(text: str) -> None:
    with pytest.raises(InvalidTransformError):
        parse_transform(text)


def test_unknown_transform_when_allowed() -> None:
    t = parse_transform("zorder", allow_unknown=True)
    assert t == UnknownTransform("zorder") and str(t) == "zorder"
    assert t.can_transform(LongType())
    with pytest.raises(InvalidTransformError, match="zorder"):
        t.apply(LongType(), 1)


def test_equality_and_hashing() -> None:
    assert BucketTransform(16) == BucketTransform(16)
    assert BucketTransform(16) != BucketTransform(8)
    assert BucketTransform(16) != TruncateTransform(16)
    assert YearTransform() != MonthTransform()
    assert len({BucketTransform(16), BucketTransform(16), DayTransform(), DayTransform()}) == 2
    assert str(BucketTransform(16)) == "bucket[16]" and str(TruncateTransform(3)) == "truncate[3]"
    assert [str(t) for t in ORDERED] == ["year", "month", "day", "hour"]


def test_flags_and_ordering() -> None:
    assert IdentityTransform().is_identity and not BucketTransform(2).is_identity
    assert VoidTransform().is_void and not IdentityTransform().is_void
    assert not BucketTransform(2).preserves_order and not VoidTransform().preserves_order
    assert all(t.preserves_order for t in [IdentityTransform(), TruncateTransform(2), *ORDERED])
    assert {t.dedup_name for t in ORDERED} == {"time"}
    assert DayTransform().satisfies_order_of(MonthTransform())
    assert DayTransform().satisfies_order_of(YearTransform())
    assert HourTransform().satisfies_order_of(DayTransform())
    assert not DayTransform().satisfies_order_of(HourTransform())
    assert not YearTransform().satisfies_order_of(MonthTransform())
    assert not DayTransform().satisfies_order_of(IdentityTransform())
    assert IdentityTransform().satisfies_order_of(DayTransform())
    assert not IdentityTransform().satisfies_order_of(BucketTransform(4))
    assert BucketTransform(4).satisfies_order_of(BucketTransform(4))
    assert not BucketTransform(4).satisfies_order_of(BucketTransform(8))
    assert TruncateTransform(4).satisfies_order_of(TruncateTransform(4))
    assert TruncateTransform(4).satisfies_order_of(TruncateTransform(2), StringType())
    assert not TruncateTransform(2).satisfies_order_of(TruncateTransform(4), StringType())
    assert TruncateTransform(5).satisfies_order_of(TruncateTransform(10), LongType())
    assert not TruncateTransform(10).satisfies_order_of(TruncateTransform(5), LongType())
    assert not TruncateTransform(4).satisfies_order_of(TruncateTransform(2))


def test_nulls_give_null() -> None:
    for transform in [
        IdentityTransform(),
        BucketTransform(4),
        TruncateTransform(4),
        *ORDERED,
        VoidTransform(),
    ]:
        assert (
            transform.apply(
                TimestampType() if transform != TruncateTransform(4) else LongType(), None
            )
            is None
        )


def test_bad_values_raise_invalid_value() -> None:
    with pytest.raises(InvalidValueError):
        BucketTransform(4).apply(LongType(), "x")
    with pytest.raises(InvalidValueError):
        BucketTransform(4).apply(LongType(), 2**64)
    with pytest.raises(InvalidValueError):
        YearTransform().apply(DateType(), 1.5)


# -- human strings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transform", "result_type", "value", "expected"),
    [
        (YearTransform(), IntegerType(), 54, "2024"),
        (YearTransform(), IntegerType(), -1, "1969"),
        (MonthTransform(), IntegerType(), 648, "2024-01"),
        (MonthTransform(), IntegerType(), -1, "1969-12"),
        (DayTransform(), DateType(), 19727, "2024-01-05"),
        (DayTransform(), DateType(), -1, "1969-12-31"),
        (HourTransform(), IntegerType(), 19727 * 24 + 10, "2024-01-05-10"),
        (HourTransform(), IntegerType(), -1, "1969-12-31-23"),
        (BucketTransform(16), IntegerType(), 3, "3"),
        (TruncateTransform(4), StringType(), "abcd", "abcd"),
        (TruncateTransform(10), DecimalType(9, 2), Decimal("12.30"), "12.30"),
        (TruncateTransform(3), BinaryType(), b"\x01\x02\x03", "AQID"),
        (IdentityTransform(), TimestampType(), 1_704_448_800_000_000, "2024-01-05T10:00:00"),
        (
            IdentityTransform(),
            TimestamptzType(),
            1_704_448_800_000_000,
            "2024-01-05T10:00:00+00:00",
        ),
        (IdentityTransform(), DateType(), 19727, "2024-01-05"),
        (IdentityTransform(), BooleanType(), False, "false"),
        (IdentityTransform(), StringType(), None, "null"),
        (VoidTransform(), IntegerType(), None, "null"),
        (YearTransform(), IntegerType(), None, "null"),
    ],
    ids=repr,
)
def test_human_strings(
    transform: Transform, result_type: IcebergType, value: Any, expected: str
) -> None:
    assert transform.to_human_string(result_type, value) == expected
