"""The catalog, query and health pages' data, each from what icepark already computes:

* catalog: every namespace and its tables, with the current snapshot's summary totals
  (rows, bytes, files) and the last commit; each table's health badge is an image of its own
  (``/t/{table}/badge.svg``: :func:`icepark.table.maintenance.doctor.diagnose` with
  ``listing=False``, which lists nothing in storage), so the page does not wait for every
  table's doctor;
* query: :meth:`icepark.table.DataScan.explain` for the filter typed in, drawn as two
  funnels (manifests, then files) with the delete files attached, the bytes left and the
  residual filter per partition spec;
* health: the doctor's numbers and findings, each with its fix command.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from markupsafe import Markup

from icepark.catalog.base import Catalog
from icepark.catalog.identifiers import Identifier
from icepark.errors import IceparkError
from icepark.planning.explain import ScanExplanation
from icepark.table.maintenance.doctor import HealthReport
from icepark.table.table import Table
from icepark.table.units import human_bytes
from icepark.ui.history import summary_int, when
from icepark.ui.svg import Bar, bar_chart, funnel

__all__ = ["TableRow", "catalog_rows", "QueryPage", "query_page", "badge_of"]

MAX_NAMESPACE_DEPTH = 8


@dataclass(frozen=True)
class TableRow:
    """One table on the catalog page (``error`` set when it could not be loaded); ``name``
    is shown, ``identifier`` makes its links; ``snapshots`` is None while the metadata holds
    only its refs' snapshots (a REST catalog's ``snapshot-loading-mode=refs``: counting
    would fetch the whole history of every table)."""

    identifier: Identifier
    name: str
    namespace: str
    records: int | None = None
    data_files: int | None = None
    bytes: int | None = None
    last_commit: str = ""
    snapshots: int | None = None
    format_version: int | None = None
    error: str = ""


def badge_of(report: HealthReport) -> tuple[str, str]:
    """The badge class and text of a health report: ``warn`` with the count, ``info`` or
    ``ok``."""
    warns = sum(f.level == "warn" for f in report.findings)
    infos = sum(f.level == "info" for f in report.findings)
    if warns:
        return "warn", f"{warns} warning{'s' if warns > 1 else ''}"
    if infos:
        return "info", f"{infos} note{'s' if infos > 1 else ''}"
    return "ok", "healthy"


def _namespaces(catalog: Catalog, parent: Identifier = (), depth: int = 0) -> Iterator[Identifier]:
    if depth > MAX_NAMESPACE_DEPTH:
        return
    for ns in sorted(catalog.list_namespaces(parent)):
        yield ns
        try:
            yield from _namespaces(catalog, ns, depth + 1)
        except IceparkError:  # a catalog without nested namespaces
            continue


def _summary_int(table: Table, key: str) -> int | None:
    snap = table.current_snapshot()
    return 0 if snap is None else summary_int(snap.summary, key)


def table_row(table: Table, namespace: str) -> TableRow:
    """A table's row on the catalog page."""
    snap = table.current_snapshot()
    return TableRow(
        identifier=table.identifier,
        name=table.name,
        namespace=namespace,
        records=_summary_int(table, "total-records"),
        data_files=_summary_int(table, "total-data-files"),
        bytes=_summary_int(table, "total-files-size"),
        last_commit=when(snap.timestamp_ms) if snap else "never",
        snapshots=None if table.metadata.snapshots_deferred else len(table.metadata.snapshots),
        format_version=table.format_version,
    )


def catalog_rows(catalog: Catalog) -> tuple[list[str], list[TableRow]]:
    """The namespaces and a row per table (a table that fails to load gets its error)."""
    namespaces = []
    rows = []
    for ns in _namespaces(catalog):
        label = ".".join(ns)
        namespaces.append(label)
        for ident in sorted(catalog.list_tables(ns)):
            name = ".".join(ident)
            try:
                rows.append(table_row(catalog.load_table(ident), label))
            except Exception as exc:  # one broken table must not hide the others
                rows.append(
                    TableRow(
                        identifier=ident,
                        name=name,
                        namespace=label,
                        error=f"{type(exc).__name__}: {exc}",
                    )
                )
    return namespaces, rows


@dataclass
class QueryPage:
    """The query page: the explanation and its pictures."""

    explanation: ScanExplanation
    manifests_chart: Markup
    files_chart: Markup
    bytes_chart: Markup
    total_bytes: int | None
    step_times: list[tuple[str, float]]


def query_page(
    table: Table, row_filter: str, ref: str | None = None, *, time_planning: bool = False
) -> QueryPage:
    """Explain a scan of ``table`` with ``row_filter`` (at ``ref`` when given); the real
    planning run is timed only with ``time_planning`` (it costs as much as the steps)."""
    scan = table.scan(filter=row_filter or None, ref=ref or None)
    ex = scan.explain(table.name, time_planning=time_planning)
    steps = {s.name: s for s in ex.steps}
    manifest_steps = [
        (s.name, s.before, s.after, s.detail)
        for s in ex.steps
        if s.name in ("manifest list", "partition summaries")
    ]
    file_steps = [
        (label, steps[name].before, steps[name].after, steps[name].detail)
        for name, label in (
            ("manifest entries (live)", "files in kept manifests"),
            ("partition values", "by partition values"),
            ("column metrics", "by column metrics"),
            ("residuals", "whole files match"),
        )
        if name in steps
    ]
    snap = table.metadata.snapshot_by_id(ex.snapshot_id) if ex.snapshot_id is not None else None
    total = summary_int(snap.summary, "total-files-size") if snap is not None else None
    bars = [Bar("bytes left to read", ex.bytes_to_read, human_bytes(ex.bytes_to_read))]
    if total is not None:
        bars.insert(0, Bar("all files of the snapshot", total, human_bytes(total)))
    return QueryPage(
        explanation=ex,
        manifests_chart=funnel(manifest_steps, label="manifests kept"),
        files_chart=funnel(file_steps, label="data files kept"),
        bytes_chart=bar_chart(bars, label="bytes to read", color="#3f9e6e"),
        total_bytes=total,
        step_times=[(s.name, s.ms) for s in ex.steps]
        + ([("planning alone (a real plan_files)", ex.planning_ms)] if time_planning else []),
    )
