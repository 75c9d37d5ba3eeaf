"""``CALL [catalog.]system.<procedure>(...)``: Java's Spark procedures (Iceberg 1.10), each
with Java's parameters (names, order, required ones) and output columns (names, Spark types,
nullability), run through icepark's own operation for it:

=================================  ================================================
procedure                          icepark operation
=================================  ================================================
rollback_to_snapshot / _timestamp  ``Table.rollback_to_snapshot`` / ``_timestamp``
set_current_snapshot               ``Table.set_current_snapshot``
cherrypick_snapshot                ``Table.cherrypick_snapshot``
fast_forward                       ``Table.fast_forward``
publish_changes                    ``Table.publish_changes``
expire_snapshots                   ``Table.expire_snapshots``
remove_orphan_files                ``icepark.spark.maintenance.remove_orphan_files``
rewrite_data_files                 ``icepark.spark.maintenance.rewrite_data_files``
rewrite_manifests                  ``Table.rewrite_manifests``
rewrite_position_delete_files      ``icepark.spark.maintenance.rewrite_position_delete_files``
add_files                          ``icepark.spark.maintenance.add_files``
register_table                     ``Catalog.register_table``
ancestors_of                       ``TableMetadata.ancestors_of``
create_changelog_view              ``icepark.table.incremental.changelog`` (a temp view)
compute_table_stats                ``icepark.spark.maintenance.compute_table_stats``
compute_partition_stats            ``Table.compute_partition_stats``
snapshot                           ``icepark.spark.maintenance.snapshot_table``
migrate                            ``icepark.spark.maintenance.migrate_table``
rewrite_table_path                 ``Table.rewrite_table_path`` (no Spark job)
=================================  ================================================

The output is a DataFrame with Java's schema. An unknown procedure is an
:class:`UnknownProcedureError` listing those there are; a bad argument a
:class:`ProcedureArgumentError` naming it and listing the parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from icepark.catalog import Catalog
from icepark.errors import ValidationError
from icepark.spark.runtime import arrow_frame
from icepark.spark.sql import ext_ast as A
from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.errors import ProcedureArgumentError, UnknownProcedureError
from icepark.spark.sql.ext_alter import case_sensitive, load_table
from icepark.spark.sql.ext_arguments import Param, bind_arguments
from icepark.spark.sql.ext_parser import parse_name
from icepark.table import Table
from icepark.table.update import wap

__all__ = ["PROCEDURES", "run_call"]


@dataclass(frozen=True)
class _Context:
    sql: SqlContext
    call: A.Call
    args: dict[str, Any]
    name: str = ""
    params: tuple[str, ...] = ()

    def fail(self, argument: str, problem: str) -> ProcedureArgumentError:
        """An error naming ``argument`` of this procedure and listing its parameters."""
        return ProcedureArgumentError(
            self.name, argument, problem, list(self.params), self.call.sql
        )

    @property
    def spark(self) -> Any:
        return self.sql.spark

    @property
    def catalog(self) -> Catalog:
        catalog: Catalog = self.sql.catalog
        return catalog

    def table(self, key: str = "table") -> Table:
        """The table argument ``key`` names, resolved as SQL names are (``USE``)."""
        return load_table(self.sql, self._name(key))

    def identifier(self, key: str = "table") -> tuple[str, ...]:
        """The identifier argument ``key`` names, whether or not the table exists."""
        ident = self.sql.identifier(self._name(key))
        if ident is None:
            raise self.fail(key, "Cannot name a table of Spark's session catalog")
        return ident

    def _name(self, key: str) -> A.Name:
        text = self.args[key]
        if not text.strip():
            raise self.fail(key, "Cannot handle an empty identifier")
        return parse_name(text)


_Run = Callable[[_Context], list[tuple[Any, ...]]]


@dataclass(frozen=True)
class _Procedure:
    params: tuple[Param, ...]
    output: tuple[tuple[str, str, bool], ...]  # name, Spark type, nullable
    run: _Run


def _current_id(table: Table) -> int | None:
    snapshot = table.current_snapshot()
    return None if snapshot is None else snapshot.snapshot_id


# -- snapshot management ---------------------------------------------------------------------


def _rollback_to_snapshot(ctx: _Context) -> list[tuple[Any, ...]]:
    table = ctx.table()
    previous = _current_id(table)
    table.rollback_to_snapshot(ctx.args["snapshot_id"])
    return [(previous, _current_id(table))]


def _rollback_to_timestamp(ctx: _Context) -> list[tuple[Any, ...]]:
    table = ctx.table()
    previous = _current_id(table)
    table.rollback_to_timestamp(ctx.args["timestamp"])
    return [(previous, _current_id(table))]


def _set_current_snapshot(ctx: _Context) -> list[tuple[Any, ...]]:
    snapshot_id, ref = ctx.args.get("snapshot_id"), ctx.args.get("ref")
    if (snapshot_id is None) == (ref is None):
        raise ctx.fail("snapshot_id, ref", "Either snapshot_id or ref must be provided, not both")
    table = ctx.table()
    previous = _current_id(table)
    table.set_current_snapshot(snapshot_id, ref)
    return [(previous, _current_id(table))]


def _cherrypick_snapshot(ctx: _Context) -> list[tuple[Any, ...]]:
    table = ctx.table()
    table.cherrypick_snapshot(ctx.args["snapshot_id"])
    return [(ctx.args["snapshot_id"], _current_id(table))]


def _fast_forward(ctx: _Context) -> list[tuple[Any, ...]]:
    table = ctx.table()
    branch, to = ctx.args["branch"], ctx.args["to"]
    before = table.refs().get(branch)
    table.fast_forward(branch, to)
    after = table.refs()[branch]
    return [(branch, None if before is None else before.snapshot_id, after.snapshot_id)]


def _publish_changes(ctx: _Context) -> list[tuple[Any, ...]]:
    table = ctx.table()
    wap_id = ctx.args["wap_id"]
    staged = next((s for s in table.snapshots() if wap.staged_wap_id(s) == wap_id), None)
    if staged is None:
        raise ValidationError(f"Cannot apply unknown WAP ID '{wap_id}' to table {table.name}")
    table.publish_changes(wap_id)
    return [(staged.snapshot_id, _current_id(table))]


def _ancestors_of(ctx: _Context) -> list[tuple[Any, ...]]:
    table = ctx.table()
    start = ctx.args.get("snapshot_id", _current_id(table))
    return [(s.snapshot_id, s.timestamp_ms) for s in table.metadata.ancestors_of(start)]


def _register_table(ctx: _Context) -> list[tuple[Any, ...]]:
    metadata_file = ctx.args["metadata_file"]
    if not metadata_file:
        raise ctx.fail("metadata_file", "Cannot handle an empty argument")
    table = ctx.catalog.register_table(ctx.identifier(), metadata_file)
    current = table.current_snapshot()
    if current is None:
        return [(None, None, None)]
    summary: dict[str, str] = dict(current.summary or {})
    return [
        (
            current.snapshot_id,
            int(summary.get("total-records", 0)),
            int(summary.get("total-data-files", 0)),
        )
    ]


# -- maintenance -----------------------------------------------------------------------------


def _positive(ctx: _Context, key: str) -> None:
    value = ctx.args.get(key)
    if value is not None and value <= 0:
        raise ctx.fail(key, f"{key} should have value > 0, got {value}")


def _expire_snapshots(ctx: _Context) -> list[tuple[Any, ...]]:
    _positive(ctx, "max_concurrent_deletes")
    retain_last = ctx.args.get("retain_last")
    if retain_last is not None and retain_last < 1:
        raise ctx.fail("retain_last", "Number of snapshots to retain must be at least 1")
    result = ctx.table().expire_snapshots(
        older_than=ctx.args.get("older_than"),
        retain_last=retain_last,
        snapshot_ids=ctx.args.get("snapshot_ids"),
        clean_expired_metadata=ctx.args.get("clean_expired_metadata", False),
    )
    return [
        (
            result.deleted_data_files_count,
            result.deleted_position_delete_files_count,
            result.deleted_equality_delete_files_count,
            result.deleted_manifest_files_count,
            result.deleted_manifest_lists_count,
            result.deleted_statistics_files_count,
        )
    ]


def _remove_orphan_files(ctx: _Context) -> list[tuple[Any, ...]]:
    from icepark.spark.maintenance.remove_orphan_files import remove_orphan_files

    _positive(ctx, "max_concurrent_deletes")
    view = ctx.args.get("file_list_view")
    mode = ctx.args.get("prefix_mismatch_mode", "ERROR")
    dry_run = ctx.args.get("dry_run", False)
    result = remove_orphan_files(
        ctx.spark,
        ctx.table(),
        older_than=ctx.args.get("older_than"),
        location=ctx.args.get("location"),
        dry_run=dry_run,
        equal_schemes=ctx.args.get("equal_schemes"),
        equal_authorities=ctx.args.get("equal_authorities"),
        prefix_mismatch_mode=str(mode).lower(),
        file_list=ctx.spark.table(view) if view is not None else None,
    )
    # every orphan found, as Java's (a failed delete is logged there, and listed here too)
    return [(p,) for p in result.orphan_file_locations]


def _where(ctx: _Context, table: Table) -> Any:
    """The ``where`` argument as Java reads it, a Spark SQL predicate (``name = "foo"``
    compares with the string ``foo``), as an icepark filter when every conjunct translates
    exactly (:func:`~icepark.spark.sql.pushdown.to_filter`); else the text, read by
    icepark's filter parser."""
    import sqlglot

    from icepark.spark.sql.pushdown import split_and, to_filter
    from icepark.spark.sql.query import session_is_utc

    where = ctx.args.get("where")
    if where is None:
        return None
    try:
        tree = sqlglot.parse_one(str(where), read="spark")
    except sqlglot.errors.SqlglotError:
        return where
    conjuncts = split_and(tree)
    expr, texts = to_filter(conjuncts, table.schema(), lambda c: True, session_is_utc(ctx.sql))
    if expr is not None and len(texts) == len(conjuncts):
        return expr
    return where


