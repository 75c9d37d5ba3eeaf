"""``icepark doctor``: a table's health at a glance, each finding with the command that fixes
it (see :mod:`icepark.table.maintenance.doctor`); ``--json`` for monitoring (exit status 0
either way)."""

from __future__ import annotations

import click
from rich.table import Table as RichTable
from rich.text import Text

from icepark.cli.commands_table import open_table
from icepark.cli.commands_upkeep import parse_time
from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import emit_json, json_option, make_console
from icepark.table.maintenance.doctor import HealthReport, diagnose

__all__ = ["doctor_command"]

_STYLE = {"ok": "green", "info": "cyan", "warn": "yellow"}


def _numbers(report: HealthReport) -> RichTable:
    out = RichTable(title=f"{report.table}  ({report.location})", show_header=False)
    out.add_column("area", style="bold")
    out.add_column("numbers")
    s, m, d, x = report.snapshots, report.manifests, report.data_files, report.delete_files
    out.add_row(
        "snapshots",
        f"{s['count']} ({s['refs']} refs), oldest {s['oldest_age_days']} days, newest "
        f"{s['newest_age_days']} days; {s['expirable_by_retention']} past retention",
    )
    mf = report.metadata_files
    out.add_row(
        "metadata files",
        f"{mf['in_folder']} in the folder ({mf['bytes']:,} bytes), {mf['in_log']} in the log "
        f"(max {mf['previous_versions_max']}), deleted on commit: {mf['delete_after_commit']}",
    )
    out.add_row(
        "manifests",
        f"{m['count']} ({m['data']} data, {m['delete']} delete), {m['total_bytes']:,} bytes, "
        f"mean {m['mean_bytes']:,}; {m['small']} small",
    )
    buckets = ", ".join(f"{label}: {n}" for label, n in d["by_size"].items() if n)
    out.add_row(
        "data files",
        f"{d['count']} ({d['bytes']:,} bytes, {d['records']:,} rows); {buckets or 'none'}; "
        f"small: {d['small_ratio']:.0%}",
    )
    out.add_row(
        "delete files",
        f"{x['position']} position, {x['deletion_vector']} deletion vectors, {x['equality']} "
        f"equality; {x['hidden_share']:.1%} of rows hidden",
    )
    if report.orphans is not None:
        o = report.orphans
        out.add_row("orphan candidates", f"{o['count']} files, {o['bytes']:,} bytes")
    return out


@click.command("doctor")
@click.argument("table_name", metavar="TABLE")
@click.option("--orphans/--no-orphans", default=True, help="List storage for orphan files.")
@click.option(
    "--orphans-older-than",
    metavar="TIME",
    help="Count orphan candidates older than this (default: 3 days ago), e.g. 10m after a "
    "crashed write.",
)
@json_option
@pass_cli
def doctor_command(
    cli: CliContext,
    table_name: str,
    orphans: bool,
    orphans_older_than: str | None,
    json_output: bool,
) -> None:
    """Show the health of TABLE and the commands that fix what is found."""
    table = open_table(cli, table_name)
    cutoff = None if orphans_older_than is None else parse_time(orphans_older_than)
    report = diagnose(table, orphans=orphans, orphans_older_than=cutoff)
    if cli.wants_json(json_output):
        emit_json(report.to_dict())
        return
    console = make_console()
    console.print(_numbers(report))
    for f in report.findings:
        line = Text("  ")
        line.append(f"{f.level:>4}", style=_STYLE[f.level])
        line.append(f" {f.area}: {f.message}")
        if f.fix:
            line.append("\n       fix: ")
            line.append(f.fix, style="bold")
        console.print(line)
