"""icepark's REST client with ``Idempotency-Key``: a key (UUIDv7) on every change when the server
advertises ``idempotency-key-lifetime``, none on reads or otherwise; a change whose answer is
lost (the proxy of :mod:`tests.rest.lossy_proxy` closes the connection after the server has
answered), or whose request timed out, is sent again with its key and happens exactly once;
without an advertised lifetime a lost commit is ``CommitStateUnknownError``, as before."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icepark
from icepark.catalog.base import Catalog
from icepark.errors import CommitStateUnknownError
from icepark.rest import create_app
from icepark.rest.catalog import RestCatalog
from icepark.rest.http import uuid7
from tests.rest.conftest import serving
from tests.rest.lossy_proxy import LossyProxy

FAST = {"rest.client.base-retry-wait-ms": "5", "rest.client.max-retry-wait-ms": "2000"}
SCHEMA = icepark.schema(("id", "long", True))


def changes(method: str, path: str) -> bool:
    """The catalog's changes (a table's metrics reports are not)."""
    return method in ("POST", "DELETE") and not path.endswith("/metrics")


@contextmanager
def through_proxy(
    catalog: Catalog, lose: Callable[[str, str], bool], **app_options: Any
) -> Iterator[LossyProxy]:
    with serving(create_app(catalog, **app_options)) as url, LossyProxy([url], lose) as proxy:
        yield proxy


def _rows(table: icepark.Table) -> list[int]:
    return sorted(table.refresh().scan().to_arrow()["id"].to_pylist())


def test_uuid7_is_a_version_7_uuid_in_time_order() -> None:
    keys = [uuid7() for _ in range(50)]
    assert all(k.version == 7 and k.variant == uuid.RFC_4122 for k in keys)
    assert len(set(keys)) == 50
    millis = [k.int >> 80 for k in keys]
    assert millis == sorted(millis) and abs(millis[0] - time.time() * 1000) < 5000


def test_a_key_on_every_change_none_on_reads_and_none_unadvertised(catalog: Catalog) -> None:
    for advertised in (True, False):
        lifetime = "PT30M" if advertised else None
        with through_proxy(catalog, lambda m, p: False, idempotency_key_lifetime=lifetime) as proxy:
            rc = RestCatalog("rc", {"uri": proxy.uri, **FAST})
            ns = f"db{int(advertised)}"
            rc.create_namespace(ns)
            rc.update_namespace_properties(ns, updates={"a": "1"})
            table = rc.create_table(f"{ns}.t", SCHEMA)
            table.append(pa.table({"id": [1]}))
            assert _rows(rc.load_table(f"{ns}.t")) == [1]
            rc.rename_table(f"{ns}.t", f"{ns}.u")
            rc.drop_table(f"{ns}.u")
            rc.drop_namespace(ns)
        catalog_changes = [p for p in proxy.passed if changes(p.method, p.path)]
        assert len(catalog_changes) == 7
        reads = [p for p in proxy.passed if p.method in ("GET", "HEAD")]
        assert reads and all(p.key is None for p in reads)
        assert all(p.key is None for p in proxy.passed if p.path.endswith("/metrics"))
        if advertised:
            keys = [p.key for p in catalog_changes]
            assert all(k is not None and uuid.UUID(k).version == 7 for k in keys)
            assert len(set(keys)) == len(keys)  # one key per operation
        else:
            assert all(p.key is None for p in catalog_changes)


def test_every_change_survives_a_lost_answer(catalog: Catalog, warehouse: Path) -> None:
    with through_proxy(catalog, changes) as proxy:
        rc = RestCatalog("rc", {"uri": proxy.uri, **FAST})
        rc.create_namespace("db")
        rc.update_namespace_properties("db", updates={"owner": "etl"})
        table = rc.create_table("db.t", SCHEMA)
        for i in range(3):
            table.append(pa.table({"id": [i]}))
        staged = rc.create_table_transaction("db.s", SCHEMA)  # stage-create, then one commit
        staged.append(pa.table({"id": [10, 11]}))
        staged.commit_transaction()
        t, s = rc.load_table("db.t"), rc.load_table("db.s")
        both = [t.transaction(), s.transaction()]
        both[0].append(pa.table({"id": [3]}))
        both[1].append(pa.table({"id": [12]}))
        rc.commit_transaction(both)  # POST /transactions/commit
        rc.register_table("db.r", catalog.load_table("db.t").metadata_location)
        rc.rename_table("db.r", "db.r2")
        rc.drop_table("db.r2")
        view = rc.create_view("db.v", SCHEMA, "SELECT id FROM db.t")
        view.replace("SELECT id FROM db.s", SCHEMA)
        rc.rename_view("db.v", "db.w")
        rc.drop_view("db.w")
    # each change happened once although every first answer was lost
    lost = proxy.lost()
    assert len(lost) == sum(1 for p in proxy.passed if changes(p.method, p.path)) // 2
    assert len(lost) == 16 and all(p.key for p in lost)
    assert all(p.status < 300 for p in lost)  # they had all succeeded
    t, s = catalog.load_table("db.t"), catalog.load_table("db.s")
    assert _rows(t) == [0, 1, 2, 3] and len(t.snapshots()) == 4
    assert _rows(s) == [10, 11, 12] and len(s.snapshots()) == 2
    assert catalog.load_namespace_properties("db")["owner"] == "etl"
    assert catalog.list_tables("db") == [("db", "s"), ("db", "t")]
    assert catalog.list_views("db") == []


def test_unadvertised_a_lost_commit_is_unknown_and_landed_once(catalog: Catalog) -> None:
    commits = lambda m, p: m == "POST" and p.endswith("/tables/t")  # noqa: E731
    with through_proxy(catalog, commits, idempotency_key_lifetime=None) as proxy:
        rc = RestCatalog("rc", {"uri": proxy.uri, **FAST})
        rc.create_namespace("db")
        table = rc.create_table("db.t", SCHEMA)
        with pytest.raises(CommitStateUnknownError, match="connection"):
            table.append(pa.table({"id": [1]}))
    assert [p.key for p in proxy.lost()] == [None]
    assert _rows(catalog.load_table("db.t")) == [1]  # it had landed: once


def test_a_key_is_sent_within_the_retry_budget_then_the_state_is_unknown(catalog: Catalog) -> None:
    class LosesAll(LossyProxy):  # every answer of a commit lost, repeats too
        def _choose(self, key: str | None, path: str, method: str) -> tuple[int, bool]:
            return 0, method == "POST" and path.endswith("/tables/t")

    with serving(create_app(catalog)) as url, LosesAll([url], changes) as proxy:
        rc = RestCatalog("rc", {"uri": proxy.uri, **FAST, "rest.client.max-retries": "3"})
        rc.create_namespace("db")
        table = rc.create_table("db.t", SCHEMA)
        with pytest.raises(CommitStateUnknownError, match="sent 4 times"):
            table.append(pa.table({"id": [1]}))
    sends = [p for p in proxy.passed if p.method == "POST" and p.path.endswith("/tables/t")]
    assert len(sends) == 4 and len({p.key for p in sends}) == 1
    assert all(p.status == 200 for p in sends)  # replays of the first outcome
    assert len(catalog.load_table("db.t").snapshots()) == 1


def test_a_timed_out_commit_is_sent_again_and_answered_when_the_first_ends(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = type(catalog).commit_table
    runs = []

    def slow(self: Catalog, *args: Any, **kw: Any) -> Any:
        runs.append(1)
        time.sleep(1.5)
        return real(self, *args, **kw)

    with through_proxy(catalog, lambda m, p: False, idempotency_wait_seconds=0.1) as proxy:
        rc = RestCatalog(
            "rc",
            {
                "uri": proxy.uri,
                **FAST,
                "rest.client.socket-timeout-ms": "400",  # gives up on the first answer
                "rest.client.max-retries": "10",
                "rest.client.max-retry-wait-ms": "300",
            },
        )
        rc.create_namespace("db")
        table = rc.create_table("db.t", SCHEMA)
        monkeypatch.setattr(type(catalog), "commit_table", slow)
        table.append(pa.table({"id": [7]}))
    sends = [p for p in proxy.passed if p.method == "POST" and p.path.endswith("/tables/t")]
    # the first timed out, then "still running" (409) until it ended, then its outcome
    assert len({p.key for p in sends}) == 1 and len(sends) >= 3
    assert 409 in {p.status for p in sends} and sends[-1].status == 200
    assert len(runs) == 1 and _rows(catalog.load_table("db.t")) == [7]
