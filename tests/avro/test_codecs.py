"""Avro block decompression: every codec round-trips within its bounds and refuses past them."""

from __future__ import annotations

import zlib

import pyarrow as pa
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.avro.codecs import (
    MAX_BLOCK_BYTES,
    block_limit,
    decompress_block,
    decompress_parts,
    file_budget,
    inflater,
)


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "deflate":
        packer = zlib.compressobj(6, zlib.DEFLATED, -15)
        return packer.compress(data) + packer.flush()
    if codec == "zstandard":
        return bytes(zstandard.ZstdCompressor().compress(data))
    if codec == "snappy":
        packed = pa.compress(data, codec="snappy", asbytes=True)
        return bytes(packed) + zlib.crc32(data).to_bytes(4, "big")
    return data


CODECS = ["null", "deflate", "zstandard", "snappy"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CODECS), st.binary(max_size=4096), st.integers(0, 3))
def test_round_trip(codec: str, data: bytes, repeat: int) -> None:
    data = data * (1 + repeat * 100)
    assert decompress_block(codec, _compress(codec, data)) == data


@pytest.mark.parametrize("codec", ["deflate", "zstandard", "snappy"])
def test_limit_is_refused_exactly(codec: str) -> None:
    data = bytes(range(256)) * 64  # 16 KiB
    packed = _compress(codec, data)
    assert decompress_block(codec, packed, len(data)) == data
    with pytest.raises(ValueError, match=f"more than {len(data) - 1:,} bytes"):
        decompress_block(codec, packed, len(data) - 1)


@pytest.mark.parametrize("codec", ["deflate", "zstandard"])
def test_corrupt_and_truncated_blocks(codec: str) -> None:
    packed = _compress(codec, b"hello world" * 100)
    with pytest.raises(ValueError, match="corrupt"):
        decompress_block(codec, packed[: len(packed) // 2])
    with pytest.raises(ValueError):
        decompress_block(codec, b"\xff" * 32)


def test_bounds() -> None:
    assert block_limit(0) == 2**20  # any block may hold a MiB
    assert block_limit(100_000) == 6_400_000  # past that, 64 times its size
    assert block_limit(10**9) == MAX_BLOCK_BYTES
    assert file_budget(10**9) == 64 * 10**9  # a file read whole: no absolute cap
    with pytest.raises(ValueError, match="unsupported codec 'bzip2'"):
        decompress_block("bzip2", b"x")


# -- a file's blocks at once -----------------------------------------------------------------


def _blocks(codec: str, parts: list[bytes]) -> tuple[bytes, list[tuple[int, int]]]:
    """The parts compressed one after another, with a 16-byte gap between them (where a
    container file has its sync markers), and where each block is."""
    data = b""
    spans = []
    for part in parts:
        packed = _compress(codec, part)
        spans.append((len(data), len(data) + len(packed)))
        data += packed + b"\x00" * 16
    return data, spans


def _one_at_a_time(codec: str, data: bytes, spans: list[tuple[int, int]], budget: int) -> bytes:
    out = b""
    for start, end in spans:
        out += decompress_block(codec, data[start:end], budget - len(out))
    return out


def test_the_compiled_inflater_is_there() -> None:
    """zlib-ng and numba are dependencies: the bulk path must not be silently off."""
    assert inflater() is not None


_PARTS = st.lists(
    st.tuples(st.binary(max_size=2048), st.integers(1, 400)).map(lambda p: p[0] * p[1]),
    min_size=0,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CODECS), _PARTS)
def test_blocks_at_once_equal_blocks_one_at_a_time(codec: str, parts: list[bytes]) -> None:
    data, spans = _blocks(codec, parts)
    for compiled in (False, True):
        found, ends = decompress_parts(
            codec, data, spans, file_budget(len(data)), compiled=compiled
        )
        assert b"".join(found) == b"".join(parts)
        if compiled and codec == "deflate":
            assert len(found) == 1  # one call, one buffer
        else:
            assert found == parts  # a block at a time, each as it is
        assert ends == [sum(len(p) for p in parts[: i + 1]) for i in range(len(parts))]


@settings(max_examples=40, deadline=None)
@given(_PARTS)
def test_the_compiled_inflater_equals_zlib(parts: list[bytes]) -> None:
    run = inflater()
    assert run is not None
    data, spans = _blocks("deflate", parts)
    ends = [sum(len(p) for p in parts[: i + 1]) for i in range(len(parts))]
    assert run(data, spans, file_budget(len(data))) == (b"".join(parts), ends)


def test_output_grows_past_its_first_guess() -> None:
    """Blocks that inflate 200 times over (more than the first guess of 8) grow the output,
    from the block that did not fit, keeping what came before."""
    parts = [bytes([i]) * 1_000_000 + bytes(range(256)) for i in range(6)]
    data, spans = _blocks("deflate", parts)
    assert 8 * len(data) < sum(map(len, parts))
    run = inflater()
    assert run is not None
    records, ends = run(data, spans, 2**30)  # each block under its limit of a MiB
    assert records == b"".join(parts)
    assert ends[-1] == len(records)


def _error(codec: str, data: bytes, spans: list[tuple[int, int]], budget: int) -> str:
    with pytest.raises(ValueError) as caught:
        decompress_parts(codec, data, spans, budget, compiled=True)
    return str(caught.value)


def test_a_bomb_among_blocks_is_refused_as_one_block_at_a_time_refuses_it() -> None:
    parts = [b"ok" * 1000] * 3 + [b"\x00" * (3 * 2**20)] + [b"ok"] * 2  # 3 MiB of one byte
    data, spans = _blocks("deflate", parts)
    with pytest.raises(ValueError) as slow:
        _one_at_a_time("deflate", data, spans, 2**30)  # the block's own limit, not the file's
    assert "more than 1,048,576 bytes" in str(slow.value)
    assert _error("deflate", data, spans, 2**30) == str(slow.value)


def test_the_files_budget_holds_across_blocks() -> None:
    """Each block within its own limit, all of them together over the file's budget."""
    parts = [bytes(range(256)) * 120 for _ in range(6)]  # 30,720 bytes each
    data, spans = _blocks("deflate", parts)
    budget = 100_000
    with pytest.raises(ValueError) as slow:
        _one_at_a_time("deflate", data, spans, budget)
    assert f"more than {budget - 3 * 30_720:,} bytes" in str(slow.value)
    assert _error("deflate", data, spans, budget) == str(slow.value)
    assert decompress_parts("deflate", data, spans, 6 * 30_720, compiled=True)[0] == [
        b"".join(parts)
    ]


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_a_corrupt_block_among_blocks_is_refused(damage: str) -> None:
    parts = [b"hello world" * 100 + bytes([i]) for i in range(6)]
    data, spans = _blocks("deflate", parts)
    start, end = spans[4]
    if damage == "truncated":
        spans[4] = (start, start + (end - start) // 2)
    elif damage == "garbage":
        data = data[:start] + b"\xff" * (end - start) + data[end:]
    else:
        spans[4] = (start, start)
    assert "corrupt deflate block" in _error("deflate", data, spans, file_budget(len(data)))


def test_threads_inflate_files_at_once() -> None:
    from concurrent.futures import ThreadPoolExecutor

    files = [[bytes([n, i]) * (500 + 97 * n) for i in range(8)] for n in range(16)]
    packed = [_blocks("deflate", parts) for parts in files]
    with ThreadPoolExecutor(4) as pool:
        found = list(
            pool.map(lambda f: decompress_parts("deflate", *f, 2**30, compiled=True)[0], packed)
        )
    assert found == [[b"".join(parts)] for parts in files]