def _rewrite_arguments(ctx: _Context, table: Table) -> dict[str, Any]:
    """What both rewrite procedures pass on: ``where``, ``options``, the session's case
    sensitivity."""
    return {
        "where": _where(ctx, table),
        "options": ctx.args.get("options"),
        "case_sensitive": case_sensitive(ctx.spark),
    }


def _rewrite_data_files(ctx: _Context) -> list[tuple[Any, ...]]:
    from icepark.spark.maintenance.rewrite_data_files import rewrite_data_files

    table = ctx.table()
    result = rewrite_data_files(
        ctx.spark,
        table,
        strategy=ctx.args.get("strategy", "binpack"),
        sort_order=ctx.args.get("sort_order"),
        **_rewrite_arguments(ctx, table),
    )
    return [
        (
            result.rewritten_data_files_count,
            result.added_data_files_count,
            result.rewritten_bytes_count,
            result.failed_data_files_count,
            result.removed_delete_files_count,
        )
    ]


def _rewrite_manifests(ctx: _Context) -> list[tuple[Any, ...]]:
    result = ctx.table().rewrite_manifests(spec_id=ctx.args.get("spec_id"))
    return [(result.rewritten_manifests_count, result.added_manifests_count)]


def _rewrite_position_delete_files(ctx: _Context) -> list[tuple[Any, ...]]:
    from icepark.spark.maintenance.rewrite_position_delete_files import (
        rewrite_position_delete_files,
    )

    table = ctx.table()
    result = rewrite_position_delete_files(ctx.spark, table, **_rewrite_arguments(ctx, table))
    return [
        (
            result.rewritten_delete_files_count,
            result.added_delete_files_count,
            result.rewritten_bytes_count,
            result.added_bytes_count,
        )
    ]


