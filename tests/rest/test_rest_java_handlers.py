"""icepark's REST client against a server that is not icepark's: the Java implementation's own
``CatalogHandlers`` over a ``JdbcCatalog`` (in-memory H2, Hadoop FileIO on a temp folder), served by
tests/java_rest_server.py in the reference engine's interpreter. What icepark does through
REST is read back through Java (its catalog, its schema parser, Spark's Iceberg reader)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
import refengine
from click.testing import CliRunner

import icepark
from icepark.errors import (
    CommitFailedError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from icepark.rest.catalog import RestCatalog
from icepark.spec.updates import AssertRefSnapshotId, SetPropertiesUpdate
from tests.rest.conftest import serving

if TYPE_CHECKING:
    from tests.rest.conftest import JavaServer

# Java's JDBC catalog needs a JDBC driver the reference engine lacks: H2's, from the local
# Maven repository (Derby, which Spark ships, does not speak the catalog's LIMIT queries)
H2_JARS = sorted(Path.home().glob(".m2/repository/com/h2database/h2/*/h2-*.jar"))
pytestmark = [
    pytest.mark.skipif(not refengine.available(), reason="no reference engine"),
    pytest.mark.skipif(not H2_JARS, reason="no H2 JDBC driver in ~/.m2"),
]

SCHEMA = icepark.schema(("id", "long", True), ("name", "string"), ("ts", "timestamptz"))


def _rows(n: int, start: int = 0) -> pa.Table:
    import datetime as dt

    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"n{i}" for i in ids],
            "ts": pa.array([base + dt.timedelta(days=i) for i in ids], pa.timestamp("us", "UTC")),
        }
    )


def test_namespaces_nested_paged_with_properties(java: JavaServer) -> None:
    catalog = java.catalog()
    for name in ("ns_a", "ns_b", "ns_c", "ns_d", "ns_e"):
        catalog.create_namespace(name, {"owner": name})
    catalog.create_namespace(("ns_a", "inner"), {"k": "v"})
    catalog.create_namespace(("ns_a", "inner2"))
    catalog.create_namespace(("ns_a", "inner3"))
    listed = catalog.list_namespaces()
    assert {("ns_a",), ("ns_b",), ("ns_c",), ("ns_d",), ("ns_e",)} <= set(listed)  # 3+ pages
    assert catalog.list_namespaces("ns_a") == [
        ("ns_a", "inner"),
        ("ns_a", "inner2"),
        ("ns_a", "inner3"),
    ]
    assert catalog.load_namespace_properties(("ns_a", "inner"))["k"] == "v"
    catalog.update_namespace_properties("ns_b", removals=["owner"], updates={"x": "1"})
    props = catalog.load_namespace_properties("ns_b")
    assert props["x"] == "1" and "owner" not in props
    assert catalog.namespace_exists("ns_a.inner") and not catalog.namespace_exists("ns_zz")
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace("ns_c")
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties("ns_zz")
    catalog.create_table("ns_d.t", SCHEMA)
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace("ns_d")
    catalog.drop_namespace("ns_e")
    assert not catalog.namespace_exists("ns_e")


def test_create_append_delete_evolve_read_by_java(java: JavaServer) -> None:
    catalog = java.catalog()
    catalog.create_namespace("db1")
    table = catalog.create_table(
        "db1.events",
        SCHEMA,
        partition_by=["day(ts)", "bucket(4, id)"],
        sort_by=["id"],
        properties={"write.delete.mode": "merge-on-read", "owner": "me"},
    )
    table.append(_rows(10))
    table.delete("id < 3")
    with table.update_schema() as update:
        update.add_column("score", "double")
    table.append(
        pa.table(
            {
                "id": pa.array([100], pa.int64()),
                "name": ["late"],
                "ts": pa.array([_rows(1)["ts"][0].as_py()], pa.timestamp("us", "UTC")),
                "score": [1.5],
            }
        )
    )
    seen = java.view("db1", "events")
    assert seen["metadata-location"] == catalog.load_table("db1.events").metadata_location
    assert [f["name"] for f in seen["schema"]["fields"]] == ["id", "name", "ts", "score"]
    assert [f["transform"] for f in seen["spec"]["fields"]] == ["day", "bucket[4]"]
    assert seen["properties"]["owner"] == "me"
    assert sorted(r["id"] for r in seen["rows"]) == [3, 4, 5, 6, 7, 8, 9, 100]
    assert {r["id"]: r["score"] for r in seen["rows"]}[100] == 1.5
    mine = catalog.load_table("db1.events").scan().to_arrow()
    assert sorted(mine.column("id").to_pylist()) == [3, 4, 5, 6, 7, 8, 9, 100]
    assert catalog.list_tables("db1") == [("db1", "events")]
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db1.events", SCHEMA)
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_table("nowhere.t", SCHEMA)
    with pytest.raises(NoSuchTableError):
        catalog.load_table("db1.nope")
    assert catalog.table_exists("db1.events") and not catalog.table_exists("db1.nope")


def test_two_clients_conflict(java: JavaServer) -> None:
    first, second = java.catalog(), java.catalog()
    first.create_namespace("db2")
    first.create_table("db2.t", SCHEMA)
    a, b = first.load_table("db2.t"), second.load_table("db2.t")
    a.append(_rows(2))
    # a stale requirement is refused by Java's handler: 409 -> CommitFailedError
    with pytest.raises(CommitFailedError):
        b.commit([AssertRefSnapshotId("main", None)], [SetPropertiesUpdate({"x": "y"})])
    # a transaction retries on fresh metadata: both appends land
    b.append(_rows(3, start=10))
    seen = java.view("db2", "t")
    assert sorted(r["id"] for r in seen["rows"]) == [0, 1, 10, 11, 12]
    assert seen["snapshots"] == 2


def test_rename_register_drop_purge_and_expire(java: JavaServer) -> None:
    catalog = java.catalog()
    catalog.create_namespace("db3")
    table = catalog.create_table("db3.old", SCHEMA)
    for start in (0, 10, 20):
        table.append(_rows(2, start=start))
    table.expire_snapshots(older_than=table.current_snapshot().timestamp_ms + 1, retain_last=1)
    assert java.view("db3", "old")["snapshots"] == 1
    renamed = catalog.rename_table("db3.old", "db3.new")
    assert not catalog.table_exists("db3.old")
    assert sorted(r["id"] for r in java.view("db3", "new")["rows"]) == [0, 1, 10, 11, 20, 21]
    copy = catalog.register_table("db3.copy", renamed.metadata_location)
    assert copy.scan().to_arrow().num_rows == 6
    data_files = [
        Path(p.removeprefix("file:"))
        for p in renamed.inspect.files().column("file_path").to_pylist()
    ]
    catalog.drop_table("db3.copy")
    assert all(p.exists() for p in data_files)
    catalog.purge_table("db3.new")
    assert not catalog.table_exists("db3.new")
    assert not any(p.exists() for p in data_files)


def test_load_catalog_env_config_file_and_cli(
    java: JavaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = java.catalog()
    seed.create_namespace("db4")
    seed.create_table("db4.cli_t", SCHEMA).append(_rows(4))
    by_args = icepark.load_catalog(type="rest", uri=java.uri)
    assert isinstance(by_args, RestCatalog) and by_args.properties["prefix"] == "ws"
    monkeypatch.setenv("ICEPARK_CATALOG_TYPE", "rest")
    monkeypatch.setenv("ICEPARK_CATALOG_URI", java.uri)
    by_env = icepark.load_catalog()
    assert isinstance(by_env, RestCatalog) and "warehouse" not in by_env.properties
    assert ("db4", "cli_t") in by_env.list_tables("db4")
    monkeypatch.delenv("ICEPARK_CATALOG_TYPE")
    monkeypatch.delenv("ICEPARK_CATALOG_URI")
    config = tmp_path / "icepark.yaml"
    config.write_text(f"catalogs:\n  svc:\n    type: rest\n    uri: {java.uri}\n")
    monkeypatch.setenv("ICEPARK_CONFIG", str(config))
    assert isinstance(icepark.load_catalog("svc"), RestCatalog)
    monkeypatch.delenv("ICEPARK_CONFIG")

    from icepark.cli.main import cli

    runner = CliRunner()
    out = runner.invoke(cli, ["--type", "rest", "--uri", java.uri, "--json", "tables", "db4"])
    assert out.exit_code == 0, out.output
    assert "cli_t" in out.output
    out = runner.invoke(cli, ["--uri", java.uri, "scan", "db4.cli_t", "--limit", "10"])
    assert out.exit_code == 0, out.output
    assert "n3" in out.output


def test_pyiceberg_reads_what_icepark_wrote_and_back(java: JavaServer) -> None:
    pyiceberg_rest = pytest.importorskip("pyiceberg.catalog.rest")
    catalog = java.catalog()
    catalog.create_namespace("db5")
    table = catalog.create_table(
        "db5.mine",
        SCHEMA,
        partition_by=["bucket(2, id)"],
        properties={"write.delete.mode": "merge-on-read"},
    )
    table.append(_rows(6))
    table.delete("id = 4")
    theirs = pyiceberg_rest.RestCatalog("py", uri=java.uri)
    read = theirs.load_table("db5.mine").scan().to_arrow()
    assert sorted(read.column("id").to_pylist()) == [0, 1, 2, 3, 5]
    created = theirs.create_table("db5.theirs", schema=_rows(1).schema)
    created.append(_rows(3, start=40))
    mine = catalog.load_table("db5.theirs")
    assert sorted(mine.scan().to_arrow().column("id").to_pylist()) == [40, 41, 42]
    mine.append(_rows(1, start=50))  # and icepark commits on top of PyIceberg's table
    assert theirs.load_table("db5.theirs").scan().to_arrow().num_rows == 4


def test_overwrite_spec_evolution_branches_and_tags_read_by_java(java: JavaServer) -> None:
    """Commits Java's handlers apply for icepark's client: an overwrite by filter, a partition
    spec change, a tag, a branch and a write to the branch; Java's own catalog then reads the
    rows of main, both specs and every ref."""
    catalog = java.catalog()
    ns = f"evo{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    table = catalog.create_table(f"{ns}.t", SCHEMA, partition_by=["day(ts)"])
    table.append(_rows(10))
    table.overwrite(_rows(3), "id < 5")  # ids 0-4 become 0-2
    with table.update_spec() as update:
        update.add_field("bucket(4, id)")
    table.append(_rows(2, start=200))
    tagged = table.current_snapshot().snapshot_id
    table.create_tag("v1")
    table.create_branch("dev")
    table.append(_rows(1, start=300), branch="dev")
    table.refresh()
    seen = java.view(ns, "t")
    expected = [0, 1, 2, *range(5, 10), 200, 201]
    assert sorted(r["id"] for r in seen["rows"]) == expected
    assert [f["transform"] for f in seen["spec"]["fields"]] == ["day", "bucket[4]"]
    assert seen["specs"] == 2
    refs = seen["refs"]
    assert refs["main"] == tagged == seen["current-snapshot"]
    assert refs["v1"] == tagged
    assert refs["dev"] == table.metadata.ref("dev").snapshot_id != tagged
    assert seen["snapshots"] == len(table.metadata.snapshots) == 4
    dev = table.scan(snapshot_id=refs["dev"]).to_arrow()
    assert sorted(dev.column("id").to_pylist()) == [*expected, 300]


# -- creates and commits in every client's update order, answered by both servers ------------

_SCHEMA_JSON = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "a", "required": False, "type": "long"},
        {"id": 2, "name": "b", "required": False, "type": "string"},
        {"id": 3, "name": "ts", "required": False, "type": "timestamptz"},
    ],
}
_SPEC_JSON = {
    "spec-id": 0,
    "fields": [{"source-id": 3, "field-id": 1000, "transform": "day", "name": "ts_day"}],
}
_ORDER_JSON = {
    "order-id": 1,
    "fields": [
        {"source-id": 1, "transform": "identity", "direction": "desc", "null-order": "nulls-last"}
    ],
}


def _create_updates(client: str, version: int) -> list[dict[str, Any]]:
    """A create's updates as each client sends them (the commit after a stage-create)."""
    location = {"action": "set-location", "location": "LOCATION"}
    head = [
        {"action": "assign-uuid", "uuid": str(uuid.uuid4())},
        {"action": "upgrade-format-version", "format-version": version},
        {"action": "add-schema", "schema": _SCHEMA_JSON, "last-column-id": 3},
    ]
    if client == "duckdb":  # DuckDB 1.5.5's CREATE TABLE: set-current-schema last, ids not -1
        return [
            *head,
            {"action": "add-spec", "spec": _SPEC_JSON},
            {"action": "set-default-spec", "spec-id": 0},
            {"action": "add-sort-order", "sort-order": _ORDER_JSON},
            {"action": "set-default-sort-order", "sort-order-id": 1},
            location,
            {"action": "set-properties", "updates": {"owner": client}},
            {"action": "set-current-schema", "schema-id": 0},
        ]
    if client == "implicit":  # no set-current-schema / set-default-spec: Java's ids 0 hold
        return [
            *head,
            {"action": "add-spec", "spec": _SPEC_JSON},
            {"action": "add-sort-order", "sort-order": _ORDER_JSON},
            {"action": "set-default-sort-order", "sort-order-id": -1},
            location,
            {"action": "set-properties", "updates": {"owner": client}},
        ]
    # Java's RESTSessionCatalog.createChanges, PyIceberg's and icepark's creation_updates
    return [
        *head,
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": _SPEC_JSON},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": _ORDER_JSON},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        location,
        {"action": "set-properties", "updates": {"owner": client}},
    ]


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    import json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _shape(md: dict[str, Any]) -> dict[str, Any]:
    """What a create or commit decided: versions, ids, schemas, specs, orders."""
    keys = (
        "format-version",
        "current-schema-id",
        "last-column-id",
        "default-spec-id",
        "last-partition-id",
        "default-sort-order-id",
        "partition-specs",
        "sort-orders",
    )
    shape = {k: md.get(k) for k in keys}
    shape["schemas"] = [
        (s["schema-id"], [(f["id"], f["name"]) for f in s["fields"]]) for s in md["schemas"]
    ]
    shape["owner"] = md.get("properties", {}).get("owner")
    return shape


