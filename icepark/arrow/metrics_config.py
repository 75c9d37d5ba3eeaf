"""Metrics modes of a table's columns, resolved from table properties as Java (1.10) does.

:meth:`MetricsConfig.from_properties` follows Java's ``MetricsConfig.forTable``:

* ``write.metadata.metrics.default`` sets the default mode (``none``, ``counts``,
  ``truncate(N)`` or ``full``; an invalid value falls back to ``truncate(16)``);
* without it the default is ``truncate(16)``, unless the schema has more primitive columns than
  ``write.metadata.metrics.max-inferred-column-defaults`` (100): then only the first 100 (a
  struct's own columns first, then nested ones, see :func:`_limit_field_ids`) get
  ``truncate(16)`` and every other column ``none``;
* columns of the sort order whose transform preserves order (identity, truncate, year, month,
  day, hour) get at least ``truncate(16)`` (the default mode when it keeps bounds);
* ``write.metadata.metrics.column.<full column name>`` overrides any of these (an invalid
  value falls back to the default mode, with a warning, as in Java).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icepark.errors import ValidationError
from icepark.spec import properties as P
from icepark.spec.schema import Schema
from icepark.spec.sorting import SortOrder
from icepark.spec.types import (
    BinaryType,
    IcebergType,
    ListType,
    MapType,
    PrimitiveType,
    StringType,
    StructType,
)

__all__ = [
    "MetricsMode",
    "parse_metrics_mode",
    "MetricsConfig",
    "truncate_binary_max",
    "truncate_binary_min",
    "truncate_bounds",
    "truncate_string_max",
    "truncate_string_min",
]

_LOG = logging.getLogger(__name__)


# -- modes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricsMode:
    """``none``, ``counts``, ``truncate(length)`` or ``full``."""

    kind: str
    length: int = 0

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind

    @property
    def has_counts(self) -> bool:
        return self.kind != "none"

    @property
    def has_bounds(self) -> bool:
        return self.kind in ("truncate", "full")

    @staticmethod
    def none() -> MetricsMode:
        return _NONE

    @staticmethod
    def counts() -> MetricsMode:
        return _COUNTS

    @staticmethod
    def full() -> MetricsMode:
        return _FULL

    @staticmethod
    def truncate(length: int) -> MetricsMode:
        if length <= 0:
            raise ValidationError(f"Truncate length should be positive: {length}")
        return MetricsMode("truncate", length)


_NONE = MetricsMode("none")
_COUNTS = MetricsMode("counts")
_FULL = MetricsMode("full")
_DEFAULT_MODE = MetricsMode("truncate", 16)
_TRUNCATE = re.compile(r"truncate\((\d+)\)")


def parse_metrics_mode(text: str) -> MetricsMode:
    """``none``, ``counts``, ``full`` (any case) or ``truncate(N)`` with N > 0."""
    lowered = text.lower()
    if lowered in ("none", "counts", "full"):
        return MetricsMode(lowered)
    m = _TRUNCATE.fullmatch(lowered)
    if m:
        return MetricsMode.truncate(int(m.group(1)))
    raise ValidationError(f"Invalid metrics mode: {text}")


def _parse_mode_or(text: str, fallback: MetricsMode, context: str) -> MetricsMode:
    try:
        return parse_metrics_mode(text)
    except ValidationError:
        _LOG.warning("Ignoring invalid metrics mode (%s): %s", context, text)
        return fallback


# -- config ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricsConfig:
    """The metrics mode of each column: ``column_modes`` by full column name, else ``default``.

    ``schema`` (optional) resolves field ids for :meth:`mode_for`.
    """

    column_modes: Mapping[str, MetricsMode] = field(default_factory=dict)
    default_mode: MetricsMode = _DEFAULT_MODE
    schema: Schema | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_properties(
        cls,
        properties: Mapping[str, str],
        schema: Schema | None = None,
        sort_order: SortOrder | None = None,
    ) -> MetricsConfig:
        """The config Java's ``MetricsConfig.forTable`` builds from table properties."""
        limit = _max_inferred(properties)
        modes: dict[str, MetricsMode] = {}
        configured = P.DEFAULT_WRITE_METRICS_MODE.raw(properties)
        if configured is not None:
            default = _parse_mode_or(configured, _DEFAULT_MODE, "default")
        elif schema is None or _count_primitives(schema.as_struct()) <= limit:
            default = _DEFAULT_MODE
        else:
            for field_id in _limit_field_ids(schema.as_struct(), limit):
                name = schema.find_column_name(field_id)
                if name is not None:
                    modes[name] = _DEFAULT_MODE
            default = _NONE
        if sort_order is not None and schema is not None:
            sorted_mode = _DEFAULT_MODE if default.kind in ("none", "counts") else default
            for sort_field in sort_order.fields:
                if sort_field.transform.preserves_order:
                    name = schema.find_column_name(sort_field.source_id)
                    if name is not None:
                        modes[name] = sorted_mode
        for key, value in properties.items():
            if key.startswith(P.METRICS_MODE_COLUMN_CONF_PREFIX):
                alias = key[len(P.METRICS_MODE_COLUMN_CONF_PREFIX) :]
                modes[alias] = _parse_mode_or(value, default, f"column {alias}")
        return cls(modes, default, schema)

    def column_mode(self, name: str | None) -> MetricsMode:
        """The mode of the column with this full name (``a.b``, ``l.element``, ``m.key``)."""
        if name is None:
            return self.default_mode
        return self.column_modes.get(name, self.default_mode)

    def mode_for(self, field_id: int, schema: Schema | None = None) -> MetricsMode:
        """The mode of the field with this id (its name looked up in ``schema``)."""
        schema = schema if schema is not None else self.schema
        if schema is None:
            raise ValidationError("Cannot resolve a metrics mode by field id without a schema")
        return self.column_mode(schema.find_column_name(field_id))


