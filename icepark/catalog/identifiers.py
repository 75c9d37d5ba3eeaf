"""Table and namespace identifiers as the catalogs take them, and the schema a user hands to
``create_table`` (an icepark or a pyarrow schema)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from icepark.errors import ValidationError
from icepark.spec.schema import Schema

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Identifier",
    "Properties",
    "to_identifier",
    "namespace_of",
    "table_name_of",
    "schema_from_user",
]

Identifier = tuple[str, ...]
Properties = dict[str, str]


def to_identifier(name: str | Sequence[str]) -> Identifier:
    """A table or namespace identifier as a tuple of its parts: ``"db.t"`` or
    ``("db", "t")`` gives ``("db", "t")``. A string is split at every dot; give a tuple
    for parts that contain dots.

    Args:
        name: a dotted name or a sequence of parts.

    Returns:
        The parts, as a tuple.

    Raises:
        ValidationError: an empty name or an empty part (``"db..t"``), naming it.
    """
    parts = tuple(name.split(".")) if isinstance(name, str) else tuple(name)
    if not parts or any(not p for p in parts):
        raise ValidationError(f"Invalid identifier: {name!r}")
    return parts


def namespace_of(identifier: Identifier) -> Identifier:
    if len(identifier) < 2:
        raise ValidationError(f"Table identifier needs a namespace: {'.'.join(identifier)!r}")
    return identifier[:-1]


def table_name_of(identifier: Identifier) -> str:
    return identifier[-1]


def schema_from_user(schema: Schema | pa.Schema) -> Schema:
    """An icepark schema from an icepark or pyarrow schema (fresh ids where it has none)."""
    if isinstance(schema, Schema):
        return schema
    import pyarrow as pa  # a pyarrow schema means pyarrow is loaded already

    from icepark.arrow.schema import arrow_to_schema

    if isinstance(schema, pa.Schema):
        return arrow_to_schema(schema, assign_ids=True)
    raise ValidationError(
        f"Expected an icepark Schema or a pyarrow Schema, got {type(schema).__name__}"
    )
