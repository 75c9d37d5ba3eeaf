"""Table upkeep from the command line: ``expire``, ``remove-orphans``, ``rollback``,
``cherrypick`` and ``fast-forward``.

The destructive verbs print what they would delete with ``--dry-run`` and show a progress bar
(on stderr, when it is a terminal) while deleting; ``--json`` prints one document for scripts.
Times (``--older-than``, ``--to-time``) are an ISO date or time (UTC unless it says), epoch
milliseconds, or an age such as ``7d``, ``12h``, ``30m`` or ``90s`` (that long ago).
"""

from __future__ import annotations

import datetime as dt
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from icepark.cli.commands_table import open_table
from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import (
    add_row,
    emit_json,
    iso_utc,
    json_option,
    make_console,
    new_table,
    print_key_values,
)
from icepark.errors import ValidationError
from icepark.table import Table
from icepark.table.units import human_bytes

__all__ = [
    "UPKEEP_COMMANDS",
    "cherrypick_command",
    "expire_command",
    "fast_forward_command",
    "parse_time",
    "remove_orphans_command",
    "rollback_command",
]

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}


def parse_time(text: str, now_ms: int | None = None) -> int:
    """Epoch milliseconds from an ISO date/time, epoch milliseconds or an age (``7d``)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    age = _AGE.match(text)
    if age:
        return now - int(float(age.group(1)) * _UNIT_MS[age.group(2).lower()])
    if text.strip().isdigit():
        return int(text.strip())
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(
            f"Invalid time {text!r}: use an ISO date or time, epoch milliseconds, or an age "
            "such as 7d, 12h, 30m"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def _time_option(value: str | None) -> int | None:
    return None if value is None else parse_time(value)


@contextmanager
def _progress(label: str, enabled: bool) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (only on a terminal); yields ``update(done, total)``."""
    console = Console(stderr=True)
    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not (enabled and console.is_terminal),
    )
    task = bar.add_task(label, total=None)
    with bar:

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _print_files(console: Console, heading: str, paths: Sequence[str]) -> None:
    console.print(f"{heading} ({len(paths)}):")
    for path in paths:
        console.print(f"  {path}")


# -- expire ------------------------------------------------------------------------------------


@click.command("expire")
@click.argument("table_name", metavar="TABLE")
@click.option("--older-than", metavar="TIME", help="Expire snapshots older than this.")
@click.option("--retain-last", type=click.IntRange(min=1), help="Snapshots each branch keeps.")
@click.option(
    "--snapshot-id", "snapshot_ids", type=int, multiple=True, help="Also expire this snapshot."
)
@click.option(
    "--clean-expired-metadata", is_flag=True, help="Remove schemas and specs no longer used."
)
@click.option("--dry-run", is_flag=True, help="Commit and delete nothing; show what would go.")
@json_option
@pass_cli
def expire_command(
    cli: CliContext,
    table_name: str,
    older_than: str | None,
    retain_last: int | None,
    snapshot_ids: tuple[int, ...],
    clean_expired_metadata: bool,
    dry_run: bool,
    json_output: bool,
) -> None:
    """Expire a table's old snapshots and delete the files only they reached.

    Without options the table's history.expire.* properties decide (snapshots older than
    5 days go, each branch keeps at least one); branches and tags keep their own retention.
    """
    table = open_table(cli, table_name)
    as_json = cli.wants_json(json_output)
    with _progress("deleting files", not as_json and not dry_run) as update:
        result = table.expire_snapshots(
            older_than=_time_option(older_than),
            retain_last=retain_last,
            snapshot_ids=list(snapshot_ids) or None,
            clean_expired_metadata=clean_expired_metadata,
            dry_run=dry_run,
            progress=update,
        )
    if as_json:
        emit_json({"table": table.name, **result.to_dict()})
        sys.exit(1 if result.failed else 0)
    console = make_console()
    verb = "would expire" if dry_run else "expired"
    ids = ", ".join(str(i) for i in result.expired_snapshot_ids) or "none"
    console.print(f"{table.name}: {verb} {len(result.expired_snapshot_ids)} snapshots ({ids})")
    if result.removed_refs:
        console.print(f"  refs removed: {', '.join(result.removed_refs)}")
    grid = new_table("files", "count")
    for name, count in result.counts().items():
        add_row(grid, name.removeprefix("deleted_").removesuffix("_count").replace("_", " "), count)
    console.print(grid)
    done = "would free" if dry_run else "freed"
    console.print(
        f"  {done} {len(result.deleted_files)} files, {human_bytes(result.deleted_bytes)}"
    )
    if dry_run:
        _print_files(console, "files that would be deleted", result.deleted_files)
    if result.failed:
        _print_files(console, "files that could not be deleted", sorted(result.failed))
        sys.exit(1)


# -- remove-orphans ----------------------------------------------------------------------------


