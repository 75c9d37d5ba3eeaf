"""The bench's queries and checks, shared by icepark's side (``bench/run.py``,
``bench/large.py``) and the reference engine's (``bench/ref_timings.py``, run with the
reference venv: this module imports nothing but the standard library).

Each read row is defined once, for any table: its name, Java's SQL over a table name, and
icepark's filter; :func:`summary` turns either engine's result rows into the values both
must agree on (counts exact, sums to 1e-9 relative, strings exact).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

FULL_SCAN = "full-scan aggregate"
TWO_DAYS = "2 of 30 days aggregate"
POINT_MANY = "point query (many files)"
DELETE = "MoR delete 1%"
AFTER_DELETE = "full scan after MoR delete"
COMPACTION_DELETES = "rewrite_position_delete_files after it"
COMPACTION_DATA = "rewrite_data_files after the 1% delete"
COMPACTION_SCAN = "full scan after both rewrites"

AGG_SQL = "SELECT count(*), sum(amount), max(note) FROM {}"
TWO_DAYS_SQL = (
    " WHERE ts >= TIMESTAMP '2024-01-05 00:00:00' AND ts < TIMESTAMP '2024-01-07 00:00:00'"
)
TWO_DAYS_FILTER = "ts >= '2024-01-05T00:00:00+00:00' and ts < '2024-01-07T00:00:00+00:00'"
DAY_5, DAY_7 = 1704412800000000, 1704585600000000  # 2024-01-05 and 2024-01-07, UTC micros
DELETE_SQL = "DELETE FROM {} WHERE id % 100 = 7"  # icepark: F.col("id") % 100 == 7
REWRITE_DELETES_SQL = (
    "CALL ref.system.rewrite_position_delete_files(table => '{}', "
    "options => map('rewrite-all', 'true'))"
)
REWRITE_DATA_SQL = (
    "CALL ref.system.rewrite_data_files(table => '{}', "
    "options => map('delete-file-threshold', '1'))"
)
# what icepark's rewrites are given: the same options
REWRITE_DELETES_OPTIONS = {"rewrite-all": "true"}
REWRITE_DATA_OPTIONS = {"delete-file-threshold": "1"}


def point_name(table: str) -> str:
    """The point query's row: on ``bench.many`` the standard row, on another table its own."""
    return POINT_MANY if table.endswith("bench.many") else "point query (id = N, every file read)"


def read_sql(wide: str, point_table: str, point: int) -> dict[str, str]:
    """Java's SQL of the read rows over the tables named ``wide`` and ``point_table``."""
    return {
        FULL_SCAN: AGG_SQL.format(wide),
        TWO_DAYS: AGG_SQL.format(wide) + TWO_DAYS_SQL,
        point_name(point_table): f"SELECT * FROM {point_table} WHERE id = {point}",
    }


def summary(rows: Iterable[Sequence[Any]]) -> list[Any]:
    """What a read row's answer is checked by: an aggregate's one row as it is; a point
    query's rows as their count and sorted ids (the first column)."""
    rows = [tuple(r) for r in rows]
    if len(rows) == 1 and len(rows[0]) == 3:  # count, sum, max
        return [_plain(v) for v in rows[0]]
    return [len(rows), sorted(_plain(r[0]) for r in rows)]


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, int | float | str | list) else str(value)


def same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether two summaries agree (floats to 1e-9 relative: sums depend on the order)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, float) or isinstance(y, float):
            if x is None or y is None or not math.isclose(x, y, rel_tol=1e-9):
                return False
        elif x != y:
            return False
    return True
