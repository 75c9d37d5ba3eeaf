"""``SHOW TBLPROPERTIES``, ``SHOW CREATE TABLE`` and ``DESCRIBE [EXTENDED]`` of Iceberg views,
as in the Iceberg Spark documentation's view examples: the views one engine creates, shown by
both (Java's Spark through icepark's REST server over the same catalog), with equal output;
and the same statements' output on views each engine created itself."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark import spark as ispark
from icepark.catalog import load_catalog
from icepark.rest import create_app
from tests.rest.conftest import serving

pytestmark = [pytest.mark.spark, pytest.mark.interop]
_names = itertools.count()

CREATE = [
    "CREATE VIEW {c}.db.v2 (ID COMMENT 'Unique ID', ZIP COMMENT 'Zipcode')"
    " COMMENT 'View Comment' AS SELECT id, zip FROM {c}.db.t",
    "CREATE VIEW {c}.db.v3 TBLPROPERTIES ('key1' = 'val1', 'key2' = 'it\\'s')"
    " AS SELECT * FROM {c}.db.t",
    "CREATE VIEW {c}.db.v4 TBLPROPERTIES ('location' = '{loc}') AS SELECT id FROM {c}.db.t",
    "CREATE OR REPLACE VIEW {c}.db.v2 (updated_id COMMENT 'updated ID')"
    " TBLPROPERTIES ('key1' = 'new_val1') AS SELECT id FROM {c}.db.t",
    "ALTER VIEW {c}.db.v3 SET TBLPROPERTIES ('key3' = 'val3')",
    "ALTER VIEW {c}.db.v3 UNSET TBLPROPERTIES ('key1')",
]

SHOW = [
    "SHOW TBLPROPERTIES {c}.db.v3",
    "SHOW TBLPROPERTIES {c}.db.v3 ('key2')",
    "SHOW TBLPROPERTIES {c}.db.v3 ('nokey')",
    "SHOW TBLPROPERTIES {c}.db.v2",
    "SHOW TBLPROPERTIES {c}.db.v4",
    "SHOW CREATE TABLE {c}.db.v2",
    "SHOW CREATE TABLE {c}.db.v3",
    "DESCRIBE {c}.db.v2",
    "DESCRIBE EXTENDED {c}.db.v2",
    "DESCRIBE EXTENDED {c}.db.v3",
]


def _catalog(tmp: Path, name: str) -> Any:
    catalog = load_catalog(name, uri=f"sqlite:///{tmp}/c.db", warehouse=str(tmp / "w"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("zip", pa.string())]))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "zip": ["a", "b"]}))
    return catalog


def _conf(name: str, url: str) -> dict[str, str]:
    base = f"spark.sql.catalog.{name}"
    return {
        base: "org.apache.iceberg.spark.SparkCatalog",
        f"{base}.catalog-impl": "org.apache.iceberg.rest.JdkRestCatalog",
        f"{base}.uri": url,
        f"{base}.cache-enabled": "false",
    }


def _normal(rows: Any, tmp: Path) -> list[tuple[str, ...]]:
    out = []
    for r in rows:
        cells = [re.sub(r"Spark \d+\.\d+\.\d+", "Spark X", str(v)) for v in r]
        out.append(tuple(c.replace(str(tmp), "TMP") for c in cells))
    return sorted(out)


def _java(refspark: Any, conf: dict[str, str], statements: list[str]) -> list[Any]:
    results = refspark.request(statements, conf=conf, check=False)
    for r in results:
        assert "error" not in r, f"reference engine: {r['sql']}: {r['error']}"
    return [r["rows"] for r in results]


def test_views_shown_as_java_shows_them(any_spark: Any, refspark: Any, tmp_path: Path) -> None:
    spark = any_spark
    for creator in ("icepark", "java"):
        tmp = tmp_path / creator
        name = f"vs{next(_names)}"
        catalog = _catalog(tmp, name)
        custom = str(tmp / "custom" / "v4")
        created = [s.format(c=name, loc=custom) for s in CREATE]
        shown = [s.format(c=name) for s in SHOW]
        with serving(create_app(catalog)) as url:
            conf = _conf(name, url)
            if creator == "icepark":
                for statement in created:
                    ispark.sql(spark, statement, catalog)
            else:
                _java(refspark, conf, created)
            theirs = _java(refspark, conf, shown)
        for statement, java_rows in zip(shown, theirs, strict=True):
            mine = ispark.sql(spark, statement, catalog).collect()
            assert _normal(mine, tmp) == _normal(java_rows, tmp), (creator, statement)
        assert catalog.load_view("db.v4").metadata.location == custom
        props = catalog.load_view("db.v2").properties
        assert props["spark.query-column-names"] == "id" and props["comment"] == "View Comment"
