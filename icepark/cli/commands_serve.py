"""``icepark serve``: the Iceberg REST catalog server over the catalog the global options name
(:func:`icepark.rest.create_app` on uvicorn), and ``icepark serve hash-secret`` for the
principals file.

Without auth the server binds to loopback only, unless ``--allow-insecure``: anyone who reaches
the port could change every table. Tokens are signed with ``ICEPARK_SERVE_TOKEN_KEY`` when set,
else a random key of this process: several processes behind one address need the variable set
to one value, or a token from one is refused by the others.
"""

from __future__ import annotations

import ipaddress
import logging
import sys

import click

from icepark.cli.context import CliContext

__all__ = ["serve_command"]

MISSING_EXTRA = "The REST catalog server needs FastAPI and uvicorn: pip install 'icepark[server]'"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _connect_help(url: str, oauth: bool) -> str:
    cred_py = ', "credential": "<client-id>:<secret>"' if oauth else ""
    cred_spark = " --conf spark.sql.catalog.rc.credential=<client-id>:<secret>" if oauth else ""
    return "\n".join(
        [
            f"icepark REST catalog at {url}",
            "  PyIceberg:   load_catalog('rc', **{'type': 'rest', 'uri': "
            f"'{url}'{cred_py.replace(chr(34), chr(39))}}})",
            "  Java Spark:  --conf spark.sql.catalog.rc=org.apache.iceberg.spark.SparkCatalog "
            f"--conf spark.sql.catalog.rc.type=rest --conf spark.sql.catalog.rc.uri={url}"
            f"{cred_spark}",
        ]
    )


@click.group("serve", invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8181, show_default=True, type=int, help="Port to bind.")
@click.option(
    "--auth",
    type=click.Choice(["none", "oauth2"]),
    default="none",
    show_default=True,
    help="none: no authentication (loopback only); oauth2: bearer tokens for principals.",
)
@click.option(
    "--principals",
    "principals_file",
    type=click.Path(exists=True, dir_okay=False),
    help="Principals YAML file (with --auth oauth2).",
)
@click.option("--prefix", metavar="P", help="Serve the catalog under /v1/P/.")
@click.option("--token-ttl", default=3600, show_default=True, type=int, help="Token life, s.")
@click.option(
    "--max-body-bytes",
    default=16 * 1024 * 1024,
    show_default=True,
    type=int,
    help="Larger request bodies get 413.",
)
@click.option("--allow-insecure", is_flag=True, help="Allow --auth none on a non-loopback address.")
@click.option(
    "--vend-credentials",
    type=click.Choice(["none", "static", "sts"]),
    default="none",
    show_default=True,
    help="Hand clients storage credentials with each table: the catalog's own s3.* keys "
    "(static) or STS AssumeRole credentials scoped to the table (sts).",
)
@click.option("--sts-role-arn", metavar="ARN", help="Role to assume (with --vend-credentials sts).")
@click.option(
    "--sts-duration",
    default=3600,
    show_default=True,
    type=click.IntRange(900, 43200),
    help="Life of STS credentials, s.",
)
@click.pass_context
def serve_command(
    ctx: click.Context,
    host: str,
    port: int,
    auth: str,
    principals_file: str | None,
    prefix: str | None,
    token_ttl: int,
    max_body_bytes: int,
    allow_insecure: bool,
    vend_credentials: str,
    sts_role_arn: str | None,
    sts_duration: int,
) -> None:
    """Serve the catalog over the Iceberg REST protocol (PyIceberg, Java, Trino, ...)."""
    if ctx.invoked_subcommand is not None:
        return
    if auth == "none" and not is_loopback(host) and not allow_insecure:
        raise click.UsageError(
            f"Refusing to serve without auth on {host}: anyone reaching it could change every "
            "table. Use --auth oauth2 --principals FILE, a loopback host, or --allow-insecure."
        )
    if auth == "oauth2" and not principals_file:
        raise click.UsageError("--auth oauth2 needs --principals FILE")
    if vend_credentials == "sts" and not sts_role_arn:
        raise click.UsageError("--vend-credentials sts needs --sts-role-arn ARN")
    try:
        import uvicorn

        from icepark.rest.server import Principals, create_app
    except ImportError as exc:
        raise click.ClickException(MISSING_EXTRA) from exc
    cli: CliContext = ctx.find_object(CliContext) or CliContext()
    principals = Principals.load(principals_file) if auth == "oauth2" and principals_file else None
    catalog = cli.catalog()
    vendor = None
    if vend_credentials != "none":
        from icepark.rest.server.credentials import vendor_from

        try:
            vendor = vendor_from(
                vend_credentials,
                catalog.properties,
                role_arn=sts_role_arn,
                duration_seconds=sts_duration,
            )
        except ImportError as exc:
            raise click.ClickException(str(exc)) from exc
    app = create_app(
        catalog,
        auth=principals,
        prefix=prefix,
        token_ttl_seconds=token_ttl,
        max_body_bytes=max_body_bytes,
        credentials=vendor,
    )
    access = logging.getLogger("icepark.rest.server")
    if not access.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
        access.setLevel(logging.INFO)
        access.propagate = False
    shown_host = f"[{host}]" if ":" in host else host
    click.echo(_connect_help(f"http://{shown_host}:{port}", principals is not None), err=True)
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning")


@serve_command.command("hash-secret")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the secret from stdin (one line).")
def hash_secret_command(from_stdin: bool) -> None:
    """Print a salted PBKDF2 hash of a client secret for the principals file."""
    from icepark.rest.server.security import hash_secret  # no FastAPI needed

    if from_stdin:
        secret = sys.stdin.readline().rstrip("\r\n")
    else:
        secret = click.prompt("Client secret", hide_input=True, confirmation_prompt=True)
    if not secret:
        raise click.UsageError("The secret is empty")
    click.echo(hash_secret(secret))
