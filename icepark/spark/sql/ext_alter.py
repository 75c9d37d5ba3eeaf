"""``ALTER TABLE`` statements run through icepark's table updates, one commit each, as Java's
Spark catalog and SQL extensions run them.

- columns (``ADD/DROP/RENAME/ALTER COLUMN``): one :class:`UpdateSchema` per statement (Java's
  ``Spark3Util.applySchemaChanges``: a nested ``AFTER x`` names a sibling, an added column
  may not be ``NOT NULL``); a Spark type's text goes through Spark's own type parser and
  icepark's Spark-to-Arrow-to-Iceberg conversion (the one ``create_table_from`` uses);
- properties: ``SET/UNSET TBLPROPERTIES`` in one transaction; ``current-snapshot-id`` and
  ``cherry-pick-snapshot-id`` act as in Java's ``SparkCatalog.alterTable``, and the reserved
  ``sort-order`` / ``identifier-fields`` are refused with Java's hint;
- partition fields: one :class:`UpdateSpec` (a replace is remove plus add in one commit);
- ``WRITE ...``: the sort order and ``write.distribution-mode`` in one transaction
  (Java's ``SetWriteDistributionAndOrderingExec``);
- identifier fields, branches and tags: Java's ``*Exec`` classes' rules (``IF EXISTS``,
  ``IF NOT EXISTS``, ``CREATE OR REPLACE``, retention set in the same commit).
"""

from __future__ import annotations

from typing import Any

from icepark.errors import (
    InvalidSchemaError,
    NoSuchTableError,
    UnsupportedOperationError,
    ValidationError,
)
from icepark.spark.sql import ext_ast as A
from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.errors import UnsupportedSqlError
from icepark.spark.sql.identifiers import Resolved, table_identifier
from icepark.spec import properties as P
from icepark.spec.snapshots import SnapshotRefType
from icepark.spec.types import IcebergType
from icepark.spec.updates import UpgradeFormatVersionUpdate
from icepark.table import Table
from icepark.table.transaction import Transaction
from icepark.table.update import manage_snapshots
from icepark.table.update.schema import UpdateSchema
from icepark.table.update.sort_order import ReplaceSortOrder

__all__ = ["run_alter", "spark_sql_type", "case_sensitive", "load_table"]

_RESERVED = ("location", "provider", "owner", "external")
_JAVA_RESERVED = {
    "sort-order": "ALTER TABLE ... WRITE ORDERED BY",
    "identifier-fields": "ALTER TABLE ... SET IDENTIFIER FIELDS",
}


def case_sensitive(spark: Any) -> bool:
    """Spark's ``spark.sql.caseSensitive`` (false by default), which Java's updates follow."""
    return str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"


def spark_sql_type(spark: Any, type_sql: str, statement: str = "") -> IcebergType:
    """The Iceberg type of a Spark SQL type (``bigint``, ``struct<a: int COMMENT 'c'>``), read
    by Spark's parser and converted as CREATE TABLE converts a column
    (:func:`~icepark.spark.types.iceberg_schema_from_spark`)."""
    from pyspark.errors import PySparkException
    from pyspark.sql import types as T
    from pyspark.sql.types import _parse_datatype_string

    from icepark.spark.types import iceberg_schema_from_spark

    del spark  # the active session parses; the argument says one must exist
    try:
        parsed = _parse_datatype_string(type_sql)
        schema = iceberg_schema_from_spark(T.StructType([T.StructField("c", parsed, True)]))
    except (PySparkException, ValueError, TypeError, UnsupportedOperationError) as exc:
        raise UnsupportedSqlError(f"data type {type_sql!r}", statement, str(exc)) from exc
    return schema.as_struct().fields[0].field_type


def load_table(ctx: SqlContext, name: A.Name) -> Table:
    """The icepark table ``name`` names, resolved as every SQL statement resolves it (the
    ``USE`` namespace for a single part); a view, a metadata table, a branch or tag name or a
    table of Spark's catalog is :class:`NoSuchTableError`."""
    table = _resolve(ctx, name).table
    assert table is not None
    return table


def _resolve(ctx: SqlContext, name: A.Name) -> Resolved:
    resolved = ctx.resolve(name, views=False)
    if resolved.kind != "table" or resolved.ref is not None or resolved.table is None:
        raise NoSuchTableError(f"Table does not exist: {'.'.join(name)}")
    return resolved


_SCHEMA_STATEMENTS = (
    A.AddColumns,
    A.DropColumns,
    A.RenameColumn,
    A.AlterColumn,
    A.SetIdentifierFields,
    A.DropIdentifierFields,
)
_SPEC_STATEMENTS = (A.AddPartitionField, A.DropPartitionField, A.ReplacePartitionField)


