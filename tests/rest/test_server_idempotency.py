"""``Idempotency-Key`` on ``icepark serve``, judged over HTTP: every mutation sent again with its
key is answered with the first outcome and applied once (the effect is checked in the catalog
and against the same request with a fresh key, which does what a second application does);
terminal 4xx are replayed, 5xx are not; a key reused for another request, or whose first request
still runs, gets 409; keys are per principal, expire with the advertised lifetime, and two
servers on one database agree. The spec's text: ``components/parameters/idempotency-key`` and
``CatalogConfig.idempotency-key-lifetime`` of Iceberg's REST OpenAPI document."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
import sqlalchemy
from fastapi.testclient import TestClient

import icepark
from icepark.catalog.base import Catalog
from icepark.catalog.idempotency_keys import KEYS_TABLE
from icepark.errors import ValidationError
from icepark.rest import Principals, create_app
from tests.rest.conftest import serving

SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
VIEW_SCHEMA = {**SCHEMA, "schema-id": 0}


def _view_version(sql: str) -> dict[str, Any]:
    return {
        "version-id": 1,
        "timestamp-ms": 1_700_000_000_000,
        "schema-id": 0,
        "summary": {"engine-name": "test"},
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
        "default-namespace": ["db"],
    }


def key() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def client(catalog: Catalog) -> TestClient:
    return TestClient(create_app(catalog), raise_server_exceptions=False)


def _twice(client: TestClient, method: str, path: str, body: Any = None) -> Any:
    """Send the request twice with one key: both answers alike; returns the first."""
    headers = {"Idempotency-Key": key()}
    first = client.request(method, path, json=body, headers=headers)
    again = client.request(method, path, json=body, headers=headers)
    assert (first.status_code, first.content) == (again.status_code, again.content), path
    assert first.status_code < 300, first.text
    return first


def test_config_advertises_the_lifetime_where_outcomes_are_kept(
    catalog: Catalog, tmp_path: Path
) -> None:
    config = TestClient(create_app(catalog)).get("/v1/config").json()
    assert config["idempotency-key-lifetime"] == "PT30M"
    assert sqlalchemy.inspect(catalog.engine).has_table(KEYS_TABLE)  # type: ignore[attr-defined]
    shorter = TestClient(create_app(catalog, idempotency_key_lifetime="PT2H")).get("/v1/config")
    assert shorter.json()["idempotency-key-lifetime"] == "PT2H"
    off = TestClient(create_app(catalog, idempotency_key_lifetime=None)).get("/v1/config")
    assert "idempotency-key-lifetime" not in off.json()
    # no database, no store: a file-system warehouse advertises nothing and ignores keys
    fs = icepark.load_catalog(type="filesystem", warehouse=str(tmp_path / "fs"))
    fs_client = TestClient(create_app(fs))
    assert "idempotency-key-lifetime" not in fs_client.get("/v1/config").json()
    headers = {"Idempotency-Key": "not a uuid"}
    assert fs_client.post("/v1/namespaces", json={"namespace": ["a"]}, headers=headers).is_success
    # a catalog told not to create tables, whose database lacks the key table: none either
    bare = icepark.load_catalog(
        uri=f"sqlite:///{tmp_path}/bare.db",
        warehouse=str(tmp_path),
        **{"init-catalog-tables": "false"},
    )
    assert "idempotency-key-lifetime" not in TestClient(create_app(bare)).get("/v1/config").json()
    with pytest.raises(ValidationError, match="idempotency_key_lifetime"):
        create_app(catalog, idempotency_key_lifetime="30 minutes")


def test_every_mutation_repeated_with_its_key_applies_once(
    client: TestClient, catalog: Catalog, warehouse: Path
) -> None:
    # namespaces: create (a second create is 409), properties, and at the end drop
    _twice(client, "POST", "/v1/namespaces", {"namespace": ["db"], "properties": {"a": "1"}})
    assert client.post("/v1/namespaces", json={"namespace": ["db"]}).status_code == 409
    props = _twice(client, "POST", "/v1/namespaces/db/properties", {"updates": {"b": "2"}})
    assert props.json()["updated"] == ["b"]
    # tables: create (same uuid and file both times; a second create is 409)
    created = _twice(client, "POST", "/v1/namespaces/db/tables", {"name": "t", "schema": SCHEMA})
    assert (
        created.json()["metadata"]["table-uuid"] == catalog.load_table("db.t").metadata.table_uuid
    )
    assert (
        client.post("/v1/namespaces/db/tables", json={"name": "t", "schema": SCHEMA}).status_code
        == 409
    )
    # a commit: one new metadata file, the same one in both answers, with its ETag
    commit = {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    first = _twice(client, "POST", "/v1/namespaces/db/tables/t", commit)
    table = catalog.load_table("db.t")
    assert first.json()["metadata-location"] == table.metadata_location
    assert len(table.metadata.metadata_log) == 1 and first.headers["ETag"]
    # a multi-table commit: 204, applied once
    change = {
        "identifier": {"namespace": ["db"], "name": "t"},
        "requirements": [],
        "updates": [{"action": "set-properties", "updates": {"k2": "v2"}}],
    }
    _twice(client, "POST", "/v1/transactions/commit", {"table-changes": [change]})
    assert len(catalog.load_table("db.t").metadata.metadata_log) == 2
    # register (a second register is 409), rename (a second rename is 404), drop (404)
    location = catalog.load_table("db.t").metadata_location
    register = {"name": "r", "metadata-location": location}
    _twice(client, "POST", "/v1/namespaces/db/register", register)
    assert client.post("/v1/namespaces/db/register", json=register).status_code == 409
    rename = {
        "source": {"namespace": ["db"], "name": "r"},
        "destination": {"namespace": ["db"], "name": "r2"},
    }
    _twice(client, "POST", "/v1/tables/rename", rename)
    assert client.post("/v1/tables/rename", json=rename).status_code == 404
    assert catalog.table_exists("db.r2") and not catalog.table_exists("db.r")
    _twice(client, "DELETE", "/v1/namespaces/db/tables/r2")
    assert client.delete("/v1/namespaces/db/tables/r2").status_code == 404
    # views: create (409 the second time), replace, rename, drop
    view = {"name": "v", "schema": VIEW_SCHEMA, "view-version": _view_version("SELECT 1")}
    made = _twice(client, "POST", "/v1/namespaces/db/views", view)
    assert client.post("/v1/namespaces/db/views", json=view).status_code == 409
    replace = {
        "requirements": [
            {"type": "assert-view-uuid", "uuid": made.json()["metadata"]["view-uuid"]}
        ],
        "updates": [{"action": "set-properties", "updates": {"p": "q"}}],
    }
    replaced = _twice(client, "POST", "/v1/namespaces/db/views/v", replace)
    assert replaced.json()["metadata-location"] == catalog.load_view("db.v").metadata_location
    view_rename = {
        "source": {"namespace": ["db"], "name": "v"},
        "destination": {"namespace": ["db"], "name": "w"},
    }
    _twice(client, "POST", "/v1/views/rename", view_rename)
    assert client.post("/v1/views/rename", json=view_rename).status_code == 404
    _twice(client, "DELETE", "/v1/namespaces/db/views/w")
    assert client.delete("/v1/namespaces/db/views/w").status_code == 404
    # and the namespace (a second drop is 404)
    _twice(client, "DELETE", "/v1/namespaces/db/tables/t")
    _twice(client, "DELETE", "/v1/namespaces/db")
    assert client.delete("/v1/namespaces/db").status_code == 404


def test_a_stage_create_is_replayed_with_its_table_uuid(
    client: TestClient, catalog: Catalog
) -> None:
    catalog.create_namespace("db")
    staged = _twice(
        client,
        "POST",
        "/v1/namespaces/db/tables",
        {"name": "s", "schema": SCHEMA, "stage-create": True},
    )
    assert staged.json().get("metadata-location") is None
    assert not catalog.table_exists("db.s")


def test_a_terminal_4xx_is_replayed_and_a_5xx_is_not(
    client: TestClient, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {"Idempotency-Key": key()}
    create = {"name": "t", "schema": SCHEMA}
    missing = client.post("/v1/namespaces/db/tables", json=create, headers=headers)
    assert missing.status_code == 404
    catalog.create_namespace("db")
    again = client.post("/v1/namespaces/db/tables", json=create, headers=headers)
    assert (again.status_code, again.json()) == (404, missing.json())  # the first outcome
    assert client.post("/v1/namespaces/db/tables", json=create).status_code == 200  # new request
    # a 5xx is not kept: the same key runs the request anew
    calls = []
    real = type(catalog).drop_table

    def failing_once(self: Catalog, ident: Any, purge: bool = False) -> None:
        calls.append(ident)
        if len(calls) == 1:
            raise RuntimeError("disk on fire")
        real(self, ident, purge)

    monkeypatch.setattr(type(catalog), "drop_table", failing_once)
    headers = {"Idempotency-Key": key()}
    assert client.delete("/v1/namespaces/db/tables/t", headers=headers).status_code == 500
    assert client.delete("/v1/namespaces/db/tables/t", headers=headers).status_code == 204
    assert client.delete("/v1/namespaces/db/tables/t", headers=headers).status_code == 204
    assert len(calls) == 2 and not catalog.table_exists("db.t")


def test_a_key_reused_for_another_request_is_409_and_a_bad_key_400(
    client: TestClient, catalog: Catalog
) -> None:
    headers = {"Idempotency-Key": key()}
    assert client.post("/v1/namespaces", json={"namespace": ["a"]}, headers=headers).is_success
    for method, path, body in [
        ("POST", "/v1/namespaces", {"namespace": ["b"]}),  # another body
        ("DELETE", "/v1/namespaces/a", None),  # another operation
    ]:
        r = client.request(method, path, json=body, headers=headers)
        assert r.status_code == 409, r.text
        assert r.json()["error"]["type"] == "IdempotencyKeyReusedException"
    assert catalog.list_namespaces() == [("a",)]
    # the same request whatever the case of the key, and however the body is spelled
    upper = {
        "Idempotency-Key": headers["Idempotency-Key"].upper(),
        "Content-Type": "application/json",
    }
    assert client.post(
        "/v1/namespaces", content=b'{ "namespace" : ["a"] }', headers=upper
    ).is_success
    for bad in ("not-a-uuid", "0" * 36, key() + "0", key()[:-1]):
        r = client.post(
            "/v1/namespaces", json={"namespace": ["c"]}, headers={"Idempotency-Key": bad}
        )
        assert r.status_code == 400 and "Idempotency-Key" in r.json()["error"]["message"], bad
        assert bad not in r.json()["error"]["message"]
    assert catalog.list_namespaces() == [("a",)]


def test_keys_belong_to_their_principal(catalog: Catalog) -> None:
    secrets = {"etl": "etl-secret", "ops": "ops-secret"}
    principals = Principals.from_dict(
        {
            "principals": [
                {"client-id": name, "client-secret": secret, "grants": {"*": "admin"}}
                for name, secret in secrets.items()
            ]
        }
    )
    client = TestClient(create_app(catalog, auth=principals, token_key="k"))

    def bearer(name: str) -> dict[str, str]:
        form = {
            "grant_type": "client_credentials",
            "client_id": name,
            "client_secret": secrets[name],
        }
        return {
            "Authorization": "Bearer "
            + client.post("/v1/oauth/tokens", data=form).json()["access_token"]
        }

    shared = key()
    body = {"namespace": ["n"]}
    etl = client.post(
        "/v1/namespaces", json=body, headers={**bearer("etl"), "Idempotency-Key": shared}
    )
    assert etl.status_code == 200
    # the other principal's request with the same key is its own: it runs (and finds n)
    ops = client.post(
        "/v1/namespaces", json=body, headers={**bearer("ops"), "Idempotency-Key": shared}
    )
    assert ops.status_code == 409 and ops.json()["error"]["type"] == "AlreadyExistsException"
    again = client.post(
        "/v1/namespaces", json=body, headers={**bearer("etl"), "Idempotency-Key": shared}
    )
    assert again.status_code == 200
    # a 401 is answered before any key is looked at
    assert (
        client.post("/v1/namespaces", json=body, headers={"Idempotency-Key": shared}).status_code
        == 401
    )


def test_a_key_expires_with_its_lifetime(catalog: Catalog) -> None:
    client = TestClient(create_app(catalog, idempotency_key_lifetime="PT0.5S"))
    assert client.get("/v1/config").json()["idempotency-key-lifetime"] == "PT0.5S"
    headers = {"Idempotency-Key": key()}
    assert (
        client.post("/v1/namespaces", json={"namespace": ["n"]}, headers=headers).status_code == 200
    )
    assert (
        client.post("/v1/namespaces", json={"namespace": ["n"]}, headers=headers).status_code == 200
    )
    time.sleep(0.6)  # expired: the key is new again (Java's handlers do the same)
    assert (
        client.post("/v1/namespaces", json={"namespace": ["n"]}, headers=headers).status_code == 409
    )
    with catalog.engine.connect() as conn:  # type: ignore[attr-defined]
        rows = conn.execute(sqlalchemy.text(f"SELECT count(*) FROM {KEYS_TABLE}")).scalar()
    assert rows == 1  # taken over, not duplicated


def test_two_servers_on_one_database_agree(tmp_path: Path, warehouse: Path) -> None:
    uri = f"sqlite:///{tmp_path}/shared.db"
    one = icepark.load_catalog(uri=uri, warehouse=str(warehouse))
    two = icepark.load_catalog(uri=uri, warehouse=str(warehouse))
    one.create_namespace("db")
    one.create_table("db.t", icepark.schema(("id", "long")))
    a = TestClient(create_app(one))
    b = TestClient(create_app(two))
    headers = {"Idempotency-Key": key()}
    commit = {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    first = a.post("/v1/namespaces/db/tables/t", json=commit, headers=headers)
    again = b.post("/v1/namespaces/db/tables/t", json=commit, headers=headers)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()  # b read the file a wrote
    assert len(one.load_table("db.t").metadata.metadata_log) == 1


def test_a_repeat_of_a_running_request_waits_for_it_or_gets_409(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.t", icepark.schema(("id", "long")))
    release = threading.Event()
    started = threading.Event()
    real = type(catalog).rename_table
    runs = []

    def slow_rename(self: Catalog, src: Any, dst: Any) -> Any:
        runs.append(dst)
        started.set()
        release.wait(10)
        return real(self, src, dst)

    monkeypatch.setattr(type(catalog), "rename_table", slow_rename)
    rename = {
        "source": {"namespace": ["db"], "name": "t"},
        "destination": {"namespace": ["db"], "name": "u"},
    }
    headers = {"Idempotency-Key": key()}
    patient = create_app(catalog, idempotency_wait_seconds=10)
    hasty = create_app(catalog, idempotency_wait_seconds=0.2)
    with serving(patient) as url, serving(hasty) as hasty_url:
        answers: list[requests.Response] = []
        first = threading.Thread(
            target=lambda: answers.append(
                requests.post(f"{url}/v1/tables/rename", json=rename, headers=headers)
            )
        )
        first.start()
        assert started.wait(10)
        # another server, asked again while the first still runs: it does not run it
        busy = requests.post(f"{hasty_url}/v1/tables/rename", json=rename, headers=headers)
        assert busy.status_code == 409 and busy.headers["Retry-After"] == "1"
        assert busy.json()["error"]["type"] == "IdempotencyKeyInProgressException"
        # a patient one waits for the first and answers its outcome
        waiting = threading.Thread(
            target=lambda: answers.append(
                requests.post(f"{url}/v1/tables/rename", json=rename, headers=headers)
            )
        )
        waiting.start()
        time.sleep(0.3)
        release.set()
        first.join(10)
        waiting.join(10)
    assert [a.status_code for a in answers] == [204, 204]
    assert len(runs) == 1 and catalog.table_exists("db.u")


def test_the_key_store_claims_once_writes_behind_and_purges(tmp_path: Path) -> None:
    from icepark.catalog.idempotency_keys import IdempotencyKeys

    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path}/keys.db")
    one, two = IdempotencyKeys(engine, "c"), IdempotencyKeys(engine, "c")  # two processes
    first = one.claim("etl", "k", "f1", 60)
    assert first.claim is not None
    seen = two.claim("etl", "k", "f1", 60)
    assert (seen.claim, seen.state) == (None, "running")
    assert two.claim("ops", "k", "f1", 60).claim is not None  # another principal's key
    assert IdempotencyKeys(engine, "other").claim("etl", "k", "f1", 60).claim is not None
    one.finish_soon(first, '{"status":204}')
    assert one.get("etl", "k") == KeyEntryDone("etl", "k", "f1", '{"status":204}')
    one.flush()
    assert two.get("etl", "k") == KeyEntryDone("etl", "k", "f1", '{"status":204}')
    # a released claim is gone; an expired one is taken over; expired rows are purged
    released = two.claim("etl", "r", "f", 60)
    two.release(released)
    assert two.get("etl", "r") is None and two.claim("etl", "r", "f", 60).claim is not None
    short = one.claim("etl", "s", "f", 0.05)
    time.sleep(0.1)
    assert one.get("etl", "s") is None
    again = two.claim("etl", "s", "g", 60)
    assert again.claim not in (None, short.claim)
    assert not one.finish(short, "{}")  # the lost claim cannot finish
    assert one.purge(now_ms=int(time.time() * 1000) + 61_000) == 4  # its catalog's only


def KeyEntryDone(scope: str, key: str, fingerprint: str, outcome: str) -> Any:
    from icepark.catalog.idempotency_keys import KeyEntry

    return KeyEntry(scope, key, fingerprint, "done", outcome)
