"""Commits that survive a lost answer: 8 writers make 200 single-row appends through one address
in front of two ``icepark serve`` processes on one PostgreSQL database, and the address loses
the answer of every first send of every change after the server has done it
(:mod:`tests.rest.lossy_proxy`); the repeat goes to the other server.

* 4 writers are icepark's ``RestCatalog``: the server advertises ``idempotency-key-lifetime``,
  so each change carries an ``Idempotency-Key`` and a lost answer is sent again with it.
* 4 writers are raw: icepark's catalog builds each append's requirements and updates, but the
  commit goes out by hand (``requests``, a key of its own, a UUIDv4): sent again with its key
  until answered, then sent once more on purpose, and that replay must answer the same (the
  same ``metadata-location``, or the same 409). Each also reuses a spent key for another body
  once: 409, nothing applied.
* Two writers, one of each kind, share each of 4 tables, so retries meet real conflicts (409:
  the action runs again on the fresh base, with a new key).

Afterwards every append has landed exactly once: each table has 50 snapshots of one row each
and exactly the 50 ``(writer, i)`` tags, as read by icepark from the database and by PyIceberg
from the final metadata file alone. Without the keys each lost commit would be sent again,
find its own snapshot already there, get 409 and append a second time (or, as icepark's client
did before, raise ``CommitStateUnknownError``; ``test_client_idempotency.py`` pins that).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests

import icepark
from icepark.catalog.base import to_identifier
from icepark.errors import CommitFailedError
from icepark.rest.catalog import RestCatalog
from icepark.spec.metadata import TableMetadata, table_metadata_from_dict
from icepark.table.interface import CommitResult
from tests.rest.lossy_proxy import LossyProxy
from tests.rest.serve_process import icepark_servers

StaticTable = pytest.importorskip("pyiceberg.table").StaticTable

WRITERS, APPENDS, TABLES = 8, 25, 4
SCHEMA = pa.schema([("writer", pa.int64()), ("i", pa.int64())])
CLIENT = {"rest.client.base-retry-wait-ms": "5", "rest.client.max-retry-wait-ms": "500"}
RETRIES = {  # conflicts are retried on a fresh base, quickly (the test judges the keys)
    "commit.retry.num-retries": "100",
    "commit.retry.min-wait-ms": "2",
    "commit.retry.max-wait-ms": "50",
    "commit.retry.total-timeout-ms": "120000",
}
DEADLINE_S = 240


def changes(method: str, path: str) -> bool:
    return method in ("POST", "DELETE") and not path.endswith("/metrics")


class RawCommits(RestCatalog):
    """icepark's catalog for loads and for building each commit; the commit itself by hand."""

    def __init__(self, uri: str) -> None:
        super().__init__("raw", {"uri": uri, **CLIENT})
        self.http = requests.Session()
        self.sends = self.replays = self.conflicts = 0

    def commit_table(
        self,
        identifier: tuple[str, ...],
        base: TableMetadata | None,
        base_location: str | None,
        requirements: Sequence[Any],
        updates: Sequence[Any],
    ) -> CommitResult:
        ident = to_identifier(identifier)
        body = json.dumps(
            {
                "identifier": {"namespace": list(ident[:-1]), "name": ident[-1]},
                "requirements": [r.to_json() for r in requirements],
                "updates": [u.to_json() for u in updates],
            }
        )
        url, key = self._table_url(ident), str(uuid.uuid4())
        answer = self._until_answered(url, body, key)
        replay = self._until_answered(url, body, key)  # on purpose: must be the same outcome
        self.replays += 1
        assert replay.status_code == answer.status_code, (replay.text, answer.text)
        if answer.status_code == 409:
            assert answer.json()["error"]["type"] == "CommitFailedException", answer.text
            assert replay.json() == answer.json()
            self.conflicts += 1
            raise CommitFailedError(answer.json()["error"]["message"])
        assert answer.status_code == 200, answer.text
        found = answer.json()
        assert replay.json()["metadata-location"] == found["metadata-location"]
        return CommitResult(table_metadata_from_dict(found["metadata"]), found["metadata-location"])

    def _until_answered(self, url: str, body: str, key: str) -> requests.Response:
        headers = {"Idempotency-Key": key, "Content-Type": "application/json"}
        for _ in range(20):
            self.sends += 1
            try:
                return self.http.post(url, data=body, headers=headers, timeout=60)
            except requests.ConnectionError:
                time.sleep(0.005)  # the answer was lost: ask again with the same key
        raise AssertionError(f"no answer for key {key}")

    def reuse_a_spent_key(self, table: str) -> None:
        """A key already answered, sent with another body: 409, and nothing applied."""
        ident = to_identifier(table)
        url, key = self._table_url(ident), str(uuid.uuid4())
        first = {
            "requirements": [],
            "updates": [{"action": "set-properties", "updates": {"a": "1"}}],
        }
        other = {
            "requirements": [],
            "updates": [{"action": "set-properties", "updates": {"a": "2"}}],
        }
        assert self._until_answered(url, json.dumps(first), key).status_code == 200
        reused = self._until_answered(url, json.dumps(other), key)
        assert reused.status_code == 409, reused.text
        assert reused.json()["error"]["type"] == "IdempotencyKeyReusedException"
        assert self.load_table(ident).properties["a"] == "1"