def _add_files(ctx: _Context) -> list[tuple[Any, ...]]:
    from icepark.spark.maintenance.add_files import add_files

    _positive(ctx, "parallelism")
    source = ctx.args["source_table"]
    name = parse_name(source)
    from_path = False
    # `parquet`.`/path` names files by their format, as Java reads it; else a Spark table
    if len(name) == 2 and name[0].lower() in ("parquet", "orc", "avro"):
        if name[0].lower() != "parquet":
            raise ctx.fail("source_table", "Only Parquet files can be added by icepark")
        source, from_path = name[1], True
    result = add_files(
        ctx.spark,
        ctx.table(),
        source,
        check_duplicate_files=ctx.args.get("check_duplicate_files", True),
        partition_filter=ctx.args.get("partition_filter"),
    )
    # Java reads the count from the new snapshot's summary; files imported from a path are
    # committed there as appended manifests, whose summary has no partition count (null)
    changed = None if from_path else result.changed_partition_count
    return [(result.added_files_count, changed)]


# -- changelog -------------------------------------------------------------------------------

_CHANGELOG_OPTIONS = ("start-snapshot-id", "end-snapshot-id", "start-timestamp", "end-timestamp")


def _changelog_range(ctx: _Context, table: Table, options: dict[str, str]) -> tuple[Any, Any, bool]:
    """The snapshots after which and up to which changes are read, and whether the scan is
    empty, from Java's read options (``SparkScanBuilder.buildChangelogScan``)."""

    def number(key: str) -> int | None:
        value = options.get(key)
        try:
            return None if value is None else int(value)
        except ValueError:
            raise ctx.fail(f"options[{key}]", f"Invalid number {value!r}") from None

    start, end = number("start-snapshot-id"), number("end-snapshot-id")
    start_ts, end_ts = number("start-timestamp"), number("end-timestamp")
    for a, b, both in ((start, start_ts, "start"), (end, end_ts, "end")):
        if a is not None and b is not None:
            raise ctx.fail(
                f"options[{both}-...]",
                f"Cannot set both {both}-snapshot-id and {both}-timestamp for changelogs",
            )
    if start_ts is not None and end_ts is not None and start_ts >= end_ts:
        raise ctx.fail(
            "options[start-timestamp]",
            "Cannot set start-timestamp to be greater than end-timestamp for changelogs",
        )
    current = table.current_snapshot()
    ancestors = table.metadata.ancestors_of(None if current is None else current.snapshot_id)
    empty = False
    if start_ts is not None:
        empty = current is None or start_ts > current.timestamp_ms
        after = None  # the oldest ancestor at or after the timestamp (Java's oldestAncestorAfter)
        for snapshot in ancestors:
            if snapshot.timestamp_ms < start_ts:
                break
            after = snapshot
            if snapshot.timestamp_ms == start_ts:
                break
        if after is not None:
            start = (
                after.snapshot_id if after.timestamp_ms == start_ts else after.parent_snapshot_id
            )
    if end_ts is not None:
        end = next((s.snapshot_id for s in ancestors if s.timestamp_ms <= end_ts), None)
        if (start is None and end is None) or (start is not None and start == end):
            empty = True
    return start, end, empty


