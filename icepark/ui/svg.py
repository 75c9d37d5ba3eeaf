"""Charts as inline SVG, drawn on the server: nothing is fetched, no script runs.

Every function returns :class:`markupsafe.Markup` ready to drop into a page; every piece of
text that reaches the SVG (partition values, snapshot labels, file sizes) goes through
:func:`markupsafe.escape` here, so a chart is as safe as the autoescaped page around it.

* :func:`bar_chart`: horizontal bars, one per labelled value (files per partition, manifests
  per snapshot), each with a tooltip;
* :func:`histogram`: vertical bars over bins, with an optional marker line (the target file
  size on the file size histogram);
* :func:`funnel`: the steps of a pruning funnel, each bar as wide as what the step kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

__all__ = ["Bar", "bar_chart", "histogram", "funnel", "badge_svg", "svg_chart"]

_BADGE_COLORS = {"ok": "#3f9e6e", "info": "#2c7fc2", "warn": "#c27c2c"}

_FONT = 'font-family="system-ui, sans-serif" font-size="12"'


@dataclass(frozen=True)
class Bar:
    """One bar: its label, its value (the bar's length), the text shown beside it and the
    tooltip (both default to the value)."""

    label: str
    value: float
    text: str = ""
    tip: str = ""


def svg_chart(width: int, height: int, body: list[str], label: str, css_class: str) -> Markup:
    """An inline ``<svg>`` of ``body`` (markup already escaped) with its size, class and
    accessible label (escaped here), in the charts' font."""
    return Markup(
        f'<svg class="{escape(css_class)}" role="img" aria-label="{escape(label)}" '
        f'xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" {_FONT}>' + "".join(body) + "</svg>"
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def bar_chart(
    bars: Sequence[Bar],
    *,
    label: str,
    width: int = 720,
    label_width: int = 220,
    css_class: str = "chart bars",
    color: str = "#4a7bd0",
) -> Markup:
    """Horizontal bars, longest value full width; an empty list draws a note instead."""
    row = 20
    if not bars:
        return svg_chart(
            width, row + 8, [f'<text x="4" y="16">{escape("(nothing)")}</text>'], label, css_class
        )
    top = max(b.value for b in bars) or 1
    room = width - label_width - 180
    body = []
    for i, b in enumerate(bars):
        y = i * row + 4
        length = max(1.0, room * b.value / top) if b.value else 0.0
        tip = escape(b.tip or b.text or f"{b.value:g}")
        body.append(
            f'<g class="bar"><title>{escape(b.label)}: {tip}</title>'
            f'<text x="{label_width - 6}" y="{y + 13}" text-anchor="end">'
            f"{escape(_clip(b.label, 34))}</text>"
            f'<rect x="{label_width}" y="{y + 2}" width="{length:.1f}" height="{row - 6}" '
            f'fill="{escape(color)}"/>'
            f'<text x="{label_width + length + 4:.1f}" y="{y + 13}">'
            f"{escape(b.text or f'{b.value:g}')}</text></g>"
        )
    return svg_chart(width, len(bars) * row + 8, body, label, css_class)


def histogram(
    counts: Sequence[int],
    edges: Sequence[float],
    *,
    label: str,
    edge_text: Sequence[str],
    marker: float | None = None,
    marker_text: str = "",
    width: int = 720,
    height: int = 220,
    css_class: str = "chart histogram",
) -> Markup:
    """Bars over the bins ``edges[i]..edges[i+1]`` (``len(edges) == len(counts) + 1``), the
    bins equally wide on the page whatever their values (log-scaled edges stay readable);
    ``marker`` draws a dashed line at that value, placed by interpolating within its bin."""
    left, bottom, top_pad = 40, 36, 24
    plot_w, plot_h = width - left - 10, height - bottom - top_pad
    n = max(len(counts), 1)
    bin_w = plot_w / n
    peak = max(counts, default=0) or 1
    body = [
        f'<line x1="{left}" y1="{top_pad + plot_h}" x2="{left + plot_w}" '
        f'y2="{top_pad + plot_h}" stroke="#888"/>',
        f'<text x="{left - 4}" y="{top_pad + 4}" text-anchor="end">{peak:,}</text>',
    ]
    for i, c in enumerate(counts):
        h = plot_h * c / peak
        x = left + i * bin_w
        tip = f"{edge_text[i]} to {edge_text[i + 1]}: {c:,} files"
        body.append(
            f'<g class="bin"><title>{escape(tip)}</title><rect x="{x + 1:.1f}" '
            f'y="{top_pad + plot_h - h:.1f}" width="{max(bin_w - 2, 1):.1f}" height="{h:.1f}" '
            f'fill="#4a7bd0"/></g>'
        )
    step = max(1, len(edge_text) // 8)
    for i in range(0, len(edge_text), step):
        x = left + i * bin_w
        body.append(
            f'<text x="{x:.1f}" y="{top_pad + plot_h + 16}" text-anchor="middle">'
            f"{escape(edge_text[i])}</text>"
        )
    if marker is not None and len(edges) > 1:
        pos = _position(marker, edges)
        x = left + pos * bin_w
        body.append(
            f'<g class="marker"><line x1="{x:.1f}" y1="{top_pad - 6}" x2="{x:.1f}" '
            f'y2="{top_pad + plot_h}" stroke="#d04a4a" stroke-width="2" stroke-dasharray="5,3"/>'
            f'<text x="{x + 4:.1f}" y="{top_pad - 8}" fill="#d04a4a">{escape(marker_text)}</text>'
            "</g>"
        )
    return svg_chart(width, height, body, label, css_class)


def _position(value: float, edges: Sequence[float]) -> float:
    """Where ``value`` falls, in bins from the left (fractional within its bin)."""
    if value <= edges[0]:
        return 0.0
    for i in range(len(edges) - 1):
        lo, hi = edges[i], edges[i + 1]
        if value < hi:
            return i + (value - lo) / (hi - lo if hi > lo else 1)
    return float(len(edges) - 1)


def funnel(
    steps: Sequence[tuple[str, int, int, str]],
    *,
    label: str,
    width: int = 720,
    css_class: str = "chart funnel",
) -> Markup:
    """The steps ``(name, before, after, note)`` of a funnel: each bar is as wide as what
    the step kept, relative to the widest count, centred, with what it dropped beside it."""
    row = 34
    widest = max((max(b, a) for _, b, a, _ in steps), default=0) or 1
    room = width - 330
    body = []
    for i, (name, before, after, note) in enumerate(steps):
        y = i * row + 4
        w = max(2.0, room * after / widest) if after else 2.0
        x = 150 + (room - w) / 2
        dropped = before - after
        tip = f"{name}: {after:,} of {before:,} kept" + (f" ({note})" if note else "")
        body.append(
            f'<g class="step"><title>{escape(tip)}</title>'
            f'<text x="144" y="{y + 19}" text-anchor="end">{escape(_clip(name, 22))}</text>'
            f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="{row - 8}" rx="3" '
            f'fill="#3f9e6e"/>'
            f'<text x="{150 + room + 8}" y="{y + 21}">{after:,}</text>'
            f'<text x="{150 + room + 80}" y="{y + 21}" fill="#a33">'
            f"{escape(f'-{dropped:,}' if dropped else '')}</text></g>"
        )
    return svg_chart(width, len(steps) * row + 8, body, label, css_class)


def badge_svg(level: str, text: str) -> str:
    """A standalone SVG document: a rounded badge in the colour of ``level`` (``ok``,
    ``info``, ``warn``) saying ``text``."""
    color = _BADGE_COLORS.get(level, "#777")
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="110" height="20" viewBox="0 0 110 20">'
        f'<rect width="110" height="20" rx="10" fill="{color}"/>'
        f'<text x="55" y="14" text-anchor="middle" fill="#fff" {_FONT}>{escape(text)}</text>'
        "</svg>"
    )
