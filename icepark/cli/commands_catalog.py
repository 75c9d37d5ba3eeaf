"""``icepark namespaces`` and ``icepark tables``: what the catalog holds.

Text output is one dotted name a line (easy to pipe); JSON output has the shapes of the REST
catalog's list responses: ``{"namespaces": [["db"], ...]}`` and
``{"identifiers": [{"namespace": ["db"], "name": "t"}, ...]}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from icepark.cli.context import CliContext, pass_cli
from icepark.cli.output import emit_json, json_option

if TYPE_CHECKING:
    from icepark.catalog.base import Catalog

__all__ = ["namespaces_command", "tables_command"]

Identifier = tuple[str, ...]


def _identifier(name: str) -> Identifier:
    from icepark.catalog.base import to_identifier

    return to_identifier(name)


def _walk_namespaces(catalog: Catalog, parent: Identifier = ()) -> Iterator[Identifier]:
    """Every namespace below ``parent``, depth first."""
    for namespace in catalog.list_namespaces(parent):
        if len(namespace) <= len(parent) or namespace[: len(parent)] != parent:
            continue  # defensive: never recurse into the parent itself
        yield namespace
        yield from _walk_namespaces(catalog, namespace)


@click.command("namespaces")
@click.argument("parent", required=False)
@json_option
@pass_cli
def namespaces_command(cli: CliContext, parent: str | None, json_output: bool) -> None:
    """List the namespaces (directly below PARENT when given)."""
    parent_id = _identifier(parent) if parent else ()
    found = cli.catalog().list_namespaces(parent_id)
    if cli.wants_json(json_output):
        emit_json({"namespaces": [list(ns) for ns in found]})
        return
    for namespace in found:
        click.echo(".".join(namespace))


@click.command("tables")
@click.argument("namespace", required=False)
@json_option
@pass_cli
def tables_command(cli: CliContext, namespace: str | None, json_output: bool) -> None:
    """List the tables of NAMESPACE (of every namespace when omitted)."""
    catalog = cli.catalog()
    if namespace:
        namespaces: list[Identifier] = [_identifier(namespace)]
    else:
        namespaces = list(_walk_namespaces(catalog))
    found: list[Identifier] = []
    for ns in namespaces:
        found.extend(catalog.list_tables(ns))
    if cli.wants_json(json_output):
        emit_json({"identifiers": [{"namespace": list(t[:-1]), "name": t[-1]} for t in found]})
        return
    for table in found:
        click.echo(".".join(table))
