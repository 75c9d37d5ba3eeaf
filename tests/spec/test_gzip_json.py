"""Gzip metadata JSON: inflated whole (every member), refused past its bound or when corrupt."""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import InvalidMetadataError
from icepark.spec.gzip_json import gunzip_metadata
from icepark.spec.metadata import table_metadata_from_json


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=2000), min_size=1, max_size=3))
def test_round_trip_of_one_or_more_members(members: list[bytes]) -> None:
    data = b"".join(gzip.compress(m, mtime=0) for m in members)
    assert gunzip_metadata(data, "x") == b"".join(members) == gzip.decompress(data)


def test_a_bomb_is_refused_before_it_is_allocated() -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = packer.compress(b" " * (512 * 2**20)) + packer.flush()  # 512 MiB of blanks in 0.5 MB
    tracemalloc.start()
    try:
        with pytest.raises(InvalidMetadataError, match="table metadata: it inflates to more"):
            table_metadata_from_json(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 320 * 2**20  # the bound (256x 0.5 MB) and one copy; 512 MiB before


def test_corrupt_and_truncated() -> None:
    data = gzip.compress(json.dumps({"a": 1}).encode())
    with pytest.raises(InvalidMetadataError, match="Cannot decompress gzip v1: truncated"):
        gunzip_metadata(data[:-12], "v1")
    with pytest.raises(InvalidMetadataError, match="Cannot decompress gzip v1"):
        gunzip_metadata(data[:10] + b"\xff" * 20, "v1")
