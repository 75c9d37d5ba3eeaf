"""Explaining a scan: the pruning funnel, step by step, with counts and times.

:func:`explain_scan` runs the planner's steps one at a time on the same snapshot and filter
and reports what each kept, so that a user sees why a query reads what it reads:

1. the manifest list: how many data and delete manifests the snapshot has;
2. partition summaries: how many manifests the filter's inclusive projection keeps (per spec);
3. manifest entries: the live data files in the kept manifests;
4. partition values: how many of those files the projected filter keeps;
5. column metrics: how many of those the metrics (value/null/NaN counts, bounds) keep;
6. delete files: which delete files attach to the remaining files (position, equality, DVs);
7. residuals: per partition spec, the filter left to apply to rows after partition pruning
   (files whose rows all match by strict metrics get ``true``);

and the bytes and records left to read. Each step is timed on its own. The planner itself
fuses steps 3 to 5 (metrics are judged while manifests are scanned, before entries are
decoded), so the sum of the step times here is more than a real ``plan_files``; the real
planning time is measured too and reported as ``planning_ms``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from icepark.expressions import AlwaysTrue, BooleanExpression
from icepark.io import FileIO
from icepark.manifest import (
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.planning.delete_index import DeleteFileIndex
from icepark.planning.matching import FileMatcher
from icepark.planning.planner import TaskBuilder, plan_files
from icepark.planning.walk import (
    entry_partition_matches,
    manifests_of,
    partitions_match,
    read_entries,
    scan_columns,
    use_columns,
)
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot

if TYPE_CHECKING:
    import numpy as np

    from icepark.manifest.entry_columns import EntryColumns

__all__ = ["EXPLAIN_COLUMNS_MIN_ENTRIES", "ScanExplanation", "Step", "explain_scan"]

EXPLAIN_COLUMNS_MIN_ENTRIES = 1_000
"""Explanations whose manifests (those partition summaries keep) hold at least this many
entries read them as arrays. Lower than a plan's threshold: explaining an entry costs more
(its residual, its strict metrics, its data file decoded for sizes). 4,002 kept entries of a
10,000-file table: 650 ms CPU entry by entry, 200-300 ms by arrays once warm, and no more
than entry by entry in a fresh process (the compiled decoder's first use, some 400 ms)."""

_Kept = tuple[list[ManifestEntry], list[tuple["EntryColumns", "np.ndarray"]]]
"""What the data funnel kept: entries (judged one by one), and rows of manifests decoded
into arrays."""


@dataclass(frozen=True)
class Step:
    """One step of the funnel: what came in, what it kept, how long it took."""

    name: str
    before: int
    after: int
    ms: float
    detail: str = ""


@dataclass
class ScanExplanation:
    """The funnel of one scan; ``str()`` is a readable report, :meth:`to_dict` plain data."""

    table: str
    snapshot_id: int | None
    filter: str
    steps: list[Step] = field(default_factory=list)
    residuals: dict[int, str] = field(default_factory=dict)
    delete_files: dict[str, int] = field(default_factory=dict)
    files_to_read: int = 0
    bytes_to_read: int = 0
    records_to_read: int = 0
    planning_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["residuals"] = {str(k): v for k, v in self.residuals.items()}
        return out

    def __str__(self) -> str:
        lines = [f"scan of {self.table} at snapshot {self.snapshot_id}, filter: {self.filter}"]
        for s in self.steps:
            kept = f"{s.after:>8,} of {s.before:<8,}"
            detail = f"  ({s.detail})" if s.detail else ""
            lines.append(f"  {s.name:<28} {kept} {s.ms:8.1f} ms{detail}")
        deletes = ", ".join(f"{n} {kind}" for kind, n in self.delete_files.items()) or "none"
        lines.append(f"  delete files attached: {deletes}")
        for spec_id, residual in self.residuals.items():
            lines.append(f"  residual for spec {spec_id}: {residual}")
        lines.append(
            f"  to read: {self.files_to_read:,} files, {self.bytes_to_read:,} bytes, "
            f"{self.records_to_read:,} records (planning alone: {self.planning_ms:.1f} ms)"
        )
        return "\n".join(lines)


class _Clock:
    def __init__(self) -> None:
        self.ms = 0.0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.ms = (time.perf_counter() - start) * 1000


def _count(items: list[Any], keep: Callable[[Any], bool]) -> list[Any]:
    return [x for x in items if keep(x)]


def _data_funnel(
    io: FileIO,
    manifests: list[ManifestFile],
    matcher: FileMatcher,
    clock: _Clock,
    steps: list[Step],
) -> _Kept:
    """Steps 3 to 5 entry by entry; the entries kept."""
    with clock():
        entries = [e for _, es in read_entries(io, manifests) for e in es]
    steps.append(Step("manifest entries (live)", len(entries), len(entries), clock.ms))
    with clock():
        by_partition = _count(entries, lambda e: entry_partition_matches(matcher, e))
    steps.append(Step("partition values", len(entries), len(by_partition), clock.ms))
    with clock():
        by_metrics = _count(by_partition, lambda e: matcher.metrics_might_match(e.data_file))
    steps.append(Step("column metrics", len(by_partition), len(by_metrics), clock.ms))
    return by_metrics, []


def _data_funnel_by_columns(
    io: FileIO,
    manifests: list[ManifestFile],
    matcher: FileMatcher,
    clock: _Clock,
    steps: list[Step],
) -> _Kept:
    """Steps 3 to 5 on manifests decoded into arrays (as the planner reads many entries):
    partitions and metrics judged a column at a time; the rows kept stay rows. A manifest
    the compiled path cannot read comes back as entries, judged one by one."""
    import numpy as np

    with clock():
        scanned = list(scan_columns(io, manifests, matcher, judge=False))
    live = sum(len(s[2]) if len(s) == 3 else len(s[1]) for s in scanned)
    steps.append(Step("manifest entries (live)", live, live, clock.ms))
    with clock():
        by_partition: list[Any] = []
        for s in scanned:
            if len(s) == 3:
                _, columns, rows = s
                by_partition.append((columns, rows[partitions_match(matcher, columns)[rows]]))
            else:
                by_partition.append(
                    (None, [e for e in s[1] if entry_partition_matches(matcher, e)])
                )
    partition_count = sum(len(rows) for _, rows in by_partition)
    steps.append(Step("partition values", live, partition_count, clock.ms))
    with clock():
        entries: list[ManifestEntry] = []
        kept: list[tuple[EntryColumns, np.ndarray]] = []
        for columns, rows in by_partition:
            if columns is None:
                entries.extend(e for e in rows if matcher.metrics_might_match(e.data_file))
            elif len(rows):
                kept.append((columns, np.asarray(rows[matcher.metrics_match_rows(columns, rows)])))
    count = len(entries) + sum(len(rows) for _, rows in kept)
    steps.append(Step("column metrics", partition_count, count, clock.ms))
    return entries, kept


def explain_scan(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression,
    schema: Schema | None = None,
    case_sensitive: bool = True,
    table_name: str = "",
    *,
    time_planning: bool = True,
) -> ScanExplanation:
    """The pruning funnel of a scan of ``snapshot`` with ``row_filter`` (see the module);
    ``time_planning=False`` skips the real planning run that ``planning_ms`` times (it
    stays 0), which roughly halves the cost when the steps alone are wanted."""
    schema = schema or metadata.schema()
    out = ScanExplanation(
        table_name or metadata.location,
        snapshot.snapshot_id if snapshot else None,
        str(row_filter),
    )
    if snapshot is None:
        return out
    clock = _Clock()
    specs = metadata.specs()
    matcher = FileMatcher(schema, specs, row_filter, case_sensitive)

    with clock():
        manifests = manifests_of(io, snapshot)
    data = [m for m in manifests if m.content == ManifestContent.DATA]
    deletes = [m for m in manifests if m.content == ManifestContent.DELETES]
    out.steps.append(
        Step(
            "manifest list",
            len(manifests),
            len(manifests),
            clock.ms,
            f"{len(data)} data, {len(deletes)} delete manifests",
        )
    )
    with clock():
        kept_data = _count(data, matcher.manifest_might_match)
        kept_deletes = _count(deletes, matcher.manifest_might_match)
    out.steps.append(
        Step(
            "partition summaries",
            len(manifests),
            len(kept_data) + len(kept_deletes),
            clock.ms,
            f"{len(kept_data)} data, {len(kept_deletes)} delete manifests kept",
        )
    )
    funnel = (
        _data_funnel_by_columns
        if use_columns(kept_data, EXPLAIN_COLUMNS_MIN_ENTRIES)
        else _data_funnel
    )
    entries, kept_rows = funnel(io, kept_data, matcher, clock, out.steps)

    with clock():
        index = DeleteFileIndex(specs)
        delete_entries = [e for _, es in read_entries(io, kept_deletes) for e in es]
        index.add_entries(
            e
            for e in delete_entries
            if matcher.partition_might_match(e.data_file.spec_id or 0, tuple(e.data_file.partition))
        )
    index_ms = clock.ms
    with clock():  # the planner's own tasks: residuals and delete files as it attaches them
        builder = TaskBuilder(metadata, row_filter, schema, case_sensitive)
        tasks = [builder.task(e, index) for e in entries]
        for columns, rows in kept_rows:
            tasks.extend(builder.tasks_of(columns, rows, index))
        seen: dict[int, set[str]] = {}
        for t in tasks:
            seen.setdefault(t.spec_id, set()).add(str(t.residual))
        whole = sum(isinstance(t.residual, AlwaysTrue) for t in tasks)
    attached = {(d.file_path, d.content_offset): d for t in tasks for d in t.delete_files}
    kinds = {
        FileContent.POSITION_DELETES: "position",
        FileContent.EQUALITY_DELETES: "equality",
    }
    for d in attached.values():
        if d.file_format == FileFormat.PUFFIN:
            kind = "deletion vector"
        else:
            kind = kinds.get(d.content, str(d.content))
        out.delete_files[kind] = out.delete_files.get(kind, 0) + 1
    out.steps.append(
        Step("delete files", len(delete_entries), len(attached), index_ms, "attached to the files")
    )
    out.residuals = {k: " | ".join(sorted(v)) for k, v in sorted(seen.items())}
    out.steps.append(Step("residuals", len(tasks), whole, clock.ms, "files whose rows all match"))
    out.files_to_read = len(tasks)
    out.bytes_to_read = sum(t.file.file_size_in_bytes for t in tasks)
    out.records_to_read = sum(t.file.record_count for t in tasks)
    if time_planning:
        with clock():
            plan_files(io, metadata, snapshot, row_filter, schema, case_sensitive)
        out.planning_ms = clock.ms
    return out
