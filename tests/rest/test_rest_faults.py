"""The REST client against a server that fails on purpose (tests/rest_fault_server.py): retries
only where safe, typed errors, unknown commit states that delete nothing, tokens, config."""

from __future__ import annotations

import logging
import socket
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from rest_fault_server import FaultServer, Rule

import icepark
from icepark.errors import (
    CatalogConfigError,
    CommitFailedError,
    CommitStateUnknownError,
    ForbiddenError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NotAuthorizedError,
    RestError,
    ServerError,
    ServiceUnavailableError,
    UnsupportedOperationError,
)
from icepark.rest.catalog import RestCatalog
from icepark.rest.http import RestClient

FAST = {"rest.client.base-retry-wait-ms": "1", "rest.client.max-retry-wait-ms": "2000"}
SCHEMA = icepark.schema(("id", "long", True), ("v", "string"))


def _commits(fault: FaultServer) -> list[object]:
    """The commit requests of table db.t (its metrics reports, sent from a thread of their
    own after scans and commits, are not commits)."""
    return [s for s in fault.requests_to("POST", "/tables/t") if s.path.endswith("/tables/t")]


def _catalog(fault: FaultServer, **props: str) -> RestCatalog:
    return RestCatalog("rc", {"uri": fault.uri, **FAST, **props})


def _table(fault: FaultServer, **props: str) -> icepark.Table:
    catalog = _catalog(fault, **props)
    return catalog.create_table("db.t", SCHEMA)


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_429_waits_for_retry_after_then_succeeds(fault: FaultServer) -> None:
    catalog = _catalog(fault)
    fault.add(Rule("GET", "/namespaces/db", 429, {"Retry-After": "0.3"}, times=2))
    started = time.monotonic()
    assert catalog.load_namespace_properties("db") == {"exists": "true"}  # SqlCatalog marks it
    assert time.monotonic() - started >= 0.6
    assert len(fault.requests_to("GET", "/namespaces/db")) == 3


def test_503_retries_are_bounded_in_number_and_wait(fault: FaultServer) -> None:
    catalog = _catalog(
        fault, **{"rest.client.max-retries": "3", "rest.client.max-retry-wait-ms": "50"}
    )
    fault.add(Rule("GET", "/namespaces/db", 503, {"Retry-After": "3600"}, times=100))
    started = time.monotonic()
    with pytest.raises(ServiceUnavailableError, match="load namespace db"):
        catalog.load_namespace_properties("db")
    assert time.monotonic() - started < 2
    assert len(fault.requests_to("GET", "/namespaces/db")) == 4  # one try and three retries


