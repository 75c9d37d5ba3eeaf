"""Concurrent appends through the server: PyIceberg clients in threads race on one table; each
lost race is a 409 (the server's requirements check and the catalog's atomic swap), the client
retries on a fresh load, and every append lands exactly once."""

from __future__ import annotations

import json
import logging
import threading

import pyarrow as pa
import pytest

from icepark.catalog.base import Catalog
from icepark.rest import create_app
from tests.rest.conftest import serving

pyiceberg_catalog = pytest.importorskip("pyiceberg.catalog")
CommitFailedException = pytest.importorskip("pyiceberg.exceptions").CommitFailedException

WRITERS, APPENDS = 4, 5


def test_concurrent_appends_all_land(catalog: Catalog, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="icepark.rest.server.access")
    catalog.create_namespace("db")
    catalog.create_table("db.t", pa.schema([("writer", pa.int64()), ("n", pa.int64())]))
    conflicts = [0] * WRITERS
    errors: list[BaseException] = []
    with serving(create_app(catalog)) as url:

        def writer(w: int) -> None:
            try:
                rc = pyiceberg_catalog.load_catalog(f"w{w}", type="rest", uri=url)
                for n in range(APPENDS):
                    while True:
                        table = rc.load_table("db.t")
                        try:
                            table.append(pa.table({"writer": [w], "n": [n]}))
                            break
                        except CommitFailedException:
                            conflicts[w] += 1
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    assert not errors, errors
    table = catalog.load_table("db.t")
    rows = sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())
    assert rows == [(w, n) for w in range(WRITERS) for n in range(APPENDS)]
    assert len(table.snapshots()) == WRITERS * APPENDS
    commits = [
        json.loads(r.getMessage())
        for r in caplog.records
        if r.name == "icepark.rest.server.access" and '"commit_table"' in r.getMessage()
    ]
    statuses = [c["status"] for c in commits]
    # the races happened (409s, retried by PyIceberg or here) and every append landed once
    assert statuses.count(200) == WRITERS * APPENDS
    assert set(statuses) <= {200, 409} and statuses.count(409) + sum(conflicts) > 0
