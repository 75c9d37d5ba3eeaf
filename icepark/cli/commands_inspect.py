"""``icepark inspect TABLE NAME``: any of the sixteen metadata tables (``files``,
``snapshots``, ``partitions``, ...) on this machine, as ``table.inspect.<name>()`` gives it.

Text output is a rich table of at most ``--limit`` rows (50 by default; nested values as
compact JSON); ``--json`` prints one JSON object per row (all rows unless ``--limit``), with
timestamps and dates in ISO 8601, decimals and uuids as strings, binary as hex and maps as
objects. ``--columns`` picks columns; ``--snapshot-id`` and ``--ref`` travel in time where
the metadata table allows it (see :mod:`icepark.table.inspect`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import click
import pyarrow as pa

from icepark.cli.commands_table import open_table
from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import add_row, json_option, make_console, new_table
from icepark.errors import ValidationError
from icepark.table.inspect import METADATA_TABLES

__all__ = ["inspect_command"]

DEFAULT_TEXT_LIMIT = 50


def _plain(value: Any, t: pa.DataType) -> Any:
    """An Arrow value (``to_pylist`` form) as JSON, guided by its type."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: _plain(value[f.name], f.type) for f in t}
    if pa.types.is_map(t):
        return {str(k): _plain(v, t.item_type) for k, v in value}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_plain(v, t.value_type) for v in value]
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int | float | str | bool):
        return value
    return str(value)  # decimals, uuids


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


@click.command("inspect")
@click.argument("table_name", metavar="TABLE")
@click.argument("name", metavar="NAME", type=click.Choice(list(METADATA_TABLES), False))
@click.option("--columns", metavar="A,B,...", help="Columns to print.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    metavar="N",
    help=f"Print at most N rows (text: {DEFAULT_TEXT_LIMIT} unless given).",
)
@click.option("--snapshot-id", type=int, help="Read this snapshot where the table allows it.")
@click.option("--ref", metavar="NAME", help="Read this branch or tag where the table allows it.")
@json_option
@pass_cli
def inspect_command(
    cli: CliContext,
    table_name: str,
    name: str,
    columns: str | None,
    limit: int | None,
    snapshot_id: int | None,
    ref: str | None,
    json_output: bool,
) -> None:
    """Print metadata table NAME of TABLE (an identifier or a metadata file path):
    entries, files, data_files, delete_files, history, metadata_log_entries, snapshots,
    refs, manifests, partitions, all_data_files, all_delete_files, all_files,
    all_manifests, all_entries or position_deletes."""
    table = open_table(cli, table_name)
    rows = table.inspect.table(name.lower(), snapshot_id, ref=ref)
    if columns:
        wanted = [c.strip() for c in columns.split(",") if c.strip()]
        unknown = [c for c in wanted if c not in rows.column_names]
        if unknown:
            raise ValidationError(
                f"Metadata table {name} has no column {', '.join(unknown)}: "
                f"it has {', '.join(rows.column_names)}"
            )
        rows = rows.select(wanted)
    as_json = cli.wants_json(json_output)
    total = rows.num_rows
    shown_limit = limit if limit is not None or as_json else DEFAULT_TEXT_LIMIT
    if shown_limit is not None:
        rows = rows.slice(0, shown_limit)
    types = [f.type for f in rows.schema]
    names = rows.column_names
    if as_json:
        for row in rows.to_pylist():
            values = {k: _plain(row[k], t) for k, t in zip(names, types)}
            click.echo(json.dumps(values))
        return
    out = new_table(*names, title=f"{table.name}.{name.lower()}")
    for row in rows.to_pylist():
        add_row(out, *(_cell(_plain(row[k], t)) for k, t in zip(names, types)))
    console = make_console()
    console.print(out)
    if rows.num_rows < total:
        console.print(f"({rows.num_rows} of {total} rows; --limit N shows more)")
