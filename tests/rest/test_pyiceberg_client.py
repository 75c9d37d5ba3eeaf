"""PyIceberg's RestCatalog (an independent client) against icepark's REST server, over uvicorn
on loopback: what one side writes, the other reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog.base import Catalog
from icepark.rest import Principals, create_app, hash_secret
from tests.rest.conftest import serving

pyiceberg_catalog = pytest.importorskip("pyiceberg.catalog")
pyiceberg_exceptions = pytest.importorskip("pyiceberg.exceptions")


@pytest.fixture
def url(catalog: Catalog) -> Iterator[str]:
    with serving(create_app(catalog)) as base:
        yield base


@pytest.fixture
def rc(url: str):  # type: ignore[no-untyped-def]
    return pyiceberg_catalog.load_catalog("rc", type="rest", uri=url)


def _rows(table) -> list[tuple]:  # type: ignore[no-untyped-def]
    data = table.to_pylist()
    return sorted(tuple(r.values()) for r in data)


def test_pyiceberg_writes_icepark_reads(rc, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    rc.create_namespace("db", {"owner": "etl"})
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = rc.create_table("db.people", schema, properties={"write.format.default": "parquet"})
    table.append(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=schema))
    table.append(pa.table({"id": [3], "name": ["c"]}, schema=schema))

    mine = catalog.load_table("db.people")
    assert _rows(mine.scan().to_arrow()) == [(1, "a"), (2, "b"), (3, "c")]
    assert len(mine.snapshots()) == 2
    assert catalog.load_namespace_properties("db")["owner"] == "etl"


def test_icepark_writes_pyiceberg_reads(rc, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    catalog.create_namespace("sales")
    schema = pa.schema([("id", pa.int64()), ("region", pa.string())])
    table = catalog.create_table("sales.orders", schema, partition_by=["region"])
    table.append(pa.table({"id": [1, 2, 3], "region": ["eu", "us", "eu"]}))

    theirs = rc.load_table("sales.orders")
    assert _rows(theirs.scan().to_arrow()) == [(1, "eu"), (2, "us"), (3, "eu")]
    assert [f.name for f in theirs.spec().fields] == ["region"]
    filtered = theirs.scan(row_filter="region = 'us'").to_arrow()
    assert filtered.column("id").to_pylist() == [2]


def test_schema_evolution_through_rest(rc, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    rc.create_namespace("db")
    table = rc.create_table("db.t", pa.schema([("id", pa.int64())]))
    with table.update_schema() as update:
        update.add_column("note", pyiceberg_types().StringType())
    mine = catalog.load_table("db.t")
    assert [f.name for f in mine.schema().fields] == ["id", "note"]


def pyiceberg_types():  # type: ignore[no-untyped-def]
    import pyiceberg.types as t

    return t


def test_stage_create_transaction(rc, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    rc.create_namespace("db")
    schema = pa.schema([("id", pa.int64())])
    tx = rc.create_table_transaction("db.staged", schema)
    assert not catalog.table_exists("db.staged")  # staged, nothing committed yet
    tx.append(pa.table({"id": [7, 8]}))
    tx.commit_transaction()
    mine = catalog.load_table("db.staged")
    assert sorted(mine.scan().to_arrow().column("id").to_pylist()) == [7, 8]
    # a second create transaction of the same name loses: the table exists now
    tx2 = rc.create_table_transaction("db.other", schema)
    catalog.create_table("db.other", schema)
    with pytest.raises(pyiceberg_exceptions.CommitFailedException):
        tx2.commit_transaction()


def test_rename_drop_purge(rc, catalog: Catalog, warehouse: Path) -> None:  # type: ignore[no-untyped-def]
    rc.create_namespace("db")
    rc.create_namespace("archive")
    schema = pa.schema([("id", pa.int64())])
    rc.create_table("db.a", schema).append(pa.table({"id": [1]}))
    rc.rename_table("db.a", "archive.a")
    assert catalog.table_exists("archive.a") and not catalog.table_exists("db.a")
    assert rc.table_exists("archive.a") and not rc.table_exists("db.a")

    location = catalog.load_table("archive.a").location
    rc.drop_table("archive.a")  # no purge: files stay
    assert not catalog.table_exists("archive.a")
    assert any(Path(location.removeprefix("file:")).rglob("*.parquet"))

    rc.create_table("db.b", schema).append(pa.table({"id": [2]}))
    b_location = catalog.load_table("db.b").location
    rc.purge_table("db.b")
    assert not catalog.table_exists("db.b")
    assert not any(Path(b_location.removeprefix("file:")).rglob("*.parquet"))
    with pytest.raises(pyiceberg_exceptions.NoSuchTableError):
        rc.load_table("db.b")


def test_namespace_properties_and_drop(rc, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    rc.create_namespace("db", {"a": "1", "b": "2"})
    summary = rc.update_namespace_properties("db", removals={"a", "zz"}, updates={"c": "3"})
    assert summary.removed == ["a"] and summary.updated == ["c"] and summary.missing == ["zz"]
    assert catalog.load_namespace_properties("db") == {"b": "2", "c": "3"}
    rc.create_table("db.t", pa.schema([("id", pa.int64())]))
    with pytest.raises(pyiceberg_exceptions.NamespaceNotEmptyError):
        rc.drop_namespace("db")
    rc.drop_table("db.t")
    rc.drop_namespace("db")
    assert not catalog.namespace_exists("db")
    with pytest.raises(pyiceberg_exceptions.NamespaceAlreadyExistsError):
        rc.create_namespace("x")
        rc.create_namespace("x")


def test_nested_namespaces(rc, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    rc.create_namespace(("acct", "tax"))
    rc.create_namespace(("acct", "tax", "paid"))
    assert rc.list_namespaces("acct") == [("acct", "tax")]
    assert rc.list_namespaces(("acct", "tax")) == [("acct", "tax", "paid")]
    rc.create_table(("acct", "tax", "t"), pa.schema([("id", pa.int64())]))
    assert catalog.table_exists(("acct", "tax", "t"))
    assert rc.list_tables(("acct", "tax")) == [("acct", "tax", "t")]


def test_oauth2_client_credentials(catalog: Catalog) -> None:
    principals = Principals.from_dict(
        {
            "principals": [
                {
                    "client-id": "etl",
                    "client-secret": hash_secret("s3cret"),
                    "grants": {"*": "admin"},
                },
                {"client-id": "analyst", "client-secret": "plain", "grants": {"sales": "read"}},
            ]
        }
    )
    catalog.create_namespace("sales")
    with serving(create_app(catalog, auth=principals)) as base:
        etl = pyiceberg_catalog.load_catalog("etl", type="rest", uri=base, credential="etl:s3cret")
        etl.create_table("sales.t", pa.schema([("id", pa.int64())])).append(
            pa.table({"id": [1, 2]})
        )
        analyst = pyiceberg_catalog.load_catalog(
            "an", type="rest", uri=base, credential="analyst:plain"
        )
        assert len(analyst.load_table("sales.t").scan().to_arrow()) == 2
        with pytest.raises(pyiceberg_exceptions.ForbiddenError):
            analyst.create_table("sales.u", pa.schema([("id", pa.int64())]))
        with pytest.raises(pyiceberg_exceptions.ForbiddenError):
            analyst.drop_table("sales.t")
        assert catalog.table_exists("sales.t") and not catalog.table_exists("sales.u")
        with pytest.raises(pyiceberg_exceptions.OAuthError):
            pyiceberg_catalog.load_catalog("bad", type="rest", uri=base, credential="etl:wrong")


def test_prefix_from_config(catalog: Catalog) -> None:
    with serving(create_app(catalog, prefix="wh1")) as base:
        rc = pyiceberg_catalog.load_catalog("p", type="rest", uri=base)
        rc.create_namespace("db")
        rc.create_table("db.t", pa.schema([("id", pa.int64())])).append(pa.table({"id": [5]}))
    assert catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist() == [5]


def test_pyiceberg_deletes_updates_and_travels_through_the_server(rc, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    """PyIceberg's own row-level writes (its copy-on-write delete and its upsert, which
    updates matched rows and inserts the others) committed through the server, read back by
    icepark; then PyIceberg reads an older snapshot by id through the server."""
    rc.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = rc.create_table("db.t", schema)
    table.append(pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"]}, schema=schema))
    first = table.current_snapshot().snapshot_id
    table.delete("id = 2")
    table.upsert(pa.table({"id": [3, 5], "v": ["C", "e"]}, schema=schema), join_cols=["id"])
    mine = catalog.load_table("db.t")
    assert _rows(mine.scan().to_arrow()) == [(1, "a"), (3, "C"), (4, "d"), (5, "e")]
    assert len(mine.snapshots()) >= 3  # the append, the delete, the upsert's commit(s)
    theirs = rc.load_table("db.t").scan(snapshot_id=first).to_arrow()
    assert _rows(theirs) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_pyiceberg_reads_icepark_tables_of_each_version_through_the_server(  # type: ignore[no-untyped-def]
    rc, catalog: Catalog, version: int
) -> None:
    """icepark writes (v1: a copy-on-write delete; v2: position deletes; v3: deletion
    vectors), PyIceberg reads the same rows through the server, and refuses equality deletes
    by name (PyIceberg 0.12 reads none)."""
    catalog.create_namespace("db")
    mode = "copy-on-write" if version == 1 else "merge-on-read"
    props = {"format-version": str(version), "write.delete.mode": mode, "write.merge.mode": mode}
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]), properties=props)
    table.append(pa.table({"id": list(range(10))}))
    table.delete("id < 3")
    theirs = rc.load_table("db.t").scan().to_arrow()
    assert sorted(theirs.column("id").to_pylist()) == list(range(3, 10))
    if version > 1:
        table.upsert(pa.table({"id": [4]}), on=["id"])  # equality deletes (merge-on-read)
        assert table.refresh().current_snapshot().summary["added-equality-delete-files"] == "1"
        with pytest.raises(ValueError, match="equality deletes"):
            rc.load_table("db.t").scan().to_arrow()
