"""The REST server's view routes and multi-table transactions over HTTP (FastAPI's
TestClient): answers, errors (status and Java's exception type), grants, all-or-nothing
transactions, and what a file-system backing advertises and answers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import icepark
from icepark.catalog.base import Catalog
from icepark.rest import Principals, create_app

SCHEMA = {
    "type": "struct",
    "schema-id": 7,
    "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False},
        {"id": 2, "name": "name", "type": "string", "required": False},
    ],
}
TABLE_SCHEMA = {
    "type": "struct",
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}
ONE = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "one", "type": "int", "required": True}],
}
VIEW_ENDPOINTS = {
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
}
TRANSACTIONS = "POST /v1/{prefix}/transactions/commit"


def _version(sql: str, version_id: int = 1, schema_id: int = 7) -> dict[str, Any]:
    return {
        "version-id": version_id,
        "timestamp-ms": 1_700_000_000_000,
        "schema-id": schema_id,
        "summary": {"engine-name": "test"},
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
        "default-namespace": ["db"],
    }


def _create_body(name: str = "v", sql: str = "SELECT id, name FROM db.t") -> dict[str, Any]:
    return {
        "name": name,
        "schema": SCHEMA,
        "view-version": _version(sql),
        "properties": {"comment": "c"},
    }


@pytest.fixture
def client(catalog: Catalog) -> TestClient:
    catalog.create_namespace("db")
    return TestClient(create_app(catalog), raise_server_exceptions=False)


def _error(r: Any, status: int, kind: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()["error"]
    assert body["type"] == kind and body["code"] == status
    return str(body["message"])


def _files(root: Path) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def test_view_life_cycle(client: TestClient, catalog: Catalog) -> None:
    endpoints = set(client.get("/v1/config").json()["endpoints"])
    assert VIEW_ENDPOINTS <= endpoints and TRANSACTIONS in endpoints
    create = _create_body()
    create["view-version"]["version-id"] = 3
    r = client.post("/v1/namespaces/db/views", json=create)
    assert r.status_code == 200, r.text
    body = r.json()
    md = body["metadata"]
    assert md["current-version-id"] == 1  # a new view's first version, as Java numbers it
    # the version's schema-id (7 in the request) maps to the schema the view stored
    (version,) = md["versions"]
    assert [s["schema-id"] for s in md["schemas"]] == [version["schema-id"]]
    assert md["properties"] == {"comment": "c"}
    assert body["metadata-location"] == catalog.load_view("db.v").metadata_location
    mine = catalog.load_view("db.v")
    assert mine.sql() == "SELECT id, name FROM db.t"
    assert [f.name for f in mine.schema.fields] == ["id", "name"]

    loaded = client.get("/v1/namespaces/db/views/v").json()
    assert loaded["metadata"]["view-uuid"] == md["view-uuid"]
    assert client.head("/v1/namespaces/db/views/v").status_code == 204
    assert client.head("/v1/namespaces/db/views/nope").status_code == 404
    names = client.get("/v1/namespaces/db/views").json()["identifiers"]
    assert names == [{"namespace": ["db"], "name": "v"}]

    # replace: a new version made current, with assert-view-uuid
    commit = {
        "requirements": [{"type": "assert-view-uuid", "uuid": md["view-uuid"]}],
        "updates": [
            {"action": "add-schema", "schema": ONE},
            {"action": "add-view-version", "view-version": _version("SELECT 1", 2, -1)},
            {"action": "set-current-view-version", "view-version-id": -1},
            {"action": "set-properties", "updates": {"k": "v"}},
        ],
    }
    r = client.post("/v1/namespaces/db/views/v", json=commit)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["current-version-id"] == 2
    assert catalog.load_view("db.v").sql() == "SELECT 1"
    assert [f.name for f in catalog.load_view("db.v").schema.fields] == ["one"]
    assert catalog.load_view("db.v").properties["k"] == "v"

    rename = {
        "source": {"namespace": ["db"], "name": "v"},
        "destination": {"namespace": ["db"], "name": "w"},
    }
    assert client.post("/v1/views/rename", json=rename).status_code == 204
    assert not catalog.view_exists("db.v") and catalog.view_exists("db.w")
    assert client.delete("/v1/namespaces/db/views/w").status_code == 204
    assert not catalog.view_exists("db.w")
    assert client.get("/v1/namespaces/db/views").json()["identifiers"] == []


def test_view_paging(client: TestClient) -> None:
    for name in ("c", "a", "b"):
        assert client.post("/v1/namespaces/db/views", json=_create_body(name)).status_code == 200
    first = client.get("/v1/namespaces/db/views?pageSize=2").json()
    assert [i["name"] for i in first["identifiers"]] == ["a", "b"]
    token = first["next-page-token"]
    rest = client.get(f"/v1/namespaces/db/views?pageSize=2&pageToken={token}").json()
    assert [i["name"] for i in rest["identifiers"]] == ["c"]
    assert rest.get("next-page-token") is None


def test_view_errors(client: TestClient, catalog: Catalog) -> None:
    _error(client.get("/v1/namespaces/db/views/nope"), 404, "NoSuchViewException")
    _error(client.delete("/v1/namespaces/db/views/nope"), 404, "NoSuchViewException")
    commit = {"requirements": [], "updates": []}
    _error(client.post("/v1/namespaces/db/views/nope", json=commit), 404, "NoSuchViewException")
    _error(client.get("/v1/namespaces/zz/views"), 404, "NoSuchNamespaceException")
    _error(
        client.post("/v1/namespaces/zz/views", json=_create_body()),
        404,
        "NoSuchNamespaceException",
    )
    rename = {
        "source": {"namespace": ["db"], "name": "nope"},
        "destination": {"namespace": ["db"], "name": "x"},
    }
    _error(client.post("/v1/views/rename", json=rename), 404, "NoSuchViewException")

    assert client.post("/v1/namespaces/db/views", json=_create_body()).status_code == 200
    _error(
        client.post("/v1/namespaces/db/views", json=_create_body()), 409, "AlreadyExistsException"
    )
    # a table holds the name: 409 both ways
    table = {"name": "t", "schema": TABLE_SCHEMA}
    assert client.post("/v1/namespaces/db/tables", json=table).status_code == 200
    _error(
        client.post("/v1/namespaces/db/views", json=_create_body("t")),
        409,
        "AlreadyExistsException",
    )
    assert not catalog.view_exists("db.t")
    _error(client.get("/v1/namespaces/db/views/t"), 404, "NoSuchViewException")
    # and the other way: the view's name is no table's
    _error(client.get("/v1/namespaces/db/tables/v"), 404, "NoSuchTableException")
    assert client.head("/v1/namespaces/db/tables/v").status_code == 404
    table_v = {"name": "v", "schema": TABLE_SCHEMA}
    _error(client.post("/v1/namespaces/db/tables", json=table_v), 409, "AlreadyExistsException")
    _error(client.delete("/v1/namespaces/db"), 409, "NamespaceNotEmptyException")
    clash = {
        "source": {"namespace": ["db"], "name": "v"},
        "destination": {"namespace": ["db"], "name": "t"},
    }
    _error(client.post("/v1/views/rename", json=clash), 409, "AlreadyExistsException")
    assert catalog.view_exists("db.v")

    # a stale view uuid: 409, the view unchanged
    before = catalog.load_view("db.v").metadata_location
    stale = {
        "requirements": [
            {"type": "assert-view-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}
        ],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
    }
    _error(client.post("/v1/namespaces/db/views/v", json=stale), 409, "CommitFailedException")
    assert catalog.load_view("db.v").metadata_location == before

    # malformed updates name their index; table-only actions are refused for views
    bad = {"updates": [{"action": "set-properties", "updates": {}}, {"action": "nope"}]}
    assert "updates[1]" in _error(
        client.post("/v1/namespaces/db/views/v", json=bad), 400, "BadRequestException"
    )
    table_only = {"updates": [{"action": "set-current-schema", "schema-id": 0}]}
    assert "updates[0]" in _error(
        client.post("/v1/namespaces/db/views/v", json=table_only), 400, "BadRequestException"
    )
    # a version naming a dialect twice, a view-version that is not one
    broken = _create_body("x")
    broken["view-version"] = {"version-id": 1}
    _error(client.post("/v1/namespaces/db/views", json=broken), 400, "BadRequestException")
    assert not catalog.view_exists("db.x")
    _error(
        client.post("/v1/namespaces/db/views", json=_create_body("a/b")),
        400,
        "BadRequestException",
    )
    assert catalog.load_view("db.v").metadata_location == before


def test_view_grants(catalog: Catalog) -> None:
    catalog.create_namespace("sales")
    principals = Principals.from_dict(
        {
            "principals": [
                {"client-id": "analyst", "client-secret": "a", "grants": {"sales": "read"}},
                {"client-id": "etl", "client-secret": "e", "grants": {"sales": "write"}},
            ]
        }
    )
    client = TestClient(create_app(catalog, auth=principals), raise_server_exceptions=False)

    def token(cid: str, secret: str) -> dict[str, str]:
        form = {"grant_type": "client_credentials", "client_id": cid, "client_secret": secret}
        r = client.post("/v1/oauth/tokens", data=form)
        return {"Authorization": f"Bearer {r.json()['access_token']}"}

    analyst, etl = token("analyst", "a"), token("etl", "e")
    url = "/v1/namespaces/sales/views"
    _error(client.post(url, json=_create_body(), headers=analyst), 403, "ForbiddenException")
    assert not catalog.view_exists("sales.v")
    assert client.get(url).status_code == 401
    assert client.post(url, json=_create_body(), headers=etl).status_code == 200
    assert client.get(f"{url}/v", headers=analyst).status_code == 200
    assert client.get(url, headers=analyst).json()["identifiers"][0]["name"] == "v"
    before = catalog.load_view("sales.v").metadata_location
    commit = {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    _error(client.post(f"{url}/v", json=commit, headers=analyst), 403, "ForbiddenException")
    _error(client.delete(f"{url}/v", headers=analyst), 403, "ForbiddenException")
    rename = {
        "source": {"namespace": ["sales"], "name": "v"},
        "destination": {"namespace": ["sales"], "name": "w"},
    }
    _error(client.post("/v1/views/rename", json=rename, headers=analyst), 403, "ForbiddenException")
    assert catalog.load_view("sales.v").metadata_location == before
    assert client.post(f"{url}/v", json=commit, headers=etl).status_code == 200
    assert client.delete(f"{url}/v", headers=etl).status_code == 204


def _tx_change(name: str, uuid: str, schema_id: int, key: str) -> dict[str, Any]:
    return {
        "identifier": {"namespace": ["db"], "name": name},
        "requirements": [
            {"type": "assert-table-uuid", "uuid": uuid},
            {"type": "assert-current-schema-id", "current-schema-id": schema_id},
        ],
        "updates": [{"action": "set-properties", "updates": {key: name}}],
    }


def test_transaction_all_or_nothing(client: TestClient, catalog: Catalog, warehouse: Path) -> None:
    a = catalog.create_table("db.a", _pa_schema())
    b = catalog.create_table("db.b", _pa_schema())
    before = {n: catalog.metadata_location(f"db.{n}") for n in "ab"}
    files = _files(warehouse)
    stale = {
        "table-changes": [
            _tx_change("a", a.metadata.table_uuid, a.metadata.current_schema_id, "tx"),
            _tx_change("b", b.metadata.table_uuid, 99, "tx"),  # no longer holds
        ]
    }
    message = _error(
        client.post("/v1/transactions/commit", json=stale), 409, "CommitFailedException"
    )
    assert "db.b" in message
    assert {n: catalog.metadata_location(f"db.{n}") for n in "ab"} == before
    assert _files(warehouse) == files  # nothing left behind
    assert "tx" not in catalog.load_table("db.a").properties

    good = {
        "table-changes": [
            _tx_change("a", a.metadata.table_uuid, a.metadata.current_schema_id, "tx"),
            _tx_change("b", b.metadata.table_uuid, b.metadata.current_schema_id, "tx"),
        ]
    }
    r = client.post("/v1/transactions/commit", json=good)
    assert r.status_code == 204, r.text
    assert catalog.load_table("db.a").properties["tx"] == "a"
    assert catalog.load_table("db.b").properties["tx"] == "b"
    assert all(catalog.metadata_location(f"db.{n}") != before[n] for n in "ab")


def test_transaction_errors_and_grants(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    catalog.create_namespace("hr")
    a = catalog.create_table("db.a", _pa_schema())
    h = catalog.create_table("hr.h", _pa_schema())
    principals = Principals.from_dict(
        {
            "principals": [
                {"client-id": "etl", "client-secret": "e", "grants": {"db": "write", "hr": "read"}}
            ]
        }
    )
    client = TestClient(create_app(catalog, auth=principals), raise_server_exceptions=False)
    form = {"grant_type": "client_credentials", "client_id": "etl", "client_secret": "e"}
    headers = {
        "Authorization": f"Bearer {client.post('/v1/oauth/tokens', data=form).json()['access_token']}"
    }
    change_h = _tx_change("h", h.metadata.table_uuid, h.metadata.current_schema_id, "tx")
    change_h["identifier"]["namespace"] = ["hr"]
    both = {
        "table-changes": [
            _tx_change("a", a.metadata.table_uuid, a.metadata.current_schema_id, "tx"),
            change_h,
        ]
    }
    before = catalog.metadata_location("db.a")
    _error(
        client.post("/v1/transactions/commit", json=both, headers=headers),
        403,
        "ForbiddenException",
    )
    assert catalog.metadata_location("db.a") == before
    bad = {"table-changes": [{**both["table-changes"][0], "updates": [{"action": "x"}]}]}
    assert "table-changes[0].updates[0]" in _error(
        client.post("/v1/transactions/commit", json=bad, headers=headers),
        400,
        "BadRequestException",
    )
    missing = {"table-changes": [{"requirements": [], "updates": []}]}
    _error(
        client.post("/v1/transactions/commit", json=missing, headers=headers),
        400,
        "BadRequestException",
    )
    gone = {
        "table-changes": [
            {**both["table-changes"][0], "identifier": {"namespace": ["db"], "name": "zz"}}
        ]
    }
    _error(
        client.post("/v1/transactions/commit", json=gone, headers=headers),
        404,
        "NoSuchTableException",
    )
    assert catalog.metadata_location("db.a") == before


def test_file_system_backing(tmp_path: Path) -> None:
    fs = icepark.load_catalog(type="filesystem", warehouse=str(tmp_path / "wh"))
    fs.create_namespace("db")
    fs.create_table("db.a", _pa_schema())
    client = TestClient(create_app(fs), raise_server_exceptions=False)
    endpoints = set(client.get("/v1/config").json()["endpoints"])
    assert "GET /v1/{prefix}/namespaces/{namespace}/tables" in endpoints
    assert not (VIEW_ENDPOINTS & endpoints) and TRANSACTIONS not in endpoints
    _error(
        client.post("/v1/namespaces/db/views", json=_create_body()),
        406,
        "UnsupportedOperationException",
    )
    _error(client.get("/v1/namespaces/db/views"), 406, "UnsupportedOperationException")
    a = fs.load_table("db.a")
    tx = {"table-changes": [_tx_change("a", a.metadata.table_uuid, 0, "tx")]}
    _error(client.post("/v1/transactions/commit", json=tx), 406, "UnsupportedOperationException")
    assert "tx" not in fs.load_table("db.a").properties


def _pa_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("id", pa.int64())])
