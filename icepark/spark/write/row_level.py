"""Row-level changes from Spark: ``delete``, ``update`` and ``merge`` (MERGE INTO).

The driver plans with icepark, Spark reads the candidate files (with the deletes that
already apply to them, and each row's ``_file`` and ``_pos``), finds the rows that change and
writes the new data files on the executors; the driver writes the delete files and commits
one snapshot. The table property ``write.delete.mode`` / ``write.update.mode`` /
``write.merge.mode`` chooses how rows are removed:

* ``copy-on-write`` (the default, as in Java): every data file holding a changed row is
  rewritten without it (its other rows kept) and replaced in the snapshot;
* ``merge-on-read``: the changed rows' positions are deleted, on v2 with one position delete
  file per partition, on v3 with one deletion vector per data file (merged with the one it
  had, which is replaced); updated and inserted rows go to new data files.

A ``delete`` whose condition covers whole files (by partition values or column metrics) drops
them from metadata without reading them. Conditions are icepark filter strings
(``"day >= '2024-01-05' and category = 'a'"``), icepark expressions, or anything Spark SQL
can evaluate (a ``Column``, or a string icepark cannot parse, such as
``"lower(name) = 'x'"``), or a :class:`RowsWhere` (a query over the rows, for subqueries);
only the first two prune files. Nulls follow SQL: a row whose condition is null (unknown) is
not changed.

With ``wap_id`` (and ``write.wap.enabled=true``) the change's snapshot is staged, not made
current (:mod:`icepark.table.update.wap`), as Java stages it under ``spark.wap.id``.

Concurrent commits are checked as :mod:`icepark.table.write.row_delta` says, per
``write.<operation>.isolation-level`` (``serializable`` by default, or ``snapshot``): a
commit that removed or added deletes to a file this change touched fails it; under
``serializable`` so does one that added data that may match the condition (for ``merge`` on
key columns: data within the source's key range; on any other condition: any data). Other
concurrent commits are retried through.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from icepark.errors import ValidationError
from icepark.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
    and_,
    bind,
    col,
    parse_filter,
)
from icepark.planning.planner import FileScanTask, plan_files
from icepark.spark.filters import quote_column, to_spark_column
from icepark.spark.paths import spark_reported_path
from icepark.spark.read.reader import read_resolved, resolve_path
from icepark.spark.runtime import spark_summary
from icepark.spark.tables import resolve_table
from icepark.spark.write.merge_clauses import ACTIONS, Assignments, MergeClause, legacy_clauses
from icepark.spark.write.writer import write_files
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.spec.types import DateType, DecimalType, IntegerType, LongType, StringType
from icepark.table import Table
from icepark.table.scan import DataScan
from icepark.table.update.wap import staged, with_wap_id
from icepark.table.write.changes import isolation_level, row_level_mode
from icepark.table.write.row_delta import COPY_ON_WRITE, RowLevelAction, RowLevelChange

__all__ = ["delete", "update", "merge", "MergeClause", "Condition", "Assignments", "RowsWhere"]


@dataclass(frozen=True)
class RowsWhere:
    """A condition Spark evaluates as a query over the table's rows, for what a ``Column``
    cannot hold (SQL's ``WHERE x < (SELECT ...)``, ``EXISTS (SELECT ... WHERE t.k = k)``):
    ``select(rows)`` returns the rows of ``rows`` (every column kept) for which it is true.
    Planning reads every file then (nothing is pruned by it)."""

    select: Callable[[DataFrame], DataFrame]


Condition = str | BooleanExpression | Column | RowsWhere

_FILE, _POS = "_file", "_pos"
_SOURCE_ROW = "__icepark_source_row__"
_ACTION = "__icepark_action__"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# -- shared ------------------------------------------------------------------------------------


@dataclass
class _Target:
    """A table at the head of a branch, and how to read its candidate files."""

    table: Table
    metadata: TableMetadata
    branch: str
    operation: str
    case_sensitive: bool
    path: Literal["native", "python"] | None = None

    @property
    def schema(self) -> Schema:
        return self.metadata.schema()

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.schema.fields]

    def head_id(self) -> int | None:
        head = self.metadata.branch_head(self.branch)
        return head.snapshot_id if head else None

    def plan(self, prune: BooleanExpression) -> list[FileScanTask]:
        head = self.metadata.branch_head(self.branch)
        return plan_files(
            self.table.io, self.metadata, head, prune, self.schema, self.case_sensitive
        )

    def read(self, spark: SparkSession, tasks: Sequence[FileScanTask]) -> DataFrame:
        """The live rows of the tasks' files (all of them: residuals are dropped), with
        ``_file`` and ``_pos``."""
        scan = DataScan(
            self.table.io,
            self.metadata,
            AlwaysTrue(),
            (*self.columns, _FILE, _POS),
            ref=self.branch if self.branch in self.metadata.refs else None,
            case_sensitive=self.case_sensitive,
            use_snapshot_schema=False,
        )
        whole = [replace(t, residual=AlwaysTrue()) for t in tasks]
        # one path for every read of this change, so that ``_file`` has one form
        self.path, deleted = resolve_path(scan, whole, self.path or "auto", spark=spark)
        return read_resolved(spark, scan, whole, self.path, deleted, spark_file_paths=True)

    def commit(
        self,
        change: RowLevelChange,
        conflict_filter: BooleanExpression,
        snapshot_properties: Mapping[str, str] | None,
        wap_id: str | None = None,
    ) -> Table:
        if change.is_empty:
            return self.table
        props = with_wap_id(self.metadata, snapshot_properties, wap_id, self.table.name)
        action = RowLevelAction(
            self.table.io,
            change,
            conflict_filter,
            self.branch,
            isolation_level(self.metadata, self.operation),
            self.operation,
            self.case_sensitive,
            props,
        )
        tx = self.table.transaction()
        try:
            tx.add_action(staged(action, wap_id))
        except BaseException:
            change.discard(self.table.io)
            raise
        tx.commit_transaction()  # a definite failure deletes the files; unknown keeps them
        return self.table


def _target(
    table: Table | str, catalog: Any, branch: str, operation: str, case_sensitive: bool
) -> _Target:
    resolved = resolve_table(table, catalog)
    return _Target(resolved, resolved.metadata, branch, operation, case_sensitive)


def _condition(
    where: Condition | None, schema: Schema, case_sensitive: bool
) -> tuple[BooleanExpression, Column | RowsWhere, bool]:
    """(filter for planning, Spark condition for rows, whether the two are the same)."""
    if where is None:
        return AlwaysTrue(), F.lit(True), True
    if isinstance(where, Column | RowsWhere):
        return AlwaysTrue(), where, False
    expr: BooleanExpression
    if isinstance(where, str):
        try:
            expr = parse_filter(where)
            bind(schema, expr, case_sensitive)
        except ValidationError:
            return AlwaysTrue(), F.expr(where), False
    else:
        expr = where
    spark_column = to_spark_column(expr, schema, case_sensitive)
    return expr, spark_column if spark_column is not None else F.lit(True), True


def _is_true(condition: Column) -> Column:
    """True where the condition is true; false where it is false or null (SQL)."""
    return F.coalesce(condition, F.lit(False))


def _matching(rows: DataFrame, condition: Column | RowsWhere) -> DataFrame:
    """The rows for which the condition is true."""
    if isinstance(condition, RowsWhere):
        return condition.select(rows)
    return rows.filter(_is_true(condition))


def _tasks_by_path(tasks: Sequence[FileScanTask]) -> dict[str, FileScanTask]:
    """Each task by its data file's path, in the table's form and as Spark reports it (the
    native read path gives ``_file`` as Spark reports it)."""
    out: dict[str, FileScanTask] = {}
    for t in tasks:
        out[t.file.file_path] = t
        out.setdefault(spark_reported_path(t.file.file_path), t)
    return out


def _task_positions(
    tasks: Sequence[FileScanTask], positions: pa.Table
) -> list[tuple[FileScanTask, np.ndarray]]:
    """Group (``_file``, ``_pos``) rows by file, with each file's scan task."""
    if not positions.num_rows:
        return []
    by_path = _tasks_by_path(tasks)
    paths = positions.column(_FILE).combine_chunks().dictionary_encode()
    pos = positions.column(_POS).to_numpy().astype(np.int64)
    codes = paths.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(paths.dictionary) + 1))
    out = []
    for i, path in enumerate(paths.dictionary.to_pylist()):
        task = by_path.get(path)
        if task is None:
            raise ValidationError(f"Row-level change found a row of unplanned file {path}")
        out.append((task, np.unique(pos[order[bounds[i] : bounds[i + 1]]])))
    return out


