"""Schema evolution as pure logic: recorded changes applied to a schema (Java's SchemaUpdate).

A change is a small frozen value (:class:`AddColumn`, :class:`DeleteColumn`, ...). The table
layer records them and calls :func:`apply_schema_changes` on the schema of whatever metadata a
commit attempt is based on, so a retry re-applies the same intent to the fresh schema.

Columns are named by their names in the base schema (a dotted string, or a tuple of names for
names holding dots); a move may also name a column added in the same update. New fields get
ids from ``last_column_id + 1``; nested types given to :class:`AddColumn` get fresh ids too.
Every refusal is a :class:`~icepark.errors.ValidationError` naming the column.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from icepark.errors import InvalidSchemaError, ValidationError
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.sorting import SortOrder
from icepark.spec.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    UnknownType,
    parse_primitive_type,
)

__all__ = [
    "ROOT_ID",
    "AddColumn",
    "DeleteColumn",
    "RenameColumn",
    "UpdateColumn",
    "MoveColumn",
    "SetIdentifierFields",
    "UnionByName",
    "SchemaChange",
    "SchemaUpdateResult",
    "Path",
    "apply_schema_changes",
    "is_promotion_allowed",
    "to_type",
    "to_path",
]

#: the parent id of top-level columns (Java's TABLE_ROOT_ID)
ROOT_ID = -1

Path = tuple[str, ...]


def to_path(path: str | Sequence[str]) -> Path:
    """``"a.b"`` -> ``("a", "b")``; a tuple or list is kept as it is."""
    if isinstance(path, str):
        return tuple(path.split("."))
    out = tuple(path)
    if not out or not all(isinstance(p, str) for p in out):
        raise ValidationError(f"Invalid column path: {path!r}")
    return out


def to_type(t: IcebergType | str) -> IcebergType:
    """An icepark type, or a primitive type name such as ``"long"`` or ``"decimal(12,2)"``."""
    return parse_primitive_type(t) if isinstance(t, str) else t


def _name(path: Path) -> str:
    return ".".join(path)


@dataclass(frozen=True)
class AddColumn:
    path: Path
    field_type: IcebergType
    doc: str | None = None
    required: bool = False
    initial_default: Any = None
    write_default: Any = None
    after: Path | None = None
    before: Path | None = None
    first: bool = False


@dataclass(frozen=True)
class DeleteColumn:
    path: Path


@dataclass(frozen=True)
class RenameColumn:
    path: Path
    new_name: str


@dataclass(frozen=True)
class UpdateColumn:
    path: Path
    field_type: IcebergType | None = None
    required: bool | None = None
    doc: str | None = None


@dataclass(frozen=True)
class MoveColumn:
    path: Path
    kind: str  # "first", "before" or "after"
    other: Path | None = None


@dataclass(frozen=True)
class SetIdentifierFields:
    names: tuple[str, ...]


@dataclass(frozen=True)
class UnionByName:
    schema: Schema


SchemaChange = (
    AddColumn
    | DeleteColumn
    | RenameColumn
    | UpdateColumn
    | MoveColumn
    | SetIdentifierFields
    | UnionByName
)


@dataclass(frozen=True)
class SchemaUpdateResult:
    """The new schema, the new last column id, and what changed (for the name mapping)."""

    schema: Schema
    last_column_id: int
    updated: dict[int, NestedField] = field(default_factory=dict)
    added: dict[int, list[NestedField]] = field(default_factory=dict)


def is_promotion_allowed(source: IcebergType, target: IcebergType, format_version: int = 2) -> bool:
    """The spec's type promotions: int->long, float->double, decimal(P,S)->decimal(P',S) with
    P' >= P, and (v3) unknown -> anything."""
    if source == target:
        return True
    if isinstance(source, UnknownType):
        return format_version >= 3
    if isinstance(source, IntegerType):
        return isinstance(target, LongType)
    if isinstance(source, FloatType):
        return isinstance(target, DoubleType)
    if isinstance(source, DecimalType) and isinstance(target, DecimalType):
        return target.scale == source.scale and target.precision >= source.precision
    return False


