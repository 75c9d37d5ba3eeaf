"""The first phase of the columnar Avro decoder (:mod:`icepark.avro.columnar`): the writer
schema as a tree of :class:`Node` s, each with the lists it fills, and the Python function
generated from that tree (:func:`compile_walker`) that walks the records of a buffer once and
appends, per list, only positions, counts and validity (see the decoder's docstring for
what each kind of value leaves there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from icepark.avro.blocks import UnsupportedAvroError, read_long, resolve_named, varints

__all__ = ["LONG_KINDS", "Node", "SchemaNodes", "compile_walker", "leaves"]

LONG_KINDS = ("int", "long")
# values whose nulls go into their own list: None for numbers, position -1 for the others
_INLINE_NULLS = frozenset(
    {"int", "long", "enum", "string", "bytes", "fixed", "float", "double"}
    | {"array", "map", "varints", "flat"}  # a count of -1
)


def _fail(what: str) -> None:
    raise UnsupportedAvroError(what)


# -- the schema as a tree of nodes -------------------------------------------------------------


@dataclass
class Node:
    """One value of the writer schema and the column lists it fills (indexes into ``L``)."""

    kind: str  # null, boolean, int, long, float, double, string, bytes, fixed, enum,
    # record, array, varints (an array of int/long-only items), map, nullable
    lists: list[int] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # record field names
    size: int = 0  # fixed size; varint width of a varints array
    symbols: list[str] = field(default_factory=list)  # enum symbols
    null_first: bool = True  # nullable: the null branch comes first
    inline: bool = False  # nullable: nulls are kept in the inner value's own list


def _varint_only(avro: Any, named: Mapping[str, Any]) -> bool:
    avro = resolve_named(avro, named)
    kind = avro.get("type") if isinstance(avro, dict) else avro
    if kind in LONG_KINDS:
        return True
    if kind == "record" and isinstance(avro, dict):
        fields = avro.get("fields", [])
        return bool(fields) and all(_varint_only(f["type"], named) for f in fields)
    return False


class SchemaNodes:
    def __init__(self, named: Mapping[str, Any]) -> None:
        self.named = named
        self.count = 0

    def lists(self, n: int) -> list[int]:
        out = list(range(self.count, self.count + n))
        self.count += n
        return out

    def node(self, avro: Any) -> Node:
        avro = resolve_named(avro, self.named)
        if isinstance(avro, list):
            branches = [resolve_named(b, self.named) for b in avro]
            nulls = [i for i, b in enumerate(branches) if b in ("null", {"type": "null"})]
            if len(branches) == 1:
                return self.node(branches[0])
            if len(branches) != 2 or len(nulls) != 1:
                raise UnsupportedAvroError(f"union {avro!r}")
            inner = self.node(branches[1 - nulls[0]])
            if inner.kind in _INLINE_NULLS:
                return Node("nullable", [], [inner], null_first=nulls[0] == 0, inline=True)
            return Node("nullable", self.lists(1), [inner], null_first=nulls[0] == 0)
        kind = avro.get("type") if isinstance(avro, dict) else avro
        if kind == "null":
            return Node("null")
        if kind in ("boolean", "int", "long", "float", "double", "enum"):
            symbols = list(avro.get("symbols", [])) if kind == "enum" else []
            return Node(kind, self.lists(1), symbols=symbols)
        if kind in ("string", "bytes"):
            return Node(kind, self.lists(1))
        if kind == "fixed":
            return Node(kind, self.lists(1), size=int(avro["size"]))
        if kind == "record":
            fields = avro.get("fields", [])
            children = [self.node(f["type"]) for f in fields]
            # a record without fields counts its values in a list of its own
            lists = [] if fields else self.lists(1)
            return Node(kind, lists, children, names=[str(f["name"]) for f in fields])
        if kind == "array":
            items = avro["items"]
            if _varint_only(items, self.named):
                return self._varints(items)
            flat = self._flat(items)
            if flat is not None:
                return flat
            return Node("array", self.lists(1), [self.node(items)])
        if kind == "map":
            key = Node("string", self.lists(1))
            return Node("map", self.lists(1), [key, self.node(avro["values"])])
        raise UnsupportedAvroError(f"Avro type {kind!r}")

    def _varints(self, items: Any) -> Node:
        """An array of int/long-only items: counts and byte ranges, and leaf nodes that
        phase two fills from the decoded varints (in item order)."""
        lists = self.lists(3)  # counts, range starts, range ends
        leaf = self._varint_leaves(items)
        width = sum(1 for _ in leaves(leaf))
        return Node("varints", lists, [leaf], size=width)

    def _flat(self, items: Any) -> Node | None:
        """An array of records of ints, longs, strings and bytes only (a metric bounds map):
        phase one keeps where each item starts, phase two reads the fields of all items at
        once. None for other items."""
        record = resolve_named(items, self.named)
        if not isinstance(record, dict) or record.get("type") != "record":
            return None
        kinds = []
        for f in record.get("fields", []):
            t = resolve_named(f["type"], self.named)
            kind = t.get("type") if isinstance(t, dict) else t
            if not isinstance(kind, str) or kind not in ("int", "long", "string", "bytes"):
                return None
            kinds.append(kind)
        if not kinds:
            return None
        leaf = Node(
            "record",
            [],
            [Node(k) for k in kinds],
            names=[str(f["name"]) for f in record["fields"]],
        )
        return Node("flat", self.lists(2), [leaf])  # counts, item starts

    def _varint_leaves(self, avro: Any) -> Node:
        avro = resolve_named(avro, self.named)
        kind = avro.get("type") if isinstance(avro, dict) else avro
        if kind in LONG_KINDS:
            return Node(kind)
        fields = avro.get("fields", [])
        return Node(
            "record",
            [],
            [self._varint_leaves(f["type"]) for f in fields],
            names=[str(f["name"]) for f in fields],
        )


def leaves(node: Node) -> list[Node]:
    if node.kind == "record":
        return [leaf for child in node.children for leaf in leaves(child)]
    return [node]


# -- phase one: generated code ---------------------------------------------------------------


class _Gen:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.env: dict[str, Any] = {
            "read_long": read_long,
            "_fail": _fail,
            "_matcher": _matcher,
        }
        self.uid = 0

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def fresh(self, prefix: str) -> str:
        self.uid += 1
        return f"{prefix}{self.uid}"

    def read_long(self, indent: int, target: str) -> None:
        self.emit(indent, "b = data[pos]")
        self.emit(indent, "if b < 0x80:")
        self.emit(indent + 1, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "elif data[pos + 1] < 0x80:")
        self.emit(indent + 1, "b = (b & 0x7F) | (data[pos + 1] << 7)")
        self.emit(indent + 1, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(indent + 1, "pos += 2")
        self.emit(indent, "else:")  # longer: a loop here costs less than a call
        self.emit(indent + 1, "u = b & 0x7F")
        self.emit(indent + 1, "s = 7")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent + 1, "while True:")
        self.emit(indent + 2, "b = data[pos]")
        self.emit(indent + 2, "pos += 1")
        self.emit(indent + 2, "u |= (b & 0x7F) << s")
        self.emit(indent + 2, "if b < 0x80:")
        self.emit(indent + 3, "break")
        self.emit(indent + 2, "s += 7")
        self.emit(indent + 2, "if s > 63:")
        self.emit(indent + 3, "_fail('a varint longer than ten bytes')")
        self.emit(indent + 1, f"{target} = (u >> 1) ^ -(u & 1)")

    def value(self, indent: int, node: Node) -> None:
        """Code reading one value of ``node`` at ``pos`` into its columns."""
        kind, ls = node.kind, node.lists
        if kind == "null":
            return
        if kind in LONG_KINDS or kind == "enum":
            self.emit(indent, f"A{ls[0]}(pos)")  # where it is: phase two decodes them all
            self.skip_varint(indent)
        elif kind == "boolean":
            self.emit(indent, f"A{ls[0]}(data[pos])")
            self.emit(indent, "pos += 1")
        elif kind in ("float", "double"):
            self.emit(indent, f"A{ls[0]}(pos)")
            self.emit(indent, f"pos += {4 if kind == 'float' else 8}")
        elif kind in ("string", "bytes"):
            self.emit(indent, f"A{ls[0]}(pos)")  # where the length is: phase two reads it
            self.skip_bytes(indent)
        elif kind == "fixed":
            self.emit(indent, f"A{ls[0]}(pos)")
            self.emit(indent, f"pos += {node.size}")
        elif kind == "record":
            if ls:
                self.emit(indent, f"A{ls[0]}(0)")
            for child in node.children:
                self.value(indent, child)
        elif kind == "nullable":
            inner = node.children[0]
            null_code, value_code = (0, 2) if node.null_first else (2, 0)
            self.emit(indent, "b = data[pos]")
            self.emit(indent, "pos += 1")
            self.emit(indent, f"if b == {value_code}:")
            if not node.inline:
                self.emit(indent + 1, f"A{ls[0]}(True)")
            self.value(indent + 1, inner)
            self.emit(indent, f"elif b == {null_code}:")
            if node.inline:
                self.inline_null(indent + 1, inner)
            else:
                self.emit(indent + 1, f"A{ls[0]}(False)")
                self.placeholder(indent + 1, inner)
            self.emit(indent + 1, "pass")
            self.emit(indent, "else:")
            self.emit(indent + 1, "_fail('union branch out of range')")
        elif kind in ("array", "map", "varints", "flat"):
            self.blocks(indent, node)
        else:  # pragma: no cover - the builder makes no other kinds
            raise UnsupportedAvroError(kind)

    def skip_bytes(self, indent: int) -> None:
        self.emit(indent, "b = data[pos]")
        self.emit(indent, "if b < 0x80 and not b & 1:")  # a short length: one byte
        self.emit(indent + 1, "pos += 1 + (b >> 1)")
        self.emit(indent, "elif b & 0x80 and data[pos + 1] < 0x80:")
        self.emit(indent + 1, "b = (b & 0x7F) | (data[pos + 1] << 7)")
        self.emit(indent + 1, "if b & 1:")
        self.emit(indent + 2, "_fail('negative length')")
        self.emit(indent + 1, "pos += 2 + (b >> 1)")
        self.emit(indent, "else:")
        self.emit(indent + 1, "n, pos = read_long(data, pos)")
        self.emit(indent + 1, "if n < 0:")
        self.emit(indent + 2, "_fail('negative length')")
        self.emit(indent + 1, "pos += n")

    def skip_varint(self, indent: int) -> None:
        self.emit(indent, "if data[pos] < 0x80:")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "else:")
        self.emit(indent + 1, "while data[pos] >= 0x80:")
        self.emit(indent + 2, "pos += 1")
        self.emit(indent + 1, "pos += 1")

    def blocks(self, indent: int, node: Node) -> None:
        if node.kind == "varints":
            self.varint_blocks(indent, node)
            return
        total, items = self.fresh("c"), self.fresh("n")
        self.emit(indent, f"{total} = 0")
        self.emit(indent, "while True:")
        self.read_long(indent + 1, items)
        self.emit(indent + 1, f"if {items} == 0:")
        self.emit(indent + 2, "break")
        self.emit(indent + 1, f"if {items} < 0:")  # a block with its byte size: skip the size
        self.emit(indent + 2, f"{items} = -{items}")
        self.read_long(indent + 2, "v")
        self.emit(indent + 1, f"{total} += {items}")
        self.emit(indent + 1, f"for _ in range({items}):")
        if node.kind == "flat":
            self.emit(indent + 2, f"A{node.lists[1]}(pos)")
            for leaf in node.children[0].children:
                if leaf.kind in ("string", "bytes"):
                    self.skip_bytes(indent + 2)
                else:
                    self.skip_varint(indent + 2)
        else:
            for child in node.children:
                self.value(indent + 2, child)
        self.emit(indent, f"A{node.lists[0]}({total})")

    def varint_blocks(self, indent: int, node: Node) -> None:
        """An int array: the usual single block of fewer than 64 items is matched in one
        regular expression call with its terminating zero; anything else block by block."""
        ls = node.lists
        short = self.fresh("M")
        self.env[short] = [varints(i * node.size).match for i in range(64)]
        self.emit(indent, "b = data[pos]")
        self.emit(indent, "if b == 0:")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent + 1, f"A{ls[0]}(0)")
        self.emit(indent, "else:")
        self.emit(indent + 1, "m = None")
        self.emit(indent + 1, "if b < 0x80 and not b & 1:")
        self.emit(indent + 2, f"m = {short}[b >> 1](data, pos + 1)")
        self.emit(indent + 2, "e = -1 if m is None else m.end()")
        self.emit(indent + 2, "if e >= 0 and data[e] == 0:")
        self.emit(indent + 3, f"A{ls[1]}(pos + 1)")
        self.emit(indent + 3, f"A{ls[2]}(e)")
        self.emit(indent + 3, "pos = e + 1")
        self.emit(indent + 3, f"A{ls[0]}(b >> 1)")
        self.emit(indent + 2, "else:")
        self.emit(indent + 3, "m = None")
        self.emit(indent + 1, "if m is None:")
        total, items = self.fresh("c"), self.fresh("n")
        inner = indent + 2
        self.emit(inner, f"{total} = 0")
        self.emit(inner, "while True:")
        self.read_long(inner + 1, items)
        self.emit(inner + 1, f"if {items} == 0:")
        self.emit(inner + 2, "break")
        self.emit(inner + 1, f"if {items} < 0:")
        self.emit(inner + 2, f"{items} = -{items}")
        self.read_long(inner + 2, "v")
        self.emit(inner + 1, f"{total} += {items}")
        self.emit(inner + 1, f"m = _matcher({items} * {node.size})(data, pos)")
        self.emit(inner + 1, "if m is None:")
        self.emit(inner + 2, "_fail('truncated int array')")
        self.emit(inner + 1, f"A{ls[1]}(pos)")
        self.emit(inner + 1, "pos = m.end()")
        self.emit(inner + 1, f"A{ls[2]}(pos)")
        self.emit(inner, f"A{ls[0]}({total})")

    def inline_null(self, indent: int, node: Node) -> None:
        """Code appending a null to the list of an inline-null value."""
        ls = node.lists
        self.emit(indent, f"A{ls[0]}(-1)")  # a position or a count of -1

    def placeholder(self, indent: int, node: Node) -> None:
        """Code appending a null's stand-in to the columns of ``node``."""
        kind, ls = node.kind, node.lists
        if kind in ("enum", *LONG_KINDS):
            self.emit(indent, f"A{ls[0]}(-1)")
        elif kind == "boolean":
            self.emit(indent, f"A{ls[0]}(0)")
        elif kind in ("float", "double", "fixed"):
            self.emit(indent, f"A{ls[0]}(0)")
        elif kind in ("string", "bytes"):
            self.emit(indent, f"A{ls[0]}(-1)")
        elif kind == "record":
            if ls:
                self.emit(indent, f"A{ls[0]}(0)")
            for child in node.children:
                self.placeholder(indent, child)
        elif kind == "nullable" and node.inline:
            self.inline_null(indent, node.children[0])
        elif kind == "nullable":
            self.emit(indent, f"A{ls[0]}(False)")
            self.placeholder(indent, node.children[0])
        elif kind in ("array", "map", "varints", "flat"):
            self.emit(indent, f"A{ls[0]}(0)")


_MATCHERS: dict[int, Callable[[bytes, int], Any]] = {}


def _matcher(n: int) -> Callable[[bytes, int], Any]:
    found = _MATCHERS.get(n)
    if found is None:
        found = _MATCHERS[n] = varints(n).match
    return found


def compile_walker(root: Node, list_count: int) -> Callable[[bytes, int, list[list[Any]]], int]:
    gen = _Gen()
    gen.emit(0, "def decode(data, count, L):")
    gen.emit(1, "pos = 0")
    for i in range(list_count):
        gen.emit(1, f"A{i} = L[{i}].append")
    gen.emit(1, "for _ in range(count):")
    gen.value(2, root)
    gen.emit(1, "return pos")
    namespace = dict(gen.env)
    exec(compile("\n".join(gen.lines) + "\n", "<icepark avro columnar decoder>", "exec"), namespace)
    decode: Callable[[bytes, int, list[list[Any]]], int] = namespace["decode"]
    return decode
