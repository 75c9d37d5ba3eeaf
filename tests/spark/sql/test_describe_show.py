"""``DESCRIBE ... t col``, ``SHOW TABLES|VIEWS [IN ns] [LIKE ...]`` and ``DROP VIEW`` beside
Java's Spark: the reference engine creates the tables and a temporary view, icepark's catalog
reads the same warehouse, and both answer the same statements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icepark import spark as ispark
from icepark.catalog import load_catalog
from icepark.errors import NoSuchViewError
from icepark.spark.sql.errors import SqlAnalysisError

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SETUP = [
    "CREATE NAMESPACE IF NOT EXISTS db",
    "CREATE TABLE db.t (id bigint NOT NULL COMMENT 'the id', d double, "
    "s struct<a: int COMMENT 'inner', b: string> COMMENT 'outer', m map<string, int>, "
    "l array<struct<x: int>>) USING iceberg",
    "CREATE TABLE db.events (x int) USING iceberg",
    "CREATE TABLE db.tiny (x int) USING iceberg",
    "INSERT INTO db.t VALUES (1, 1.5, named_struct('a', 1, 'b', 'x'), map('k', 1), "
    "array(named_struct('x', 1)))",
    "CREATE OR REPLACE TEMPORARY VIEW tv AS SELECT 1 AS a",
    # a tag keeps the schema of its snapshot; a branch reads with the table's current one
    "ALTER TABLE db.t CREATE TAG v1",
    "ALTER TABLE db.t ADD COLUMN later string COMMENT 'added after v1'",
]

DESCRIBED = [
    "DESCRIBE TABLE db.t id",
    "DESC db.t d",
    "DESCRIBE TABLE EXTENDED db.t id",
    "DESCRIBE EXTENDED db.t `d`",
    "DESCRIBE FORMATTED db.t s",
    "DESCRIBE db.t m",
    "DESCRIBE db.t l",
    "DESCRIBE TABLE db.t ID",
    "DESCRIBE db.t.files content",
    "DESCRIBE TABLE db.t.snapshots committed_at",
    "DESCRIBE db.t.branch_main id",
    "DESCRIBE db.t.branch_main later",
    "DESCRIBE db.t.tag_v1 d",
]
REFUSED = [
    ("DESCRIBE TABLE db.t s.a", "nested column: s.a"),
    ("DESCRIBE db.t `s`.`b`", "nested column: s.b"),
    ("DESCRIBE TABLE db.t nope", "`nope`"),
    ("DESCRIBE db.t `s.a`", "`s.a`"),
    ("DESCRIBE db.t.tag_v1 later", "`later`"),
]
SHOWN = [
    "SHOW TABLES IN db",
    "SHOW TABLES IN db LIKE 't*'",
    "SHOW TABLES FROM db LIKE 'e*|tin*'",
]
# a catalog that cannot hold views (Java's Hadoop catalog, icepark's file-system one) lists
# Spark's temporary views only, with or without a namespace, and drops none
VIEWS = [
    "SHOW VIEWS",
    "SHOW VIEWS LIKE 't*'",
    "SHOW VIEWS IN db",
    "SHOW VIEWS FROM db LIKE 'x*'",
    "DROP VIEW IF EXISTS db.nope",
    "DROP VIEW IF EXISTS db.t",
]


def test_describe_a_column_and_show_tables_as_java(
    spark: Any, refspark: Any, tmp_path: Path
) -> None:
    warehouse = tmp_path / "java"
    warehouse.mkdir()
    java = refspark.catalog_for(warehouse)
    statements = [f"USE {java}", *SETUP, *DESCRIBED, *(q for q, _ in REFUSED), *SHOWN]
    statements += [*VIEWS, "DROP VIEW db.nope"]
    statements += ["USE db", "SHOW TABLES", "SHOW TABLES LIKE 't*'", "SHOW VIEWS"]
    after = ["USE spark_catalog", "DROP VIEW IF EXISTS tv"]
    answers = refspark.request(statements + after, check=False)
    assert not [a["error"] for a in answers[: 1 + len(SETUP)] if "error" in a]
    results = answers[1 + len(SETUP) : -len(after)]
    ours = load_catalog("shared", type="filesystem", warehouse=str(warehouse))
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW tv AS SELECT 1 AS a")
    try:
        for query, answer in zip(DESCRIBED, results, strict=False):
            assert answer["columns"] == ["info_name", "info_value"], query
            got = ispark.sql(spark, query, ours)
            assert got.columns == answer["columns"], query
            assert [list(r) for r in got.collect()] == answer["rows"], query
        for (query, message), answer in zip(REFUSED, results[len(DESCRIBED) :], strict=False):
            assert message in answer["error"], query
            with pytest.raises(SqlAnalysisError, match=message):
                ispark.sql(spark, query, ours)
        # temporary views are Spark's session catalog's: Java lists none for the Iceberg
        # catalog's namespace, nor does icepark
        shown = results[len(DESCRIBED) + len(REFUSED) :]
        for query, answer in zip(SHOWN, shown, strict=False):
            got = ispark.sql(spark, query, ours)
            assert got.columns == answer["columns"] == ["namespace", "tableName", "isTemporary"]
            # Java lists in its catalog's order (a Hadoop catalog's: the file system's)
            assert [list(r) for r in got.collect()] == sorted(answer["rows"]), query
        assert not any(r[2] for a in shown[: len(SHOWN)] for r in a["rows"])
        # other tests' temporary views may live in either session: only this test's compared
        mine = {"tv"}
        for query, answer in zip(VIEWS, shown[len(SHOWN) :], strict=False):
            got = ispark.sql(spark, query, ours)
            assert got.columns == answer["columns"], query
            java_rows = [r for r in answer["rows"] if not r[2] or r[1] in mine]
            assert [list(r) for r in got.collect() if not r[2] or r[1] in mine] == java_rows
        assert (
            shown[len(SHOWN)]["rows"]
            and "VIEW_NOT_FOUND" in shown[len(SHOWN) + len(VIEWS)]["error"]
        )
        with pytest.raises(NoSuchViewError):
            ispark.sql(spark, "DROP VIEW db.nope", ours)
        used = ispark.sql(spark, "USE db; SHOW TABLES", ours).collect()
        assert [list(r) for r in used] == sorted(shown[-3]["rows"])
        liked = ispark.sql(spark, "SHOW TABLES LIKE 't*'", ours).collect()
        assert [list(r) for r in liked] == sorted(shown[-2]["rows"])
        views = [list(r) for r in ispark.sql(spark, "SHOW VIEWS", ours).collect()]
        assert [r for r in views if r[1] in mine] == [r for r in shown[-1]["rows"] if r[1] in mine]
        assert [r[1] for r in liked] == ["t", "tiny"]
        # the whole table's DESCRIBE takes the same schema as the column's (Java's above)
        tagged = [r[0] for r in ispark.sql(spark, "DESCRIBE db.t.tag_v1", ours).collect()]
        current = [r[0] for r in ispark.sql(spark, "DESCRIBE db.t", ours).collect()]
        assert current[: len(tagged) + 1] == [*tagged, "later"]
        # a temporary view's own columns stay Spark's to describe
        assert ispark.sql(spark, "DESCRIBE tv a", ours).first()[1] == "a"
    finally:
        ispark.sql(spark, f"USE {ours.name}", ours)
        spark.catalog.dropTempView("tv")
