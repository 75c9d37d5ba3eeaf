"""Partition spec evolution as pure logic (Java's BaseUpdatePartitionSpec).

Recorded changes (:class:`AddField`, :class:`RemoveField`, :class:`RenameField`) are applied
to the table's default spec by :func:`apply_spec_changes`, giving the new spec's fields:

- v2 and later: kept fields in place, removed ones dropped, added ones appended. A new field
  reuses the id of a field with the same source and transform in any earlier spec, else takes
  ``last_partition_id + 1``.
- v1: field ids must stay sequential, so a removed field stays in place as a ``void``
  transform, and new fields always take ``last_partition_id + 1``.

The builder reuses an existing spec with the same fields rather than adding a duplicate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from icepark.errors import InvalidSchemaError, InvalidTransformError, ValidationError
from icepark.spec.partitioning import PartitionField, PartitionSpec, parse_term
from icepark.spec.schema import Schema
from icepark.spec.transforms import (
    BucketTransform,
    IdentityTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    parse_transform,
)

__all__ = [
    "AddField",
    "RemoveField",
    "RenameField",
    "SpecChange",
    "SpecUpdateResult",
    "apply_spec_changes",
    "to_transform",
    "partition_field_name",
]


@dataclass(frozen=True)
class AddField:
    source: str
    transform: Transform
    name: str | None = None


@dataclass(frozen=True)
class RemoveField:
    name: str


@dataclass(frozen=True)
class RenameField:
    name: str
    new_name: str


SpecChange = AddField | RemoveField | RenameField


@dataclass(frozen=True)
class SpecUpdateResult:
    spec: PartitionSpec
    last_partition_id: int


_CALL = re.compile(r"^\s*(bucket|truncate)\s*\(\s*(\d+)\s*\)\s*$", re.I)


def to_transform(t: Transform | str) -> Transform:
    """A Transform, or its name: ``"day"``, ``"bucket[16]"`` (or ``"bucket(16)"``)."""
    if isinstance(t, Transform):
        return t
    m = _CALL.match(t)
    if m is not None:
        return parse_transform(f"{m.group(1)}[{m.group(2)}]")
    return parse_transform(t)


def partition_field_name(source_name: str, transform: Transform) -> str:
    """The name Java's UpdatePartitionSpec gives: ``id_bucket_16``, ``name_trunc_4``,
    ``ts_day``, the column's name for identity."""
    if isinstance(transform, BucketTransform):
        return f"{source_name}_bucket_{transform.num_buckets}"
    if isinstance(transform, TruncateTransform):
        return f"{source_name}_trunc_{transform.width}"
    if isinstance(transform, IdentityTransform):
        return source_name
    return f"{source_name}_{transform}" if not transform.is_void else f"{source_name}_null"


def apply_spec_changes(
    schema: Schema,
    spec: PartitionSpec,
    history: Sequence[PartitionSpec],
    last_partition_id: int,
    format_version: int,
    changes: Iterable[SpecChange],
    *,
    case_sensitive: bool = True,
) -> SpecUpdateResult:
    """The new default spec's fields after ``changes`` (its spec id is assigned on commit)."""
    state = _State(schema, spec, history, last_partition_id, format_version, case_sensitive)
    for change in changes:
        if isinstance(change, AddField):
            state.add(change)
        elif isinstance(change, RemoveField):
            state.remove(change.name)
        else:
            state.rename(change.name, change.new_name)
    return state.result()


