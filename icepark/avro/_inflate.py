"""The compiled loop behind :func:`icepark.avro.codecs.decompress_parts` (imports numba:
import this module only through :func:`icepark.avro.codecs.inflater`).

:func:`inflate_blocks` inflates every raw-deflate block of an Avro file, one after another
into one output buffer, in a single call that holds no GIL. It calls zlib-ng's own inflate
(``zng_inflateInit2``, ``zng_inflate``, ``zng_inflateReset``, ``zng_inflateEnd``, exported
by the ``zlib_ng`` package's extension, which icepark already decompresses with), given as
addresses and called through the intrinsics of :func:`_c_call`.

Why: decompressing a manifest's blocks one Python call at a time released the GIL and took
it back once per block (48 times for a manifest of 10,000 entries). Beside a thread running
Python, each retake waits out the interpreter's switch interval, so a planner's decoding
thread crawled while its main thread built tasks: a manifest's blocks took 5.6 ms alone and
644 ms beside a thread spinning in Python; in one call, 2.2 and 8.2 ms.

The stream is a zeroed byte array laid out as zlib-ng's ``zng_stream``: ``next_in`` at byte
0, ``avail_in`` at 8, ``next_out`` at 24, ``avail_out`` at 32 (the allocator fields stay null:
zlib-ng's own allocator).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["CORRUPT", "FULL", "OK", "SETUP", "STREAM_SIZE", "TOO_BIG", "inflate_blocks"]

OK = 0
"""Every block inflated."""
FULL = 1
"""The output ran out of room before a block's limit: grow it and go on from that block."""
TOO_BIG = 2
"""A block inflates to more than its limit."""
CORRUPT = 3
"""A block is not a complete raw-deflate stream."""
SETUP = 4
"""The inflater would not start (out of memory)."""

STREAM_SIZE = 256
"""Bytes given to the stream (zlib-ng's ``zng_stream`` is 104 on 64-bit platforms)."""

_Z_FINISH = 4
_Z_STREAM_END = 1


def _c_call(with_int: bool) -> Any:
    """An intrinsic calling the C function at an integer address with a pointer (and, with
    ``with_int``, an int) and returning its int. Addresses as plain integers keep numba from
    typing four ctypes objects on every call (a third of a millisecond each time)."""

    def call(typingctx: Any, function: Any, *args: Any) -> Any:
        signature = types.int32(types.int64, *[types.int64] * len(args))

        def codegen(context: Any, builder: Any, sig: Any, values: Any) -> Any:
            pointer = ir.IntType(8).as_pointer()
            params = [pointer, ir.IntType(32)] if with_int else [pointer]
            kind = ir.FunctionType(ir.IntType(32), params)
            callee = builder.inttoptr(values[0], kind.as_pointer())
            given = [builder.inttoptr(values[1], pointer)]
            if with_int:
                given.append(builder.trunc(values[2], ir.IntType(32)))
            return builder.call(callee, given)

        return signature, codegen

    # numba reads an intrinsic's parameters from its signature: one function for each arity
    if with_int:

        def call_with_int(typingctx: Any, function: Any, stream: Any, value: Any) -> Any:
            return call(typingctx, function, stream, value)

        return intrinsic(call_with_int)

    def call_stream(typingctx: Any, function: Any, stream: Any) -> Any:
        return call(typingctx, function, stream)

    return intrinsic(call_stream)


_call = _c_call(True)  # int f(zng_stream *, int): init, inflate
_call_stream = _c_call(False)  # int f(zng_stream *): reset, end


@njit(cache=True, nogil=True)
def inflate_blocks(
    init: int,
    inflate: int,
    reset: int,
    end: int,
    src: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    limits: np.ndarray,
    budget: int,
    first: int,
    pos: int,
    out: np.ndarray,
    out_ends: np.ndarray,
    stream: np.ndarray,
) -> tuple[int, int]:  # pragma: no cover - compiled; the caller's tests check its results
    """Inflate blocks ``first``, ``first + 1``, ... (block ``i`` is ``src[starts[i]:ends[i]]``)
    into ``out`` from ``pos`` on, each to at most ``limits[i]`` bytes and all of them together
    to at most ``budget``; the end of each block's bytes in ``out`` goes to ``out_ends[i]``.
    Returns ``(status, block)``: :data:`OK` and the block count, or the status of ``block``
    (:data:`FULL`: call again from it with a bigger ``out``)."""
    words = stream.view(np.uint64)
    halves = stream.view(np.uint32)
    address = stream.ctypes.data
    if _call(init, address, -15) != 0:
        return SETUP, first
    for i in range(first, len(starts)):
        if i > first:
            _call_stream(reset, address)
        limit = min(limits[i], budget - pos)
        room = len(out) - pos
        avail = min(limit + 1, room)  # a byte over the limit tells a bomb from a block that fits
        words[0] = src.ctypes.data + starts[i]  # next_in
        halves[2] = ends[i] - starts[i]  # avail_in
        words[3] = out.ctypes.data + pos  # next_out
        halves[8] = avail  # avail_out
        status = _call(inflate, address, _Z_FINISH)
        produced = avail - halves[8]
        if status == _Z_STREAM_END and produced <= limit:
            pos += produced
            out_ends[i] = pos
            continue
        _call_stream(end, address)
        if produced == room and room <= limit:
            return FULL, i
        if produced > limit:
            return TOO_BIG, i
        return CORRUPT, i
    _call_stream(end, address)
    return OK, len(starts)
