"""A record scanner compiled for one writer schema: reads a few fields, steps over the rest.

:func:`compile_scanner` generates (and compiles once) a Python function that walks the records
of a decompressed block and returns, per record, a tuple of the values of the wanted fields.
Ints and longs, strings, bytes, fixed-size values and unions are stepped over inline (most
encoded ints are one byte); arrays and maps use :func:`~icepark.avro.blocks.compile_skipper`.
Generating straight-line code per schema avoids a Python call per value, which is what makes
scanning a 10,000-entry manifest several times faster than decoding it.

A value that does not decode (a union branch out of range, a truncated block) raises
:class:`~icepark.avro.blocks.UnsupportedAvroError` or :class:`IndexError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from icepark.avro.blocks import (
    VARINT,
    Skipper,
    UnsupportedAvroError,
    compile_skipper,
    read_long,
)
from icepark.avro.blocks import resolve_named as _resolve

__all__ = [
    "LONG",
    "Reader",
    "RecordScanner",
    "Run",
    "RunReader",
    "ScannerCodegen",
    "compile_scanner",
]

Reader = Callable[[bytes, int], tuple[Any, int]]
"""Reads one value: ``read(data, pos)`` is the value and the position after it."""

LONG = "long"
"""Marks a wanted int or long field, decoded inline."""

RecordScanner = Callable[[bytes, int], tuple[list[tuple[Any, ...]], int]]
"""``scan(data, count)``: the wanted values of ``count`` records and the position after them."""


class RunReader(Protocol):
    """What reads a :class:`Run`; its ``read`` may be replaced between calls."""

    read: Callable[[bytes, int], tuple[tuple[Any, ...], int] | None]


@dataclass(frozen=True)
class Run:
    """``length`` consecutive fields of a record read by one call: ``reader.read(data, pos)``
    gives the values for ``slots`` (in order) and the position after the fields, or None when
    it cannot read them there; the scanner then reads those fields one by one."""

    length: int
    slots: tuple[int, ...]
    reader: RunReader


class _Bad(UnsupportedAvroError):
    pass


def _fail(what: str) -> None:
    raise _Bad(what)


class ScannerCodegen:
    """Emits the source of a scanner (and, extended, of :mod:`icepark.avro.decoder`): code
    that steps over values of a writer schema inline."""

    def __init__(
        self,
        named: Mapping[str, Any],
        wanted: Mapping[int, tuple[int, Any]],
        runs: Mapping[int, Run] | None = None,
    ) -> None:
        self.named = named
        self.wanted = wanted
        self.runs = runs or {}
        self.lines: list[str] = []
        self.env: dict[str, Any] = {
            "read_long": read_long,
            "_fail": _fail,
            "_varint": re.compile(VARINT).match,
        }

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def add(self, value: Any) -> str:
        name = f"_h{len(self.env)}"
        self.env[name] = value
        return name

    def read_long(self, indent: int, target: str) -> None:
        self.emit(indent, "b = data[pos]")
        self.emit(indent, "if b < 0x80:")
        self.emit(indent + 1, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "elif data[pos + 1] < 0x80:")  # two bytes (a record count)
        self.emit(indent + 1, f"{target} = (b & 0x7F) | (data[pos + 1] << 7)")
        self.emit(indent + 1, f"{target} = ({target} >> 1) ^ -({target} & 1)")
        self.emit(indent + 1, "pos += 2")
        self.emit(indent, "else:")
        self.emit(indent + 1, f"{target}, pos = read_long(data, pos)")

    def skip(self, indent: int, avro: Any) -> None:
        avro = _resolve(avro, self.named)
        kind = avro.get("type") if isinstance(avro, dict) else avro
        if isinstance(avro, list):
            self.union(indent, avro, None)
        elif kind == "null":
            pass
        elif kind in ("int", "long", "enum"):
            self.emit(indent, "if data[pos] < 0x80:")
            self.emit(indent + 1, "pos += 1")
            self.emit(indent, "else:")  # a longer varint: a snapshot id takes ten bytes
            self.emit(indent + 1, "pos = _varint(data, pos).end()")
        elif kind in ("string", "bytes"):
            self.emit(indent, "b = data[pos]")
            self.emit(indent, "if not b & 0x81:")  # one byte, not negative
            self.emit(indent + 1, "pos += 1 + (b >> 1)")
            self.emit(indent, "elif b & 0x80 and data[pos + 1] < 0x80 and not b & 1:")  # two
            self.emit(indent + 1, "pos += 2 + (((b & 0x7F) | (data[pos + 1] << 7)) >> 1)")
            self.emit(indent, "else:")
            self.emit(indent + 1, "n, pos = read_long(data, pos)")
            self.emit(indent + 1, "if n < 0:")
            self.emit(indent + 2, "_fail('negative length')")
            self.emit(indent + 1, "pos += n")
        elif kind in ("boolean", "float", "double", "fixed"):
            size = {"boolean": 1, "float": 4, "double": 8}.get(kind) or int(avro["size"])
            self.emit(indent, f"pos += {size}")
        elif kind == "record":
            self.fields(indent, avro.get("fields", []))
        else:
            skipper: Skipper = compile_skipper(avro, self.named)
            self.emit(indent, f"pos = {self.add(skipper)}(data, pos)")

    def union(self, indent: int, branches: list[Any], slot: int | None, reader: Any = None) -> None:
        self.emit(indent, "b = data[pos]")
        self.emit(indent, "pos += 1")
        for i, branch in enumerate(branches):
            self.emit(indent, f"{'if' if i == 0 else 'elif'} b == {2 * i}:")
            resolved = _resolve(branch, self.named)
            if slot is not None and resolved not in ("null", {"type": "null"}):
                self.read(indent + 1, slot, reader, resolved)
            else:
                self.skip(indent + 1, resolved)
                self.emit(indent + 1, "pass")
        self.emit(indent, "else:")
        self.emit(indent + 1, "_fail('union branch out of range')")

    def read(self, indent: int, slot: int, reader: Any, avro: Any) -> None:
        if reader == LONG:
            kind = avro.get("type") if isinstance(avro, dict) else avro
            if kind not in ("int", "long"):
                raise UnsupportedAvroError(f"expected an int or long, got {avro!r}")
            self.read_long(indent, f"v{slot}")
        else:
            self.emit(indent, f"v{slot}, pos = {self.add(reader(avro))}(data, pos)")

    def fields(self, indent: int, fields: list[dict[str, Any]]) -> None:
        """The fields of a record in order; a :class:`Run` starting at one of them is tried
        first, with its fields one by one as the fallback."""
        i = 0
        while i < len(fields):
            run = self.runs.get(id(fields[i]))
            if run is None or run.length < 1 or i + run.length > len(fields):
                self.field(indent, fields[i])
                i += 1
                continue
            self.emit(indent, f"r = {self.add(run.reader)}.read(data, pos)")
            self.emit(indent, "if r is not None:")
            targets = "".join(f"v{slot}, " for slot in run.slots)
            self.emit(indent + 1, f"({targets}), pos = r" if targets else "pos = r[1]")
            self.emit(indent, "else:")
            for f in fields[i : i + run.length]:
                self.field(indent + 1, f)
            self.emit(indent + 1, "pass")
            i += run.length

    def field(self, indent: int, f: dict[str, Any]) -> None:
        want = self.wanted.get(id(f))
        if want is None:
            self.skip(indent, f["type"])
            return
        slot, reader = want
        if isinstance(reader, dict):  # a nested record with wanted fields of its own
            record = _resolve(f["type"], self.named)
            if not isinstance(record, dict) or record.get("type") != "record":
                raise UnsupportedAvroError(f"expected a record for {f.get('name')}")
            self.emit(indent, f"v{slot} = True")
            self.fields(indent, record.get("fields", []))
            return
        avro = _resolve(f["type"], self.named)
        if isinstance(avro, list):
            self.union(indent, avro, slot, reader)
        else:
            self.read(indent, slot, reader, avro)


def compile_scanner(
    record: dict[str, Any],
    named: Mapping[str, Any],
    wanted: Mapping[int, tuple[int, Any]],
    slots: int,
    start_slot: int | None = None,
    runs: Mapping[int, Run] | None = None,
) -> RecordScanner:
    """A scanner of records of the (writer) record schema ``record``.

    ``wanted`` maps ``id()`` of the field dicts to read (at any depth) to their slot in the
    result tuples (``0 <= slot < slots``) and how to read them: :data:`LONG`, or a factory
    taking the field's resolved schema and returning a :data:`Reader`. A nested record whose
    own fields are wanted is marked with a ``dict`` as its reader (its slot gets ``True``).
    Fields that are null (or not read) are ``None``. With ``start_slot``, that slot gets the
    position where the record starts in ``data`` (the next record's start, or the position
    returned after the last, is where it ends). ``runs`` maps ``id()`` of a field dict to a
    :class:`Run` of fields starting there.
    """
    gen = ScannerCodegen(named, wanted, runs)
    names = ", ".join(f"v{i}" for i in range(slots))
    gen.emit(0, "def scan(data, count):")
    gen.emit(1, "pos = 0")
    gen.emit(1, "out = []")
    gen.emit(1, "append = out.append")
    gen.emit(1, "for _ in range(count):")
    gen.emit(2, f"{names} = {', '.join(['None'] * slots)}" if slots > 1 else f"{names} = None")
    if start_slot is not None:
        gen.emit(2, f"v{start_slot} = pos")
    gen.fields(2, record.get("fields", []))
    gen.emit(2, f"append(({names},))")
    gen.emit(1, "return out, pos")
    source = "\n".join(gen.lines) + "\n"
    namespace = dict(gen.env)
    exec(compile(source, "<icepark avro scanner>", "exec"), namespace)
    scan: RecordScanner = namespace["scan"]
    return scan
