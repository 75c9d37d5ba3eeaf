"""A table created through the REST server gets the properties Java's catalogs store in every
new table (``TableMetadata.newTableMetadata``): without ``write.parquet.compression-codec`` a
Java writer falls back to gzip, so Spark on an icepark-served table wrote gzip files where the
same statements on Java's own catalogs write zstd (found by tests/rest/test_java_parity.py)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from icepark.catalog.base import Catalog
from icepark.rest import create_app

SCHEMA = {
    "type": "struct",
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}
CODEC = "write.parquet.compression-codec"


@pytest.fixture
def client(catalog: Catalog) -> TestClient:
    catalog.create_namespace("db")
    return TestClient(create_app(catalog), raise_server_exceptions=False)


def test_create_stores_javas_new_table_defaults(client: TestClient, catalog: Catalog) -> None:
    r = client.post("/v1/namespaces/db/tables", json={"name": "t", "schema": SCHEMA})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["properties"] == {CODEC: "zstd"}
    assert catalog.load_table("db.t").properties == {CODEC: "zstd"}


def test_the_request_overrides_the_defaults(client: TestClient, catalog: Catalog) -> None:
    body = {
        "name": "t",
        "schema": SCHEMA,
        "properties": {CODEC: "snappy", "format-version": "1", "team": "etl"},
    }
    r = client.post("/v1/namespaces/db/tables", json=body)
    assert r.status_code == 200, r.text
    metadata = r.json()["metadata"]
    assert metadata["properties"] == {CODEC: "snappy", "team": "etl"}  # reserved: not stored
    assert metadata["format-version"] == 1
    assert catalog.load_table("db.t").properties[CODEC] == "snappy"


def test_stage_create_carries_the_defaults(client: TestClient, catalog: Catalog) -> None:
    body = {"name": "s", "schema": SCHEMA, "stage-create": True}
    r = client.post("/v1/namespaces/db/tables", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["properties"] == {CODEC: "zstd"}
    assert not catalog.table_exists("db.s")