@click.command("remove-orphans")
@click.argument("table_name", metavar="TABLE")
@click.option(
    "--older-than", metavar="TIME", help="Only files older than this (default: 3 days ago)."
)
@click.option("--location", metavar="PATH", help="Only under this folder of the table.")
@click.option(
    "--prefix-mismatch-mode",
    type=click.Choice(["error", "ignore", "delete"], case_sensitive=False),
    default="error",
    show_default=True,
    help="What to do with a file referenced under another scheme or authority.",
)
@click.option("--allow-recent", is_flag=True, help="Allow --older-than less than 24 hours ago.")
@click.option("--dry-run", is_flag=True, help="Delete nothing; list the orphan files.")
@json_option
@pass_cli
def remove_orphans_command(
    cli: CliContext,
    table_name: str,
    older_than: str | None,
    location: str | None,
    prefix_mismatch_mode: str,
    allow_recent: bool,
    dry_run: bool,
    json_output: bool,
) -> None:
    """Delete files under a table's location that none of its metadata references."""
    table = open_table(cli, table_name)
    as_json = cli.wants_json(json_output)
    with _progress("deleting orphan files", not as_json and not dry_run) as update:
        result = table.remove_orphan_files(
            older_than=_time_option(older_than),
            location=location,
            dry_run=dry_run,
            prefix_mismatch_mode=prefix_mismatch_mode.lower(),
            allow_recent=allow_recent,
            progress=update,
        )
    if as_json:
        emit_json({"table": table.name, **result.to_dict()})
        sys.exit(1 if result.failed else 0)
    console = make_console()
    size = human_bytes(result.orphan_bytes)
    if dry_run:
        _print_files(console, f"{table.name}: orphan files ({size})", result.orphan_file_locations)
    else:
        _print_files(console, f"{table.name}: deleted orphan files ({size})", result.deleted)
    if result.failed:
        _print_files(console, "files that could not be deleted", sorted(result.failed))
        sys.exit(1)


# -- snapshot management -----------------------------------------------------------------------


def _report(
    table: Table, before: int | None, as_json: bool, what: str, extra: dict[str, Any]
) -> None:
    current = table.current_snapshot()
    after = None if current is None else current.snapshot_id
    if as_json:
        emit_json(
            {
                "table": table.name,
                "previous_snapshot_id": before,
                "current_snapshot_id": after,
                **extra,
            }
        )
        return
    console = make_console()
    console.print(f"{table.name}: {what}")
    print_key_values(
        console,
        [
            ("previous snapshot", before),
            ("current snapshot", after),
            ("committed at", None if current is None else iso_utc(current.timestamp_ms)),
            *extra.items(),
        ],
    )


def _current_id(table: Table) -> int | None:
    current = table.current_snapshot()
    return None if current is None else current.snapshot_id


@click.command("rollback")
@click.argument("table_name", metavar="TABLE")
@click.argument("snapshot_id", type=int, required=False)
@click.option("--to-time", metavar="TIME", help="Roll back to the snapshot current then.")
@json_option
@pass_cli
def rollback_command(
    cli: CliContext,
    table_name: str,
    snapshot_id: int | None,
    to_time: str | None,
    json_output: bool,
) -> None:
    """Make an ancestor of the current snapshot current again (SNAPSHOT_ID, or the newest
    committed before --to-time)."""
    if (snapshot_id is None) == (to_time is None):
        raise click.UsageError("Give either SNAPSHOT_ID or --to-time")
    table = open_table(cli, table_name)
    before = _current_id(table)
    if snapshot_id is not None:
        table.rollback_to_snapshot(snapshot_id)
    else:
        table.rollback_to_timestamp(parse_time(str(to_time)))
    _report(table, before, cli.wants_json(json_output), "rolled back", {})


@click.command("cherrypick")
@click.argument("table_name", metavar="TABLE")
@click.argument("snapshot_id", type=int)
@json_option
@pass_cli
def cherrypick_command(
    cli: CliContext, table_name: str, snapshot_id: int, json_output: bool
) -> None:
    """Apply a snapshot's changes (an append, a dynamic overwrite, or a fast-forward) to the
    current state, e.g. to publish a write staged with a WAP id."""
    table = open_table(cli, table_name)
    before = _current_id(table)
    table.cherrypick_snapshot(snapshot_id)
    _report(
        table,
        before,
        cli.wants_json(json_output),
        f"cherry-picked snapshot {snapshot_id}",
        {"source_snapshot_id": snapshot_id},
    )


@click.command("fast-forward")
@click.argument("table_name", metavar="TABLE")
@click.argument("branch")
@click.argument("to")
@json_option
@pass_cli
def fast_forward_command(
    cli: CliContext, table_name: str, branch: str, to: str, json_output: bool
) -> None:
    """Move BRANCH forward to the snapshot of ref TO (BRANCH's snapshot must be an ancestor)."""
    table = open_table(cli, table_name)
    old = table.refs().get(branch)
    table.fast_forward(branch, to)
    new = table.refs()[branch]
    info = {
        "branch": branch,
        "branch_previous_snapshot_id": None if old is None else old.snapshot_id,
        "branch_snapshot_id": new.snapshot_id,
    }
    if cli.wants_json(json_output):
        emit_json({"table": table.name, **info})
        return
    console = make_console()
    console.print(f"{table.name}: fast-forwarded {branch} to {to}")
    print_key_values(console, list(info.items()))


UPKEEP_COMMANDS = (
    expire_command,
    remove_orphans_command,
    rollback_command,
    cherrypick_command,
    fast_forward_command,
)
