"""icepark.spark.read.positions: position deletes and DVs dropped by the bitmap filter or the join."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.spark import read
from icepark.spark.paths import spark_reported_path
from icepark.spark.read import delete_cache, positions, reader
from icepark.spark.read.positions import DeletedPositions, _checked_sizes, _slot_hash, slot_of

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture(autouse=True)
def _fresh_delete_cache() -> Any:
    # these tests change how deletes are turned into filters: nothing kept from another test
    delete_cache.clear()
    yield
    delete_cache.clear()


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def _no_join(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any) -> Any:
        raise AssertionError("the anti join was used instead of the bitmap filter")

    monkeypatch.setattr(positions, "_anti_join", fail)


def _table(catalog: Any, name: str, version: int, rows: int) -> Any:
    props = {"write.delete.mode": "merge-on-read", "format-version": str(version)}
    table = catalog.create_table(name, SCHEMA, partition_by=["name"], properties=props)
    names = [f"n{i % 3}" for i in range(rows)]
    table.append(pa.table({"id": list(range(rows)), "name": names}, schema=SCHEMA))
    return table


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("literals", [8192, 0], ids=["literal-arrays", "subquery-arrays"])
def test_bitmap_filter_drops_exactly_the_deleted_rows(
    spark: Any,
    catalog: Any,
    monkeypatch: pytest.MonkeyPatch,
    version: int,
    seed: int,
    literals: int,
) -> None:
    # arrays up to `literals` elements are plan literals, longer ones scalar subqueries
    monkeypatch.setattr(positions, "_LITERAL_ELEMENTS", literals)
    rows = 1200  # 400 rows a file: positions across several 64-bit words
    table = _table(catalog, f"db.bitmap{version}{seed}{literals}", version, rows)
    rng = random.Random(seed)
    first = set(rng.sample(range(rows), 40)) | {0, 3 * 63, 3 * 64, rows - 1}
    second = set(rng.sample(range(rows), 30))  # a second delete on the same files
    table.delete(f"id in ({','.join(map(str, sorted(first)))})")
    table.delete(f"id in ({','.join(map(str, sorted(second)))})")
    _no_join(monkeypatch)
    columns = ["id", "name", "_pos"]
    native = read(spark, table, columns=columns, path="native")
    assert sorted(r.id for r in native.collect()) == sorted(set(range(rows)) - first - second)
    assert _rows(native) == _rows(read(spark, table, columns=columns, path="python"))
    kept = read(spark, table, filter="id >= 600", path="native")
    assert sorted(r.id for r in kept.collect()) == sorted(set(range(600, rows)) - first - second)


def test_a_file_of_the_same_size_without_deletes_keeps_its_rows(
    spark: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    props = {"write.delete.mode": "merge-on-read", "format-version": "2"}
    table = catalog.create_table("db.twins", SCHEMA, partition_by=["name"], properties=props)
    ids = list(range(100))
    table.append(pa.table({"id": ids + ids, "name": ["a"] * 100 + ["b"] * 100}, schema=SCHEMA))
    sizes = {t.file.file_size_in_bytes for t in table.scan().plan_files()}
    assert len(sizes) == 1  # same rows, same-length partition values: same size
    table.delete("name = 'a' and id < 10")
    _no_join(monkeypatch)
    got = read(spark, table, path="native").collect()
    assert sorted((r.name, r.id) for r in got) == [("a", i) for i in range(10, 100)] + [
        ("b", i) for i in ids
    ]


def test_a_quote_in_the_table_location(spark: Any, tmp_path: Any) -> None:
    from icepark.catalog import load_catalog

    catalog = load_catalog("q", type="filesystem", warehouse=str(tmp_path / 'it\'s "here"'))
    catalog.create_namespace("db")
    table = _table(catalog, "db.quoted", 3, 30)
    table.delete("id in (1, 2, 29)")
    assert sorted(r.id for r in read(spark, table, path="native").collect()) == [
        i for i in range(30) if i not in (1, 2, 29)
    ]


def test_a_bitmap_over_the_limit_falls_back_to_the_join(
    spark: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(catalog, "db.limit", 3, 300)
    table.delete("id in (0, 150, 299)")
    joined: list[int] = []
    original = positions._anti_join
    monkeypatch.setattr(positions, "MAX_BITMAP_BYTES", 8)  # one word: each file spans more
    monkeypatch.setattr(positions, "_anti_join", lambda *a: joined.append(1) or original(*a))
    got = sorted(r.id for r in read(spark, table, path="native").collect())
    assert got == [i for i in range(300) if i not in (0, 150, 299)]
    assert joined


class _WrongLengths:
    """A FileIO whose files all look one byte longer than they are."""

    def __init__(self, io: Any) -> None:
        self.io = io

    def new_input(self, location: str) -> Any:
        real = self.io.new_input(location)

        class _Input:
            def length(self) -> int:
                return int(real.length()) + 1

        return _Input()


def test_sizes_that_differ_from_storage_fall_back_to_the_join(
    spark: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(catalog, "db.sizes", 2, 30)
    table.delete("id < 4")
    tasks = table.scan().plan_files()
    deleted = DeletedPositions(
        {
            spark_reported_path(t.file.file_path): np.array([0], dtype=np.int64)
            for t in tasks
            if t.delete_files
        }
    )
    assert _checked_sizes(deleted, tasks, table.io) is not None
    assert _checked_sizes(deleted, tasks, _WrongLengths(table.io)) is None
    original = positions._checked_sizes
    monkeypatch.setattr(
        positions, "_checked_sizes", lambda d, t, io: original(d, t, _WrongLengths(io))
    )
    assert sorted(r.id for r in read(spark, table, path="native").collect()) == list(range(4, 30))


@given(st.lists(st.integers(1 << 10, 1 << 31), min_size=1, max_size=256, unique=True))
def test_slot_hash_separates_distinct_sizes(sizes: list[int]) -> None:
    # data files of 1 KiB to 2 GiB: a hash is found, and it separates them
    found = _slot_hash(np.array(sizes, dtype=np.int64))
    assert found is not None
    assert len({slot_of(s, found) for s in sizes}) == len(sizes)
    assert found.bits <= 16


@given(st.lists(st.integers(1, 1 << 40), min_size=1, max_size=256, unique=True))
def test_a_slot_hash_found_separates_any_sizes(sizes: list[int]) -> None:
    found = _slot_hash(np.array(sizes, dtype=np.int64))
    if found is not None:  # else the deletes are applied by the join
        assert len({slot_of(s, found) for s in sizes}) == len(sizes)
        assert found.bits <= 16


def test_sizes_apart_only_in_high_bits_have_no_slot_hash() -> None:
    # a multiply carries bits upward only: 1 and 2 need a small shift, under which
    # 2^38 + 1 lands where 1 does (found by hypothesis on sizes up to 2^40)
    assert _slot_hash(np.array([1, 2, (1 << 38) + 1], dtype=np.int64)) is None


def test_slot_hash_keeps_the_slot_arrays_small() -> None:
    # thirty ~100 MB files (a day-partitioned table's) need no more than 2^8 slots, so the
    # slot arrays stay plan literals
    rng = np.random.default_rng(7)
    for _ in range(20):
        sizes = np.unique(rng.integers(90 << 20, 110 << 20, 30))
        found = _slot_hash(sizes)
        assert found is not None and found.bits <= 8, found


def test_slot_hash_refuses_equal_sizes() -> None:
    assert _slot_hash(np.array([10, 20, 10], dtype=np.int64)) is None


@pytest.mark.parametrize("version", [2, 3])
def test_a_query_again_reuses_the_deletes_and_a_new_delete_is_seen(
    spark: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    table = _table(catalog, f"db.again{version}", version, 300)
    loads: list[int] = []
    original = reader._load_deleted_positions
    monkeypatch.setattr(
        reader, "_load_deleted_positions", lambda *a: loads.append(1) or original(*a)
    )
    checks: list[int] = []
    checked = positions._checked_sizes
    monkeypatch.setattr(positions, "_checked_sizes", lambda *a: checks.append(1) or checked(*a))
    parsed: list[int] = []
    made = positions.BitmapFilter._condition
    monkeypatch.setattr(
        positions.BitmapFilter, "_condition", lambda *a: parsed.append(1) or made(*a)
    )
    _no_join(monkeypatch)
    table.delete("id in (1, 100, 299)")
    expected = [i for i in range(300) if i not in (1, 100, 299)]
    for _ in range(3):
        assert sorted(r.id for r in read(spark, table, path="native").collect()) == expected
    assert len(loads) == 1  # the delete files were read for the first query only
    assert len(checks) == 1  # and the files' sizes checked on storage once
    assert len(parsed) == 1  # and the condition made once in this session
    table.delete("id in (2, 200)")
    got = sorted(r.id for r in read(spark, table, path="native").collect())
    assert got == [i for i in expected if i not in (2, 200)]
    assert len(loads) == 2
    # the snapshot of the first delete still reads as it was
    ordered = sorted(table.snapshots(), key=lambda s: s.sequence_number)
    old = read(spark, table, snapshot_id=ordered[-2].snapshot_id, path="native")
    assert sorted(r.id for r in old.collect()) == expected
    assert len(loads) == 2
