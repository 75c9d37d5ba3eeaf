"""Vectorised transforms on Arrow arrays give exactly the single-value results."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.arrow.transforms import apply_transform
from icepark.errors import InvalidTransformError, InvalidValueError
from icepark.spec.conversions import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, unscaled_to_decimal
from icepark.spec.transforms import (
    BucketTransform,
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
    DecimalType,
    FixedType,
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

LONGS = st.integers(LONG_MIN, LONG_MAX)
# (source type, Arrow type, value strategy in the Arrow array's own representation)
SOURCES: list[tuple[IcebergType, pa.DataType, st.SearchStrategy[Any]]] = [
    (IntegerType(), pa.int32(), st.integers(INT_MIN, INT_MAX)),
    (LongType(), pa.int64(), LONGS),
    (DateType(), pa.date32(), st.integers(INT_MIN, INT_MAX)),
    (TimeType(), pa.time64("us"), st.integers(0, 86_400_000_000 - 1)),
    (TimestampType(), pa.timestamp("us"), LONGS),
    (TimestamptzType(), pa.timestamp("us", tz="UTC"), LONGS),
    (TimestampNanoType(), pa.timestamp("ns"), LONGS),
    (TimestamptzNanoType(), pa.timestamp("ns", tz="UTC"), LONGS),
    (StringType(), pa.string(), st.text(max_size=12)),
    (StringType(), pa.large_string(), st.text(max_size=12)),
    (UUIDType(), pa.binary(16), st.binary(min_size=16, max_size=16)),
    (FixedType(3), pa.binary(3), st.binary(min_size=3, max_size=3)),
    (FixedType(8), pa.binary(8), st.binary(min_size=8, max_size=8)),
    (BinaryType(), pa.binary(), st.binary(max_size=12)),
    (BinaryType(), pa.large_binary(), st.binary(max_size=12)),
    (
        DecimalType(9, 2),
        pa.decimal128(9, 2),
        st.integers(-(10**9) + 1, 10**9 - 1).map(lambda u: unscaled_to_decimal(u, 2)),
    ),
    (
        DecimalType(38, 10),
        pa.decimal128(38, 10),
        st.integers(-(10**38) + 1, 10**38 - 1).map(lambda u: unscaled_to_decimal(u, 10)),
    ),
]
TRANSFORMS: list[Transform] = [
    IdentityTransform(),
    VoidTransform(),
    BucketTransform(1),
    BucketTransform(16),
    BucketTransform(1000),
    TruncateTransform(1),
    TruncateTransform(3),
    TruncateTransform(10),
    YearTransform(),
    MonthTransform(),
    DayTransform(),
    HourTransform(),
]
CASES = [
    (transform, source, arrow_type, values)
    for transform in TRANSFORMS
    for source, arrow_type, values in SOURCES
    if transform.can_transform(source)
]


def scalar_input(source: IcebergType, value: Any) -> Any:
    """The internal-representation value of an Arrow value (uuids as uuid.UUID)."""
    if value is not None and isinstance(source, UUIDType):
        return uuid.UUID(bytes=value)
    return value


def build_array(arrow_type: pa.DataType, values: list[Any]) -> pa.Array:
    if pa.types.is_date32(arrow_type):
        return pa.array(values, pa.int32()).view(pa.date32())
    if pa.types.is_timestamp(arrow_type) or pa.types.is_time(arrow_type):
        return pa.array(values, pa.int64()).view(arrow_type)
    return pa.array(values, arrow_type)


def expected_results(transform: Transform, source: IcebergType, values: list[Any]) -> list[Any]:
    out = []
    for v in values:
        try:
            out.append(transform.apply(source, scalar_input(source, v)))
        except InvalidValueError:
            return ["error"]
    return out


def as_python(arr: pa.Array | pa.ChunkedArray) -> list[Any]:
    if pa.types.is_date32(arr.type):
        arr = arr.cast(pa.int32())
    elif pa.types.is_timestamp(arr.type) or pa.types.is_time(arr.type):
        arr = arr.cast(pa.int64())
    return arr.to_pylist()


def run(transform: Transform, source: IcebergType, arr: pa.Array | pa.ChunkedArray) -> list[Any]:
    try:
        return as_python(apply_transform(transform, source, arr))
    except InvalidValueError:
        return ["error"]


@pytest.mark.parametrize(("transform", "source", "arrow_type", "values"), CASES, ids=repr)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_vectorised_equals_scalar(
    transform: Transform,
    source: IcebergType,
    arrow_type: pa.DataType,
    values: st.SearchStrategy[Any],
    data: st.DataObject,
) -> None:
    items = data.draw(st.lists(st.one_of(st.none(), values), max_size=20))
    prefix = data.draw(st.lists(st.one_of(st.none(), values), min_size=1, max_size=3))
    arr = build_array(arrow_type, items)
    expected = expected_results(transform, source, items)
    result = run(transform, source, arr)
    if transform.is_identity and isinstance(source, UUIDType):
        expected = [None if v is None else v.bytes for v in expected]
    assert result == expected
    # a sliced array (non-zero offset) and a chunked array give the same
    padded = build_array(arrow_type, prefix + items)[len(prefix) :]
    assert run(transform, source, padded) == expected
    chunked = pa.chunked_array([arr[: len(items) // 2], arr[len(items) // 2 :]], type=arr.type)
    assert run(transform, source, chunked) == expected


def test_result_types() -> None:
    ts = build_array(pa.timestamp("us"), [0, None])
    assert apply_transform(BucketTransform(4), TimestampType(), ts).type == pa.int32()
    assert apply_transform(YearTransform(), TimestampType(), ts).type == pa.int32()
    assert apply_transform(MonthTransform(), TimestampType(), ts).type == pa.int32()
    assert apply_transform(HourTransform(), TimestampType(), ts).type == pa.int32()
    assert apply_transform(DayTransform(), TimestampType(), ts).type == pa.date32()
    assert apply_transform(IdentityTransform(), TimestampType(), ts).type == ts.type
    assert apply_transform(VoidTransform(), TimestampType(), ts).to_pylist() == [None, None]
    longs = pa.array([11, None], pa.int64())
    assert apply_transform(TruncateTransform(10), LongType(), longs).type == pa.int64()
    empty = pa.chunked_array([], type=pa.string())
    result = apply_transform(BucketTransform(4), StringType(), empty)
    assert isinstance(result, pa.ChunkedArray) and result.type == pa.int32()


def test_known_vectors() -> None:
    ints = pa.array([34, None, 0], pa.int32())
    zero = BucketTransform(100).apply(IntegerType(), 0)
    assert apply_transform(BucketTransform(100), IntegerType(), ints).to_pylist() == [
        79,
        None,
        zero,
    ]
    strings = pa.array(["iceberg"])
    assert apply_transform(BucketTransform(100), StringType(), strings).to_pylist() == [89]
    uuids = pa.array([uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7").bytes], pa.binary(16))
    assert apply_transform(BucketTransform(100), UUIDType(), uuids).to_pylist() == [40]
    decimals = pa.array([Decimal("14.20"), Decimal("-1.28")], pa.decimal128(9, 2))
    assert apply_transform(BucketTransform(100), DecimalType(9, 2), decimals).to_pylist()[0] == 59
    dates = build_array(pa.date32(), [17486, -1])
    assert apply_transform(BucketTransform(100), DateType(), dates).to_pylist()[0] == 26
    assert apply_transform(YearTransform(), DateType(), dates).to_pylist() == [47, -1]
    assert apply_transform(MonthTransform(), DateType(), dates).to_pylist() == [574, -1]
    ns = build_array(pa.timestamp("ns"), [1_510_871_468_000_001_001])
    assert apply_transform(BucketTransform(100), TimestampNanoType(), ns).to_pylist() == [
        BucketTransform(100).apply(TimestampType(), 1_510_871_468_000_001)
    ]


def test_other_units_and_encodings() -> None:
    micros = [1_510_871_468_000_000, -1_000, None]
    millis = pa.array([m // 1000 if m is not None else None for m in micros], pa.int64()).view(
        pa.timestamp("ms")
    )
    expected = [HourTransform().apply(TimestampType(), m) for m in micros]
    assert apply_transform(HourTransform(), TimestampType(), millis).to_pylist() == expected
    nanos = build_array(pa.timestamp("ns"), [-1, 1])  # given to a microsecond column: floor
    assert apply_transform(BucketTransform(16), TimestampType(), nanos).to_pylist() == [
        BucketTransform(16).apply(TimestampType(), -1),
        BucketTransform(16).apply(TimestampType(), 0),
    ]
    dictionary = pa.array(["iceberg", "ice", "iceberg", None]).dictionary_encode()
    assert apply_transform(TruncateTransform(3), StringType(), dictionary).to_pylist() == [
        "ice",
        "ice",
        "ice",
        None,
    ]
    assert apply_transform(BucketTransform(100), StringType(), dictionary).to_pylist()[0] == 89
    days = pa.array([-1, 1], pa.int32()).view(pa.date32())
    assert apply_transform(HourTransform(), TimestampType(), days).to_pylist() == [-24, 24]
    date64 = pa.array([-1, 86_400_000], pa.int64()).view(pa.date64())
    assert apply_transform(YearTransform(), DateType(), date64).to_pylist() == [-1, 0]
    dates_as_ts = build_array(pa.timestamp("s"), [-1, 86_400])
    assert apply_transform(DayTransform(), DateType(), dates_as_ts).cast(
        pa.int32()
    ).to_pylist() == [
        -1,
        1,
    ]


def test_errors() -> None:
    with pytest.raises(InvalidTransformError, match="hour"):
        apply_transform(HourTransform(), DateType(), build_array(pa.date32(), [1]))
    with pytest.raises(InvalidValueError):
        apply_transform(TruncateTransform(10), IntegerType(), pa.array([INT_MIN], pa.int32()))
    with pytest.raises(InvalidValueError):
        apply_transform(TruncateTransform(10), LongType(), pa.array([LONG_MIN], pa.int64()))
    with pytest.raises(InvalidValueError):
        apply_transform(
            HourTransform(), TimestampType(), build_array(pa.timestamp("us"), [LONG_MAX])
        )
    with pytest.raises(InvalidValueError):
        apply_transform(YearTransform(), TimestampType(), pa.array(["x"]))


def test_large_array_matches_scalar() -> None:
    values = [(i * 7_919_993_111) % (2**62) - 2**61 for i in range(5000)]
    arr = pa.array(values, pa.int64())
    got = apply_transform(BucketTransform(97), LongType(), arr).to_pylist()
    assert got == [BucketTransform(97).apply(LongType(), v) for v in values]
