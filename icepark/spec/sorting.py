"""Sort orders: fields with transform, direction and null order."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from icepark.errors import InvalidSchemaError, InvalidTransformError, ValidationError
from icepark.spec.partitioning import parse_term
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform, parse_transform

__all__ = [
    "SortDirection",
    "NullOrder",
    "SortField",
    "SortOrder",
    "UNSORTED_ORDER",
    "UNSORTED_ORDER_ID",
    "build_sort_order",
    "sort_order_from_json",
    "sort_order_to_json",
]

UNSORTED_ORDER_ID = 0


class SortDirection(enum.Enum):
    ASC = "asc"
    DESC = "desc"


class NullOrder(enum.Enum):
    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"


@dataclass(frozen=True)
class SortField:
    source_id: int
    transform: Transform
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder = NullOrder.NULLS_FIRST

    def __str__(self) -> str:
        return f"{self.transform}({self.source_id}) {self.direction.value} {self.null_order.value}"


@dataclass(frozen=True)
class SortOrder:
    order_id: int = UNSORTED_ORDER_ID
    fields: tuple[SortField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        if self.order_id == UNSORTED_ORDER_ID and self.fields:
            raise ValidationError("Sort order id 0 is reserved for the unsorted order")
        if self.order_id != UNSORTED_ORDER_ID and not self.fields:
            raise ValidationError(f"Unsorted order must have id 0, not {self.order_id}")

    @property
    def is_unsorted(self) -> bool:
        return not self.fields

    def same_order(self, other: SortOrder) -> bool:
        return self.fields == other.fields

    def validate(self, schema: Schema) -> None:
        for f in self.fields:
            source = schema.field_or_none(f.source_id)
            if source is None:
                raise ValidationError(f"Cannot find source column for sort field: id {f.source_id}")
            if not source.field_type.is_primitive:
                raise ValidationError(f"Cannot sort by non-primitive column {source.name!r}")
            if not f.transform.can_transform(source.field_type):
                raise InvalidTransformError(
                    f"Invalid source type {source.field_type} for transform {f.transform} "
                    f"(sort field on column {source.name!r})"
                )

    def __str__(self) -> str:
        return "[" + ", ".join(str(f) for f in self.fields) + "]"


UNSORTED_ORDER = SortOrder(UNSORTED_ORDER_ID, ())

_SORT_TERM = re.compile(
    r"^(?P<term>.+?)(?:\s+(?P<dir>asc|desc))?(?:\s+nulls\s+(?P<nulls>first|last))?\s*$", re.I
)


def build_sort_order(
    schema: Schema, terms: Iterable[str], order_id: int = 1, case_sensitive: bool = True
) -> SortOrder:
    """Build a sort order from terms like ``"id"``, ``"ts desc nulls last"``, ``"bucket(4, id)"``.

    As in Java and SQL, ascending defaults to nulls first and descending to nulls last.
    """
    fields = []
    for text in terms:
        m = _SORT_TERM.match(text.strip())
        if not m:
            raise ValidationError(f"Cannot parse sort term: {text!r}")
        transform, column = parse_term(m.group("term"))
        try:
            source = schema.find_field(column, case_sensitive)
        except InvalidSchemaError as exc:
            raise ValidationError(f"Cannot sort by {text!r}: no column {column!r}") from exc
        direction = SortDirection(m.group("dir").lower()) if m.group("dir") else SortDirection.ASC
        if m.group("nulls"):
            null_order = NullOrder(f"nulls-{m.group('nulls').lower()}")
        else:
            ascending = direction is SortDirection.ASC
            null_order = NullOrder.NULLS_FIRST if ascending else NullOrder.NULLS_LAST
        fields.append(SortField(source.field_id, transform, direction, null_order))
    if not fields:
        return UNSORTED_ORDER
    order = SortOrder(order_id, tuple(fields))
    order.validate(schema)
    return order


def sort_order_to_json(order: SortOrder) -> dict[str, Any]:
    return {
        "order-id": order.order_id,
        "fields": [
            {
                "transform": str(f.transform),
                "source-id": f.source_id,
                "direction": f.direction.value,
                "null-order": f.null_order.value,
            }
            for f in order.fields
        ],
    }


def sort_order_from_json(obj: Any) -> SortOrder:
    if not isinstance(obj, dict) or not isinstance(obj.get("fields"), list):
        raise ValidationError(f"Cannot parse sort order from json: {obj!r}"[:300])
    if "order-id" not in obj:
        raise ValidationError(f"Cannot parse sort order from json: {obj!r}"[:300])
    fields = []
    if not isinstance(obj["order-id"], int) or isinstance(obj["order-id"], bool):
        raise ValidationError(f"Cannot parse sort order id from json: {obj['order-id']!r}")
    for fj in obj["fields"]:
        try:
            if not isinstance(fj["source-id"], int) or isinstance(fj["source-id"], bool):
                raise TypeError("source-id must be an integer")
            fields.append(
                SortField(
                    source_id=fj["source-id"],
                    transform=parse_transform(fj["transform"], allow_unknown=True),
                    direction=SortDirection(fj["direction"].lower()),
                    null_order=NullOrder(fj["null-order"].lower()),
                )
            )
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            if isinstance(exc, InvalidTransformError):
                raise
            raise ValidationError(f"Cannot parse sort field from json: {fj!r}") from exc
    return SortOrder(obj["order-id"], tuple(fields))