def _create_changelog_view(ctx: _Context) -> list[tuple[Any, ...]]:
    from icepark.table.incremental.changelog import changelog_scan

    table = ctx.table()
    options = dict(ctx.args.get("options") or {})
    unknown = sorted(set(options) - set(_CHANGELOG_OPTIONS))
    if unknown:
        raise ctx.fail(
            f"options {unknown}",
            f"Unsupported changelog options (icepark reads {', '.join(_CHANGELOG_OPTIONS)})",
        )
    start, end, empty = _changelog_range(ctx, table, options)
    net_changes = ctx.args.get("net_changes", False)
    identifiers = ctx.args.get("identifier_columns")
    compute_updates = ctx.args.get("compute_updates", False)
    if net_changes and (compute_updates or identifiers):
        raise ValidationError("Not support net changes with update images")
    scan = changelog_scan(
        table,
        from_snapshot_id=start,
        to_snapshot_id=end,
        compute_updates=compute_updates,
        identifier_columns=identifiers,
        net_changes=net_changes,
        case_sensitive=case_sensitive(ctx.spark),
    )
    # an empty range reads nothing: the view's columns come from the scan's schema alone
    rows = scan.arrow_schema.empty_table() if empty else scan.to_arrow()
    frame = arrow_frame(ctx.spark, rows)
    default_view = f"{ctx.identifier()[-1]}_changes"
    view = ctx.args.get("changelog_view") or "`" + default_view.replace("`", "``") + "`"
    frame.createOrReplaceTempView(view)
    return [(view,)]


