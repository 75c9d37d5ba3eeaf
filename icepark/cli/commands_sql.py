"""``icepark sql``: Iceberg SQL on a local Spark session (:func:`icepark.spark.sql`).

``icepark sql "SELECT ..."`` runs one statement or a ``;``-separated script, ``icepark sql -f
script.sql`` a file, and ``icepark sql`` alone an interactive shell (statements end with
``;``; ``quit`` or end of input leaves) whose history is kept in a readline history file
(``--history``, default ``~/.icepark_sql_history``). The catalog is the one the global
options choose. The last statement's result prints as a rich table (at most ``--limit``
rows), or with ``--json`` as a JSON list of objects.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from icepark.cli.commands_scan import _cell, _json_value
from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import add_row, json_option, make_console, new_table, one_line
from icepark.errors import IceparkError

__all__ = ["sql_command"]

_DEFAULT_HISTORY = "~/.icepark_sql_history"


def _print(df: Any, limit: int, as_json: bool) -> None:
    names = list(df.columns)
    if not names:
        if not as_json:
            click.echo("OK")
        else:
            click.echo("[]")
        return
    rows = df.limit(limit + 1).collect()
    more = len(rows) > limit
    rows = rows[:limit]
    if as_json:
        objects = [{k: _json_value(v) for k, v in zip(names, row, strict=True)} for row in rows]
        click.echo(json.dumps(objects, indent=2))
        return
    out = new_table(*names)
    for row in rows:
        add_row(out, *(_cell(v) for v in row))
    console = make_console()
    console.print(out)
    if more:
        console.print(f"(first {limit} rows shown)")


def _run(spark: Any, catalog: Any, text: str, limit: int, as_json: bool) -> None:
    from icepark.spark.sql import sql

    _print(sql(spark, text, catalog), limit, as_json)


def _complete(buffer: str) -> bool:
    """Whether the shell's buffer ends a statement (a ``;`` outside quotes and comments)."""
    from icepark.spark.sql.script import split_statements

    stripped = buffer.rstrip()
    if not stripped.endswith(";"):
        return False
    # a ';' inside an open quote leaves the last piece unterminated: re-split to check
    pieces = split_statements(stripped + "\nSELECT 1")
    return bool(pieces) and pieces[-1].text == "SELECT 1"


def _shell(spark: Any, catalog: Any, limit: int, as_json: bool, history: str) -> None:
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows without pyreadline
        readline = None  # type: ignore[assignment]
    path = Path(os.path.expanduser(history))
    if readline is not None and path.is_file():
        readline.read_history_file(str(path))
    buffer = ""
    try:
        while True:
            try:
                line = input("icepark> " if not buffer else "    ...> ")
            except EOFError:
                break
            if not buffer and line.strip().lower().rstrip(";") in ("quit", "exit"):
                break
            buffer += line + "\n"
            if not _complete(buffer):
                continue
            text, buffer = buffer, ""
            try:
                _run(spark, catalog, text, limit, as_json)
            except IceparkError as exc:
                click.echo(f"Error: {one_line(str(exc))}", err=True)
            except Exception as exc:  # Spark's own errors: the shell goes on
                click.echo(f"Error: {one_line(str(exc)) or type(exc).__name__}", err=True)
    finally:
        if readline is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(str(path))


@click.command("sql")
@click.argument("statement", required=False)
@click.option(
    "-f",
    "--file",
    "script",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Run the statements of this file.",
)
@click.option("--limit", default=1000, show_default=True, help="Rows of a result to print.")
@click.option("--master", metavar="URL", help="Spark master (default: a local session).")
@click.option(
    "--history",
    default=_DEFAULT_HISTORY,
    show_default=True,
    metavar="PATH",
    help="The interactive shell's history file.",
)
@json_option
@pass_cli
def sql_command(
    cli: CliContext,
    statement: str | None,
    script: Path | None,
    limit: int,
    master: str | None,
    history: str,
    json_output: bool,
) -> None:
    """Run Iceberg SQL (STATEMENT, -f FILE, or an interactive shell) on Spark."""
    if statement is not None and script is not None:
        raise click.UsageError("give a STATEMENT or -f FILE, not both")
    text = script.read_text() if script is not None else statement
    catalog = cli.catalog()
    as_json = cli.wants_json(json_output)
    from icepark.spark.session import spark_session

    with spark_session(master, "icepark-sql") as spark:
        if text is not None:
            _run(spark, catalog, text, limit, as_json)
        else:
            _shell(spark, catalog, limit, as_json, history)
