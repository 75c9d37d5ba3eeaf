"""``icepark changes`` and ``icepark follow``: a table's changelog, and its new rows as
snapshots land (on this machine, no Spark needed).

``changes`` prints :meth:`Table.changelog_scan` (``_change_type``, ``_change_ordinal``,
``_commit_snapshot_id`` after the table's columns); ``follow`` prints the rows each new
snapshot appends, with its id, until interrupted (Ctrl-C), from :meth:`Table.follow`.
"""

from __future__ import annotations

import json
import signal
import time
from typing import Any

import click

from icepark.cli.commands_scan import _cell, _json_value
from icepark.cli.commands_table import open_table
from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import add_row, json_option, make_console, new_table
from icepark.table.incremental.follow import follow

__all__ = ["changes_command", "follow_command"]


def _columns(columns: str | None) -> list[str] | None:
    return [c.strip() for c in columns.split(",") if c.strip()] if columns else None


@click.command("changes")
@click.argument("table_name", metavar="TABLE")
@click.option(
    "--from",
    "from_snapshot",
    type=int,
    required=True,
    metavar="SNAPSHOT",
    help="Changes after this snapshot.",
)
@click.option("--to", "to_snapshot", type=int, metavar="SNAPSHOT", help="Up to this snapshot.")
@click.option("--filter", "row_filter", metavar="EXPR", help="Row filter.")
@click.option("--columns", metavar="A,B,...", help="Columns to print.")
@click.option(
    "--identifier-columns",
    metavar="A,B,...",
    help="Compute UPDATE_BEFORE/UPDATE_AFTER on these columns.",
)
@click.option("--compute-updates", is_flag=True, help="Compute update images (identifier fields).")
@click.option("--net-changes", is_flag=True, help="Net changes across the snapshots.")
@json_option
@pass_cli
def changes_command(
    cli: CliContext,
    table_name: str,
    from_snapshot: int,
    to_snapshot: int | None,
    row_filter: str | None,
    columns: str | None,
    identifier_columns: str | None,
    compute_updates: bool,
    net_changes: bool,
    json_output: bool,
) -> None:
    """Print the rows TABLE's snapshots after --from inserted and deleted."""
    table = open_table(cli, table_name)
    scan = table.changelog_scan(
        from_snapshot_id=from_snapshot,
        to_snapshot_id=to_snapshot,
        filter=row_filter,
        columns=_columns(columns),
        compute_updates=compute_updates,
        identifier_columns=_columns(identifier_columns),
        net_changes=net_changes,
    )
    names = scan.columns()
    if cli.wants_json(json_output):
        for batch in scan.to_batches():
            for row in batch.to_pylist():
                click.echo(json.dumps({k: _json_value(row[k]) for k in names}))
        return
    out = new_table(*names)
    for batch in scan.to_batches():
        for row in batch.to_pylist():
            add_row(out, *(_cell(row[k]) for k in names))
    make_console().print(out)


@click.command("follow")
@click.argument("table_name", metavar="TABLE")
@click.option("--start-snapshot-id", type=int, help="Start with this snapshot's appends.")
@click.option(
    "--start-timestamp", type=int, metavar="MS", help="Start at the first snapshot from then."
)
@click.option("--interval", type=float, default=1.0, show_default=True, help="Seconds per poll.")
@click.option("--filter", "row_filter", metavar="EXPR", help="Row filter.")
@click.option("--columns", metavar="A,B,...", help="Columns to print.")
@click.option("--branch", default="main", show_default=True, help="Branch to follow.")
@json_option
@pass_cli
def follow_command(
    cli: CliContext,
    table_name: str,
    start_snapshot_id: int | None,
    start_timestamp: int | None,
    interval: float,
    row_filter: str | None,
    columns: str | None,
    branch: str,
    json_output: bool,
) -> None:
    """Print the rows new snapshots of TABLE append, as they land (Ctrl-C or SIGTERM stops it)."""
    table = open_table(cli, table_name)
    as_json = cli.wants_json(json_output)
    console = make_console()
    stop = _StopOnSignal()
    stream = follow(
        table,
        start_snapshot_id,
        start_timestamp,
        interval,
        row_filter,
        _columns(columns),
        branch=branch,
        sleep=stop.sleep,
    )
    try:
        stop.install()
        for item in stream:
            names = item.batch.schema.names
            rows = item.batch.to_pylist()
            if as_json:
                for row in rows:
                    out = {"_snapshot_id": item.snapshot_id}
                    out.update({k: _json_value(row[k]) for k in names})
                    click.echo(json.dumps(out), nl=True)
                continue
            table_out = new_table("_snapshot_id", *names)
            for row in rows:
                add_row(table_out, str(item.snapshot_id), *(_cell(row[k]) for k in names))
            console.print(table_out)
            if stop.requested:
                break
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        stop.uninstall()


class _Stopped(Exception):
    """Ctrl-C (or SIGTERM) arrived while ``follow`` waited between polls."""


class _StopOnSignal:
    """SIGINT and SIGTERM stop ``follow`` at its next wait (or after the snapshot being
    printed) rather than as a ``KeyboardInterrupt`` raised wherever the interpreter happens
    to be: one that lands in a weak reference's callback or a ``__del__`` is printed as
    "Exception ignored" and lost, and the loop would poll on forever. The handler only sets
    a flag (nothing in it can block), and the waits are short sleeps that look at it; a
    second signal raises ``KeyboardInterrupt`` at once (a poll stuck on storage)."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:  # asked twice: stop wherever it is
            raise KeyboardInterrupt
        self.requested = True

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)

    def uninstall(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.requested and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))
        if self.requested:
            raise _Stopped