def _compute_table_stats(ctx: _Context) -> list[tuple[Any, ...]]:
    from icepark.spark.maintenance.compute_table_stats import compute_table_stats

    statistics = compute_table_stats(
        ctx.spark, ctx.table(), ctx.args.get("snapshot_id"), ctx.args.get("columns")
    )
    return [(None if statistics is None else statistics.statistics_path,)]


def _compute_partition_stats(ctx: _Context) -> list[tuple[Any, ...]]:
    statistics = ctx.table().compute_partition_stats(ctx.args.get("snapshot_id"))
    return [] if statistics is None else [(statistics.statistics_path,)]


def _rewrite_table_path(ctx: _Context) -> list[tuple[Any, ...]]:
    result = ctx.table().rewrite_table_path(
        ctx.args["source_prefix"],
        ctx.args["target_prefix"],
        start_version=ctx.args.get("start_version"),
        end_version=ctx.args.get("end_version"),
        staging_location=ctx.args.get("staging_location"),
    )
    return [(result.latest_version, result.file_list_location)]


def _snapshot(ctx: _Context) -> list[tuple[Any, ...]]:
    from icepark.spark.maintenance.snapshot_table import snapshot_table

    _positive(ctx, "parallelism")
    if ctx.args.get("ignore_missing_files"):
        raise ctx.fail("ignore_missing_files", "icepark imports every file the source lists")
    source = parse_name(ctx.args["source_table"])
    resolved = ctx.sql.resolve(source, views=False) if len(source) > 1 else None
    if resolved is None or resolved.kind != "spark":
        found = ctx.sql.catalog_name or "icepark's"
        raise ValidationError(
            "Cannot snapshot a table that isn't in the session catalog (i.e. spark_catalog). "
            f"Found source catalog: {found}."
        )
    count = snapshot_table(
        ctx.spark,
        ".".join(source),
        ".".join(ctx.identifier()),
        catalog=ctx.catalog,
        location=ctx.args.get("location"),
        properties=ctx.args.get("properties"),
    )
    return [(count,)]


def _migrate(ctx: _Context) -> list[tuple[Any, ...]]:
    from icepark.spark.maintenance.migrate_table import migrate_table

    _positive(ctx, "parallelism")
    if ctx.args.get("ignore_missing_files"):
        raise ctx.fail("ignore_missing_files", "icepark imports every file the source lists")
    if not ctx.args["table"]:
        raise ctx.fail("table", "Cannot handle an empty identifier for argument table")
    source = parse_name(ctx.args["table"])
    if ctx.sql.resolve(source, views=False).kind != "spark":
        raise ValidationError(
            "Cannot migrate a table that isn't in Spark's session catalog (i.e. spark_catalog):"
            f" {'.'.join(source)} is a table of {ctx.sql.catalog_name or 'icepark'}'s catalog."
        )
    count = migrate_table(
        ctx.spark,
        ".".join(f"`{p}`" for p in source),
        catalog=ctx.catalog,
        properties=ctx.args.get("properties"),
        drop_backup=bool(ctx.args.get("drop_backup")),
        backup_table_name=ctx.args.get("backup_table_name"),
    )
    return [(count,)]


# -- the registry ----------------------------------------------------------------------------

_TABLE = Param("table", "string", True)
_PREV_CURRENT = (
    ("previous_snapshot_id", "bigint", False),
    ("current_snapshot_id", "bigint", False),
)

