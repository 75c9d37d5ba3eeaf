"""Incremental append scans: the rows that ``append`` snapshots added between two snapshots.

Java's ``BaseIncrementalAppendScan`` (``table.newIncrementalAppendScan()``; Spark's
``start-snapshot-id``/``end-snapshot-id`` read options)::

    to snapshot (default: the branch head or current snapshot)
      -> its ancestors back to ``from`` (exclusive; inclusive with ``from_inclusive``)
      -> the ``append`` snapshots among them
      -> the data manifests each wrote -> the entries it ADDED   (walk.changes_since)
      -> pruned by partition and metrics (FileMatcher), a residual per file (TaskBuilder)
      -> read with DataScan.read_task, like any scan

The scan reports rows as they were appended: like Java's, it applies no delete files (an
``append`` snapshot adds none, and rows a later snapshot deleted are still rows that were
appended; the reference engine returns them too). Snapshots other than appends (overwrites,
deletes, replaces) contribute nothing. It reads with the table's current schema, as Java's
does. A ``from`` that is not an ancestor of ``to`` is refused, naming both.

:func:`appended_entries` gives one snapshot's added data files in their fixed order (manifest
list order, then entry order): the streaming source counts its offsets in that order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from icepark.errors import ValidationError
from icepark.expressions import BooleanExpression, as_filter
from icepark.io import FileIO
from icepark.manifest import ManifestContent, ManifestEntry, ManifestEntryStatus
from icepark.planning.matching import FileMatcher
from icepark.planning.planner import FileScanTask, TaskBuilder
from icepark.planning.walk import changes_since, manifests_of, read_entries
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Operation, Snapshot
from icepark.table.scan import DataScan

if TYPE_CHECKING:
    from icepark.planning.distributed import RemotePlanning
    from icepark.table.interface import TableLike

__all__ = [
    "IncrementalAppendScan",
    "appended_entries",
    "incremental_append_scan",
    "snapshots_between",
]


def appended_entries(
    io: FileIO, snapshot: Snapshot, matcher: FileMatcher | None = None
) -> list[ManifestEntry]:
    """The data files ``snapshot`` added (status ADDED, written by it), in manifest-list
    order and entry order; with ``matcher`` only those that may hold matching rows."""
    manifests = [
        m
        for m in manifests_of(io, snapshot, ManifestContent.DATA)
        if m.added_snapshot_id == snapshot.snapshot_id and m.has_added_files
        if matcher is None or matcher.manifest_might_match(m)
    ]
    out: list[ManifestEntry] = []
    for _, entries in read_entries(io, manifests, matcher, live_only=True, added_only=True):
        out.extend(
            e
            for e in entries
            if e.status == ManifestEntryStatus.ADDED and e.snapshot_id == snapshot.snapshot_id
        )
    return out


def snapshots_between(
    metadata: TableMetadata, from_id: int | None, to_id: int, *, inclusive: bool = False
) -> list[Snapshot]:
    """The ancestors of ``to_id`` after ``from_id`` (or from it, with ``inclusive``) up to
    ``to_id``, oldest first; all known ancestors when ``from_id`` is None. Raises
    :class:`ValidationError` naming both when ``from_id`` is not an ancestor of ``to_id``
    (a ``from_id`` that has expired is accepted when it is the parent of an ancestor)."""
    ancestors = metadata.ancestors_of(to_id)
    if from_id is None:
        return ancestors[::-1]
    out: list[Snapshot] = []
    for snapshot in ancestors:
        if snapshot.snapshot_id == from_id:
            if inclusive:
                out.append(snapshot)
            return out[::-1]
        out.append(snapshot)
        if not inclusive and snapshot.parent_snapshot_id == from_id:
            return out[::-1]  # ``from`` has expired; its child is known
    raise ValidationError(
        f"Starting snapshot {'(inclusive)' if inclusive else '(exclusive)'} {from_id} is not "
        f"an ancestor of end snapshot {to_id} in table {metadata.location}"
    )


@dataclass(frozen=True)
class IncrementalAppendScan(DataScan):
    """The rows appended after ``from_snapshot_id`` up to the scan's snapshot (``snapshot_id``,
    or the head of ``ref``, or the current snapshot); build with
    ``table.incremental_append_scan(...)``. ``plan_files``, ``to_arrow``, ``to_batches``,
    ``count`` as for :class:`DataScan`."""

    from_snapshot_id: int | None = None
    from_inclusive: bool = False

    @cached_property
    def schema(self) -> Schema:
        return self.metadata.schema()  # as Java: the table's schema, not the snapshot's

    @cached_property
    def snapshots(self) -> list[Snapshot]:
        """The ``append`` snapshots the scan reads, oldest first."""
        to = self.snapshot
        if self.from_snapshot_id is not None and self.from_inclusive:
            if self.metadata.snapshot_by_id(self.from_snapshot_id) is None:
                raise ValidationError(
                    f"Cannot find the starting snapshot {self.from_snapshot_id} in table "
                    f"{self.metadata.location}"
                )
        if to is None:
            if self.from_snapshot_id is not None:
                raise ValidationError(
                    f"Cannot scan from snapshot {self.from_snapshot_id}: table "
                    f"{self.metadata.location} has no current snapshot"
                )
            return []
        if self.ref is not None and self.snapshot_id is not None:
            head = self.metadata.snapshot_by_name(self.ref)
            head_id = head.snapshot_id if head is not None else None
            ids = {s.snapshot_id for s in self.metadata.ancestors_of(head_id)}
            if to.snapshot_id not in ids:
                raise ValidationError(
                    f"End snapshot {to.snapshot_id} is not on branch {self.ref!r} of table "
                    f"{self.metadata.location}"
                )
        between = snapshots_between(
            self.metadata, self.from_snapshot_id, to.snapshot_id, inclusive=self.from_inclusive
        )
        return [s for s in between if s.operation == Operation.APPEND]

    def iter_plan_files(self, remote: RemotePlanning | None = None) -> Iterator[FileScanTask]:
        """The appended data files that may hold matching rows, oldest snapshot first (what
        ``plan_files``, ``to_batches`` and ``count`` read). Planned here whatever ``remote``
        says: only the manifests the snapshots wrote are read."""
        snapshots = self.snapshots
        if not snapshots:
            return iter(())
        builder = TaskBuilder(self.metadata, self.row_filter, self.schema, self.case_sensitive)
        builder.matcher.bound  # noqa: B018  (fail early on unknown columns)
        first, last = snapshots[0], snapshots[-1]
        changes = changes_since(
            self.io,
            self.metadata,
            last.snapshot_id,
            first.parent_snapshot_id if self._parent_known(first) else None,
            content=ManifestContent.DATA,
            statuses=(ManifestEntryStatus.ADDED,),
            operations=(Operation.APPEND,),
            matcher=builder.matcher,
            where="incremental append scan",
        )
        by_snapshot: dict[int, list[ManifestEntry]] = {}
        for change in changes:
            by_snapshot.setdefault(change.snapshot_id, []).append(change.entry)
        return iter(
            [builder.task(entry) for s in snapshots for entry in by_snapshot.get(s.snapshot_id, [])]
        )

    def _parent_known(self, snapshot: Snapshot) -> bool:
        parent = snapshot.parent_snapshot_id
        return parent is not None and self.metadata.snapshot_by_id(parent) is not None


def incremental_append_scan(
    table: TableLike,
    from_snapshot_id: int | None = None,
    to_snapshot_id: int | None = None,
    from_inclusive: bool = False,
    filter: str | BooleanExpression | None = None,
    columns: Sequence[str] | None = None,
    *,
    ref: str | None = None,
    case_sensitive: bool = True,
) -> IncrementalAppendScan:
    """The rows ``append`` snapshots of ``table`` added after ``from_snapshot_id`` (or from
    it, with ``from_inclusive``) up to ``to_snapshot_id`` (default: the head of ``ref`` or
    the current snapshot); see the module docstring."""
    return IncrementalAppendScan(
        table.io,
        table.metadata,
        as_filter(filter),
        tuple(columns) if columns is not None else None,
        to_snapshot_id,
        None,
        ref,
        case_sensitive,
        use_snapshot_schema=False,
        from_snapshot_id=from_snapshot_id,
        from_inclusive=from_inclusive,
    )
