"""Partition specs: fields derived from source columns by transforms, their ids and paths."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from icepark.errors import InvalidSchemaError, InvalidTransformError, ValidationError
from icepark.spec.schema import Schema
from icepark.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
    parse_transform,
)
from icepark.spec.types import NestedField, StructType

__all__ = [
    "PARTITION_DATA_ID_START",
    "INITIAL_SPEC_ID",
    "PartitionField",
    "PartitionSpec",
    "UNPARTITIONED",
    "parse_term",
    "partition_spec_from_json",
    "partition_spec_to_json",
    "build_partition_spec",
    "default_partition_field_name",
]

PARTITION_DATA_ID_START = 1000
INITIAL_SPEC_ID = 0


@dataclass(frozen=True)
class PartitionField:
    """One partition field: ``transform(source)`` stored under ``name`` with ``field_id``."""

    source_id: int
    field_id: int
    transform: Transform
    name: str

    def __str__(self) -> str:
        return f"{self.field_id}: {self.name}: {self.transform}({self.source_id})"


@dataclass(frozen=True)
class PartitionSpec:
    """An ordered list of partition fields with a spec id."""

    spec_id: int = INITIAL_SPEC_ID
    fields: tuple[PartitionField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        names = [f.name for f in self.fields]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValidationError(
                f"Duplicate partition field names in spec {self.spec_id}: {dupes}"
            )
        ids = [f.field_id for f in self.fields]
        if len(set(ids)) != len(ids):
            raise ValidationError(f"Duplicate partition field ids in spec {self.spec_id}: {ids}")

    @property
    def is_unpartitioned(self) -> bool:
        return all(f.transform.is_void for f in self.fields)

    @property
    def last_assigned_field_id(self) -> int:
        return max((f.field_id for f in self.fields), default=PARTITION_DATA_ID_START - 1)

    def fields_by_source_id(self, source_id: int) -> list[PartitionField]:
        return [f for f in self.fields if f.source_id == source_id]

    def partition_type(self, schema: Schema) -> StructType:
        """The struct of partition values (all optional), typed by each transform's result."""
        out = []
        for f in self.fields:
            source = schema.field_or_none(f.source_id)
            if source is None:
                # A source column dropped from the schema: Java keeps the field, typed unknown.
                from icepark.spec.types import UnknownType

                result: Any = UnknownType()
            else:
                result = f.transform.result_type(source.field_type)
            out.append(NestedField(f.field_id, f.name, result, required=False))
        return StructType(*out)

    def compatible_with(self, other: PartitionSpec) -> bool:
        """Same fields (source, transform, name) in the same order; ids and spec ids ignored."""
        if len(self.fields) != len(other.fields):
            return False
        return all(
            a.source_id == b.source_id and str(a.transform) == str(b.transform) and a.name == b.name
            for a, b in zip(self.fields, other.fields)
        )

    def partition_to_path(self, partition: Sequence[Any], schema: Schema) -> str:
        """The partition's folder path, e.g. ``ts_day=2024-01-05/id_bucket=3``."""
        ptype = self.partition_type(schema)
        parts = []
        for f, pf, value in zip(self.fields, ptype.fields, partition):
            human = f.transform.to_human_string(pf.field_type, value)
            parts.append(f"{_escape(f.name)}={_escape(human)}")
        return "/".join(parts)

    def validate(self, schema: Schema) -> None:
        """Every source exists and every transform accepts its source type."""
        for f in self.fields:
            source = schema.field_or_none(f.source_id)
            if source is None:
                raise ValidationError(
                    f"Cannot find source column for partition field {f.name!r}: id {f.source_id}"
                )
            if not f.transform.can_transform(source.field_type):
                raise InvalidTransformError(
                    f"Invalid source type {source.field_type} for transform {f.transform} "
                    f"(partition field {f.name!r} on column {source.name!r})"
                )

    @cached_property
    def _str(self) -> str:
        return "[" + ", ".join(str(f) for f in self.fields) + "]"

    def __str__(self) -> str:
        return self._str


UNPARTITIONED = PartitionSpec(INITIAL_SPEC_ID, ())


def _escape(text: str) -> str:
    return urllib.parse.quote_plus(text, safe="")


_TERM = re.compile(r"^\s*(\w+)\s*\(\s*(?:(\d+)\s*,\s*)?([^(),]+?)\s*\)\s*$")
_TERM_WIDTH_LAST = re.compile(r"^\s*(bucket|truncate)\s*\(\s*([^(),]+?)\s*,\s*(\d+)\s*\)\s*$", re.I)


def parse_term(text: str) -> tuple[Transform, str]:
    """Parse ``day(ts)``, ``bucket(16, id)``, ``truncate(4, name)``, ``category`` or ``void(x)``.

    Returns the transform and the source column name. ``bucket(id, 16)`` (column first) is
    accepted too, as Spark's DDL allows both.
    """
    stripped = text.strip()
    if not stripped:
        raise InvalidTransformError("Empty partition or sort term")
    if m := _TERM_WIDTH_LAST.match(stripped):
        name, column, arg = m.group(1).lower(), m.group(2), m.group(3)
        return parse_transform(f"{name}[{arg}]"), column
    if m := _TERM.match(stripped):
        name, arg, column = m.group(1).lower(), m.group(2), m.group(3)
        aliases = {
            "years": "year",
            "months": "month",
            "days": "day",
            "hours": "hour",
            "date": "day",
        }
        name = aliases.get(name, name)
        if name in ("bucket", "truncate"):
            if arg is None:
                raise InvalidTransformError(f"Transform {name} needs a width: {text!r}")
            return parse_transform(f"{name}[{arg}]"), column
        if arg is not None:
            raise InvalidTransformError(f"Transform {name} takes no width: {text!r}")
        return parse_transform(name), column
    if re.match(r"^[\w.]+$", stripped):
        return IdentityTransform(), stripped
    raise InvalidTransformError(f"Cannot parse partition or sort term: {text!r}")


