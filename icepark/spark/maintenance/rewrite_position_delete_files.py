"""``rewrite_position_delete_files`` on Spark (Java's ``RewritePositionDeleteFilesSparkAction``).

Planning and commits are those of
:class:`icepark.table.maintenance.rewrite_position_deletes.RewritePositionDeleteFiles`; here
every file group becomes one Spark task, which runs icepark's
:func:`~icepark.table.maintenance.rewrite_position_deletes.rewrite_group` (read the group's
delete files,
keep the deletes whose data file is live, write the merged position delete files or, on v3,
one deletion vector per data file) and sends back the entries of the files it wrote. If the
job fails, the files already written are deleted.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from icepark.errors import ValidationError
from icepark.expressions import BooleanExpression, as_filter, bind
from icepark.io import FileIO
from icepark.manifest import DataFile
from icepark.spark.runtime import TASK_INDEX, TASK_PAYLOAD, task_frame
from icepark.spark.tables import resolve_table
from icepark.spec.metadata import TableMetadata
from icepark.table import Table
from icepark.table.maintenance.rewrite_position_deletes import (
    PositionDeletesGroup,
    RewritePositionDeleteFiles,
    RewritePositionDeleteFilesResult,
    rewrite_group,
)

__all__ = ["rewrite_position_delete_files"]

_RESULT = pa.schema([("i", pa.int32()), ("files", pa.binary())])


class _GroupTask:
    """The function ``mapInArrow`` runs: rewrite the pickled groups of each input row."""

    def __init__(self, io: FileIO, metadata: TableMetadata) -> None:
        self.io = io
        self.metadata = metadata

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            indices = batch.column(TASK_INDEX).to_pylist()
            for i, payload in zip(indices, batch.column(TASK_PAYLOAD).to_pylist()):
                group = pickle.loads(payload)
                files = rewrite_group(self.io, self.metadata, group)
                yield pa.RecordBatch.from_pydict(
                    {"i": [i], "files": [pickle.dumps(files)]}, schema=_RESULT
                )


def _runner(spark: SparkSession, table: Table) -> Any:
    def run(
        metadata: TableMetadata, groups: Sequence[PositionDeletesGroup]
    ) -> list[list[DataFile]]:
        frame = task_frame(spark, [pickle.dumps(g) for g in groups])
        out = frame.mapInArrow(_GroupTask(table.io, metadata), "i int, files binary").collect()
        by_index = {row["i"]: pickle.loads(row["files"]) for row in out}
        if len(by_index) != len(groups):  # pragma: no cover - Spark returns every task's row
            _delete(table.io, [f for fs in by_index.values() for f in fs])
            raise ValidationError("A position delete rewrite task returned no result")
        return [by_index[i] for i in range(len(groups))]

    return run


def _delete(io: FileIO, files: Sequence[DataFile]) -> None:
    for path in sorted({f.file_path for f in files}):
        try:
            io.delete(path)
        except Exception:
            pass


def rewrite_position_delete_files(
    spark: SparkSession,
    table: Table | str,
    where: str | BooleanExpression | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    catalog: Any = None,
    case_sensitive: bool = True,
) -> RewritePositionDeleteFilesResult:
    """Merge the position delete files of each partition to the target size
    (``write.delete.target-file-size-bytes``) on Spark, dropping deletes whose data files
    are gone; on v3 tables, one deletion vector per data file where several apply (Java's
    ``rewrite_position_delete_files`` procedure). Each file group is one Spark task; if the
    job fails, the files already written are deleted.

    Args:
        spark: the session (classic or Spark Connect).
        table: a Table, or a name looked up in ``catalog``.
        where: an icepark filter string or expression; only the partitions it may match
            are rewritten.
        options: Java's options (``target-file-size-bytes``, ``min-input-files``,
            ``rewrite-all``, ``rewrite-job-order``, ``max-concurrent-file-group-rewrites``,
            ``partial-progress.enabled``, ``partial-progress.max-commits``...).
        catalog: a Catalog, a configured catalog name or a mapping of catalog properties
            where ``table`` is a name (default: ``icepark.load_catalog()``).
        case_sensitive: whether column names in ``where`` match case-sensitively.

    Returns:
        Java's columns: ``rewritten_delete_files_count``, ``added_delete_files_count``,
        ``rewritten_bytes_count``, ``added_bytes_count`` (``result.to_df(spark)`` gives
        Java's one-row DataFrame).

    Raises:
        ValidationError: an unknown option or bad value, or a filter naming no column.
        CommitFailedError: a concurrent change conflicts (without partial progress; the
            files written are deleted).
        CommitStateUnknownError: the catalog's answer to a commit was lost.
        NoSuchTableError: the table does not exist.
    """
    resolved = resolve_table(table, catalog)
    row_filter = None
    if where is not None:
        row_filter = as_filter(where)
        bind(resolved.schema(), row_filter, case_sensitive)
    action = RewritePositionDeleteFiles(
        resolved,
        _runner(spark, resolved),
        options=options,
        where=row_filter,
        case_sensitive=case_sensitive,
    )
    return action.execute()
