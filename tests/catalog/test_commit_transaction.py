"""Multi-table commits: ``Catalog.commit_transaction`` and ``Catalog.commit_tables``.

All tables land or none does. On the SQL catalog (SQLite, PostgreSQL) every pointer swaps in
one database transaction; the file-system catalog refuses. Real files throughout: after a
failed commit the warehouse holds exactly the files it held before the transactions were
staged.
"""

from __future__ import annotations

import multiprocessing
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import FileSystemCatalog, SqlCatalog
from icepark.catalog.base import Identifier
from icepark.errors import (
    CommitFailedError,
    NoSuchTableError,
    RequirementFailedError,
    UnsupportedOperationError,
    ValidationError,
)
from icepark.spec.new_table import creation_updates
from icepark.spec.updates import AssertCreate, AssertRefSnapshotId, SetPropertiesUpdate

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [str(i) for i in ids]}, schema=SCHEMA)


def _sqlite(tmp_path: Path, name: str = "test") -> SqlCatalog:
    return SqlCatalog(name, uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))


@pytest.fixture(params=["sqlite", "postgres"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlCatalog]:
    if request.param == "sqlite":
        cat = _sqlite(tmp_path)
    else:
        url = request.getfixturevalue("postgres_url")
        cat = SqlCatalog(f"t_{uuid.uuid4().hex}", uri=url, warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    cat.create_table("db.a", SCHEMA).append(_rows(1))
    cat.create_table("db.b", SCHEMA).append(_rows(1))
    yield cat


def _twin(catalog: SqlCatalog) -> SqlCatalog:
    """Another writer: a second catalog object on the same database."""
    return SqlCatalog(catalog.name, catalog.properties)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_both_tables_commit_together(catalog: SqlCatalog) -> None:
    a, b = catalog.load_table("db.a"), catalog.load_table("db.b")
    tx_a, tx_b = a.transaction(), b.transaction()
    tx_a.append(_rows(2, 3))
    tx_b.append(_rows(4)).set_properties(owner="etl")
    results = catalog.commit_transaction([tx_a, tx_b])
    assert [r.metadata_location for r in results] == [
        catalog.metadata_location("db.a"),
        catalog.metadata_location("db.b"),
    ]
    assert a.metadata_location == results[0].metadata_location  # tables hold the result
    assert b.metadata_location == results[1].metadata_location
    fresh_a, fresh_b = catalog.load_table("db.a"), catalog.load_table("db.b")
    assert len(fresh_a.snapshots()) == 2 and len(fresh_b.snapshots()) == 2
    assert sorted(fresh_a.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert sorted(fresh_b.scan().to_arrow().column("id").to_pylist()) == [1, 4]
    assert fresh_b.properties["owner"] == "etl"
    with pytest.raises(ValidationError, match="already finished"):
        tx_a.append(_rows(9))


def test_a_conflict_on_one_table_changes_neither(
    catalog: SqlCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer appends to db.b after the transactions were staged and checked: the
    swap of db.b finds its pointer moved, and db.a's swap (done first) is rolled back."""
    a, b = catalog.load_table("db.a"), catalog.load_table("db.b")
    before = _files(tmp_path / "wh")
    tx_a, tx_b = a.transaction(), b.transaction()
    tx_a.append(_rows(2))
    tx_b.append(_rows(3))
    other = _twin(catalog)
    swap = catalog._commit_tables

    def racing(swaps: list[tuple[Identifier, str | None, str]]) -> None:
        other.load_table("db.b").append(_rows(99))  # lands between the check and the swap
        swap(swaps)

    monkeypatch.setattr(catalog, "_commit_tables", racing)
    a_location = catalog.metadata_location("db.a")
    with pytest.raises(CommitFailedError, match=r"db\.b"):
        catalog.commit_transaction([tx_a, tx_b])
    assert catalog.metadata_location("db.a") == a_location
    assert catalog.load_table("db.a").scan().count() == 1
    assert sorted(catalog.load_table("db.b").scan().to_arrow().column("id").to_pylist()) == [
        1,
        99,
    ]
    after = _files(tmp_path / "wh")
    b_new = {f for f in after - before if f.startswith("db/b/")}  # the other writer's commit
    assert after - b_new == before  # no metadata, manifest or data file of ours is left
    assert not any(f.startswith("db/a/") for f in after - before)


def test_a_failed_requirement_names_the_table_and_leaves_nothing(
    catalog: SqlCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer appends to db.b after it was staged: db.b's branch requirement fails
    at the check, before any metadata file is written."""
    a, b = catalog.load_table("db.a"), catalog.load_table("db.b")
    before = _files(tmp_path / "wh")
    tx_a, tx_b = a.transaction(), b.transaction()
    tx_a.append(_rows(2))
    tx_b.append(_rows(3))
    other = _twin(catalog)
    commit_tables = catalog.commit_tables

    def racing(changes):  # type: ignore[no-untyped-def]
        other.load_table("db.b").append(_rows(99))
        return commit_tables(changes)

    monkeypatch.setattr(catalog, "commit_tables", racing)
    with pytest.raises(RequirementFailedError, match=r"db\.b.*branch main has changed"):
        catalog.commit_transaction([tx_a, tx_b])
    assert catalog.load_table("db.a").scan().count() == 1
    after = _files(tmp_path / "wh")
    assert {f for f in after - before if not f.startswith("db/b/")} == set()


def test_a_failure_while_staging_deletes_what_the_others_wrote(
    catalog: SqlCatalog, tmp_path: Path
) -> None:
    """db.b's overwrite finds a conflicting row appended meanwhile when it is staged, after
    db.a's append was staged: nothing lands and db.a's files go too."""
    a, b = catalog.load_table("db.a"), catalog.load_table("db.b")
    before = _files(tmp_path / "wh")
    tx_a, tx_b = a.transaction(), b.transaction()
    tx_a.append(_rows(2))
    tx_b.overwrite(_rows(5), "id = 1")
    staged = _files(tmp_path / "wh")
    _twin(catalog).load_table("db.b").append(_rows(1))  # a row the overwrite's filter selects
    theirs = _files(tmp_path / "wh") - staged
    with pytest.raises(ValidationError, match=r"(?i)conflict"):
        catalog.commit_transaction([tx_a, tx_b])
    assert catalog.load_table("db.a").scan().count() == 1
    assert _files(tmp_path / "wh") == before | theirs


def test_commit_tables_creates_and_updates_in_one_step(catalog: SqlCatalog) -> None:
    staged = catalog.create_table_transaction("db.c", SCHEMA)
    a = catalog.load_table("db.a")
    results = catalog.commit_tables(
        [
            (("db", "c"), [AssertCreate()], creation_updates(staged.metadata)),
            (
                "db.a",
                [AssertRefSnapshotId("main", a.current_snapshot().snapshot_id)],  # type: ignore[union-attr]
                [SetPropertiesUpdate({"k": "v"})],
            ),
        ]
    )
    assert catalog.metadata_location("db.c") == results[0].metadata_location
    assert catalog.load_table("db.a").properties["k"] == "v"
    # a change that changes nothing is answered with the current metadata
    unchanged = catalog.commit_tables([("db.b", [], [])])
    assert unchanged[0].metadata_location == catalog.metadata_location("db.b")


def test_bad_input_gets_typed_errors_naming_the_table(catalog: SqlCatalog) -> None:
    a = catalog.load_table("db.a")
    with pytest.raises(NoSuchTableError, match=r"db\.nope"):
        catalog.commit_tables(
            [("db.a", [], [SetPropertiesUpdate({"k": "v"})]), ("db.nope", [], [])]
        )
    with pytest.raises(RequirementFailedError, match=r"db\.a.*already exists"):
        catalog.commit_tables([("db.a", [AssertCreate()], creation_updates(a.metadata))])
    with pytest.raises(ValidationError, match=r"db\.a appears more than once"):
        catalog.commit_tables([("db.a", [], []), (("db", "a"), [], [])])
    assert "k" not in catalog.load_table("db.a").properties
    foreign = _sqlite(Path(catalog.properties["warehouse"]).parent / "other", "other")
    foreign.create_namespace("db")
    tx = foreign.create_table("db.a", SCHEMA).transaction()
    with pytest.raises(ValidationError, match=r"db\.a.*not loaded from this catalog"):
        catalog.commit_transaction([tx])


def test_filesystem_catalog_refuses_and_says_why(tmp_path: Path) -> None:
    cat = FileSystemCatalog("fs", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    a, b = cat.create_table("db.a", SCHEMA), cat.create_table("db.b", SCHEMA)
    tx_a, tx_b = a.transaction(), b.transaction()
    tx_a.set_properties(k="v")
    tx_b.set_properties(k="v")
    with pytest.raises(UnsupportedOperationError, match=r"atomic|one table at a time"):
        cat.commit_transaction([tx_a, tx_b])
    with pytest.raises(UnsupportedOperationError, match="FileSystemCatalog"):
        cat.commit_tables([("db.a", [], [SetPropertiesUpdate({"k": "v"})])])
    assert "k" not in cat.load_table("db.a").properties
    tx_a.commit_transaction()  # the refused transactions are untouched: one at a time works
    assert cat.load_table("db.a").properties["k"] == "v"


# -- several processes at once ---------------------------------------------------------------

_WORKERS = 8  # the last two append to db.b alone, so a multi-table commit can lose db.b only
_B_ONLY = 2
_COMMITS = 6


def _worker(args: tuple[str, str, int]) -> tuple[bool, list[int]]:
    """One process: ``_COMMITS`` attempts, each appending one row to both tables in one
    multi-table commit (or, for the last ``_B_ONLY`` workers, to db.b alone, retried until it
    lands); returns whether it wrote both tables and the row ids whose commit succeeded."""
    uri, warehouse, worker = args
    cat = SqlCatalog("test", uri=uri, warehouse=warehouse)
    both = worker < _WORKERS - _B_ONLY
    landed = []
    for i in range(_COMMITS):
        row = worker * 1000 + i
        if not both:
            cat.load_table("db.b").append(_rows(row))
            landed.append(row)
            continue
        a, b = cat.load_table("db.a"), cat.load_table("db.b")
        tx_a, tx_b = a.transaction(), b.transaction()
        tx_a.append(_rows(row))
        tx_b.append(_rows(row))
        try:
            cat.commit_transaction([tx_a, tx_b])
        except CommitFailedError:
            continue
        landed.append(row)
    return both, landed


def test_concurrent_multi_table_commits_keep_both_tables_in_step(tmp_path: Path) -> None:
    cat = _sqlite(tmp_path)
    cat.create_namespace("db")
    cat.create_table("db.a", SCHEMA)
    cat.create_table("db.b", SCHEMA)
    args = [(cat.properties["uri"], cat.properties["warehouse"], w) for w in range(_WORKERS)]
    with multiprocessing.get_context("spawn").Pool(_WORKERS) as pool:
        outcomes = pool.map(_worker, args)
    landed = sorted(row for both, rows in outcomes if both for row in rows)
    b_only = sorted(row for both, rows in outcomes if not both for row in rows)
    assert landed, "no multi-table commit succeeded"
    assert len(b_only) == _B_ONLY * _COMMITS
    a, b = cat.load_table("db.a"), cat.load_table("db.b")
    assert len(a.snapshots()) == len(landed)
    assert len(b.snapshots()) == len(landed) + len(b_only)
    assert sorted(a.scan().to_arrow().column("id").to_pylist()) == landed
    assert sorted(b.scan().to_arrow().column("id").to_pylist()) == sorted(landed + b_only)
    # every commit that failed left nothing: one data file and one metadata file per commit
    for name, commits in (("a", len(landed)), ("b", len(landed) + len(b_only))):
        data = list((tmp_path / "wh" / "db" / name / "data").rglob("*.parquet"))
        assert len(data) == commits
        metadata = list((tmp_path / "wh" / "db" / name / "metadata").glob("*.metadata.json"))
        assert len(metadata) == 1 + commits  # the create's and one per landed commit
