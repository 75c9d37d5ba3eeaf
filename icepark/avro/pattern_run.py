"""Reading consecutive fields of Avro records with one regular expression match per record.

A scanner (:mod:`icepark.avro.scanner`) that steps over fields one at a time in Python pays
for every field. Yet the records of one file mostly have one form: the same strings have the
same few lengths, the same arrays the same item counts. :func:`pattern_run` makes a
:class:`~icepark.avro.scanner.Run` that learns those lengths and counts from the records it
meets and reads the fields with a pattern allowing exactly them: each length or count is a
literal varint in the pattern followed by that many bytes or items, every other value has a
fixed form (a varint, a union branch index, a fixed size), so a match is the exact parse
and its groups locate the wanted values.

A record the pattern does not fit is walked in Python once to learn its lengths and counts;
the pattern is then compiled again with them added. A record no pattern can describe (an
array written in several blocks, too many different lengths) gives None, and the scanner
reads those fields one by one; after many such records, or recompiles, the run stops trying.

Wanted values: :data:`~icepark.avro.scanner.LONG` decodes an int or long; :data:`START` gives
where the value starts (after a union's branch index); :class:`KeyedBytes` reads an array of
``{key: int, value: bytes}`` records into a dict of the wanted keys (Iceberg's metric bounds).
Each is None when its field holds a null.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icepark.avro.blocks import VARINT, UnsupportedAvroError, read_long, resolve_named
from icepark.avro.file import write_long
from icepark.avro.scanner import LONG, Run

__all__ = ["START", "KeyedBytes", "pattern_run"]

START = "start"
"""Want where a field's value starts."""

_MAX_VALUES = 64  # different lengths or counts of one value before a pattern gives up
_MAX_COMPILES = 16
_MAX_FAILURES = 64


@dataclass(frozen=True)
class KeyedBytes:
    """Want the values of ``keys`` in an array of ``{key: int, value: bytes}`` records."""

    keys: frozenset[int]


class _Unfit(Exception):
    """A value no pattern of this run describes."""


@dataclass
class _Node:
    kind: str  # varint, fixed, null, sized (string or bytes), array, map, union, record
    size: int = 0  # fixed
    index: int = -1  # sized, array, map: which learned set holds its lengths or counts
    children: tuple[_Node, ...] = ()  # array: the item; map: key and value; union; record
    want: Any = None  # LONG, START or KeyedBytes, on a field's type
    slot: int = -1


@dataclass
class _Build:
    named: Mapping[str, Any]
    sets: int = 0

    def node(self, avro: Any) -> _Node:
        avro = resolve_named(avro, self.named)
        if isinstance(avro, list):
            return _Node("union", children=tuple(self.node(b) for b in avro))
        kind = avro.get("type") if isinstance(avro, dict) else avro
        if kind in ("int", "long", "enum"):
            return _Node("varint")
        if kind in ("boolean", "float", "double", "fixed"):
            size = {"boolean": 1, "float": 4, "double": 8}.get(kind) or int(avro["size"])
            return _Node("fixed", size=size)
        if kind == "null":
            return _Node("null")
        if kind in ("string", "bytes"):
            return _Node("sized", index=self.new_set())
        if kind == "array":
            return _Node("array", index=self.new_set(), children=(self.node(avro["items"]),))
        if kind == "map":
            key = _Node("sized", index=self.new_set())
            value = self.node(avro["values"])
            return _Node("map", index=self.new_set(), children=(key, value))
        if kind == "record":
            fields = tuple(self.node(f["type"]) for f in avro.get("fields", []))
            return _Node("record", children=fields)
        raise UnsupportedAvroError(f"unexpected Avro type {kind!r}")

    def new_set(self) -> int:
        self.sets += 1
        return self.sets - 1


def _value(node: _Node) -> _Node:
    """The node a want applies to: the value of an optional (``["null", X]``) field."""
    if node.kind == "union":
        values = [c for c in node.children if c.kind != "null"]
        if len(values) != 1:
            raise UnsupportedAvroError("a wanted union has one branch that is not null")
        return values[0]
    return node


def _check_want(node: _Node, want: Any) -> None:
    value = _value(node)
    if want == LONG and value.kind != "varint":
        raise UnsupportedAvroError("a wanted long is not an int or long")
    if isinstance(want, KeyedBytes):
        item = value.children[0] if value.kind == "array" else None
        kinds = [c.kind for c in item.children] if item and item.kind == "record" else []
        if kinds != ["varint", "sized"]:
            raise UnsupportedAvroError("wanted keys are not in an array of key-value records")
    elif want not in (LONG, START):
        raise UnsupportedAvroError(f"unknown want {want!r}")


# -- learning lengths and counts -----------------------------------------------------------


