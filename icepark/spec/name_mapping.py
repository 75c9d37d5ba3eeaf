"""Name mappings: fallback field ids for data files written without them (spec, Column Projection).

A table may carry a JSON name mapping in its ``schema.name-mapping.default`` property. Readers use
it to find the Iceberg field id of a data file column that has no id of its own, matching the
column's name (at its nesting path) against the ``names`` of a mapped field. The JSON form
(spec, Appendix C) is a list of objects::

    [{"field-id": 1, "names": ["id", "record_id"]},
     {"field-id": 3, "names": ["location"], "fields": [{"field-id": 4, "names": ["lat"]}]}]

``names`` is required (possibly empty), ``field-id`` and ``fields`` are optional. A name is always
literal: ``"a.b"`` names a field called ``a.b``, not a child ``b`` of ``a``. Lists are mapped
through a child named ``element``; maps through ``key`` and ``value``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from icepark.errors import InvalidSchemaError
from icepark.spec.schema import Schema
from icepark.spec.types import IcebergType, ListType, MapType, NestedField, StructType

__all__ = [
    "MappedField",
    "NameMapping",
    "ROOT_PARENT_ID",
    "create_name_mapping",
    "name_mapping_from_json",
    "name_mapping_to_json",
    "update_name_mapping",
]

#: The parent id under which :func:`update_name_mapping` adds top-level fields (Java's -1).
ROOT_PARENT_ID = -1


@dataclass(frozen=True)
class MappedField:
    """One mapped field: its Iceberg id (None for a column not in the table), names, children."""

    field_id: int | None
    names: tuple[str, ...]
    fields: tuple[MappedField, ...] = ()

    def __post_init__(self) -> None:
        # accept lists (and other iterables) but keep tuples, so instances stay hashable
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "fields", tuple(self.fields))

    def field(self, name: str) -> MappedField | None:
        """The direct child mapped under ``name``, or None."""
        return _find_child(self.fields, name)

    def __str__(self) -> str:
        names = ", ".join(self.names)
        children = f" {{{', '.join(str(f) for f in self.fields)}}}" if self.fields else ""
        return f"([{names}] -> {self.field_id if self.field_id is not None else '?'}{children})"


def _find_child(fields: Iterable[MappedField], name: str) -> MappedField | None:
    for f in fields:
        if name in f.names:
            return f
    return None


class NameMapping:
    """An immutable name mapping: the top-level mapped fields."""

    __slots__ = ("__dict__", "_fields")

    def __init__(self, fields: Iterable[MappedField] = ()) -> None:
        self._fields: tuple[MappedField, ...] = tuple(fields)

    @property
    def fields(self) -> tuple[MappedField, ...]:
        return self._fields

    def find(self, *path_names: str) -> MappedField | None:
        """The field at this path of names (``find("location", "lat")``), or None.

        Each name is literal (it may contain dots). Inside a list use ``"element"``, inside a
        map ``"key"`` or ``"value"``, as the mapping itself does.
        """
        if not path_names:
            return None
        fields: tuple[MappedField, ...] = self._fields
        found: MappedField | None = None
        for name in path_names:
            found = _find_child(fields, name)
            if found is None:
                return None
            fields = found.fields
        return found

    def find_by_id(self, field_id: int) -> MappedField | None:
        """The field mapped to this Iceberg field id, or None."""
        return self._by_id.get(field_id)

    @cached_property
    def _by_id(self) -> dict[int, MappedField]:
        index: dict[int, MappedField] = {}
        for f in _walk(self._fields):
            if f.field_id is None:
                continue
            if f.field_id in index:
                raise InvalidSchemaError(
                    f"Invalid name mapping: field id {f.field_id} is not unique"
                )
            index[f.field_id] = f
        return index

    def __iter__(self) -> Iterator[MappedField]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NameMapping) and self._fields == other._fields

    def __hash__(self) -> int:
        return hash(self._fields)

    def __repr__(self) -> str:
        return f"NameMapping({list(self._fields)!r})"

    def __str__(self) -> str:
        return "[" + ", ".join(str(f) for f in self._fields) + "]"


def _walk(fields: Iterable[MappedField]) -> Iterator[MappedField]:
    for f in fields:
        yield f
        yield from _walk(f.fields)


# -- JSON ------------------------------------------------------------------------------------


def name_mapping_to_json(mapping: NameMapping) -> str:
    """The spec's JSON form: ``[{"field-id": 1, "names": ["id"]}, ...]``."""
    return json.dumps([_field_to_obj(f) for f in mapping.fields])


def _field_to_obj(f: MappedField) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    if f.field_id is not None:
        obj["field-id"] = f.field_id
    obj["names"] = list(f.names)
    if f.fields:
        obj["fields"] = [_field_to_obj(c) for c in f.fields]
    return obj


def name_mapping_from_json(text: str | bytes | list[Any]) -> NameMapping:
    """Parse a name mapping from its JSON text (or from the already decoded JSON list)."""
    if isinstance(text, str | bytes):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as e:  # RecursionError: nested too deeply
            raise InvalidSchemaError(f"Cannot parse name mapping: invalid JSON: {e}") from e
    else:
        obj = text
    try:
        return NameMapping(_fields_from_obj(obj))
    except RecursionError:
        raise InvalidSchemaError("Cannot parse name mapping: fields nested too deeply") from None


def _fields_from_obj(obj: Any) -> tuple[MappedField, ...]:
    if not isinstance(obj, list):
        raise _parse_error("expected a list of mapped fields", obj)
    return tuple(_field_from_obj(f) for f in obj)