PROCEDURES: dict[str, _Procedure] = {
    "rollback_to_snapshot": _Procedure(
        (_TABLE, Param("snapshot_id", "long", True)), _PREV_CURRENT, _rollback_to_snapshot
    ),
    "rollback_to_timestamp": _Procedure(
        (_TABLE, Param("timestamp", "timestamp", True)), _PREV_CURRENT, _rollback_to_timestamp
    ),
    "set_current_snapshot": _Procedure(
        (_TABLE, Param("snapshot_id", "long"), Param("ref", "string")),
        (("previous_snapshot_id", "bigint", True), ("current_snapshot_id", "bigint", False)),
        _set_current_snapshot,
    ),
    "cherrypick_snapshot": _Procedure(
        (_TABLE, Param("snapshot_id", "long", True)),
        (("source_snapshot_id", "bigint", False), ("current_snapshot_id", "bigint", False)),
        _cherrypick_snapshot,
    ),
    "fast_forward": _Procedure(
        (_TABLE, Param("branch", "string", True), Param("to", "string", True)),
        (
            ("branch_updated", "string", False),
            ("previous_ref", "bigint", True),
            ("updated_ref", "bigint", False),
        ),
        _fast_forward,
    ),
    "publish_changes": _Procedure(
        (_TABLE, Param("wap_id", "string", True)),
        (("source_snapshot_id", "bigint", False), ("current_snapshot_id", "bigint", False)),
        _publish_changes,
    ),
    "expire_snapshots": _Procedure(
        (
            _TABLE,
            Param("older_than", "timestamp"),
            Param("retain_last", "int"),
            Param("max_concurrent_deletes", "int"),
            Param("stream_results", "boolean"),
            Param("snapshot_ids", "long_array"),
            Param("clean_expired_metadata", "boolean"),
        ),
        tuple(
            (f"deleted_{what}_count", "bigint", True)
            for what in (
                "data_files",
                "position_delete_files",
                "equality_delete_files",
                "manifest_files",
                "manifest_lists",
                "statistics_files",
            )
        ),
        _expire_snapshots,
    ),
    "remove_orphan_files": _Procedure(
        (
            _TABLE,
            Param("older_than", "timestamp"),
            Param("location", "string"),
            Param("dry_run", "boolean"),
            Param("max_concurrent_deletes", "int"),
            Param("file_list_view", "string"),
            Param("equal_schemes", "map"),
            Param("equal_authorities", "map"),
            Param("prefix_mismatch_mode", "string"),
            Param("prefix_listing", "boolean"),
        ),
        (("orphan_file_location", "string", False),),
        _remove_orphan_files,
    ),
    "rewrite_data_files": _Procedure(
        (
            _TABLE,
            Param("strategy", "string"),
            Param("sort_order", "string"),
            Param("options", "map"),
            Param("where", "string"),
        ),
        (
            ("rewritten_data_files_count", "int", False),
            ("added_data_files_count", "int", False),
            ("rewritten_bytes_count", "bigint", False),
            ("failed_data_files_count", "int", False),
            ("removed_delete_files_count", "int", False),
        ),
        _rewrite_data_files,
    ),
    "rewrite_manifests": _Procedure(
        (_TABLE, Param("use_caching", "boolean"), Param("spec_id", "int")),
        (("rewritten_manifests_count", "int", False), ("added_manifests_count", "int", False)),
        _rewrite_manifests,
    ),
    "rewrite_position_delete_files": _Procedure(
        (_TABLE, Param("options", "map"), Param("where", "string")),
        (
            ("rewritten_delete_files_count", "int", False),
            ("added_delete_files_count", "int", False),
            ("rewritten_bytes_count", "bigint", False),
            ("added_bytes_count", "bigint", False),
        ),
        _rewrite_position_delete_files,
    ),
    "add_files": _Procedure(
        (
            _TABLE,
            Param("source_table", "string", True),
            Param("partition_filter", "map"),
            Param("check_duplicate_files", "boolean"),
            Param("parallelism", "int"),
        ),
        (("added_files_count", "bigint", False), ("changed_partition_count", "bigint", True)),
        _add_files,
    ),
    "register_table": _Procedure(
        (_TABLE, Param("metadata_file", "string", True)),
        (
            ("current_snapshot_id", "bigint", True),
            ("total_records_count", "bigint", True),
            ("total_data_files_count", "bigint", True),
        ),
        _register_table,
    ),
    "ancestors_of": _Procedure(
        (_TABLE, Param("snapshot_id", "long")),
        (("snapshot_id", "bigint", True), ("timestamp", "bigint", True)),
        _ancestors_of,
    ),
    "create_changelog_view": _Procedure(
        (
            _TABLE,
            Param("changelog_view", "string"),
            Param("options", "map"),
            Param("compute_updates", "boolean"),
            Param("identifier_columns", "string_array"),
            Param("net_changes", "boolean"),
        ),
        (("changelog_view", "string", False),),
        _create_changelog_view,
    ),
    "compute_table_stats": _Procedure(
        (_TABLE, Param("snapshot_id", "long"), Param("columns", "string_array")),
        (("statistics_file", "string", True),),
        _compute_table_stats,
    ),
    "snapshot": _Procedure(
        (
            Param("source_table", "string", True),
            _TABLE,
            Param("location", "string"),
            Param("properties", "map"),
            Param("parallelism", "int"),
            Param("ignore_missing_files", "boolean"),
        ),
        (("imported_files_count", "bigint", False),),
        _snapshot,
    ),
    "migrate": _Procedure(
        (
            _TABLE,
            Param("properties", "map"),
            Param("drop_backup", "boolean"),
            Param("backup_table_name", "string"),
            Param("parallelism", "int"),
            Param("ignore_missing_files", "boolean"),
        ),
        (("migrated_files_count", "bigint", False),),
        _migrate,
    ),
    "compute_partition_stats": _Procedure(
        (_TABLE, Param("snapshot_id", "long")),
        (("partition_statistics_file", "string", True),),
        _compute_partition_stats,
    ),
    "rewrite_table_path": _Procedure(
        (
            _TABLE,
            Param("source_prefix", "string", True),
            Param("target_prefix", "string", True),
            Param("start_version", "string"),
            Param("end_version", "string"),
            Param("staging_location", "string"),
        ),
        (("latest_version", "string", True), ("file_list_location", "string", True)),
        _rewrite_table_path,
    ),
}


