"""Avro records decoded by compiled code, into slot arrays instead of Python objects.

A manifest of 10,000 entries holds some 600,000 values (each file's path, partition and six
metric maps); decoding them one by one in Python costs several microseconds an entry, which
is seconds for a table of a million files. Here a writer schema becomes a small program
(:func:`compile_program`: one opcode per value, in encoding order) that one interpreter,
compiled by numba once per machine (:mod:`icepark.avro._kernel`, cached on disk), runs over
decompressed blocks (:func:`decode_records`), at well under a microsecond an entry and
without holding the GIL, so that several manifests decode at once on a pool's threads.

What comes out (:class:`Slots`) is positions, not values: for each record and each value of
the record, an integer or the place of the value's bytes in the buffer; the values inside
arrays (an Iceberg map is an array of key/value records) go to one item table. The caller
turns the slots it needs into typed columns (:mod:`icepark.manifest.entry_columns`).

Schemas of the shape Iceberg's metadata files have are handled: records, primitives,
``["null", t]`` unions, fixed, enums, and arrays and maps that are not nested in another
array; anything else raises :class:`~icepark.avro.blocks.UnsupportedAvroError` and the
caller reads the file another way. numba is imported only when this path is first taken
(:func:`kernel`: about half a second, and a compile of a few seconds the first time on a
machine): small files are read by the other readers. ``ICEPARK_COMPILED_AVRO=0`` turns the
path off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from icepark.avro.blocks import UnsupportedAvroError, resolve_named
from icepark.errors import InvalidAvroFileError

__all__ = [
    "COMPILED_MIN_RECORDS",
    "MARK",
    "Program",
    "Slots",
    "compile_program",
    "decode_records",
    "kernel",
    "kernel_available",
]

# opcodes (kept in step with icepark.avro._kernel)
_LONG, _FLOAT, _DOUBLE, _BOOLEAN, _BYTES, _FIXED, _NULLABLE, _ARRAY, _END, _MARK, _SKIP = range(
    1, 12
)
_FULL, _CORRUPT = 1, 2

_PRIMITIVE_OPS = {
    "int": _LONG,
    "long": _LONG,
    "enum": _LONG,
    "float": _FLOAT,
    "double": _DOUBLE,
    "boolean": _BOOLEAN,
    "bytes": _BYTES,
    "string": _BYTES,
}

Path = tuple[str, ...]
"""A value's place in the schema: the field names from the top record; ``"[]"`` for an
array's items and ``"{}"``/``"{key}"`` for a map's values and keys."""

MARK = "@"
"""The last name of the path under which :attr:`Program.slots` holds where a marked value
starts (``(*path, MARK)``; see :func:`compile_program`)."""

COMPILED_MIN_RECORDS = 100_000
"""Reads of at least this many records take the compiled path; smaller ones the
Python decoders, which start faster (numba's first use in a process costs about half a
second, its memory some 90 MB)."""

ABSENT, NULL = -3, -2
"""Lengths in :attr:`Slots.lens`: the value is not in the record (not written), or null."""


@dataclass(frozen=True)
class Program:
    """A writer schema compiled for :func:`decode_records`.

    ``slots`` maps the path of each value stored per record to its column in
    :attr:`Slots.vals`, ``item_slots`` the path of each value stored in the item table to
    its number there, ``kinds`` every stored path to its Avro primitive type (``"position"``
    for the marks, ``(*path, MARK)``: where each record's value at ``path`` starts in the
    buffer).
    """

    ops: np.ndarray
    slots: Mapping[Path, int]
    item_slots: Mapping[Path, int]
    kinds: Mapping[Path, str]


class _Compiler:
    def __init__(
        self,
        named: Mapping[str, Any],
        keep: Callable[[Path], bool],
        keyed: Callable[[Path], bool],
        marked: Callable[[Path], bool],
    ) -> None:
        self.named = named
        self.keep = keep
        self.keyed = keyed
        self.marked = marked
        self.ops: list[list[int]] = []
        self.slots: dict[Path, int] = {}
        self.item_slots: dict[Path, int] = {}
        self.kinds: dict[Path, str] = {}

    def slot(self, path: Path, in_item: int, kind: str) -> int:
        if not self.keep(path):
            return -1
        table = self.item_slots if in_item else self.slots
        self.kinds[path] = kind
        return table.setdefault(path, len(table))

    def emit(self, avro: Any, path: Path, in_item: int) -> None:
        if not in_item and path and self.marked(path):
            mark = (*path, MARK)
            self.kinds[mark] = "position"
            self.ops.append([_MARK, self.slots.setdefault(mark, len(self.slots)), 0, 0])
        self._value(avro, path, in_item)

    def _value(self, avro: Any, path: Path, in_item: int) -> None:
        avro = resolve_named(avro, self.named)
        if isinstance(avro, list):
            self._union(avro, path, in_item)
            return
        kind = avro.get("type") if isinstance(avro, dict) else avro
        if kind in _PRIMITIVE_OPS:
            code = _PRIMITIVE_OPS[kind]
            mark = in_item
            if in_item and code == _LONG and self.keyed(path):
                mark = 2  # a key the kernel looks up in the wanted keys
            self.ops.append([code, self.slot(path, in_item, kind), 0, mark])
        elif kind == "fixed":
            size = int(avro["size"])
            self.ops.append([_FIXED, self.slot(path, in_item, "fixed"), size, in_item])
        elif kind == "record":
            for f in avro.get("fields", []):
                self.emit(f["type"], (*path, f["name"]), in_item)
        elif kind in ("array", "map"):
            if in_item:
                raise UnsupportedAvroError(f"nested arrays at {'.'.join(path)}")
            at = len(self.ops)
            count = self.slot(path, 0, "count")
            self.ops.append([_ARRAY, count, 0, 0])
            if kind == "map":
                self.emit("string", (*path, "{key}"), 1)
                self.emit(avro["values"], (*path, "{}"), 1)
            else:
                self.emit(avro["items"], (*path, "[]"), 1)
            body = len(self.ops) - at
            self.ops.append([_END, -1, body, 0])
            self.ops[at][2] = body
            if count < 0 and all(op[0] == _NULLABLE or op[1] < 0 for op in self.ops[at + 1 :]):
                self.ops[at][0] = _SKIP  # nothing of it is stored: a tight loop steps over it
        elif kind == "null":
            pass  # nothing is encoded
        else:
            raise UnsupportedAvroError(f"Avro type {kind!r} at {'.'.join(path)}")

    def _union(self, branches: list[Any], path: Path, in_item: int) -> None:
        nulls = [i for i, b in enumerate(branches) if b == "null"]
        if len(branches) != 2 or len(nulls) != 1:
            raise UnsupportedAvroError(f"union {branches!r} at {'.'.join(path)}")
        at = len(self.ops)
        self.ops.append([_NULLABLE, 0, nulls[0], in_item])
        before = len(self.ops)
        self._value(branches[1 - nulls[0]], path, in_item)
        if len(self.ops) == before:
            raise UnsupportedAvroError(f"union of null and nothing at {'.'.join(path)}")
        self.ops[at][1] = len(self.ops) - before  # how many ops the null branch skips


def compile_program(
    writer_schema: Any,
    named: Mapping[str, Any],
    keep: Callable[[Path], bool] = lambda p: True,
    keyed: Callable[[Path], bool] = lambda p: False,
    marked: Callable[[Path], bool] = lambda p: False,
) -> Program:
    """The program decoding records of ``writer_schema``, storing the values whose path
    ``keep`` accepts (every value by default; the others are stepped over). An int at a path
    ``keyed`` accepts, the first value of an array item, is a key: an item whose key is not
    among the wanted keys given to :func:`decode_records` is not stored. For each value
    outside arrays at a path ``marked`` accepts, where it starts in the buffer is stored too
    (under ``(*path, MARK)``), whether the value itself is kept or not."""
    compiler = _Compiler(named, keep, keyed, marked)
    try:
        compiler.emit(writer_schema, (), 0)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # a schema no Avro writer writes (a field without a name, a size that is not a
        # number): the caller reads the file another way, which names what is wrong
        raise UnsupportedAvroError(f"malformed writer schema: {exc!r}") from exc
    if not compiler.ops:
        raise UnsupportedAvroError("empty record")
    ops = np.array(compiler.ops, dtype=np.int64)
    return Program(ops, compiler.slots, compiler.item_slots, compiler.kinds)


@dataclass(frozen=True)
class Slots:
    """What :func:`decode_records` found in ``count`` records of ``buf``.

    ``vals[row, slot]`` and ``lens[row, slot]`` per record (see :mod:`icepark.avro._kernel`);
    each item slot's values as columns, in record order (:meth:`items`); ``starts[row]`` is
    where record ``row`` starts in ``buf`` (and ``starts[count]`` where the last one ends).
    """

    buf: np.ndarray
    count: int
    starts: np.ndarray
    vals: np.ndarray
    lens: np.ndarray
    item_vals: np.ndarray
    item_lens: np.ndarray
    item_rows: np.ndarray
    item_counts: np.ndarray

    def items(self, slot: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Item slot ``slot``'s (values or positions, lengths, records), in order."""
        n = int(self.item_counts[slot])
        return self.item_vals[slot, :n], self.item_lens[slot, :n], self.item_rows[slot, :n]