def test_500_on_commit_is_unknown_state_and_keeps_the_written_files(
    fault: FaultServer, tmp_path: Path
) -> None:
    table = _table(fault)
    before = _files(tmp_path / "server" / "wh")
    fault.add(Rule("POST", "/tables/t", 500, times=1))
    with pytest.raises(CommitStateUnknownError, match=r"commit to table db\.t"):
        table.append(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    written = _files(tmp_path / "server" / "wh") - before
    assert any(p.suffix == ".parquet" for p in written), written
    assert any(p.name.startswith("snap-") for p in written), written
    assert all(p.exists() for p in written)
    assert len(_commits(fault)) == 1  # never retried


def test_503_on_commit_is_not_retried(fault: FaultServer) -> None:
    table = _table(fault)
    fault.add(Rule("POST", "/tables/t", 503, {"Retry-After": "0"}, times=1))
    with pytest.raises(CommitStateUnknownError):
        table.append(pa.table({"id": [1], "v": ["a"]}))
    assert len(_commits(fault)) == 1


def test_connection_dropped_after_the_commit_landed(fault: FaultServer, tmp_path: Path) -> None:
    table = _table(fault)
    before = _files(tmp_path / "server" / "wh")
    fault.add(Rule("POST", "/tables/t", action="apply-then-drop"))
    with pytest.raises(CommitStateUnknownError, match="connection"):
        table.append(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    written = _files(tmp_path / "server" / "wh") - before
    assert written and all(p.exists() for p in written)
    # it did land: the files the client wrote are the table's now, and all still there
    fresh = _catalog(fault).load_table("db.t")
    snapshot = fresh.current_snapshot()
    assert snapshot is not None
    assert Path(snapshot.manifest_list.removeprefix("file:")).exists()
    assert any(p.suffix == ".parquet" for p in written)
    assert fresh.scan().to_arrow().num_rows == 3
    assert len(_commits(fault)) == 1


def test_a_dropped_read_is_retried(fault: FaultServer) -> None:
    catalog = _catalog(fault)
    catalog.create_table("db.t", SCHEMA)
    fault.add(Rule("GET", "/tables/t", action="drop", times=1))
    assert catalog.load_table("db.t").schema().find_field("id").field_id == 1
    assert len(fault.requests_to("GET", "/tables/t")) == 2


def test_a_dropped_create_is_not_retried(fault: FaultServer) -> None:
    catalog = _catalog(fault)
    fault.add(Rule("POST", "/namespaces", action="drop", times=1))
    with pytest.raises(RestError, match="did not answer"):
        catalog.create_namespace("other")
    assert len(fault.requests_to("POST", "/namespaces")) == 1


def test_a_commit_that_could_not_connect_is_retried_and_not_unknown() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nobody listens there
    client = RestClient(f"http://127.0.0.1:{port}", {**FAST, "rest.client.max-retries": "2"})
    with pytest.raises(RestError, match="did not answer") as caught:
        client.call(
            "POST", client.url("namespaces", "db", "tables", "t"), "commit", errors="commit"
        )
    assert not isinstance(caught.value, CommitStateUnknownError)


def test_404_409_403_map_to_typed_errors(fault: FaultServer) -> None:
    catalog = _catalog(fault)
    with pytest.raises(NoSuchTableError, match=r"load table db\.nope"):
        catalog.load_table("db.nope")
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties("nope")
    assert catalog.table_exists("db.nope") is False
    fault.add(Rule("POST", "/namespaces", 403))
    with pytest.raises(ForbiddenError, match="Forbidden to create namespace secret_ns"):
        catalog.create_namespace("secret_ns")
    fault.add(Rule("GET", "/namespaces/db", 502))
    with pytest.raises(ServerError, match="HTTP 502"):
        catalog.load_namespace_properties("db")


def test_a_conflicting_commit_is_commit_failed(fault: FaultServer) -> None:
    first = _table(fault, **{})
    second = _catalog(fault).load_table("db.t")
    first.set_properties({"a": "1"})
    from icepark.spec.updates import AssertRefSnapshotId, AssertTableUUID, SetPropertiesUpdate

    stale = [AssertTableUUID(second.metadata.table_uuid), AssertRefSnapshotId("main", 1)]
    with pytest.raises(CommitFailedError):
        second.commit(stale, [SetPropertiesUpdate({"b": "2"})])
    # transactions retry the conflict on fresh metadata: both appends land
    first.append(pa.table({"id": [1], "v": ["a"]}))
    second.append(pa.table({"id": [2], "v": ["b"]}))
    assert _catalog(fault).load_table("db.t").scan().to_arrow().num_rows == 2


def test_oauth_client_credentials_refresh_on_401_and_before_expiry(fault: FaultServer) -> None:
    fault.require_token = True
    fault.token_lifetime = 1
    catalog = _catalog(fault, credential="client:supersecret", scope="lake", audience="aud")
    form = fault.token_forms[0]
    assert form["grant_type"] == "client_credentials" and form["client_id"] == "client"
    assert form["scope"] == "lake" and form["audience"] == "aud"
    assert fault.tokens_issued == ["tok-1"]
    fault.revoked.add("tok-1")  # the server stops accepting it: 401, one refresh, one retry
    assert catalog.namespace_exists("db")
    assert fault.tokens_issued == ["tok-1", "tok-2"]
    time.sleep(1.0)  # within the last tenth of its life: renewed before it is sent
    assert catalog.namespace_exists("db")
    assert fault.tokens_issued == ["tok-1", "tok-2", "tok-3"]
    assert fault.seen[-1].headers["Authorization"] == "Bearer tok-3"
    assert all(s.headers.get("Authorization") != "Bearer tok-1" for s in fault.seen[-2:])


def test_bearer_token_401_is_not_retried(fault: FaultServer) -> None:
    fault.require_token = True
    with pytest.raises(NotAuthorizedError, match="read the catalog configuration"):
        _catalog(fault, token="not-a-token")
    assert len(fault.requests_to("GET", "/v1/config")) == 1


def test_secrets_stay_out_of_errors_reprs_and_logs(
    fault: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(NotAuthorizedError) as refused:
        _catalog(fault, credential="client:wrongsecret")
    assert "wrongsecret" not in str(refused.value) and "bad client" in str(refused.value)
    fault.require_token = True
    catalog = _catalog(
        fault, credential="client:supersecret", token="", **{"header.X-Api-Key": "k3y-s3cret"}
    )
    fault.add(Rule("POST", "/namespaces", 403))
    with pytest.raises(ForbiddenError) as forbidden:
        catalog.create_namespace("x")
    table = catalog.create_table("db.t", SCHEMA)
    fault.add(Rule("POST", "/tables/t", 500))
    with pytest.raises(CommitStateUnknownError) as unknown:
        table.set_properties({"a": "b"})
    assert fault.seen[-1].headers["X-Api-Key"] == "k3y-s3cret"
    texts = [str(forbidden.value), str(unknown.value), repr(catalog), repr(catalog._client),
             repr(catalog._client.auth), caplog.text]  # fmt: skip
    for secret in ("supersecret", "wrongsecret", "tok-1", "k3y-s3cret"):
        assert all(secret not in text for text in texts), secret
    assert "POST" in caplog.text  # the log did record the requests


def test_config_defaults_user_overrides_and_prefix(fault: FaultServer) -> None:
    fault.defaults = {"a": "server-default", "b": "server-default", "c": "server-default"}
    fault.overrides = {"b": "server-override", "prefix": "ws1"}
    catalog = _catalog(fault, a="user", b="user", warehouse="lake")
    assert (catalog.properties["a"], catalog.properties["b"]) == ("user", "server-override")
    assert catalog.properties["c"] == "server-default"
    assert fault.seen[0].path == "/v1/config"
    catalog.create_table("db.t", SCHEMA)
    assert fault.requests_to("POST", "/v1/ws1/namespaces/db/tables")


def test_an_endpoint_the_server_does_not_offer_fails_before_any_request(
    fault: FaultServer,
) -> None:
    fault.endpoints = ["GET /v1/{prefix}/namespaces/{namespace}"]
    catalog = _catalog(fault)
    sent = len(fault.seen)
    with pytest.raises(
        UnsupportedOperationError, match=r"does not offer POST /v1/\{prefix\}/tables/rename"
    ):
        catalog.rename_table("db.a", "db.b")
    with pytest.raises(UnsupportedOperationError, match=r"create table db\.t"):
        catalog.create_table("db.t", SCHEMA)
    assert len(fault.seen) == sent
    # without HEAD on offer, exists falls back to GET
    assert catalog.namespace_exists("db")
    assert fault.seen[-1].method == "GET"


def test_access_delegation_header_and_vended_credentials(fault: FaultServer) -> None:
    fault.table_config = {"s3.region": "eu-west-1"}
    catalog = _catalog(fault)
    table = catalog.create_table("db.t", SCHEMA)
    assert fault.seen[-1].headers["X-Iceberg-Access-Delegation"] == "vended-credentials"
    fault.storage_credentials = [
        {"prefix": "file:", "config": {"s3.access-key-id": "short"}},
        {"prefix": table.location[:-2], "config": {"s3.access-key-id": "longer"}},
        {"prefix": "s3://elsewhere", "config": {"s3.access-key-id": "other"}},
    ]
    loaded = catalog.load_table("db.t")
    props = loaded.io.properties  # type: ignore[attr-defined]
    assert props["s3.region"] == "eu-west-1" and props["s3.access-key-id"] == "longer"
    assert "uri" not in props and "credential" not in props
    off = _catalog(fault, **{"header.X-Iceberg-Access-Delegation": ""})
    off.load_table("db.t")
    assert "X-Iceberg-Access-Delegation" not in fault.seen[-1].headers


def test_sigv4_signs_every_request(fault: FaultServer) -> None:
    pytest.importorskip("botocore")
    catalog = _catalog(
        fault,
        token="bearer-token",
        **{
            "rest.sigv4-enabled": "true",
            "rest.signing-region": "us-east-1",
            "rest.signing-name": "glue",
            "rest.access-key-id": "AKIDEXAMPLE",
            "rest.secret-access-key": "sigv4-secret",
        },
    )
    catalog.create_namespace("signed")
    headers = fault.seen[-1].headers
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-east-1/glue/aws4_request" in headers["Authorization"]
    assert headers["Original-Authorization"] == "Bearer bearer-token"
    assert "X-Amz-Date" in headers and "sigv4-secret" not in repr(catalog._client.auth)


def test_sigv4_without_botocore_is_a_clear_error(
    fault: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "botocore.auth", None)
    with pytest.raises(CatalogConfigError, match="needs botocore"):
        _catalog(fault, **{"rest.sigv4-enabled": "true", "rest.signing-region": "us-east-1"})


def test_load_catalog_guesses_rest_and_reads_the_credential_from_env_or_cli(
    fault: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault.require_token = True
    monkeypatch.setenv("ICEPARK_CONFIG", "/nonexistent/icepark.yaml")
    monkeypatch.setenv("ICEPARK_CATALOG_CREDENTIAL", "client:supersecret")
    catalog = icepark.load_catalog(uri=fault.uri)
    assert isinstance(catalog, RestCatalog) and catalog.namespace_exists("db")
    assert fault.tokens_issued == ["tok-1"]
    monkeypatch.delenv("ICEPARK_CATALOG_CREDENTIAL")
    from click.testing import CliRunner

    from icepark.cli.main import cli

    args = ["--uri", fault.uri, "--credential", "client:supersecret", "namespaces"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "db" in result.output and fault.tokens_issued == ["tok-1", "tok-2"]
    result = CliRunner().invoke(cli, ["--type", "rest", "--uri", fault.uri, "namespaces"])
    assert (
        result.exit_code == 1
        and "Not authorized to read the catalog configuration" in result.output
    )


def test_snapshot_loading_mode_refs_asks_for_refs_only(fault: FaultServer) -> None:
    _catalog(fault).create_table("db.t", SCHEMA)
    _catalog(fault, **{"snapshot-loading-mode": "refs"}).load_table("db.t")
    assert fault.requests_to("GET", "/tables/t")[-1].query == "snapshots=refs"
    _catalog(fault).load_table("db.t")
    assert fault.requests_to("GET", "/tables/t")[-1].query == ""