def _apply(
    spark: SparkSession,
    target: _Target,
    change: RowLevelChange,
    tasks: Sequence[FileScanTask],
    changed: DataFrame,
    new_rows: DataFrame | None,
) -> None:
    """Remove the rows of ``changed`` (``_file``, ``_pos``) from the table and add
    ``new_rows``, by the operation's mode; files written are recorded in ``change``."""
    io = target.table.io
    mode = row_level_mode(target.metadata, target.operation)
    try:
        if mode == COPY_ON_WRITE:
            keys = changed.select(_FILE, _POS).localCheckpoint()  # evaluated once
            touched = {r[0] for r in keys.select(_FILE).distinct().collect()}
            by_path = _tasks_by_path(tasks)
            rewrite = list({id(by_path[p]): by_path[p] for p in touched}.values())
            kept = target.read(spark, rewrite).join(keys, [_FILE, _POS], "left_anti")
            out = kept.select(*[F.col(quote_column(c)) for c in target.columns])
            if new_rows is not None:
                out = out.unionByName(new_rows)
            for task in rewrite:
                change.remove_data_file(task)
            if rewrite or new_rows is not None:
                change.added_data.extend(write_files(out, target.table))
            return
        positions = changed.select(_FILE, _POS).toArrow()
        if new_rows is not None:
            change.added_data.extend(write_files(new_rows, target.table))
        change.write_position_deletes(io, target.metadata, _task_positions(tasks, positions))
    except BaseException:
        change.discard(io)
        raise