class _State:
    def __init__(
        self,
        schema: Schema,
        spec: PartitionSpec,
        history: Sequence[PartitionSpec],
        last_partition_id: int,
        format_version: int,
        case_sensitive: bool,
    ) -> None:
        self.schema = schema
        self.spec = spec
        self.history = history
        self.last_id = last_partition_id
        self.v1 = format_version == 1
        self.case_sensitive = case_sensitive
        self.adds: list[PartitionField] = []
        self.deletes: set[int] = set()
        self.renames: dict[int, str] = {}

    def _by_name(self, name: str) -> PartitionField | None:
        return next((f for f in self.spec.fields if f.name == name), None)

    def _source_id(self, column: str) -> int:
        try:
            return self.schema.find_field_id(column, self.case_sensitive)
        except InvalidSchemaError:
            raise ValidationError(
                f"Cannot find source column for partition field: {column}"
            ) from None

    def _name_of(self, f: PartitionField) -> str:
        return self.renames.get(f.field_id, f.name)

    def _taken(self, name: str) -> PartitionField | None:
        for f in self.spec.fields:
            if self._name_of(f) == name:
                return f
        return next((f for f in self.adds if f.name == name), None)

    def add(self, c: AddField) -> None:
        source_id = self._source_id(c.source)
        source = self.schema.find_field(source_id)
        term = f"{c.transform}({c.source})"
        if not c.transform.can_transform(source.field_type):
            raise InvalidTransformError(
                f"Cannot partition by {term}: transform {c.transform} does not accept "
                f"{source.field_type} (column {c.source!r})"
            )
        key = (source_id, str(c.transform))
        existing = next(
            (f for f in self.spec.fields if (f.source_id, str(f.transform)) == key), None
        )
        if existing is not None and existing.field_id in self.deletes and not self.v1:
            # removed and re-added in one update: keep the field (Java's rewriteDeleteAndAdd)
            self.deletes.discard(existing.field_id)
            if c.name is not None and c.name != existing.name:
                self.renames[existing.field_id] = c.name
            return
        if existing is not None and existing.field_id not in self.deletes:
            raise ValidationError(
                f"Cannot add duplicate partition field {c.name or existing.name}={term}, "
                f"conflicts with {existing.name!r}"
            )
        added = next((f for f in self.adds if (f.source_id, str(f.transform)) == key), None)
        if added is not None:
            raise ValidationError(
                f"Cannot add duplicate partition field {term}, already added: {added.name!r}"
            )
        column = self.schema.find_column_name(source_id) or c.source
        field_id, name = self._recycle(source_id, c.transform, c.name)
        if name is None:
            name = c.name or partition_field_name(column, c.transform)
        clash = self._taken(name)
        if clash is not None:
            void_or_deleted = clash.transform.is_void or clash.field_id in self.deletes
            if clash in self.adds or not void_or_deleted:
                raise ValidationError(f"Cannot add duplicate partition field name: {name}")
            self.renames[clash.field_id] = f"{clash.name}_{clash.field_id}"
        self._check_schema_name(name, source_id, c.transform)
        self.adds.append(PartitionField(source_id, field_id, c.transform, name))

    def _recycle(
        self, source_id: int, transform: Transform, name: str | None
    ) -> tuple[int, str | None]:
        if not self.v1:
            for spec in self.history:
                for f in spec.fields:
                    same = f.source_id == source_id and str(f.transform) == str(transform)
                    if same and (name is None or f.name == name):
                        return f.field_id, f.name
        self.last_id += 1
        return self.last_id, None

    def _check_schema_name(self, name: str, source_id: int, transform: Transform) -> None:
        try:
            column = self.schema.find_field(name, self.case_sensitive)
        except InvalidSchemaError:
            return
        if isinstance(transform, IdentityTransform | VoidTransform) and (
            column.field_id == source_id
        ):
            return
        raise ValidationError(
            f"Cannot create partition field {name!r}: it conflicts with a schema column"
        )

    def _find_for_change(self, name: str, doing: str) -> PartitionField:
        f = self._by_name(name)
        if f is None:
            try:
                transform, column = parse_term(name)
                source_id = self.schema.find_field_id(column, self.case_sensitive)
            except (InvalidTransformError, InvalidSchemaError, ValidationError):
                source_id = None
            if source_id is not None:
                f = next(
                    (
                        x
                        for x in self.spec.fields
                        if x.source_id == source_id and str(x.transform) == str(transform)
                    ),
                    None,
                )
        if f is None or f.transform.is_void:
            if any(a.name == name for a in self.adds):
                raise ValidationError(f"Cannot {doing} newly added partition field: {name}")
            raise ValidationError(f"Cannot find partition field to {doing}: {name}")
        return f

    def remove(self, name: str) -> None:
        f = self._find_for_change(name, "remove")
        if f.field_id in self.renames:
            raise ValidationError(f"Cannot rename and delete partition field: {name}")
        if f.field_id in self.deletes:
            raise ValidationError(f"Cannot delete partition field twice: {name}")
        self.deletes.add(f.field_id)

    def rename(self, name: str, new_name: str) -> None:
        f = self._find_for_change(name, "rename")
        if f.field_id in self.deletes:
            raise ValidationError(f"Cannot delete and rename partition field: {name}")
        clash = self._taken(new_name)
        if clash is not None and clash is not f:
            raise ValidationError(f"Cannot rename partition field {name}: {new_name} exists")
        self._check_schema_name(new_name, f.source_id, f.transform)
        self.renames[f.field_id] = new_name

    def result(self) -> SpecUpdateResult:
        fields: list[PartitionField] = []
        for f in self.spec.fields:
            name = self._name_of(f)
            if f.field_id not in self.deletes:
                fields.append(PartitionField(f.source_id, f.field_id, f.transform, name))
            elif self.v1:
                fields.append(PartitionField(f.source_id, f.field_id, VoidTransform(), name))
        fields.extend(self.adds)
        # as Java's checkForRedundantAddedPartitions: only the fields this update adds are
        # compared (a table partitioned by hour(ts) may later add year(ts); Java allows it)
        seen: dict[tuple[int, str], PartitionField] = {}
        for f in self.adds:
            if f.transform.is_void:
                continue
            key = (f.source_id, f.transform.dedup_name)
            if key in seen:
                raise ValidationError(
                    f"Cannot add redundant partition field: {f.name!r} ({f.transform}) "
                    f"conflicts with {seen[key].name!r} ({seen[key].transform})"
                )
            seen[key] = f
        last = max([self.last_id, *(f.field_id for f in fields)])
        return SpecUpdateResult(PartitionSpec(self.spec.spec_id, tuple(fields)), last)
