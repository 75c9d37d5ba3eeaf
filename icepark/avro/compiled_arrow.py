"""Records decoded by the compiled path (:mod:`icepark.avro.compiled`) as Arrow arrays.

:func:`slots_to_arrow` turns the slots of a whole decode (a program that stores every value)
into one :class:`pyarrow.StructArray` of the writer schema, of exactly the type
:func:`~icepark.avro.columnar.avro_arrow_type` gives (so either decoder feeds the same
readers): records as structs, ``["null", t]`` unions as nulls of ``t``, arrays as lists, maps
as maps of strings, bytes and strings gathered from the decoded buffer in one numpy operation
per column, numbers read from their positions as whole columns. Enums, and nullable records
(whose null the slots do not keep for every field), raise
:class:`~icepark.avro.blocks.UnsupportedAvroError`: the caller decodes those another way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from icepark.avro.blocks import UnsupportedAvroError, resolve_named
from icepark.avro.compiled import NULL, Path, Program, Slots

__all__ = ["slots_to_arrow"]


def slots_to_arrow(
    writer_schema: Any, named: Mapping[str, Any], program: Program, slots: Slots
) -> pa.StructArray:
    """The records of ``slots`` (decoded by ``program``, which must store every value) as
    Arrow."""
    built = _Builder(named, program, slots).value(writer_schema, (), False)
    if not isinstance(built, pa.StructArray):
        raise UnsupportedAvroError("the top level is not a record")
    return built


class _Builder:
    def __init__(self, named: Mapping[str, Any], program: Program, slots: Slots) -> None:
        self.named = named
        self.program = program
        self.slots = slots
        self.raw = slots.buf

    def value(self, avro: Any, path: Path, items: bool) -> pa.Array:
        """The values at ``path``: one per record, or one per array item (``items``)."""
        avro = resolve_named(avro, self.named)
        if isinstance(avro, list):
            branches = [b for b in avro if b != "null"]
            if len(branches) != 1:
                raise UnsupportedAvroError(f"union {avro!r}")
            inner = resolve_named(branches[0], self.named)
            kind = inner.get("type") if isinstance(inner, dict) else inner
            if kind == "record":
                raise UnsupportedAvroError(f"nullable record at {'.'.join(path)}")
            return self.value(inner, path, items)
        kind = avro.get("type") if isinstance(avro, dict) else avro
        if kind == "record":
            fields = avro.get("fields", [])
            children = [self.value(f["type"], (*path, f["name"]), items) for f in fields]
            names = [str(f["name"]) for f in fields]
            if not children:
                raise UnsupportedAvroError(f"record without fields at {'.'.join(path)}")
            return pa.StructArray.from_arrays(children, names=names)
        if kind in ("array", "map"):
            return self._list(avro, kind, path)
        if kind in ("enum", "null"):
            raise UnsupportedAvroError(f"Avro {kind} at {'.'.join(path)}")
        return self._primitive(str(kind), avro, path, items)

    def _values(self, path: Path, in_item: bool) -> tuple[np.ndarray, np.ndarray]:
        """(values or positions, lengths) at ``path``, per record or per item."""
        s = self.slots
        if in_item:
            values, lengths, _ = s.items(self.program.item_slots[path])
            return values, lengths
        slot = self.program.slots[path]
        return s.vals[:, slot], s.lens[:, slot]

    def _primitive(self, kind: str, avro: Any, path: Path, in_item: bool) -> pa.Array:
        vals, lens = self._values(path, in_item)
        nulls = lens == NULL
        mask = nulls if nulls.any() else None
        if kind in ("int", "long"):
            t = pa.int32() if kind == "int" else pa.int64()
            # a copy either way: a view would keep the decode's whole item array alive
            return pa.array(vals.astype(np.int32 if kind == "int" else np.int64), t, mask=mask)
        if kind in ("float", "double", "boolean"):
            width = {"float": 4, "double": 8, "boolean": 1}[kind]
            picked = self.raw[np.where(nulls, 0, vals)[:, None] + np.arange(width)]
            if kind == "boolean":
                return pa.array(picked[:, 0] != 0, pa.bool_(), mask=mask)
            code, t = ("<f4", pa.float32()) if kind == "float" else ("<f8", pa.float64())
            return pa.array(np.ascontiguousarray(picked).view(code).reshape(-1), t, mask=mask)
        if kind in ("string", "bytes", "fixed"):
            sizes = np.where(nulls, 0, lens).astype(np.int64)
            offsets = np.zeros(len(vals) + 1, dtype=np.int64)
            np.cumsum(sizes, out=offsets[1:])
            if offsets[-1] >= 2**31:
                raise UnsupportedAvroError(f"more than 2 GiB of values at {'.'.join(path)}")
            data = self.raw[np.repeat(vals - offsets[:-1], sizes) + np.arange(offsets[-1])]
            validity = None if mask is None else pa.array(~nulls).buffers()[1]
            t = pa.string() if kind == "string" else pa.binary()
            arr = pa.Array.from_buffers(
                t,
                len(vals),
                [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
                null_count=int(nulls.sum()),
            )
            if kind == "string":
                arr.validate(full=True)  # not UTF-8: an error, as fastavro gives
            if kind == "fixed":
                return arr.cast(pa.binary(int(avro["size"])))
            return arr
        raise UnsupportedAvroError(f"Avro type {kind!r} at {'.'.join(path)}")

    def _list(self, avro: Any, kind: str, path: Path) -> pa.Array:
        counts, lens = self._values(path, False)
        nulls = lens == NULL
        sizes = np.where(nulls, 0, counts).astype(np.int64)
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        mask = pa.array(nulls) if nulls.any() else None
        if kind == "map":
            keys = self.value("string", (*path, "{key}"), True)
            values = self.value(avro["values"], (*path, "{}"), True)
            return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), keys, values, mask=mask)
        items = self.value(avro["items"], (*path, "[]"), True)
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, mask=mask)
