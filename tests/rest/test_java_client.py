"""Java's REST client (``RESTCatalog`` of Iceberg 1.10.2 in Spark, on the reference engine)
against icepark's REST server with OAuth2: Java creates, inserts and reads; icepark reads what
Java wrote and Java reads what icepark wrote."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pytest

from icepark.catalog.base import Catalog
from icepark.rest import Principals, create_app
from tests.rest.conftest import serving

pytestmark = pytest.mark.interop
_names = itertools.count()


def _rest_conf(name: str, url: str, credential: str) -> dict[str, str]:
    base = f"spark.sql.catalog.{name}"
    return {
        base: "org.apache.iceberg.spark.SparkCatalog",
        f"{base}.catalog-impl": "org.apache.iceberg.rest.JdkRestCatalog",
        f"{base}.uri": url,
        f"{base}.credential": credential,
        f"{base}.cache-enabled": "false",  # see icepark's commits at once
    }


def test_java_rest_client_round_trip(refspark: Any, catalog: Catalog) -> None:
    principals = Principals.from_dict(
        {"principals": [{"client-id": "spark", "client-secret": "j4va", "grants": {"*": "admin"}}]}
    )
    name = f"rc{next(_names)}"  # Spark caches catalogs by name: one name per server
    with serving(create_app(catalog, auth=principals)) as url:
        conf = _rest_conf(name, url, "spark:j4va")
        refspark.request(
            [
                f"CREATE NAMESPACE {name}.db",
                f"CREATE TABLE {name}.db.events (id bigint, kind string, ts timestamp) "
                "USING iceberg PARTITIONED BY (kind, days(ts))",
                f"INSERT INTO {name}.db.events VALUES (1, 'a', TIMESTAMP '2024-01-01 10:00:00'), "
                "(2, 'b', TIMESTAMP '2024-01-02 11:00:00'), (3, 'a', TIMESTAMP '2024-01-02 12:00:00')",
            ],
            conf=conf,
        )
        # icepark reads what Java committed through the server
        table = catalog.load_table("db.events")
        assert [f.name for f in table.spec().fields] == ["kind", "ts_day"]
        got = table.scan().to_arrow().sort_by("id")
        assert got.column("id").to_pylist() == [1, 2, 3]
        assert got.column("kind").to_pylist() == ["a", "b", "a"]

        # icepark writes on the backing catalog, Java reads through the server
        table.append(
            pa.table(
                {
                    "id": pa.array([4], pa.int64()),
                    "kind": ["c"],
                    "ts": pa.array([1_704_254_400_000_000], pa.timestamp("us", tz="UTC")),
                }
            )
        )
        rows = refspark.rows(
            f"SELECT kind, count(*) AS n FROM {name}.db.events GROUP BY kind ORDER BY kind"
        )
        assert rows == [["a", 2], ["b", 1], ["c", 1]]
        # Java's commits keep going on top of icepark's (requirements checked by the server)
        refspark.request(
            [
                f"ALTER TABLE {name}.db.events ADD COLUMN note string",
                f"DELETE FROM {name}.db.events WHERE id = 2",
            ]
        )
        table = catalog.load_table("db.events")
        assert "note" in [f.name for f in table.schema().fields]
        assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 3, 4]
        # CTAS is a staged create (stage-create, then one commit asserting the table is new)
        refspark.request(
            [f"CREATE TABLE {name}.db.copy USING iceberg AS SELECT id, kind FROM {name}.db.events"]
        )
        copy = catalog.load_table("db.copy")
        assert sorted(copy.scan().to_arrow().column("id").to_pylist()) == [1, 3, 4]
        assert len(copy.metadata.metadata_log) == 0  # created and filled in one commit
        tables = refspark.rows(f"SHOW TABLES IN {name}.db")
        assert sorted(r[1] for r in tables) == ["copy", "events"]
        refspark.request([f"DROP TABLE {name}.db.events"])
        assert not catalog.table_exists("db.events")
