"""JSON single-value serialization (spec Appendix D)."""

from __future__ import annotations

import json
import math
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import InvalidValueError
from icepark.spec.conversions import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, unscaled_to_decimal
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
    MapType,
    NestedField,
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
from icepark.spec.values import from_json, to_json

UUID_TEXT = "f79c3e09-677c-4bbd-a479-3f349cb785e7"
TS = 1_510_871_468_123_456  # 2017-11-16T22:31:08.123456
STRUCT = StructType(
    NestedField(1, "id", IntegerType(), required=True),
    NestedField(2, "data", StringType()),
)

# EXPECTED.md 7.4: the spec's examples (value, type, JSON)
SPEC_EXAMPLES: list[tuple[Any, IcebergType, Any]] = [
    (True, BooleanType(), True),
    (34, IntegerType(), 34),
    (34, LongType(), 34),
    (1.0, FloatType(), 1.0),
    (1.0, DoubleType(), 1.0),
    (Decimal("14.20"), DecimalType(9, 2), "14.20"),
    (Decimal("2E+20"), DecimalType(1, -20), "2E+20"),
    (17486, DateType(), "2017-11-16"),
    (81_068_123_456, TimeType(), "22:31:08.123456"),
    (TS, TimestampType(), "2017-11-16T22:31:08.123456"),
    (TS, TimestamptzType(), "2017-11-16T22:31:08.123456+00:00"),
    (TS * 1000 + 789, TimestampNanoType(), "2017-11-16T22:31:08.123456789"),
    (TS * 1000 + 789, TimestamptzNanoType(), "2017-11-16T22:31:08.123456789+00:00"),
    ("iceberg", StringType(), "iceberg"),
    (uuid.UUID(UUID_TEXT), UUIDType(), UUID_TEXT),
    (b"\x00\x01\x02\xff", FixedType(4), "000102ff"),
    (b"\x00\x01\x02\xff", BinaryType(), "000102ff"),
    ({1: 1, 2: "bar"}, STRUCT, {"1": 1, "2": "bar"}),
    ([1, 2, 3], ListType(3, IntegerType()), [1, 2, 3]),
    (
        {"a": 1, "b": 2},
        MapType(4, StringType(), 5, IntegerType()),
        {"keys": ["a", "b"], "values": [1, 2]},
    ),
]


@pytest.mark.parametrize(("value", "t", "expected"), SPEC_EXAMPLES, ids=lambda x: str(x))
def test_spec_examples(value: Any, t: IcebergType, expected: Any) -> None:
    assert to_json(value, t) == expected
    assert from_json(expected, t) == value


def test_struct_as_tuple_and_missing_fields() -> None:
    assert to_json((1, "bar"), STRUCT) == {"1": 1, "2": "bar"}
    assert to_json((1, None), STRUCT) == {"1": 1}  # nulls are left out, as Java does
    assert from_json({"1": 1}, STRUCT) == {1: 1, 2: None}
    assert from_json({"1": 1, "99": "ignored"}, STRUCT) == {1: 1, 2: None}


def test_times_and_timestamps_are_read_leniently() -> None:
    assert from_json("22:31", TimeType()) == 81_060_000_000
    assert from_json("22:31:08", TimeType()) == 81_068_000_000
    assert from_json("22:31:08.1", TimeType()) == 81_068_100_000
    assert from_json("22:31:08.123456000", TimeType()) == 81_068_123_456
    assert from_json("2017-11-16T22:31:08", TimestampType()) == 1_510_871_468_000_000
    assert from_json("2017-11-16t22:31:08", TimestampType()) == 1_510_871_468_000_000
    assert from_json("2017-11-16T22:31:08Z", TimestamptzType()) == 1_510_871_468_000_000
    assert from_json("2017-11-16T22:31:08-00:00", TimestamptzType()) == 1_510_871_468_000_000
    assert from_json("1969-12-31T23:59:59.999999", TimestampType()) == -1
    assert from_json("000102FF", BinaryType()) == b"\x00\x01\x02\xff"
    assert from_json("F79C3E09-677C-4BBD-A479-3F349CB785E7", UUIDType()) == uuid.UUID(UUID_TEXT)


