"""PyIceberg 0.12's RestCatalog (an independent client) on icepark's REST server: views both
ways, and a multi-table transaction (PyIceberg has no client call for one: the request is
sent as raw HTTP built from the shared models, and PyIceberg reads the outcome)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from icepark.catalog.base import Catalog
from icepark.rest import create_app
from icepark.rest.models import CommitTableRequest, CommitTransactionRequest, TableIdentifier
from tests.rest.conftest import serving

pyiceberg_catalog = pytest.importorskip("pyiceberg.catalog")
pyiceberg_exceptions = pytest.importorskip("pyiceberg.exceptions")
view_metadata = pytest.importorskip("pyiceberg.view.metadata")
requests = pytest.importorskip("requests")


@pytest.fixture
def url(catalog: Catalog) -> Iterator[str]:
    with serving(create_app(catalog)) as base:
        yield base


@pytest.fixture
def rc(url: str) -> Any:
    return pyiceberg_catalog.load_catalog("rc", type="rest", uri=url)


def _version(sql: str, schema_id: int = 0) -> Any:
    return view_metadata.ViewVersion(
        version_id=1,
        schema_id=schema_id,
        summary={"engine-name": "pyiceberg"},
        representations=[
            view_metadata.SQLViewRepresentation(type="sql", sql=sql, dialect="spark"),
            view_metadata.SQLViewRepresentation(type="sql", sql=sql, dialect="trino"),
        ],
        default_namespace=["db"],
    )


def test_pyiceberg_views(rc: Any, catalog: Catalog) -> None:
    rc.create_namespace("db")
    rc.create_table("db.events", pa.schema([("id", pa.int64()), ("kind", pa.string())]))
    schema = pa.schema([("id", pa.int64()), ("kind", pa.string())])
    sql = "SELECT id, kind FROM db.events WHERE id > 1"
    # PyIceberg gives its schema fresh ids and sends the version's schema-id as it is
    created = rc.create_view("db.recent", schema, _version(sql, schema_id=5), properties={"a": "1"})
    assert created.metadata.properties == {"a": "1"}
    assert rc.view_exists("db.recent")
    assert not rc.view_exists("db.nope")
    assert rc.list_views("db") == [("db", "recent")]

    # icepark reads what PyIceberg created through the server
    mine = catalog.load_view("db.recent")
    assert mine.sql() == sql and mine.sql("trino") == sql
    assert [f.name for f in mine.schema.fields] == ["id", "kind"]
    assert mine.current_version.default_namespace == ("db",)
    assert mine.properties["a"] == "1"

    theirs = rc.load_view("db.recent")
    assert theirs.metadata.view_uuid == mine.metadata.view_uuid
    assert [f.name for f in theirs.schema().fields] == ["id", "kind"]
    assert {r.root.dialect for r in theirs.current_version().representations} == {"spark", "trino"}

    with pytest.raises(pyiceberg_exceptions.ViewAlreadyExistsError):
        rc.create_view("db.recent", schema, _version(sql))
    with pytest.raises(pyiceberg_exceptions.ViewAlreadyExistsError):
        rc.create_view("db.events", schema, _version(sql))  # a table holds the name
    with pytest.raises(pyiceberg_exceptions.NoSuchViewError):
        rc.load_view("db.nope")

    rc.drop_view("db.recent")
    assert not catalog.view_exists("db.recent")
    assert rc.list_views("db") == []
    with pytest.raises(pyiceberg_exceptions.NoSuchViewError):
        rc.drop_view("db.recent")


def test_icepark_view_read_by_pyiceberg(rc: Any, catalog: Catalog) -> None:
    catalog.create_namespace("sales")
    catalog.create_table("sales.orders", pa.schema([("id", pa.int64()), ("region", pa.string())]))
    view = catalog.create_view(
        "sales.eu",
        pa.schema([("id", pa.int64())]),
        "SELECT id FROM orders WHERE region = 'eu'",
        properties={"comment": "eu orders"},
    )
    view.replace(
        "SELECT id, region FROM orders", pa.schema([("id", pa.int64()), ("region", pa.string())])
    )
    theirs = rc.load_view("sales.eu")
    (rep,) = theirs.current_version().representations
    assert rep.root.sql == "SELECT id, region FROM orders" and rep.root.dialect == "spark"
    assert [f.name for f in theirs.schema().fields] == ["id", "region"]
    assert len(theirs.metadata.versions) == 2
    assert theirs.metadata.properties["comment"] == "eu orders"
    assert tuple(theirs.current_version().default_namespace) == ("sales",)
    assert rc.list_views("sales") == [("sales", "eu")]
    assert rc.view_exists("sales.eu")
    assert rc.list_tables("sales") == [("sales", "orders")]


def test_multi_table_transaction_read_by_pyiceberg(rc: Any, url: str, catalog: Catalog) -> None:
    catalog.create_namespace("db")
    schema = pa.schema([("id", pa.int64())])
    a = catalog.create_table("db.a", schema)
    b = catalog.create_table("db.b", schema)

    def change(table: Any, name: str, schema_id: int) -> CommitTableRequest:
        new_schema = {
            "type": "struct",
            "schema-id": 1,
            "fields": [
                {"id": 1, "name": "id", "type": "long", "required": False},
                {"id": 2, "name": f"{name}_note", "type": "string", "required": False},
            ],
        }
        return CommitTableRequest(
            identifier=TableIdentifier.of(("db", name)),
            requirements=[
                {"type": "assert-table-uuid", "uuid": table.metadata.table_uuid},
                {"type": "assert-current-schema-id", "current-schema-id": schema_id},
            ],
            updates=[
                {"action": "add-schema", "schema": new_schema, "last-column-id": 2},
                {"action": "set-current-schema", "schema-id": -1},
                {"action": "set-properties", "updates": {"tx": name}},
            ],
        )

    def send(*changes: CommitTableRequest) -> Any:
        body = CommitTransactionRequest(table_changes=list(changes)).dump()
        return requests.post(f"{url}/v1/transactions/commit", json=body, timeout=30)

    stale = send(change(a, "a", 0), change(b, "b", 3))
    assert stale.status_code == 409 and "db.b" in stale.json()["error"]["message"]
    for name in ("a", "b"):
        assert [f.name for f in rc.load_table(f"db.{name}").schema().fields] == ["id"]

    ok = send(change(a, "a", 0), change(b, "b", 0))
    assert ok.status_code == 204, ok.text
    for name in ("a", "b"):
        table = rc.load_table(f"db.{name}")
        assert [f.name for f in table.schema().fields] == ["id", f"{name}_note"]
        assert table.properties["tx"] == name
    # PyIceberg writes on top of the transaction's result
    rc.load_table("db.a").append(pa.table({"id": pa.array([1], pa.int64()), "a_note": ["x"]}))
    assert catalog.load_table("db.a").scan().to_arrow().column("a_note").to_pylist() == ["x"]
