"""The commit layer: tables, their metadata views and commits."""

from icepark.table.table import (
    CommitResult,
    ReadOnlyTableError,
    Table,
    TableCommitter,
    read_table_metadata,
)

__all__ = ["CommitResult", "ReadOnlyTableError", "Table", "TableCommitter", "read_table_metadata"]