def _field_from_obj(obj: Any) -> MappedField:
    if not isinstance(obj, dict):
        raise _parse_error("a mapped field must be an object", obj)
    if "names" not in obj:
        raise _parse_error("a mapped field needs 'names'", obj)
    names = obj["names"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _parse_error("'names' must be a list of strings", obj)
    field_id = obj.get("field-id")
    if field_id is not None and (not isinstance(field_id, int) or isinstance(field_id, bool)):
        raise _parse_error("'field-id' must be an integer", obj)
    children = obj.get("fields")
    nested = _fields_from_obj(children) if children is not None else ()
    return MappedField(field_id, tuple(names), nested)


def _parse_error(problem: str, obj: Any) -> InvalidSchemaError:
    shown = json.dumps(obj) if isinstance(obj, dict | list) else repr(obj)
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return InvalidSchemaError(f"Cannot parse name mapping: {problem}: {shown}")


# -- creating and updating -------------------------------------------------------------------


def create_name_mapping(schema: Schema | StructType) -> NameMapping:
    """A mapping of every field of ``schema`` under its current name (Java MappingUtil.create)."""
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    return NameMapping(_mapping_for_type(struct))


def _mapping_for_type(t: IcebergType) -> tuple[MappedField, ...]:
    if isinstance(t, StructType):
        return tuple(
            MappedField(f.field_id, (f.name,), _mapping_for_type(f.field_type)) for f in t.fields
        )
    if isinstance(t, ListType):
        return (MappedField(t.element_id, ("element",), _mapping_for_type(t.element_type)),)
    if isinstance(t, MapType):
        return (
            MappedField(t.key_id, ("key",), _mapping_for_type(t.key_type)),
            MappedField(t.value_id, ("value",), _mapping_for_type(t.value_type)),
        )
    return ()


def update_name_mapping(
    mapping: NameMapping,
    updates: Mapping[int, NestedField],
    adds: Mapping[int, Sequence[NestedField]],
) -> NameMapping:
    """The mapping after a schema change (Java's MappingUtil.update).

    ``updates`` maps a field id to its new definition: a renamed field keeps its old names and
    gains the new one. ``adds`` maps a parent field id (:data:`ROOT_PARENT_ID` for top-level
    columns) to the fields added under it; each gets a mapping of its own (with its nested
    fields). A name newly given to one field is removed from its siblings that held it, so that
    every name still resolves to a single field; a sibling left with no names keeps its entry.
    """
    top = _update_fields(mapping.fields, updates, adds)
    return NameMapping(_add_new_fields(top, ROOT_PARENT_ID, adds))


def _update_fields(
    fields: tuple[MappedField, ...],
    updates: Mapping[int, NestedField],
    adds: Mapping[int, Sequence[NestedField]],
) -> tuple[MappedField, ...]:
    results = tuple(_update_field(f, updates, adds) for f in fields)
    assignments = {
        upd.name: upd.field_id
        for f in results
        if f.field_id is not None and (upd := updates.get(f.field_id)) is not None
    }
    return tuple(_remove_reassigned_names(f, assignments) for f in results)


def _update_field(
    f: MappedField,
    updates: Mapping[int, NestedField],
    adds: Mapping[int, Sequence[NestedField]],
) -> MappedField:
    children = _update_fields(f.fields, updates, adds)
    if f.field_id is None:
        return MappedField(None, f.names, children)
    names = f.names
    upd = updates.get(f.field_id)
    if upd is not None and upd.name not in names:
        names = (*names, upd.name)
    return MappedField(f.field_id, names, _add_new_fields(children, f.field_id, adds))


def _add_new_fields(
    fields: tuple[MappedField, ...],
    parent_id: int,
    adds: Mapping[int, Sequence[NestedField]],
) -> tuple[MappedField, ...]:
    to_add = adds.get(parent_id) or ()
    if not to_add:
        return fields
    new_fields = [
        MappedField(a.field_id, (a.name,), _mapping_for_type(a.field_type)) for a in to_add
    ]
    assignments = {a.name: a.field_id for a in to_add}
    by_id = {f.field_id: f for f in new_fields}
    merged: set[int] = set()
    out: list[MappedField] = []
    for f in fields:
        stripped = _remove_reassigned_names(f, assignments)
        added = by_id.get(stripped.field_id) if stripped.field_id is not None else None
        if added is not None and stripped.field_id is not None:
            merged.add(stripped.field_id)
            out.append(_merge(stripped, added))
        else:
            out.append(stripped)
    out.extend(f for f in new_fields if f.field_id not in merged)
    return tuple(out)


def _merge(stale: MappedField, added: MappedField) -> MappedField:
    """An added field whose id was already mapped: union of names and of nested mappings."""
    names = stale.names + tuple(n for n in added.names if n not in stale.names)
    by_id = {f.field_id: f for f in added.fields if f.field_id is not None}
    children: list[MappedField] = []
    merged: set[int] = set()
    for child in stale.fields:
        match = by_id.get(child.field_id) if child.field_id is not None else None
        if match is not None and child.field_id is not None:
            merged.add(child.field_id)
            children.append(_merge(child, match))
        else:
            children.append(child)
    children.extend(c for c in added.fields if c.field_id is None or c.field_id not in merged)
    return MappedField(added.field_id, names, tuple(children))


def _remove_reassigned_names(f: MappedField, assignments: Mapping[str, int]) -> MappedField:
    kept = tuple(n for n in f.names if assignments.get(n, f.field_id) == f.field_id)
    return f if kept == f.names else MappedField(f.field_id, kept, f.fields)
