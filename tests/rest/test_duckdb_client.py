"""DuckDB 1.5.5 (its Iceberg extension, from PyPI) as a client of ``icepark serve``: it
ATTACHes the server without auth, with OAuth2 (client credentials by HTTP Basic, scope
``PRINCIPAL_ROLE:ALL``) and with vended credentials on S3 (moto, checking keys), creates
namespaces and tables (DuckDB's create: a stage-create, then a commit whose updates set the
current schema last), inserts, deletes (position deletes), updates, repartitions, adds a
column, and creates a table from a query. What it wrote is read back by icepark (its SQL
catalog and its REST client), PyIceberg and the reference engine (Java, by metadata file): the
same rows. icepark then commits on top and DuckDB reads that. A read-only principal's INSERT
is refused and changes nothing.

One DuckDB connection and one server per configuration for the whole module.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb_judge
import pyarrow as pa
import pytest
import refengine

import icepark
from icepark.catalog.base import Catalog
from icepark.rest import Principals, create_app
from icepark.rest.catalog import RestCatalog
from icepark.rest.server.credentials import StaticCredentials
from tests.rest.conftest import serving

pytestmark = pytest.mark.skipif(
    duckdb_judge.missing() is not None, reason=str(duckdb_judge.missing())
)

SECRETS = {"etl": "etl:se+cret 1", "ro": "ro-secret-2"}


@pytest.fixture(scope="module")
def duck() -> Any:
    return duckdb_judge.shared()


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory, duck: Any) -> Iterator[tuple[Catalog, str]]:
    """An icepark SQL catalog on a local warehouse, served without auth, attached as ``ice``."""
    root = tmp_path_factory.mktemp("duckdb-plain")
    catalog = icepark.load_catalog(uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    with serving(create_app(catalog)) as url:
        duckdb_judge.attach(duck, "ice", url)
        yield catalog, url
        duck.execute("DETACH ice")


def _norm(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row as comparable values (DuckDB gives UUIDs as text and its own UTC zone)."""
    return tuple(
        str(v)
        if isinstance(v, uuid.UUID)
        else v.astimezone(dt.UTC)
        if isinstance(v, dt.datetime) and v.tzinfo
        else v
        for v in row.values()
    )


def _same(*tables: list[dict[str, Any]]) -> None:
    first = sorted(map(_norm, tables[0]))
    for other in tables[1:]:
        assert sorted(map(_norm, other)) == first


def _reference_rows(refspark: Any, metadata_location: str) -> list[tuple[Any, ...]]:
    """Java's reading of the table at that metadata file, in comparable text."""
    got = refspark.rows(
        "SELECT id, name, CAST(price AS STRING), CAST(day AS STRING), unix_micros(ts), ok FROM t",
        views={"t": metadata_location},
    )
    return sorted(tuple(r) for r in got)


