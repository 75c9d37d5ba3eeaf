"""Puffin files: the conformance files (EXPECTED.md section 4), writing, compression and
refusals."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import UnsupportedOperationError, ValidationError
from icepark.io import PyArrowFileIO
from icepark.puffin import MAGIC, PuffinWriter, read_puffin, read_puffin_blob
from icepark.puffin.file import parse_footer

_PUFFIN = "apache-iceberg/core/src/test/resources/org/apache/iceberg/puffin/v1"
_OTHER = "some blob \x00 binary data 🤯 that is not very very very very very very long, is it?"


@pytest.fixture
def puffin_dir(conformance_dir: Path) -> Path:
    return conformance_dir / _PUFFIN


def test_empty_puffin(puffin_dir: Path) -> None:
    path = puffin_dir / "empty-puffin-uncompressed.bin"
    data = path.read_bytes()
    assert data[:4] == MAGIC and data[-4:] == MAGIC
    assert struct.unpack("<iI", data[-12:-4]) == (12, 0)
    footer = read_puffin(PyArrowFileIO().new_input(str(path)))
    assert footer.blobs == () and footer.properties == {}
    assert PuffinWriter().to_bytes() == data


@pytest.mark.parametrize(
    ("name", "offsets", "lengths", "codec"),
    [
        ("sample-metric-data-uncompressed.bin", (4, 13), (9, 83), None),
        ("sample-metric-data-compressed-zstd.bin", (4, 26), (22, 77), "zstd"),
    ],
)
def test_sample_metric_data(
    puffin_dir: Path,
    name: str,
    offsets: tuple[int, int],
    lengths: tuple[int, int],
    codec: str | None,
) -> None:
    inp = PyArrowFileIO().new_input(str(puffin_dir / name))
    footer = read_puffin(inp)
    assert footer.properties == {"created-by": "Test 1234"}
    first, second = footer.blobs
    assert (first.type, first.fields, first.snapshot_id, first.sequence_number) == (
        "some-blob",
        (1,),
        2,
        1,
    )
    assert (second.type, second.fields) == ("some-other-blob", (2,))
    assert (first.offset, second.offset) == offsets
    assert (first.length, second.length) == lengths
    assert first.compression_codec == codec == second.compression_codec
    payloads = [
        read_puffin_blob(inp, b.offset, b.length, b.compression_codec) for b in footer.blobs
    ]
    assert payloads == [b"abcdefghi", _OTHER.encode()]


def test_writer_reproduces_uncompressed_sample(puffin_dir: Path) -> None:
    w = PuffinWriter({"created-by": "Test 1234"})
    w.add("some-blob", b"abcdefghi", fields=[1], snapshot_id=2, sequence_number=1)
    w.add("some-other-blob", _OTHER.encode(), fields=[2], snapshot_id=2, sequence_number=1)
    assert w.to_bytes() == (puffin_dir / "sample-metric-data-uncompressed.bin").read_bytes()


def test_compressed_footer_refused() -> None:
    data = bytearray(PuffinWriter().to_bytes())
    data[-8] |= 1
    with pytest.raises(UnsupportedOperationError, match="LZ4"):
        parse_footer(bytes(data), "x.puffin")


def test_lz4_blob_refused() -> None:
    with pytest.raises(UnsupportedOperationError, match="lz4"):
        PuffinWriter().add("t", b"abc", compression_codec="lz4")


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_truncated_refused(cut: int) -> None:
    data = PuffinWriter().to_bytes()
    with pytest.raises(ValidationError):
        parse_footer(data[:-cut], "x.puffin")


@given(st.lists(st.tuples(st.binary(max_size=200), st.sampled_from([None, "zstd"])), max_size=5))
def test_round_trip(blobs: list[tuple[bytes, str | None]]) -> None:
    w = PuffinWriter({"k": "v"})
    for data, codec in blobs:
        w.add("blob", data, fields=[1], compression_codec=codec)
    raw = w.to_bytes()
    footer = parse_footer(raw, "mem")
    assert footer.properties == {"k": "v"}
    for (data, _), meta in zip(blobs, footer.blobs, strict=True):
        stored = raw[meta.offset : meta.offset + meta.length]
        if meta.compression_codec == "zstd":
            import zstandard

            stored = zstandard.ZstdDecompressor().decompressobj().decompress(stored)
        assert stored == data


def test_large_footer_read_from_file(tmp_path: Path) -> None:
    w = PuffinWriter({"created-by": "icepark"})
    for i in range(1500):
        w.add("blob", f"payload-{i}".encode(), fields=[i], properties={"k": "v" * 40})
    path = tmp_path / "big.puffin"
    io = PyArrowFileIO()
    size = w.finish(io.new_output(str(path)))
    assert size == path.stat().st_size and size > 64 * 1024
    footer = read_puffin(io.new_input(str(path)))
    assert len(footer.blobs) == 1500
    last = footer.blobs[-1]
    assert read_puffin_blob(io.new_input(str(path)), last.offset, last.length) == b"payload-1499"
