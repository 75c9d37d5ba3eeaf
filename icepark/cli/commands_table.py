"""``icepark describe`` and ``icepark snapshots``: one table's metadata.

TABLE is a catalog identifier (``db.t``) or the path of a ``*.metadata.json`` file, which is
opened read-only without a catalog.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import click
from rich.console import Console

from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import (
    add_row,
    emit_json,
    iso_utc,
    json_option,
    make_console,
    new_table,
    print_heading,
    print_key_values,
)
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema, schema_to_json
from icepark.spec.snapshots import Snapshot
from icepark.spec.sorting import SortOrder
from icepark.spec.types import ListType, MapType, NestedField, StructType, type_label
from icepark.table import Table

__all__ = ["describe_command", "snapshots_command", "open_table", "snapshot_to_dict"]

# Summary figures shown in the snapshots listing, as (column, summary key).
_KEY_FIGURES = (
    ("+files", "added-data-files"),
    ("-files", "deleted-data-files"),
    ("+deletes", "added-delete-files"),
    ("+records", "added-records"),
    ("-records", "deleted-records"),
    ("total files", "total-data-files"),
    ("total records", "total-records"),
)


def _looks_like_path(name: str) -> bool:
    return name.endswith(".json") or "/" in name or "\\" in name


def open_table(cli: CliContext, name: str) -> Table:
    """A catalog table by identifier, or a read-only table from a metadata file path."""
    if _looks_like_path(name):
        return Table.from_metadata(name, cli.io_properties(name))
    from icepark.catalog.base import to_identifier

    return cli.catalog().load_table(to_identifier(name))


# -- rendering helpers ---------------------------------------------------------------------------


def _schema_rows(
    fields: tuple[NestedField, ...], depth: int = 0
) -> Iterator[tuple[int, NestedField]]:
    """Every field with its nesting depth, parents before their children."""
    for f in fields:
        yield depth, f
        if isinstance(f.field_type, StructType | ListType | MapType):
            yield from _schema_rows(f.field_type.fields, depth + 1)


def _column_name(schema: Schema, source_id: int) -> str:
    return schema.find_column_name(source_id) or f"<missing {source_id}>"


def _spec_to_dict(spec: PartitionSpec, schema: Schema) -> dict[str, Any]:
    return {
        "spec-id": spec.spec_id,
        "fields": [
            {
                "field-id": f.field_id,
                "name": f.name,
                "transform": str(f.transform),
                "source-id": f.source_id,
                "source-name": schema.find_column_name(f.source_id),
            }
            for f in spec.fields
        ],
    }


def _sort_order_to_dict(order: SortOrder, schema: Schema) -> dict[str, Any]:
    return {
        "order-id": order.order_id,
        "fields": [
            {
                "transform": str(f.transform),
                "source-id": f.source_id,
                "source-name": schema.find_column_name(f.source_id),
                "direction": f.direction.value,
                "null-order": f.null_order.value,
            }
            for f in order.fields
        ],
    }


def snapshot_to_dict(snapshot: Snapshot, refs: list[str] | None = None) -> dict[str, Any]:
    """A snapshot for JSON output: the spec's fields plus an ISO time and the refs naming it."""
    out: dict[str, Any] = {
        "snapshot-id": snapshot.snapshot_id,
        "parent-snapshot-id": snapshot.parent_snapshot_id,
        "timestamp-ms": snapshot.timestamp_ms,
        "timestamp": iso_utc(snapshot.timestamp_ms),
        "sequence-number": snapshot.sequence_number,
        "operation": None if snapshot.operation is None else snapshot.operation.value,
        "summary": {} if snapshot.summary is None else snapshot.summary.to_json(),
        "manifest-list": snapshot.manifest_list,
        "schema-id": snapshot.schema_id,
    }
    if refs is not None:
        out["refs"] = refs
    return out


def _refs_by_snapshot(table: Table) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for name, ref in sorted(table.refs().items()):
        label = name if ref.is_branch else f"{name} (tag)"
        found.setdefault(ref.snapshot_id, []).append(label)
    return found


# -- describe ------------------------------------------------------------------------------------


def _describe_dict(table: Table) -> dict[str, Any]:
    md = table.metadata
    schema = table.schema()
    current = table.current_snapshot()
    return {
        "identifier": list(table.identifier) if table.catalog is not None else None,
        "format-version": md.format_version,
        "table-uuid": md.table_uuid,
        "location": md.location,
        "metadata-location": table.metadata_location,
        "last-updated-ms": md.last_updated_ms,
        "last-updated": iso_utc(md.last_updated_ms),
        "schema": schema_to_json(schema),
        "partition-spec": _spec_to_dict(table.spec(), schema),
        "sort-order": _sort_order_to_dict(table.sort_order(), schema),
        "properties": dict(sorted(table.properties.items())),
        "current-snapshot": None
        if current is None
        else snapshot_to_dict(current, _refs_by_snapshot(table).get(current.snapshot_id, [])),
    }


