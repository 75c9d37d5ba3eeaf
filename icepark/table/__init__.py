"""The table layer: tables, scans, transactions and the operations that commit to them.

Users get tables from a catalog (``icepark.load_catalog().load_table("db.t")``) or, read-only,
from a metadata file (``Table.from_metadata(path)``); everything else hangs off the table.
"""

from typing import TYPE_CHECKING, Any

from icepark.table.scan import DataScan
from icepark.table.table import ReadOnlyTableError, Table

if TYPE_CHECKING:
    from icepark.table.staged import StagedTable
    from icepark.table.transaction import Transaction

__all__ = ["DataScan", "ReadOnlyTableError", "StagedTable", "Table", "Transaction"]


def __getattr__(name: str) -> Any:
    # the write side loads on first use (see icepark.table.table)
    if name == "Transaction":
        from icepark.table.transaction import Transaction

        return Transaction
    if name == "StagedTable":
        from icepark.table.staged import StagedTable

        return StagedTable
    raise AttributeError(f"module 'icepark.table' has no attribute {name!r}")