def test_update_orders_of_every_client_as_java_handlers_answer(
    java: JavaServer, catalog: Any, tmp_path: Path
) -> None:
    """The stage-create + assert-create commit of Java's and PyIceberg's clients, of DuckDB
    (specs and orders before set-current-schema) and one leaning on Java's initial ids, for
    format versions 1 to 3, then commits to an existing table in two orders: icepark's server
    and Java's CatalogHandlers give the same status and build the same metadata."""
    from icepark.rest import create_app

    catalog.create_namespace("orders")
    _post(f"{java.uri}/v1/ws/namespaces", {"namespace": ["orders"]})
    with serving(create_app(catalog)) as mine:
        servers = {"icepark": f"{mine}/v1", "java": f"{java.uri}/v1/ws"}
        cases = [(c, v) for c in ("java", "duckdb", "implicit") for v in (1, 2, 3)]
        for client, version in cases:
            name = f"{client}_v{version}"
            shapes = {}
            for side, base in servers.items():
                tables = f"{base}/namespaces/orders/tables"
                status, staged = _post(
                    tables,
                    {
                        "name": name,
                        "schema": _SCHEMA_JSON,
                        "stage-create": True,
                        "properties": {"format-version": str(version)},
                    },
                )
                assert status == 200, (side, staged)
                updates = _create_updates(client, version)
                for update in updates:
                    if update["action"] == "set-location":
                        update["location"] = staged["metadata"]["location"]
                body = {"requirements": [{"type": "assert-create"}], "updates": updates}
                status, answer = _post(f"{tables}/{name}", body)
                assert status == 200, (side, name, answer)
                shapes[side] = _shape(answer["metadata"])
            assert shapes["icepark"] == shapes["java"], name
            assert shapes["icepark"]["owner"] == client

        # a table's commit: a spec binds against the current schema, not a schema added in
        # the same commit before set-current-schema (both refuse), and after it (both take it)
        new_schema = {
            **_SCHEMA_JSON,
            "fields": [
                *_SCHEMA_JSON["fields"],
                {"id": 4, "name": "c", "required": False, "type": "int"},
            ],
        }
        on_c = {
            "spec-id": 1,
            "fields": [{"source-id": 4, "field-id": 1001, "transform": "identity", "name": "c"}],
        }
        add = {"action": "add-schema", "schema": new_schema, "last-column-id": 4}
        current = {"action": "set-current-schema", "schema-id": -1}
        spec = {"action": "add-spec", "spec": on_c}
        default = {"action": "set-default-spec", "spec-id": -1}
        # a create adding two schemas binds a spec sent before set-current-schema against
        # schema 0 (Java's builder starts with current schema id 0), so a spec on a column
        # of the second is refused by both
        two = [_create_updates("duckdb", 2)[2], add, spec, current]
        for updates, expected, table, requirements in (
            ([add, spec, default, current], 400, "java_v2", []),
            ([add, current, spec, default], 200, "java_v2", []),
            (two, 400, "two_schemas", [{"type": "assert-create"}]),
        ):
            results = {}
            for side, base in servers.items():
                status, answer = _post(
                    f"{base}/namespaces/orders/tables/{table}",
                    {"requirements": requirements, "updates": updates},
                )
                results[side] = (
                    status,
                    _shape(answer["metadata"]) if status == 200 else answer["error"]["message"],
                )
            assert results["icepark"] == results["java"], results
            assert results["icepark"][0] == expected
