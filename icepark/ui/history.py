"""The history page's data: every snapshot with what it changed, how it relates to the
branches and tags, and the ancestry drawn as an SVG graph.

Kinds of snapshot, from the metadata alone (:mod:`icepark.table.update.wap` names the
summary properties):

* **staged** (write-audit-publish): its summary carries ``wap.id`` and no branch reaches it;
* **cherry-picked**: its summary carries ``source-snapshot-id`` (and ``published-wap-id``
  when the source was a staged snapshot); the graph draws a dashed arrow from the source;
* **orphaned**: no branch or tag reaches it (rolled back, or a branch that was removed).

The graph gives each branch a lane (``main`` first), walks each ref's ancestry from its head
and puts every snapshot on the lane of the first ref that reaches it; snapshots no ref
reaches get lanes of their own, one per chain. Rows are snapshots newest first. Each node is
a link to the snapshot's detail (its summary and the files it added and removed, read from
the manifests that snapshot wrote by the ``entries`` metadata table's columnar reader).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow.compute as pc
from markupsafe import Markup, escape

from icepark.manifest import FileContent, ManifestEntryStatus
from icepark.planning.walk import manifests_of
from icepark.spec.snapshots import Snapshot
from icepark.table.inspect.context import InspectContext
from icepark.table.inspect.files import entries_table
from icepark.table.table import Table
from icepark.table.update.wap import (
    PUBLISHED_WAP_ID_PROP,
    SOURCE_SNAPSHOT_ID_PROP,
    STAGED_WAP_ID_PROP,
)
from icepark.ui.svg import svg_chart

__all__ = [
    "SnapshotRow",
    "SnapshotDetail",
    "history_rows",
    "history_graph",
    "snapshot_detail",
    "summary_int",
    "when",
]

_LANE_COLORS = ("#4a7bd0", "#3f9e6e", "#c27c2c", "#8a4ac2", "#c24a7b", "#2c9fc2", "#777")
_ADDED, _DELETED = ManifestEntryStatus.ADDED.value, ManifestEntryStatus.DELETED.value
_CONTENT = {
    FileContent.DATA.value: "data",
    FileContent.POSITION_DELETES.value: "position deletes",
    FileContent.EQUALITY_DELETES.value: "equality deletes",
}
MAX_GRAPH_SNAPSHOTS = 300
"""The graph draws the newest this many snapshots (the table below lists all)."""


@dataclass
class SnapshotRow:
    """One snapshot as the timeline shows it."""

    snapshot_id: int
    parent_id: int | None
    sequence_number: int
    committed: str
    operation: str
    added_records: int
    deleted_records: int
    added_files: int
    removed_files: int
    added_bytes: int
    removed_bytes: int
    refs: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    source_snapshot_id: int | None = None
    lane: int = 0


def summary_int(summary: Mapping[str, str] | None, key: str) -> int | None:
    """The whole number a snapshot summary gives for ``key``; None when it is missing or not
    a number (summaries come from any writer)."""
    value = summary.get(key) if summary else None
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _sum(summary: Mapping[str, str], *keys: str) -> int:
    return sum(summary_int(summary, key) or 0 for key in keys)


def when(ms: int) -> str:
    """A commit time as the pages show it (UTC, to the second)."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _reached(table: Table, heads: list[int]) -> set[int]:
    found: set[int] = set()
    for head in heads:
        found.update(s.snapshot_id for s in table.metadata.ancestors_of(head))
    return found


