"""Java's REST client (``RESTCatalog`` of Iceberg 1.10.2 in Spark, on the reference engine) on
icepark's REST server, views: Spark SQL creates, queries, lists, replaces, alters and drops a
view over an icepark-served table; icepark reads the view metadata Java wrote through the
server, and Java's Spark queries a view icepark created."""

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
        f"{base}.cache-enabled": "false",
    }


def _catalog_views(result: dict[str, Any]) -> list[str]:
    """The catalog's views in a SHOW VIEWS answer; the shared Java session's temporary views
    (other tests' ``createOrReplaceTempView``) are listed beside them with isTemporary set."""
    return sorted(row[1] for row in result["rows"] if not row[2])


def test_java_views_through_the_server(refspark: Any, catalog: Catalog) -> None:
    principals = Principals.from_dict(
        {"principals": [{"client-id": "spark", "client-secret": "v1ews", "grants": {"*": "write"}}]}
    )
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("kind", pa.string())]))
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "kind": ["a", "b", "a"]}))
    name = f"rcv{next(_names)}"  # Spark caches catalogs by name: one name per server
    with serving(create_app(catalog, auth=principals)) as url:
        conf = _rest_conf(name, url, "spark:v1ews")
        results = refspark.request(
            [
                # a session's temporary view is listed beside the catalog's views
                "CREATE OR REPLACE TEMPORARY VIEW rcv_temporary AS SELECT 1 AS one",
                f"CREATE VIEW {name}.db.v AS SELECT id, kind FROM {name}.db.t WHERE id > 1",
                f"SELECT * FROM {name}.db.v ORDER BY id",
                f"SHOW VIEWS IN {name}.db",
            ],
            conf=conf,
        )
        assert results[2]["rows"] == [[2, "b"], [3, "a"]]
        assert _catalog_views(results[3]) == ["v"]
        assert ["rcv_temporary", True] in [r[1:] for r in results[3]["rows"] if r[2]]

        # icepark reads the view metadata Java wrote through the server
        java_view = catalog.load_view("db.v")
        assert java_view.sql() == f"SELECT id, kind FROM {name}.db.t WHERE id > 1"
        assert [f.name for f in java_view.schema.fields] == ["id", "kind"]
        # Java names the session's catalog and namespace as the view's defaults
        version = java_view.current_version
        assert version.default_catalog == "spark_catalog"
        assert version.default_namespace == ("default",)
        assert java_view.properties["spark.query-column-names"] == "id,kind"
        first_uuid = java_view.metadata.view_uuid

        results = refspark.request(
            [
                f"CREATE OR REPLACE VIEW {name}.db.v AS SELECT id FROM {name}.db.t WHERE kind = 'a'",
                f"ALTER VIEW {name}.db.v SET TBLPROPERTIES ('team' = 'etl')",
                f"SELECT * FROM {name}.db.v ORDER BY id",
            ]
        )
        assert results[2]["rows"] == [[1], [3]]
        replaced = catalog.load_view("db.v")
        assert replaced.metadata.view_uuid == first_uuid  # a commit, not a new view
        assert replaced.sql() == f"SELECT id FROM {name}.db.t WHERE kind = 'a'"
        assert [f.name for f in replaced.schema.fields] == ["id"]
        assert [v.version_id for v in replaced.versions] == [1, 2]
        assert replaced.properties["team"] == "etl"

        # a view icepark created, resolved in the catalog and namespace it names (as Java's)
        catalog.create_view(
            "db.mine",
            pa.schema([("kind", pa.string()), ("n", pa.int64())]),
            "SELECT kind, count(*) AS n FROM t GROUP BY kind",
            default_catalog=name,
            default_namespace=("db",),
        )
        results = refspark.request(
            [
                f"SELECT * FROM {name}.db.mine ORDER BY kind",
                f"SHOW VIEWS IN {name}.db",
                f"DROP VIEW {name}.db.v",
                f"SHOW VIEWS IN {name}.db",
            ]
        )
        assert results[0]["rows"] == [["a", 2], ["b", 1]]
        assert _catalog_views(results[1]) == ["mine", "v"]
        assert _catalog_views(results[3]) == ["mine"]
        assert not catalog.view_exists("db.v")
        assert catalog.view_exists("db.mine") and catalog.table_exists("db.t")
