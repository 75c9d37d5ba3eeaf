"""The ``WHEN`` clauses of ``MERGE INTO`` as values: what
:func:`icepark.spark.write.row_level.merge` takes as ``clauses`` (the SQL front end builds them
from every clause form, ``WHEN NOT MATCHED BY SOURCE`` included)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column

__all__ = [
    "ACTIONS",
    "Assignments",
    "MergeAction",
    "MergeClause",
    "MergeMatch",
    "legacy_clauses",
]

#: column name -> a Spark SQL expression (a string) or a Column
Assignments = Mapping[str, str | Column]

MergeMatch = Literal["matched", "not_matched", "not_matched_by_source"]
MergeAction = Literal["update", "delete", "insert"]
ACTIONS: dict[str, tuple[str, ...]] = {
    "matched": ("update", "delete"),
    "not_matched": ("insert",),
    "not_matched_by_source": ("update", "delete"),
}


@dataclass(frozen=True)
class MergeClause:
    """One ``WHEN`` clause of ``MERGE INTO``: ``match`` says which rows it is for (target
    rows matched by a source row, source rows matching no target row, target rows matched by
    no source row), ``action`` what it does, ``condition`` (over ``t`` and ``s``; None: any
    row) narrows it, ``values`` are an update's or insert's assignments (a mapping of column
    -> expression, or ``"*"``). A row is changed by the first clause whose match and
    condition apply, as in SQL."""

    match: MergeMatch
    action: MergeAction
    condition: str | Column | None = None
    values: Assignments | str | None = None


def legacy_clauses(
    when_matched_update: Assignments | str | None,
    when_matched_delete: bool | str | Column | None,
    when_not_matched_insert: Assignments | str | None,
) -> list[MergeClause]:
    """The clauses ``merge``'s ``when_*`` arguments stand for (delete before update)."""
    out: list[MergeClause] = []
    if when_matched_delete is not None and when_matched_delete is not False:
        cond = None if when_matched_delete is True else when_matched_delete
        out.append(MergeClause("matched", "delete", cond))
    if when_matched_update is not None:
        out.append(MergeClause("matched", "update", None, when_matched_update))
    if when_not_matched_insert:
        out.append(MergeClause("not_matched", "insert", None, when_not_matched_insert))
    return out
