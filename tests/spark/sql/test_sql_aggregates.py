"""Aggregates answered from metadata (Java's aggregate push-down): ``count(*)``, ``count(col)``,
``min`` and ``max`` over a table read from the planned files' counts and bounds when no delete
applies, the filter is decided by partitions and metrics, and the bounds are exact; otherwise
the query runs. Every answer equals the reference engine's on the same table and icepark's
own with the push-down switched off."""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from icepark import spark as ispark
from icepark.spark.sql.aggregates import PUSH_DOWN_CONF

pytestmark = pytest.mark.interop

AGGREGATES = (
    "count(*), min(id), max(id), count(name), min(name), max(name), min(ts), max(ts), "
    "min(d), max(d), min(amount), max(amount), min(flag), max(flag), count(x), max(x)"
)


def _rows(start: int, n: int, part: int, long_names: bool = False, nan: bool = False) -> pa.Table:
    ids = list(range(start, start + n))
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array([part] * n, pa.int32()),
            "name": [
                None if i % 5 == 0 else ("n" * 20 if long_names else f"n{i:03d}") for i in ids
            ],
            "ts": pa.array([base + dt.timedelta(hours=i) for i in ids], pa.timestamp("us", "UTC")),
            "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids], pa.date32()),
            "amount": pa.array([Decimal(i) / 4 for i in ids], pa.decimal128(10, 2)),
            "flag": [i % 3 == 0 for i in ids],
            "x": [float("nan") if nan and i == start else i * 1.5 for i in ids],
        }
    )


def _nan_safe(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [tuple("NaN" if isinstance(v, float) and v != v else v for v in r) for r in rows]


def _answers(spark: Any, refspark: Any, catalog: Any, table: Any, where: str) -> tuple[Any, bool]:
    """icepark's answer (and whether it came from metadata), after checking it against the
    push-down switched off and against the reference engine."""
    query = f"SELECT {AGGREGATES} FROM db.agg {where}"
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("icepark.spark.sql")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        pushed = [tuple(r) for r in ispark.sql(spark, query, catalog).collect()]
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    answered = any("answered from metadata" in r for r in records)
    spark.conf.set(PUSH_DOWN_CONF, "false")
    try:
        scanned = [tuple(r) for r in ispark.sql(spark, query, catalog).collect()]
    finally:
        spark.conf.unset(PUSH_DOWN_CONF)
    assert _nan_safe(pushed) == _nan_safe(scanned), (where, pushed, scanned)
    java = refspark.request(
        [f"SELECT {AGGREGATES} FROM agg {where}"], views={"agg": table.refresh().metadata_location}
    )[0]["rows"]
    ours = ispark.sql(spark, query, catalog).toJSON().collect()
    assert len(java) == len(ours) == 1
    mine = [v for v in pushed[0]]
    theirs = java[0]
    for a, b in zip(mine, theirs, strict=True):  # JSON-ish values from the reference engine
        if isinstance(a, float) and isinstance(b, float | int):
            assert a == pytest.approx(b) or (a != a and b != b), (where, mine, theirs)
        elif isinstance(a, dt.datetime):
            assert a.astimezone(dt.UTC).replace(tzinfo=None).isoformat()[:19] in str(b), (a, b)
        elif isinstance(a, dt.date | Decimal):
            assert str(a) == str(b) or float(a) == float(b), (where, a, b)  # type: ignore[arg-type]
        else:
            assert a == b, (where, mine, theirs)
    return pushed[0], answered


def test_aggregates_from_metadata(spark: Any, refspark: Any, catalog: Any) -> None:
    schema = _rows(1, 1, 0).schema
    # string bounds are values only where the column keeps them whole (Java's rule)
    table = catalog.create_table(
        "db.agg",
        schema,
        partition_by=["part"],
        properties={"write.metadata.metrics.column.name": "full"},
    )
    table.append(_rows(0, 20, 0))
    table.append(_rows(20, 20, 1))
    table.append(_rows(40, 10, 1))

    answer, answered = _answers(spark, refspark, catalog, table, "")
    assert answered and answer[0] == 50 and (answer[1], answer[2]) == (0, 49)
    # a partition filter decides whole files: still from metadata
    answer, answered = _answers(spark, refspark, catalog, table, "WHERE part = 1")
    assert answered and answer[0] == 30 and answer[1] == 20
    # a filter the files' metrics do not decide: the query runs
    _, answered = _answers(spark, refspark, catalog, table, "WHERE id > 3")
    assert not answered
    # a time-travelled snapshot: from that snapshot's files
    first = table.metadata.snapshots[0].snapshot_id
    rows = ispark.sql(
        spark, f"SELECT count(*), max(id) FROM db.agg VERSION AS OF {first}", catalog
    ).collect()
    assert tuple(rows[0]) == (20, 19)

    # names of 20 characters written under truncate(4): their upper bound "nnno" is no value,
    # so max(name) is not taken from metrics (Java's rule); and a NaN in a double column
    table.set_properties({"write.metadata.metrics.column.name": "truncate(4)"})
    table.refresh().append(_rows(50, 5, 2, long_names=True, nan=True))
    # (the mode stays truncate(4): Java decides by the mode at read time too, and set back to
    # full it takes the truncated "nnno" for max(name))
    table = table.refresh()
    rows = ispark.sql(spark, "SELECT max(name), count(*) FROM db.agg", catalog).collect()
    assert tuple(rows[0]) == ("n" * 20, 55)
    answer, answered = _answers(spark, refspark, catalog, table, "")
    assert not answered and answer[0] == 55 and answer[5] == "n" * 20
    answer, answered = _answers(spark, refspark, catalog, table, "WHERE part < 2")
    assert not answered and answer[0] == 50
    rows = ispark.sql(
        spark, "SELECT count(*), min(id), max(ts) FROM db.agg WHERE part < 2", catalog
    )
    assert tuple(rows.collect()[0])[:2] == (50, 0)

    # a delete file applies: the query runs (merge-on-read)
    table.set_properties({"write.delete.mode": "merge-on-read"})
    table.refresh().delete("id = 7")
    answer, answered = _answers(spark, refspark, catalog, table, "WHERE part = 0")
    assert not answered and answer[0] == 19
