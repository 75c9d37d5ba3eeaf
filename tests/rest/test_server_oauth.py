"""``POST /v1/oauth/tokens`` as clients speak it (RFC 6749, RFC 8693): client credentials by
HTTP Basic (raw as DuckDB and PyIceberg send them, and form-urlencoded as the RFC says) or in the
body, ``scope`` accepted and echoed, every error of section 5.2, and the token exchange Java's
client refreshes with (an expired token only with the client's own credentials). PyIceberg's
``oauth2`` auth manager (Basic) gets a token from the served app and lists through it. No
secret or token shows up in an answer or a log line."""

from __future__ import annotations

import base64
import logging
from typing import Any
from urllib.parse import quote_plus

import pytest
from fastapi.testclient import TestClient

from icepark.catalog.base import Catalog
from icepark.rest import Principals, create_app, hash_secret
from icepark.rest.server.security import TokenSigner
from tests.rest.conftest import serving

TOKENS = "/v1/oauth/tokens"
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS = "urn:ietf:params:oauth:token-type:access_token"
# a secret with what form encoding changes (":", "+", " ", "%", "/")
SECRETS = {"etl": "etl-secret-123", "analyst": "an:al+yst 1%/x"}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def client(catalog: Catalog, clock: Clock) -> TestClient:
    catalog.create_namespace("sales")
    principals = Principals.from_dict(
        {
            "principals": [
                {"client-id": "etl", "client-secret": SECRETS["etl"], "grants": {"*": "write"}},
                {
                    "client-id": "analyst",
                    "client-secret": hash_secret(SECRETS["analyst"]),
                    "grants": {"sales": "read"},
                },
            ]
        }
    )
    app = create_app(catalog, auth=principals, token_key="k", token_ttl_seconds=60)
    app.state.icepark.signer = TokenSigner("k", 60, clock=clock)
    return TestClient(app, raise_server_exceptions=False)


def basic(client_id: str, secret: str, *, encoded: bool = False) -> dict[str, str]:
    if encoded:  # RFC 6749 2.3.1: each part form-urlencoded, then base64
        client_id, secret = quote_plus(client_id), quote_plus(secret)
    raw = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    return {"Authorization": f"Basic {raw}"}


def bearer(answer: Any) -> dict[str, str]:
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


