"""Rendering for the command line: rich text for people, JSON for machines.

Text goes through a rich ``Console`` with markup and highlighting off, so names such as
``bucket[16]`` print as they are. When stdout is not a terminal the console is very wide, so
lines are never wrapped or cut in the middle of a path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import click
from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

__all__ = [
    "json_option",
    "make_console",
    "emit_json",
    "iso_utc",
    "new_table",
    "add_row",
    "print_heading",
    "print_key_values",
    "one_line",
]

_F = TypeVar("_F", bound=Callable[..., Any])

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PIPE_WIDTH = 10_000


def json_option(func: _F) -> _F:
    """``--json`` on a command (the global ``icepark --json`` works for every command too)."""
    return click.option(
        "--json", "json_output", is_flag=True, default=False, help="Print JSON instead of text."
    )(func)


def make_console() -> Console:
    """A console on the current stdout (looked up now, so click's test runner captures it)."""
    probe = Console(highlight=False, markup=False, emoji=False)
    width = None if probe.is_terminal else _PIPE_WIDTH
    return Console(
        highlight=False, markup=False, emoji=False, width=width, soft_wrap=width is not None
    )


def emit_json(value: Any) -> None:
    """Print one JSON document (indented) on stdout."""
    click.echo(json.dumps(value, indent=2, default=str))


def iso_utc(timestamp_ms: int | None) -> str | None:
    """Milliseconds since the epoch as ISO 8601 in UTC: ``2024-01-05T10:00:00.123Z``."""
    if timestamp_ms is None:
        return None
    try:
        moment = _EPOCH + timedelta(milliseconds=timestamp_ms)
    except OverflowError:
        return str(timestamp_ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_table(*columns: str, title: str | None = None) -> RichTable:
    """A plain table with a header row and no borders around it."""
    table = RichTable(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def add_row(table: RichTable, *cells: object) -> None:
    """Add a row of plain text cells (None shows as empty)."""
    table.add_row(*(Text("" if cell is None else str(cell)) for cell in cells))


def print_heading(console: Console, text: str) -> None:
    console.print()
    console.print(Text(text, style="bold"))


def print_key_values(
    console: Console, pairs: Iterable[tuple[str, object]] | Mapping[str, object]
) -> None:
    """Aligned ``key  value`` lines; a value of None is left out."""
    items = list(pairs.items()) if isinstance(pairs, Mapping) else list(pairs)
    shown = [(k, v) for k, v in items if v is not None]
    if not shown:
        console.print(Text("  (none)"))
        return
    width = max(len(k) for k, _ in shown)
    for key, value in shown:
        console.print(Text(f"  {key.ljust(width)}  {value}"))


def one_line(text: str) -> str:
    """A message on a single line (error messages may hold newlines from nested causes)."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())