def run_alter(ctx: SqlContext, statement: A.TableStatement) -> None:
    """Run one ``ALTER TABLE`` statement; nothing is committed when it fails."""
    spark = ctx.spark
    if isinstance(statement, A.RenameTable):
        _rename(ctx, statement)
        return
    table = load_table(ctx, statement.table)
    cs = case_sensitive(spark)
    if isinstance(statement, _SCHEMA_STATEMENTS):
        _schema(spark, table, statement, cs)
    elif isinstance(statement, A.SetProperties | A.UnsetProperties):
        _properties(table, statement)
    elif isinstance(statement, _SPEC_STATEMENTS):
        _spec(table, statement, cs)
    elif isinstance(statement, A.SetWriteOrder):
        _write_order(table, statement, cs)
    elif isinstance(statement, A.CreateOrReplaceRef):
        _create_ref(table, statement)
    elif isinstance(statement, A.DropRef):
        _drop_ref(table, statement)
    else:  # pragma: no cover - every statement class is handled above
        raise UnsupportedSqlError(type(statement).__name__, statement.sql)


# -- schema ----------------------------------------------------------------------------------


def _sibling(column: A.Name, after: A.Name) -> A.Name:
    """Spark's ``AFTER x`` inside a struct names a sibling of the moved column."""
    return column[:-1] + after if len(after) == 1 else after


def _schema(spark: Any, table: Table, statement: A.TableStatement, cs: bool) -> None:
    with UpdateSchema(table, case_sensitive=cs) as update:
        if isinstance(statement, A.AddColumns):
            for spec in statement.columns:
                if spec.not_null:
                    raise ValidationError(
                        f"Incompatible change: cannot add required column: "
                        f"{'.'.join(spec.path)} to table {table.name}"
                    )
                field_type = spark_sql_type(spark, spec.type_sql, statement.sql)
                update.add_column(spec.path, field_type, doc=spec.comment)
                _move(update, spec.path, spec.position)
        elif isinstance(statement, A.DropColumns):
            for column in statement.columns:
                if statement.if_exists and not _has_column(table, column, cs):
                    continue
                update.delete_column(column)
        elif isinstance(statement, A.RenameColumn):
            update.rename_column(statement.column, statement.new_name)
        elif isinstance(statement, A.AlterColumn):
            _alter_column(spark, table, update, statement, cs)
        elif isinstance(statement, A.SetIdentifierFields):
            update.set_identifier_fields(*statement.fields)
        elif isinstance(statement, A.DropIdentifierFields):
            current = list(table.schema().identifier_field_names)
            for name in statement.fields:
                if name not in current:
                    raise ValidationError(
                        f"Cannot complete drop identifier fields operation: field {name} not "
                        f"found (identifier fields of {table.name}: {current})"
                    )
                current.remove(name)
            update.set_identifier_fields(*current)


def _has_column(table: Table, column: A.Name, cs: bool) -> bool:
    try:
        table.schema().find_field_id(".".join(column), cs)
    except InvalidSchemaError:
        return False
    return True


def _move(update: UpdateSchema, column: A.Name, position: A.Position | None) -> None:
    if position is None:
        return
    if position.after is None:
        update.move_first(column)
    else:
        update.move_after(column, _sibling(column, position.after))


def _alter_column(
    spark: Any, table: Table, update: UpdateSchema, statement: A.AlterColumn, cs: bool
) -> None:
    """Each change the statement gives (a Hive-style CHANGE COLUMN may give several); a type
    equal to the column's is no change, as Spark sends none."""
    name = ".".join(statement.column)
    if statement.type_sql is not None:
        field_type = spark_sql_type(spark, statement.type_sql, statement.sql)
        if not field_type.is_primitive:
            raise ValidationError(
                f"Cannot change column {name} to non-primitive type {statement.type_sql}"
            )
        if not _has_column(table, statement.column, cs) or (
            table.schema().find_field(name, cs).field_type != field_type
        ):
            update.update_column(statement.column, field_type=field_type)
    if statement.comment is not None:
        update.update_column(statement.column, doc=statement.comment)
    if statement.drop_not_null:
        update.make_column_optional(statement.column)
    _move(update, statement.column, statement.position)


# -- properties and renames ------------------------------------------------------------------


def _properties(table: Table, statement: A.SetProperties | A.UnsetProperties) -> None:
    keys = (
        [k for k, _ in statement.properties]
        if isinstance(statement, A.SetProperties)
        else list(statement.keys)
    )
    for key in keys:
        if key.lower() in _RESERVED:
            raise UnsupportedSqlError(
                f"reserved table property {key!r}", statement.sql, "Spark reserves it"
            )
        if key in _JAVA_RESERVED:
            raise UnsupportedSqlError(
                f"reserved table property {key!r}", statement.sql, f"use {_JAVA_RESERVED[key]}"
            )
    if isinstance(statement, A.UnsetProperties):
        with Transaction(table) as tx:
            tx.remove_properties(*keys)
        return
    props = dict(statement.properties)
    current = props.pop("current-snapshot-id", None)
    pick = props.pop("cherry-pick-snapshot-id", None)
    if current is not None and pick is not None:
        raise ValidationError(
            f"Cannot set the current snapshot and cherry-pick in one statement on {table.name}"
        )
    for value in (current, pick):  # checked before anything commits
        if value is not None and table.snapshot(_snapshot_id(value, table)) is None:
            raise ValidationError(f"Snapshot not found: {value} in table {table.name}")
    version = props.pop(P.FORMAT_VERSION.name, None)
    if props or version is not None:
        with Transaction(table) as tx:
            if props:
                tx.set_properties(props)
            if version is not None:  # reserved: an upgrade, not a property (as Java)
                tx.update(UpgradeFormatVersionUpdate(_format_version(version, table)))
    if current is not None:
        table.set_current_snapshot(_snapshot_id(current, table))
    if pick is not None:
        table.cherrypick_snapshot(_snapshot_id(pick, table))