def _as_reference(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return sorted(
        (
            r["id"],
            r["name"],
            None if r["price"] is None else str(r["price"]),
            None if r["day"] is None else r["day"].isoformat(),
            None if r["ts"] is None else (r["ts"] - epoch) // dt.timedelta(microseconds=1),
            r["ok"],
        )
        for r in rows
    )


def test_duckdb_writes_through_the_server_and_every_engine_reads_it(
    duck: Any, plain: tuple[Catalog, str], request: pytest.FixtureRequest
) -> None:
    catalog, url = plain
    duck.execute("CREATE SCHEMA ice.duck")
    assert catalog.namespace_exists("duck")
    duck.execute(
        "CREATE TABLE ice.duck.t (id bigint, name varchar, price decimal(10, 2), day date, "
        "ts timestamptz, ok boolean)"
    )
    duck.execute(
        "INSERT INTO ice.duck.t SELECT range, 'n' || range, range * 1.25, "
        "DATE '2024-01-01' + (range % 20)::int, "
        "TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (range) HOUR, range % 2 = 0 "
        "FROM range(300)"
    )
    duck.execute("DELETE FROM ice.duck.t WHERE id % 10 = 0")
    duck.execute("UPDATE ice.duck.t SET name = 'upd', price = 0.5 WHERE id % 7 = 0")
    duck.execute("ALTER TABLE ice.duck.t SET PARTITIONED BY (day)")
    duck.execute(
        "INSERT INTO ice.duck.t VALUES (1000, 'late', 9.99, DATE '2024-02-01', "
        "TIMESTAMPTZ '2024-02-01 12:00:00+00', NULL)"
    )
    theirs = duckdb_judge.rows(duck, "SELECT * FROM ice.duck.t")
    assert len(theirs) == 271 and sum(r["name"] == "upd" for r in theirs) == 38

    table = catalog.load_table("duck.t")
    assert [s.summary.operation.value for s in table.snapshots()][:2] == ["append", "delete"]
    assert [str(f.transform) for f in table.spec().fields] == ["identity"]
    mine = table.scan().to_arrow().to_pylist()
    over_rest = RestCatalog("mine", {"uri": url}).load_table("duck.t").scan().to_arrow()
    pyiceberg_rest = pytest.importorskip("pyiceberg.catalog.rest")
    pyiceberg = pyiceberg_rest.RestCatalog("py", uri=url).load_table("duck.t").scan().to_arrow()
    _same(theirs, mine, over_rest.to_pylist(), pyiceberg.to_pylist())
    if refengine.available():  # Java too, where the reference engine is installed
        refspark = request.getfixturevalue("refspark")
        assert _reference_rows(refspark, table.metadata_location) == _as_reference(theirs)

    # icepark commits on DuckDB's table (schema evolved by DuckDB first); DuckDB reads it
    duck.execute("ALTER TABLE ice.duck.t ADD COLUMN note varchar")
    table.refresh()
    assert table.schema().find_field("note").field_id == 7
    extra = pa.table(
        {
            "id": pa.array([2000], pa.int64()),
            "name": ["icepark"],
            "price": pa.array([decimal.Decimal("1.00")], pa.decimal128(10, 2)),
            "day": pa.array([dt.date(2024, 3, 1)]),
            "ts": pa.array([dt.datetime(2024, 3, 1, tzinfo=dt.UTC)], pa.timestamp("us", "UTC")),
            "ok": [True],
            "note": ["from icepark"],
        }
    )
    table.append(extra)
    table.delete("id = 1000")
    after = duckdb_judge.rows(duck, "SELECT * FROM ice.duck.t")
    _same(after, table.scan().to_arrow().to_pylist())
    assert {r["id"]: r["note"] for r in after}[2000] == "from icepark"
    assert 1000 not in {r["id"] for r in after}


def test_duckdb_create_table_as_on_a_local_warehouse(
    duck: Any, plain: tuple[Catalog, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's CREATE TABLE AS writes the new table's manifests into ``<location>/metadata/``
    before the create commits, and on a local file system nothing has made that folder yet:
    DuckDB 1.5.5 creates ``<location>/data`` (and a stray ``data`` folder in its working
    directory) but not ``metadata``, and fails. On S3 the same statement works (the vended
    credentials test). Nothing is left in the catalog."""
    catalog, _ = plain
    catalog.create_namespace("ctas")
    monkeypatch.chdir(tmp_path)  # where DuckDB leaves its stray folder
    with pytest.raises(Exception, match=r"metadata/.*\.avro.*No such file or directory"):
        duck.execute("CREATE TABLE ice.ctas.c AS SELECT * FROM range(5) r(x)")
    assert not catalog.table_exists("ctas.c")


@pytest.fixture(scope="module")
def oauth(tmp_path_factory: pytest.TempPathFactory, duck: Any) -> Iterator[tuple[Catalog, str]]:
    """A server with principals ``etl`` (admin) and ``ro`` (read), attached as ``ice_etl``
    and ``ice_ro`` through DuckDB iceberg secrets (OAuth2 client credentials)."""
    root = tmp_path_factory.mktemp("duckdb-oauth")
    catalog = icepark.load_catalog(uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    principals = Principals.from_dict(
        {
            "principals": [
                {"client-id": "etl", "client-secret": SECRETS["etl"], "grants": {"*": "admin"}},
                {"client-id": "ro", "client-secret": SECRETS["ro"], "grants": {"*": "read"}},
            ]
        }
    )
    with serving(create_app(catalog, auth=principals)) as url:
        for who in ("etl", "ro"):
            duck.execute(
                f"CREATE SECRET s_{who} (TYPE iceberg, CLIENT_ID '{who}', "
                f"CLIENT_SECRET '{SECRETS[who]}', OAUTH2_SERVER_URI '{url}/v1/oauth/tokens')"
            )
            duckdb_judge.attach(duck, f"ice_{who}", url, secret=f"s_{who}")
        yield catalog, url
        for who in ("etl", "ro"):
            duck.execute(f"DETACH ice_{who}")
            duck.execute(f"DROP SECRET s_{who}")


def test_duckdb_with_oauth2_read_only_insert_refused(duck: Any, oauth: tuple[Catalog, str]) -> None:
    catalog, url = oauth
    duck.execute("CREATE SCHEMA ice_etl.sales")
    duck.execute("CREATE TABLE ice_etl.sales.t (id bigint, name varchar)")
    duck.execute("INSERT INTO ice_etl.sales.t SELECT range, 'n' || range FROM range(10)")
    before = catalog.metadata_location("sales.t")
    rows = duckdb_judge.rows(duck, "SELECT * FROM ice_ro.sales.t")
    assert sorted(r["id"] for r in rows) == list(range(10))
    with pytest.raises(Exception, match=r"403|Forbidden"):
        duck.execute("INSERT INTO ice_ro.sales.t VALUES (99, 'nope')")
    with pytest.raises(Exception, match=r"403|Forbidden"):
        duck.execute("DELETE FROM ice_ro.sales.t WHERE id = 1")
    assert catalog.metadata_location("sales.t") == before
    assert catalog.load_table("sales.t").scan().to_arrow().num_rows == 10
    # DuckDB asks for a token when the secret is made: a wrong one is refused there
    with pytest.raises(Exception, match=r"401.*invalid_client"):
        duck.execute(
            f"CREATE SECRET s_bad (TYPE iceberg, CLIENT_ID 'etl', CLIENT_SECRET 'wrong', "
            f"OAUTH2_SERVER_URI '{url}/v1/oauth/tokens')"
        )


def test_duckdb_with_vended_credentials_on_s3(
    duck: Any, s3_with_auth: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB has no S3 keys of its own: the server vends the catalog's (and the endpoint)
    with each table; the moto server checks them. (DuckDB's CREATE TABLE AS makes an empty
    ``data`` folder in its working directory even for an S3 table, hence the chdir.)"""
    monkeypatch.chdir(tmp_path)
    props = {**s3_with_auth, "s3.path-style-access": "true"}
    warehouse = f"s3://secured/duckdb-{uuid.uuid4().hex[:8]}"
    catalog = icepark.load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=warehouse, **props)
    catalog.create_namespace("db")
    with serving(create_app(catalog, credentials=StaticCredentials(catalog.properties))) as url:
        duckdb_judge.attach(duck, "ice_s3", url)
        duck.execute("CREATE TABLE ice_s3.db.t (id bigint, name varchar)")
        duck.execute("INSERT INTO ice_s3.db.t SELECT range, 'n' || range FROM range(50)")
        duck.execute("DELETE FROM ice_s3.db.t WHERE id < 5")
        duck.execute("UPDATE ice_s3.db.t SET name = 'z' WHERE id = 7")
        duck.execute("CREATE TABLE ice_s3.db.c AS SELECT range AS x FROM range(5)")
        theirs = duckdb_judge.rows(duck, "SELECT * FROM ice_s3.db.t")
        assert len(theirs) == 45
        table = catalog.load_table("db.t")
        assert table.location.startswith(warehouse)
        pyiceberg_rest = pytest.importorskip("pyiceberg.catalog.rest")
        theirs_py = pyiceberg_rest.RestCatalog("py", uri=url).load_table("db.t").scan().to_arrow()
        vended = RestCatalog("mine", {"uri": url}).load_table("db.t").scan().to_arrow()
        _same(
            theirs, table.scan().to_arrow().to_pylist(), theirs_py.to_pylist(), vended.to_pylist()
        )
        ctas = catalog.load_table("db.c").scan().to_arrow().column("x").to_pylist()
        assert sorted(ctas) == list(range(5))
        duck.execute("DETACH ice_s3")