# -- delete ------------------------------------------------------------------------------------


def delete(
    spark: SparkSession,
    table: Table | str,
    where: Condition | None = None,
    *,
    catalog: Any = None,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    case_sensitive: bool = True,
    wap_id: str | None = None,
) -> Table:
    """Delete the rows matching ``where`` (all rows when None) as one snapshot; see the
    module docstring.

    Args:
        spark: the session.
        table: a Table, or a name looked up in ``catalog``.
        where: an icepark filter (which also prunes files), a Spark SQL condition, a
            Column or a RowsWhere (a query over the rows, e.g. with subqueries).
        catalog: a Catalog, a configured catalog name or a mapping of properties, where
            ``table`` is a name (default: ``icepark.load_catalog()``).
        branch: the branch changed (default ``main``).
        snapshot_properties: extra entries for the new snapshot's summary.
        case_sensitive: whether column names in conditions match case-sensitively.
        wap_id: with ``write.wap.enabled=true``, stage the snapshot under this id.

    Returns:
        The table (unchanged, with no new snapshot, when no row matched).

    Raises:
        ValidationError: a condition or value does not fit the table (naming it).
        CommitFailedError: a concurrent commit conflicts (``write.<op>.isolation-level``);
            the files written for it are deleted.
    """
    target = _target(table, catalog, branch, "delete", case_sensitive)
    prune, condition, exact = _condition(where, target.schema, case_sensitive)
    change = RowLevelChange(target.head_id())
    partial: list[FileScanTask] = []
    for task in target.plan(prune):
        if exact and isinstance(task.residual, AlwaysTrue):
            change.remove_data_file(task)  # every row matches: no need to read it
        else:
            partial.append(task)
    if partial:
        rows = target.read(spark, partial)
        _apply(spark, target, change, partial, _matching(rows, condition), None)
    return target.commit(change, prune, spark_summary(spark, snapshot_properties), wap_id)


# -- update ------------------------------------------------------------------------------------


def _assignments(
    assignments: Assignments, schema: Schema, case_sensitive: bool, what: str
) -> dict[str, Column]:
    """Column name (as in the schema) -> Spark expression."""
    out: dict[str, Column] = {}
    for name, value in assignments.items():
        try:
            column = schema.find_field(name, case_sensitive)
        except ValidationError as e:
            raise ValidationError(f"Cannot {what}: no column {name!r} in the table") from e
        if column.name not in [f.name for f in schema.fields]:
            raise ValidationError(f"Cannot {what}: {name!r} is not a top-level column")
        out[column.name] = F.expr(value) if isinstance(value, str) else value
    return out