def _format_version(value: str, table: Table) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValidationError(f"Invalid format version {value!r} for table {table.name}") from None


def _snapshot_id(value: str, table: Table) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValidationError(f"Invalid snapshot id {value!r} for table {table.name}") from None


def _rename(ctx: SqlContext, statement: A.RenameTable) -> None:
    source = _resolve(ctx, statement.table).parts
    # Spark: an unqualified new name stays in the table's namespace
    target = table_identifier(statement.new_name, ctx.catalog_name, source[:-1])
    if target is None:
        raise UnsupportedSqlError("renaming a table into Spark's session catalog", statement.sql)
    ctx.catalog.rename_table(source, target)


# -- partition spec and write order ----------------------------------------------------------


def _spec(table: Table, statement: A.TableStatement, cs: bool) -> None:
    with table.update_spec(case_sensitive=cs) as update:
        if isinstance(statement, A.AddPartitionField):
            update.add_field(statement.term.text(), name=statement.name)
        elif isinstance(statement, A.DropPartitionField):
            update.remove_field(statement.term.text())
        elif isinstance(statement, A.ReplacePartitionField):
            update.remove_field(statement.old.text())
            update.add_field(statement.new.text(), name=statement.name)


def _write_order(table: Table, statement: A.SetWriteOrder, cs: bool) -> None:
    with Transaction(table) as tx:
        with ReplaceSortOrder(table, case_sensitive=cs, transaction=tx) as order:
            for term in statement.order:
                order.term(term.text())
        if statement.distribution is not None:
            tx.set_properties({P.WRITE_DISTRIBUTION_MODE.name: statement.distribution})


# -- branches and tags -----------------------------------------------------------------------


def _create_ref(table: Table, statement: A.CreateOrReplaceRef) -> None:
    """Java's ``CreateOrReplaceBranchExec`` / ``CreateOrReplaceTagExec``: create when asked
    to (or on ``CREATE OR REPLACE`` of a missing ref), else replace; retention in the same
    commit."""
    current = table.current_snapshot()
    snapshot_id = statement.snapshot_id
    if snapshot_id is None and current is not None:
        snapshot_id = current.snapshot_id
    branch = statement.kind == "branch"
    exists = statement.name in table.refs()
    retention: dict[str, int | None] = {"max_ref_age_ms": statement.max_ref_age_ms}
    if branch:
        retention["min_snapshots_to_keep"] = statement.min_snapshots_to_keep
        retention["max_snapshot_age_ms"] = statement.max_snapshot_age_ms
    given = {k: v for k, v in retention.items() if v is not None}
    no_snapshot = ValidationError(
        f"Cannot complete create or replace {statement.kind} operation on {table.name}, "
        "main has no snapshot"
    )
    if snapshot_id is None and not branch:
        raise no_snapshot
    if statement.replace and not (statement.create and not exists):
        if snapshot_id is None:
            raise no_snapshot
        if branch:
            manage_snapshots.replace_branch(table, statement.name, snapshot_id, **given)
        else:
            manage_snapshots.replace_tag(table, statement.name, snapshot_id, **given)
        return
    if exists and statement.if_not_exists:
        return
    if snapshot_id is None:  # Java's createBranch without snapshots: an empty append on it
        if exists:
            raise ValidationError(f"Ref {statement.name} already exists in table {table.name}")
        with Transaction(table) as tx:
            tx.append_files([], branch=statement.name)
        if given:
            manage_snapshots.set_ref_retention(table, statement.name, **given)
    elif branch:
        manage_snapshots.create_branch(table, statement.name, snapshot_id, **given)
    else:
        manage_snapshots.create_tag(table, statement.name, snapshot_id, **given)


def _drop_ref(table: Table, statement: A.DropRef) -> None:
    ref = table.refs().get(statement.name)
    if ref is None:
        if statement.if_exists:
            return
        raise ValidationError(f"{statement.kind.capitalize()} does not exist: {statement.name}")
    wanted = SnapshotRefType.BRANCH if statement.kind == "branch" else SnapshotRefType.TAG
    if ref.type is not wanted:
        raise ValidationError(
            f"Ref {statement.name} is a {ref.type.value}, not a {statement.kind}, in table "
            f"{table.name}"
        )
    manage_snapshots.remove_ref(table, statement.name)
