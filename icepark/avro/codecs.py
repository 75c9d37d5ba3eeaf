"""Decompressing the blocks of Avro files, with a bound on what they may grow to.

Every reader of Avro blocks (whole files, manifests scanned block by block, data files
streamed) decompresses through :func:`decompress_block`: ``deflate`` with zlib-ng (zlib's
interface, 40% less time on a manifest's blocks), ``zstandard``
with the ``zstandard`` package, ``snappy`` with pyarrow (checking Avro's CRC32 of the
uncompressed bytes).

A few kilobytes of deflate or zstandard can claim gigabytes (a "decompression bomb"), and a
megabyte of tiny records becomes many megabytes of decoded values, so no codec is asked for
more than a limit proportional to what it was given: a block may decompress to at most
:func:`block_limit` of its compressed size (64 times it, at least 1 MiB: writers flush a
block every ~64 KB, Java's and fastavro's sync intervals, so real blocks are far below; never
more than :data:`MAX_BLOCK_BYTES`), and the blocks of a file read whole together to at most
:func:`file_budget` of the file's size. More is refused as corruption before it is allocated.
"""

from __future__ import annotations

from typing import cast

from zlib_ng import zlib_ng

__all__ = ["MAX_BLOCK_BYTES", "block_limit", "decompress_block", "file_budget"]

MAX_BLOCK_BYTES = 64 * 1024 * 1024
"""The most one block may decompress to, whatever its size."""

_RATIO = 64
"""Decompressed bytes allowed per compressed byte (manifests compress 3-10x)."""

_FLOOR = 1024 * 1024
"""Decompressed bytes always allowed, whatever the ratio (a block of one repeated value)."""

_SNAPPY_MAX_RATIO = 32
"""A snappy element of n bytes gives at most 64 bytes (a 3-byte copy)."""

_ZSTD_FEED = 256

_DEFLATE_ERROR = cast(type[Exception], zlib_ng.error)  # its stub declares an instance


def block_limit(compressed_size: int) -> int:
    """The most a block of ``compressed_size`` bytes may decompress to."""
    return min(MAX_BLOCK_BYTES, max(_FLOOR, _RATIO * compressed_size))


def file_budget(file_size: int) -> int:
    """The most the blocks of a file of ``file_size`` bytes may decompress to together."""
    return max(_FLOOR, _RATIO * file_size)


def decompress_block(codec: str, payload: bytes, limit: int | None = None) -> bytes:
    """The bytes of one block of an Avro file compressed with ``codec``. A block that does not
    decompress, or would decompress to more than its :func:`block_limit` (or ``limit``, when
    smaller), raises ``ValueError``."""
    if codec == "null":
        return payload
    bound = block_limit(len(payload))
    limit = bound if limit is None else min(limit, bound)
    if codec == "deflate":
        inflater = zlib_ng.decompressobj(-15)
        try:
            out = inflater.decompress(payload, limit + 1)
        except _DEFLATE_ERROR as exc:
            raise ValueError(f"corrupt deflate block ({exc})") from exc
        _check_size(len(out), limit, codec)
        if not inflater.eof:
            raise ValueError("corrupt deflate block (incomplete or truncated stream)")
        return out
    if codec == "snappy":
        return _unsnappy(payload, limit)
    if codec == "zstandard":
        return _unzstd(payload, limit)
    raise ValueError(f"unsupported codec {codec!r}")


def _check_size(size: int, limit: int, codec: str) -> None:
    if size > limit:
        raise ValueError(
            f"a {codec} block decompresses to more than {limit:,} bytes (a decompression bomb"
            " or corruption)"
        )


def _unzstd(payload: bytes, limit: int) -> bytes:
    """One zstandard frame, fed a little at a time: a few input bytes yield at most a few
    128 KiB blocks, so the output is checked against ``limit`` long before it is huge."""
    import zstandard

    inflater = zstandard.ZstdDecompressor().decompressobj()
    out = bytearray()
    try:
        for start in range(0, len(payload), _ZSTD_FEED):
            out += inflater.decompress(payload[start : start + _ZSTD_FEED])
            _check_size(len(out), limit, "zstandard")
            if inflater.eof:
                break
    except zstandard.ZstdError as exc:
        raise ValueError(f"corrupt zstandard block ({exc})") from exc
    if not inflater.eof:
        raise ValueError("corrupt zstandard block (incomplete or truncated frame)")
    return bytes(out)


def _unsnappy(payload: bytes, limit: int) -> bytes:
    """An Avro snappy block: raw snappy, then the CRC32 of the uncompressed bytes."""
    import pyarrow as pa

    size = shift = pos = 0
    while True:  # snappy's preamble: the uncompressed length, an unsigned 32-bit varint
        if pos >= len(payload) - 4 or shift > 28:
            raise ValueError("corrupt snappy block (bad length preamble)")
        b = payload[pos]
        pos += 1
        size |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    # the length is what gets allocated: a larger claim than snappy can encode is corruption
    if size > _SNAPPY_MAX_RATIO * len(payload):
        raise ValueError(
            f"corrupt snappy block (claims {size} bytes uncompressed from {len(payload)})"
        )
    _check_size(size, limit, "snappy")
    try:
        out = bytes(pa.decompress(payload[:-4], size, codec="snappy", asbytes=True))
    except (OSError, ValueError) as exc:
        raise ValueError(f"corrupt snappy block ({exc})") from exc
    if zlib_ng.crc32(out).to_bytes(4, "big") != payload[-4:]:
        raise ValueError("corrupt snappy block (checksum mismatch)")
    return out
