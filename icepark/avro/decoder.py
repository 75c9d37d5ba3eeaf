"""A column decoder compiled for one Avro writer schema and one selection of its fields.

:func:`compile_decoder` generates (and compiles once per schema and selection) a Python
function that walks the records of a decompressed block (:func:`~icepark.avro.blocks.
iter_avro_blocks`) and appends the values of the selected fields to one Python list per
column: no record objects are built, and what is not selected is stepped over inline (the
code :class:`~icepark.avro.scanner.ScannerCodegen` emits), including the branches of a
complex union that are not selected. The result is a :class:`Column` tree saying which list
holds what; :mod:`icepark.arrow.avro_reader` turns the lists into Arrow arrays column by
column.

What the lists hold (``None`` for a null, and as a placeholder under a null struct or in the
branches of a union a value did not take):

* ``boolean``: ``True``/``False``; ``int``, ``long``, ``enum``: the int (an enum's symbol
  index); ``float``, ``double``, ``fixed``, ``bytes``, ``string``: the encoded bytes (little
  endian floats, raw UTF-8); ``null``: ``None``;
* a struct (a record or a complex union): its validity (``True``/``False``); a union also
  its tag (the number of the non-null branch taken) when the tag is selected;
* a list or map: its validity and its offsets (cumulative element counts, starting with 0).

A block that does not decode (a union index out of range, data ending early, bytes left
over) raises :class:`~icepark.errors.InvalidAvroFileError` from :meth:`Decoder.decode`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from icepark.avro.blocks import UnsupportedAvroError, read_long
from icepark.avro.file_schema import AvroChild, AvroFileSchema, AvroNode
from icepark.avro.scanner import ScannerCodegen
from icepark.errors import InvalidAvroFileError
from icepark.lru import LruCache

__all__ = ["Column", "Decoder", "Selection", "compile_decoder"]

Selection = Mapping[int, "Selection | None"]
"""Field ids to decode, each with the selection of its own children (None: all of them)."""


@dataclass(frozen=True, eq=False)
class Column:
    """A decoded column: the value position it reads and the lists holding its values.

    ``values``: a leaf's values or a union's tags (-1 when the tag is not selected);
    ``valid``: a struct's, list's, map's or union's validity (-1 for leaves); ``offsets``:
    a list's or map's offsets (-1 otherwise). ``children``: the selected fields of a struct,
    a list's element, a map's key and value, the selected branches of a union.
    """

    child: AvroChild
    values: int
    valid: int
    offsets: int
    children: tuple[Column, ...]

    @property
    def node(self) -> AvroNode:
        return self.child.node


class _Bad(UnsupportedAvroError):
    pass


def _fail(what: str) -> None:
    raise _Bad(what)


class _Gen(ScannerCodegen):
    def __init__(self, named: Mapping[str, Any]) -> None:
        super().__init__(named, {})
        self.env["_fail"] = _fail
        self.count = 0
        self.setup: list[str] = []
        self.uid = 0

    def new_list(self, offsets: bool = False) -> int:
        k = self.count
        self.count += 1
        self.setup.append(f"a{k} = cols[{k}].append")
        if offsets:
            self.setup.append(f"t{k} = cols[{k}][-1]")
        return k

    # -- planning: which lists hold what --

    def plan(self, child: AvroChild, selection: Selection | None) -> Column:
        node = child.node
        kind = node.kind
        if kind == "record":
            valid = self.new_list()
            return Column(child, -1, valid, -1, self.select(node.children, selection))
        if kind == "union":
            valid = self.new_list()
            assert node.tag is not None
            tag_id = node.tag.field_id
            tags = self.new_list() if _wants(selection, tag_id) else -1
            return Column(child, tags, valid, -1, self.select(node.children, selection))
        if kind in ("array", "map", "kvmap"):
            valid = self.new_list()
            offsets = self.new_list(offsets=True)
            children = tuple(self.plan(c, _sub(selection, c.field_id)) for c in node.children)
            return Column(child, -1, valid, offsets, children)
        return Column(child, self.new_list(), -1, -1, ())

    def select(
        self, children: tuple[AvroChild, ...], selection: Selection | None
    ) -> tuple[Column, ...]:
        out = []
        for c in children:
            if c.field_id is None or not _wants(selection, c.field_id):
                continue
            out.append(self.plan(c, _sub(selection, c.field_id)))
        return tuple(out)

    # -- emitting --

    def varint(self, indent: int, target: str) -> None:
        self.read_long(indent, target)

    def length(self, indent: int, target: str) -> None:
        """A non-negative length (1- and 2-byte varints inline)."""
        self.emit(indent, "b = data[pos]")
        self.emit(indent, "if not b & 0x81:")
        self.emit(indent + 1, f"{target} = b >> 1")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "elif b & 0x80 and data[pos + 1] < 0x80 and not b & 1:")
        self.emit(indent + 1, f"{target} = ((b & 0x7F) | (data[pos + 1] << 7)) >> 1")
        self.emit(indent + 1, "pos += 2")
        self.emit(indent, "else:")
        self.emit(indent + 1, f"{target}, pos = read_long(data, pos)")
        self.emit(indent + 1, f"if {target} < 0:")
        self.emit(indent + 2, "_fail('negative length')")

    def position(self, indent: int, child: AvroChild, col: Column | None) -> None:
        """Read (into ``col``) or step over (``col`` None) one value at a value position."""
        if col is None:
            if child.written is not None:
                self.skip(indent, child.written)
            return
        if child.null_index is None:
            self.value(indent, child.node, col)
            return
        present = 2 * (1 - child.null_index)
        self.emit(indent, "b = data[pos]")
        self.emit(indent, "pos += 1")
        self.emit(indent, f"if b == {present}:")
        self.value(indent + 1, child.node, col)
        self.emit(indent, f"elif b == {2 * child.null_index}:")
        self.null(indent + 1, col)
        self.emit(indent, "else:")
        self.emit(indent + 1, "_fail('union branch out of range')")

    def value(self, indent: int, node: AvroNode, col: Column) -> None:
        kind = node.kind
        if kind == "record":
            self.emit(indent, f"a{col.valid}(True)")
            selected = {id(c.child): c for c in col.children}
            for c in node.children:
                self.position(indent, c, selected.get(id(c)))
        elif kind == "union":
            self.union_value(indent, node, col)
        elif kind in ("array", "map", "kvmap"):
            self.repeated(indent, node, col)
        else:
            self.leaf(indent, node, col.values)
        self.emit(indent, "pass")

    def leaf(self, indent: int, node: AvroNode, k: int) -> None:
        kind = node.kind
        if kind == "null":
            self.emit(indent, f"a{k}(None)")
        elif kind == "boolean":
            self.emit(indent, f"a{k}(data[pos] != 0)")
            self.emit(indent, "pos += 1")
        elif kind in ("int", "long", "enum"):
            self.varint(indent, "v")
            self.emit(indent, f"a{k}(v)")
        elif kind in ("float", "double", "fixed"):
            size = {"float": 4, "double": 8}.get(kind) or int(node.schema["size"])
            self.emit(indent, f"a{k}(data[pos:pos + {size}])")
            self.emit(indent, f"pos += {size}")
        elif kind in ("string", "bytes"):
            self.length(indent, "n")
            self.emit(indent, f"a{k}(data[pos:pos + n])")
            self.emit(indent, "pos += n")
        else:
            raise UnsupportedAvroError(f"unexpected Avro type {kind!r}")

    def repeated(self, indent: int, node: AvroNode, col: Column) -> None:
        self.uid += 1
        n, k = f"n{self.uid}", col.offsets
        selected = {id(c.child): c for c in col.children}
        self.emit(indent, f"a{col.valid}(True)")
        self.emit(indent, "while True:")
        self.varint(indent + 1, n)
        self.emit(indent + 1, f"if {n} == 0:")
        self.emit(indent + 2, "break")
        self.emit(indent + 1, f"if {n} < 0:")
        self.emit(indent + 2, f"{n} = -{n}")
        self.emit(indent + 2, "_, pos = read_long(data, pos)")
        self.emit(indent + 1, f"t{k} += {n}")
        self.emit(indent + 1, f"for _ in range({n}):")
        if node.kind == "array":
            (element,) = node.children
            self.position(indent + 2, element, selected.get(id(element)))
        elif node.kind == "map":
            key, value = node.children
            self.position(indent + 2, key, selected.get(id(key)))
            self.position(indent + 2, value, selected.get(id(value)))
        else:  # kvmap: a record per entry, its fields in the record's order
            key, value = node.children
            order = (key, value) if node.key_first else (value, key)
            for c in order:
                self.position(indent + 2, c, selected.get(id(c)))
        self.emit(indent + 2, "pass")
        self.emit(indent, f"a{k}(t{k})")

    def union_value(self, indent: int, node: AvroNode, col: Column) -> None:
        selected = {id(c.child): c for c in col.children}
        by_branch = {c.branch: c for c in node.children}
        if node.branch_count < 64:
            self.emit(indent, "b = data[pos]")
            self.emit(indent, "pos += 1")
            index = "b"
            encode = 2
        else:
            self.varint(indent, "b")
            index = "b"
            encode = 1
        for i in range(node.branch_count):
            self.emit(indent, f"{'if' if i == 0 else 'elif'} {index} == {encode * i}:")
            if i == node.null_index:
                self.null(indent + 1, col)
                continue
            branch = by_branch[i]
            tag = node.children.index(branch)
            self.emit(indent + 1, f"a{col.valid}(True)")
            if col.values >= 0:
                self.emit(indent + 1, f"a{col.values}({tag})")
            for other in col.children:
                if other.child is not branch:
                    self.null(indent + 1, other)
            self.position(indent + 1, branch, selected.get(id(branch)))
            self.emit(indent + 1, "pass")
        self.emit(indent, "else:")
        self.emit(indent + 1, "_fail('union branch out of range')")

    def null(self, indent: int, col: Column) -> None:
        """Placeholders: ``col`` is null in this row."""
        kind = col.node.kind
        if kind in ("record", "union"):
            self.emit(indent, f"a{col.valid}(False)")
            if kind == "union" and col.values >= 0:
                self.emit(indent, f"a{col.values}(None)")
            for c in col.children:
                self.null(indent, c)
        elif kind in ("array", "map", "kvmap"):
            self.emit(indent, f"a{col.valid}(False)")
            self.emit(indent, f"a{col.offsets}(t{col.offsets})")
        else:
            self.emit(indent, f"a{col.values}(None)")
        self.emit(indent, "pass")


def _sub(selection: Selection | None, field_id: int | None) -> Selection | None:
    if selection is None or field_id is None:
        return None
    return selection.get(field_id)


def _wants(selection: Selection | None, field_id: int | None) -> bool:
    return field_id is not None and (selection is None or field_id in selection)


@dataclass(frozen=True, eq=False)
class Decoder:
    """A compiled decoder: :meth:`new_lists`, then :meth:`decode` each block into them."""

    columns: tuple[Column, ...]  # the selected top-level fields
    list_count: int
    offset_lists: tuple[int, ...]
    _decode: Any
    source: str

    def new_lists(self) -> list[list[Any]]:
        """Empty output lists (offset lists start with 0)."""
        lists: list[list[Any]] = [[] for _ in range(self.list_count)]
        for k in self.offset_lists:
            lists[k].append(0)
        return lists

    def decode(
        self, location: str, offset: int, data: bytes, count: int, lists: list[list[Any]]
    ) -> None:
        """Append the ``count`` records of a block (at file ``offset``) to ``lists``."""
        try:
            end = self._decode(data, count, lists)
        except (IndexError, UnsupportedAvroError, ValueError) as exc:
            problem = "it ends early" if isinstance(exc, IndexError) else str(exc)
            raise InvalidAvroFileError(
                f"Cannot read Avro file {location}: the block at offset {offset} does not "
                f"decode with the file's schema ({problem})"
            ) from exc
        if end != len(data):
            raise InvalidAvroFileError(
                f"Cannot read Avro file {location}: the block at offset {offset} holds "
                f"{len(data) - end} bytes more than its {count} records"
            )


def _selection_key(selection: Selection | None) -> Any:
    if selection is None:
        return None
    return tuple(sorted((k, _selection_key(v)) for k, v in selection.items()))


def compile_decoder(schema: AvroFileSchema, selection: Selection | None) -> Decoder:
    """A decoder of the records of ``schema`` reading the fields in ``selection`` (by id;
    None: every field with an id)."""
    schema_json = json.dumps(schema.writer_schema, sort_keys=True)
    return _compile(schema, schema_json, _selection_key(selection), selection)


# compiled decoders by writer schema, field ids and selection
_DECODERS: LruCache[tuple[str, Any, bool], Decoder] = LruCache(256)


def _compile(
    schema: AvroFileSchema, schema_json: str, key: Any, selection: Selection | None
) -> Decoder:
    ids = json.dumps(_ids_key(schema.root))
    cache_key = (schema_json + ids, key, schema.has_ids)
    return _DECODERS.get_or_compute(cache_key, lambda: _generate(schema, selection))


def _generate(schema: AvroFileSchema, selection: Selection | None) -> Decoder:
    gen = _Gen(schema.named)
    top = gen.select(schema.root.children, selection)
    selected = {id(c.child): c for c in top}
    for c in schema.root.children:
        gen.position(2, c, selected.get(id(c)))
    record_lines = gen.lines
    gen.lines = []
    gen.emit(0, "def decode(data, count, cols):")
    for line in gen.setup:
        gen.emit(1, line)
    gen.emit(1, "pos = 0")
    gen.emit(1, "for _ in range(count):")
    gen.lines.extend(record_lines)
    gen.emit(2, "pass")
    gen.emit(1, "return pos")
    source = "\n".join(gen.lines) + "\n"
    namespace = dict(gen.env)
    namespace["read_long"] = read_long
    exec(compile(source, "<icepark avro decoder>", "exec"), namespace)
    offsets = tuple(sorted(_offset_lists(top)))
    return Decoder(top, gen.count, offsets, namespace["decode"], source)


def _ids_key(node: AvroNode) -> Any:
    """The ids of a resolved tree (a name mapping may give the same schema other ids)."""
    out: list[Any] = []
    for c in node.children:
        out.append((c.field_id, _ids_key(c.node)))
    if node.tag is not None:
        out.append(("tag", node.tag.field_id))
    return out


def _offset_lists(columns: tuple[Column, ...]) -> list[int]:
    out = []
    for c in columns:
        if c.offsets >= 0:
            out.append(c.offsets)
        out.extend(_offset_lists(c.children))
    return out
