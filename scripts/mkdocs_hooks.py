"""MkDocs hooks of the documentation site (mkdocs.yml): the pages that must not drift from
the code are generated from it when the site is built, never copied by hand.

A page asks for generated Markdown with an HTML comment on a line of its own:

``<!-- generated: cli -->``
    every verb, sub-verb, argument and option of the ``icepark`` command, from click;
``<!-- generated: properties -->``
    every table property, from :data:`icepark.spec.properties.ALL` (the one definition);
``<!-- generated: procedure NAME -->``
    a ``CALL system.NAME`` procedure's parameters and output columns, from
    ``icepark.spark.sql.extensions.PROCEDURES``; the build fails unless every procedure is
    documented once;
``<!-- chart: COLUMN -->``
    before a Markdown table: an inline SVG bar chart of the ratios (``0.85x``) in that
    column of the table (counted from 1), one bar per row, with a line at 1.0x.
"""

from __future__ import annotations

import html
import re
from typing import Any

import click
from mkdocs.exceptions import PluginError

__all__ = [
    "chart_svg",
    "cli_markdown",
    "on_page_markdown",
    "on_post_build",
    "procedure_markdown",
    "properties_markdown",
]

_MARKER = re.compile(r"^<!-- generated: (\w+)(?: ([\w-]+))? -->$", re.M)
_CHART = re.compile(r"^<!-- chart: (\d+) -->\n\n?((?:\|.*\|\n)+)", re.M)
_documented_procedures: dict[str, str] = {}


def _text(value: str) -> str:
    """Help text as Markdown that shows as typed (no HTML, no emphasis)."""
    value = html.escape(value, quote=False)
    return re.sub(r"([*_\[\]|])", r"\\\1", value)


def _paragraphs(helptext: str) -> str:
    lines = [line for line in helptext.splitlines() if line.strip() != "\b"]
    return _text(click.unstyle("\n".join(lines)).strip())


def _command(cmd: click.Command, path: list[str], parent: click.Context | None) -> list[str]:
    ctx = click.Context(cmd, info_name=path[-1], parent=parent)
    name = " ".join(path)
    out = [f"## `{name}`" if len(path) <= 2 else f"### `{name}`", ""]
    out += ["```text", " ".join(cmd.collect_usage_pieces(ctx)).join([f"{name} ", ""]), "```", ""]
    if cmd.help:
        out += [_paragraphs(cmd.help), ""]
    arguments = [p for p in cmd.params if isinstance(p, click.Argument)]
    if arguments:
        out += ["| argument | |", "| --- | --- |"]
        for arg in arguments:
            many = " (one or more)" if arg.nargs == -1 else ""
            need = "required" if arg.required else "optional"
            out.append(f"| `{arg.make_metavar(ctx)}` | {need}{many} |")
        out.append("")
    records = [p.get_help_record(ctx) for p in cmd.get_params(ctx)]
    options = [r for r in records if r is not None]
    if options:
        out += ["| option | what it does |", "| --- | --- |"]
        for opts, help_text in options:
            out.append(f"| `{opts}` | {_text(' '.join(help_text.split()))} |")
        out.append("")
    if isinstance(cmd, click.Group):
        for sub in sorted(cmd.commands):
            out += _command(cmd.commands[sub], [*path, sub], ctx)
    return out


def cli_markdown() -> str:
    """The reference of the ``icepark`` command: the global options, then each verb."""
    from icepark.cli.main import cli

    root = click.Context(cli, info_name="icepark")
    out = ["## `icepark`", "", "```text", "icepark [OPTIONS] COMMAND [ARGS]...", "```", ""]
    out += [_paragraphs(cli.help or ""), "", "| global option | what it does |", "| --- | --- |"]
    for param in cli.get_params(root):
        record = param.get_help_record(root)
        if record is not None:
            out.append(f"| `{record[0]}` | {_text(' '.join(record[1].split()))} |")
    out.append("")
    for name in sorted(cli.commands):
        out += _command(cli.commands[name], ["icepark", name], root)
    return "\n".join(out)


_KIB = 1024


def _default(name: str, value: object) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and name.endswith("-bytes") and value >= _KIB:
        for unit, size in (("GB", _KIB**3), ("MB", _KIB**2), ("KB", _KIB)):
            if value % size == 0:
                return f"{value // size} {unit} ({value:,})"
    if isinstance(value, int) and name.endswith("-ms"):
        if value >= 2**63 - 1:
            return "forever"
        for unit, size in (("days", 86_400_000), ("min", 60_000), ("s", 1000)):
            if value >= size and value % size == 0:
                return f"{value // size} {unit} ({value:,})"
    return f"{value:,}" if isinstance(value, int) else str(value)


