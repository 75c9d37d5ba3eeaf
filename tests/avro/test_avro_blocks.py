"""``read_avro_blocks``: a file's blocks decompressed one at a time or all at once give the
same records and blocks, and the one-at-a-time blocks are not copied again."""

from __future__ import annotations

import io

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.avro.blocks import read_avro_blocks

SCHEMA = {
    "type": "record",
    "name": "r",
    "fields": [{"name": "id", "type": "long"}, {"name": "s", "type": "string"}],
}


def _file(rows: list[tuple[int, str]], codec: str, block: int) -> bytes:
    out = io.BytesIO()
    records = [{"id": i, "s": s} for i, s in rows]
    fastavro.writer(out, fastavro.parse_schema(SCHEMA), records, codec=codec, sync_interval=block)
    return out.getvalue()


def _plain_blocks(data: bytes) -> list[tuple[int, bytes]]:
    """Each block's count and records as fastavro's block reader gives them."""
    return [(b.num_records, b.bytes_.getvalue()) for b in fastavro.block_reader(io.BytesIO(data))]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-(2**40), 2**40), st.text(max_size=30)), max_size=300),
    st.sampled_from(["null", "deflate"]),
    st.integers(16, 4096),
)
def test_blocks_read_either_way_are_the_same(
    rows: list[tuple[int, str]], codec: str, block: int
) -> None:
    data = _file(rows, codec, block)
    expected = _plain_blocks(data)
    for compiled in (False, True):
        blocks = read_avro_blocks("mem", data, compiled=compiled)
        assert blocks.count == len(rows)
        assert blocks.records() == (b"".join(d for _, d in expected), len(rows))
        assert list(blocks.block_data()) == expected


def test_blocks_read_one_at_a_time_are_held_once() -> None:
    data = _file([(i, "x" * (i % 50)) for i in range(5_000)], "deflate", 2048)
    blocks = read_avro_blocks("mem", data)
    assert len(blocks.spans) > 10
    size = sum(len(d) for _, d in _plain_blocks(data))
    assert len(blocks.parts) == len(blocks.spans)
    assert all(b.data is p for b, p in zip(blocks.blocks, blocks.parts, strict=True))
    assert blocks.nbytes == size  # the blocks are the parts: no copy
    blocks.records()
    assert blocks.nbytes == 2 * size  # joined once asked for


def test_blocks_inflated_at_once_are_one_buffer() -> None:
    data = _file([(i, "x" * (i % 50)) for i in range(5_000)], "deflate", 2048)
    blocks = read_avro_blocks("mem", data, compiled=True)
    size = sum(len(d) for _, d in _plain_blocks(data))
    assert len(blocks.parts) == 1
    assert blocks.records()[0] is blocks.parts[0]
    assert blocks.nbytes == size
    blocks.block_data()
    assert blocks.nbytes == 2 * size  # the blocks copied out of it once asked for
