"""Deletion-vector blobs and portable 64-bit roaring bitmaps: the conformance vectors
(EXPECTED.md section 4), byte for byte, plus property-based round trips."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import InvalidValueError, ValidationError
from icepark.puffin.dv import (
    bitmaps_to_positions,
    deserialize_deletion_vector,
    deserialize_roaring64,
    positions_to_bitmaps,
    serialize_deletion_vector,
    serialize_roaring64,
)

_DELETES = "apache-iceberg/core/src/test/resources/org/apache/iceberg/deletes"


@pytest.fixture
def deletes_dir(conformance_dir: Path) -> Path:
    return conformance_dir / _DELETES


def _ranges(*spans: tuple[int, int]) -> set[int]:
    out: set[int] = set()
    for lo, hi in spans:
        out.update(range(lo, hi + 1))
    return out


_ALL_CONTAINERS = _ranges(
    (5, 5),
    (7, 7),
    (65537, 66535),
    (131073, 196606),
    (4294967306, 4294967306),
    (4294967316, 4294967316),
    (4295032842, 4295033331),
    (4295098369, 4295163902),
)

_VECTORS = [
    ("empty-position-index.bin", 12, 0xBF18480C, set()),
    ("small-alternating-values-position-index.bin", 42, 0xB3FB20BE, {1, 3, 5, 7, 9}),
    (
        "small-and-large-values-position-index.bin",
        48,
        0x15EB1C7C,
        {100, 101, 2147483747, 2147483748},
    ),
    ("all-container-types-position-index.bin", 86, 0xC89BE397, _ALL_CONTAINERS),
]


@pytest.mark.parametrize(
    ("name", "length", "crc", "positions"), _VECTORS, ids=[v[0] for v in _VECTORS]
)
def test_dv_vectors_read_and_write_byte_for_byte(
    deletes_dir: Path, name: str, length: int, crc: int, positions: set[int]
) -> None:
    data = (deletes_dir / name).read_bytes()
    assert struct.unpack(">I", data[:4])[0] == length
    assert struct.unpack(">I", data[-4:])[0] == crc
    decoded = bitmaps_to_positions(deserialize_deletion_vector(data, name))
    assert len(decoded) == len(positions)
    assert set(decoded) == positions
    assert serialize_deletion_vector(sorted(positions)) == data


@pytest.mark.parametrize("index", [-4, -3, -2, -1])
def test_dv_crc_flip_refused(deletes_dir: Path, index: int) -> None:
    data = bytearray((deletes_dir / "small-alternating-values-position-index.bin").read_bytes())
    data[index] ^= 0x01
    with pytest.raises(InvalidValueError, match="CRC"):
        deserialize_deletion_vector(bytes(data), "flipped.bin")


def test_dv_bad_magic_refused() -> None:
    data = bytearray(serialize_deletion_vector([1, 2, 3]))
    data[4] = 0
    with pytest.raises(InvalidValueError, match="magic"):
        deserialize_deletion_vector(bytes(data), "bad.bin")


def test_roaring64_vectors(deletes_dir: Path) -> None:
    empty = (deletes_dir / "64mapempty.bin").read_bytes()
    assert deserialize_roaring64(empty) == {}
    assert serialize_roaring64({}) == empty
    small = (deletes_dir / "64map32bitvals.bin").read_bytes()
    assert bitmaps_to_positions(deserialize_roaring64(small)) == list(range(10))
    spread = (deletes_dir / "64mapspreadvals.bin").read_bytes()
    got = bitmaps_to_positions(deserialize_roaring64(spread))
    assert got == [k * 2**32 + v for k in range(10) for v in range(10)]


def test_roaring64_high_key_refused(deletes_dir: Path) -> None:
    data = (deletes_dir / "64maphighvals.bin").read_bytes()
    with pytest.raises(ValidationError, match=r"Key 4022190063 is too large.*64maphighvals"):
        deserialize_roaring64(data, "64maphighvals.bin")


def test_roaring64_unsorted_keys_refused() -> None:
    one = serialize_roaring64({1: positions_to_bitmaps([5])[0]})
    zero = serialize_roaring64({0: positions_to_bitmaps([5])[0]})
    data = struct.pack("<Q", 2) + one[8:] + zero[8:]
    with pytest.raises(InvalidValueError, match="sorted"):
        deserialize_roaring64(data, "unsorted.bin")


def test_negative_position_refused() -> None:
    with pytest.raises(InvalidValueError):
        serialize_deletion_vector([-1])


_positions = st.sets(
    st.one_of(
        st.integers(0, 200_000),
        st.integers(0, 3).map(lambda k: k * 2**32) | st.integers(0, 2**63 - 1),
    ),
    max_size=300,
)


@given(_positions)
def test_dv_round_trip(positions: set[int]) -> None:
    blob = serialize_deletion_vector(positions)
    assert bitmaps_to_positions(deserialize_deletion_vector(blob)) == sorted(positions)


@given(st.sets(st.integers(0, 5), max_size=6), st.integers(0, 70_000), st.integers(1, 70_000))
def test_dv_round_trip_runs(keys: set[int], start: int, size: int) -> None:
    positions = {k * 2**32 + start + i for k in keys for i in range(size)}
    blob = serialize_deletion_vector(positions)
    assert len(bitmaps_to_positions(deserialize_deletion_vector(blob))) == len(positions)
