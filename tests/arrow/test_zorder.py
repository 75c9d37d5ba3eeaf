"""Z-order values: order-preserving bytes and Java's bit interleaving."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from icepark.arrow.zorder import interleave_bits, ordered_bytes, zorder_values


def _keys(arr: pa.Array, length: int = 8) -> list[bytes]:
    return [bytes(row) for row in ordered_bytes(arr, length)]


def _java_interleave(columns: list[bytes], size: int) -> bytes:
    """A direct port of Java's ZOrderByteUtils.interleaveBits loop, as the reference."""
    out = bytearray(size)
    source_column = source_byte = 0
    source_bit = interleave_bit = 7
    interleave_byte = 0
    while interleave_byte < size:
        bit = (columns[source_column][source_byte] >> source_bit) & 1
        out[interleave_byte] |= bit << interleave_bit
        interleave_bit -= 1
        if interleave_bit == -1:
            interleave_byte += 1
            interleave_bit = 7
        if interleave_byte == size:
            break
        while True:
            source_column += 1
            if source_column == len(columns):
                source_column = 0
                source_bit -= 1
                if source_bit == -1:
                    source_byte += 1
                    source_bit = 7
            if len(columns[source_column]) > source_byte:
                break
    return bytes(out)


@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=50))
def test_integers_keep_their_order(values: list[int]) -> None:
    keys = _keys(pa.array(values, pa.int64()))
    assert [values[i] for i in sorted(range(len(values)), key=lambda i: keys[i])] == sorted(values)


@given(st.lists(st.floats(allow_nan=False), min_size=1, max_size=50))
def test_doubles_keep_their_order(values: list[float]) -> None:
    keys = _keys(pa.array(values, pa.float64()))
    by_key = [values[i] for i in sorted(range(len(values)), key=lambda i: keys[i])]
    assert by_key == sorted(values, key=lambda v: (v, math.copysign(1, v)))


@given(st.lists(st.text(max_size=12), min_size=1, max_size=30))
def test_strings_order_by_their_first_bytes(values: list[str]) -> None:
    keys = _keys(pa.array(values), 8)
    for v, k in zip(values, keys, strict=True):
        prefix = v.encode()[:8]
        assert k == prefix + b"\0" * (8 - len(prefix))


@given(
    st.lists(st.binary(min_size=1, max_size=4), min_size=1, max_size=4),
    st.integers(1, 20),
)
def test_interleaving_is_java_s(columns: list[bytes], size: int) -> None:
    size = min(size, sum(len(c) for c in columns))
    matrices = [np.frombuffer(c, dtype=np.uint8).reshape(1, len(c)) for c in columns]
    assert bytes(interleave_bits(matrices, size)[0]) == _java_interleave(columns, size)


def _morton(x: int, y: int) -> int:
    return sum(((x >> b) & 1) << (2 * b + 1) | ((y >> b) & 1) << (2 * b) for b in range(8))


def test_zorder_values_follow_the_morton_curve() -> None:
    points = [(x, y) for x in range(8) for y in range(8)]
    xs = pa.array([p[0] for p in points], pa.int32())
    ys = pa.array([p[1] for p in points], pa.int64())
    values = zorder_values([xs, ys]).to_pylist()
    assert all(len(v) == 16 for v in values)
    by_value = [points[i] for i in sorted(range(len(points)), key=lambda i: values[i])]
    assert by_value == sorted(points, key=lambda p: _morton(*p))
    with_null = zorder_values([pa.array([None, 0], pa.int32()), pa.array([None, "a"])])
    assert with_null.to_pylist()[0] == b"\0" * 16  # nulls are the lowest
    booleans = ordered_bytes(pa.array([True, False, None]))
    assert [bytes(r)[0] for r in booleans] == [0x81, 0, 0]