def history_rows(table: Table) -> list[SnapshotRow]:
    """Every snapshot, newest first, with its refs, kinds and graph lane."""
    md = table.metadata
    snaps = sorted(md.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number), reverse=True)
    refs_at: dict[int, list[str]] = {}
    for name, ref in sorted(md.refs.items()):
        refs_at.setdefault(ref.snapshot_id, []).append(f"{ref.type.value}:{name}")
    branches = [n for n, r in md.refs.items() if r.is_branch]
    order = sorted(branches, key=lambda n: (n != "main", n)) + sorted(
        n for n, r in md.refs.items() if r.is_tag
    )
    on_branch = _reached(table, [md.refs[n].snapshot_id for n in branches])
    on_ref = _reached(table, [r.snapshot_id for r in md.refs.values()])
    lanes: dict[int, int] = {}
    lane_count = 0
    for name in order:
        chain = [s.snapshot_id for s in md.ancestors_of(md.refs[name].snapshot_id)]
        fresh = [sid for sid in chain if sid not in lanes]
        if not fresh:
            continue
        for sid in fresh:
            lanes[sid] = lane_count
        lane_count += 1
    by_id = {s.snapshot_id: s for s in snaps}
    for s in snaps:  # newest first: each unreached chain starts at its newest snapshot
        if s.snapshot_id in lanes:
            continue
        cursor: Snapshot | None = s
        while cursor is not None and cursor.snapshot_id not in lanes:
            lanes[cursor.snapshot_id] = lane_count
            parent = cursor.parent_snapshot_id
            cursor = by_id.get(parent) if parent is not None else None
        lane_count += 1
    rows = []
    for s in snaps:
        summary = dict(s.summary.properties) if s.summary else {}
        kinds = []
        if STAGED_WAP_ID_PROP in summary and s.snapshot_id not in on_branch:
            kinds.append("staged")
        source = summary.get(SOURCE_SNAPSHOT_ID_PROP)
        if source is not None:
            kinds.append("cherry-picked")
        if PUBLISHED_WAP_ID_PROP in summary:
            kinds.append("published")
        if s.snapshot_id not in on_ref and "staged" not in kinds:
            kinds.append("orphaned")
        rows.append(
            SnapshotRow(
                snapshot_id=s.snapshot_id,
                parent_id=s.parent_snapshot_id,
                sequence_number=s.sequence_number,
                committed=when(s.timestamp_ms),
                operation=str(s.operation.value) if s.operation else "",
                added_records=_sum(summary, "added-records"),
                deleted_records=_sum(
                    summary, "deleted-records", "added-position-deletes", "added-equality-deletes"
                ),
                added_files=_sum(summary, "added-data-files", "added-delete-files"),
                removed_files=_sum(summary, "deleted-data-files", "removed-delete-files"),
                added_bytes=_sum(summary, "added-files-size"),
                removed_bytes=_sum(summary, "removed-files-size"),
                refs=refs_at.get(s.snapshot_id, []),
                kinds=kinds,
                source_snapshot_id=int(source) if source and source.lstrip("-").isdigit() else None,
                lane=lanes[s.snapshot_id],
            )
        )
    return rows


