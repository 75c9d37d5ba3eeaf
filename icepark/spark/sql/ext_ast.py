"""The statements of Iceberg's SQL extensions and Spark's ``ALTER TABLE``, as frozen values.

:func:`icepark.spark.sql.extensions.parse_extension` produces them and
:func:`icepark.spark.sql.extensions.run_extension` runs them. Names are tuples of their
unquoted parts (``db.t`` and `` `db`.`t` `` are both ``("db", "t")``); a column path is a
tuple too (``a.b`` is ``("a", "b")``); a Spark type is kept as its SQL text (``struct<x:
int>``) and converted when the statement runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Name",
    "ExtensionStatement",
    "TableStatement",
    "Term",
    "SortTerm",
    "Position",
    "ColumnSpec",
    "TypedLiteral",
    "CallArgument",
    "AddColumns",
    "DropColumns",
    "RenameColumn",
    "AlterColumn",
    "SetProperties",
    "UnsetProperties",
    "RenameTable",
    "AddPartitionField",
    "DropPartitionField",
    "ReplacePartitionField",
    "SetWriteOrder",
    "SetIdentifierFields",
    "DropIdentifierFields",
    "CreateOrReplaceRef",
    "DropRef",
    "Call",
    "quote_name",
]

Name = tuple[str, ...]

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote_name(name: Name) -> str:
    """``("db", "t")`` -> ``db.t`` (parts with other than word characters back-quoted)."""
    return ".".join(p if _PLAIN.fullmatch(p) else "`" + p.replace("`", "``") + "`" for p in name)


@dataclass(frozen=True, kw_only=True)
class ExtensionStatement:
    """A parsed ``ALTER TABLE`` or ``CALL`` statement (:func:`parse_extension` makes one;
    its subclasses in this module are the forms).

    Args:
        sql: the statement's text.
    """

    sql: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class TableStatement(ExtensionStatement):
    """An ``ALTER TABLE`` statement on ``table``."""

    table: Name


@dataclass(frozen=True)
class Term:
    """A partition or sort term: ``transform`` is ``identity``, ``bucket``, ``truncate``,
    ``years`` ... as written (lower case); ``width`` is a bucket count or truncate width."""

    transform: str
    column: Name
    width: int | None = None

    def text(self) -> str:
        """The term as icepark's term parser reads it (``bucket(16, a.b)``, ``day(ts)``)."""
        column = ".".join(self.column)
        if self.transform == "identity":
            return column
        name = "hour" if self.transform == "date_hour" else self.transform
        return f"{name}({self.width}, {column})" if self.width is not None else f"{name}({column})"


@dataclass(frozen=True)
class SortTerm:
    term: Term
    descending: bool = False
    nulls_first: bool = True

    def text(self) -> str:
        direction = "desc" if self.descending else "asc"
        return f"{self.term.text()} {direction} nulls {'first' if self.nulls_first else 'last'}"


@dataclass(frozen=True)
class Position:
    """``FIRST`` (``after`` is None) or ``AFTER after``."""

    after: Name | None = None


@dataclass(frozen=True)
class ColumnSpec:
    """A column of ``ADD COLUMNS``: ``path`` (``a.b`` adds ``b`` inside struct ``a``)."""

    path: Name
    type_sql: str
    not_null: bool = False
    comment: str | None = None
    position: Position | None = None


@dataclass(frozen=True)
class TypedLiteral:
    """A typed constant such as ``TIMESTAMP '2024-01-01 00:00:00'``."""

    type_name: str
    value: str


@dataclass(frozen=True)
class CallArgument:
    """One argument of ``CALL``; ``name`` is None for a positional one. ``value`` is an int,
    float, bool, str, :class:`TypedLiteral`, a tuple of pairs (``map(...)``) or a list
    (``array(...)``); ``line``/``column`` locate it for errors."""

    name: str | None
    value: Any
    line: int = 1
    column: int = 1


@dataclass(frozen=True, kw_only=True)
class AddColumns(TableStatement):
    columns: tuple[ColumnSpec, ...]


@dataclass(frozen=True, kw_only=True)
class DropColumns(TableStatement):
    columns: tuple[Name, ...]
    if_exists: bool = False


@dataclass(frozen=True, kw_only=True)
class RenameColumn(TableStatement):
    column: Name
    new_name: str


@dataclass(frozen=True, kw_only=True)
class AlterColumn(TableStatement):
    """``ALTER COLUMN``: one of a new type, a comment, a position, or dropping NOT NULL."""

    column: Name
    type_sql: str | None = None
    comment: str | None = None
    position: Position | None = None
    drop_not_null: bool = False


@dataclass(frozen=True, kw_only=True)
class SetProperties(TableStatement):
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True, kw_only=True)
class UnsetProperties(TableStatement):
    keys: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True, kw_only=True)
class RenameTable(TableStatement):
    new_name: Name


@dataclass(frozen=True, kw_only=True)
class AddPartitionField(TableStatement):
    term: Term
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class DropPartitionField(TableStatement):
    term: Term


@dataclass(frozen=True, kw_only=True)
class ReplacePartitionField(TableStatement):
    old: Term
    new: Term
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class SetWriteOrder(TableStatement):
    """``WRITE ...``: ``distribution`` is the ``write.distribution-mode`` Java sets (``hash``,
    ``range``, ``none``) or None to leave it; ``order`` replaces the sort order."""

    distribution: str | None
    order: tuple[SortTerm, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SetIdentifierFields(TableStatement):
    fields: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class DropIdentifierFields(TableStatement):
    fields: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class CreateOrReplaceRef(TableStatement):
    """``CREATE [OR REPLACE] BRANCH|TAG`` or ``REPLACE BRANCH|TAG``; ``kind`` is ``branch``
    or ``tag``; retention in Java's units (milliseconds, snapshot count)."""

    kind: str
    name: str
    create: bool
    replace: bool
    if_not_exists: bool = False
    snapshot_id: int | None = None
    max_ref_age_ms: int | None = None
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None


@dataclass(frozen=True, kw_only=True)
class DropRef(TableStatement):
    kind: str
    name: str
    if_exists: bool = False


@dataclass(frozen=True, kw_only=True)
class Call(ExtensionStatement):
    """``CALL [catalog.]system.<procedure>(args)``; ``procedure`` is its full name as written."""

    procedure: Name
    arguments: tuple[CallArgument, ...] = ()
