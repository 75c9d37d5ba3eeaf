"""The filter language against the reference engine's SQL: 100 random filters (nulls, NaNs,
every primitive type, ``not``, ``in``, ``not in``, ``between``, ``like``, negative literals)
count the same rows in icepark (planning with pruning, then reading) as ``SELECT count(*)``
in Java Iceberg on Spark, on a partitioned table of several files.

Ordered comparisons (``<``, ``between``, ...) are generated for float columns that hold no
NaN only: Spark orders NaN above every number (so ``NaN > 1`` is true there) while icepark,
like Iceberg's metrics evaluators, follows IEEE (a NaN is neither greater nor smaller), and
Java Iceberg itself disagrees with Spark on files of NaN only. Equality, ``in`` and ``is nan``
on the NaN column are generated.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from filter_cases import SCHEMA, random_filter, rows
from refengine import RefEngine, ReferenceError_

import icepark.planning.walk as walk
from icepark.catalog import FileSystemCatalog
from icepark.planning.planner import FileScanTask

pytestmark = pytest.mark.interop


def _spark_counts(refspark: RefEngine, c: str, sqls: list[str]) -> list[int]:
    """Spark's count of rows of each filter, ``count_if`` in one query; Java's aggregate
    push-down fails on some literals (a long compared with an int column), so a query that
    fails is split in halves until such a filter is counted alone by ``WHERE``."""
    counts = ", ".join(f"count_if({sql})" for sql in sqls)
    try:
        return list(refspark.rows(f"SELECT {counts} FROM {c}.db.t")[0])
    except ReferenceError_:
        if len(sqls) == 1:
            return [refspark.rows(f"SELECT count(*) FROM {c}.db.t WHERE {sqls[0]}")[0][0]]
        half = len(sqls) // 2
        return _spark_counts(refspark, c, sqls[:half]) + _spark_counts(refspark, c, sqls[half:])


def _key(task: FileScanTask) -> tuple[object, ...]:
    return (
        task.file.file_path,
        task.file.record_count,
        task.residual,
        task.spec_id,
        task.data_sequence_number,
    )


def test_random_filters_count_as_the_reference_sql(
    refspark: RefEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(20261124)
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("f", warehouse=str(warehouse))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA, partition_by=["day(tz)", "bucket(3, i)"])
    for part in range(4):  # several files per partition, with their own bounds
        table.append(rows(rng, part * 300, 300))
    c = refspark.catalog_for(warehouse)
    assert refspark.rows(f"SELECT count(*) FROM {c}.db.t")[0][0] == 1200
    filters = [random_filter(rng) for _ in range(100)]
    theirs: list[int] = []
    for start in range(0, len(filters), 25):  # Spark's counts, 25 filters a query
        theirs += _spark_counts(refspark, c, [sql for _, sql in filters[start : start + 25]])
    ours = [table.scan(filter=text).count() for text, _ in filters]
    mismatches = [
        (text, count, expected)
        for (text, _), count, expected in zip(filters, ours, theirs, strict=True)
        if count != expected
    ]
    assert mismatches == []
    # the same plans (so the same counts) when planning decodes manifests into arrays (the
    # path of huge tables)
    # (every task's file, residual and sequence number; whole tasks, with every field of
    # their lazily decoded files, for the first 20 filters)
    plans = [list(table.scan(filter=text).plan_files()) for text, _ in filters]
    monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
    assert walk.use_columns(walk.manifests_of(table.io, table.current_snapshot()))
    for i, ((text, _), plan) in enumerate(zip(filters, plans, strict=True)):
        columns_plan = list(table.scan(filter=text).plan_files())
        assert [_key(t) for t in columns_plan] == [_key(t) for t in plan], text
        if i < 20:
            assert columns_plan == plan, text
    monkeypatch.undo()
    # and through Iceberg's own pruning on the Java side (a count with WHERE, not count_if),
    # for a sample, in one query of 10 counts
    sample = filters[:10]
    union = " UNION ALL ".join(
        f"SELECT {i} AS k, count(*) AS n FROM {c}.db.t WHERE {sql}"
        for i, (_, sql) in enumerate(sample)
    )
    pruned = dict(refspark.rows(f"SELECT k, n FROM ({union}) ORDER BY k"))
    for i, ((text, _), count) in enumerate(zip(sample, ours, strict=False)):
        assert pruned[i] == count, text
    # the filters are not trivial: they select different numbers of rows
    assert len(set(ours[:40])) > 20
