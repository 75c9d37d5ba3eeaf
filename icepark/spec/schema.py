"""Iceberg schemas: a struct of fields with ids, identifier fields, lookups and visitors."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from typing import Any

from icepark.errors import InvalidSchemaError
from icepark.spec.types import (
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    PrimitiveType,
    StructType,
    required_format_version,
    type_from_json,
    type_to_json,
)

__all__ = [
    "Schema",
    "assign_fresh_ids",
    "index_by_id",
    "index_parents",
    "schema_from_json",
    "schema_to_json",
    "walk_fields",
]

DEFAULT_SCHEMA_ID = 0


class Schema:
    """An immutable table schema: top-level fields, a schema id and identifier field ids.
    :func:`icepark.schema` builds one without thinking about field ids.

    Args:
        *fields: the top-level fields, in order, with ids unique across the whole schema.
        schema_id: the schema's id within the table's metadata.
        identifier_field_ids: ids of required primitive fields that together identify a row
            (used by upserts and changelog update images).

    Raises:
        InvalidSchemaError: duplicate field ids, duplicate names in one struct, or an
            identifier field that does not exist or is not a required primitive field.
    """

    __slots__ = ("__dict__", "_struct", "identifier_field_ids", "schema_id")

    def __init__(
        self,
        *fields: NestedField,
        schema_id: int = DEFAULT_SCHEMA_ID,
        identifier_field_ids: Iterable[int] = (),
    ) -> None:
        self._struct = StructType(*fields)
        self.schema_id = schema_id
        self.identifier_field_ids: tuple[int, ...] = tuple(identifier_field_ids)
        self._validate()

    # -- construction helpers --------------------------------------------------------------

    @classmethod
    def of(
        cls,
        struct: StructType,
        schema_id: int = DEFAULT_SCHEMA_ID,
        identifier_field_ids: Iterable[int] = (),
    ) -> Schema:
        """A schema of a struct type's fields.

        Args:
            struct: the top-level struct.
            schema_id: the schema's id.
            identifier_field_ids: ids of the fields that identify a row.

        Returns:
            The schema.

        Raises:
            InvalidSchemaError: duplicate ids or names, or a bad identifier field.
        """
        return cls(*struct.fields, schema_id=schema_id, identifier_field_ids=identifier_field_ids)

    def with_schema_id(self, schema_id: int) -> Schema:
        """This schema under another schema id.

        Args:
            schema_id: the new id.

        Returns:
            A new schema; this one is unchanged.
        """
        return Schema(
            *self.fields, schema_id=schema_id, identifier_field_ids=self.identifier_field_ids
        )

    def with_identifier_fields(self, field_ids: Iterable[int]) -> Schema:
        """This schema with other identifier fields.

        Args:
            field_ids: the ids of the fields that identify a row.

        Returns:
            A new schema; this one is unchanged.

        Raises:
            InvalidSchemaError: an id that is not a required primitive field.
        """
        return Schema(*self.fields, schema_id=self.schema_id, identifier_field_ids=field_ids)

    # -- basic accessors -------------------------------------------------------------------

    @property
    def fields(self) -> tuple[NestedField, ...]:
        """The top-level fields, in order."""
        return self._struct.fields

    def as_struct(self) -> StructType:
        """The schema as a struct type of its top-level fields.

        Returns:
            The struct type.
        """
        return self._struct

    def __len__(self) -> int:
        return len(self.fields)

    def __iter__(self) -> Iterator[NestedField]:
        return iter(self.fields)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Schema)
            and self._struct == other._struct
            and self.schema_id == other.schema_id
            and set(self.identifier_field_ids) == set(other.identifier_field_ids)
        )

    def __hash__(self) -> int:
        return hash((self._struct, self.schema_id))

    def same_structure(self, other: Schema) -> bool:
        """Whether two schemas have equal fields and identifier fields, ignoring the schema
        id (Java's ``sameSchema``).

        Args:
            other: the other schema.

        Returns:
            True when they match.
        """
        return self._struct == other._struct and set(self.identifier_field_ids) == set(
            other.identifier_field_ids
        )

    def __str__(self) -> str:
        lines = [f"table {{  # schema-id {self.schema_id}"]
        lines += [f"  {f}" for f in self.fields]
        lines.append("}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"Schema({', '.join(repr(f) for f in self.fields)}, schema_id={self.schema_id}, "
            f"identifier_field_ids={list(self.identifier_field_ids)})"
        )

    # -- indexes ---------------------------------------------------------------------------

    @cached_property
    def _by_id(self) -> dict[int, NestedField]:
        return index_by_id(self._struct)

    @cached_property
    def _by_name(self) -> dict[str, int]:
        return _index_by_name(self._struct)

    @cached_property
    def _by_lower_name(self) -> dict[str, int]:
        return {name.lower(): fid for name, fid in self._by_name.items()}

    @cached_property
    def _parents(self) -> dict[int, int]:
        return index_parents(self._struct)

    @cached_property
    def highest_field_id(self) -> int:
        """The highest field id in the schema (0 when it has no field)."""
        return max(self._by_id, default=0)

    def field_ids(self) -> set[int]:
        """The ids of every field, nested ones included.

        Returns:
            The ids.
        """
        return set(self._by_id)

    def find_field(self, name_or_id: str | int, case_sensitive: bool = True) -> NestedField:
        """The field with this id or full dotted name (``location.lat``, ``tags.element``).

        Args:
            name_or_id: a field id, or a full dotted name.
            case_sensitive: whether the name matches case-sensitively.

        Returns:
            The field.

        Raises:
            InvalidSchemaError: no such field (naming it and the schema's columns).
        """
        if isinstance(name_or_id, int):
            found = self._by_id.get(name_or_id)
            if found is None:
                raise InvalidSchemaError(f"Cannot find field with id {name_or_id} in schema")
            return found
        field_id = self.find_field_id(name_or_id, case_sensitive)
        return self._by_id[field_id]

    def find_field_id(self, name: str, case_sensitive: bool = True) -> int:
        """The id of the field with this full dotted name.

        Args:
            name: a full dotted name (``location.lat``).
            case_sensitive: whether the name matches case-sensitively.

        Returns:
            The field id.

        Raises:
            InvalidSchemaError: no such field (naming it and the schema's columns).
        """
        index = self._by_name if case_sensitive else self._by_lower_name
        key = name if case_sensitive else name.lower()
        if key not in index:
            raise InvalidSchemaError(f"Cannot find field {name!r} in schema: {self.column_names()}")
        return index[key]

    def field_or_none(self, field_id: int) -> NestedField | None:
        """The field with this id, or None.

        Args:
            field_id: the field id.

        Returns:
            The field, or None when the schema has none of that id.
        """
        return self._by_id.get(field_id)

    def find_type(self, name_or_id: str | int, case_sensitive: bool = True) -> IcebergType:
        """The type of the field with this id or full dotted name.

        Args:
            name_or_id: a field id, or a full dotted name.
            case_sensitive: whether the name matches case-sensitively.

        Returns:
            The field's type.

        Raises:
            InvalidSchemaError: no such field (naming it and the schema's columns).
        """
        return self.find_field(name_or_id, case_sensitive).field_type

    def find_column_name(self, field_id: int) -> str | None:
        """The full dotted name of a field id.

        Args:
            field_id: the field id.

        Returns:
            The name (``location.lat``), or None when the schema has no such field.
        """
        return self._names_by_id.get(field_id)

    @cached_property
    def _names_by_id(self) -> dict[int, str]:
        return {fid: name for name, fid in self._by_name.items()}

    def column_names(self) -> list[str]:
        """The full dotted name of every field, nested ones included.

        Returns:
            The names, parents before their children.
        """
        return list(self._by_name)

    def parent_id(self, field_id: int) -> int | None:
        """The id of the struct, list or map a nested field is in.

        Args:
            field_id: the field id.

        Returns:
            The parent's id, or None for a top-level field.
        """
        return self._parents.get(field_id)

    @property
    def identifier_field_names(self) -> list[str]:
        """The full dotted names of the identifier fields."""
        return [self._names_by_id[i] for i in self.identifier_field_ids]

    def select(self, names: Iterable[str], case_sensitive: bool = True) -> Schema:
        """A schema with only the named columns (and the structs on their paths).

        Args:
            names: full dotted names of the columns to keep (a struct keeps all its fields).
            case_sensitive: whether the names match case-sensitively.

        Returns:
            The pruned schema, with the same field ids.

        Raises:
            InvalidSchemaError: no such field (naming it and the schema's columns).
        """
        ids = {self.find_field_id(n, case_sensitive) for n in names}
        return prune_columns(self, ids)

    # -- validation ------------------------------------------------------------------------

    def _validate(self) -> None:
        seen: dict[int, str] = {}
        for path, f in walk_fields(self._struct):
            if f.field_id in seen:
                raise InvalidSchemaError(
                    f"Duplicate field id {f.field_id}: used by {seen[f.field_id]!r} and {path!r}"
                )
            seen[f.field_id] = path
        for sibling_names in _sibling_name_groups(self._struct):
            dupes = {n for n in sibling_names if sibling_names.count(n) > 1}
            if dupes:
                raise InvalidSchemaError(f"Duplicate field names in one struct: {sorted(dupes)}")
        for fid in self.identifier_field_ids:
            self._validate_identifier_field(fid)

    def _validate_identifier_field(self, field_id: int) -> None:
        f = self._by_id.get(field_id)
        if f is None:
            raise InvalidSchemaError(
                f"Cannot add field id {field_id} as an identifier field: not found"
            )
        name = self._names_by_id[field_id]
        if not isinstance(f.field_type, PrimitiveType):
            raise InvalidSchemaError(
                f"Cannot add field {name!r} as an identifier field: not a primitive type field"
            )
        if not f.required:
            raise InvalidSchemaError(
                f"Cannot add field {name!r} as an identifier field: not a required field"
            )
        if isinstance(f.field_type, FloatType | DoubleType):
            raise InvalidSchemaError(
                f"Cannot add field {name!r} as an identifier field: "
                "must not be float or double field"
            )
        parent = self._parents.get(field_id)
        while parent is not None:
            pf = self._by_id[parent]
            if not isinstance(pf.field_type, StructType):
                raise InvalidSchemaError(
                    f"Cannot add field {name!r} as an identifier field: must not be nested in "
                    f"{pf.field_type}"
                )
            if not pf.required:
                raise InvalidSchemaError(
                    f"Cannot add field {name!r} as an identifier field: must not be nested in an "
                    f"optional field {self._names_by_id[parent]!r}"
                )
            parent = self._parents.get(parent)

    def required_format_version(self) -> int:
        """The lowest table format version that may hold this schema's types (3 for
        ``timestamp_ns``, ``unknown``...; nested types included).

        Returns:
            1, 2 or 3.
        """
        return required_format_version(self._struct)


# -- traversal -------------------------------------------------------------------------------


def _children(t: IcebergType) -> tuple[NestedField, ...]:
    return t.fields if isinstance(t, NestedType) else ()


def walk_fields(struct: IcebergType, prefix: str = "") -> Iterator[tuple[str, NestedField]]:
    """Every field below ``struct`` (depth first) with its full dotted name."""
    for f in _children(struct):
        path = f"{prefix}{f.name}"
        yield path, f
        yield from walk_fields(f.field_type, path + ".")


def index_by_id(struct: IcebergType) -> dict[int, NestedField]:
    return {f.field_id: f for _, f in walk_fields(struct)}


def index_parents(struct: IcebergType) -> dict[int, int]:
    parents: dict[int, int] = {}

    def visit(t: IcebergType, parent: int | None) -> None:
        for f in _children(t):
            if parent is not None:
                parents[f.field_id] = parent
            visit(f.field_type, f.field_id)

    visit(struct, None)
    return parents


def _index_by_name(struct: StructType) -> dict[str, int]:
    """Full dotted names; for list elements and map values also the short form Java allows."""
    names: dict[str, int] = {}
    for path, f in walk_fields(struct):
        names[path] = f.field_id
    # Java also indexes "list.x" for fields of a struct element ("list.element.x"), likewise
    # "map.x" for "map.value.x"; add those short names when they do not clash.
    short: dict[str, int] = {}
    for path, fid in names.items():
        parts = path.split(".")
        last = len(parts) - 1
        kept = [p for i, p in enumerate(parts) if not (p in ("element", "value") and i < last)]
        alias = ".".join(kept)
        if alias != path and alias not in names:
            short[alias] = fid
    names.update(short)
    return names


def _sibling_name_groups(t: IcebergType) -> Iterator[list[str]]:
    if isinstance(t, StructType):
        yield [f.name for f in t.fields]
    for f in _children(t):
        yield from _sibling_name_groups(f.field_type)


def prune_columns(schema: Schema, selected: set[int]) -> Schema:
    """Keep the fields whose ids are selected, whole subtrees below them, and their parents."""

    def prune(t: IcebergType) -> IcebergType | None:
        if isinstance(t, StructType):
            kept = []
            for f in t.fields:
                if f.field_id in selected:
                    kept.append(f)
                    continue
                sub = prune(f.field_type)
                if sub is not None:
                    kept.append(_replace_type(f, sub))
            return StructType(*kept) if kept else None
        if isinstance(t, ListType):
            if t.element_id in selected:
                return t
            sub = prune(t.element_type)
            return None if sub is None else ListType(t.element_id, sub, t.element_required)
        if isinstance(t, MapType):
            if t.value_id in selected or t.key_id in selected:
                return t
            sub = prune(t.value_type)
            if sub is None:
                return None
            return MapType(t.key_id, t.key_type, t.value_id, sub, t.value_required)
        return None

    pruned = prune(schema.as_struct())
    fields = pruned.fields if isinstance(pruned, StructType) else ()
    ids = [i for i in schema.identifier_field_ids if i in selected]
    return Schema(*fields, schema_id=schema.schema_id, identifier_field_ids=ids)


def _replace_type(f: NestedField, t: IcebergType) -> NestedField:
    return NestedField(f.field_id, f.name, t, f.required, f.doc, f.initial_default, f.write_default)


# -- fresh ids -------------------------------------------------------------------------------


def assign_fresh_ids(
    schema: Schema | StructType,
    next_id: Callable[[], int] | None = None,
    base_schema: Schema | None = None,
) -> Schema:
    """Give every field a new id, breadth first as Java does (1, 2, ... by default).

    When ``base_schema`` is given, fields whose full name exists there keep that field's id
    (used by replace-table); others get new ids from ``next_id``. Identifier fields are kept
    by name.
    """
    if next_id is None:
        start = (base_schema.highest_field_id if base_schema is not None else 0) + 1
        counter = itertools.count(start)

        def next_id() -> int:
            return next(counter)

    allocate = next_id
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    old_names = _index_by_name(struct)
    old_id_to_name = {fid: name for name, fid in old_names.items()}

    def id_for(path: str) -> int:
        if base_schema is not None:
            try:
                return base_schema.find_field_id(path)
            except InvalidSchemaError:
                pass
        return allocate()

    def reassign_struct(t: StructType, prefix: str) -> StructType:
        new_ids = [id_for(prefix + f.name) for f in t.fields]
        fields = [
            NestedField(
                new_id,
                f.name,
                reassign(f.field_type, prefix + f.name + "."),
                f.required,
                f.doc,
                f.initial_default,
                f.write_default,
            )
            for new_id, f in zip(new_ids, t.fields)
        ]
        return StructType(*fields)

    def reassign(t: IcebergType, prefix: str) -> IcebergType:
        if isinstance(t, StructType):
            return reassign_struct(t, prefix)
        if isinstance(t, ListType):
            eid = id_for(prefix + "element")
            return ListType(eid, reassign(t.element_type, prefix + "element."), t.element_required)
        if isinstance(t, MapType):
            kid = id_for(prefix + "key")
            vid = id_for(prefix + "value")
            return MapType(
                kid,
                reassign(t.key_type, prefix + "key."),
                vid,
                reassign(t.value_type, prefix + "value."),
                t.value_required,
            )
        return t

    new_struct = reassign_struct(struct, "")
    new_names = {name: fid for name, fid in _index_by_name(new_struct).items()}
    identifier_ids: list[int] = []
    if isinstance(schema, Schema):
        identifier_ids = [new_names[old_id_to_name[i]] for i in schema.identifier_field_ids]
    schema_id = schema.schema_id if isinstance(schema, Schema) else DEFAULT_SCHEMA_ID
    return Schema(*new_struct.fields, schema_id=schema_id, identifier_field_ids=identifier_ids)


# -- JSON ------------------------------------------------------------------------------------


def _default_to_json(value: Any, t: IcebergType) -> Any:
    from icepark.spec.values import to_json

    return to_json(value, t)


def _default_from_json(obj: Any, t: IcebergType) -> Any:
    from icepark.spec.values import from_json

    return from_json(obj, t)


def schema_to_json(schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = type_to_json(schema.as_struct(), default_to_json=_default_to_json)
    result: dict[str, Any] = {"type": "struct", "schema-id": schema.schema_id}
    if schema.identifier_field_ids:
        result["identifier-field-ids"] = list(schema.identifier_field_ids)
    result["fields"] = out["fields"]
    return result


def schema_from_json(obj: Any) -> Schema:
    if not isinstance(obj, dict) or obj.get("type") != "struct":
        raise InvalidSchemaError(
            f"Cannot parse type from json, expected a struct schema: {obj!r}"[:300]
        )
    struct = type_from_json(obj, default_from_json=_default_from_json)
    assert isinstance(struct, StructType)
    schema_id = obj.get("schema-id", DEFAULT_SCHEMA_ID)
    if not isinstance(schema_id, int) or isinstance(schema_id, bool):
        raise InvalidSchemaError(f"Cannot parse schema-id from json: {schema_id!r}")
    ids = obj.get("identifier-field-ids") or []
    if not isinstance(ids, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in ids
    ):
        raise InvalidSchemaError(f"Cannot parse identifier-field-ids from json: {ids!r}")
    return Schema(*struct.fields, schema_id=schema_id, identifier_field_ids=ids)
