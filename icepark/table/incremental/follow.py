"""Following a table on one machine: the rows each new snapshot appends, as they land.

``table.follow(...)`` is a generator of :class:`AppendedBatch` (a snapshot id and an Arrow
record batch of rows it appended), for jobs without Spark::

    for item in table.follow(interval=1.0):
        handle(item.snapshot_id, item.batch)

How it flows: it starts after a snapshot (``start_snapshot_id``, inclusive: that snapshot's
own appends come first), or at the oldest ancestor committed at or after
``start_timestamp`` (epoch ms or datetime; it waits for one when none is that recent yet), or
else after the current snapshot (only what is committed from now on). Every ``interval``
seconds it reloads the table and walks the branch's ancestry from the last snapshot it
handled to the new head, oldest first; each ``append`` snapshot is read with an incremental
append scan of that snapshot alone (:mod:`icepark.table.incremental.append_scan`), filtered and
projected as asked. Other snapshots append nothing and are passed over (the rows of an
overwrite are not appends). A snapshot with no matching rows yields nothing. A branch whose
head moved to a snapshot that does not descend from the last one handled (a rollback) is an
error naming both, as is a dropped table.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from icepark.errors import ValidationError
from icepark.expressions import BooleanExpression
from icepark.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from icepark.table.incremental.append_scan import incremental_append_scan, snapshots_between

if TYPE_CHECKING:
    from icepark.table.interface import TableLike

__all__ = ["AppendedBatch", "follow", "to_millis"]


@dataclass(frozen=True)
class AppendedBatch:
    """Rows one snapshot appended."""

    snapshot_id: int
    batch: pa.RecordBatch


def to_millis(value: int | float | dt.datetime) -> int:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    return int(value)


def _head(table: TableLike, branch: str) -> Snapshot | None:
    if branch == MAIN_BRANCH:
        return table.metadata.current_snapshot()
    if table.metadata.ref(branch) is None:
        raise ValidationError(f"Cannot find branch {branch!r} in table {table.name}")
    return table.metadata.snapshot_by_name(branch)


def _oldest_at_or_after(table: TableLike, head: Snapshot, ms: int) -> Snapshot | None:
    """Java's ``oldestAncestorAfter``: the oldest ancestor of ``head`` committed at or after
    ``ms`` (None when even ``head`` is older)."""
    found = None
    for s in table.metadata.ancestors_of(head.snapshot_id):
        if s.timestamp_ms < ms:
            break
        found = s
    return found


def follow(
    table: TableLike,
    start_snapshot_id: int | None = None,
    start_timestamp: int | float | dt.datetime | None = None,
    interval: float = 1.0,
    filter: str | BooleanExpression | None = None,
    columns: Sequence[str] | None = None,
    *,
    branch: str = MAIN_BRANCH,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[AppendedBatch]:
    """Yield the rows of each newly committed append snapshot, in commit order, forever
    (see the module docstring). ``sleep`` is how it waits between polls."""
    if start_snapshot_id is not None and start_timestamp is not None:
        raise ValidationError("Give at most one of start_snapshot_id and start_timestamp")
    if interval <= 0:
        raise ValidationError(f"interval must be positive, not {interval}")
    last: int | None  # the last snapshot handled (None: none yet)
    pending_from_ms: int | None = None
    first_inclusive = False
    if start_snapshot_id is not None:
        if table.metadata.snapshot_by_id(start_snapshot_id) is None:
            raise ValidationError(
                f"Cannot find start snapshot {start_snapshot_id} in table {table.name}"
            )
        last, first_inclusive = start_snapshot_id, True
    elif start_timestamp is not None:
        last, pending_from_ms = None, to_millis(start_timestamp)
    else:
        head = _head(table, branch)
        last = head.snapshot_id if head else None
    while True:
        head = _head(table, branch)
        if head is not None and pending_from_ms is not None:
            start = _oldest_at_or_after(table, head, pending_from_ms)
            if start is not None:
                last, first_inclusive, pending_from_ms = start.snapshot_id, True, None
        if head is not None and pending_from_ms is None:
            if last is None or head.snapshot_id != last or first_inclusive:
                try:
                    between = snapshots_between(
                        table.metadata, last, head.snapshot_id, inclusive=first_inclusive
                    )
                except ValidationError as exc:
                    raise ValidationError(
                        f"Branch {branch!r} of table {table.name} moved to snapshot "
                        f"{head.snapshot_id}, which does not descend from snapshot {last}: {exc}"
                    ) from exc
                for snapshot in between:
                    yield from _appended(table, snapshot, filter, columns)
                    last = snapshot.snapshot_id
                first_inclusive = False
        sleep(interval)
        table.refresh()


def _appended(
    table: TableLike,
    snapshot: Snapshot,
    filter: str | BooleanExpression | None,
    columns: Sequence[str] | None,
) -> Iterator[AppendedBatch]:
    if snapshot.operation != Operation.APPEND:
        return
    scan = incremental_append_scan(
        table,
        from_snapshot_id=snapshot.snapshot_id,
        to_snapshot_id=snapshot.snapshot_id,
        from_inclusive=True,
        filter=filter,
        columns=columns,
    )
    for batch in scan.to_batches():
        if batch.num_rows:
            yield AppendedBatch(snapshot.snapshot_id, batch)
