"""The table layer: tables, scans, transactions and the operations that commit to them.

Users get tables from a catalog (``icepark.load_catalog().load_table("db.t")``) or, read-only,
from a metadata file (``Table.from_metadata(path)``); everything else hangs off the table.
"""

from icepark.table.scan import DataScan
from icepark.table.table import ReadOnlyTableError, Table
from icepark.table.transaction import Transaction

__all__ = ["DataScan", "ReadOnlyTableError", "Table", "Transaction"]
