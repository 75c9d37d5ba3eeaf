"""Views and multi-table commits of the REST client against a server that fails on purpose
(tests/rest_fault_server.py): endpoints the server does not offer, typed view errors, and
multi-table commits whose outcome is unknown deleting nothing."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from rest_fault_server import FaultServer, Rule

import icepark
from icepark.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    NoSuchNamespaceError,
    NoSuchViewError,
    UnsupportedOperationError,
    ViewAlreadyExistsError,
)
from icepark.rest.catalog import DEFAULT_ENDPOINTS, RestCatalog
from icepark.rest.views import VIEW_ENDPOINTS
from icepark.table.transaction import Transaction

FAST = {"rest.client.base-retry-wait-ms": "1", "rest.client.max-retry-wait-ms": "2000"}
SCHEMA = icepark.schema(("id", "long", True), ("v", "string"))
VIEW = "/v1/{prefix}/namespaces/{namespace}/views/{view}"


def _catalog(fault: FaultServer, **props: str) -> RestCatalog:
    return RestCatalog("rc", {"uri": fault.uri, **FAST, **props})


def _parquet(root: Path) -> set[Path]:
    return set(root.rglob("*.parquet"))


def _two_transactions(catalog: RestCatalog) -> list[Transaction]:
    catalog.create_table("db.a", SCHEMA)
    catalog.create_table("db.b", SCHEMA)
    txs = []
    for name in ("db.a", "db.b"):
        tx = catalog.load_table(name).transaction()
        tx.append(pa.table({"id": [1, 2], "v": ["x", "y"]}))
        txs.append(tx)
    return txs


def test_views_fail_clearly_when_the_server_lists_none(fault: FaultServer) -> None:
    catalog = _catalog(fault)  # the server lists no endpoints: Java's defaults, no views
    for call in (
        lambda: catalog.load_view("db.v"),
        lambda: catalog.list_views("db"),
        lambda: catalog.create_view("db.v", SCHEMA, "SELECT 1"),
        lambda: catalog.drop_view("db.v"),
        lambda: catalog.rename_view("db.v", "db.w"),
    ):
        with pytest.raises(UnsupportedOperationError, match=r"does not offer .*views"):
            call()
    assert not [s for s in fault.seen if "/views" in s.path]
    # a server that says it supports views (Java's view-endpoints-supported) gets them
    offered = _catalog(fault, **{"view-endpoints-supported": "true"})
    assert VIEW_ENDPOINTS <= offered.endpoints


def test_view_errors_are_typed(fault: FaultServer) -> None:
    fault.endpoints = sorted(DEFAULT_ENDPOINTS | VIEW_ENDPOINTS)
    catalog = _catalog(fault)
    missing = {"error": {"message": "no v", "type": "NoSuchViewException", "code": 404}}
    fault.add(Rule("GET", "/views/v", 404, body=missing))
    with pytest.raises(NoSuchViewError, match="no v"):
        catalog.load_view("db.v")
    no_ns = {"error": {"message": "no ns", "type": "NoSuchNamespaceException", "code": 404}}
    fault.add(Rule("GET", "/views/v", 404, body=no_ns))
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_view("db.v")
    fault.add(Rule("POST", "/namespaces/db/views", 409))
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view("db.v", SCHEMA, "SELECT 1")
    # no HEAD offered: view_exists loads, and a 404 is False
    fault.add(Rule("GET", "/views/v", 404, body=missing))
    assert not catalog.view_exists("db.v")


def test_view_commit_conflict_and_unknown_state(fault: FaultServer) -> None:
    fault.endpoints = sorted(DEFAULT_ENDPOINTS | VIEW_ENDPOINTS)
    catalog = _catalog(fault)
    fault.add(Rule("POST", "/views/v", 409))
    with pytest.raises(CommitFailedError):
        catalog.commit_view("db.v", [], [])
    fault.add(Rule("POST", "/views/v", 503, times=10))
    with pytest.raises(CommitStateUnknownError):
        catalog.commit_view("db.v", [], [])
    assert len(fault.requests_to("POST", "/views/v")) == 2  # a commit's 503 is not retried


def test_multi_table_commit_lands_through_the_endpoint(fault: FaultServer) -> None:
    catalog = _catalog(fault)
    txs = _two_transactions(catalog)
    catalog.commit_transaction(txs)
    assert len(fault.requests_to("POST", "/transactions/commit")) == 1
    for name in ("db.a", "db.b"):
        assert fault.backend.load_table(name).scan().to_arrow().num_rows == 2
    assert [tx.table.current_snapshot() is not None for tx in txs] == [True, True]


def test_multi_table_commit_500_deletes_nothing(fault: FaultServer, tmp_path: Path) -> None:
    catalog = _catalog(fault)
    root = tmp_path / "server" / "wh"
    txs = _two_transactions(catalog)
    staged = _parquet(root)
    assert len(staged) == 2
    fault.add(Rule("POST", "/transactions/commit", 500))
    with pytest.raises(CommitStateUnknownError, match="HTTP 500"):
        catalog.commit_transaction(txs)
    assert _parquet(root) == staged and all(p.exists() for p in staged)
    assert len(fault.requests_to("POST", "/transactions/commit")) == 1


def test_multi_table_commit_cut_off_after_landing(fault: FaultServer, tmp_path: Path) -> None:
    catalog = _catalog(fault)
    root = tmp_path / "server" / "wh"
    txs = _two_transactions(catalog)
    staged = _parquet(root)
    fault.add(Rule("POST", "/transactions/commit", action="apply-then-drop"))
    with pytest.raises(CommitStateUnknownError, match="connection"):
        catalog.commit_transaction(txs)
    assert all(p.exists() for p in staged)
    for name in ("db.a", "db.b"):  # it did land, with the files kept
        assert fault.backend.load_table(name).scan().to_arrow().num_rows == 2


def test_multi_table_commit_409_deletes_the_staged_files(
    fault: FaultServer, tmp_path: Path
) -> None:
    catalog = _catalog(fault)
    root = tmp_path / "server" / "wh"
    before = _parquet(root)
    txs = _two_transactions(catalog)
    assert len(_parquet(root) - before) == 2
    fault.add(Rule("POST", "/transactions/commit", 409))
    with pytest.raises(CommitFailedError):
        catalog.commit_transaction(txs)
    assert _parquet(root) == before


def test_multi_table_commit_not_offered(fault: FaultServer) -> None:
    fault.endpoints = sorted(DEFAULT_ENDPOINTS - {"POST /v1/{prefix}/transactions/commit"})
    catalog = _catalog(fault)
    with pytest.raises(UnsupportedOperationError, match="transactions/commit"):
        catalog.commit_tables([("db.a", [], [])])
    catalog.create_table("db.a", SCHEMA)
    tx = catalog.load_table("db.a").transaction()
    tx.set_properties(k="v")
    with pytest.raises(UnsupportedOperationError, match="transactions/commit"):
        catalog.commit_transaction([tx])
    assert not fault.requests_to("POST", "/transactions")
