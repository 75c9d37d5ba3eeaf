"""Iceberg views both ways between Java's Spark and ``ispark.sql``: Java creates views through
icepark's REST server (over a SQLite catalog, whose rows are Java's JDBC layout) and icepark's
SQL selects from them, expanding their ``spark`` representation; a view icepark's SQL creates
is read by Java's Spark through the same server."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark import spark as ispark
from icepark.catalog import load_catalog
from icepark.rest import create_app
from tests.rest.conftest import serving

pytestmark = pytest.mark.interop
_names = itertools.count()


def test_views_both_ways(spark: Any, refspark: Any, tmp_path: Path) -> None:
    # the same catalog name on both sides: a view's SQL names its tables with it
    name = f"jv{next(_names)}"
    catalog = load_catalog(name, uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "w"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("kind", pa.string()), ("v", pa.float64())])
    )
    table.append(
        pa.table(
            {
                "id": pa.array(range(6), pa.int64()),
                "kind": ["a", "b", "a", "c", "b", "a"],
                "v": [0.5 * i for i in range(6)],
            }
        )
    )
    with serving(create_app(catalog)) as url:
        base = f"spark.sql.catalog.{name}"
        conf = {
            base: "org.apache.iceberg.spark.SparkCatalog",
            f"{base}.catalog-impl": "org.apache.iceberg.rest.JdkRestCatalog",
            f"{base}.uri": url,
            f"{base}.cache-enabled": "false",
        }
        java = refspark.request(
            [
                f"CREATE VIEW {name}.db.by_kind (kind COMMENT 'the kind', n) "
                f"COMMENT 'rows per kind' AS SELECT kind, count(*) FROM {name}.db.t GROUP BY kind",
                f"CREATE VIEW {name}.db.big AS SELECT id, v FROM {name}.db.t WHERE v >= 1.0",
            ],
            conf=conf,
        )
        assert all("error" not in r for r in java)

        # icepark's SQL expands Java's views (one over the other's table, with a column list)
        rows = ispark.sql(spark, f"SELECT * FROM {name}.db.by_kind ORDER BY kind", catalog)
        assert [tuple(r) for r in rows.collect()] == [("a", 3), ("b", 2), ("c", 1)]
        joined = ispark.sql(
            spark,
            f"SELECT b.id, k.n FROM {name}.db.big b JOIN {name}.db.t t ON b.id = t.id "
            f"JOIN {name}.db.by_kind k ON k.kind = t.kind ORDER BY b.id",
            catalog,
        )
        assert [tuple(r) for r in joined.collect()] == [(2, 3), (3, 1), (4, 2), (5, 3)]
        described = ispark.sql(spark, f"DESCRIBE {name}.db.by_kind", catalog).collect()
        assert [(r[0], r[2]) for r in described[:2]] == [("kind", "the kind"), ("n", "")]
        javas = refspark.request([f"DESCRIBE {name}.db.by_kind"], conf=conf)[0]["rows"]
        assert [list(r) for r in described[:2]] == [list(r) for r in javas[:2]]  # as Java's
        shown = ispark.sql(spark, f"SHOW VIEWS IN {name}.db", catalog).collect()
        assert sorted(r[1] for r in shown if not r[2]) == ["big", "by_kind"]

        # a view icepark's SQL creates, read by Java's Spark through the server
        ispark.sql(
            spark,
            f"CREATE VIEW {name}.db.top COMMENT 'the two largest' AS "
            f"SELECT id, v FROM {name}.db.t ORDER BY v DESC LIMIT 2",
            catalog,
        )
        read = refspark.request([f"SELECT * FROM {name}.db.top ORDER BY id"], conf=conf)
        assert read[0]["rows"] == [[4, 2.0], [5, 2.5]]
