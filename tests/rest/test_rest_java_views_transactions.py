"""Views, create transactions and multi-table commits of icepark's REST client, judged by the
Java implementation: its ``CatalogHandlers`` (views, stage-create) and its test adapter's
multi-table commit over a ``JdbcCatalog`` (tests/java_rest_server.py), read back through Java's
own catalog (``_test/view``, ``_test/table``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

import icepark
from icepark.errors import (
    CommitFailedError,
    NoSuchViewError,
    TableAlreadyExistsError,
    ViewAlreadyExistsError,
)
from icepark.spec.schema import schema_to_json
from icepark.spec.updates import AssertRefSnapshotId, SetPropertiesUpdate
from icepark.spec.view_builder import AssertViewUUID

if TYPE_CHECKING:
    from icepark.catalog.base import TableChange
    from icepark.table.interface import CommitResult
    from tests.rest.conftest import JavaServer

SCHEMA = icepark.schema(("id", "long", True), ("name", "string"), ("ts", "timestamptz"))
VIEW_SCHEMA = icepark.schema(("id", "long"), ("name", "string"))


def _rows(n: int, start: int = 0) -> pa.Table:
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"n{i}" for i in ids],
            "ts": pa.array([base + dt.timedelta(days=i) for i in ids], pa.timestamp("us", "UTC")),
        }
    )


def _field_names(schema_json: dict) -> list[str]:  # type: ignore[type-arg]
    return [f["name"] for f in schema_json["fields"]]


def test_view_lifecycle_read_by_java(java: JavaServer) -> None:
    catalog = java.catalog()
    catalog.create_namespace("vdb")
    catalog.create_namespace("other")
    view = catalog.create_view(
        "vdb.recent",
        VIEW_SCHEMA,
        "SELECT id, name FROM events WHERE id > 3",
        default_namespace=["other"],
        properties={"owner": "me"},
        other_dialects={"trino": "SELECT id, name FROM events WHERE id > 3 -- trino"},
    )
    assert view.sql() == "SELECT id, name FROM events WHERE id > 3"
    seen = java.java_view("vdb", "recent")
    assert seen["sql"] == {
        "spark": "SELECT id, name FROM events WHERE id > 3",
        "trino": "SELECT id, name FROM events WHERE id > 3 -- trino",
    }
    assert _field_names(seen["schema"]) == ["id", "name"]
    assert seen["default-namespace"] == ["other"]
    assert seen["properties"]["owner"] == "me"
    assert seen["versions"] == 1 and seen["uuid"] == view.metadata.view_uuid

    assert catalog.view_exists("vdb.recent") and not catalog.view_exists("vdb.nope")
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view("vdb.recent", VIEW_SCHEMA, "SELECT 1")
    with pytest.raises(NoSuchViewError):
        catalog.load_view("vdb.nope")

    # the View handle's changes go through commit_view unchanged
    # Java refuses a version that drops a dialect (replace.drop-dialect.allowed=false)
    view.replace(
        "SELECT id FROM events",
        icepark.schema(("id", "long")),
        other_dialects={"trino": "SELECT id FROM events -- trino"},
    )
    view.set_properties(comment="ids only")
    view.remove_properties("owner")
    seen = java.java_view("vdb", "recent")
    assert seen["sql"] == {
        "spark": "SELECT id FROM events",
        "trino": "SELECT id FROM events -- trino",
    }
    assert _field_names(seen["schema"]) == ["id"]
    assert seen["versions"] == 2
    assert seen["properties"].get("comment") == "ids only" and "owner" not in seen["properties"]
    # the default namespace carries over to the new version
    assert seen["default-namespace"] == ["other"]

    # createOrReplace: a third version on the same view (same UUID)
    replaced = catalog.create_view(
        "vdb.recent",
        VIEW_SCHEMA,
        "SELECT id, name FROM events",
        replace=True,
        other_dialects={"trino": "SELECT id, name FROM events -- trino"},
    )
    assert replaced.metadata.view_uuid == view.metadata.view_uuid
    seen = java.java_view("vdb", "recent")
    assert seen["versions"] == 3
    assert seen["sql"]["spark"] == "SELECT id, name FROM events"
    assert seen["default-namespace"] == ["vdb"]

    # list (paged by the server's page size 2), rename, drop
    for name in ("v2", "v3"):
        catalog.create_view(f"vdb.{name}", VIEW_SCHEMA, f"SELECT {name}")
    assert sorted(catalog.list_views("vdb")) == [("vdb", "recent"), ("vdb", "v2"), ("vdb", "v3")]
    renamed = catalog.rename_view("vdb.recent", "other.moved")
    assert renamed.sql() == "SELECT id, name FROM events"
    assert not catalog.view_exists("vdb.recent")
    assert java.java_view("other", "moved")["versions"] == 3
    catalog.drop_view("other.moved")
    assert not catalog.view_exists("other.moved")
    with pytest.raises(AssertionError, match="could not read"):
        java.java_view("other", "moved")
    with pytest.raises(NoSuchViewError):
        catalog.drop_view("other.moved")


def test_stale_view_uuid_is_refused(java: JavaServer) -> None:
    catalog = java.catalog()
    catalog.create_namespace("vdb2")
    view = catalog.create_view("vdb2.v", VIEW_SCHEMA, "SELECT 1")
    with pytest.raises(CommitFailedError):
        catalog.commit_view(
            "vdb2.v",
            [AssertViewUUID("00000000-0000-0000-0000-000000000000")],
            [SetPropertiesUpdate({"x": "y"})],
        )
    assert "x" not in java.java_view("vdb2", "v")["properties"]
    # a handle whose view was dropped and created again holds a stale UUID
    catalog.drop_view("vdb2.v")
    catalog.create_view("vdb2.v", VIEW_SCHEMA, "SELECT 2")
    with pytest.raises(CommitFailedError):
        view.set_properties(x="y")
    assert java.java_view("vdb2", "v")["sql"] == {"spark": "SELECT 2"}


def test_java_created_view_loads_in_icepark(java: JavaServer) -> None:
    catalog = java.catalog()
    catalog.create_namespace("vdb3")
    java.create_java_view(
        "vdb3",
        "theirs",
        {
            "sql": "SELECT name FROM t",
            "schema": schema_to_json(icepark.schema(("name", "string"))),
            "properties": {"made-by": "java"},
        },
    )
    view = catalog.load_view("vdb3.theirs")
    assert view.sql() == "SELECT name FROM t"
    assert [f.name for f in view.schema.fields] == ["name"]
    assert view.properties["made-by"] == "java"
    assert view.current_version.default_namespace == ("vdb3",)
    assert view.metadata.view_uuid == java.java_view("vdb3", "theirs")["uuid"]
    # and icepark evolves Java's view
    view.replace("SELECT upper(name) AS name FROM t", icepark.schema(("name", "string")))
    seen = java.java_view("vdb3", "theirs")
    assert seen["versions"] == 2 and seen["sql"] == {"spark": "SELECT upper(name) AS name FROM t"}


def test_views_and_tables_share_names(java: JavaServer) -> None:
    catalog = java.catalog()
    catalog.create_namespace("vdb4")
    catalog.create_table("vdb4.t", SCHEMA)
    with pytest.raises((ViewAlreadyExistsError, TableAlreadyExistsError)):
        catalog.create_view("vdb4.t", VIEW_SCHEMA, "SELECT 1")


def test_stage_create_with_append_is_one_commit(java: JavaServer) -> None:
    catalog = java.catalog()
    catalog.create_namespace("sdb")
    staged = catalog.create_table_transaction(
        "sdb.events", SCHEMA, partition_by=["bucket(2, id)"], properties={"owner": "etl"}
    )
    # the server chose the location; nothing exists yet
    assert staged.location.startswith("file:") or staged.location.startswith("/")
    assert str(java.warehouse) in staged.location
    assert not catalog.table_exists("sdb.events")
    staged.append(_rows(5))
    staged.set_properties(stage="done")
    assert not catalog.table_exists("sdb.events")
    staged.commit_transaction()
    seen = java.view("sdb", "events")
    assert seen["snapshots"] == 1
    assert sorted(r["id"] for r in seen["rows"]) == [0, 1, 2, 3, 4]
    assert seen["properties"]["owner"] == "etl" and seen["properties"]["stage"] == "done"
    assert [f["transform"] for f in seen["spec"]["fields"]] == ["bucket[2]"]
    table = catalog.load_table("sdb.events")
    # one create-and-write commit: one metadata file, no log of earlier ones
    assert table.metadata.metadata_log == ()
    assert table.scan().to_arrow().num_rows == 5
    # a second create transaction of the same name fails at its commit
    again = catalog.create_table_transaction("sdb.late", SCHEMA)
    catalog.create_table("sdb.late", SCHEMA)
    again.append(_rows(1))
    with pytest.raises(TableAlreadyExistsError):
        again.commit_transaction()
    assert java.view("sdb", "late")["snapshots"] == 0


def test_multi_table_commit_lands_both_or_neither(
    java: JavaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = java.catalog()
    catalog.create_namespace("mdb")
    a = catalog.create_table("mdb.a", SCHEMA)
    b = catalog.create_table("mdb.b", SCHEMA)
    ta, tb = a.transaction(), b.transaction()
    ta.append(_rows(3))
    tb.append(_rows(2, start=10))
    tb.set_properties(pair="a+b")
    results = catalog.commit_transaction([ta, tb])
    assert [r.metadata_location for r in results] == [
        catalog.load_table("mdb.a").metadata_location,
        catalog.load_table("mdb.b").metadata_location,
    ]
    seen_a, seen_b = java.view("mdb", "a"), java.view("mdb", "b")
    assert sorted(r["id"] for r in seen_a["rows"]) == [0, 1, 2]
    assert sorted(r["id"] for r in seen_b["rows"]) == [10, 11]
    assert seen_b["properties"]["pair"] == "a+b"

    # a stale requirement on b: neither table changes, and the files written are deleted
    before = set(Path(java.warehouse).rglob("*.parquet"))
    a = catalog.load_table("mdb.a")
    b = catalog.load_table("mdb.b")
    ta, tb = a.transaction(), b.transaction()
    ta.append(_rows(1, start=100))
    tb.append(_rows(1, start=200))
    assert len(set(Path(java.warehouse).rglob("*.parquet")) - before) == 2
    real_commit = catalog.commit_tables

    def racing(changes: Sequence[TableChange]) -> list[CommitResult]:
        # another writer appends to b after the transactions were prepared on b's metadata
        java.catalog().load_table("mdb.b").append(_rows(1, start=300))
        return real_commit(changes)

    monkeypatch.setattr(catalog, "commit_tables", racing)
    with pytest.raises(CommitFailedError):
        catalog.commit_transaction([ta, tb])
    monkeypatch.undo()
    assert sorted(r["id"] for r in java.view("mdb", "a")["rows"]) == [0, 1, 2]
    assert sorted(r["id"] for r in java.view("mdb", "b")["rows"]) == [10, 11, 300]
    # the two transactions' data files are deleted; the concurrent append's stays
    assert len(set(Path(java.warehouse).rglob("*.parquet")) - before) == 1

    # the same through commit_tables, in REST terms
    a = catalog.load_table("mdb.a")
    with pytest.raises(CommitFailedError):
        catalog.commit_tables(
            [
                ("mdb.a", [], [SetPropertiesUpdate({"k": "1"})]),
                ("mdb.b", [AssertRefSnapshotId("main", None)], [SetPropertiesUpdate({"k": "1"})]),
            ]
        )
    assert "k" not in java.view("mdb", "a")["properties"]
    catalog.commit_tables(
        [
            ("mdb.a", [], [SetPropertiesUpdate({"k": "1"})]),
            ("mdb.b", [], [SetPropertiesUpdate({"k": "2"})]),
        ]
    )
    assert java.view("mdb", "a")["properties"]["k"] == "1"
    assert java.view("mdb", "b")["properties"]["k"] == "2"