def _walk(node: _Node, data: bytes, pos: int, seen: list[set[int]]) -> int:
    """The position after ``node``'s value at ``pos``, adding its lengths and counts to
    ``seen``; :class:`_Unfit` for a value no pattern describes."""
    kind = node.kind
    if kind == "varint":
        return read_long(data, pos)[1]
    if kind == "fixed":
        return pos + node.size
    if kind == "null":
        return pos
    if kind == "sized":
        size, pos = read_long(data, pos)
        if size < 0:
            raise _Unfit("negative length")
        seen[node.index].add(size)
        return pos + size
    if kind == "union":
        branch, pos = read_long(data, pos)
        if not 0 <= branch < len(node.children):
            raise _Unfit("union branch out of range")
        return _walk(node.children[branch], data, pos, seen)
    if kind == "record":
        for child in node.children:
            pos = _walk(child, data, pos, seen)
        return pos
    count, pos = read_long(data, pos)  # an array or a map: one block, then the end
    if count < 0:
        raise _Unfit("a block with its size")
    if count > len(data):  # items of no bytes (nulls) in such numbers: not worth a pattern
        raise _Unfit("more items than bytes")
    seen[node.index].add(count)
    if count == 0:
        return pos
    for _ in range(count):
        for child in node.children:
            pos = _walk(child, data, pos, seen)
    if data[pos] != 0:
        raise _Unfit("several blocks")
    return pos + 1


# -- patterns --------------------------------------------------------------------------------


@dataclass
class _Compiler:
    """Builds a pattern from the nodes and learned sets, and the code extracting the wanted
    values from a match."""

    sets: list[frozenset[int]]
    groups: int = 0
    code: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    keys: list[tuple[int, int]] = field(default_factory=list)  # a field's wanted keys' groups

    def group(self) -> int:
        self.groups += 1
        return self.groups

    def pattern(self, node: _Node, want: Any = None) -> bytes:
        kind = node.kind
        if kind == "union":
            branches = []
            for i, child in enumerate(node.children):
                inner = self.pattern(child, want if child.kind != "null" else None)
                branches.append(re.escape(write_long(i)) + inner)
            return b"(?:" + b"|".join(branches) + b")"
        if want == LONG:
            self.group()
            return b"(" + VARINT + b")"
        if want == START:
            self.group()
            return b"()" + self.pattern(node)
        if isinstance(want, KeyedBytes):
            self.group()  # set when the array is there (not null)
            return b"()" + self.array(node, want)
        if kind == "varint":
            return VARINT
        if kind == "fixed":
            return b"(?s:.{%d})" % node.size
        if kind == "null":
            return b""
        if kind == "sized":
            return self.sized(node)
        if kind == "record":
            return b"".join(self.pattern(c) for c in node.children)
        return self.array(node, None)

    def sized(self, node: _Node) -> bytes:
        lengths = sorted(self.sets[node.index])
        if not lengths:
            return b"(?!)"  # never seen: cannot match yet
        values = (re.escape(write_long(n)) + (b"(?s:.{%d})" % n if n else b"") for n in lengths)
        return b"(?:" + b"|".join(values) + b")"

    def array(self, node: _Node, keyed: KeyedBytes | None) -> bytes:
        counts = sorted(self.sets[node.index])
        if not counts:
            return b"(?!)"
        branches = []
        for count in counts:
            if count == 0:
                branches.append(b"\x00")
                continue
            item = self.keyed_item(node, keyed) if keyed else self.item(node)
            branches.append(re.escape(write_long(count)) + b"(?:" + item + b"){%d}\x00" % count)
        return b"(?:" + b"|".join(branches) + b")"

    def item(self, node: _Node) -> bytes:
        return b"".join(self.pattern(c) for c in node.children)

    def keyed_item(self, node: _Node, keyed: KeyedBytes) -> bytes:
        value = self.sized(node.children[0].children[1])
        branches = []
        for key in sorted(keyed.keys):
            self.keys.append((key, self.group()))
            branches.append(re.escape(write_long(key)) + b"(" + value + b")")
        branches.append(VARINT + value)
        return b"(?:" + b"|".join(branches) + b")"

    def wanted(self, node: _Node) -> bytes:
        """The pattern of a field, with the code giving its wanted value."""
        want = node.want
        if want is None:
            return self.pattern(node)
        first = self.groups + 1
        self.keys = []
        pattern = self.pattern(node, want)
        v = f"a{len(self.values)}"
        self.values.append(v)
        if want == LONG:
            self.code += [
                f"    x = s({first})",
                "    if x < 0:",
                f"        {v} = None",
                "    else:",
                "        b = data[x]",
                f"        {v} = (b >> 1) ^ -(b & 1) if b < 0x80 else read_long(data, x)[0]",
            ]
        elif want == START:
            self.code += [f"    x = s({first})", f"    {v} = x if x >= 0 else None"]
        else:
            self.code += [f"    {v} = None if s({first}) < 0 else {{}}"]
            for key, g in self.keys:
                self.code += [
                    f"    x = s({g})",
                    "    if x >= 0:",
                    f"        {v}[{key}] = sized(data, x, m.end({g}))",
                ]
        return pattern