def test_write_formats() -> None:
    assert to_json(0, TimeType()) == "00:00:00.000000"
    assert to_json(-1, TimestampType()) == "1969-12-31T23:59:59.999999"
    assert to_json(0, TimestamptzNanoType()) == "1970-01-01T00:00:00.000000000+00:00"
    assert to_json(-719_893, DateType()) == "-0001-01-01"
    assert to_json(2_932_897, DateType()) == "+10000-01-01"
    assert to_json(uuid.UUID(UUID_TEXT.upper()), UUIDType()) == UUID_TEXT
    assert to_json(Decimal("14.2"), DecimalType(9, 2)) == "14.20"
    assert to_json(Decimal("-0.00"), DecimalType(9, 2)) == "0.00"
    assert to_json(Decimal("123E+2"), DecimalType(5, -2)) == "1.23E+4"
    assert to_json(math.nan, DoubleType()) == "NaN"
    assert to_json(-math.inf, FloatType()) == "-Infinity"
    float32_tenth = from_json(0.1, FloatType())
    assert float32_tenth != 0.1 and to_json(float32_tenth, FloatType()) == 0.1
    assert json.dumps(
        to_json({"k": [1, None]}, MapType(1, StringType(), 2, ListType(3, LongType(), False)))
    ) == ('{"keys": ["k"], "values": [[1, null]]}')


# EXPECTED.md 7.4: Java TestSingleValueParser must-fail cases, and wrong JSON kinds
MUST_FAIL: list[tuple[Any, IcebergType]] = [
    ("111ff", FixedType(2)),
    ("eb26bdb1-a1d8-4aa6-990e-da940875492c-abcde", UUIDType()),
    ({"keys": [1, 2], "values": [1]}, MapType(1, IntegerType(), 2, IntegerType())),
    ({"keys": [1, 1], "values": [1, 2]}, MapType(1, IntegerType(), 2, IntegerType())),
    ({"keys": [1]}, MapType(1, IntegerType(), 2, IntegerType())),
    ([1, 2], MapType(1, IntegerType(), 2, IntegerType())),
    (1, BooleanType()),
    ("true", BooleanType()),
    (True, IntegerType()),
    (1.0, IntegerType()),
    ("1", IntegerType()),
    (2**31, IntegerType()),
    (2**63, LongType()),
    (True, DoubleType()),
    ("1.0", DoubleType()),
    (1e39, FloatType()),
    (14.2, DecimalType(9, 2)),
    ("14.2", DecimalType(9, 2)),
    ("14.200", DecimalType(9, 2)),
    ("1_000.00", DecimalType(9, 2)),
    (" 1.00", DecimalType(9, 2)),
    ("NaN", DecimalType(9, 2)),
    ("12345.00", DecimalType(5, 2)),
    ("2017-11-31", DateType()),
    ("20171116", DateType()),
    (17486, DateType()),
    ("24:00:00", TimeType()),
    ("22:31:08.1234567", TimeType()),
    ("2017-11-16T22:31:08+00:00", TimestampType()),
    ("2017-11-16 22:31:08", TimestampType()),
    ("2017-11-16T22:31:08", TimestamptzType()),
    ("2017-11-16T14:31:08-08:00", TimestamptzType()),
    ("2017-11-16T22:31:08.1234567891", TimestampNanoType()),
    (1, StringType()),
    (UUID_TEXT.replace("-", ""), UUIDType()),
    ("{" + UUID_TEXT + "}", UUIDType()),
    ("0001", FixedType(1)),
    ("0g", BinaryType()),
    ("000", BinaryType()),
    ([1, 2], STRUCT),
    ({"1": "x"}, STRUCT),
    ({"a": 1}, ListType(1, IntegerType())),
    (1, UnknownType()),
]


@pytest.mark.parametrize(("obj", "t"), MUST_FAIL, ids=repr)
def test_must_fail(obj: Any, t: IcebergType) -> None:
    with pytest.raises(InvalidValueError):
        from_json(obj, t)


def test_error_names_type_and_value() -> None:
    with pytest.raises(InvalidValueError, match=r"fixed\[2\].*111ff"):
        from_json("111ff", FixedType(2))


WRITE_FAIL: list[tuple[Any, IcebergType]] = [
    (1, BooleanType()),
    (True, IntegerType()),
    (2**31, IntegerType()),
    ("x", LongType()),
    ("1.0", DoubleType()),
    (1.5, DecimalType(9, 2)),
    (Decimal("1.005"), DecimalType(9, 2)),
    (Decimal("12345.00"), DecimalType(5, 2)),
    (86_400_000_000, TimeType()),
    (b"abc", FixedType(2)),
    ("abc", BinaryType()),
    (UUID_TEXT, UUIDType()),
    ((1,), STRUCT),
    ({3: 1}, STRUCT),
    ([1], MapType(1, IntegerType(), 2, IntegerType())),
    (1, UnknownType()),
]


