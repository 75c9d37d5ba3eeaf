"""``icepark ui``: the read-only web page over the catalog the global options (or ``--catalog``)
name, served by uvicorn (:func:`icepark.ui.create_ui_app`); ``icepark ui TABLE`` checks the
table exists and prints the address of its page.

It binds to loopback by default; another address needs ``--allow-remote``, since the page
shows every table's schema, properties and file paths to whoever reaches the port. The page
answers only the ``Host`` names it is served on (loopback names, plus ``--host`` when remote;
a wildcard bind such as ``0.0.0.0`` answers any name), which keeps a hostile site that rebinds
its name to 127.0.0.1 from reading it.
"""

from __future__ import annotations

import ipaddress

import click

from icepark.cli.commands_serve import is_loopback
from icepark.cli.commands_table import open_table
from icepark.cli.context import CliContext, pass_cli
from icepark.ui.urls import DEFAULT_PORT, page_url

__all__ = ["ui_command"]

MISSING_EXTRA = "The web page needs FastAPI, uvicorn and Jinja2: pip install 'icepark[server]'"


def _allowed_hosts(host: str, loopback: tuple[str, ...]) -> list[str]:
    """The ``Host`` names the page answers when bound to ``host``."""
    try:
        if ipaddress.ip_address(host).is_unspecified:  # every interface: any name reaches it
            return ["*"]
    except ValueError:
        pass
    shown = f"[{host}]" if ":" in host else host
    return list(loopback) + ([shown] if shown not in loopback else [])


def _use_catalog(ctx: click.Context, _param: click.Parameter, name: str | None) -> None:
    """``icepark ui --catalog NAME`` is the global ``--catalog NAME``: it names the catalog of
    the command's :class:`CliContext`, which opens it."""
    if name:
        ctx.ensure_object(CliContext).catalog_name = name


@click.command("ui")
@click.argument("table_name", metavar="[TABLE]", required=False)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, help="Port to bind.")
@click.option(
    "--catalog",
    metavar="NAME",
    expose_value=False,
    callback=_use_catalog,
    help="Catalog name from ~/.icepark.yaml (same as the global --catalog).",
)
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host.")
@pass_cli
def ui_command(
    cli: CliContext, table_name: str | None, host: str, port: int, allow_remote: bool
) -> None:
    """Serve a read-only web page over the catalog (or open on TABLE)."""
    if not is_loopback(host) and not allow_remote:
        raise click.UsageError(
            f"Refusing to serve on {host}: the page shows every table to whoever reaches it. "
            "Use a loopback host or --allow-remote."
        )
    try:
        import uvicorn

        from icepark.ui import create_ui_app
        from icepark.ui.app import LOOPBACK_HOSTS
    except ImportError as exc:
        raise click.ClickException(MISSING_EXTRA) from exc
    catalog = cli.catalog()
    table = open_table(cli, table_name) if table_name else None  # a typed error when missing
    if table is not None and table.catalog is None:
        raise click.UsageError(f"{table_name} is a metadata file: the page shows catalog tables")
    app = create_ui_app(catalog, allowed_hosts=_allowed_hosts(host, LOOPBACK_HOSTS))
    shown = page_url(host, port, table.identifier if table is not None else None)
    click.echo(f"icepark ui: {shown}  (read-only; Ctrl+C stops)", err=True)
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning")
