"""The server's cache of metadata by file location: answers stay those of the catalog's current
pointer when another writer (another server process, or the catalog used directly) moves it."""

from __future__ import annotations

import pyarrow as pa
from fastapi.testclient import TestClient

from icepark.catalog.base import Catalog
from icepark.rest import create_app
from icepark.rest.server.metadata_cache import MetadataCache


def test_answers_follow_the_pointer(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    client = TestClient(create_app(catalog))
    first = client.get("/v1/namespaces/db/tables/t").json()
    assert first["metadata"]["snapshots"] == [] and first["config"] == {}
    table.append(pa.table({"id": [1]}))  # not through the server
    second = client.get("/v1/namespaces/db/tables/t").json()
    assert second["metadata-location"] == catalog.metadata_location("db.t")
    assert len(second["metadata"]["snapshots"]) == 1
    # a commit whose requirement the direct append broke is refused, not checked against the
    # metadata the server had cached
    stale = {
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
    }
    r = client.post("/v1/namespaces/db/tables/t", json=stale)
    assert r.status_code == 409, r.text
    fresh = {"requirements": [], "updates": stale["updates"]}
    r = client.post("/v1/namespaces/db/tables/t", json=fresh)
    assert r.status_code == 200 and r.json()["metadata"]["properties"]["k"] == "v"
    assert len(r.json()["metadata"]["snapshots"]) == 1
    loaded = client.get("/v1/namespaces/db/tables/t").json()
    assert loaded["metadata-location"] == r.json()["metadata-location"]
    assert catalog.load_table("db.t").metadata.properties["k"] == "v"
    refs = client.get("/v1/namespaces/db/tables/t", params={"snapshots": "refs"}).json()
    assert len(refs["metadata"]["snapshots"]) == 1


def test_cache_is_bounded(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    md = catalog.create_table("db.t", pa.schema([("id", pa.int64())])).metadata
    cache = MetadataCache(size=2)
    for i in range(5):
        cache.remember(f"loc{i}", md)
        cache.rendered(f"loc{i}", "all", lambda: md, lambda m, s: {"n": s})
    assert cache.parsed("loc0") is None and cache.parsed("loc4") is md
    assert len(cache._parsed) == 2 and len(cache._rendered) == 2