def history_graph(rows: list[SnapshotRow], link: str, selected: int | None = None) -> Markup:
    """The ancestry of ``rows`` (newest first, as :func:`history_rows` gives them) as SVG;
    ``link`` is the URL a node's ``?snapshot=ID`` is appended to; the ``selected`` snapshot
    gets a ring."""
    shown = rows[:MAX_GRAPH_SNAPSHOTS]
    row_h, lane_w, left = 26, 22, 14
    lanes = max((r.lane for r in shown), default=0) + 1
    text_x = left + lanes * lane_w + 8
    width, height = max(text_x + 560, 400), len(shown) * row_h + 10
    y_of = {r.snapshot_id: i * row_h + 16 for i, r in enumerate(shown)}
    lane_of = {r.snapshot_id: r.lane for r in shown}
    body: list[str] = []

    def x(lane: int) -> int:
        return left + lane * lane_w

    for r in shown:  # edges first, under the nodes
        if r.parent_id in y_of:
            x1, y1 = x(r.lane), y_of[r.snapshot_id]
            x2, y2 = x(lane_of[r.parent_id]), y_of[r.parent_id]
            color = _LANE_COLORS[r.lane % len(_LANE_COLORS)]
            body.append(
                f'<path d="M{x1},{y1} C{x1},{y1 + 12} {x2},{y2 - 12} {x2},{y2}" '
                f'fill="none" stroke="{color}" stroke-width="2"/>'
            )
        if r.source_snapshot_id in y_of:
            x1, y1 = x(r.lane), y_of[r.snapshot_id]
            x2, y2 = x(lane_of[r.source_snapshot_id]), y_of[r.source_snapshot_id]
            body.append(
                f'<path class="picked" d="M{x2},{y2} C{x2 + 30},{y2} {x1 + 30},{y1} {x1},{y1}" '
                'fill="none" stroke="#c24a7b" stroke-width="1.5" stroke-dasharray="4,3"/>'
            )
    for r in shown:
        cx, cy = x(r.lane), y_of[r.snapshot_id]
        color = _LANE_COLORS[r.lane % len(_LANE_COLORS)]
        hollow = "staged" in r.kinds or "orphaned" in r.kinds
        fill = "#fff" if hollow else color
        refs = " ".join(f"[{ref}]" for ref in r.refs)
        kinds = " ".join(f"({k})" for k in r.kinds)
        text = f"{r.snapshot_id}  {r.operation}  {r.committed}"
        tip = f"snapshot {r.snapshot_id}: {r.operation}, {r.committed} {kinds}"
        href = f"{link}?snapshot={r.snapshot_id}#detail"
        if r.snapshot_id == selected:
            body.append(
                f'<circle class="selected" cx="{cx}" cy="{cy}" r="10" fill="none" '
                f'stroke="#222" stroke-width="2"/>'
            )
        body.append(
            f'<a class="node" href="{escape(href)}" data-snapshot="{r.snapshot_id}">'
            f"<title>{escape(tip)}</title>"
            f'<circle cx="{cx}" cy="{cy}" r="6" fill="{fill}" stroke="{color}" '
            f'stroke-width="2"/>'
            f'<text x="{text_x}" y="{cy + 4}">{escape(text)}'
            f'<tspan fill="#8a4ac2" font-weight="bold"> {escape(refs)}</tspan>'
            f'<tspan fill="#c24a7b"> {escape(kinds)}</tspan></text></a>'
        )
    return svg_chart(width, height, body, "snapshot ancestry", "chart graph")


@dataclass
class SnapshotDetail:
    """One snapshot's summary and the files it added and removed (first ``limit`` each)."""

    snapshot_id: int
    summary: list[tuple[str, str]]
    added: list[tuple[str, str, int, int]]
    removed: list[tuple[str, str, int, int]]
    added_total: int
    removed_total: int


def snapshot_detail(table: Table, snapshot_id: int, limit: int = 200) -> SnapshotDetail | None:
    """The detail of one snapshot, or None when the table has no such snapshot: the entries
    it marked added or deleted in the manifests it wrote (Java's ``addedDataFiles`` and
    ``removedDataFiles``, delete files too), read by the ``entries`` metadata table's
    columnar reader."""
    snapshot = table.metadata.snapshot_by_id(snapshot_id)
    if snapshot is None:
        return None
    ctx = InspectContext(table.io, table.metadata, table.metadata_location, table.name)
    own = [m for m in manifests_of(table.io, snapshot) if m.added_snapshot_id == snapshot_id]
    entries = entries_table(ctx, own).select(["status", "snapshot_id", "data_file"])
    mine = pc.equal(entries.column("snapshot_id"), snapshot_id)
    found: dict[int, tuple[list[tuple[str, str, int, int]], int]] = {}
    for status in (_ADDED, _DELETED):
        chosen = entries.filter(pc.and_(mine, pc.equal(entries.column("status"), status)))
        files = chosen.column("data_file").combine_chunks().slice(0, limit)
        rows = [
            (path, _CONTENT.get(content, str(content)), records, size)
            for path, content, records, size in zip(
                files.field("file_path").to_pylist(),
                files.field("content").to_pylist(),
                files.field("record_count").to_pylist(),
                files.field("file_size_in_bytes").to_pylist(),
            )
        ]
        found[status] = (rows, chosen.num_rows)
    summary = sorted(snapshot.summary.properties.items()) if snapshot.summary else []
    if snapshot.operation is not None:
        summary.insert(0, ("operation", snapshot.operation.value))
    (added, added_total), (removed, removed_total) = found[_ADDED], found[_DELETED]
    return SnapshotDetail(snapshot_id, summary, added, removed, added_total, removed_total)