def apply_schema_changes(
    base: Schema,
    last_column_id: int,
    changes: Iterable[SchemaChange],
    *,
    allow_incompatible_changes: bool = False,
    case_sensitive: bool = True,
    format_version: int = 2,
    spec: PartitionSpec | None = None,
    sort_order: SortOrder | None = None,
) -> SchemaUpdateResult:
    """Apply ``changes`` in order to ``base``; ``spec`` and ``sort_order`` (the table's
    current ones) guard their source columns against deletion."""
    editor = _Editor(
        base, last_column_id, allow_incompatible_changes, case_sensitive, format_version
    )
    for change in changes:
        editor.record(change)
    return editor.result(spec, sort_order)


class _Editor:
    """Java's SchemaUpdate state: deletes, updates, adds and moves keyed by field id."""

    def __init__(
        self,
        base: Schema,
        last_column_id: int,
        allow_incompatible: bool,
        case_sensitive: bool,
        format_version: int,
    ) -> None:
        self.base = base
        self.last_column_id = max(last_column_id, base.highest_field_id)
        self.allow_incompatible = allow_incompatible
        self.case_sensitive = case_sensitive
        self.format_version = format_version
        self.deletes: set[int] = set()
        self.updates: dict[int, NestedField] = {}
        self.adds: dict[int, list[NestedField]] = {}
        self.added_paths: dict[Path, tuple[int, NestedField]] = {}
        self.moves: dict[int, list[tuple[str, int, int | None]]] = {}
        self.identifier_names: tuple[str, ...] | None = None

    # -- lookups ---------------------------------------------------------------------------

    def _norm(self, path: Path) -> Path:
        return path if self.case_sensitive else tuple(p.lower() for p in path)

    def _find(self, path: Path) -> NestedField | None:
        if any("." in p for p in path):
            return _walk(self.base.as_struct(), path, self.case_sensitive)
        try:
            return self.base.find_field(_name(path), self.case_sensitive)
        except InvalidSchemaError:
            return None

    def _require(self, path: Path, doing: str) -> NestedField:
        f = self._find(path)
        if f is None:
            raise ValidationError(f"Cannot {doing} missing column: {_name(path)}")
        return f

    def _parent_of(self, field_id: int) -> int:
        parent = self.base.parent_id(field_id)
        return ROOT_ID if parent is None else parent

    def _current(self, f: NestedField) -> NestedField:
        return self.updates.get(f.field_id, f)

    def _next_id(self) -> int:
        self.last_column_id += 1
        return self.last_column_id

    # -- recording -------------------------------------------------------------------------

    def record(self, change: SchemaChange) -> None:
        if isinstance(change, AddColumn):
            self.add(change)
        elif isinstance(change, DeleteColumn):
            self.delete(change.path)
        elif isinstance(change, RenameColumn):
            self.rename(change.path, change.new_name)
        elif isinstance(change, UpdateColumn):
            self.update(change)
        elif isinstance(change, MoveColumn):
            self.move(change)
        elif isinstance(change, SetIdentifierFields):
            self.identifier_names = change.names
        elif isinstance(change, UnionByName):
            self.union(change.schema.as_struct(), ())
        else:  # pragma: no cover - the union above is closed
            raise ValidationError(f"Unknown schema change: {change!r}")

    def _resolve_parent(self, parent_path: Path, name: str) -> int:
        if not parent_path:
            return ROOT_ID
        parent = self._require(parent_path, f"add column {name!r} to")
        parent_id = parent.field_id
        t = parent.field_type
        if isinstance(t, ListType):
            parent_id, t = t.element_id, t.element_type
        elif isinstance(t, MapType):
            parent_id, t = t.value_id, t.value_type
        if not isinstance(t, StructType):
            raise ValidationError(
                f"Cannot add column {name!r} to non-struct column {_name(parent_path)}: {t}"
            )
        if parent.field_id in self.deletes or parent_id in self.deletes:
            raise ValidationError(
                f"Cannot add column {name!r} to a column that will be deleted: {_name(parent_path)}"
            )
        return parent_id

    def add(self, c: AddColumn) -> None:
        full = _name(c.path)
        parent_path, name = c.path[:-1], c.path[-1]
        if not name:
            raise ValidationError(f"Cannot add column with an empty name: {full!r}")
        parent_id = self._resolve_parent(parent_path, name)
        existing = self._find(c.path)
        if existing is not None and existing.field_id not in self.deletes:
            raise ValidationError(f"Cannot add column, name already exists: {full}")
        if self._norm(c.path) in self.added_paths:
            raise ValidationError(f"Cannot add column, name already added: {full}")
        if (c.initial_default is not None or c.write_default is not None) and (
            self.format_version < 3
        ):
            raise ValidationError(
                f"Cannot add column {full} with a default value: defaults need format v3 "
                f"(table is v{self.format_version})"
            )
        if c.required and c.initial_default is None and not self.allow_incompatible:
            raise ValidationError(
                f"Incompatible change: cannot add required column without a default value: {full}"
            )
        _check_default(full, c.initial_default, c.field_type)
        _check_default(full, c.write_default, c.field_type)
        field_id = self._next_id()
        t = c.field_type
        if not isinstance(t, PrimitiveType):
            t = self._fresh(t)
        new_field = NestedField(
            field_id,
            name,
            t,
            c.required,
            c.doc,
            c.initial_default,
            c.write_default if c.write_default is not None else c.initial_default,
        )
        self.adds.setdefault(parent_id, []).append(new_field)
        self.added_paths[self._norm(c.path)] = (parent_id, new_field)
        if c.first or c.after is not None or c.before is not None:
            if sum((c.first, c.after is not None, c.before is not None)) > 1:
                raise ValidationError(f"Give at most one of first, after and before: {full}")
            kind = "first" if c.first else "after" if c.after is not None else "before"
            other = c.after if c.after is not None else c.before
            if other is not None and len(other) == 1 and len(parent_path) > 0:
                other = (*parent_path, *other)  # a bare name: a sibling in the same struct
            self.move(MoveColumn(c.path, kind, other))

    def _fresh(self, t: IcebergType) -> IcebergType:
        """Fresh ids for a nested type, breadth first as Java's assignFreshIds."""
        if isinstance(t, StructType):
            ids = [self._next_id() for _ in t.fields]
            return StructType(
                *(
                    replace(f, field_id=i, field_type=self._fresh(f.field_type))
                    for i, f in zip(ids, t.fields)
                )
            )
        if isinstance(t, ListType):
            eid = self._next_id()
            return ListType(eid, self._fresh(t.element_type), t.element_required)
        if isinstance(t, MapType):
            kid, vid = self._next_id(), self._next_id()
            return MapType(
                kid, self._fresh(t.key_type), vid, self._fresh(t.value_type), t.value_required
            )
        return t

    def delete(self, path: Path) -> None:
        f = self._require(path, "delete")
        full = _name(path)
        if f.field_id in self.adds:
            raise ValidationError(f"Cannot delete a column that has additions: {full}")
        if f.field_id in self.updates:
            raise ValidationError(f"Cannot delete a column that has updates: {full}")
        parent = self.base.parent_id(f.field_id)
        if parent is not None and not isinstance(self.base.find_type(parent), StructType):
            raise ValidationError(
                f"Cannot delete {full}: it is the element, key or value of a list or map"
            )
        self.deletes.add(f.field_id)

    def rename(self, path: Path, new_name: str) -> None:
        f = self._require(path, "rename")
        if not new_name:
            raise ValidationError(f"Cannot rename {_name(path)} to an empty name")
        if f.field_id in self.deletes:
            raise ValidationError(f"Cannot rename a column that will be deleted: {_name(path)}")
        parent = self.base.parent_id(f.field_id)
        if parent is not None and not isinstance(self.base.find_type(parent), StructType):
            raise ValidationError(f"Cannot rename {_name(path)}: not a struct field")
        self.updates[f.field_id] = replace(self._current(f), name=new_name)

    def update(self, c: UpdateColumn) -> None:
        f = self._require(c.path, "update")
        full = _name(c.path)
        if f.field_id in self.deletes:
            raise ValidationError(f"Cannot update a column that will be deleted: {full}")
        current = self._current(f)
        if c.field_type is not None and c.field_type != current.field_type:
            if not isinstance(current.field_type, PrimitiveType) or not isinstance(
                c.field_type, PrimitiveType
            ):
                raise ValidationError(
                    f"Cannot change column type: {full}: {current.field_type} -> {c.field_type}"
                    " (only primitive types can be widened)"
                )
            if not is_promotion_allowed(current.field_type, c.field_type, self.format_version):
                raise ValidationError(
                    f"Cannot change column type: {full}: {current.field_type} -> {c.field_type}"
                )
            current = replace(current, field_type=c.field_type)
        if c.required is not None and c.required != current.required:
            if c.required and not self.allow_incompatible:
                raise ValidationError(
                    f"Cannot change column nullability: {full}: optional -> required"
                )
            current = replace(current, required=c.required)
        if c.doc is not None:
            current = replace(current, doc=c.doc)
        if current != f or f.field_id in self.updates:
            self.updates[f.field_id] = current

    def _find_for_move(self, path: Path) -> tuple[int, int] | None:
        """(field id, parent id) of a base or newly added column."""
        f = self._find(path)
        if f is not None:
            return f.field_id, self._parent_of(f.field_id)
        added = self.added_paths.get(self._norm(path))
        if added is not None:
            return added[1].field_id, added[0]
        return None

    def move(self, c: MoveColumn) -> None:
        found = self._find_for_move(c.path)
        full = _name(c.path)
        if found is None:
            raise ValidationError(f"Cannot move missing column: {full}")
        field_id, parent_id = found
        other_id: int | None = None
        if c.kind != "first":
            if c.other is None:
                raise ValidationError(f"Cannot move {full} {c.kind} nothing")
            other = self._find_for_move(c.other)
            if other is None:
                raise ValidationError(
                    f"Cannot move {full} {c.kind} missing column: {_name(c.other)}"
                )
            if other[0] == field_id:
                raise ValidationError(f"Cannot move {full} {c.kind} itself")
            if other[1] != parent_id:
                raise ValidationError(
                    f"Cannot move field {full} to a different struct (next to {_name(c.other)})"
                )
            other_id = other[0]
        self.moves.setdefault(parent_id, []).append((c.kind, field_id, other_id))

    def union(self, new: StructType, prefix: Path) -> None:
        """Add what ``new`` has and the table lacks, widen types, relax nullability."""
        for nf in new.fields:
            path = (*prefix, nf.name)
            existing = self._find(path)
            if existing is None:
                self.add(AddColumn(path, nf.field_type, nf.doc))
                continue
            self._union_field(path, existing, nf)

    def _union_field(self, path: Path, existing: NestedField, nf: NestedField) -> None:
        et, nt = existing.field_type, nf.field_type
        widened: IcebergType | None = None
        if isinstance(et, PrimitiveType) and isinstance(nt, PrimitiveType):
            if et != nt:
                if is_promotion_allowed(et, nt, self.format_version):
                    widened = nt
                elif not is_promotion_allowed(nt, et, self.format_version):
                    raise ValidationError(f"Cannot change column type: {_name(path)}: {et} -> {nt}")
        elif isinstance(et, StructType) and isinstance(nt, StructType):
            self.union(nt, path)
        elif isinstance(et, ListType) and isinstance(nt, ListType):
            self._union_field((*path, "element"), et.element_field, nt.element_field)
        elif isinstance(et, MapType) and isinstance(nt, MapType):
            self._union_field((*path, "key"), et.key_field, nt.key_field)
            self._union_field((*path, "value"), et.value_field, nt.value_field)
        else:
            raise ValidationError(f"Cannot change column type: {_name(path)}: {et} -> {nt}")
        relax = existing.required and not nf.required
        doc = nf.doc if nf.doc is not None and nf.doc != existing.doc else None
        if widened is not None or relax or doc is not None:
            self.update(UpdateColumn(path, widened, False if relax else None, doc))

    # -- building --------------------------------------------------------------------------

    def _struct(self, struct: StructType, parent_id: int) -> StructType:
        fields: list[NestedField] = []
        for f in struct.fields:
            if f.field_id in self.deletes:
                continue
            current = self._current(f)
            fields.append(replace(current, field_type=self._type(current.field_type, f.field_id)))
        fields.extend(self.adds.get(parent_id, ()))
        for kind, field_id, other_id in self.moves.get(parent_id, ()):
            fields = _moved(fields, kind, field_id, other_id)
        return StructType(*fields)

    def _type(self, t: IcebergType, field_id: int) -> IcebergType:
        if isinstance(t, StructType):
            return self._struct(t, field_id)
        if isinstance(t, ListType):
            element = self.updates.get(t.element_id, t.element_field)
            return ListType(
                t.element_id, self._type(element.field_type, t.element_id), element.required
            )
        if isinstance(t, MapType):
            value = self.updates.get(t.value_id, t.value_field)
            key = self.updates.get(t.key_id, t.key_field)
            return MapType(
                t.key_id,
                key.field_type,
                t.value_id,
                self._type(value.field_type, t.value_id),
                value.required,
            )
        return t

    def result(self, spec: PartitionSpec | None, order: SortOrder | None) -> SchemaUpdateResult:
        self._check_deletes(spec, order)
        struct = self._struct(self.base.as_struct(), ROOT_ID)
        try:
            interim = Schema(*struct.fields, schema_id=self.base.schema_id)
        except InvalidSchemaError as exc:
            raise ValidationError(f"Invalid schema change: {exc}") from exc
        if self.identifier_names is None:
            ids = list(self.base.identifier_field_ids)
        else:
            ids = []
            for name in self.identifier_names:
                try:
                    ids.append(interim.find_field_id(name, self.case_sensitive))
                except InvalidSchemaError:
                    raise ValidationError(
                        f"Cannot set identifier field {name!r}: no such column"
                    ) from None
        try:
            schema = interim.with_identifier_fields(ids)
        except InvalidSchemaError as exc:
            raise ValidationError(f"Invalid identifier fields: {exc}") from exc
        return SchemaUpdateResult(
            schema,
            self.last_column_id,
            dict(self.updates),
            {k: list(v) for k, v in self.adds.items()},
        )

    def _check_deletes(self, spec: PartitionSpec | None, order: SortOrder | None) -> None:
        kept_identifiers = self.identifier_names is None
        for fid in self.deletes:
            name = self.base.find_column_name(fid)
            if kept_identifiers and fid in self.base.identifier_field_ids:
                raise ValidationError(
                    f"Cannot delete identifier field {name}. To force deletion, also call "
                    "set_identifier_fields to update identifier fields."
                )
            dropped = {fid} | {i for i in self.base.field_ids() if self._below(i, fid)}
            for pf in spec.fields if spec is not None else ():
                if not pf.transform.is_void and pf.source_id in dropped:
                    raise ValidationError(
                        f"Cannot delete column {name}: used by partition field {pf.name!r} of the "
                        f"current partition spec {spec.spec_id if spec else ''}"
                    )
            for sf in order.fields if order is not None else ():
                if sf.source_id in dropped:
                    raise ValidationError(
                        f"Cannot delete column {name}: used by the current sort order {order}"
                    )

    def _below(self, field_id: int, ancestor: int) -> bool:
        parent = self.base.parent_id(field_id)
        while parent is not None:
            if parent == ancestor:
                return True
            parent = self.base.parent_id(parent)
        return False