def error(answer: Any, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.json()["error"] == code, answer.text
    assert answer.headers["cache-control"] == "no-store"
    if status == 401:
        assert answer.headers["www-authenticate"].startswith('Basic realm="icepark"')


def test_client_credentials_by_basic_and_body_with_scope(client: TestClient) -> None:
    duckdb = {"grant_type": "client_credentials", "scope": "PRINCIPAL_ROLE:ALL"}
    r = client.post(TOKENS, data=duckdb, headers=basic("etl", SECRETS["etl"]))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["scope"] == "PRINCIPAL_ROLE:ALL" and body["token_type"] == "bearer"
    assert body["expires_in"] == 60 and body["issued_token_type"] == ACCESS
    assert r.headers["cache-control"] == "no-store"
    assert client.get("/v1/namespaces", headers=bearer(r)).status_code == 200
    # a secret with ":", "+", " " and "%": raw (DuckDB, PyIceberg) and form-encoded (RFC)
    for encoded in (False, True):
        r = client.post(
            TOKENS,
            data={"grant_type": "client_credentials"},
            headers=basic("analyst", SECRETS["analyst"], encoded=encoded),
        )
        assert "scope" not in r.json()
        assert client.get("/v1/namespaces/sales/tables", headers=bearer(r)).status_code == 200
    # the body (Java's client), with several scope tokens echoed as sent
    form = {
        "grant_type": "client_credentials",
        "client_id": "analyst",
        "client_secret": SECRETS["analyst"],
        "scope": "catalog PRINCIPAL_ROLE:ALL",
    }
    r = client.post(TOKENS, data=form)
    assert r.status_code == 200 and r.json()["scope"] == "catalog PRINCIPAL_ROLE:ALL"
    # Basic with the same client_id in the body is one method, not two
    r = client.post(
        TOKENS,
        data={"grant_type": "client_credentials", "client_id": "etl", "scope": ""},
        headers=basic("etl", SECRETS["etl"]),
    )
    assert r.status_code == 200 and "scope" not in r.json()


def test_errors_as_rfc_6749_section_5_2(client: TestClient) -> None:
    cc = {"grant_type": "client_credentials"}
    good = basic("etl", SECRETS["etl"])
    # no client authentication at all, an unknown client, a wrong secret, a broken header
    error(client.post(TOKENS, data=cc), 401, "invalid_client")
    error(client.post(TOKENS, data=cc, headers=basic("ghost", "x")), 401, "invalid_client")
    error(client.post(TOKENS, data=cc, headers=basic("etl", "nope")), 401, "invalid_client")
    for header in ("Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode(), "Basic "):
        r = client.post(TOKENS, data=cc, headers={"Authorization": header})
        error(r, 401, "invalid_client")
    form = {**cc, "client_id": "etl", "client_secret": "nope"}
    error(client.post(TOKENS, data=form), 401, "invalid_client")
    # missing, repeated or conflicting parameters
    error(client.post(TOKENS, data={}, headers=good), 400, "invalid_request")
    r = client.post(
        TOKENS,
        content=b"grant_type=client_credentials&grant_type=client_credentials",
        headers={**good, "Content-Type": "application/x-www-form-urlencoded"},
    )
    error(r, 400, "invalid_request")
    both = {**cc, "client_id": "etl", "client_secret": SECRETS["etl"]}
    error(client.post(TOKENS, data=both, headers=good), 400, "invalid_request")
    other = {**cc, "client_id": "analyst"}
    error(client.post(TOKENS, data=other, headers=good), 400, "invalid_request")
    error(client.post(TOKENS, data={**cc, "client_id": "etl"}), 400, "invalid_request")
    # grants and scopes
    r = client.post(TOKENS, data={"grant_type": "password", "username": "x"}, headers=good)
    error(r, 400, "unsupported_grant_type")
    for scope in ('cat"alog', "a\\b", "two  spaces", "x" * 1100, "tab\tinside"):
        error(client.post(TOKENS, data={**cc, "scope": scope}, headers=good), 400, "invalid_scope")


def test_token_exchange_refresh_as_java_sends_it(client: TestClient, clock: Clock) -> None:
    first = client.post(
        TOKENS, data={"grant_type": "client_credentials"}, headers=basic("etl", SECRETS["etl"])
    )
    current = bearer(first)
    subject = current["Authorization"].removeprefix("Bearer ")
    exchange = {
        "grant_type": EXCHANGE,
        "subject_token": subject,
        "subject_token_type": ACCESS,
        "scope": "catalog",
    }
    # a live token, the current token as bearer (Java's refresh before expiry)
    clock.now += 30
    r = client.post(TOKENS, data=exchange, headers=current)
    assert r.status_code == 200 and r.json()["scope"] == "catalog"
    refreshed = bearer(r)
    clock.now += 40  # the first token has expired, the refreshed one lives on
    assert client.get("/v1/namespaces", headers=current).status_code == 401
    assert client.get("/v1/namespaces", headers=refreshed).status_code == 200
    # an expired subject alone is refused; with the client's own Basic credentials it is
    # exchanged (Java's refresh of an expired token), but not with another client's
    error(client.post(TOKENS, data=exchange, headers=current), 401, "invalid_client")
    r = client.post(TOKENS, data=exchange, headers=basic("etl", SECRETS["etl"]))
    assert client.get("/v1/namespaces", headers=bearer(r)).status_code == 200
    r = client.post(TOKENS, data=exchange, headers=basic("analyst", SECRETS["analyst"]))
    error(r, 400, "invalid_request")
    r = client.post(TOKENS, data=exchange, headers=basic("etl", "wrong"))
    error(r, 401, "invalid_client")
    forged = TokenSigner("other-key").issue("etl")
    r = client.post(
        TOKENS, data={**exchange, "subject_token": forged}, headers=basic("etl", SECRETS["etl"])
    )
    error(r, 400, "invalid_request")
    # malformed exchanges
    live = refreshed["Authorization"].removeprefix("Bearer ")
    for bad in (
        {"subject_token": ""},
        {"subject_token_type": "urn:ietf:params:oauth:token-type:saml2"},
        {"actor_token": live, "actor_token_type": ACCESS},
    ):
        r = client.post(TOKENS, data={**exchange, "subject_token": live, **bad})
        error(r, 400, "invalid_request")


def test_no_secret_or_token_in_answers_or_logs(client: TestClient, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    answers = []
    good = client.post(
        TOKENS, data={"grant_type": "client_credentials"}, headers=basic("etl", SECRETS["etl"])
    )
    token = good.json()["access_token"]
    for data, headers in (
        ({"grant_type": "client_credentials"}, basic("etl", "wrong-secret-x")),
        (
            {
                "grant_type": "client_credentials",
                "client_id": "etl",
                "client_secret": "wrong-secret-x",
            },
            {},
        ),
        (
            {"grant_type": "client_credentials", "client_secret": "wrong-secret-x"},
            basic("etl", SECRETS["etl"]),
        ),
        ({"grant_type": EXCHANGE, "subject_token": token + "x"}, {}),
        ({"grant_type": EXCHANGE, "subject_token": token}, basic("analyst", SECRETS["analyst"])),
        ({"grant_type": "wrong-secret-x"}, {}),
        ({"grant_type": "client_credentials", "scope": 'wrong-secret-x"'}, {}),
    ):
        answers.append(client.post(TOKENS, data=data, headers=headers).text)
    plain = logging.Formatter("%(levelname)s %(name)s %(message)s")
    text = "\n".join(answers + [plain.format(record) for record in caplog.records])
    assert '"operation": "get_token"' in text  # the access log ran
    for secret in [*SECRETS.values(), "wrong-secret-x", token, token.split(".")[1]]:
        assert secret not in text


def test_pyiceberg_oauth2_manager_by_basic(catalog: Catalog) -> None:
    """PyIceberg's ``oauth2`` auth manager authenticates by HTTP Basic with a scope."""
    rest = pytest.importorskip("pyiceberg.catalog.rest")
    catalog.create_namespace("sales")
    principals = Principals.from_dict(
        {
            "principals": [
                {"client-id": "etl", "client-secret": SECRETS["analyst"], "grants": {"*": "admin"}}
            ]
        }
    )
    with serving(create_app(catalog, auth=principals)) as url:
        theirs = rest.RestCatalog(
            "py",
            uri=url,
            auth={
                "type": "oauth2",
                "oauth2": {
                    "client_id": "etl",
                    "client_secret": SECRETS["analyst"],
                    "token_url": f"{url}{TOKENS}",
                    "scope": "PRINCIPAL_ROLE:ALL",
                },
            },
        )
        assert ("sales",) in theirs.list_namespaces()
        theirs.create_namespace("made_by_pyiceberg")
        assert catalog.namespace_exists("made_by_pyiceberg")