def update(
    spark: SparkSession,
    table: Table | str,
    set: Assignments,
    where: Condition | None = None,
    *,
    catalog: Any = None,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    case_sensitive: bool = True,
    wap_id: str | None = None,
) -> Table:
    """``UPDATE table SET col = expr, ... WHERE where`` as one snapshot: ``set`` maps column
    names to Spark SQL expressions (strings, evaluated on the row's current values) or
    Columns; the values are cast to the columns' types. See the module docstring.

    Args:
        spark: the session.
        table: a Table, or a name looked up in ``catalog``.
        set: column name to new value.
        where: the rows updated (all when None): an icepark filter, Spark SQL, a Column or a
            RowsWhere.
        catalog: a Catalog, a configured catalog name or a mapping of properties, where
            ``table`` is a name (default: ``icepark.load_catalog()``).
        branch: the branch changed (default ``main``).
        snapshot_properties: extra entries for the new snapshot's summary.
        case_sensitive: whether column names in conditions match case-sensitively.
        wap_id: with ``write.wap.enabled=true``, stage the snapshot under this id.

    Returns:
        The table with its new metadata.

    Raises:
        ValidationError: a condition or value does not fit the table (naming it).
        CommitFailedError: a concurrent commit conflicts (``write.<op>.isolation-level``);
            the files written for it are deleted.
    """
    if not set:
        raise ValidationError("Cannot update: no column to set")
    target = _target(table, catalog, branch, "update", case_sensitive)
    values = _assignments(set, target.schema, case_sensitive, "update")
    prune, condition, _exact = _condition(where, target.schema, case_sensitive)
    change = RowLevelChange(target.head_id())
    tasks = target.plan(prune)
    if tasks:
        rows = target.read(spark, tasks)
        matched = _matching(rows, condition).select(
            *[values.get(c, F.col(quote_column(c))).alias(c) for c in target.columns],
            _FILE,
            _POS,
        )
        matched = matched.localCheckpoint()  # one evaluation for the deletes and new rows
        new_rows = matched.drop(_FILE, _POS)
        _apply(spark, target, change, tasks, matched, new_rows)
    return target.commit(change, prune, spark_summary(spark, snapshot_properties), wap_id)


# -- merge -------------------------------------------------------------------------------------


def _merge_keys(
    on: str | Sequence[str] | Column, target: _Target, source: DataFrame
) -> list[tuple[str, str]] | None:
    """(target column, source column) pairs when ``on`` names key columns; None when it is
    a condition."""
    if isinstance(on, Column) or (isinstance(on, str) and not _IDENTIFIER.match(on.strip())):
        return None
    keys = [on] if isinstance(on, str) else list(on)
    if not keys:
        raise ValidationError(f"Cannot merge into table {target.table.name}: no key column")
    top = {f.name for f in target.schema.fields}
    by_name = {c if target.case_sensitive else c.lower(): c for c in source.columns}
    pairs = []
    for key in keys:
        try:
            name = target.schema.find_field(key, target.case_sensitive).name
        except ValidationError as e:
            raise ValidationError(
                f"Cannot merge into table {target.table.name}: no column {key!r} in the table"
            ) from e
        if name not in top:
            raise ValidationError(f"Cannot merge: key {key!r} is not a top-level column")
        found = by_name.get(key if target.case_sensitive else key.lower())
        if found is None:
            raise ValidationError(
                f"Cannot merge into table {target.table.name}: the source has no column {key!r}"
            )
        pairs.append((name, found))
    return pairs


def _join_condition(
    on: str | Sequence[str] | Column, pairs: list[tuple[str, str]] | None
) -> Column:
    if pairs is None:
        return on if isinstance(on, Column) else F.expr(str(on))
    terms = [F.col(f"t.{quote_column(t)}") == F.col(f"s.{quote_column(s)}") for t, s in pairs]
    condition = terms[0]
    for term in terms[1:]:
        condition = condition & term
    return condition


_RANGE_TYPES = (IntegerType, LongType, StringType, DateType, DecimalType)


def _key_range(
    pairs: list[tuple[str, str]], target: _Target, source: DataFrame
) -> BooleanExpression:
    """A filter on the target that every row a source row can match passes: each key
    between the source's smallest and largest value (an equality never matches a null).
    Planned with it, the target files outside the source's key range are not read. Only keys
    of types whose order is the same in Spark and icepark (ints, strings, dates, decimals)."""
    usable = [
        (t, s) for t, s in pairs if isinstance(target.schema.find_field(t).field_type, _RANGE_TYPES)
    ]
    if not usable:
        return AlwaysTrue()
    aggregates = [f(F.col(quote_column(s))) for _, s in usable for f in (F.min, F.max)]
    row = source.agg(*aggregates).collect()[0]
    terms: list[BooleanExpression] = []
    for i, (t, _) in enumerate(usable):
        low, high = row[2 * i], row[2 * i + 1]
        if low is None:
            return AlwaysFalse()  # no source key without nulls: no row can match
        terms += [col(t) >= low, col(t) <= high]
    expr = and_(*terms)
    try:
        bind(target.schema, expr, target.case_sensitive)
    except ValidationError:
        return AlwaysTrue()
    return expr


