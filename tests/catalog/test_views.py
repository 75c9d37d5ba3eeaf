"""Views in the SQL catalog (SQLite and PostgreSQL): create, load, replace, properties, rename,
drop, and the one namespace of names views share with tables; the file-system catalog refuses
views. What the catalog writes is judged by the metadata reader and, over REST, by PyIceberg and
Java (tests/rest)."""

from __future__ import annotations

import gzip
import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import Catalog, FileSystemCatalog, SqlCatalog
from icepark.errors import (
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchViewError,
    RequirementFailedError,
    TableAlreadyExistsError,
    UnsupportedOperationError,
    ValidationError,
    ViewAlreadyExistsError,
)
from icepark.spec.requirements import AssertTableUUID
from icepark.spec.updates import SetPropertiesUpdate
from icepark.spec.view_builder import AssertViewUUID

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
NARROW = pa.schema([pa.field("id", pa.int64(), nullable=False)])


@pytest.fixture(params=["sqlite", "postgres"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Catalog:
    warehouse = str(tmp_path / "wh")
    if request.param == "sqlite":
        cat: Catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/c.db", warehouse=warehouse)
    else:
        url = request.getfixturevalue("postgres_url")
        cat = SqlCatalog(f"t_{uuid.uuid4().hex}", uri=url, warehouse=warehouse)
    cat.create_namespace("db")
    return cat


def _json(location: str) -> dict:
    data = Path(location.removeprefix("file:")).read_bytes()
    return json.loads(gzip.decompress(data) if location.endswith(".gz.metadata.json") else data)


def test_create_and_load_a_view(catalog: Catalog) -> None:
    view = catalog.create_view(
        "db.v", SCHEMA, "SELECT id, name FROM db.t", properties={"comment": "recent rows"}
    )
    assert view.metadata_location.endswith(".gz.metadata.json")  # Java's default for views
    assert "/wh/db/v/metadata/00000-" in view.metadata_location
    doc = _json(view.metadata_location)
    assert doc["format-version"] == 1 and doc["current-version-id"] == 1
    version = doc["versions"][0]
    assert version["representations"] == [
        {"type": "sql", "sql": "SELECT id, name FROM db.t", "dialect": "spark"}
    ]
    assert version["default-namespace"] == ["db"] and version["schema-id"] == 0
    assert version["summary"]["engine-name"] == "icepark"
    loaded = catalog.load_view("db.v")
    assert loaded.metadata == view.metadata
    assert loaded.sql() == "SELECT id, name FROM db.t"
    assert [f.name for f in loaded.schema.fields] == ["id", "name"]
    assert loaded.properties["comment"] == "recent rows"
    assert catalog.view_exists("db.v") and not catalog.view_exists("db.w")
    assert catalog.list_views("db") == [("db", "v")]
    assert catalog.list_tables("db") == []  # views are not tables


def test_replace_adds_a_version_and_keeps_the_log(catalog: Catalog) -> None:
    view = catalog.create_view("db.v", SCHEMA, "SELECT 1", other_dialects={"trino": "SELECT 1"})
    first = view.metadata_location
    view.replace("SELECT id FROM db.t", NARROW, other_dialects={"trino": "SELECT id FROM t"})
    assert view.metadata.current_version_id == 2
    assert [v.version_id for v in view.versions] == [1, 2]
    assert [e.version_id for e in view.metadata.version_log] == [1, 2]
    assert [s.schema_id for s in view.metadata.schemas] == [0, 1]
    assert view.metadata_location.split("/")[-1].startswith("00001-")
    assert view.metadata_location != first
    assert catalog.load_view("db.v").sql("TRINO") == "SELECT id FROM t"
    with pytest.raises(
        ValidationError, match=r"no 'presto' query \(dialects: \['spark', 'trino'\]\)"
    ):
        catalog.load_view("db.v").sql("presto")
    # dropping a dialect is refused unless the view allows it, as in Java
    with pytest.raises(ValidationError, match="loss of view dialects"):
        view.replace("SELECT 2", NARROW)
    assert catalog.load_view("db.v").metadata.current_version_id == 2
    view.set_properties({"replace.drop-dialect.allowed": "true"})
    view.replace("SELECT 2", NARROW)
    assert catalog.load_view("db.v").current_version.dialects == {"spark"}
    # create with replace=True is createOrReplace
    again = catalog.create_view("db.v", SCHEMA, "SELECT 3", replace=True)
    assert again.sql() == "SELECT 3" and again.metadata.view_uuid == view.metadata.view_uuid


def test_properties_and_commit_requirements(catalog: Catalog) -> None:
    view = catalog.create_view("db.v", SCHEMA, "SELECT 1")
    view.set_properties(owner="etl", team="data").remove_properties("team")
    assert dict(catalog.load_view("db.v").properties) == {"owner": "etl"}
    with pytest.raises(RequirementFailedError, match="view UUID does not match"):
        catalog.commit_view("db.v", [AssertViewUUID("other")], [SetPropertiesUpdate({"a": "b"})])
    with pytest.raises(ValidationError, match="assert-view-uuid only"):
        catalog.commit_view("db.v", [AssertTableUUID("x")], [])
    assert "a" not in catalog.load_view("db.v").properties


def test_views_and_tables_share_one_namespace_of_names(catalog: Catalog) -> None:
    catalog.create_table("db.t", SCHEMA)
    catalog.create_view("db.v", SCHEMA, "SELECT 1")
    with pytest.raises(ViewAlreadyExistsError, match="a table of that name"):
        catalog.create_view("db.t", SCHEMA, "SELECT 1")
    with pytest.raises(TableAlreadyExistsError, match="a view of that name"):
        catalog.create_table("db.v", SCHEMA)
    with pytest.raises(ViewAlreadyExistsError, match=r"View already exists: db\.v"):
        catalog.create_view("db.v", SCHEMA, "SELECT 2")
    with pytest.raises(TableAlreadyExistsError):
        catalog.rename_view("db.v", "db.t")
    assert not catalog.table_exists("db.v") and not catalog.view_exists("db.t")
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_table("db.t")
        catalog.drop_namespace("db")


def test_rename_and_drop(catalog: Catalog) -> None:
    catalog.create_namespace("other")
    view = catalog.create_view("db.v", SCHEMA, "SELECT 1")
    renamed = catalog.rename_view("db.v", "other.w")
    assert renamed.metadata == view.metadata and renamed.name == "other.w"
    assert not catalog.view_exists("db.v") and catalog.list_views("other") == [("other", "w")]
    with pytest.raises(NoSuchNamespaceError):
        catalog.rename_view("other.w", "nope.w")
    location = renamed.metadata_location
    catalog.drop_view("other.w")
    assert not catalog.view_exists("other.w")
    assert not os.path.exists(location.removeprefix("file:"))
    with pytest.raises(NoSuchViewError, match=r"other\.w"):
        catalog.load_view("other.w")
    with pytest.raises(NoSuchViewError):
        catalog.drop_view("other.w")
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_views("nope")
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_view("nope.v", SCHEMA, "SELECT 1")


def test_a_failed_create_leaves_no_file(catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_view("db.v", SCHEMA, "SELECT 1")
    before = sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file())
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view("db.v", SCHEMA, "SELECT 2")
    assert sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file()) == before


def test_the_file_system_catalog_refuses_views(tmp_path: Path) -> None:
    cat = FileSystemCatalog("fs", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    with pytest.raises(UnsupportedOperationError, match="cannot hold views"):
        cat.create_view("db.v", SCHEMA, "SELECT 1")
    with pytest.raises(UnsupportedOperationError, match="cannot hold views"):
        cat.list_views("db")
    assert not any((tmp_path / "wh").rglob("*.json"))
