"""The REST server's answers over HTTP: error responses (status and Java's exception type),
bad requests, commit conflicts, paging, names, config and the prefix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient

from icepark.catalog.base import Catalog
from icepark.errors import ValidationError
from icepark.rest import create_app

SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


@pytest.fixture
def client(catalog: Catalog) -> TestClient:
    catalog.create_namespace("db")
    return TestClient(create_app(catalog), raise_server_exceptions=False)


def _error(r: Any, status: int, kind: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()["error"]
    assert body["type"] == kind and body["code"] == status
    return str(body["message"])


def _create(client: TestClient, name: str = "t", ns: str = "db") -> dict[str, Any]:
    r = client.post(f"/v1/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA})
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_not_found(client: TestClient) -> None:
    assert "db.nope" in _error(
        client.get("/v1/namespaces/db/tables/nope"), 404, "NoSuchTableException"
    )
    _error(client.get("/v1/namespaces/zz/tables"), 404, "NoSuchNamespaceException")
    _error(client.get("/v1/namespaces/zz"), 404, "NoSuchNamespaceException")
    _error(client.delete("/v1/namespaces/db/tables/nope"), 404, "NoSuchTableException")
    body = {"name": "t", "schema": SCHEMA}
    _error(client.post("/v1/namespaces/zz/tables", json=body), 404, "NoSuchNamespaceException")
    commit = {"requirements": [], "updates": []}
    _error(client.post("/v1/namespaces/db/tables/nope", json=commit), 404, "NoSuchTableException")
    assert client.head("/v1/namespaces/db/tables/nope").status_code == 404
    assert client.get("/v1/namespaces?parent=zz").status_code == 404


def test_already_exists(client: TestClient) -> None:
    _error(client.post("/v1/namespaces", json={"namespace": ["db"]}), 409, "AlreadyExistsException")
    _create(client)
    body = {"name": "t", "schema": SCHEMA}
    _error(client.post("/v1/namespaces/db/tables", json=body), 409, "AlreadyExistsException")
    _error(client.delete("/v1/namespaces/db"), 409, "NamespaceNotEmptyException")


def test_bad_updates_and_bodies(client: TestClient, catalog: Catalog) -> None:
    _create(client)
    before = catalog.metadata_location("db.t")
    bad_action = {"updates": [{"action": "set-properties", "updates": {}}, {"action": "explode"}]}
    msg = _error(
        client.post("/v1/namespaces/db/tables/t", json=bad_action), 400, "BadRequestException"
    )
    assert "updates[1]" in msg and "explode" in msg
    bad_field = {"updates": [{"action": "set-current-schema", "schema-id": "x"}]}
    msg = _error(
        client.post("/v1/namespaces/db/tables/t", json=bad_field), 400, "BadRequestException"
    )
    assert "updates[0]" in msg and "schema-id" in msg
    bad_req = {"requirements": [{"type": "assert-nothing"}], "updates": []}
    msg = _error(
        client.post("/v1/namespaces/db/tables/t", json=bad_req), 400, "BadRequestException"
    )
    assert "requirements[0]" in msg
    r = client.post(
        "/v1/namespaces/db/tables/t",
        content=b'{"updates": [',
        headers={"content-type": "application/json"},
    )
    _error(r, 400, "BadRequestException")
    msg = _error(client.post("/v1/namespaces", json={"properties": {}}), 400, "BadRequestException")
    assert "namespace" in msg
    bad_schema = {"name": "u", "schema": {"type": "struct", "fields": [{"id": 1}]}}
    _error(client.post("/v1/namespaces/db/tables", json=bad_schema), 400, "BadRequestException")
    assert catalog.metadata_location("db.t") == before and not catalog.table_exists("db.u")


def test_commit_conflict_409_and_success(client: TestClient, catalog: Catalog) -> None:
    created = _create(client)
    uuid = created["metadata"]["table-uuid"]
    ok = {
        "requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
        "updates": [{"action": "set-properties", "updates": {"k": "1"}}],
    }
    r = client.post("/v1/namespaces/db/tables/t", json=ok)
    assert r.status_code == 200 and r.json()["metadata"]["properties"]["k"] == "1"
    assert r.json()["metadata-location"] == catalog.metadata_location("db.t")
    stale = {
        "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 5}],
        "updates": [{"action": "set-properties", "updates": {"k": "2"}}],
    }
    before = catalog.metadata_location("db.t")
    _error(client.post("/v1/namespaces/db/tables/t", json=stale), 409, "CommitFailedException")
    wrong_uuid = {"requirements": [{"type": "assert-table-uuid", "uuid": "0" * 32}], "updates": []}
    _error(client.post("/v1/namespaces/db/tables/t", json=wrong_uuid), 409, "CommitFailedException")
    assert catalog.metadata_location("db.t") == before
    assert catalog.load_table("db.t").properties["k"] == "1"
    create_again = {"requirements": [{"type": "assert-create"}], "updates": []}
    _error(
        client.post("/v1/namespaces/db/tables/t", json=create_again), 409, "CommitFailedException"
    )


def test_load_snapshots_refs(client: TestClient, catalog: Catalog) -> None:
    import pyarrow as pa

    _create(client)
    table = catalog.load_table("db.t")
    table.append(pa.table({"id": [1]}))
    table.append(pa.table({"id": [2]}))
    every = client.get("/v1/namespaces/db/tables/t").json()["metadata"]["snapshots"]
    refs = client.get("/v1/namespaces/db/tables/t?snapshots=refs").json()["metadata"]["snapshots"]
    assert len(every) == 2 and len(refs) == 1
    assert refs[0]["snapshot-id"] == table.current_snapshot().snapshot_id
    _error(client.get("/v1/namespaces/db/tables/t?snapshots=some"), 400, "BadRequestException")


def test_paging(client: TestClient) -> None:
    for name in ["e", "b", "d", "a", "c"]:
        _create(client, name)
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        url = "/v1/namespaces/db/tables?pageSize=2" + (f"&pageToken={token}" if token else "")
        body = client.get(url).json()
        assert len(body["identifiers"]) <= 2
        seen += [i["name"] for i in body["identifiers"]]
        pages += 1
        token = body.get("next-page-token")
        if not token:
            break
    assert seen == ["a", "b", "c", "d", "e"] and pages == 3
    assert len(client.get("/v1/namespaces/db/tables").json()["identifiers"]) == 5
    _error(client.get("/v1/namespaces/db/tables?pageToken=%%%"), 400, "BadRequestException")
    _error(client.get("/v1/namespaces/db/tables?pageSize=0"), 400, "BadRequestException")
    for ns in ["n3", "n1", "n2"]:
        client.post("/v1/namespaces", json={"namespace": [ns]})
    first = client.get("/v1/namespaces?pageSize=3").json()
    assert first["namespaces"] == [["db"], ["n1"], ["n2"]]
    rest = client.get(f"/v1/namespaces?pageSize=3&pageToken={first['next-page-token']}").json()
    assert rest["namespaces"] == [["n3"]] and "next-page-token" not in rest


def test_unit_separator_namespaces(client: TestClient, catalog: Catalog) -> None:
    assert client.post("/v1/namespaces", json={"namespace": ["a", "b"]}).status_code == 200
    assert client.get("/v1/namespaces/a%1Fb").json()["namespace"] == ["a", "b"]
    _create(client, "t", ns="a%1Fb")
    assert catalog.table_exists(("a", "b", "t"))
    assert client.get("/v1/namespaces?parent=a").json()["namespaces"] == [["a", "b"]]
    listed = client.get("/v1/namespaces/a%1Fb/tables").json()["identifiers"]
    assert listed == [{"namespace": ["a", "b"], "name": "t"}]


@pytest.mark.parametrize(
    "namespace", [[".."], ["a/b"], ["x\x00y"], ["ok", "\n"], [""], ["a.b"], ["'; DROP TABLE x"]]
)
def test_names_refused(
    client: TestClient, catalog: Catalog, namespace: list[str], tmp_path: Any
) -> None:
    r = client.post("/v1/namespaces", json={"namespace": namespace})
    if namespace == ["'; DROP TABLE x"]:  # harmless text: stored as a name, nothing injected
        assert r.status_code == 200
        assert catalog.namespace_exists(tuple(namespace)) and catalog.namespace_exists("db")
        return
    _error(r, 400, "BadRequestException")
    body = {"name": "t", "schema": SCHEMA}
    for name in ["..", "a/b", "x\x00", "..\\up"]:
        _error(
            client.post("/v1/namespaces/db/tables", json={**body, "name": name}),
            400,
            "BadRequestException",
        )
    assert catalog.list_tables("db") == []


def test_config_prefix_and_metrics(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    client = TestClient(create_app(catalog, prefix="wh1"), raise_server_exceptions=False)
    config = client.get("/v1/config").json()
    assert config["overrides"] == {"prefix": "wh1"}
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}" in config["endpoints"]
    assert "POST /v1/{prefix}/transactions/commit" in config["endpoints"]  # SQL backing
    assert "POST /v1/{prefix}/views/rename" in config["endpoints"]
    assert client.get("/v1/wh1/namespaces").json()["namespaces"] == [["db"]]
    assert client.get("/v1/namespaces").status_code == 404
    for bad in ("", "/", "a/b"):
        with pytest.raises(ValidationError, match="Invalid prefix"):
            create_app(catalog, prefix=bad)
    _create_prefixed = client.post(
        "/v1/wh1/namespaces/db/tables", json={"name": "t", "schema": SCHEMA}
    )
    assert _create_prefixed.status_code == 200
    report = {"report-type": "scan-report", "table-name": "db.t", "snapshot-id": 1, "filter": {}}
    r = client.post("/v1/wh1/namespaces/db/tables/t/metrics", json=report)
    assert r.status_code == 204
    catalog.create_view("db.v", pa.schema([("id", pa.int64())]), "SELECT id FROM db.t")
    # every endpoint the config lists is routed for its method: no 405, and a 404 only as a
    # typed error of the route (the table dropped by an earlier endpoint, an unknown plan)
    for endpoint in config["endpoints"]:
        method, path = endpoint.split(" ")
        path = path.replace("{prefix}", "wh1").replace("{namespace}", "db").replace("{table}", "t")
        path = path.replace("{view}", "v").replace("{plan-id}", "p1")
        r = client.request(method, path, json={})
        assert r.status_code != 405, endpoint
        if r.status_code == 404 and method != "HEAD":
            assert r.json()["error"]["type"].startswith("NoSuch"), endpoint


def test_register_table(client: TestClient, catalog: Catalog) -> None:
    created = _create(client, "src")
    location = created["metadata-location"]
    body = {"name": "copy", "metadata-location": location}
    r = client.post("/v1/namespaces/db/register", json=body)
    assert r.status_code == 200 and r.json()["metadata-location"] == location
    assert catalog.load_table("db.copy").metadata.table_uuid == created["metadata"]["table-uuid"]
    _error(client.post("/v1/namespaces/db/register", json=body), 409, "AlreadyExistsException")


def test_commit_state_unknown_500_and_unexpected_errors(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    from icepark.errors import CommitStateUnknownError

    catalog.create_namespace("db")
    client = TestClient(create_app(catalog), raise_server_exceptions=False)
    _create(client)

    def unknown(*args: Any, **kwargs: Any) -> Any:
        raise CommitStateUnknownError("swap of db.t timed out")

    monkeypatch.setattr(catalog, "commit_table", unknown)
    commit = {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    r = client.post("/v1/namespaces/db/tables/t", json=commit)
    assert "timed out" in _error(r, 500, "CommitStateUnknownException")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("postgresql://app:hunter2@db.internal/cat refused")

    monkeypatch.setattr(catalog, "metadata_location", broken)  # every load asks it
    r = client.get("/v1/namespaces/db/tables/t")
    message = _error(r, 500, "ServiceFailureException")
    assert "hunter2" not in message and "db.internal" not in message
    request_id = message.rsplit("request ", 1)[1].rstrip(")")
    assert request_id in caplog.text and "RuntimeError" in caplog.text
    assert "hunter2" not in caplog.text


def test_filesystem_catalog_backing(tmp_path: Any) -> None:
    import pyarrow as pa

    import icepark

    fs = icepark.load_catalog(type="filesystem", warehouse=str(tmp_path / "fswh"))
    client = TestClient(create_app(fs), raise_server_exceptions=False)
    assert client.post("/v1/namespaces", json={"namespace": ["db"]}).status_code == 200
    created = _create(client)
    assert created["metadata-location"].endswith("v1.metadata.json")
    fs.load_table("db.t").append(pa.table({"id": [1, 2]}))
    loaded = client.get("/v1/namespaces/db/tables/t").json()
    assert loaded["metadata-location"].endswith("v2.metadata.json")
    body = {"name": "u", "schema": SCHEMA, "location": str(tmp_path / "elsewhere")}
    _error(client.post("/v1/namespaces/db/tables", json=body), 400, "BadRequestException")
    rename = {
        "source": {"namespace": ["db"], "name": "t"},
        "destination": {"namespace": ["db"], "name": "t2"},
    }
    _error(client.post("/v1/tables/rename", json=rename), 406, "UnsupportedOperationException")


def test_load_etag_304(client: TestClient, catalog: Catalog) -> None:
    created = client.post("/v1/namespaces/db/tables", json={"name": "t", "schema": SCHEMA})
    etag = created.headers["etag"]
    r = client.get("/v1/namespaces/db/tables/t", headers={"If-None-Match": etag})
    assert r.status_code == 304 and r.content == b""
    refs = client.get("/v1/namespaces/db/tables/t?snapshots=refs", headers={"If-None-Match": etag})
    assert refs.status_code == 200 and refs.headers["etag"] != etag
    catalog.load_table("db.t").set_properties(k="v")
    r = client.get("/v1/namespaces/db/tables/t", headers={"If-None-Match": etag})
    assert r.status_code == 200 and r.json()["metadata"]["properties"]["k"] == "v"
    assert r.headers["etag"] != etag
    assert (
        client.get(
            "/v1/namespaces/db/tables/t", headers={"If-None-Match": r.headers["etag"]}
        ).status_code
        == 304
    )


# found by schemathesis (tests/rest/test_rest_schemathesis.py)
def test_framework_refusals_are_error_responses(client: TestClient) -> None:
    """A body that is not JSON, a path no route serves and a method a route does not take get
    the protocol's ``{"error": ...}`` body, not FastAPI's ``{"detail": ...}``."""
    r = client.post(
        "/v1/namespaces", content=b"\xff\x00{", headers={"Content-Type": "application/json"}
    )
    assert "parsing the body" in _error(r, 400, "BadRequestException")
    _error(client.get("/v1/namespaces/db/tables/t/nosuch/p1"), 404, "NotFoundException")
    r = client.put("/v1/namespaces")
    _error(r, 405, "UnsupportedOperationException")
    assert "GET" in r.headers["allow"]


def test_head_not_found_has_json_headers(client: TestClient) -> None:
    _create(client)
    for path in (
        "/v1/namespaces/nope",
        "/v1/namespaces/db/tables/nope",
        "/v1/namespaces/db/views/v",
    ):
        r = client.head(path)
        assert r.status_code == 404 and r.headers["content-type"] == "application/json", path
    assert client.head("/v1/namespaces/db/tables/t").status_code == 204


def test_register_unreadable_metadata_is_400(
    client: TestClient, catalog: Catalog, tmp_path: Any
) -> None:
    """Missing and unreadable files get one answer (it must not tell which files exist); a
    location outside the catalog's warehouse is refused before anything is read."""
    warehouse = Path(catalog.properties["warehouse"])
    not_json = warehouse / "not-metadata.json"
    not_json.write_text("hello")
    for location in (str(warehouse / "missing.metadata.json"), str(not_json)):
        r = client.post(
            "/v1/namespaces/db/register", json={"name": "r", "metadata-location": location}
        )
        message = _error(r, 400, "BadRequestException")
        assert message.endswith(f"no readable table metadata at {location!r}"), message
    created = _create(client, "src")
    outside = tmp_path / "elsewhere" / "v1.metadata.json"
    outside.parent.mkdir()
    outside.write_bytes(Path(created["metadata-location"].removeprefix("file:")).read_bytes())
    sneaky = str(warehouse / ".." / "elsewhere" / "v1.metadata.json")
    for location in (str(outside), f"file://{outside}", sneaky, "7 \x00", "/etc/passwd"):
        r = client.post(
            "/v1/namespaces/db/register", json={"name": "r", "metadata-location": location}
        )
        assert "outside the catalog's warehouse" in _error(r, 400, "BadRequestException")
    _error(client.get("/v1/namespaces/db/tables/r"), 404, "NoSuchTableException")