def default_partition_field_name(source_name: str, transform: Transform) -> str:
    """The name Java gives a partition field: ``id_bucket``, ``ts_day``, identity keeps it."""
    if isinstance(transform, IdentityTransform):
        return source_name
    if isinstance(transform, BucketTransform):
        return f"{source_name}_bucket"
    if isinstance(transform, TruncateTransform):
        return f"{source_name}_trunc"
    if isinstance(transform, YearTransform):
        return f"{source_name}_year"
    if isinstance(transform, MonthTransform):
        return f"{source_name}_month"
    if isinstance(transform, DayTransform):
        return f"{source_name}_day"
    if isinstance(transform, HourTransform):
        return f"{source_name}_hour"
    if isinstance(transform, VoidTransform):
        return f"{source_name}_null"
    raise InvalidTransformError(f"Unknown transform {transform}")


def build_partition_spec(
    schema: Schema,
    terms: Iterable[str | tuple[str, str]],
    spec_id: int = INITIAL_SPEC_ID,
    last_assigned_field_id: int = PARTITION_DATA_ID_START - 1,
    case_sensitive: bool = True,
) -> PartitionSpec:
    """Build a spec from terms like ``"day(ts)"``; a ``(term, name)`` pair sets the name."""
    fields: list[PartitionField] = []
    next_id = last_assigned_field_id
    for item in terms:
        term, name = (item, None) if isinstance(item, str) else item
        transform, column = parse_term(term)
        try:
            source = schema.find_field(column, case_sensitive)
        except InvalidSchemaError as exc:
            raise ValidationError(f"Cannot partition by {term!r}: no column {column!r}") from exc
        if not transform.can_transform(source.field_type):
            raise InvalidTransformError(
                f"Cannot partition by {term!r}: transform {transform} does not accept "
                f"{source.field_type} (column {column!r})"
            )
        column_name = schema.find_column_name(source.field_id) or column
        field_name = name or default_partition_field_name(column_name, transform)
        for existing in fields:
            if existing.source_id == source.field_id and str(existing.transform) == str(transform):
                raise ValidationError(
                    f"Cannot add redundant partition {term!r}: {existing.name!r} is the same"
                )
        next_id += 1
        fields.append(PartitionField(source.field_id, next_id, transform, field_name))
    spec = PartitionSpec(spec_id, tuple(fields))
    _check_names_against_schema(spec, schema)
    return spec


def _check_names_against_schema(spec: PartitionSpec, schema: Schema) -> None:
    """A partition name may equal a column name only for identity on that very column."""
    for f in spec.fields:
        try:
            col = schema.find_field(f.name)
        except InvalidSchemaError:
            continue
        same_column = col.field_id == f.source_id
        if not (isinstance(f.transform, IdentityTransform | VoidTransform) and same_column):
            raise ValidationError(
                f"Cannot create partition field {f.name!r}: it conflicts with a schema column"
            )


def partition_spec_to_json(spec: PartitionSpec) -> dict[str, Any]:
    return {
        "spec-id": spec.spec_id,
        "fields": [partition_field_to_json(f) for f in spec.fields],
    }


def partition_field_to_json(f: PartitionField) -> dict[str, Any]:
    return {
        "name": f.name,
        "transform": str(f.transform),
        "source-id": f.source_id,
        "field-id": f.field_id,
    }


def partition_spec_from_json(obj: Any, *, legacy_next_id: int | None = None) -> PartitionSpec:
    """Parse a spec object, or a bare v1 field list when ``legacy_next_id`` is given."""
    if isinstance(obj, list):
        spec_id, fields_json = INITIAL_SPEC_ID, obj
    elif isinstance(obj, dict) and isinstance(obj.get("fields"), list):
        spec_id, fields_json = obj.get("spec-id", INITIAL_SPEC_ID), obj["fields"]
        if not _is_int32(spec_id):
            raise ValidationError(f"Cannot parse partition spec id from json: {spec_id!r}")
    else:
        raise ValidationError(f"Cannot parse partition spec from json: {obj!r}"[:300])
    fields = []
    next_id = PARTITION_DATA_ID_START if legacy_next_id is None else legacy_next_id
    for fj in fields_json:
        if not isinstance(fj, dict) or not {"source-id", "transform", "name"} <= fj.keys():
            raise ValidationError(f"Cannot parse partition field from json: {fj!r}")
        field_id = fj.get("field-id")
        if field_id is None:
            field_id = next_id
        if not all(_is_int32(v) for v in (fj["source-id"], field_id)) or not isinstance(
            fj["name"], str
        ):
            raise ValidationError(f"Cannot parse partition field from json: {fj!r}")
        next_id = field_id + 1
        transform = parse_transform(fj["transform"], allow_unknown=True)
        fields.append(PartitionField(fj["source-id"], field_id, transform, fj["name"]))
    return PartitionSpec(spec_id, tuple(fields))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_int32(value: Any) -> bool:
    """An id of the spec's JSON: a 32-bit int, as Java reads it."""
    return _is_int(value) and -(2**31) <= value < 2**31