def _star(columns: Sequence[str], source: DataFrame, clause: str) -> dict[str, Column]:
    """``*``: every target column from the source column of the same name."""
    have = {c.lower(): c for c in source.columns}
    missing = [c for c in columns if c.lower() not in have]
    if missing:
        raise ValidationError(f"Cannot merge {clause} *: the source lacks columns {missing}")
    return {c: F.col(f"s.{quote_column(have[c.lower()])}") for c in columns}


def _clause(
    value: Assignments | str | None, target: _Target, source: DataFrame, clause: str
) -> dict[str, Column] | None:
    if value is None:
        return None
    if isinstance(value, str):
        if value.strip() != "*":
            raise ValidationError(f"Cannot merge: {clause} takes a mapping or '*', not {value!r}")
        return _star(target.columns, source, clause)
    return _assignments(value, target.schema, target.case_sensitive, f"merge ({clause})")


def merge(
    spark: SparkSession,
    table: Table | str,
    source: DataFrame,
    on: str | Sequence[str] | Column,
    when_matched_update: Assignments | str | None = None,
    when_matched_delete: bool | str | Column | None = None,
    when_not_matched_insert: Assignments | str | None = None,
    *,
    clauses: Sequence[MergeClause] | None = None,
    catalog: Any = None,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    case_sensitive: bool = True,
    wap_id: str | None = None,
) -> Table:
    """``MERGE INTO table t USING source s ON on`` as one snapshot.

    ``on`` is a column name or list of names (equal in target and source) or a Spark SQL
    condition over ``t`` (the table) and ``s`` (the source), e.g. ``"t.id = s.id and
    t.day = s.day"``. For a target row matched by a source row, ``when_matched_delete`` (True
    or a condition) deletes it, else ``when_matched_update`` sets columns (a mapping of
    column -> expression over ``t`` and ``s``, or ``"*"`` for every column from the source
    column of the same name; other columns keep their value); a matched row is changed by
    the first clause that applies, delete before update. A source row matching no target
    row is inserted by ``when_not_matched_insert`` (a mapping, columns not given are null,
    or ``"*"``). ``clauses`` instead gives every ``WHEN`` clause in order
    (:class:`MergeClause`: several conditional clauses of each kind, and ``WHEN NOT MATCHED
    BY SOURCE`` updates and deletes). As in Iceberg's Spark SQL, a target row matched by
    more than one source row fails the merge (when a matched clause is given) and nothing is
    committed.

    When ``on`` names key columns of int, long, string, date or decimal type and no clause is
    for target rows matched by no source row, the target is planned with the source's key
    range (one small aggregate over the source), so files outside it are not read.

    Args:
        spark: the session.
        table: a Table, or a name looked up in ``catalog``.
        source: the source rows (``s``).
        on: the match condition, as above.
        when_matched_update: ``"*"`` or column -> expression, for matched rows.
        when_matched_delete: True or a condition: delete matched rows.
        when_not_matched_insert: ``"*"`` or column -> expression, for unmatched source rows.
        clauses: every ``WHEN`` clause in order, instead of the three above.
        catalog: a Catalog, a configured catalog name or a mapping of properties, where
            ``table`` is a name (default: ``icepark.load_catalog()``).
        branch: the branch changed (default ``main``).
        snapshot_properties: extra entries for the new snapshot's summary.
        case_sensitive: whether column names in conditions match case-sensitively.
        wap_id: with ``write.wap.enabled=true``, stage the snapshot under this id.

    Returns:
        The table with its new metadata.

    Raises:
        ValidationError: a condition or value does not fit the table (naming it).
        CommitFailedError: a concurrent commit conflicts (``write.<op>.isolation-level``);
            the files written for it are deleted.
    """
    if clauses is None:
        clauses = legacy_clauses(when_matched_update, when_matched_delete, when_not_matched_insert)
    elif when_matched_update is not None or when_matched_delete or when_not_matched_insert:
        raise ValidationError("Cannot merge: give clauses or the when_* arguments, not both")
    if not clauses:
        raise ValidationError("Cannot merge: no WHEN clause given")
    target = _target(table, catalog, branch, "merge", case_sensitive)
    values: list[dict[str, Column] | None] = []
    for i, c in enumerate(clauses):
        if c.action not in ACTIONS.get(c.match, ()):
            raise ValidationError(
                f"Cannot merge into table {target.table.name}: WHEN {c.match} cannot {c.action}"
            )
        name = f"when_{c.match}_{c.action} (clause {i + 1})"
        if c.action == "delete":
            values.append(None)
            continue
        assigned = _clause(c.values, target, source, name)
        if assigned is None:
            raise ValidationError(f"Cannot merge: {name} gives no values")
        if c.action == "insert":
            missing = [
                f.name for f in target.schema.fields if f.required and f.name not in assigned
            ]
            if missing:
                raise ValidationError(
                    f"Cannot merge into table {target.table.name}: {name} gives "
                    f"no value for required columns {missing}"
                )
        values.append(assigned)
    matches = {c.match for c in clauses}
    pairs = _merge_keys(on, target, source)
    change = RowLevelChange(target.head_id())
    by_source = "not_matched_by_source" in matches
    key_range = AlwaysTrue() if pairs is None or by_source else _key_range(pairs, target, source)
    tasks = target.plan(key_range)
    s = source.withColumn(_SOURCE_ROW, F.lit(True)).alias("s")
    t = target.read(spark, tasks).alias("t")
    how = {(False, False): "inner", (True, False): "left", (False, True): "right"}.get(
        ("not_matched" in matches, by_source), "full"
    )
    joined = s.join(t, _join_condition(on, pairs), how)
    has_t = F.col(f"t.{_FILE}").isNotNull()
    has_s = F.col(f"s.{_SOURCE_ROW}").isNotNull()
    scope = {"matched": has_t & has_s, "not_matched": has_s & ~has_t}
    scope["not_matched_by_source"] = has_t & ~has_s
    action: Any = F
    for i, c in enumerate(clauses):
        applies = scope[c.match]
        if c.condition is not None:
            cond = F.expr(c.condition) if isinstance(c.condition, str) else c.condition
            applies = applies & _is_true(cond)
        action = action.when(applies, F.lit(i))
    action_col: Column = action
    removed = [i for i, c in enumerate(clauses) if c.action in ("update", "delete")]
    added = [i for i, c in enumerate(clauses) if c.action in ("update", "insert")]
    columns = []
    for c_name in target.columns:
        value: Any = F
        for i, c in enumerate(clauses):
            assigned = values[i]
            if assigned is None:
                continue
            keep = F.col(f"t.{quote_column(c_name)}") if c.action == "update" else F.lit(None)
            value = value.when(action_col == i, assigned.get(c_name, keep))
        columns.append((F.lit(None) if value is F else value).alias(c_name))
    planned = joined.select(
        F.col(f"t.{_FILE}").alias(_FILE),
        F.col(f"t.{_POS}").alias(_POS),
        action_col.alias(_ACTION),
        *columns,
    ).localCheckpoint()  # one evaluation of the join for the checks, deletes and new rows
    if "matched" in matches:
        _check_cardinality(planned, target)
    changed = planned.filter(F.col(_ACTION).isin(*removed)) if removed else None
    new_rows = planned.filter(F.col(_ACTION).isin(*added)).select(*target.columns)
    if changed is None:
        changed = planned.filter(F.lit(False))
    _apply(spark, target, change, tasks, changed, new_rows if added else None)
    # new data outside the source's key range cannot match: it does not conflict
    return target.commit(change, key_range, spark_summary(spark, snapshot_properties), wap_id)


def _check_cardinality(planned: DataFrame, target: _Target) -> None:
    """Fail when a target row is matched by more than one source row."""
    found = (
        planned.filter(F.col(_FILE).isNotNull())
        .groupBy(_FILE, _POS)
        .count()
        .filter(F.col("count") > 1)
        .limit(1)
        .collect()
    )
    if found:
        path, pos, n = found[0]
        raise ValidationError(
            f"Cannot merge into table {target.table.name}: the target row at position {pos} "
            f"of {path} matches {n} source rows; each target row may match at most one "
            "source row (as in MERGE INTO)"
        )