def kernel_available() -> bool:
    """Can the compiled path run here (numba importable, not turned off)?"""
    if os.environ.get("ICEPARK_COMPILED_AVRO", "1") == "0":
        return False
    try:
        kernel()
    except ImportError:
        return False
    return True


@cache
def kernel() -> Callable[..., tuple[int, int, int]]:
    """The compiled interpreter (imports numba on first call; raises ImportError without
    it)."""
    from icepark.avro._kernel import run

    return run


_NO_KEYS = np.zeros(0, dtype=np.int64)


def decode_records(
    location: str,
    program: Program,
    buf: np.ndarray,
    count: int,
    wanted: np.ndarray = _NO_KEYS,
) -> Slots:
    """Run ``program`` over the ``count`` records encoded in ``buf`` (uint8), storing only
    the array items whose key (where the program has keys) is in ``wanted``. Raises
    :class:`~icepark.errors.InvalidAvroFileError` naming ``location`` when the records do
    not decode or do not fill ``buf`` exactly."""
    run = kernel()
    starts = np.empty(count + 1, dtype=np.int64)
    n_slots = max(len(program.slots), 1)
    vals = np.zeros((count, n_slots), dtype=np.int64)
    lens = np.full((count, n_slots), ABSENT, dtype=np.int32)
    n_items = len(program.item_slots)
    # a first guess at the items of each item slot: a value takes at least a byte
    capacity = max(64, len(buf) // (4 * max(n_items, 1))) if n_items else 0
    columns = _item_columns(n_items, capacity)
    counts = np.zeros(n_items, dtype=np.int64)
    pos, row = 0, 0
    while True:
        row, pos, error = run(
            buf,
            pos,
            len(buf),
            count,
            program.ops,
            vals,
            lens,
            *columns,
            counts,
            row,
            starts,
            wanted,
        )
        if error != _FULL:
            break
        capacity *= 2
        columns = _grown(columns, counts, capacity)
    if error == _CORRUPT or row != count or pos != len(buf):
        raise InvalidAvroFileError(
            f"Cannot read Avro file {location}: record {row} of {count} does not decode"
            if error or row != count
            else f"Cannot read Avro file {location}: {len(buf) - pos} bytes after the records"
        )
    starts[count] = pos
    used = int(counts.max()) if n_items else 0
    if used < capacity // 2:  # give back what the first guess took too much
        columns = _grown(columns, counts, used)
    return Slots(buf, count, starts, vals, lens, *columns, counts)


_Columns = tuple[np.ndarray, np.ndarray, np.ndarray]


def _item_columns(n_items: int, capacity: int) -> _Columns:
    return (
        np.empty((n_items, capacity), dtype=np.int64),
        np.empty((n_items, capacity), dtype=np.int32),
        np.empty((n_items, capacity), dtype=np.int32),
    )


def _grown(columns: _Columns, counts: np.ndarray, capacity: int) -> _Columns:
    """The item columns copied into columns of ``capacity`` values a slot."""
    grown = _item_columns(columns[0].shape[0], capacity)
    for old, new in zip(columns, grown, strict=True):
        for slot, n in enumerate(counts.tolist()):
            new[slot, :n] = old[slot, :n]
    return grown
