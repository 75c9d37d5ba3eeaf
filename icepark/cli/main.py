"""The ``icepark`` command: global options, the command group and error handling.

Expected failures (any ``IceparkError``) print one line on stderr and exit with status 1;
status 2 stays click's usage error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from icepark.cli.commands_catalog import namespaces_command, tables_command
from icepark.cli.commands_compact import compact_commands
from icepark.cli.commands_data_files import files_command
from icepark.cli.commands_doctor import doctor_command
from icepark.cli.commands_explain import explain_command
from icepark.cli.commands_files import avro_command, metadata_command
from icepark.cli.commands_inspect import inspect_command
from icepark.cli.commands_scan import scan_command
from icepark.cli.commands_serve import serve_command
from icepark.cli.commands_sql import sql_command
from icepark.cli.commands_stream import changes_command, follow_command
from icepark.cli.commands_table import describe_command, snapshots_command
from icepark.cli.commands_ui import ui_command
from icepark.cli.commands_upkeep import UPKEEP_COMMANDS
from icepark.cli.context import CliContext
from icepark.cli.output import one_line
from icepark.errors import IceparkError

__all__ = ["cli", "main"]


class _IceparkGroup(click.Group):
    """A group that turns icepark's own errors into a clean message and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except IceparkError as exc:
            raise click.ClickException(one_line(str(exc)) or type(exc).__name__) from exc


@click.group(cls=_IceparkGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--catalog", "catalog_name", metavar="NAME", help="Catalog name from ~/.icepark.yaml."
)
@click.option("--uri", metavar="URI", help="Catalog URI (e.g. sqlite:///path/catalog.db).")
@click.option("--warehouse", metavar="PATH", help="Warehouse location (a folder or s3://...).")
@click.option(
    "--type",
    "catalog_type",
    type=click.Choice(["sql", "filesystem", "rest"], case_sensitive=False),
    help="Catalog type (guessed from the URI when omitted: http(s):// is rest).",
)
@click.option(
    "--credential",
    metavar="ID:SECRET",
    envvar="ICEPARK_CATALOG_CREDENTIAL",
    show_envvar=True,
    help="A REST catalog's OAuth2 client credentials (client_id:client_secret).",
)
@click.option("--json", "json_output", is_flag=True, help="Print JSON instead of text.")
@click.version_option(package_name="icepark", prog_name="icepark")
@click.pass_context
def cli(
    ctx: click.Context,
    catalog_name: str | None,
    uri: str | None,
    warehouse: str | None,
    catalog_type: str | None,
    credential: str | None,
    json_output: bool,
) -> None:
    """Inspect Apache Iceberg catalogs, tables and their files.

    The catalog comes from these options, else ICEPARK_CATALOG_URI, ICEPARK_WAREHOUSE and
    ICEPARK_CATALOG_TYPE (and ICEPARK_CATALOG_CREDENTIAL for a REST catalog), else
    ~/.icepark.yaml, else a SQLite catalog in ./warehouse.
    """
    ctx.obj = CliContext(
        catalog_name=catalog_name,
        uri=uri,
        warehouse=warehouse,
        catalog_type=catalog_type.lower() if catalog_type else None,
        credential=credential,
        json_output=json_output,
    )


for _command in (
    namespaces_command,
    tables_command,
    describe_command,
    snapshots_command,
    metadata_command,
    avro_command,
    scan_command,
    *compact_commands,
    explain_command,
    doctor_command,
    files_command,
    inspect_command,
    *UPKEEP_COMMANDS,
    changes_command,
    follow_command,
    serve_command,
    ui_command,
    sql_command,
):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script's entry point."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="icepark")