@pytest.mark.parametrize(("value", "t"), WRITE_FAIL, ids=repr)
def test_write_must_fail(value: Any, t: IcebergType) -> None:
    with pytest.raises(InvalidValueError):
        to_json(value, t)


def test_nulls() -> None:
    assert to_json(None, IntegerType()) is None
    assert from_json(None, UnknownType()) is None
    assert from_json([None, 1], ListType(1, IntegerType(), False)) == [None, 1]


# -- round trips ----------------------------------------------------------------------------------


@st.composite
def decimals(draw: st.DrawFn) -> tuple[IcebergType, Decimal]:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(-5, precision))
    unscaled = draw(st.integers(-(10**precision) + 1, 10**precision - 1))
    return DecimalType(precision, scale), unscaled_to_decimal(unscaled, scale)


def primitives() -> st.SearchStrategy[tuple[IcebergType, Any]]:
    longs = st.integers(LONG_MIN, LONG_MAX)
    options: list[st.SearchStrategy[tuple[IcebergType, Any]]] = [
        st.tuples(st.just(BooleanType()), st.booleans()),
        st.tuples(st.just(IntegerType()), st.integers(INT_MIN, INT_MAX)),
        st.tuples(st.just(LongType()), longs),
        st.tuples(st.just(FloatType()), st.floats(width=32, allow_nan=False)),
        st.tuples(st.just(DoubleType()), st.floats(allow_nan=False)),
        st.tuples(st.just(DateType()), st.integers(INT_MIN, INT_MAX)),
        st.tuples(st.just(TimeType()), st.integers(0, 86_400_000_000 - 1)),
        st.tuples(st.just(TimestampType()), longs),
        st.tuples(st.just(TimestamptzType()), longs),
        st.tuples(st.just(TimestampNanoType()), longs),
        st.tuples(st.just(TimestamptzNanoType()), longs),
        st.tuples(st.just(StringType()), st.text()),
        st.tuples(st.just(UUIDType()), st.uuids()),
        st.integers(1, 20).flatmap(
            lambda n: st.tuples(st.just(FixedType(n)), st.binary(min_size=n, max_size=n))
        ),
        st.tuples(st.just(BinaryType()), st.binary()),
        decimals(),
    ]
    return st.one_of(options)


def hashable_primitives() -> st.SearchStrategy[tuple[IcebergType, Any]]:
    return primitives().filter(lambda p: not isinstance(p[0], FloatType | DoubleType))


@st.composite
def nested(draw: st.DrawFn) -> tuple[IcebergType, Any]:
    kind = draw(st.sampled_from(["struct", "list", "map"]))
    if kind == "struct":
        pairs = draw(st.lists(primitives(), min_size=1, max_size=4))
        t = StructType(*(NestedField(i + 1, f"f{i}", p[0]) for i, p in enumerate(pairs)))
        return t, {i + 1: p[1] for i, p in enumerate(pairs)}
    if kind == "list":
        element_type, first = draw(primitives())
        others = draw(st.lists(primitives().filter(lambda p: p[0] == element_type), max_size=3))
        return ListType(1, element_type), [first, *(v for _, v in others)]
    key_type, key = draw(hashable_primitives())
    value_type, value = draw(primitives())
    return MapType(1, key_type, 2, value_type), {key: value}


@given(primitives())
def test_round_trip(pair: tuple[IcebergType, Any]) -> None:
    t, value = pair
    encoded = to_json(value, t)
    assert json.loads(json.dumps(encoded)) == encoded
    decoded = from_json(encoded, t)
    assert decoded == value
    assert type(decoded) is type(value)


@given(nested())
def test_nested_round_trip(pair: tuple[IcebergType, Any]) -> None:
    t, value = pair
    assert from_json(json.loads(json.dumps(to_json(value, t))), t) == value


@given(st.floats(width=32))
def test_float_special_values_round_trip(x: float) -> None:
    back = from_json(to_json(x, FloatType()), FloatType())
    assert back == x or (math.isnan(back) and math.isnan(x))