def _sized(data: bytes, start: int, end: int) -> bytes:
    """A string or bytes value from where its length starts to where it ends."""
    if data[start] < 0x80:
        return data[start + 1 : end]
    return data[read_long(data, start)[1] : end]


@dataclass(frozen=True)
class _Compiled:
    match: Callable[[bytes, int], re.Match[bytes] | None]
    extract: Callable[[re.Match[bytes], bytes], tuple[tuple[Any, ...], int]]
    read: Callable[[bytes, int], tuple[tuple[Any, ...], int] | None]


class _PatternRun:
    """The reader of a :class:`~icepark.avro.scanner.Run`: :attr:`read` tries the pattern
    of the lengths and counts learned so far, and learns from a record it does not fit."""

    def __init__(self, fields: tuple[_Node, ...], sets: int) -> None:
        self.fields = fields
        self.sets: list[frozenset[int]] = [frozenset()] * sets
        self.compiles = 0
        self.failures = 0
        self.current: _Compiled | None = None
        self.read: Callable[[bytes, int], tuple[tuple[Any, ...], int] | None] = self.learn

    def compile(self) -> _Compiled:
        c = _Compiler(self.sets)
        pattern = re.compile(b"".join(c.wanted(f) for f in self.fields))
        result = "    return (" + "".join(f"{v}, " for v in c.values) + "), m.end()"
        body = ["    s = m.start", *c.code, result]
        read = ["def read(data, pos):", "    m = match(data, pos)", "    if m is None:"]
        read.append("        return learn(data, pos)")
        source = "\n".join(["def extract(m, data):", *body, *read, *body])
        namespace: dict[str, Any] = {
            "match": pattern.match,
            "learn": self.learn,
            "read_long": read_long,
            "sized": _sized,
        }
        exec(compile(source + "\n", "<icepark pattern run>", "exec"), namespace)
        return _Compiled(pattern.match, namespace["extract"], namespace["read"])

    def learn(self, data: bytes, pos: int) -> tuple[tuple[Any, ...], int] | None:
        """The values of the record's fields at ``pos``, read with a pattern that fits them
        (compiled again when they have a new length or count); None when none can."""
        seen: list[set[int]] = [set() for _ in self.sets]
        try:
            end = pos
            for node in self.fields:
                end = _walk(node, data, end, seen)
        except (_Unfit, IndexError):
            self._failed()
            return None
        grown = [old | new for old, new in zip(self.sets, seen, strict=True)]
        current = self.current
        if current is None or grown != self.sets:
            if self.compiles >= _MAX_COMPILES or any(len(s) > _MAX_VALUES for s in grown):
                self._failed(give_up=True)
                return None
            self.sets = grown
            self.compiles += 1
            try:
                current = self.current = self.compile()
            except (re.error, OverflowError, RecursionError):  # a pattern too big to build
                self._failed(give_up=True)
                return None
        m = current.match(data, pos)
        if m is None or m.end() != end:
            self._failed()
            return None
        self.read = current.read
        return current.extract(m, data)

    def _failed(self, give_up: bool = False) -> None:
        self.failures += 1
        if give_up or self.failures >= _MAX_FAILURES:
            self.read = _never  # records this does not fit: the scanner reads field by field


def _never(data: bytes, pos: int) -> None:
    return None


def pattern_run(
    fields: Sequence[dict[str, Any]],
    named: Mapping[str, Any],
    wanted: Mapping[int, tuple[int, Any]],
) -> Run | None:
    """A :class:`~icepark.avro.scanner.Run` reading consecutive record ``fields`` (dicts of
    the writer schema) with one pattern match per record. ``wanted`` maps ``id()`` of some of
    the fields to their slot and what to read: :data:`~icepark.avro.scanner.LONG`,
    :data:`START` or a :class:`KeyedBytes`. None when a field's type cannot be read so."""
    build = _Build(named)
    nodes = []
    slots = []
    try:
        for f in fields:
            node = build.node(f["type"])
            found = wanted.get(id(f))
            if found is not None:
                node.slot, node.want = found
                _check_want(node, node.want)
                slots.append(node.slot)
            nodes.append(node)
    except (UnsupportedAvroError, RecursionError):  # a recursive type: read field by field
        return None
    return Run(len(nodes), tuple(slots), _PatternRun(tuple(nodes), build.sets))
