"""icepark.arrow.batches: coalescing small record batches."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from icepark.arrow.batches import coalesce_batches


@given(st.lists(st.integers(0, 50), max_size=40), st.integers(1, 120))
def test_rows_kept_in_order_and_batches_large_enough(sizes: list[int], min_rows: int) -> None:
    start = 0
    batches = []
    for n in sizes:
        batches.append(pa.record_batch({"x": pa.array(range(start, start + n), pa.int64())}))
        start += n
    out = list(coalesce_batches(iter(batches), min_rows))
    assert [v for b in out for v in b.column(0).to_pylist()] == list(range(start))
    assert all(b.num_rows >= min_rows for b in out[:-1])
    assert len(out) <= max(len(batches), 1)
    big = [b for b in batches if b.num_rows >= min_rows]
    if batches and batches[0].num_rows >= min_rows:
        assert out[0] is batches[0]  # passed unchanged, not copied
    assert len(big) <= len(out) or not batches
