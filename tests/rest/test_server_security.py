"""Auth of the REST server judged over HTTP (FastAPI's TestClient): tokens, grants, expiry,
tampering, and secrets kept out of logs and answers."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastapi.testclient import TestClient

from icepark.catalog.base import Catalog
from icepark.errors import ValidationError
from icepark.rest import Principals, create_app, hash_secret
from icepark.rest.server.security import TokenSigner, verify_secret

SECRETS = {"etl": "etl-secret-123", "analyst": "analyst-secret-456", "admin": "admin-secret-789"}
SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def _principals() -> Principals:
    return Principals.from_dict(
        {
            "principals": [
                {"client-id": "etl", "client-secret": SECRETS["etl"], "grants": {"*": "write"}},
                {
                    "client-id": "analyst",
                    "client-secret": hash_secret(SECRETS["analyst"]),
                    "grants": {"sales": "read"},
                },
                {"client-id": "admin", "client-secret": SECRETS["admin"], "grants": {"*": "admin"}},
            ]
        }
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def client(catalog: Catalog) -> TestClient:
    catalog.create_namespace("sales")
    catalog.create_namespace("hr")
    app = create_app(catalog, auth=_principals(), token_key="test-key", token_ttl_seconds=60)
    return TestClient(app, raise_server_exceptions=False)


def token(client: TestClient, client_id: str, secret: str | None = None) -> dict[str, str]:
    r = client.post(
        "/v1/oauth/tokens",
        data={
            "grant_type": "client_credentials",
            "client_id": client_id,
            "client_secret": secret if secret is not None else SECRETS[client_id],
            "scope": "catalog",
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "bearer" and body["expires_in"] == 60
    return {"Authorization": f"Bearer {body['access_token']}"}


def test_no_token_401(client: TestClient) -> None:
    for method, path in [
        ("GET", "/v1/config"),
        ("GET", "/v1/namespaces"),
        ("GET", "/v1/namespaces/sales/tables"),
        ("POST", "/v1/namespaces"),
    ]:
        r = client.request(method, path, json={"namespace": ["x"]})
        assert r.status_code == 401, (method, path, r.text)
        assert r.json()["error"]["type"] == "NotAuthorizedException"
    r = client.get("/v1/namespaces", headers={"Authorization": "Basic abc"})
    assert r.status_code == 401


def test_wrong_secret_and_unknown_client(client: TestClient) -> None:
    for cid, secret in [("etl", "nope"), ("analyst", "etl-secret-123"), ("ghost", "x")]:
        r = client.post(
            "/v1/oauth/tokens",
            data={"grant_type": "client_credentials", "client_id": cid, "client_secret": secret},
        )
        assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    r = client.post("/v1/oauth/tokens", data={"grant_type": "password", "username": "x"})
    assert r.status_code == 400 and r.json()["error"] == "unsupported_grant_type"


def test_grants(client: TestClient, catalog: Catalog) -> None:
    analyst, etl, admin = (token(client, c) for c in ("analyst", "etl", "admin"))
    create = {"name": "t", "schema": SCHEMA}
    # read on sales: list and load, nothing else; nothing at all on hr
    assert (
        client.post("/v1/namespaces/sales/tables", json=create, headers=analyst).status_code == 403
    )
    assert not catalog.table_exists("sales.t")
    assert client.post("/v1/namespaces/sales/tables", json=create, headers=etl).status_code == 200
    assert client.get("/v1/namespaces/sales/tables/t", headers=analyst).status_code == 200
    assert client.get("/v1/namespaces/sales/tables", headers=analyst).status_code == 200
    assert client.get("/v1/namespaces/hr/tables", headers=analyst).status_code == 403
    listed = client.get("/v1/namespaces", headers=analyst).json()["namespaces"]
    assert listed == [["sales"]]
    before = catalog.metadata_location("sales.t")
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    r = client.post("/v1/namespaces/sales/tables/t", json=commit, headers=analyst)
    assert r.status_code == 403 and r.json()["error"]["type"] == "ForbiddenException"
    assert client.delete("/v1/namespaces/sales/tables/t", headers=analyst).status_code == 403
    rename = {
        "source": {"namespace": ["sales"], "name": "t"},
        "destination": {"namespace": ["sales"], "name": "t2"},
    }
    assert client.post("/v1/tables/rename", json=rename, headers=analyst).status_code == 403
    assert catalog.metadata_location("sales.t") == before
    # write: tables yes, namespaces no
    assert client.post("/v1/namespaces/sales/tables/t", json=commit, headers=etl).status_code == 200
    assert (
        client.post("/v1/namespaces", json={"namespace": ["new"]}, headers=etl).status_code == 403
    )
    assert client.delete("/v1/namespaces/hr", headers=etl).status_code == 403
    props = {"updates": {"x": "1"}}
    assert client.post("/v1/namespaces/hr/properties", json=props, headers=etl).status_code == 403
    # admin: namespaces too
    assert (
        client.post("/v1/namespaces", json={"namespace": ["new"]}, headers=admin).status_code == 200
    )
    assert client.post("/v1/namespaces/hr/properties", json=props, headers=admin).status_code == 200
    assert client.delete("/v1/namespaces/new", headers=admin).status_code == 204


def test_token_expiry_and_tampering(catalog: Catalog) -> None:
    clock = Clock()
    app = create_app(catalog, auth=_principals(), token_key="k", token_ttl_seconds=60)
    app.state.icepark.signer = TokenSigner("k", 60, clock=clock)
    client = TestClient(app, raise_server_exceptions=False)
    headers = token(client, "etl")
    assert client.get("/v1/namespaces", headers=headers).status_code == 200
    clock.now += 59
    assert client.get("/v1/namespaces", headers=headers).status_code == 200
    clock.now += 2
    r = client.get("/v1/namespaces", headers=headers)
    assert r.status_code == 401 and r.json()["error"]["type"] == "NotAuthorizedException"

    clock.now = 1_000_000.0
    fresh = token(client, "analyst")["Authorization"].removeprefix("Bearer ")
    payload, signature = fresh.split(".")
    forged_payload = TokenSigner("other-key").issue("admin").split(".")[0]
    for bad in [
        f"{forged_payload}.{signature}",  # claims swapped, signature kept
        TokenSigner("other-key").issue("admin"),  # signed with another key
        f"{payload}.{signature[:-2]}xx",
        payload,
        "garbage",
    ]:
        r = client.get("/v1/namespaces", headers={"Authorization": f"Bearer {bad}"})
        assert r.status_code == 401, bad
    # a token of another process's key is refused, one of the same key accepted
    one = TestClient(create_app(catalog, auth=_principals(), token_key="k", token_ttl_seconds=60))
    two = TestClient(create_app(catalog, auth=_principals(), token_key="k", token_ttl_seconds=60))
    three = TestClient(create_app(catalog, auth=_principals(), token_key="j", token_ttl_seconds=60))
    issued = token(one, "etl")
    assert two.get("/v1/namespaces", headers=issued).status_code == 200
    assert three.get("/v1/namespaces", headers=issued).status_code == 401


def test_token_exchange_refresh(client: TestClient) -> None:
    headers = token(client, "etl")
    subject = headers["Authorization"].removeprefix("Bearer ")
    r = client.post(
        "/v1/oauth/tokens",
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": subject,
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
        },
        headers=headers,
    )
    assert r.status_code == 200
    refreshed = {"Authorization": f"Bearer {r.json()['access_token']}"}
    assert client.get("/v1/namespaces", headers=refreshed).status_code == 200
    r = client.post(
        "/v1/oauth/tokens",
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": "x",
        },
    )
    assert r.status_code == 401


def test_secrets_never_logged_or_shown(client: TestClient, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    headers = token(client, "etl")
    bearer = headers["Authorization"].removeprefix("Bearer ")
    client.get("/v1/namespaces", headers=headers)
    client.post(
        "/v1/oauth/tokens",
        data={"grant_type": "client_credentials", "client_id": "etl", "client_secret": "wrong-x"},
    )
    client.get("/v1/namespaces/sales/tables/nope", headers=headers)
    # Formatted here rather than read from caplog.text: pytest shares one capture handler across
    # the session, and one CI run found it formatting with pyspark's JSONFormatter (which
    # PySparkLogger.addHandler puts on any handler it is given), escaping the quotes looked for.
    plain = logging.Formatter("%(levelname)s %(name)s %(message)s")
    text = "\n".join(plain.format(record) for record in caplog.records)
    assert '"principal": "etl"' in text and '"status": 404' in text  # the access log runs
    for secret in [*SECRETS.values(), "wrong-x", bearer, bearer.split(".")[1]]:
        assert secret not in text
    principals = _principals()
    shown = repr(principals) + repr(principals.get("etl")) + repr(principals.get("analyst"))
    assert "etl" in shown and SECRETS["etl"] not in shown and "pbkdf2" not in shown


def test_hash_secret_round_trip() -> None:
    stored = hash_secret("pa55")
    assert stored.startswith("pbkdf2_sha256$") and "pa55" not in stored
    assert stored != hash_secret("pa55")  # salted
    assert verify_secret("pa55", stored) and not verify_secret("pa56", stored)
    assert verify_secret("plain", "plain") and not verify_secret("plainx", "plain")
    with pytest.raises(ValidationError, match="empty client secret"):
        hash_secret("")


def test_body_limit_413(catalog: Catalog) -> None:
    app = create_app(catalog, max_body_bytes=1000)
    client = TestClient(app, raise_server_exceptions=False)
    big = {"namespace": ["n"], "properties": {"k": "x" * 2000}}
    r = client.post("/v1/namespaces", json=big)
    assert r.status_code == 413
    assert not catalog.namespace_exists("n")
    assert client.post("/v1/namespaces", json={"namespace": ["n"]}).status_code == 200


def test_bad_principals_file(tmp_path: Any) -> None:
    from icepark.errors import CatalogConfigError

    path = tmp_path / "p.yaml"
    path.write_text("principals:\n  - {client-id: a, client-secret: 'zz-top', grants: {x: root}}\n")
    with pytest.raises(CatalogConfigError) as info:
        Principals.load(path)
    assert "zz-top" not in str(info.value) and "read, write, admin" in str(info.value)
    path.write_text(
        "principals:\n  - {client-id: a, client-secret: s, grants: {'*': read}}\n"
        "  - {client-id: b, client-secret: t, grants: {sales.eu: write}}\n"
    )
    loaded = Principals.load(path)
    b = loaded.get("b")
    assert b is not None and b.level(("sales", "eu", "x")) == 2 and b.level(("sales",)) == 0
    assert b.may_see(("sales",)) and not b.may_see(("hr",))