# procedures whose source is a table of Spark's session catalog, which Java's users call on
# that catalog (``CALL spark_catalog.system.migrate(...)``)
_SESSION = ("migrate", "snapshot")


def _procedure_name(call: A.Call, catalog_name: str) -> str:
    parts = tuple(call.procedure)
    if len(parts) == 3 and parts[0] == catalog_name:
        parts = parts[1:]
    elif len(parts) == 3 and parts[0].lower() == "spark_catalog" and parts[2].lower() in _SESSION:
        parts = parts[1:]
    if len(parts) == 2 and parts[0].lower() == "system" and parts[1].lower() in PROCEDURES:
        return parts[1].lower()
    raise UnknownProcedureError(
        ".".join(call.procedure), [f"system.{n}" for n in sorted(PROCEDURES)], call.sql
    )


def run_call(ctx: SqlContext, call: A.Call) -> Any:
    """Run a ``CALL``; its output rows as a DataFrame with Java's columns."""
    from pyspark.sql import types as T

    spark = ctx.spark
    name = _procedure_name(call, ctx.catalog_name)
    procedure = PROCEDURES[name]
    time_zone = str(spark.conf.get("spark.sql.session.timeZone", "UTC"))
    args = bind_arguments(name, procedure.params, call, time_zone)
    params = tuple(p.name for p in procedure.params)
    rows = procedure.run(_Context(ctx, call, args, name, params))
    types = {"bigint": T.LongType(), "int": T.IntegerType(), "string": T.StringType()}
    schema = T.StructType(
        [T.StructField(n, types[t], nullable) for n, t, nullable in procedure.output]
    )
    return spark.createDataFrame(rows, schema)