def _walk(struct: StructType, path: Path, case_sensitive: bool) -> NestedField | None:
    """Find a field by its path of names (names may hold dots); lists and maps are entered
    through ``element``, ``key`` and ``value`` or directly."""
    t: IcebergType = struct
    found: NestedField | None = None
    for name in path:
        if isinstance(t, ListType | MapType):
            child = next((f for f in t.fields if f.name == name), None)
            if child is not None:
                found, t = child, child.field_type
                continue
            t = t.element_type if isinstance(t, ListType) else t.value_type
        if not isinstance(t, StructType):
            return None
        found = t.field_by_name(name, case_sensitive)
        if found is None:
            return None
        t = found.field_type
    return found


def _moved(
    fields: list[NestedField], kind: str, field_id: int, other_id: int | None
) -> list[NestedField]:
    moving = next((f for f in fields if f.field_id == field_id), None)
    if moving is None:
        return fields
    rest = [f for f in fields if f.field_id != field_id]
    if kind == "first":
        return [moving, *rest]
    idx = next((i for i, f in enumerate(rest) if f.field_id == other_id), None)
    if idx is None:
        raise ValidationError(f"Cannot move {moving.name} next to a deleted column")
    pos = idx + 1 if kind == "after" else idx
    return [*rest[:pos], moving, *rest[pos:]]


def _check_default(full: str, value: Any, t: IcebergType) -> None:
    if value is None:
        return
    from icepark.spec.values import to_json

    try:
        to_json(value, t)
    except Exception as exc:  # any failure means the value does not fit
        raise ValidationError(f"Invalid default value for {full} ({t}): {value!r}: {exc}") from exc
