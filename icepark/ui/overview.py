"""The overview page's data: the schema with field ids, the schema history (what changed from
one schema to the next, and the first snapshot written with each), the partition spec history
(each spec and the first snapshot that wrote files with it), the sort orders (the default
marked), the properties and the format version.

A schema change is found by field id, as Iceberg defines identity: a field whose id is new
was added, one whose id is gone was dropped, and for an id in both, a different name is a
rename (of the field's full path), a different type a promotion, a change of ``required``
a change of nullability, and a different doc a new comment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icepark.spec.schema import Schema, walk_fields
from icepark.spec.types import NestedField, type_label
from icepark.table.table import Table
from icepark.ui.history import when

__all__ = [
    "FieldRow",
    "SchemaVersion",
    "SpecVersion",
    "schema_rows",
    "schema_history",
    "spec_rows",
    "sort_rows",
]


@dataclass(frozen=True)
class FieldRow:
    """One field as the schema table shows it (``depth`` indents nested fields)."""

    field_id: int
    path: str
    name: str
    depth: int
    type: str
    required: bool
    doc: str


@dataclass
class SchemaVersion:
    """One schema: its id, whether it is current, the first snapshot that used it (id and
    time) and its changes against the schema before it."""

    schema_id: int
    current: bool
    first_snapshot: int | None
    first_used: str
    changes: list[str] = field(default_factory=list)


def _type_text(f: NestedField) -> str:
    return type_label(f.field_type)


def _depth(schema: Schema, field_id: int) -> int:
    depth, parent = 0, schema.parent_id(field_id)
    while parent is not None:
        depth, parent = depth + 1, schema.parent_id(parent)
    return depth


def schema_rows(schema: Schema) -> list[FieldRow]:
    """Every field, parents before children."""
    return [
        FieldRow(
            f.field_id,
            path,
            f.name,
            _depth(schema, f.field_id),
            _type_text(f),
            f.required,
            f.doc or "",
        )
        for path, f in walk_fields(schema.as_struct())
    ]


def _by_id(schema: Schema) -> dict[int, tuple[str, NestedField]]:
    return {f.field_id: (path, f) for path, f in walk_fields(schema.as_struct())}


def _changes(old: Schema, new: Schema) -> list[str]:
    before, after = _by_id(old), _by_id(new)
    out = []
    for fid, (path, f) in after.items():
        if fid not in before:
            out.append(f"added {path} ({_type_text(f)}, id {fid})")
            continue
        old_path, g = before[fid]
        if old_path != path:
            out.append(f"renamed {old_path} to {path} (id {fid})")
        if _type_text(g) != _type_text(f):
            out.append(f"changed {path} from {_type_text(g)} to {_type_text(f)}")
        if g.required != f.required:
            out.append(f"made {path} {'required' if f.required else 'optional'}")
        if (g.doc or "") != (f.doc or ""):
            out.append(f"changed the doc of {path}")
    for fid, (path, _) in before.items():
        if fid not in after:
            out.append(f"dropped {path} (id {fid})")
    if old.identifier_field_ids != new.identifier_field_ids:
        out.append(f"identifier fields now {', '.join(new.identifier_field_names) or 'none'}")
    return out


def schema_history(table: Table) -> list[SchemaVersion]:
    """Every schema of the table, oldest first, with what changed and when it was first
    written (the oldest snapshot carrying its id)."""
    md = table.metadata
    first: dict[int, tuple[int, int]] = {}
    for s in sorted(md.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number)):
        if s.schema_id is not None and s.schema_id not in first:
            first[s.schema_id] = (s.snapshot_id, s.timestamp_ms)
    out = []
    previous: Schema | None = None
    for schema in sorted(md.schemas, key=lambda s: s.schema_id):
        used = first.get(schema.schema_id)
        out.append(
            SchemaVersion(
                schema.schema_id,
                schema.schema_id == md.current_schema_id,
                used[0] if used else None,
                when(used[1]) if used else "",
                _changes(previous, schema) if previous is not None else ["first schema"],
            )
        )
        previous = schema
    return out


@dataclass(frozen=True)
class SpecVersion:
    """One partition spec: id, whether it is the default, its fields as
    ``name = transform(column) [field id]``, and the first snapshot that wrote a manifest
    of it (from the ``all_manifests`` metadata table; None when none did)."""

    spec_id: int
    default: bool
    fields: list[str]
    first_snapshot: int | None
    first_used: str


def _first_writers(table: Table) -> dict[int, tuple[int, int]]:
    """Per spec id, the oldest snapshot (id, time) that added a manifest of that spec."""
    md = table.metadata
    manifests = table.inspect.all_manifests().select(["partition_spec_id", "added_snapshot_id"])
    first: dict[int, tuple[int, int]] = {}
    for spec_id, sid in zip(*(c.to_pylist() for c in manifests.columns)):
        snap = md.snapshot_by_id(sid) if sid is not None else None
        if snap is None:
            continue
        if spec_id not in first or snap.timestamp_ms < first[spec_id][1]:
            first[spec_id] = (sid, snap.timestamp_ms)
    return first


def spec_rows(table: Table) -> list[SpecVersion]:
    """Each partition spec, oldest first (see :class:`SpecVersion`)."""
    md = table.metadata
    schema = md.schema()
    first = _first_writers(table)
    out = []
    for spec in sorted(md.partition_specs, key=lambda s: s.spec_id):
        fields = []
        for pf in spec.fields:
            source = _column(table, schema, pf.source_id)
            fields.append(f"{pf.name} = {pf.transform}({source}) [id {pf.field_id}]")
        used = first.get(spec.spec_id)
        out.append(
            SpecVersion(
                spec.spec_id,
                spec.spec_id == md.default_spec_id,
                fields or ["unpartitioned"],
                used[0] if used else None,
                when(used[1]) if used else "",
            )
        )
    return out


def sort_rows(table: Table) -> list[tuple[int, bool, list[str]]]:
    """Each sort order: id, whether it is the default, and its fields."""
    md = table.metadata
    schema = md.schema()
    out = []
    for order in sorted(md.sort_orders, key=lambda o: o.order_id):
        fields = [
            f"{f.transform}({_column(table, schema, f.source_id)}) {f.direction.value} "
            f"{f.null_order.value}"
            for f in order.fields
        ]
        out.append(
            (order.order_id, order.order_id == md.default_sort_order_id, fields or ["unsorted"])
        )
    return out


def _column(table: Table, schema: Schema, field_id: int) -> str:
    """A column's name in the current schema, else in the newest schema that has it."""
    name = schema.find_column_name(field_id)
    if name is not None:
        return name
    for older in sorted(table.metadata.schemas, key=lambda s: -s.schema_id):
        name = older.find_column_name(field_id)
        if name is not None:
            return f"{name} (dropped)"
    return f"field {field_id}"
