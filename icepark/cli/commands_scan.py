"""``icepark scan``: print a table's rows, read on this machine (no Spark needed).

The scan is planned (files pruned by partitions and metrics) and its files read with
icepark's Arrow reader, ``read.read-ahead.files`` at once, in order; reading stops as soon as
``--limit`` rows are out. A progress bar on stderr counts the rows read. Output is
a rich table, or JSON lines with ``--json`` (one object per row; timestamps, dates and
decimals as strings, binary as hex).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import json
import uuid
from collections.abc import Iterator
from typing import Any

import click
import pyarrow as pa
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from icepark.arrow.readahead import read_ahead
from icepark.cli.commands_table import open_table
from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import add_row, json_option, make_console, new_table
from icepark.spec import properties as P
from icepark.table.scan import DataScan

__all__ = ["scan_command"]


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): _json_value(v) for k, v in value}  # a map
        return [_json_value(v) for v in value]
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def _cell(value: Any) -> str:
    if value is None:
        return ""
    shown = _json_value(value)
    return shown if isinstance(shown, str) else json.dumps(shown)


def _rows(scan: DataScan, limit: int | None, progress: Progress | None) -> Iterator[dict[str, Any]]:
    job = progress.add_task("reading rows", total=None) if progress else None
    produced = 0
    files = P.READ_AHEAD_FILES.get(scan.metadata.properties)
    batches = read_ahead(scan.iter_plan_files(), scan.read_task, files)
    with contextlib.closing(batches):
        for batch in batches:
            for row in pa.Table.from_batches([batch]).to_pylist():
                if limit is not None and produced >= limit:
                    return
                produced += 1
                yield row
            if progress is not None and job is not None:
                progress.advance(job, batch.num_rows)


@click.command("scan")
@click.argument("table_name", metavar="TABLE")
@click.option(
    "--filter",
    "row_filter",
    metavar="EXPR",
    help="Row filter, e.g. \"id > 5 and ts >= '2024-01-01'\".",
)
@click.option(
    "--columns", metavar="A,B,...", help="Columns to print (metadata columns like _file too)."
)
@click.option("--limit", type=int, metavar="N", help="Print at most N rows.")
@click.option("--snapshot-id", type=int, help="Read this snapshot (time travel).")
@click.option("--ref", metavar="NAME", help="Read this branch or tag.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (default: if a terminal).",
)
@json_option
@pass_cli
def scan_command(
    cli: CliContext,
    table_name: str,
    row_filter: str | None,
    columns: str | None,
    limit: int | None,
    snapshot_id: int | None,
    ref: str | None,
    progress: bool | None,
    json_output: bool,
) -> None:
    """Print the rows of TABLE (an identifier or a metadata file path)."""
    table = open_table(cli, table_name)
    selected = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    scan = table.scan(filter=row_filter, columns=selected, snapshot_id=snapshot_id, ref=ref)
    names = list(scan.columns())
    stderr = Console(stderr=True)
    show_progress = stderr.is_terminal if progress is None else progress
    bar = (
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=stderr,
            transient=True,
        )
        if show_progress
        else None
    )
    if cli.wants_json(json_output):
        with bar if bar is not None else contextlib.nullcontext():
            for row in _rows(scan, limit, bar):
                click.echo(json.dumps({k: _json_value(row[k]) for k in names}))
        return
    out = new_table(*names)
    with bar if bar is not None else contextlib.nullcontext():
        for row in _rows(scan, limit, bar):
            add_row(out, *(_cell(row[k]) for k in names))
    make_console().print(out)
