"""Z-order values: the bits of several columns interleaved, so that sorting by the result
clusters rows by all of them at once (Java's ``ZOrderByteUtils`` and ``SparkZOrderUDF``).

Each column becomes a fixed number of bytes whose unsigned lexicographic order is the
column's order (Java's "ordered bytes"), then the bits of the columns are interleaved, the
first bit of each column, then the second of each, and so on:

* whole numbers (and dates, timestamps: their internal integer values): 8 bytes, big-endian,
  sign bit flipped;
* floating point: 8 bytes of the double's bits, all bits flipped for negative values, the
  sign bit for others (the IEEE 754 order trick Java applies; Java's shift leaves the lower
  31 bits of negative values unflipped, which this corrects);
* booleans: 8 bytes, the first 0x81 for true;
* strings: the first ``var_length`` bytes of the UTF-8 encoding, zero-padded; binary likewise;
* nulls: all zero bytes.

A column with fewer bytes than another stops contributing bits once its bytes are used
(Java's interleaving); the output is at most ``max_output`` bytes. Sorting the binary results
unsigned-lexicographically (as Spark sorts binary) gives the Z-order curve.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from icepark.errors import ValidationError

__all__ = ["PRIMITIVE_BUFFER_SIZE", "ordered_bytes", "interleave_bits", "zorder_values"]

PRIMITIVE_BUFFER_SIZE = 8
_SIGN = np.uint64(1 << 63)


def _to_big_endian(values: np.ndarray) -> np.ndarray:
    return values.astype(">u8").view(np.uint8).reshape(len(values), 8)


def _nulls(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=bool)
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def ordered_bytes(arr: pa.Array, var_length: int = PRIMITIVE_BUFFER_SIZE) -> np.ndarray:
    """``arr`` as an ``(n, width)`` uint8 matrix of order-preserving bytes (see the module
    docstring); ``width`` is 8, or ``var_length`` for strings and binary."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    n = len(arr)
    nulls = _nulls(arr)
    if pa.types.is_dictionary(t):
        return ordered_bytes(arr.dictionary_decode(), var_length)
    if pa.types.is_boolean(t):
        out = np.zeros((n, PRIMITIVE_BUFFER_SIZE), dtype=np.uint8)
        truth = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
        out[truth, 0] = 0x81
        return out
    if pa.types.is_integer(t) or pa.types.is_temporal(t):
        if pa.types.is_temporal(t):
            arr = arr.cast(pa.int64() if t.bit_width == 64 else pa.int32())
        ints = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False)).astype(np.int64)
        out = _to_big_endian(ints.view(np.uint64) ^ _SIGN)
    elif pa.types.is_floating(t):
        floats = np.asarray(
            arr.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False),
            dtype=np.float64,
        )
        bits = floats.view(np.uint64)
        negative = (bits & _SIGN) != 0
        out = _to_big_endian(np.where(negative, ~bits, bits | _SIGN))
    elif (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or (pa.types.is_large_binary(t))
    ):
        return _prefix_bytes(arr, var_length)
    else:
        raise ValidationError(f"Cannot use a column of type {t} in Z-ordering")
    if nulls.any():
        out = out.copy()
        out[nulls] = 0
    return out


def _prefix_bytes(arr: pa.Array, length: int) -> np.ndarray:
    """The first ``length`` bytes of each string or binary value, zero-padded (nulls: zeros)."""
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    arr = arr.cast(pa.large_binary() if large else pa.binary()).fill_null(b"")
    arr = pa.concat_arrays([arr])  # offset 0, so the buffers line up with the rows
    n = len(arr)
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64 if large else np.int32, count=n + 1)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else None
    out = np.zeros((n, length), dtype=np.uint8)
    if data is None or not len(data) or not n:
        return out
    starts = offsets[:-1].astype(np.int64)
    lengths = offsets[1:].astype(np.int64) - starts
    columns = np.arange(length, dtype=np.int64)
    index = np.minimum(starts[:, None] + columns, len(data) - 1)
    taken = data[index]
    mask = columns[None, :] < lengths[:, None]
    out[mask] = taken[mask]
    return out


def interleave_bits(columns: Sequence[np.ndarray], max_output: int = 2**31 - 1) -> np.ndarray:
    """Interleave the bits of ``(n, width_i)`` byte matrices as Java does; ``(n, m)`` uint8
    with ``m = min(sum(width_i), max_output)``."""
    if not columns:
        raise ValidationError("Cannot Z-order without columns")
    widths = [c.shape[1] for c in columns]
    out_bytes = min(sum(widths), max_output)
    offsets = np.cumsum([0, *widths[:-1]]) * 8
    order: list[int] = []
    for byte in range(max(widths)):
        for bit in range(8):
            for c, width in enumerate(widths):
                if byte < width:
                    order.append(int(offsets[c]) + byte * 8 + bit)
    index = np.asarray(order[: out_bytes * 8], dtype=np.int64)
    bits = np.unpackbits(np.concatenate(columns, axis=1), axis=1)
    return np.packbits(bits[:, index], axis=1)


def zorder_values(
    arrays: Sequence[pa.Array],
    var_length: int = PRIMITIVE_BUFFER_SIZE,
    max_output: int = 2**31 - 1,
) -> pa.Array:
    """The Z-order value of each row of ``arrays`` (one per column), as Arrow binary."""
    n = len(arrays[0]) if arrays else 0
    matrix = interleave_bits([ordered_bytes(a, var_length) for a in arrays], max_output)
    width = matrix.shape[1]
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.BinaryArray.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(matrix.tobytes())]
    )
