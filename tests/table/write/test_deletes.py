"""Row-level deletes on one machine: writing (copy-on-write, v2 position deletes, v3 deletion
vectors, equality deletes through upsert/apply_changes) and reading them back."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.catalog import Catalog, SqlCatalog
from icepark.errors import ValidationError
from icepark.manifest import FileContent, FileFormat
from icepark.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("value", pa.int64()),
    ]
)


def _rows(ids: range | list[int], value: int = 0) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "category": pa.array([["a", "b", None][i % 3] for i in ids]),
            "value": pa.array([i * 10 + value for i in ids], pa.int64()),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _table(catalog: Catalog, version: int, mode: str = "merge-on-read", **props: str) -> Table:
    properties = {
        "format-version": str(version),
        "write.delete.mode": mode,
        "write.merge.mode": mode,
        **props,
    }
    return catalog.create_table("db.t", SCHEMA, properties=properties)


def _ids(table: Table, **kw: object) -> list[int]:
    return sorted(table.scan(**kw).to_arrow().column("id").to_pylist())  # type: ignore[arg-type]


def _delete_files(table: Table) -> list[object]:
    return [d for t in table.scan().plan_files() for d in t.delete_files]


@pytest.mark.parametrize("version", [2, 3])
def test_merge_on_read_delete(catalog: Catalog, version: int) -> None:
    table = _table(catalog, version)
    table.append(_rows(range(100)))
    table.delete("id < 10")
    assert _ids(table) == list(range(10, 100))
    deletes = _delete_files(table)
    assert deletes, "merge-on-read writes delete files"
    fmt = FileFormat.PUFFIN if version == 3 else FileFormat.PARQUET
    assert all(d.file_format == fmt for d in deletes)  # type: ignore[attr-defined]
    summary = dict(table.current_snapshot().summary)  # type: ignore[union-attr, arg-type]
    assert summary["operation"] == "delete"
    assert summary["added-position-deletes"] == "10"
    assert table.scan().count() == 90
    assert table.scan(filter="id < 20").count() == 10
    # a second delete on the same file
    table.delete("id >= 90")
    assert _ids(table) == list(range(10, 90))
    if version == 3:
        dvs = _delete_files(table)
        assert len(dvs) == 1, "the new DV replaces the old one"
        assert dvs[0].record_count == 20  # type: ignore[attr-defined]
    # projection without the filtered columns, _deleted and _pos
    out = table.scan(columns=["value"]).to_arrow()
    assert sorted(out.column("value").to_pylist()) == [i * 10 for i in range(10, 90)]
    marked = table.scan(columns=["id", "_deleted"]).to_arrow().to_pylist()
    assert sum(r["_deleted"] for r in marked) == 20 and len(marked) == 100


def test_copy_on_write_delete(catalog: Catalog) -> None:
    table = _table(catalog, 2, mode="copy-on-write")
    table.append(_rows(range(50)))
    table.delete("value >= 100")
    assert _ids(table) == list(range(10))
    assert _delete_files(table) == []
    summary = dict(table.current_snapshot().summary)  # type: ignore[union-attr, arg-type]
    assert summary["operation"] == "overwrite"


def test_delete_whole_files_by_metadata(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    table.append(_rows(range(10)))
    table.append(_rows(range(10, 20)))
    table.delete("id >= 10")  # the second file matches entirely: dropped, not read
    assert _ids(table) == list(range(10))
    assert _delete_files(table) == []
    summary = dict(table.current_snapshot().summary)  # type: ignore[union-attr, arg-type]
    assert summary["deleted-data-files"] == "1"


def test_delete_on_branch_keeps_tag(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    table.append(_rows(range(20)))
    table.create_tag("before")
    table.create_branch("dev")
    table.delete("id < 5", branch="dev")
    assert _ids(table, ref="dev") == list(range(5, 20))
    assert _ids(table) == list(range(20))
    assert _ids(table, ref="before") == list(range(20))


def test_delete_with_null_semantics(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    table.append(_rows(range(9)))
    table.delete("category = 'a'")  # null categories do not match
    assert _ids(table) == [1, 2, 4, 5, 7, 8]


def test_equality_deletes_apply_changes(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    table.append(_rows(range(10)))
    changes = _rows([1, 2, 20], value=5).append_column("_op", pa.array(["U", "D", "I"]))
    table.apply_changes(changes, on=["id"])
    out = {r["id"]: r["value"] for r in table.scan().to_arrow().to_pylist()}
    assert sorted(out) == [0, 1, *range(3, 10), 20]
    assert out[1] == 15 and out[20] == 205
    kinds = {d.content for d in _delete_files(table)}  # type: ignore[attr-defined]
    assert kinds == {FileContent.EQUALITY_DELETES}
    # same-snapshot rule: the equality delete does not delete the updated row itself
    assert table.scan().count() == 10
    # equality columns projected for the anti-join and dropped afterwards
    assert sorted(table.scan(columns=["value"]).to_arrow().column("value").to_pylist()) == sorted(
        out.values()
    )


def test_apply_changes_rejects_unknown_ops(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    bad = _rows([1]).append_column("_op", pa.array(["X"]))
    with pytest.raises(ValidationError, match="Unknown change operations"):
        table.apply_changes(bad, on=["id"])


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_upsert(catalog: Catalog, mode: str) -> None:
    table = _table(catalog, 2, mode=mode)
    table.append(_rows(range(5)))
    table.upsert(_rows([3, 4, 5, 6], value=1), on=["id"])
    out = {r["id"]: r["value"] for r in table.scan().to_arrow().to_pylist()}
    assert out == {0: 0, 1: 10, 2: 20, 3: 31, 4: 41, 5: 51, 6: 61}
    with pytest.raises(ValidationError, match="duplicate keys"):
        table.upsert(_rows([1, 1]), on=["id"])


def test_equality_delete_metrics_skip(catalog: Catalog) -> None:
    from icepark.arrow.deletes import equality_delete_may_match

    table = _table(catalog, 2)
    table.append(_rows(range(10)))
    table.apply_changes(_rows([100]).append_column("_op", pa.array(["D"])), on=["id"])
    (task,) = table.scan().plan_files()
    (eq,) = task.delete_files
    assert not equality_delete_may_match(eq, task.file, table.schema())
    assert table.scan().count() == 10


def test_concurrent_delete_conflicts(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(catalog, 3)
    table.append(_rows(range(20)))
    other = catalog.load_table("db.t")
    # a delete committed before this transaction commits is planned against: no conflict
    tx = table.transaction()
    tx.delete("id < 5")
    other.delete("id >= 15")  # touches the same data file
    tx.commit_transaction()
    assert _ids(table) == list(range(5, 15))
    # one that lands between planning and the swap conflicts: the retry sees it
    swap = catalog._swap_metadata_location  # type: ignore[attr-defined]
    raced: list[bool] = []

    def race(*args: object) -> None:
        if not raced:
            raced.append(True)
            catalog.load_table("db.t").delete("id >= 12")
        swap(*args)

    monkeypatch.setattr(catalog, "_swap_metadata_location", race)
    with pytest.raises(ValidationError, match=r"conflicting delete file|replaced by concurrent"):
        table.delete("id < 8")
    monkeypatch.undo()
    table.refresh()
    assert _ids(table) == list(range(5, 12))


def test_concurrent_append_retried_through(catalog: Catalog) -> None:
    table = _table(catalog, 2, **{"write.delete.isolation-level": "snapshot"})
    table.append(_rows(range(20)))
    other = catalog.load_table("db.t")
    tx = table.transaction()
    tx.delete("id < 5")
    other.append(_rows(range(100, 105)))
    tx.commit_transaction()
    table.refresh()
    assert _ids(table) == [*range(5, 20), *range(100, 105)]


def test_serializable_conflicts_on_matching_append(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(catalog, 2)
    table.append(_rows(range(20)))
    swap = catalog._swap_metadata_location  # type: ignore[attr-defined]
    raced: list[bool] = []

    def race(*args: object) -> None:  # an append lands between planning and the swap
        if not raced:
            raced.append(True)
            catalog.load_table("db.t").append(_rows([1, 2]))
        swap(*args)

    monkeypatch.setattr(catalog, "_swap_metadata_location", race)
    with pytest.raises(ValidationError, match="conflicting files"):
        table.delete("id < 5")


@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
def test_concurrent_append_of_deleted_keys_and_apply_changes(
    catalog: Catalog, isolation: str
) -> None:
    """Equality deletes would delete a concurrent append's rows with the same keys: that
    conflicts under serializable isolation; under snapshot isolation it is retried through."""
    table = _table(catalog, 2, **{"write.merge.isolation-level": isolation})
    table.append(_rows(range(10)))
    other = catalog.load_table("db.t")
    tx = table.transaction()
    tx.apply_changes(_rows([3]).append_column("_op", pa.array(["D"])), on=["id"])
    other.append(_rows([3]))  # a second row with key 3, committed first
    if isolation == "serializable":
        with pytest.raises(ValidationError, match="conflicting files"):
            tx.commit_transaction()
        assert _ids(catalog.load_table("db.t")) == sorted([*range(10), 3])
    else:
        tx.commit_transaction()
        assert _ids(catalog.load_table("db.t")) == [i for i in range(10) if i != 3]


def test_merge_on_read_upsert_retries_unrelated_append(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    table.append(_rows(range(10)))
    other = catalog.load_table("db.t")
    tx = table.transaction()
    tx.upsert(_rows([4], value=1), on=["id"])
    other.append(_rows(range(100, 103)))  # no row with key 4: no conflict
    tx.commit_transaction()
    assert _ids(catalog.load_table("db.t")) == [*range(10), 100, 101, 102]


def test_scan_cache_is_shared_and_thread_safe(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    for i in range(4):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    table.apply_changes(_rows([3, 13, 23, 33]).append_column("_op", pa.array(["D"] * 4)), on=["id"])
    scan = table.scan()
    tasks = scan.plan_files()
    results: list[int] = []

    def run(task: object) -> None:
        results.append(sum(b.num_rows for b in scan.read_task(task)))  # type: ignore[arg-type]

    threads = [threading.Thread(target=run, args=(t,)) for t in tasks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 36
    cache = scan._delete_cache  # the per-scan cache
    assert len(cache._equality) == 1  # loaded once for four data files


def test_delete_cache_pickles_empty() -> None:
    import pickle

    from icepark.arrow.deletes import DeleteCache

    cache = DeleteCache()
    cache._equality[("x", (1,))] = pa.table({"a": [1]})
    assert pickle.loads(pickle.dumps(cache))._equality == {}


@settings(max_examples=8)
@given(
    version=st.sampled_from([2, 3]),
    mode=st.sampled_from(["merge-on-read", "copy-on-write"]),
    cuts=st.lists(st.tuples(st.integers(0, 59), st.integers(1, 15)), min_size=1, max_size=3),
)
def test_deletes_match_a_model(
    tmp_path_factory: pytest.TempPathFactory, version: int, mode: str, cuts: list[tuple[int, int]]
) -> None:
    path = tmp_path_factory.mktemp("model")
    cat = SqlCatalog("t", uri=f"sqlite:///{path}/c.db", warehouse=str(path / "wh"))
    cat.create_namespace("db")
    table = _table(cat, version, mode=mode)
    table.append(_rows(range(30)))
    table.append(_rows(range(30, 60)))
    live = set(range(60))
    for start, size in cuts:
        table.delete(f"id >= {start} and id < {start + size}")
        live -= set(range(start, start + size))
        assert _ids(table) == sorted(live)
        assert table.scan().count() == len(live)


def test_written_dv_follows_puffin_rules(catalog: Catalog) -> None:
    from icepark.puffin import DELETION_VECTOR_V1, read_puffin

    table = _table(catalog, 3)
    table.append(_rows(range(10)))
    table.delete("id in (1, 2, 3)")
    (dv,) = _delete_files(table)
    footer = read_puffin(table.io.new_input(dv.file_path))  # type: ignore[attr-defined]
    (blob,) = footer.blobs
    assert blob.type == DELETION_VECTOR_V1
    assert (blob.snapshot_id, blob.sequence_number, blob.compression_codec) == (-1, -1, None)
    assert blob.properties["cardinality"] == "3"
    assert blob.properties["referenced-data-file"] == dv.referenced_data_file  # type: ignore[attr-defined]
    assert (blob.offset, blob.length) == (dv.content_offset, dv.content_size_in_bytes)  # type: ignore[attr-defined]


_NULL_FILTERS = [
    "category != 'a'",
    "category not in ('a')",
    "category not like 'a%'",
    "not (category = 'a')",
    "category = 'a'",
    "category is null",
]


@pytest.mark.parametrize("text", _NULL_FILTERS)
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_null_semantics_same_partitioned_or_not(tmp_path: Path, text: str, mode: str) -> None:
    """A null matches no comparison (SQL), whether the column is a partition source or not:
    scans and deletes agree between identity-partitioned and unpartitioned tables."""
    cat = SqlCatalog("n", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    props = {"format-version": "2", "write.delete.mode": mode}
    plain = cat.create_table("db.plain", SCHEMA, properties=props)
    parted = cat.create_table("db.parted", SCHEMA, partition_by=["category"], properties=props)
    for t in (plain, parted):
        t.append(_rows(range(30)))
    expected = [i for i in range(30) if _sql_match(text, ["a", "b", None][i % 3])]
    assert _ids(plain, filter=text) == expected
    assert _ids(parted, filter=text) == expected
    for t in (plain, parted):
        t.delete(text)
        assert _ids(t) == [i for i in range(30) if i not in expected]


def _sql_match(text: str, category: str | None) -> bool:
    if text == "category is null":
        return category is None
    if category is None:
        return False  # unknown: not selected
    return (category == "a") == (text == "category = 'a'")


@pytest.mark.parametrize("version", [2, 3])
def test_overwrite_keeps_rows_deleted_by_merge_on_read(catalog: Catalog, version: int) -> None:
    """An overwrite by filter rewrites partly matching files with their deletes applied: rows
    deleted earlier stay deleted, and a removed file's DV goes with it (PyIceberg agrees)."""
    from pyiceberg.table import StaticTable

    table = _table(catalog, version)
    table.append(_rows(range(30)))  # one file, every category
    table.delete("id < 5")  # merge-on-read: a delete file on that data file
    new = _rows([100, 102])  # categories b and a: only the a row may come in
    table.overwrite(new.filter(pa.compute.equal(new["category"], "a")), "category = 'a'")
    expected = [i for i in range(5, 30) if i % 3 != 0] + [102]
    assert _ids(table) == expected
    if version == 3:
        assert _delete_files(table) == []  # the rewritten file's DV was removed with it
    judged = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    assert sorted(judged.column("id").to_pylist()) == expected
