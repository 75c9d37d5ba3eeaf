"""ispark.sql without the reference engine: errors (typed, placed, nothing half-applied),
pushed predicates seen in EXPLAIN, Iceberg views on a SQL catalog, WAP staging, branches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark import spark as ispark
from icepark.catalog import load_catalog
from icepark.errors import NoSuchTableError, UnsupportedOperationError, ValidationError
from icepark.spark.sql import errors as sql_errors
from icepark.spark.sql.errors import (
    SqlAnalysisError,
    SqlParseError,
    SqlScriptError,
    UnsupportedSqlError,
)
from icepark.spark.sql.script import split_statements

pytestmark = pytest.mark.spark


@pytest.fixture
def events(catalog: Any) -> Any:
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("cat", pa.string())])
    table = catalog.create_table("db.events", schema, partition_by=["day"])
    for d in range(1, 4):
        table.append(
            pa.table(
                {
                    "id": pa.array([d * 10, d * 10 + 1], pa.int64()),
                    "day": pa.array([f"2024-01-0{d}"] * 2, pa.string()).cast(pa.date32()),
                    "cat": ["a", "b"],
                }
            )
        )
    return table


def test_sql_is_the_function_and_the_package_still_imports() -> None:
    assert callable(ispark.sql)
    assert sql_errors.SqlParseError is SqlParseError


def test_split_statements_respects_quotes_and_comments() -> None:
    text = "SELECT ';' AS a; -- one; two\nSELECT `x;y` /* ; */ FROM t;\n\n  SELECT \"q;\""
    got = split_statements(text)
    assert [s.text for s in got] == [
        "SELECT ';' AS a",
        "SELECT `x;y` /* ; */ FROM t",
        'SELECT "q;"',
    ]
    assert (got[2].line, got[2].column) == (4, 3)


def test_syntax_error_has_line_and_column(spark: Any, catalog: Any, events: Any) -> None:
    with pytest.raises(SqlParseError) as info:
        ispark.sql(spark, "SELECT id\nFROM db.events\nWHERE id = = 3", catalog)
    assert (info.value.line, info.value.column) == (3, 12)
    with pytest.raises(SqlScriptError) as script:
        ispark.sql(spark, "SELECT 1;\n  SELEC id FROM db.events", catalog)
    cause = script.value.__cause__
    assert isinstance(cause, SqlParseError)
    assert (script.value.index, cause.line, cause.column) == (1, 2, 3)


def test_unknown_names_are_typed_errors(spark: Any, catalog: Any, events: Any) -> None:
    with pytest.raises(NoSuchTableError, match=r"db\.nope"):
        ispark.sql(spark, "SELECT * FROM db.nope", catalog)
    with pytest.raises(SqlAnalysisError, match="nope"):
        ispark.sql(spark, "SELECT nope FROM db.events", catalog)
    with pytest.raises(ValidationError, match="no branch or tag 'x'"):
        ispark.sql(spark, "SELECT * FROM db.events VERSION AS OF 'x'", catalog)
    with pytest.raises(UnsupportedSqlError, match="GRANT"):
        ispark.sql(spark, "GRANT SELECT ON db.events TO someone", catalog)


def test_bad_inserts_leave_the_table_unchanged(spark: Any, catalog: Any, events: Any) -> None:
    before = len(events.refresh().metadata.snapshots)
    with pytest.raises(ValidationError, match="no column 'nope'"):
        ispark.sql(spark, "INSERT INTO db.events (id, nope) VALUES (1, 2)", catalog)
    with pytest.raises(ValidationError, match="cannot safely cast column 'id'"):
        ispark.sql(spark, "INSERT INTO db.events VALUES ('x', DATE '2024-01-01', 'a')", catalog)
    with pytest.raises(ValidationError, match="2 columns, the table expects 3"):
        ispark.sql(spark, "INSERT INTO db.events VALUES (1, 'a')", catalog)
    with pytest.raises(SqlAnalysisError, match="nope"):
        ispark.sql(spark, "DELETE FROM db.events WHERE nope = 1", catalog)
    with pytest.raises(ValidationError, match="no column 'nope'"):
        ispark.sql(spark, "UPDATE db.events SET nope = 1 WHERE id = 10", catalog)
    with pytest.raises(SqlAnalysisError, match="nope"):
        ispark.sql(
            spark,
            "MERGE INTO db.events t USING db.events s ON t.id = s.nope WHEN MATCHED THEN DELETE",
            catalog,
        )
    assert len(events.refresh().metadata.snapshots) == before
    script = (
        "INSERT INTO db.events VALUES (99, DATE '2024-02-01', 'z');\n"
        "DELETE FROM db.nope WHERE id = 1;\n"
        "INSERT INTO db.events VALUES (98, DATE '2024-02-01', 'z')"
    )
    with pytest.raises(SqlScriptError) as info:
        ispark.sql(spark, script, catalog)
    assert (info.value.index, info.value.committed) == (1, 1)
    assert isinstance(info.value.__cause__, NoSuchTableError)
    found = ispark.sql(spark, "SELECT id FROM db.events WHERE id > 90", catalog).collect()
    ids = [r[0] for r in found]
    assert ids == [99]
    assert len(events.refresh().metadata.snapshots) == before + 1


def test_explain_shows_pruned_files(spark: Any, catalog: Any, events: Any) -> None:
    plan = ispark.sql(
        spark,
        "EXPLAIN SELECT e.cat, count(*) FROM db.events e JOIN db.events f ON e.id = f.id "
        "AND f.cat = 'a' WHERE e.day = DATE '2024-01-02' GROUP BY e.cat",
        catalog,
    ).first()[0]
    assert "files planned 1 of 3" in plan  # e: one day of three
    assert "filter pushed: f.cat = 'a'; files planned 3 of 3" in plan
    assert "Physical Plan" in plan
    rows = ispark.sql(
        spark, "SELECT id FROM db.events WHERE day = '2024-01-02' ORDER BY id", catalog
    ).collect()
    assert [r[0] for r in rows] == [20, 21]


def test_use_namespace(spark: Any, catalog: Any, events: Any) -> None:
    try:
        ispark.sql(spark, "USE db", catalog)
        assert ispark.sql(spark, "SELECT count(*) FROM events", catalog).first()[0] == 6
        shown = ispark.sql(spark, "SHOW TABLES", catalog).collect()
        assert [tuple(r) for r in shown] == [("db", "events", False)]
        described = ispark.sql(spark, "DESCRIBE db.events.snapshots", catalog).collect()
        assert described[0][:2] == ("committed_at", "timestamp")
        # ALTER TABLE and CALL resolve single-part names in the USE namespace too
        ispark.sql(spark, "ALTER TABLE events ADD COLUMN x int", catalog)
        assert catalog.load_table("db.events").schema().find_field("x") is not None
        ancestors = ispark.sql(spark, "CALL system.ancestors_of('events')", catalog).collect()
        assert len(ancestors) == 3
    finally:
        ispark.sql(spark, f"USE {catalog.name}", catalog)
    with pytest.raises(NoSuchTableError, match="events"):
        ispark.sql(spark, "SELECT * FROM events", catalog)


def test_branches_wap_and_tags(spark: Any, catalog: Any, events: Any) -> None:
    events.set_properties({"write.wap.enabled": "true"})
    events.create_tag("t1", events.refresh().metadata.current_snapshot_id)
    write_dev = "INSERT INTO db.events.branch_dev VALUES (7, DATE '2024-01-09', 'd')"
    with pytest.raises(ValidationError, match="no branch 'dev'"):  # as in Java: make it first
        ispark.sql(spark, write_dev, catalog)
    events.create_branch("dev", events.metadata.snapshots[0].snapshot_id)
    ispark.sql(spark, write_dev, catalog)
    dev = ispark.sql(spark, "SELECT count(*) FROM db.events.branch_dev", catalog).first()[0]
    main = ispark.sql(spark, "SELECT count(*) FROM db.events", catalog).first()[0]
    assert (dev, main) == (3, 6)  # the first snapshot's two rows and the new one
    with pytest.raises(ValidationError, match="tag"):
        ispark.sql(
            spark, "INSERT INTO db.events.tag_t1 VALUES (8, DATE '2024-01-09', 'd')", catalog
        )
    current = events.refresh().metadata.current_snapshot_id
    try:
        ispark.sql(spark, "SET spark.wap.id = w1", catalog)
        ispark.sql(spark, "INSERT INTO db.events VALUES (8, DATE '2024-01-09', 'w')", catalog)
        ispark.sql(spark, "SET spark.wap.id = w2; DELETE FROM db.events WHERE id = 10", catalog)
        # a table without write.wap.enabled ignores the id, as in Java
        ispark.sql(spark, "CREATE TABLE db.plain (a int) USING iceberg", catalog)
        ispark.sql(spark, "INSERT INTO db.plain VALUES (1)", catalog)
    finally:
        spark.conf.unset("spark.wap.id")
    table = events.refresh()
    assert table.metadata.current_snapshot_id == current  # staged, not published
    staged = [s.summary.get("wap.id") for s in table.metadata.snapshots]
    assert [w for w in staged if w] == ["w1", "w2"]
    assert ispark.sql(spark, "SELECT count(*) FROM db.events", catalog).first()[0] == 6
    assert ispark.sql(spark, "SELECT * FROM db.plain", catalog).first()[0] == 1
    tagged = ispark.sql(spark, "SELECT count(*) FROM db.events.tag_t1", catalog).first()[0]
    assert tagged == 6


def test_views_on_a_sql_catalog(spark: Any, tmp_path: Path, catalog: Any) -> None:
    with pytest.raises(UnsupportedOperationError, match="cannot hold views"):
        ispark.sql(spark, "CREATE VIEW db.v AS SELECT 1 AS one", catalog)
    cat = load_catalog(
        "sqlviews", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "w")
    )
    ispark.sql(
        spark,
        """
        CREATE NAMESPACE db COMMENT 'views here' WITH DBPROPERTIES ('team' = 'a', 'b' = 'c');
        CREATE TABLE db.t (id bigint, cat string) USING iceberg;
        INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'a');
        CREATE VIEW db.v (k COMMENT 'the key', c) COMMENT 'a view'
          TBLPROPERTIES ('team' = 'etl') AS SELECT id, cat FROM db.t WHERE cat = 'a';
        CREATE VIEW db.vv AS SELECT count(*) AS n FROM db.v
        """,
        cat,
    )
    ns_props = cat.load_namespace_properties("db")
    assert (ns_props["comment"], ns_props["team"], ns_props["b"]) == ("views here", "a", "c")
    rows = ispark.sql(spark, "SELECT k, c FROM db.v ORDER BY k", cat).collect()
    assert [tuple(r) for r in rows] == [(1, "a"), (3, "a")]
    assert ispark.sql(spark, "SELECT n FROM sqlviews.db.vv", cat).first()[0] == 2
    described = ispark.sql(spark, "DESCRIBE db.v", cat).collect()
    assert [tuple(r) for r in described] == [("k", "bigint", "the key"), ("c", "string", "")]
    ispark.sql(spark, "ALTER VIEW db.v SET TBLPROPERTIES ('a' = '1', 'b' = '2')", cat)
    ispark.sql(spark, "ALTER VIEW db.v UNSET TBLPROPERTIES ('a')", cat)
    props = cat.load_view("db.v").properties
    assert (props.get("b"), props.get("a"), props.get("team")) == ("2", None, "etl")
    ispark.sql(spark, "CREATE OR REPLACE VIEW db.v AS SELECT id AS k FROM db.t", cat)
    assert ispark.sql(spark, "SELECT count(*) FROM db.v", cat).first()[0] == 3
    shown = ispark.sql(spark, "SHOW VIEWS IN db", cat).collect()
    assert sorted(r[1] for r in shown if not r[2]) == ["v", "vv"]  # and temporary views
    # without IN: the current namespace's, as Java's (the root before any USE)
    assert [r for r in ispark.sql(spark, "SHOW VIEWS", cat).collect() if not r[2]] == []
    used = ispark.sql(spark, "USE db; SHOW VIEWS LIKE 'v*'", cat).collect()
    ispark.sql(spark, "USE sqlviews", cat)
    assert sorted(r[1] for r in used if not r[2]) == ["v", "vv"]
    ispark.sql(spark, "DROP VIEW db.vv; DROP VIEW IF EXISTS db.vv", cat)
    assert not cat.view_exists("db.vv")


def test_a_plain_select_loads_its_table_once(
    spark: Any, catalog: Any, events: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[Any] = []
    original = catalog.load_table

    def counting(identifier: Any) -> Any:
        loads.append(identifier)
        return original(identifier)

    monkeypatch.setattr(catalog, "load_table", counting)
    rows = ispark.sql(spark, "SELECT id FROM db.events WHERE id > 20", catalog).collect()
    assert sorted(r[0] for r in rows) == [21, 30, 31]
    assert len(loads) == 1  # no second load by the aggregate push-down's check
    loads.clear()
    assert ispark.sql(spark, "SELECT count(*) FROM db.events", catalog).first()[0] == 6
    assert len(loads) == 1  # answered from metadata, then not loaded again


def test_replace_table_upgrades_the_format_version(spark: Any, catalog: Any, events: Any) -> None:
    ispark.sql(spark, "CREATE TABLE db.rv (a int) USING iceberg", catalog)
    ispark.sql(spark, "INSERT INTO db.rv VALUES (1)", catalog)
    ispark.sql(
        spark,
        "REPLACE TABLE db.rv (a int, b string) USING iceberg "
        "TBLPROPERTIES ('format-version' = '3', 'team' = 'x')",
        catalog,
    )
    md = catalog.load_table("db.rv").metadata
    assert md.format_version == 3
    assert "format-version" not in md.properties  # reserved: an upgrade, not a property
    assert md.properties["team"] == "x"
    assert [f.name for f in md.schema().fields] == ["a", "b"]
    assert md.current_snapshot_id is None and len(md.snapshots) == 1
    with pytest.raises(ValidationError, match="downgrade v3 table to v2"):
        ispark.sql(
            spark,
            "REPLACE TABLE db.rv (a int) USING iceberg TBLPROPERTIES ('format-version' = '2')",
            catalog,
        )


def test_show_create_table_runs_again(spark: Any, catalog: Any, events: Any) -> None:
    ispark.sql(
        spark,
        "CREATE TABLE db.quoted (`my col` int COMMENT 'it\\'s a \\\\ col', id bigint NOT NULL) "
        "USING iceberg PARTITIONED BY (id) COMMENT 'the \\'q\\' table' "
        "TBLPROPERTIES ('k\\'ey' = 'v\\'al')",
        catalog,
    )
    (text,) = ispark.sql(spark, "SHOW CREATE TABLE db.quoted", catalog).first()
    assert "`my col` INT COMMENT 'it\\'s a \\\\ col'" in text
    assert "PARTITIONED BY (id)" in text
    before = catalog.load_table("db.quoted").metadata
    ispark.sql(spark, "DROP TABLE db.quoted PURGE", catalog)
    ispark.sql(spark, text, catalog)
    after = catalog.load_table("db.quoted").metadata
    assert [(f.name, f.doc, f.required) for f in after.schema().fields] == [
        (f.name, f.doc, f.required) for f in before.schema().fields
    ]
    assert after.schema().fields[0].doc == "it's a \\ col"
    assert after.properties["comment"] == "the 'q' table"
    assert after.properties["k'ey"] == "v'al"
    assert [str(f.transform) for f in after.spec().fields] == ["identity"]