def _max_inferred(properties: Mapping[str, str]) -> int:
    value = P.METRICS_MAX_INFERRED_COLUMN_DEFAULTS.get(properties)
    return P.METRICS_MAX_INFERRED_COLUMN_DEFAULTS.default if value < 0 else value


def _count_primitives(t: IcebergType) -> int:
    if isinstance(t, PrimitiveType):
        return 1
    if isinstance(t, StructType):
        return sum(_count_primitives(f.field_type) for f in t.fields)
    if isinstance(t, ListType):
        return _count_primitives(t.element_type)
    if isinstance(t, MapType):
        return _count_primitives(t.key_type) + _count_primitives(t.value_type)
    return 0


def _limit_field_ids(struct: StructType, limit: int) -> list[int]:
    """The first ``limit`` primitive field ids in Java's order: a struct's own primitive fields
    first, then those nested in its fields, in field order (list elements, map keys and
    values before what is nested in them)."""
    ids: list[int] = []

    def room() -> bool:
        return len(ids) < limit

    def visit(t: IcebergType) -> None:
        if isinstance(t, StructType):
            for f in t.fields:
                if not room():
                    break
                if isinstance(f.field_type, PrimitiveType):
                    ids.append(f.field_id)
            for f in t.fields:
                if not room():
                    break
                visit(f.field_type)
        elif isinstance(t, ListType):
            if room() and isinstance(t.element_type, PrimitiveType):
                ids.append(t.element_id)
            visit(t.element_type)
        elif isinstance(t, MapType):
            if room() and isinstance(t.key_type, PrimitiveType):
                ids.append(t.key_id)
            if room() and isinstance(t.value_type, PrimitiveType):
                ids.append(t.value_id)
            visit(t.key_type)
            visit(t.value_type)

    visit(struct)
    return ids


# -- truncation (Java's UnicodeUtil / BinaryUtil) -----------------------------------------------


def truncate_string_min(value: str, length: int) -> str:
    """The first ``length`` code points: a lower bound of every string with that prefix."""
    return value[:length]


def _increment_code_point(cp: int) -> int | None:
    if cp == 0xD7FF:
        return 0xE000  # skip the surrogate range
    if cp >= 0x10FFFF:
        return None
    return cp + 1


def truncate_string_max(value: str, length: int) -> str | None:
    """An upper bound of at most ``length`` code points (the prefix with its last code point
    that can be incremented incremented), the value itself when short enough, or None."""
    if len(value) <= length:
        return value
    for i in range(length - 1, -1, -1):
        nxt = _increment_code_point(ord(value[i]))
        if nxt is not None:
            return value[:i] + chr(nxt)
    return None


def truncate_binary_min(value: bytes, length: int) -> bytes:
    """The first ``length`` bytes."""
    return value[:length]


def truncate_binary_max(value: bytes, length: int) -> bytes | None:
    """An upper bound of at most ``length`` bytes, the value itself when short enough, or
    None when every byte of the prefix is 0xff."""
    if len(value) <= length:
        return value
    for i in range(length - 1, -1, -1):
        if value[i] != 0xFF:
            return value[:i] + bytes([value[i] + 1])
    return None


def truncate_bounds(t: PrimitiveType, mode: MetricsMode, lower: Any, upper: Any) -> tuple[Any, Any]:
    """The bounds kept by ``mode``: strings and binary truncated in ``truncate(N)`` mode (the
    upper bound may become None), other values as they are."""
    if mode.kind != "truncate":
        return lower, upper
    if isinstance(t, StringType):
        return truncate_string_min(lower, mode.length), truncate_string_max(upper, mode.length)
    if isinstance(t, BinaryType):
        return truncate_binary_min(lower, mode.length), truncate_binary_max(upper, mode.length)
    return lower, upper
