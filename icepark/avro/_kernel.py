"""The compiled interpreter behind :mod:`icepark.avro.compiled` (imports numba: import this
module only through :func:`icepark.avro.compiled.kernel`).

:func:`run` walks the records of decompressed Avro blocks following a program of opcodes
(one row of ``ops`` per value: ``[code, slot, arg, in_item]``, in the order the values are
encoded) and writes what it finds into slot arrays:

* a value of the record itself (``in_item == 0``) goes to ``vals[row, slot]`` and
  ``lens[row, slot]``: an int or long as its value with length -1, bytes, a string, a fixed,
  a float, a double or a boolean as its position in ``buf`` with its length; a null (the null
  branch of a ``["null", t]`` union) as length -2 on the first slot of ``t``; an array's slot
  holds its item count;
* a value inside an array item (``in_item == 1``) is appended to its item slot's column:
  ``item_vals[slot, k]``, ``item_lens[slot, k]`` and the record it belongs to in
  ``item_rows[slot, k]``, where ``k = item_counts[slot]`` counts up (each item slot's values
  in encoding order, ready to use as a column).

A :data:`MARK` op stores no value: it puts the position the next value starts at into
``vals[row, slot]`` (length -1), so that a caller can find a value's encoded bytes (a
manifest rewrite copies each entry's ``data_file`` record as it is stored).

A :data:`SKIP` op is an array (``[SKIP, -1, body, 0]``, its items' ops after it, then its
``END``) of which nothing is stored: its items are stepped over by a tight loop that reads
only what it must to find where each value ends (the metric maps of a plan that reads no
metrics are most of a manifest entry's bytes).

A slot of -1 is stepped over without being stored. An int key of an array item with
``in_item == 2`` is looked up in ``wanted``: when it is not there, nothing more of that item is
stored, and the rest of it is stepped over as a :data:`SKIP` array's items are (a planner
keeps the metrics of the columns its filter reads, not of every column).
``starts[row]`` is where each record starts. Every read is checked against ``end``: a
truncated or corrupt block stops the run with an error code, never reads past the buffer.
Returns ``(rows, pos, error)``; ``error`` is 0, :data:`FULL` when an item column is full
(``item_counts`` are back as they were at the start of record ``rows``: the caller grows the
columns and runs again from that record) or :data:`CORRUPT`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

__all__ = ["run"]

# opcodes (kept in step with icepark.avro.compiled)
LONG, FLOAT, DOUBLE, BOOLEAN, BYTES, FIXED, NULLABLE, ARRAY, END, MARK, SKIP = range(1, 12)
FULL, CORRUPT = 1, 2


@njit(cache=True, nogil=True, inline="always")
def _varint(buf: np.ndarray, pos: int, end: int) -> tuple[Any, int, bool]:
    """The zigzag varint at ``pos``: (value, position after it, ok). Unsigned arithmetic
    throughout: the zigzag shift must not carry the sign of a 64-bit value."""
    n = np.uint64(0)
    shift = np.uint64(0)
    while pos < end and shift < np.uint64(64):
        b = np.uint64(buf[pos])
        pos += 1
        n |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            decoded = (n >> np.uint64(1)) ^ (np.uint64(0) - (n & np.uint64(1)))
            return np.int64(decoded), pos, True
        shift += np.uint64(7)
    return np.int64(0), pos, False


@njit(cache=True, nogil=True, inline="always")
def _put(
    item_vals: np.ndarray,
    item_lens: np.ndarray,
    item_rows: np.ndarray,
    item_counts: np.ndarray,
    slot: int,
    row: int,
    value: int,
    length: int,
) -> bool:
    """Append one value to item slot ``slot``'s column; False when the column is full."""
    k = item_counts[slot]
    if k >= item_vals.shape[1]:
        return False
    item_vals[slot, k] = value
    item_lens[slot, k] = length
    item_rows[slot, k] = row
    item_counts[slot] = k + 1
    return True


@njit(cache=True, nogil=True, inline="always")
def _sized(buf: np.ndarray, pos: int, end: int, code: int, arg: int) -> tuple[Any, int, bool]:
    """The length of the value of op ``code`` (not a long) at ``pos``: read before a bytes
    value, ``arg`` for a fixed, the width of a float, double or boolean; (length, position of
    the value, ok). Not ok for another op, or a value that would run past ``end``."""
    length = 0
    if code == BYTES:
        length, pos, ok = _varint(buf, pos, end)
        if not ok or length < 0:
            return length, pos, False
    elif code == FIXED:
        length = arg
    elif code == FLOAT:
        length = 4
    elif code == DOUBLE:
        length = 8
    elif code == BOOLEAN:
        length = 1
    else:
        return length, pos, False
    return length, pos, length <= end - pos


@njit(cache=True, nogil=True, inline="always")
def _block_count(buf: np.ndarray, pos: int, end: int) -> tuple[Any, int, bool]:
    """The item count of the array block at ``pos`` (its byte size, when written, read and
    not used): (count, position after it, ok). Not ok when the count cannot be right:
    every item takes at least a byte."""
    n, pos, ok = _varint(buf, pos, end)
    if not ok:
        return n, pos, False
    if n < 0:  # a block with its size in bytes
        n = -n
        size, pos, ok = _varint(buf, pos, end)
        if not ok or size < 0:
            return n, pos, False
    return n, pos, n <= end - pos


