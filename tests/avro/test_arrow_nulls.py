"""``null_array``: the same arrays as ``pyarrow.nulls``, over one shared buffer of zeroes."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.avro.arrow_nulls import null_array

_LEAVES = [
    pa.int8(),
    pa.int32(),
    pa.int64(),
    pa.float32(),
    pa.float64(),
    pa.date32(),
    pa.timestamp("us", tz="UTC"),
    pa.decimal128(9, 2),
    pa.decimal128(38, 10),
    pa.binary(16),
    pa.string(),
    pa.binary(),
    pa.bool_(),
    pa.large_string(),
]


def _types() -> st.SearchStrategy[pa.DataType]:
    return st.recursive(
        st.sampled_from(_LEAVES),
        lambda inner: st.one_of(
            inner.map(pa.list_),
            st.tuples(st.sampled_from([pa.int32(), pa.string()]), inner).map(
                lambda kv: pa.map_(kv[0], kv[1])
            ),
            st.lists(inner, min_size=1, max_size=3).map(
                lambda ts: pa.struct([pa.field(f"f{i}", t) for i, t in enumerate(ts)])
            ),
        ),
        max_leaves=5,
    )


@settings(max_examples=200, deadline=None)
@given(t=_types(), n=st.integers(0, 3000))
def test_equals_pyarrow_nulls(t: pa.DataType, n: int) -> None:
    got = null_array(n, t)
    got.validate(full=True)
    expected = pa.nulls(n, t)
    assert got.type == t
    assert got.null_count == n
    assert got.equals(expected)
    # usable as any array: sliced, taken, concatenated, filled
    assert got.slice(n // 3).equals(expected.slice(n // 3))
    joined = pa.concat_arrays([got, pa.nulls(2, t)])
    joined.validate(full=True)
    assert joined.null_count == n + 2
    if pa.types.is_int64(t):
        assert pc.fill_null(got, 7).to_pylist() == [7] * n


def test_buffers_are_shared_and_read_only() -> None:
    a = null_array(10_000, pa.int64())
    b = null_array(5_000, pa.string())
    assert a.buffers()[1].address == b.buffers()[1].address  # one buffer of zeroes
    assert not a.buffers()[1].is_mutable
    before = pa.total_allocated_bytes()
    many = [null_array(100_000, pa.int64()) for _ in range(20)]
    assert pa.total_allocated_bytes() - before < 100_000  # not 20 x 800 KB
    assert all(m.null_count == 100_000 for m in many)


@pytest.mark.parametrize("n", [1, 8, 9, 2_500_000])
def test_sizes_past_the_shared_buffer(n: int) -> None:
    got = null_array(n, pa.struct([("a", pa.int64()), ("b", pa.list_(pa.string()))]))
    got.validate(full=True)
    assert got.null_count == n
    assert got.field("a").null_count == n
