"""The client's conditional loads: a table loaded again sends the ETag of its last load
(``If-None-Match``); icepark's server answers 304 when the table has not moved and the client
reuses what it had, and a table that moved is loaded in full."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from icepark.catalog.base import Catalog
from icepark.rest import create_app
from icepark.rest.catalog import RestCatalog
from tests.rest.conftest import serving

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def rc(catalog: Catalog) -> Iterator[tuple[RestCatalog, list[tuple[str, int, Any]]]]:
    with serving(create_app(catalog)) as url:
        client = RestCatalog("rc", {"uri": url})
        seen: list[tuple[str, int, Any]] = []

        def record(answer: Any, *args: Any, **kwargs: Any) -> None:
            if answer.request.method == "GET" and "/tables/" in answer.request.url:
                seen.append(
                    (
                        answer.request.method,
                        answer.status_code,
                        answer.request.headers.get("If-None-Match"),
                    )
                )

        client._client.session.hooks["response"].append(record)
        yield client, seen


def test_an_unchanged_table_is_not_sent_again(rc: tuple[RestCatalog, list]) -> None:
    client, seen = rc
    other = RestCatalog("other", {"uri": client._client.uri})  # a writer elsewhere
    other.create_namespace("db")
    other.create_table("db.t", SCHEMA).append(pa.table({"id": [1, 2]}))
    first = client.load_table("db.t")
    second = client.load_table("db.t")
    assert [s[1] for s in seen] == [200, 304]
    assert seen[0][2] is None and seen[1][2] is not None  # the second names what it has
    assert second is not first and second.metadata == first.metadata
    assert second.metadata_location == first.metadata_location
    assert second.scan().to_arrow().num_rows == 2

    # the table moves elsewhere: the next load is a full one, and a Table refreshed in place
    # meanwhile does not leak its newer state into what the client reuses
    other.load_table("db.t").append(pa.table({"id": [3]}))
    seen.clear()
    third = client.load_table("db.t")
    assert [s[1] for s in seen] == [200]
    assert third.scan().to_arrow().num_rows == 3
    assert len(third.metadata.snapshots) == 2
    other.load_table("db.t").append(pa.table({"id": [4]}))
    second.refresh()  # a full load of the newest state, kept as the client's last load
    seen.clear()
    fourth = client.load_table("db.t")
    assert [s[1] for s in seen] == [304]
    assert fourth.metadata == second.metadata and len(fourth.metadata.snapshots) == 3
    assert third.metadata != fourth.metadata


def test_a_dropped_and_recreated_table_is_loaded_afresh(rc: tuple[RestCatalog, list]) -> None:
    client, seen = rc
    client.create_namespace("db")
    client.create_table("db.t", SCHEMA).append(pa.table({"id": [1]}))
    client.load_table("db.t")
    client.drop_table("db.t")
    client.create_table("db.t", SCHEMA)
    seen.clear()
    again = client.load_table("db.t")
    assert [s[1] for s in seen] == [200]
    assert again.current_snapshot() is None


def test_a_commit_answer_is_the_next_load(rc: tuple[RestCatalog, list]) -> None:
    """The server gives a commit's answer the ETag a load would carry: the refresh before the
    next commit (and any load) is a 304 with the committed metadata."""
    client, seen = rc
    client.create_namespace("db")
    table = client.create_table("db.t", SCHEMA)
    table = client.load_table("db.t")
    table.append(pa.table({"id": [1]}))
    seen.clear()
    table.append(pa.table({"id": [2]}))  # its refresh: a 304
    loaded = client.load_table("db.t")
    assert [s[1] for s in seen] == [304, 304]
    assert loaded.metadata == table.metadata and len(loaded.metadata.snapshots) == 2
    assert loaded.scan().to_arrow().num_rows == 2