def properties_markdown() -> str:
    """A table of every table property: name, default, allowed values and meaning."""
    from icepark.spec import properties as P

    out = ["| property | default | what it does |", "| --- | --- | --- |"]
    for name in sorted(P.ALL):
        prop = P.ALL[name]
        doc = _text(" ".join(prop.doc.split()))
        if prop.choices:
            doc += " One of " + ", ".join(f"`{c}`" for c in prop.choices) + "."
        out.append(f"| `{name}` | {_default(name, prop.default)} | {doc} |")
    for prefix in P.PREFIXES:
        out.append(
            f"| `{prefix}<column>` | `write.metadata.metrics.default` | The metrics mode of one "
            "column: none, counts, truncate(N) or full. |"
        )
    return "\n".join(out)


def procedure_markdown(name: str) -> str:
    """The parameters and output columns of ``CALL system.<name>``."""
    from icepark.spark.sql.extensions import PROCEDURES

    if name not in PROCEDURES:
        raise PluginError(f"<!-- generated: procedure {name} -->: no such procedure")
    procedure = PROCEDURES[name]
    out = ["| parameter | type | required |", "| --- | --- | --- |"]
    for param in procedure.params:
        out.append(f"| `{param.name}` | {param.kind} | {'yes' if param.required else 'no'} |")
    out += ["", "| output column | type | nullable |", "| --- | --- | --- |"]
    for column, kind, nullable in procedure.output:
        out.append(f"| `{column}` | {kind} | {'yes' if nullable else 'no'} |")
    return "\n".join(out)


_RATIO = re.compile(r"(\d+(?:\.\d+)?)x")


def chart_svg(table: str, column: int) -> str:
    """An inline SVG of horizontal bars: the first ratio in ``column`` of each row of the
    Markdown ``table`` (rows without one are left out), with a line at 1.0x."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.splitlines()][
        2:
    ]
    bars = []
    for cells in rows:
        found = _RATIO.search(cells[column - 1]) if len(cells) >= column else None
        if found:
            label = re.sub(r"[`*]|\[.*?\]\(.*?\)", "", cells[0])
            bars.append((label, float(found.group(1))))
    if not bars:
        raise PluginError(f"chart: no ratios in column {column} of the table {table[:60]!r}")
    top = max(2.0, max(v for _, v in bars) * 1.05)
    label_w, plot_w, row_h = 330, 360, 22
    height = row_h * len(bars) + 30
    scale = plot_w / top
    parts = [
        f'<svg class="icepark-chart" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {label_w + plot_w + 60} {height}" width="{label_w + plot_w + 60}" '
        f'height="{height}" style="max-width:100%;height:auto">'
    ]
    for i, (label, value) in enumerate(bars):
        y = 10 + i * row_h
        text = html.escape(label if len(label) <= 48 else label[:47] + "…")
        fill = "#3f51b5" if value <= 1.0 else "#e57373"
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 14}" text-anchor="end" font-size="12">{text}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{max(1.0, value * scale):.1f}" '
            f'height="{row_h - 8}" fill="{fill}"/>'
            f'<text x="{label_w + value * scale + 4:.1f}" y="{y + 14}" font-size="11">'
            f"{value:g}x</text>"
        )
    x1 = label_w + scale
    parts.append(
        f'<line x1="{x1:.1f}" x2="{x1:.1f}" y1="4" y2="{height - 16}" stroke="#333" '
        f'stroke-dasharray="4 3"/><text x="{x1:.1f}" y="{height - 3}" font-size="11" '
        'text-anchor="middle">1.0x</text></svg>'
    )
    return '<figure class="icepark-chart">' + "".join(parts) + "</figure>"


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Replace the page's generation markers with what they name."""

    def _generate(match: re.Match[str]) -> str:
        kind, arg = match.group(1), match.group(2)
        if kind == "cli":
            return cli_markdown()
        if kind == "properties":
            return properties_markdown()
        if kind == "procedure" and arg:
            where = _documented_procedures.setdefault(arg, page.file.src_uri)
            if where != page.file.src_uri:
                raise PluginError(f"procedure {arg} is documented twice ({where})")
            return procedure_markdown(arg)
        raise PluginError(f"{page.file.src_uri}: unknown marker {match.group(0)}")

    def _chart(match: re.Match[str]) -> str:
        return chart_svg(match.group(2), int(match.group(1))) + "\n\n" + match.group(2)

    return _MARKER.sub(_generate, _CHART.sub(_chart, markdown))


def on_pre_build(**kwargs: Any) -> None:
    _documented_procedures.clear()


def on_post_build(**kwargs: Any) -> None:
    """Fail the build when a procedure has no section."""
    from icepark.spark.sql.extensions import PROCEDURES

    missing = sorted(set(PROCEDURES) - set(_documented_procedures))
    if missing:
        raise PluginError(f"procedures without <!-- generated: procedure NAME -->: {missing}")