def _print_schema(console: Console, schema: Schema) -> None:
    print_heading(console, f"Schema (id {schema.schema_id})")
    grid = new_table("id", "name", "type", "nullability", "doc")
    for depth, f in _schema_rows(schema.fields):
        nullability = "required" if f.required else "optional"
        add_row(
            grid, f.field_id, "  " * depth + f.name, type_label(f.field_type), nullability, f.doc
        )
    console.print(grid)
    if schema.identifier_field_ids:
        console.print(f"  identifier fields: {', '.join(schema.identifier_field_names)}")


def _print_partitioning(console: Console, spec: PartitionSpec, schema: Schema) -> None:
    print_heading(console, f"Partitioning (spec id {spec.spec_id})")
    if not spec.fields:
        console.print("  unpartitioned")
        return
    grid = new_table("field id", "name", "transform", "source column")
    for f in spec.fields:
        add_row(
            grid,
            f.field_id,
            f.name,
            f.transform,
            f"{_column_name(schema, f.source_id)} ({f.source_id})",
        )
    console.print(grid)


def _print_sort_order(console: Console, order: SortOrder, schema: Schema) -> None:
    print_heading(console, f"Sort order (order id {order.order_id})")
    if not order.fields:
        console.print("  unsorted")
        return
    grid = new_table("term", "direction", "null order")
    for f in order.fields:
        column = _column_name(schema, f.source_id)
        term = column if f.transform.is_identity else f"{f.transform}({column})"
        add_row(grid, term, f.direction.value, f.null_order.value)
    console.print(grid)


def _print_snapshot(console: Console, snapshot: Snapshot | None) -> None:
    print_heading(console, "Current snapshot")
    if snapshot is None:
        console.print("  none")
        return
    print_key_values(
        console,
        [
            ("snapshot id", snapshot.snapshot_id),
            ("parent id", snapshot.parent_snapshot_id),
            ("time", iso_utc(snapshot.timestamp_ms)),
            ("sequence number", snapshot.sequence_number),
            ("operation", snapshot.operation),
            ("manifest list", snapshot.manifest_list),
        ],
    )
    if snapshot.summary is not None and snapshot.summary.properties:
        console.print("  summary:")
        print_key_values(console, {f"  {k}": v for k, v in snapshot.summary.properties.items()})


@click.command("describe")
@click.argument("table_name", metavar="TABLE")
@json_option
@pass_cli
def describe_command(cli: CliContext, table_name: str, json_output: bool) -> None:
    """Show a table's schema, partitioning, sort order, properties and current snapshot.

    TABLE is a catalog identifier such as db.t, or the path of a *.metadata.json file.
    """
    table = open_table(cli, table_name)
    if cli.wants_json(json_output):
        emit_json(_describe_dict(table))
        return
    md = table.metadata
    schema = table.schema()
    console = make_console()
    print_key_values(
        console,
        [
            ("table", table.name if table.catalog is not None else None),
            ("format version", md.format_version),
            ("table uuid", md.table_uuid),
            ("location", md.location),
            ("metadata location", table.metadata_location),
            ("last updated", iso_utc(md.last_updated_ms)),
        ],
    )
    _print_schema(console, schema)
    _print_partitioning(console, table.spec(), schema)
    _print_sort_order(console, table.sort_order(), schema)
    print_heading(console, "Properties")
    print_key_values(console, dict(sorted(table.properties.items())))
    _print_snapshot(console, table.current_snapshot())


# -- snapshots -----------------------------------------------------------------------------------


@click.command("snapshots")
@click.argument("table_name", metavar="TABLE")
@json_option
@pass_cli
def snapshots_command(cli: CliContext, table_name: str, json_output: bool) -> None:
    """List a table's snapshots, oldest first, with the refs pointing at each.

    TABLE is a catalog identifier such as db.t, or the path of a *.metadata.json file.
    """
    table = open_table(cli, table_name)
    refs = _refs_by_snapshot(table)
    snapshots = sorted(table.snapshots(), key=lambda s: (s.sequence_number, s.timestamp_ms))
    if cli.wants_json(json_output):
        emit_json(
            {
                "current-snapshot-id": table.metadata.current_snapshot_id,
                "snapshots": [snapshot_to_dict(s, refs.get(s.snapshot_id, [])) for s in snapshots],
            }
        )
        return
    console = make_console()
    if not snapshots:
        console.print(f"{table_name}: no snapshots")
        return
    grid = new_table(
        "snapshot id",
        "parent",
        "time (UTC)",
        "seq",
        "operation",
        *(c for c, _ in _KEY_FIGURES),
        "refs",
    )
    for s in snapshots:
        summary: Mapping[str, str] = s.summary or {}
        add_row(
            grid,
            s.snapshot_id,
            s.parent_snapshot_id,
            iso_utc(s.timestamp_ms),
            s.sequence_number,
            s.operation,
            *(summary.get(key) for _, key in _KEY_FIGURES),
            ", ".join(refs.get(s.snapshot_id, [])),
        )
    console.print(grid)
