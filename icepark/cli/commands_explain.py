"""``icepark explain``: the pruning funnel of a scan, step by step (no data is read).

Shows how many manifests the snapshot has and how many the partition summaries keep, how many
data files the partition values and then the column metrics keep, the delete files attached,
the residual filter per partition spec, and the files, bytes and records left to read, with
the time each step took (see :mod:`icepark.planning.explain`).
"""

from __future__ import annotations

import click

from icepark.cli.commands_table import open_table
from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import emit_json, json_option

__all__ = ["explain_command"]


@click.command("explain")
@click.argument("table_name", metavar="TABLE")
@click.option(
    "--filter",
    "row_filter",
    metavar="EXPR",
    help="Row filter, e.g. \"id > 5 and ts >= '2024-01-01'\".",
)
@click.option("--snapshot-id", type=int, help="Explain a scan of this snapshot.")
@click.option("--ref", metavar="NAME", help="Explain a scan of this branch or tag.")
@json_option
@pass_cli
def explain_command(
    cli: CliContext,
    table_name: str,
    row_filter: str | None,
    snapshot_id: int | None,
    ref: str | None,
    json_output: bool,
) -> None:
    """Show how a scan of TABLE is pruned: manifests, files, deletes, residuals, times."""
    table = open_table(cli, table_name)
    scan = table.scan(filter=row_filter, snapshot_id=snapshot_id, ref=ref)
    explanation = scan.explain(table.name)
    if cli.wants_json(json_output):
        emit_json(explanation.to_dict())
        return
    click.echo(str(explanation))
