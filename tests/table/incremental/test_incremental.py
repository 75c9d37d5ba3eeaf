"""Incremental append scans, changelog scans and follow() on one machine (the reference
engine judges them in tests/interop/test_interop_changelog.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.catalog import Catalog, SqlCatalog
from icepark.errors import ValidationError
from icepark.spec.snapshots import Operation
from icepark.table import Table
from icepark.table.incremental.follow import follow

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
        pa.field("p", pa.int32()),
    ]
)


def _rows(ids: list[int], suffix: str = "") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": [f"v{i}{suffix}" for i in ids],
            "p": pa.array([i % 3 for i in ids], pa.int32()),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _table(
    catalog: Catalog, mode: str = "copy-on-write", version: int = 2, name: str = "db.t"
) -> Table:
    props = {
        "format-version": str(version),
        **{f"write.{op}.mode": mode for op in ("delete", "update", "merge")},
    }
    return catalog.create_table(name, SCHEMA, partition_by=["p"], properties=props)


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


# -- incremental append scans -----------------------------------------------------------------


def test_incremental_append_scan_ranges(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1, 2, 3]))
    t.append(_rows([4, 5]))
    t.delete("id = 4")  # an overwrite: contributes nothing
    t.append(_rows([6]))
    s = [x.snapshot_id for x in t.snapshots()]
    assert _ids(t.incremental_append_scan().to_arrow()) == [1, 2, 3, 4, 5, 6]
    assert _ids(t.incremental_append_scan(from_snapshot_id=s[0]).to_arrow()) == [4, 5, 6]
    assert _ids(t.incremental_append_scan(s[0], from_inclusive=True).to_arrow()) == list(
        range(1, 7)
    )
    assert _ids(t.incremental_append_scan(s[0], s[1]).to_arrow()) == [4, 5]
    assert _ids(t.incremental_append_scan(s[1], s[2]).to_arrow()) == []
    assert t.incremental_append_scan(s[1]).count() == 1
    # same planning and pruning as scan(): partitions prune files, residuals filter rows
    scan = t.incremental_append_scan(filter="p = 1 and id > 1", columns=["id"])
    assert _ids(scan.to_arrow()) == [4]
    assert scan.to_arrow().column_names == ["id"]
    assert {task.file.partition for task in scan.plan_files()} == {(1,)}
    assert sum(b.num_rows for b in scan.to_batches()) == 1
    # oldest snapshot first
    order = [task.file.record_count for task in t.incremental_append_scan().plan_files()]
    assert order[-1] == 1


def test_appended_entries_of_merged_manifests(catalog: Catalog) -> None:
    # merge appends rewrite earlier entries (EXISTING) into each new manifest: a snapshot's
    # own files are exactly its ADDED entries, which the scanner picks without building the
    # rest, as a full decode finds them
    from icepark.manifest.reader import read_manifest
    from icepark.planning.walk import manifests_of
    from icepark.spec.manifests import ManifestEntryStatus
    from icepark.table.incremental.append_scan import appended_entries

    table = _table(catalog)
    table.set_properties({"commit.manifest.min-count-to-merge": "2"})
    for i in range(6):
        table.append(_rows(list(range(i * 10, i * 10 + 10))))
    table = catalog.load_table("db.t")
    merged = 0
    for snapshot in table.snapshots():
        expected = []
        for m in manifests_of(table.io, snapshot):
            if m.added_snapshot_id != snapshot.snapshot_id:
                continue
            entries = read_manifest(table.io.new_input(m.manifest_path), m)
            merged += any(e.status == ManifestEntryStatus.EXISTING for e in entries)
            expected += [e.data_file.file_path for e in entries if e.status == 1]
        got = [e.data_file.file_path for e in appended_entries(table.io, snapshot)]
        assert got == expected and len(got) == 3  # a file a partition
    assert merged  # the table did merge manifests


def test_incremental_append_scan_refuses_non_ancestors(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1]))
    t.create_branch("b")
    t.append(_rows([2]))
    t.append(_rows([3]), branch="b")
    main_head = t.current_snapshot().snapshot_id
    b_head = t.metadata.snapshot_by_name("b").snapshot_id
    with pytest.raises(ValidationError, match=rf"{main_head}.*not an ancestor.*{b_head}"):
        t.incremental_append_scan(from_snapshot_id=main_head, to_snapshot_id=b_head).plan_files()
    assert _ids(t.incremental_append_scan(ref="b").to_arrow()) == [1, 3]
    with pytest.raises(ValidationError, match="Cannot find snapshot 123"):
        t.incremental_append_scan(to_snapshot_id=123).plan_files()
    with pytest.raises(ValidationError, match="Cannot find the starting snapshot 77"):
        t.incremental_append_scan(77, from_inclusive=True).plan_files()
    with pytest.raises(ValidationError, match="nope"):
        t.incremental_append_scan(filter="nope = 1").plan_files()


def test_incremental_append_scan_ignores_later_deletes_as_java(catalog: Catalog) -> None:
    t = _table(catalog, mode="merge-on-read")
    t.append(_rows([0, 3, 6]))  # one partition, one file
    t.delete("id = 3")
    assert any(task.delete_files for task in t.scan().plan_files())
    assert _ids(t.incremental_append_scan().to_arrow()) == [0, 3, 6]


def test_empty_table(catalog: Catalog) -> None:
    t = _table(catalog)
    assert t.incremental_append_scan().plan_files() == []
    assert t.changelog_scan().to_arrow().num_rows == 0
    assert t.changelog_scan().to_arrow().column_names[-3:] == [
        "_change_type",
        "_change_ordinal",
        "_commit_snapshot_id",
    ]


# -- changelog scans ----------------------------------------------------------------------------


def _changes(t: Table, **kw: object) -> list[tuple[int, str, int, str]]:
    rows = t.changelog_scan(**kw).to_arrow().to_pylist()  # type: ignore[arg-type]
    return sorted((r["_change_ordinal"], r["_change_type"], r["id"], r["v"]) for r in rows)


@pytest.mark.parametrize(
    ("mode", "version"), [("copy-on-write", 2), ("merge-on-read", 2), ("merge-on-read", 3)]
)
def test_changelog_of_each_operation(catalog: Catalog, mode: str, version: int) -> None:
    t = _table(catalog, mode, version)
    t.append(_rows([1, 2, 3, 4]))
    t.delete("id = 2")
    t.upsert(_rows([3, 9], "!"), on=["id"])
    assert _changes(t) == [
        (0, "INSERT", 1, "v1"),
        (0, "INSERT", 2, "v2"),
        (0, "INSERT", 3, "v3"),
        (0, "INSERT", 4, "v4"),
        (1, "DELETE", 2, "v2"),
        (2, "DELETE", 3, "v3"),
        (2, "INSERT", 3, "v3!"),
        (2, "INSERT", 9, "v9!"),
    ]
    assert _changes(t, identifier_columns=["id"])[-3:] == [
        (2, "INSERT", 9, "v9!"),
        (2, "UPDATE_AFTER", 3, "v3!"),
        (2, "UPDATE_BEFORE", 3, "v3"),
    ]
    snaps = [s.snapshot_id for s in t.snapshots()]
    rows = t.changelog_scan().to_arrow().to_pylist()
    assert {(r["_change_ordinal"], r["_commit_snapshot_id"]) for r in rows} == {
        (0, snaps[0]),
        (1, snaps[1]),
        (2, snaps[2]),
    }
    assert _changes(t, from_snapshot_id=snaps[0], to_snapshot_id=snaps[1]) == [
        (0, "DELETE", 2, "v2")
    ]
    net = t.changelog_scan(net_changes=True).to_arrow().to_pylist()
    assert sorted((r["_change_type"], r["id"], r["v"]) for r in net) == [
        ("INSERT", 1, "v1"),
        ("INSERT", 3, "v3!"),
        ("INSERT", 4, "v4"),
        ("INSERT", 9, "v9!"),
    ]


def test_changelog_skips_replace_and_validates(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1]))
    with pytest.raises(ValidationError, match="identifier columns are not set"):
        t.changelog_scan(compute_updates=True).plan_files()
    with pytest.raises(ValidationError, match="net changes with update images"):
        t.changelog_scan(identifier_columns=["id"], net_changes=True).plan_files()
    with pytest.raises(ValidationError, match="nope"):
        t.changelog_scan(identifier_columns=["nope"]).plan_files()
    with pytest.raises(ValidationError, match="end snapshot 5"):
        t.changelog_scan(to_snapshot_id=5).plan_files()


def test_changelog_update_filter_on_other_column_applies_after_updates(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1, 2]))
    t.upsert(_rows([1], "-changed"), on=["id"])
    rows = _changes(t, identifier_columns=["id"], filter="v = 'v1-changed'")
    assert rows == [(1, "UPDATE_AFTER", 1, "v1-changed")]
    rows = _changes(t, identifier_columns=["id"], filter="id = 1")
    assert [r[1] for r in rows] == ["INSERT", "UPDATE_AFTER", "UPDATE_BEFORE"]


@settings(max_examples=15)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["append", "delete", "upsert"]), st.integers(0, 11)),
        min_size=1,
        max_size=6,
    )
)
def test_changelog_replays_the_history(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]]
) -> None:
    """Applying the changelog's changes in order to the start state gives every snapshot's
    rows, on copy-on-write and merge-on-read tables alike, and both give the same
    changelog."""
    base = tmp_path_factory.mktemp("replay")
    cat = SqlCatalog("t", uri=f"sqlite:///{base}/c.db", warehouse=str(base / "wh"))
    cat.create_namespace("db")
    tables = [_table(cat, m, 2, f"db.{m[:3]}") for m in ("copy-on-write", "merge-on-read")]
    counter = itertools.count(100)
    for t in tables:
        t.append(_rows(list(range(6))))
    for op, n in ops:
        tag = str(next(counter))
        for t in tables:
            if op == "append":
                t.append(_rows([int(tag)]))  # a new id
            elif op == "delete":
                t.delete(f"id = {n}")
            else:
                t.upsert(_rows([n], tag), on=["id"])
    changelogs = [_changes(t) for t in tables]
    assert changelogs[0] == changelogs[1]
    for t in tables:
        live: dict[int, str] = {}
        non_replace = [s for s in t.snapshots() if s.operation != Operation.REPLACE]
        for _, kind, id_, v in changelogs[0]:  # in ordinal order, deletes first
            if kind == "DELETE":
                assert live.pop(id_) == v
            else:
                assert id_ not in live
                live[id_] = v
        state = t.scan(snapshot_id=non_replace[-1].snapshot_id).to_arrow().to_pylist()
        assert live == {r["id"]: r["v"] for r in state}


# -- follow ----------------------------------------------------------------------------------


class _Stop(Exception):
    pass


def test_follow_yields_each_append_in_order(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1]))
    reader = catalog.load_table("db.t")
    actions = iter(
        [
            lambda: t.append(_rows([2, 3])),
            lambda: (t.delete("id = 1"), t.append(_rows([4]))),
            lambda: None,
        ]
    )

    def sleep(_: float) -> None:
        try:
            next(actions)()
        except StopIteration:
            raise _Stop from None

    got: dict[int, list[int]] = {}
    with pytest.raises(_Stop):
        for item in follow(reader, interval=0.01, columns=["id"], sleep=sleep):
            got.setdefault(item.snapshot_id, []).extend(item.batch.column("id").to_pylist())
    snaps = t.refresh().snapshots()
    assert [(k, sorted(v)) for k, v in got.items()] == [
        (snaps[1].snapshot_id, [2, 3]),
        (snaps[3].snapshot_id, [4]),
    ]


def test_follow_from_a_snapshot_and_a_timestamp(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1]))
    t.append(_rows([2]))
    first, second = t.snapshots()

    def stop(_: float) -> None:
        raise _Stop

    def run(**kw: object) -> list[int]:
        out: list[int] = []
        with pytest.raises(_Stop):
            for item in follow(t, filter="id > 0", sleep=stop, **kw):  # type: ignore[arg-type]
                out.extend(item.batch.column("id").to_pylist())
        return out

    assert run(start_snapshot_id=first.snapshot_id) == [1, 2]
    assert run(start_snapshot_id=second.snapshot_id) == [2]
    assert run(start_timestamp=second.timestamp_ms) == [2]
    assert run(start_timestamp=second.timestamp_ms + 10_000) == []  # waits, no error
    assert run() == []
    with pytest.raises(ValidationError, match="start snapshot 42"):
        next(t.follow(start_snapshot_id=42))
