"""What reading a data file needs from its Arrow schema alone, worked out once per schema.

A Parquet file's schema gives its field ids (:func:`file_schema_with_ids`: its own, or from a
name mapping), its columns by field id (:func:`index_file`) and, for a projection, the
columns a scan reads from it (the :class:`~icepark.arrow._projection.Read` items of the
plan). None of that depends on the file's values: a scan over thousands of files written
with one schema (a streaming backlog, a table of small appends) works it out once.
:func:`file_layout` keeps it by the schema's text, field metadata included (the field ids),
and the name mapping; what differs per file (its path, partition values, constants) is
still planned per file.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from icepark.arrow._projection import (
    Const,
    ListNode,
    MapNode,
    MetaValues,
    Node,
    Planner,
    Pos,
    Read,
    StructNode,
    child_fields,
)
from icepark.arrow.schema import apply_name_mapping, field_id_of
from icepark.errors import InvalidSchemaError, ValidationError
from icepark.spec.name_mapping import NameMapping
from icepark.spec.schema import Schema

__all__ = ["FileColumn", "FileLayout", "file_layout", "file_schema_with_ids", "index_file"]

_MAX_LAYOUTS = 256
_MAX_PLANS = 64


def file_schema_with_ids(
    arrow_schema: pa.Schema, name_mapping: NameMapping | None, location: str
) -> pa.Schema:
    """A data file's Arrow schema with field ids: as it is when any field has an id, else
    with ids from ``name_mapping``; a file without ids and without a mapping is an error."""
    if _has_ids(arrow_schema):
        return arrow_schema
    if name_mapping is None:
        raise InvalidSchemaError(
            f"Data file {location} has no field ids and no name mapping was given to read it "
            "(set the table property schema.name-mapping.default)"
        )
    return apply_name_mapping(arrow_schema, name_mapping)


def _has_ids(schema: pa.Schema) -> bool:
    def walk(f: pa.Field) -> bool:
        if field_id_of(f) is not None:
            return True
        return any(walk(c) for c in child_fields(f.type))

    return any(walk(f) for f in schema)


@dataclass(frozen=True)
class FileColumn:
    """Where a field id's column is in a file: its name path."""

    path: tuple[str, ...]
    repeated: bool  # inside a list or map: cannot be filtered on


def index_file(schema: pa.Schema, location: str) -> dict[int, FileColumn]:
    """The file's columns by field id; a bad field id or two columns of one name in a struct
    (columns are found by name paths) is a ValidationError naming the file."""
    out: dict[int, FileColumn] = {}

    def walk(f: pa.Field, path: tuple[str, ...], repeated: bool) -> None:
        try:
            fid = field_id_of(f)
        except InvalidSchemaError as exc:
            raise InvalidSchemaError(f"Cannot read data file {location}: {exc}") from exc
        if fid is not None:
            out.setdefault(fid, FileColumn(path, repeated))
        t = f.type
        if pa.types.is_struct(t):
            unique(list(t), path)
            for c in t:
                walk(c, (*path, c.name), repeated)
        else:
            for c in child_fields(t):
                walk(c, (*path, c.name), True)

    def unique(fields: list[pa.Field], path: tuple[str, ...]) -> None:
        names = [f.name for f in fields]
        if len(set(names)) < len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            where = ".".join(path) or "the top level"
            raise ValidationError(
                f"Cannot read data file {location}: two columns named {twice[0]!r} in {where}"
            )

    unique(list(schema), ())
    for f in schema:
        walk(f, (f.name,), False)
    return out


@dataclass(frozen=True)
class FileLayout:
    """A file schema with its field ids (``schema``), its columns by field id (``index``),
    and the read items of the plans made over it."""

    schema: pa.Schema
    index: dict[int, FileColumn]
    _reads: dict[tuple[int, int], tuple[Schema, pa.Schema, tuple[Read | None, ...]]] = field(
        default_factory=dict, compare=False
    )

    def plan(
        self, planner: Planner, output: Schema, target: pa.Schema, meta: MetaValues
    ) -> list[Read | Const | Pos]:
        """``planner.top(output, target, self.schema, meta)``: the read items come from an
        earlier plan of the same ``output`` and ``target`` (the very same objects) over this
        layout; constants and metadata columns are planned for this file."""
        key = (id(output), id(target))
        found = self._reads.get(key)
        if found is not None and found[0] is output and found[1] is target:
            return planner.top(output, target, self.schema, meta, found[2])
        plan = planner.top(output, target, self.schema, meta)
        if len(self._reads) >= _MAX_PLANS:
            self._reads.clear()
        reads = tuple(p if isinstance(p, Read) and _file_only(p.node) else None for p in plan)
        self._reads[key] = (output, target, reads)
        return plan


def _file_only(node: Node) -> bool:
    """Whether a read takes everything from the file: no constant inside (a missing nested
    field may take this file's partition value)."""
    if isinstance(node, StructNode):
        return all(isinstance(c, Read) and _file_only(c.node) for c in node.children)
    if isinstance(node, ListNode):
        return _file_only(node.element)
    if isinstance(node, MapNode):
        return _file_only(node.key) and _file_only(node.value)
    return True


_lock = threading.Lock()
_layouts: dict[tuple[str, Any], FileLayout] = {}


def file_layout(
    arrow_schema: pa.Schema, name_mapping: NameMapping | None, location: str
) -> FileLayout:
    """The layout of a data file with Arrow schema ``arrow_schema`` (errors name
    ``location``), shared with every file of the same schema read with the same mapping."""
    text = arrow_schema.to_string(
        show_field_metadata=True, show_schema_metadata=False, truncate_metadata=False
    )
    key = (text, name_mapping)  # a mapping is kept by identity: NameMapping has no __eq__
    found = _layouts.get(key)
    if found is None:
        schema = file_schema_with_ids(arrow_schema, name_mapping, location)
        found = FileLayout(schema, index_file(schema, location))
        with _lock:
            if len(_layouts) >= _MAX_LAYOUTS:
                _layouts.clear()
            _layouts[key] = found
    return found
