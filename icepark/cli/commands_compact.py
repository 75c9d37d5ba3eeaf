"""``icepark compact``, ``icepark rewrite-manifests`` and ``icepark add-files``: table
maintenance from the command line.

``compact`` rewrites data files on Spark (:func:`icepark.spark.rewrite_data_files`): it starts
a local Spark session whose Python workers run this interpreter (so they have icepark), unless
``--master`` names another cluster, and shows a progress bar per file group on stderr.
``rewrite-manifests`` and ``add-files`` run on this machine. Each prints Java's result columns
(``--json`` for one JSON object).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from icepark.cli.commands_table import open_table
from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import add_row, json_option, make_console, new_table
from icepark.errors import ValidationError

__all__ = ["add_files_command", "compact_command", "compact_commands", "rewrite_manifests_command"]


def _print_result(cli: CliContext, result: Any, json_output: bool) -> None:
    values = result.to_dict()
    if cli.wants_json(json_output):
        click.echo(json.dumps(values))
        return
    out = new_table("result", "value")
    for key, value in values.items():
        add_row(out, key, f"{value:,}")
    make_console().print(out)


def _options(pairs: tuple[str, ...]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValidationError(f"Options are KEY=VALUE, got {pair!r}")
        options[key.strip()] = value.strip()
    return options


class _GroupBars:
    """One progress bar per file group: written, then committed (or failed)."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.tasks: dict[int, TaskID] = {}

    def __call__(self, event: str, group: Any, plan: Any) -> None:
        if self.progress is None:
            return
        key = group.info.global_index
        if key not in self.tasks:
            self.tasks[key] = self.progress.add_task(
                group.describe(plan.total_group_count), total=2
            )
        task = self.tasks[key]
        if event == "written":
            self.progress.update(task, completed=1)
        elif event == "committed":
            self.progress.update(task, completed=2)
        elif event == "failed":
            self.progress.update(
                task, description=f"[red]failed[/red] {group.describe(plan.total_group_count)}"
            )


@click.command("compact")
@click.argument("table_name", metavar="TABLE")
@click.option(
    "--strategy", type=click.Choice(["binpack", "sort"]), default="binpack", show_default=True
)
@click.option(
    "--sort-order",
    metavar="TERMS",
    help='With --strategy sort: "id desc nulls last, ts" or "zorder(a, b)" '
    "(default: the table's sort order).",
)
@click.option("--where", metavar="EXPR", help="Only files that may hold rows matching EXPR.")
@click.option(
    "--option",
    "-o",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="A rewrite option, e.g. -o min-input-files=2 -o target-file-size-bytes=134217728.",
)
@click.option("--branch", metavar="NAME", help="Compact this branch instead of main.")
@click.option("--master", metavar="URL", help="Spark master (default: a local session).")
@click.option(
    "--progress/--no-progress", default=None, help="Progress bars (default: if a terminal)."
)
@json_option
@pass_cli
def compact_command(
    cli: CliContext,
    table_name: str,
    strategy: str,
    sort_order: str | None,
    where: str | None,
    options: tuple[str, ...],
    branch: str | None,
    master: str | None,
    progress: bool | None,
    json_output: bool,
) -> None:
    """Compact the data files of TABLE on Spark (Java's rewrite_data_files)."""
    from icepark.spark import rewrite_data_files

    table = open_table(cli, table_name)
    parsed = _options(options)
    stderr = Console(stderr=True)
    show = stderr.is_terminal if progress is None else progress
    bars = (
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            console=stderr,
        )
        if show
        else None
    )
    from icepark.spark.session import spark_session

    with (
        spark_session(master, "icepark-compact") as spark,
        bars if bars is not None else contextlib.nullcontext(),
    ):
        result = rewrite_data_files(
            spark,
            table,
            strategy=strategy,
            sort_order=sort_order,
            where=where,
            options=parsed,
            branch=branch,
            progress=_GroupBars(bars),
        )
    _print_result(cli, result, json_output)


@click.command("rewrite-manifests")
@click.argument("table_name", metavar="TABLE")
@click.option("--spec-id", type=int, help="Rewrite the manifests of this partition spec.")
@click.option("--cluster-by", metavar="FIELD,...", help="Partition fields to cluster manifests by.")
@json_option
@pass_cli
def rewrite_manifests_command(
    cli: CliContext,
    table_name: str,
    spec_id: int | None,
    cluster_by: str | None,
    json_output: bool,
) -> None:
    """Regroup the manifests of TABLE by partition (Java's rewrite_manifests)."""
    table = open_table(cli, table_name)
    fields = [f.strip() for f in cluster_by.split(",") if f.strip()] if cluster_by else None
    _print_result(cli, table.rewrite_manifests(spec_id=spec_id, cluster_by=fields), json_output)


@click.command("add-files")
@click.argument("table_name", metavar="TABLE")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--check-duplicates/--no-check-duplicates",
    default=True,
    show_default=True,
    help="Refuse files the table already references.",
)
@json_option
@pass_cli
def add_files_command(
    cli: CliContext,
    table_name: str,
    paths: tuple[str, ...],
    check_duplicates: bool,
    json_output: bool,
) -> None:
    """Register existing Parquet files (or Hive-style folders of them) in TABLE."""
    table = open_table(cli, table_name)
    _print_result(cli, table.add_files(list(paths), check_duplicates), json_output)


compact_commands = (compact_command, rewrite_manifests_command, add_files_command)