def _write(catalog: RestCatalog, table: str, writer: int, start: threading.Barrier) -> None:
    handle = catalog.load_table(table)
    start.wait(60)
    for i in range(APPENDS):
        handle.append(pa.table({"writer": [writer], "i": [i]}, schema=SCHEMA))


@pytest.mark.postgres
def test_lost_answers_of_200_appends_through_two_servers_land_once(
    tmp_path: Path, postgres_url: str
) -> None:
    namespace = f"lost_{uuid.uuid4().hex[:8]}"  # the database outlives the test
    tables = [f"{namespace}.t{n}" for n in range(TABLES)]
    warehouse = tmp_path / "wh"
    with ExitStack() as stack:
        logs = [tmp_path / f"serve-{s}.log" for s in range(2)]
        urls = stack.enter_context(icepark_servers(postgres_url, warehouse, logs))
        proxy = stack.enter_context(LossyProxy(urls, changes))
        setup = RestCatalog("setup", {"uri": proxy.uri, **CLIENT})
        setup.create_namespace(namespace)  # its answer lost too, as every create's
        for table in tables:
            setup.create_table(table, SCHEMA, properties=RETRIES)
        icepark_writers = [RestCatalog(f"w{w}", {"uri": proxy.uri, **CLIENT}) for w in range(4)]
        raw_writers = [RawCommits(proxy.uri) for _ in range(4)]
        writers: list[RestCatalog] = [*icepark_writers, *raw_writers]
        raw_writers[0].reuse_a_spent_key(tables[0])
        start = threading.Barrier(WRITERS)
        failures: list[BaseException] = []

        def run(w: int) -> None:
            try:
                _write(writers[w], tables[w % TABLES], w, start)
            except BaseException as exc:  # reported below
                failures.append(exc)
                start.abort()

        began = time.monotonic()
        threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(1.0, began + DEADLINE_S - time.monotonic()))
        elapsed = time.monotonic() - began
        assert not any(t.is_alive() for t in threads), f"writers still running after {elapsed}s"
        assert not failures, failures[:3]
        passed = list(proxy.passed)

    # every first answer of every change was lost, after the server had done the change
    commits = [
        p
        for p in passed
        if p.method == "POST" and p.path.endswith(tuple(t.split(".")[1] for t in tables))
    ]
    keys = {p.key for p in commits}
    assert None not in keys
    lost = [p for p in commits if p.lost]
    assert len(lost) == len(keys) >= WRITERS * APPENDS
    assert all(p.status in (200, 409) for p in lost)  # the server had answered
    served = {k: {p.server for p in commits if p.key == k} for k in keys}
    assert all(len(servers) == 2 for servers in served.values())  # repeats: the other server
    assert sum(r.replays for r in raw_writers) >= 4 * APPENDS
    # ...and every append landed exactly once
    direct = icepark.load_catalog(uri=postgres_url, warehouse=str(warehouse))
    for n, table in enumerate(tables):
        loaded = direct.load_table(table)
        expected = sorted((w, i) for w in (n, n + 4) for i in range(APPENDS))
        appends = [s for s in loaded.snapshots() if (s.summary or {}).get("operation") == "append"]
        assert len(appends) == 2 * APPENDS, table
        assert all((s.summary or {}).get("added-records") == "1" for s in appends)
        rows = loaded.scan().to_arrow()
        assert sorted(zip(rows["writer"].to_pylist(), rows["i"].to_pylist())) == expected
        reference = StaticTable.from_metadata(loaded.metadata_location).scan().to_arrow()
        assert sorted(zip(reference["writer"].to_pylist(), reference["i"].to_pylist())) == expected
    conflicts = sum(r.conflicts for r in raw_writers)
    print(
        f"{WRITERS * APPENDS} appends, {len(lost)} lost answers, {conflicts} raw conflicts, "
        f"through 2 servers in {elapsed:.1f} s"
    )
