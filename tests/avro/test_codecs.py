"""Avro block decompression: every codec round-trips within its bounds and refuses past them."""

from __future__ import annotations

import zlib

import pyarrow as pa
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.avro.codecs import MAX_BLOCK_BYTES, block_limit, decompress_block, file_budget


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
