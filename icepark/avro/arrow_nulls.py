"""All-null Arrow arrays that cost no memory of their own.

``pyarrow.nulls(n, t)`` allocates and zeroes a buffer of ``n`` values for each array. A
manifest's columns have many such arrays (fields an older format version lacks: a v2 table
has no ``first_row_id``, ``referenced_data_file``, ``content_offset``...; metrics a column
never has: a long column's NaN count), and the files table of a million files kept about
40 MB of zeroes that way. :func:`null_array` builds the same arrays over one shared,
read-only buffer of zeroes: a validity bitmap of zeroes says every value is null, and zero
offsets make every string, binary and list empty.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

__all__ = ["null_array"]

_SHARED_MAX = 16 * 1024 * 1024
"""The largest shared buffer kept; larger requests get a buffer of their own."""

_lock = threading.Lock()
_shared: pa.Buffer | None = None


def _zeros(size: int) -> pa.Buffer:
    """A read-only buffer of at least ``size`` zero bytes."""
    global _shared
    if size > _SHARED_MAX:
        return _read_only_zeros(size)
    with _lock:
        if _shared is None or _shared.size < size:
            _shared = _read_only_zeros(max(size, 64 * 1024))
        return _shared


def _read_only_zeros(size: int) -> pa.Buffer:
    zeros = np.zeros(size, dtype=np.uint8)
    zeros.flags.writeable = False
    return pa.py_buffer(zeros)


def null_array(n: int, arrow_type: pa.DataType) -> pa.Array:
    """An array of ``n`` nulls of ``arrow_type``, equal to ``pyarrow.nulls(n, arrow_type)``,
    its buffers slices of one shared buffer of zeroes where the type allows (fixed-width
    values, strings and binaries, lists and maps, structs of those); other types get
    ``pyarrow.nulls``."""
    if n == 0 or not _shareable(arrow_type):
        return pa.nulls(n, arrow_type)
    return _build(n, arrow_type)


def _shareable(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return all(_shareable(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_map(t):
        return True
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return True
    if pa.types.is_boolean(t) or pa.types.is_dictionary(t):
        return False
    if isinstance(t, pa.ExtensionType):
        return False
    try:
        return t.bit_width % 8 == 0
    except ValueError:
        return False


def _build(n: int, t: pa.DataType) -> pa.Array:
    validity = _zeros((n + 7) // 8)
    if pa.types.is_struct(t):
        children = [_build(n, t.field(i).type) for i in range(t.num_fields)]
        return pa.Array.from_buffers(t, n, [validity], null_count=n, children=children)
    if pa.types.is_map(t):
        entries = pa.nulls(0, pa.struct([t.key_field, t.item_field]))
        offsets = _zeros(4 * (n + 1))
        return pa.Array.from_buffers(t, n, [validity, offsets], null_count=n, children=[entries])
    if pa.types.is_list(t):
        child = pa.nulls(0, t.value_type)
        offsets = _zeros(4 * (n + 1))
        return pa.Array.from_buffers(t, n, [validity, offsets], null_count=n, children=[child])
    if pa.types.is_string(t) or pa.types.is_binary(t):
        offsets = _zeros(4 * (n + 1))
        return pa.Array.from_buffers(t, n, [validity, offsets, validity], null_count=n)
    values = _zeros(n * t.bit_width // 8)
    return pa.Array.from_buffers(t, n, [validity, values], null_count=n)