@njit(cache=True, nogil=True, inline="always")
def _skip_items(
    buf: np.ndarray, pos: int, end: int, ops: np.ndarray, first: int, last: int, n: int
) -> tuple[int, bool]:
    """Step over ``n`` array items whose values are the ops ``first`` to ``last - 1``
    (primitives and null unions), storing nothing; every read checked against ``end``.
    Returns (position after them, ok)."""
    for _ in range(n):
        q = first
        while q < last:
            code = ops[q, 0]
            if code == LONG:  # a varint: up to the first byte without the high bit
                stop = min(end, pos + 10)
                while pos < stop and buf[pos] >= 0x80:
                    pos += 1
                if pos >= stop:
                    return pos, False
                pos += 1
            elif code == NULLABLE:
                branch, pos, ok = _varint(buf, pos, end)
                if not ok or branch < 0 or branch > 1:
                    return pos, False
                if branch == ops[q, 2]:
                    q += 1 + ops[q, 1]
                    continue
            else:
                length, pos, ok = _sized(buf, pos, end, code, ops[q, 2])
                if not ok:
                    return pos, False
                pos += length
            q += 1
    return pos, True


@njit(cache=True, nogil=True)
def run(
    buf: np.ndarray,
    pos: int,
    end: int,
    rows_max: int,
    ops: np.ndarray,
    vals: np.ndarray,
    lens: np.ndarray,
    item_vals: np.ndarray,
    item_lens: np.ndarray,
    item_rows: np.ndarray,
    item_counts: np.ndarray,
    row: int,
    starts: np.ndarray,
    wanted: np.ndarray,
) -> tuple[int, int, int]:
    nops = ops.shape[0]
    n_wanted = wanted.shape[0]
    n_item_slots = item_counts.shape[0]
    saved = np.empty(n_item_slots, dtype=np.int64)
    while row < rows_max:
        for k in range(n_item_slots):
            saved[k] = item_counts[k]
        row_pos = pos
        starts[row] = pos
        skipping = False  # the current array item's key is not wanted
        pc = 0
        left = 0  # items left in the current block of the current array
        count_slot = -1
        array_end = 0  # the END op of the current array
        error = 0
        while pc < nops:
            code = ops[pc, 0]
            slot = ops[pc, 1]
            arg = ops[pc, 2]
            in_item = ops[pc, 3]
            if code == MARK:  # where the next value starts
                vals[row, slot] = pos
                lens[row, slot] = -1
                pc += 1
                continue
            if code == NULLABLE:
                branch, pos, ok = _varint(buf, pos, end)
                if not ok or branch < 0 or branch > 1:
                    error = CORRUPT
                    break
                if branch == arg:  # the null branch: mark the value's first slot, skip it
                    sub = ops[pc + 1, 1]
                    if sub >= 0 and not (skipping and ops[pc + 1, 3] >= 1):
                        if ops[pc + 1, 3] >= 1:
                            if not _put(
                                item_vals, item_lens, item_rows, item_counts, sub, row, 0, -2
                            ):
                                error = FULL
                                break
                        else:
                            lens[row, sub] = -2
                    pc += 1 + slot
                else:
                    pc += 1
                continue
            if code == SKIP:  # an array of which nothing is stored: its blocks, then its END
                while True:
                    n, pos, ok = _block_count(buf, pos, end)
                    if not ok or n == 0:
                        break
                    pos, ok = _skip_items(buf, pos, end, ops, pc + 1, pc + arg, n)
                    if not ok:
                        break
                if not ok:
                    error = CORRUPT
                    break
                pc += arg + 1
                continue
            if code == ARRAY or code == END:
                if code == END:
                    left -= 1
                    if left > 0:
                        pc = pc - arg + 1
                        continue
                n, pos, ok = _block_count(buf, pos, end)
                if not ok:
                    error = CORRUPT
                    break
                if code == ARRAY:
                    count_slot = slot
                    array_end = pc + arg
                    skipping = False
                    if slot >= 0:
                        vals[row, slot] = n
                        lens[row, slot] = -1
                    if n == 0:
                        pc += 1 + arg
                    else:
                        left = n
                        pc += 1
                else:
                    if n == 0:
                        pc += 1
                    else:
                        left = n
                        if count_slot >= 0:
                            vals[row, count_slot] += n
                        pc = pc - arg + 1
                continue
            # a value
            if code == LONG:
                value, pos, ok = _varint(buf, pos, end)
                if not ok:
                    error = CORRUPT
                    break
                length = -1
            else:
                length, pos, ok = _sized(buf, pos, end, code, arg)
                if not ok:
                    error = CORRUPT
                    break
                value = pos
                pos += length
            if in_item == 2:  # an item's key: is it wanted?
                skipping = True
                for k in range(n_wanted):
                    if wanted[k] == value:
                        skipping = False
                        break
                if skipping:  # the rest of the item is stepped over, to the array's END
                    pos, ok = _skip_items(buf, pos, end, ops, pc + 1, array_end, 1)
                    if not ok:
                        error = CORRUPT
                        break
                    pc = array_end
                    continue
            if slot >= 0 and not (skipping and in_item >= 1):
                if in_item >= 1:
                    if not _put(
                        item_vals, item_lens, item_rows, item_counts, slot, row, value, length
                    ):
                        error = FULL
                        break
                else:
                    vals[row, slot] = value
                    lens[row, slot] = length
            pc += 1
        if error != 0:
            for k in range(n_item_slots):
                item_counts[k] = saved[k]
            return row, row_pos, error
        row += 1
    return row, pos, 0
