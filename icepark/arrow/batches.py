"""Re-cutting streams of Arrow record batches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

__all__ = ["coalesce_batches"]


def coalesce_batches(batches: Iterable[pa.RecordBatch], min_rows: int) -> Iterator[pa.RecordBatch]:
    """``batches`` (all of one schema) with consecutive small ones concatenated, so that each
    has at least ``min_rows`` rows but the last; rows keep their order, and a batch that is
    large enough on its own, with nothing before it waiting, passes unchanged."""
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if not pending and batch.num_rows >= min_rows:
            yield batch
            continue
        pending.append(batch)
        rows += batch.num_rows
        if rows >= min_rows:
            yield pending[0] if len(pending) == 1 else pa.concat_batches(pending)
            pending, rows = [], 0
    if pending:
        yield pending[0] if len(pending) == 1 else pa.concat_batches(pending)
