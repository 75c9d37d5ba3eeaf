"""Behaviour every catalog shares: SQLite, PostgreSQL, the file-system layout, and S3."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark.catalog import Catalog, FileSystemCatalog, SqlCatalog, load_catalog
from icepark.errors import (
    CatalogConfigError,
    CommitFailedError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    RequirementFailedError,
    TableAlreadyExistsError,
    UnsupportedOperationError,
    ValidationError,
)
from icepark.spec.updates import AssertCurrentSchemaId, SetLocationUpdate, SetPropertiesUpdate
from icepark.table import ReadOnlyTableError, Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("name", pa.string()),
        pa.field("category", pa.string()),
        pa.field("x", pa.int32()),
    ]
)
PARTITION_BY = ["day(ts)", "bucket(16, id)", "truncate(4, name)", "category", "void(x)"]


def _sql(tmp_path: Path, **extra: Any) -> Catalog:
    return SqlCatalog(
        "test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"), **extra
    )


@pytest.fixture(params=["sqlite", "filesystem", "postgres"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Catalog:
    if request.param == "sqlite":
        return _sql(tmp_path)
    if request.param == "filesystem":
        return FileSystemCatalog("test", warehouse=str(tmp_path / "wh"))
    url = request.getfixturevalue("postgres_url")
    # a catalog name of its own: the PostgreSQL server outlives test runs
    cat = SqlCatalog(f"t_{uuid.uuid4().hex}", uri=url, warehouse=str(tmp_path / "wh"))
    return cat


def test_namespaces(catalog: Catalog) -> None:
    assert catalog.list_namespaces() == []
    catalog.create_namespace("db", {"owner": "me"})
    catalog.create_namespace(("db", "inner"))
    with pytest.raises(NamespaceAlreadyExistsError, match="db"):
        catalog.create_namespace("db")
    assert catalog.namespace_exists("db")
    assert not catalog.namespace_exists("nope")
    assert catalog.list_namespaces() == [("db",)]
    assert catalog.list_namespaces("db") == [("db", "inner")]
    assert catalog.load_namespace_properties("db")["owner"] == "me"
    catalog.update_namespace_properties("db", removals=["owner"], updates={"team": "data"})
    props = catalog.load_namespace_properties("db")
    assert props["team"] == "data" and "owner" not in props
    with pytest.raises(NoSuchNamespaceError, match="nope"):
        catalog.load_namespace_properties("nope")
    catalog.create_table("db.inner.t", SCHEMA)
    with pytest.raises(NamespaceNotEmptyError, match=r"db\.inner"):
        catalog.drop_namespace("db.inner")
    catalog.drop_table("db.inner.t")
    catalog.drop_namespace("db.inner")
    assert catalog.list_namespaces("db") == []


def test_create_load_list_drop(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=PARTITION_BY,
        sort_by=["id", "ts desc nulls last"],
        properties={"owner": "me"},
    )
    assert table.format_version == 2
    assert [f.name for f in table.schema().fields] == ["id", "ts", "name", "category", "x"]
    assert [f.field_id for f in table.schema().fields] == [1, 2, 3, 4, 5]
    assert [str(f.transform) for f in table.spec().fields] == [
        "day",
        "bucket[16]",
        "truncate[4]",
        "identity",
        "void",
    ]
    assert [f.name for f in table.spec().fields] == [
        "ts_day",
        "id_bucket",
        "name_trunc",
        "category",
        "x_null",
    ]
    assert [f.field_id for f in table.spec().fields] == [1000, 1001, 1002, 1003, 1004]
    assert str(table.sort_order()) != "[]" and table.sort_order().order_id == 1
    assert table.properties["owner"] == "me"
    loaded = catalog.load_table("db.t")
    assert loaded.metadata == table.metadata
    assert loaded.metadata_location == table.metadata_location
    assert catalog.list_tables("db") == [("db", "t")]
    assert catalog.table_exists("db.t")
    with pytest.raises(TableAlreadyExistsError, match=r"db\.t"):
        catalog.create_table("db.t", SCHEMA)
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_table("missing.t", SCHEMA)
    catalog.drop_table("db.t")
    assert not catalog.table_exists("db.t")
    with pytest.raises(NoSuchTableError, match=r"db\.t"):
        catalog.load_table("db.t")


def test_format_versions(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    for version in (1, 2, 3):
        t = catalog.create_table(
            f"db.v{version}",
            SCHEMA,
            partition_by=["day(ts)"],
            properties={"format-version": str(version)},
        )
        assert t.format_version == version
        assert "format-version" not in t.properties
        assert catalog.load_table(f"db.v{version}").metadata == t.metadata


def test_commit_and_conflicts(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    first = table.metadata_location
    table.commit([AssertCurrentSchemaId(0)], [SetPropertiesUpdate({"a": "1"})])
    assert table.metadata_location != first
    assert catalog.load_table("db.t").properties["a"] == "1"
    assert catalog.load_table("db.t").metadata.metadata_log[-1].metadata_file == first
    with pytest.raises(RequirementFailedError):
        table.commit([AssertCurrentSchemaId(7)], [SetPropertiesUpdate({"b": "2"})])
    assert "b" not in catalog.load_table("db.t").properties
    # A stale pointer never overwrites a newer one.
    ident = ("db", "t")
    with pytest.raises(CommitFailedError):
        catalog._swap_metadata_location(ident, first, first)  # type: ignore[attr-defined]


def test_concurrent_commits_all_land(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            for _ in range(50):
                table = catalog.load_table("db.t")
                try:
                    table.commit([], [SetPropertiesUpdate({f"k{i}": str(i)})])
                    return
                except CommitFailedError:
                    continue
            raise AssertionError(f"worker {i} never committed")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    props = catalog.load_table("db.t").properties
    assert all(props.get(f"k{i}") == str(i) for i in range(6))


def test_register_and_drop_purge(catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    location = table.metadata_location
    other = FileSystemCatalog("other", warehouse=str(tmp_path / "other"))
    other.create_namespace("x")
    registered = other.register_table("x.copy", location)
    assert registered.schema() == table.schema()
    catalog.drop_table("db.t", purge=True)
    assert not catalog.table_exists("db.t")
    assert not Path(location).exists()


def test_rename(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    catalog.create_namespace("db2")
    catalog.create_table("db.t", SCHEMA)
    if isinstance(catalog, FileSystemCatalog):
        with pytest.raises(UnsupportedOperationError):
            catalog.rename_table("db.t", "db2.u")
        return
    renamed = catalog.rename_table("db.t", "db2.u")
    assert renamed.identifier == ("db2", "u")
    assert not catalog.table_exists("db.t")
    assert catalog.list_tables("db2") == [("db2", "u")]


def test_bad_partition_and_schema_are_refused(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("flag", pa.bool_()), pa.field("f", pa.float64(), nullable=False)])
    with pytest.raises(ValidationError, match="bucket"):
        catalog.create_table("db.t", schema, partition_by=["bucket(4, flag)"])
    with pytest.raises(ValidationError, match="magic"):
        catalog.create_table("db.t", schema, partition_by=["magic(flag)"])
    with pytest.raises(ValidationError, match="nope"):
        catalog.create_table("db.t", schema, partition_by=["day(nope)"])
    assert not catalog.table_exists("db.t")
    assert catalog.list_tables("db") == []


def test_table_from_metadata_is_read_only(tmp_path: Path) -> None:
    catalog = _sql(tmp_path)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA, partition_by=["day(ts)"])
    static = Table.from_metadata(table.metadata_location)
    assert static.metadata == table.metadata
    assert static.read_only
    with pytest.raises(ReadOnlyTableError):
        static.commit([], [SetPropertiesUpdate({"a": "b"})])


def test_gzip_metadata(tmp_path: Path) -> None:
    catalog = _sql(tmp_path)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", SCHEMA, properties={"write.metadata.compression-codec": "gzip"}
    )
    assert table.metadata_location.endswith(".gz.metadata.json")
    assert Path(table.metadata_location).read_bytes()[:2] == b"\x1f\x8b"
    assert catalog.load_table("db.t").metadata == table.metadata


def test_metadata_files_are_never_overwritten(tmp_path: Path) -> None:
    catalog = FileSystemCatalog("fs", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    assert table.metadata_location.endswith("/metadata/v1.metadata.json")
    stale = catalog.load_table("db.t")
    table.commit([], [SetPropertiesUpdate({"a": "1"})])
    v2 = Path(table.metadata_location).read_bytes()
    # A writer that read v1 tries to write v2 too: refused, v2 untouched.
    with pytest.raises(CommitFailedError):
        catalog._write_metadata(stale.metadata, table.metadata_location)  # type: ignore[attr-defined]
    assert Path(table.metadata_location).read_bytes() == v2
    assert (Path(table.metadata_location).parent / "version-hint.text").read_text() == "2"


def test_load_catalog_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICEPARK_CONFIG", str(tmp_path / "none.yaml"))
    for var in (
        "ICEPARK_CATALOG_URI",
        "ICEPARK_WAREHOUSE",
        "ICEPARK_CATALOG_TYPE",
        "ICEPARK_CATALOG",
    ):
        monkeypatch.delenv(var, raising=False)
    catalog = load_catalog()
    assert isinstance(catalog, SqlCatalog)
    assert catalog.properties["uri"] == f"sqlite:///{tmp_path}/warehouse/catalog.db"
    assert catalog.properties["warehouse"] == f"{tmp_path}/warehouse"
    catalog.create_namespace("db")
    assert (tmp_path / "warehouse" / "catalog.db").is_file()
    # a name nothing configures is an error, not a new empty catalog of that name
    with pytest.raises(CatalogConfigError, match=r"No catalog named 'prod': .*none.yaml\) does not"):
        load_catalog("prod")
    assert load_catalog("prod", warehouse=str(tmp_path / "warehouse")).name == "prod"
    monkeypatch.setenv("ICEPARK_WAREHOUSE", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("ICEPARK_CATALOG_TYPE", "filesystem")
    assert isinstance(load_catalog(), FileSystemCatalog)
    (tmp_path / "cfg.yaml").write_text(
        "default-catalog: lake\ncatalogs:\n  lake:\n    uri: sqlite:///"
        + str(tmp_path)
        + "/lake.db\n"
        "    warehouse: " + str(tmp_path / "lake") + "\n"
    )
    monkeypatch.setenv("ICEPARK_CONFIG", str(tmp_path / "cfg.yaml"))
    monkeypatch.delenv("ICEPARK_WAREHOUSE")
    monkeypatch.delenv("ICEPARK_CATALOG_TYPE")
    lake = load_catalog()
    assert lake.name == "lake" and lake.properties["warehouse"] == str(tmp_path / "lake")
    with pytest.raises(CatalogConfigError, match=r"No catalog named 'prod' .*\['lake'\]"):
        load_catalog("prod")
    explicit = load_catalog(uri=f"sqlite:///{tmp_path}/x.db", warehouse=str(tmp_path / "x"))
    assert explicit.properties["uri"].endswith("/x.db")


def test_sql_catalog_shares_java_tables(tmp_path: Path) -> None:
    import sqlalchemy

    catalog = _sql(tmp_path)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path}/catalog.db")
    with engine.connect() as conn:
        rows = conn.execute(
            sqlalchemy.text(
                "SELECT catalog_name, table_namespace, table_name, metadata_location,"
                " iceberg_type FROM iceberg_tables"
            )
        ).all()
        props = conn.execute(
            sqlalchemy.text(
                "SELECT namespace, property_key, property_value FROM iceberg_namespace_properties"
            )
        ).all()
    assert rows == [("test", "db", "t", table.metadata_location, "TABLE")]
    assert props == [("db", "exists", "true")]


def test_filesystem_commit_stands_when_the_next_version_lands_at_once(tmp_path: Path) -> None:
    """The exclusive create of v<N+1> is the commit: a writer that builds v<N+2> on it before
    the first writer records its version hint must not make the first commit fail (which
    would delete v<N+1> and the first writer's manifests under the second's history)."""
    schema = pa.schema([pa.field("id", pa.int64())])
    first = FileSystemCatalog("fs", warehouse=str(tmp_path))
    second = FileSystemCatalog("fs", warehouse=str(tmp_path))
    first.create_namespace("db")
    first.create_table("db.t", schema)
    racer = second.load_table("db.t")
    write = first._write_metadata
    raced: list[str] = []

    def write_then_race(metadata: Any, location: str) -> None:
        write(metadata, location)
        if not raced:  # the other writer sees v<N+1> (readers look past the hint) and commits
            raced.append(location)
            racer.append(pa.table({"id": [2]}, schema=schema))

    first._write_metadata = write_then_race  # type: ignore[method-assign]
    table = first.load_table("db.t")
    table.append(pa.table({"id": [1]}, schema=schema))
    assert raced and raced[0].endswith("/v2.metadata.json")
    fresh = second.load_table("db.t")
    assert fresh.metadata_location.endswith("/v3.metadata.json")
    assert len(fresh.snapshots()) == 2
    assert sorted(fresh.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    for task in fresh.scan().plan_files():  # every referenced file is still there
        assert Path(task.file.file_path.removeprefix("file://")).exists()


@pytest.mark.parametrize("location", ["wh/t", "t", "./t"])
def test_a_relative_table_location_is_refused(tmp_path: Path, location: str) -> None:
    # a REST client's relative location was written under the server's working directory
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64())])
    with pytest.raises(ValidationError, match="is not absolute"):
        catalog.create_table("db.t", schema, location=location)
    assert not catalog.table_exists("db.t")
    for good in (str(tmp_path / "abs"), f"file://{tmp_path}/uri"):
        catalog.create_table(f"db.t{len(good)}", schema, location=good)


def test_relative_folders_are_refused_everywhere(tmp_path: Path, monkeypatch: Any) -> None:
    # every way a relative folder can reach table or view metadata is refused, and the
    # process's working directory (a REST server's) stays empty
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64())])
    for key in ("write.metadata.path", "write.data.path", "write.folder-storage.path"):
        with pytest.raises(ValidationError, match=f"property {key}: 'rel' is not absolute"):
            catalog.create_table("db.t", schema, properties={key: "rel"})
    assert not catalog.table_exists("db.t")
    table = catalog.create_table("db.t", schema)
    with pytest.raises(ValidationError, match=r"write\.data\.path"):
        table.set_properties({"write.data.path": "data"})
    with pytest.raises(ValidationError, match="Table location 'x/y' is not absolute"):
        catalog.commit_table(
            ("db", "t"), table.metadata, table.metadata_location, [], [SetLocationUpdate("x/y")]
        )
    with pytest.raises(ValidationError, match=r"View db\.v: location 'v' is not absolute"):
        catalog.create_view("db.v", schema, "SELECT 1 AS id", location="v")
    assert not catalog.view_exists("db.v")
    table.set_properties({"write.data.path": str(tmp_path / "elsewhere")})  # absolute is fine
    table.append(pa.table({"id": [1]}, schema=schema))
    assert catalog.load_table("db.t").location == table.location
    assert list(cwd.iterdir()) == []
