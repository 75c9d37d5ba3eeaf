"""Decompressing the blocks of Avro files, with a bound on what they may grow to.

Every reader of Avro blocks (whole files, manifests scanned block by block, data files
streamed) decompresses through :func:`decompress_block`: ``deflate`` with zlib-ng (zlib's
interface, 40% less time on a manifest's blocks), ``zstandard``
with the ``zstandard`` package, ``snappy`` with pyarrow (checking Avro's CRC32 of the
uncompressed bytes). A file read whole goes through :func:`decompress_parts`, which inflates
all the ``deflate`` blocks of a file in one compiled call that holds no GIL
(:mod:`icepark.avro._inflate`, zlib-ng's own inflate), where numba is there.

A few kilobytes of deflate or zstandard can claim gigabytes (a "decompression bomb"), and a
megabyte of tiny records becomes many megabytes of decoded values, so no codec is asked for
more than a limit proportional to what it was given: a block may decompress to at most
:func:`block_limit` of its compressed size (64 times it, at least 1 MiB: writers flush a
block every ~64 KB, Java's and fastavro's sync intervals, so real blocks are far below; never
more than :data:`MAX_BLOCK_BYTES`), and the blocks of a file read whole together to at most
:func:`file_budget` of the file's size. More is refused as corruption before it is allocated.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, cast

import numpy as np
from zlib_ng import zlib_ng

__all__ = [
    "MAX_BLOCK_BYTES",
    "block_limit",
    "decompress_block",
    "decompress_parts",
    "file_budget",
    "inflater",
    "Inflater",
]

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


_GROWTH_GUESS = 8
"""What the output is first sized to, times the compressed bytes (manifests inflate 6-7x)."""


def decompress_parts(
    codec: str,
    data: bytes,
    spans: Sequence[tuple[int, int]],
    budget: int,
    *,
    compiled: bool = False,
) -> tuple[list[bytes], list[int]]:
    """The blocks of one file (``data[start:end]`` for each span, compressed with ``codec``)
    decompressed: one buffer per block, or one buffer of them all where the compiled
    inflater ran; and where each block's bytes end in those buffers laid end to end. Each
    block is held to :func:`block_limit` of its size and all of them to ``budget``, as by
    :func:`decompress_block` (``ValueError`` otherwise).

    With ``compiled``, ``deflate`` blocks go through :func:`inflater` where it is there: one
    call, no GIL taken back between blocks. For callers that decode with compiled code
    anyway: the first compiled call in a process costs a quarter of a second (numba's
    start), after which the inflater's own first call costs 10 ms."""
    run = inflater() if compiled and codec == "deflate" else None
    if run is not None:
        records, ends = run(data, spans, budget)
        return [records], ends
    parts: list[bytes] = []
    ends = []
    size = 0
    for start, end in spans:
        part = decompress_block(codec, data[start:end], budget - size)
        size += len(part)
        parts.append(part)
        ends.append(size)
    return parts, ends


Inflater = Callable[[bytes, Sequence[tuple[int, int]], int], tuple[bytes, list[int]]]
"""``(data, spans, budget) -> (records, ends)``: :func:`decompress_parts` of deflate blocks
into one buffer."""


@cache
def inflater() -> Inflater | None:
    """The bulk inflate of :func:`decompress_parts`, or None where it cannot run: numba not
    importable, the compiled paths turned off (``ICEPARK_COMPILED_AVRO=0``), or a zlib-ng
    without its native inflate symbols or whose stream is not laid out as this expects (a
    few blocks inflated both ways must agree)."""
    if os.environ.get("ICEPARK_COMPILED_AVRO", "1") == "0":
        return None
    functions = _zng_functions()
    if functions is None:
        return None
    try:
        from icepark.avro import _inflate
    except ImportError:
        return None

    def run(data: bytes, spans: Sequence[tuple[int, int]], budget: int) -> tuple[bytes, list[int]]:
        return _inflate_all(_inflate, functions, data, spans, budget)

    sample = bytes(range(256)) * 64
    packer = zlib_ng.compressobj(wbits=-15)
    packed = packer.compress(sample) + packer.flush()
    data = packed * 3
    spans = [(i * len(packed), (i + 1) * len(packed)) for i in range(3)]
    try:
        if run(data, spans, file_budget(len(data)))[0] != sample * 3:
            return None
    except ValueError:
        return None
    return run


def _zng_functions() -> tuple[int, int, int, int] | None:
    """The addresses of zlib-ng's ``zng_inflateInit2``, ``zng_inflate``,
    ``zng_inflateReset`` and ``zng_inflateEnd`` in the ``zlib_ng`` package's extension (None
    when it does not export them, or is not zlib-ng 2, whose ``zng_stream`` this lays out)."""
    try:
        library = ctypes.CDLL(cast(str, zlib_ng.__file__))
        version = library.zlibng_version
        names = ("zng_inflateInit2", "zng_inflate", "zng_inflateReset", "zng_inflateEnd")
        found = [getattr(library, name) for name in names]
    except (OSError, AttributeError, TypeError):
        return None
    version.restype = ctypes.c_char_p
    if not cast(bytes, version()).startswith(b"2."):
        return None
    init, inflate, reset, end = (cast(int, ctypes.cast(f, ctypes.c_void_p).value) for f in found)
    return init, inflate, reset, end


def _inflate_all(
    compiled: Any,
    functions: tuple[int, int, int, int],
    data: bytes,
    spans: Sequence[tuple[int, int]],
    budget: int,
) -> tuple[bytes, list[int]]:
    """:func:`decompress_parts` of deflate blocks by ``compiled.inflate_blocks``, growing
    the output when it runs out of room."""
    src = np.frombuffer(data, dtype=np.uint8)
    bounds = np.array(spans, dtype=np.int64).reshape(-1, 2)
    starts, ends = bounds[:, 0].copy(), bounds[:, 1].copy()
    limits = np.minimum(np.maximum(_RATIO * (ends - starts), _FLOOR), MAX_BLOCK_BYTES)
    out_ends = np.zeros(len(spans), dtype=np.int64)
    stream = np.zeros(compiled.STREAM_SIZE, dtype=np.uint8)
    out = np.empty(
        min(budget + 1, max(_FLOOR, _GROWTH_GUESS * int((ends - starts).sum()))), np.uint8
    )
    block = pos = 0
    while True:
        status, block = compiled.inflate_blocks(
            *functions, src, starts, ends, limits, budget, block, pos, out, out_ends, stream
        )
        if status != compiled.FULL:
            break
        pos = int(out_ends[block - 1]) if block else 0
        grown = np.empty(min(budget + 1, 2 * len(out)), dtype=np.uint8)
        grown[:pos] = out[:pos]
        out = grown
    if status == compiled.TOO_BIG:
        taken = int(out_ends[block - 1]) if block else 0
        _check_size(budget + 1, min(int(limits[block]), budget - taken), "deflate")
    if status == compiled.SETUP:  # zlib-ng could not allocate its state
        raise MemoryError("zlib-ng could not start an inflate stream")
    if status != compiled.OK:
        raise ValueError("corrupt deflate block (incomplete or truncated stream)")
    total = int(out_ends[-1]) if len(spans) else 0
    return out[:total].tobytes(), out_ends.tolist()


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
