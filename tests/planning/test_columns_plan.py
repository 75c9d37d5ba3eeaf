"""Planning with manifests decoded into arrays gives the same tasks as entry by entry.

A table of every primitive type, nulls and NaNs, with partition evolution, position deletes,
equality deletes and deletion vectors, several snapshots: for 80 random filters and time
travel, the tasks of the path huge tables take (:func:`~icepark.planning.walk.scan_columns`,
forced on) equal the tasks of the entry-by-entry path, field by field (files, deletes,
residuals, sequence numbers), and a plan streams and re-plans as Java's ``planFiles()``.
"""

from __future__ import annotations

import pickle
import random
from typing import Any

import pytest
from filter_cases import random_filter

import icepark.planning.walk as walk
from icepark.avro.compiled import kernel_available
from icepark.manifest.entry_columns import LazyDataFile
from icepark.planning.planner import FileScanTask, PlannedFiles
from icepark.table import Table

pytestmark = pytest.mark.skipif(not kernel_available(), reason="numba is not importable")


def _plans(evolved_table: Table, texts: list[str | None], **scan: Any) -> list[list[FileScanTask]]:
    return [list(evolved_table.scan(filter=text, **scan).plan_files()) for text in texts]


def test_same_tasks_as_entry_by_entry(
    evolved_table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(20261128)
    texts: list[str | None] = [None, "id = 650", "s like 'ap%'", "tz is null"]
    texts += [random_filter(rng)[0] for _ in range(80)]
    oldest = min(evolved_table.snapshots(), key=lambda s: s.sequence_number).snapshot_id
    by_entries = _plans(evolved_table, texts)
    old_snapshot = _plans(evolved_table, texts[:20], snapshot_id=oldest)
    monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
    by_columns = _plans(evolved_table, texts)
    assert any(isinstance(t.file, LazyDataFile) for plan in by_columns for t in plan)
    for text, expected, got in zip(texts, by_entries, by_columns, strict=True):
        assert got == expected, text
        for a, b in zip(got, expected, strict=True):
            assert (a.delete_files, a.residual, a.data_sequence_number) == (
                b.delete_files,
                b.residual,
                b.data_sequence_number,
            )
    assert _plans(evolved_table, texts[:20], snapshot_id=oldest) == old_snapshot
    # the filters are not trivial, and some tasks carry deletes
    assert len({len(p) for p in by_entries}) > 5
    assert any(t.delete_files for p in by_entries for t in p)


def test_tasks_pickle_as_plain_tasks(evolved_table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
    task = next(iter(evolved_table.scan(filter="id = 650").plan_files()))
    assert isinstance(task.file, LazyDataFile)
    back = pickle.loads(pickle.dumps(task))
    assert type(back.file).__name__ == "DataFile" and back == task


def test_a_plan_streams_and_plans_again_when_iterated_again(
    evolved_table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned = evolved_table.scan().plan_files()
    assert isinstance(planned, PlannedFiles)
    calls = []
    real = walk.manifests_of

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(walk, "manifests_of", counting)
    first = [t for t in planned]
    second = [t for t in planned]
    assert first == second and len(calls) >= 2
    calls.clear()
    assert len(planned) == len(first) and planned[0] == first[0] and planned == first
    assert len(calls) >= 1
    calls.clear()
    assert list(planned) == first and planned[-1:] == first[-1:] and not calls  # kept now


def test_referenced_files_by_columns_as_by_entries(
    evolved_table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What expiry and orphan removal may not delete is the same read either way, DELETED
    entries counted or not."""
    from icepark.planning.reachable import referenced_files

    table = evolved_table

    def found(live_only: bool) -> Any:
        got = referenced_files(
            table.io, table.metadata, live_only=live_only, metadata_location="m.json"
        )
        return got.content_files, got.paths()

    by_entries = [found(True), found(False)]
    monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
    by_columns = [found(True), found(False)]
    assert by_columns == by_entries
    live, everything = by_columns
    assert set(live[0]) <= set(everything[0])
    assert {c for c, _ in everything[0].values()} == {0, 1, 2}
