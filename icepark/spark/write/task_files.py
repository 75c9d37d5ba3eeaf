"""What a Spark write task does with its rows: Arrow batches from whatever Spark hands the
task, written as data files of the table by icepark's Arrow writer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from icepark.io import FileIO
from icepark.manifest import DataFile
from icepark.spec.metadata import TableMetadata
from icepark.table.write.data_files import write_arrow

__all__ = ["arrow_batches", "write_task_files"]


def write_task_files(
    io: FileIO, metadata: TableMetadata, batches: Iterable[pa.RecordBatch], write_uuid: str
) -> list[DataFile]:
    """In a Spark task: write its batches as data files of the table (icepark's Arrow
    writer), named by the write uuid, the task's partition id and attempt number."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return write_arrow(
        io,
        metadata,
        batches,
        context.partitionId() if context is not None else 0,
        write_uuid=write_uuid,
        attempt_id=context.attemptNumber() if context is not None else 0,
    )


def arrow_batches(iterator: Iterator[Any]) -> Iterator[pa.RecordBatch]:
    """Arrow batches from what Spark hands a writer (batches from 4.1, rows before)."""
    rows: list[Any] = []
    for item in iterator:
        if isinstance(item, pa.RecordBatch):
            yield item
        else:
            rows.append(item.asDict(recursive=True))
            if len(rows) >= 65536:
                yield pa.RecordBatch.from_pylist(rows)
                rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows)
