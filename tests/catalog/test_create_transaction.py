"""Create transactions: a table created and first written in one catalog commit.

Real files on SQLite, PostgreSQL and the file-system catalog; the created table is read back
by icepark, by PyIceberg (from its metadata file) and, once, by the Java reference engine.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from refengine import RefEngine

from icepark.catalog import Catalog, FileSystemCatalog, SqlCatalog
from icepark.errors import (
    NoSuchNamespaceError,
    RequirementFailedError,
    TableAlreadyExistsError,
    ValidationError,
)
from icepark.spec.new_table import creation_updates
from icepark.spec.updates import AssertCreate, SetPropertiesUpdate
from icepark.table import StagedTable, Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("day", pa.date32()),
    ]
)


def _rows(start: int, n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "name": [f"n{i}" for i in range(start, start + n)],
            "day": pa.array([19000 + i % 3 for i in range(start, start + n)], pa.int32()).cast(
                pa.date32()
            ),
        },
        schema=SCHEMA,
    )


@pytest.fixture(params=["sqlite", "filesystem", "postgres"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Catalog:
    warehouse = str(tmp_path / "wh")
    if request.param == "sqlite":
        cat: Catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/c.db", warehouse=warehouse)
    elif request.param == "filesystem":
        cat = FileSystemCatalog("test", warehouse=warehouse)
    else:
        url = request.getfixturevalue("postgres_url")
        cat = SqlCatalog(f"t_{uuid.uuid4().hex}", uri=url, warehouse=warehouse)
    cat.create_namespace("db")
    return cat


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _metadata_files(table_dir: Path) -> list[str]:
    return sorted(p.name for p in (table_dir / "metadata").glob("*.metadata.json"))


def test_table_appears_only_at_commit_with_its_first_snapshot(
    catalog: Catalog, tmp_path: Path
) -> None:
    staged = catalog.create_table_transaction(
        "db.t", SCHEMA, partition_by=["day"], properties={"format-version": "2"}
    )
    assert isinstance(staged, StagedTable)
    staged.append(_rows(0, 10))
    staged.append(_rows(10, 5))
    staged.set_properties(owner="etl")
    with staged.update_schema() as u:
        u.add_column("note", "string")
    # staged writes are on disk, but the catalog knows nothing yet
    assert not catalog.table_exists("db.t")
    assert catalog.list_tables("db") == []
    assert not (tmp_path / "wh" / "db" / "t" / "metadata").exists() or not _metadata_files(
        tmp_path / "wh" / "db" / "t"
    )

    table = staged.commit_transaction()
    assert isinstance(table, Table)
    assert catalog.table_exists("db.t")
    loaded = catalog.load_table("db.t")
    assert loaded.metadata_location == table.metadata_location
    assert len(loaded.snapshots()) == 2  # two appends, one commit
    assert loaded.properties["owner"] == "etl"
    assert [f.name for f in loaded.schema().fields] == ["id", "name", "day", "note"]
    assert loaded.spec().fields[0].name == "day"
    assert _metadata_files(tmp_path / "wh" / "db" / "t") == [
        Path(loaded.metadata_location).name
    ]  # one metadata file: the create is one commit
    got = loaded.scan().to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == list(range(15))
    assert got.column("note").null_count == 15

    # an independent reader: PyIceberg from the metadata file
    from pyiceberg.table import StaticTable

    theirs = StaticTable.from_metadata(loaded.metadata_location).scan().to_arrow()
    assert sorted(theirs.column("id").to_pylist()) == list(range(15))
    assert theirs.schema.names == ["id", "name", "day", "note"]


def test_with_block_commits_on_clean_exit(catalog: Catalog) -> None:
    with catalog.create_table_transaction("db.t", SCHEMA, sort_by=["id"]) as staged:
        staged.append(_rows(0, 3))
    assert catalog.load_table("db.t").scan().count() == 3
    assert catalog.load_table("db.t").sort_order().fields[0].source_id == 1


def test_empty_create_transaction_creates_the_table(catalog: Catalog) -> None:
    table = catalog.create_table_transaction("db.t", SCHEMA).commit_transaction()
    assert catalog.load_table("db.t").current_snapshot() is None
    assert table.metadata_location == catalog.metadata_location("db.t")


def test_exception_in_block_creates_nothing_and_deletes_files(
    catalog: Catalog, tmp_path: Path
) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with catalog.create_table_transaction("db.t", SCHEMA) as staged:
            staged.append(_rows(0, 3))
            assert _files(tmp_path / "wh" / "db" / "t")  # the data file was written
            raise RuntimeError("boom")
    assert not catalog.table_exists("db.t")
    assert _files(tmp_path / "wh" / "db" / "t") == set()


def test_table_created_meanwhile_fails_the_commit_and_leaves_no_files(
    catalog: Catalog, tmp_path: Path
) -> None:
    staged = catalog.create_table_transaction("db.t", SCHEMA)
    staged.append(_rows(0, 4))
    other = catalog.create_table("db.t", SCHEMA)  # another writer wins the race
    before = _files(tmp_path / "wh" / "db" / "t")
    with pytest.raises(TableAlreadyExistsError, match=r"db\.t"):
        staged.commit_transaction()
    after = _files(tmp_path / "wh" / "db" / "t")
    assert after == {f for f in before if "/data/" not in f and not f.startswith("data/")}
    assert catalog.metadata_location("db.t") == other.metadata_location
    assert catalog.load_table("db.t").current_snapshot() is None


def test_bad_input_is_refused_before_anything_is_written(catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_table("db.exists", SCHEMA)
    with pytest.raises(TableAlreadyExistsError, match=r"db\.exists"):
        catalog.create_table_transaction("db.exists", SCHEMA)
    with pytest.raises(NoSuchNamespaceError, match="nope"):
        catalog.create_table_transaction("nope.t", SCHEMA)
    # the low-level form a REST server calls: AssertCreate on an existing table
    md = catalog.load_table("db.exists").metadata
    before = _files(tmp_path / "wh")
    with pytest.raises(RequirementFailedError, match=r"db\.exists.*already exists"):
        catalog.commit_table(("db", "exists"), None, None, [AssertCreate()], creation_updates(md))
    assert _files(tmp_path / "wh") == before


def test_commit_table_creates_from_updates(catalog: Catalog, tmp_path: Path) -> None:
    """What a REST server receives for a stage-create: AssertCreate and every update."""
    staged = catalog.create_table_transaction("db.src", SCHEMA)
    updates = [*creation_updates(staged.metadata), SetPropertiesUpdate({"k": "v"})]
    result = catalog.commit_table(("db", "src"), None, None, [AssertCreate()], updates)
    loaded = catalog.load_table("db.src")
    assert loaded.metadata_location == result.metadata_location
    assert loaded.metadata.table_uuid == staged.metadata.table_uuid
    assert loaded.properties == {**staged.metadata.properties, "k": "v"}


def test_filesystem_catalog_refuses_a_custom_location(tmp_path: Path) -> None:
    cat = FileSystemCatalog("fs", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    with pytest.raises(ValidationError, match="custom location"):
        cat.create_table_transaction("db.t", SCHEMA, location=str(tmp_path / "elsewhere"))


def test_reference_engine_reads_a_create_transaction(refspark: RefEngine, tmp_path: Path) -> None:
    cat = FileSystemCatalog("fs", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    with cat.create_table_transaction("db.t", SCHEMA, partition_by=["day"]) as staged:
        staged.append(_rows(0, 20))
        staged.set_properties(team="etl")  # "owner" is reserved in Spark
    c = refspark.catalog_for(tmp_path / "wh")
    assert refspark.rows(f"SELECT count(*), sum(id) FROM {c}.db.t")[0] == [20, sum(range(20))]
    props = dict(refspark.rows(f"SHOW TBLPROPERTIES {c}.db.t"))
    assert props["team"] == "etl"


def test_table_created_between_check_and_swap_is_already_exists(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the requirement check cannot see: the table appears after the check; the
    swap (SQL: the insert; file system: the exclusive create of v1) refuses, and the metadata
    file written for the losing create is deleted."""
    staged = catalog.create_table_transaction("db.t", SCHEMA)
    staged.append(_rows(0, 2))
    winner = catalog.create_table("db.t", SCHEMA)
    before = _files(tmp_path / "wh" / "db" / "t")
    monkeypatch.setattr(catalog, "_current_or_none", lambda ident: None)  # a stale check
    with pytest.raises(TableAlreadyExistsError, match=r"db\.t"):
        staged.commit_transaction()
    assert catalog.metadata_location("db.t") == winner.metadata_location
    after = _files(tmp_path / "wh" / "db" / "t")
    assert after == {f for f in before if not f.startswith("data/")}
