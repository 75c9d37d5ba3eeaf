"""The same SQL on the reference engine (Java's Iceberg on Spark 3.5, Hadoop catalog) and
through ``ispark.sql`` (icepark's file-system catalog): equal rows for every query, equal
table metadata after the DDL and DML, and Java reads icepark's tables with the same rows.
Several statements are the examples of Iceberg's Spark documentation (DDL, writes with
subqueries in DELETE and UPDATE)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from icepark import spark as ispark
from icepark.catalog import load_catalog

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SETUP = """
CREATE NAMESPACE IF NOT EXISTS db;
CREATE TABLE db.events (
  id bigint NOT NULL COMMENT 'the id',
  day date,
  cat string COMMENT 'category',
  amount decimal(10,2),
  n int)
USING iceberg
PARTITIONED BY (days(day), bucket(4, id), truncate(1, cat))
COMMENT 'events table'
TBLPROPERTIES ('team' = 'etl', 'write.delete.mode' = 'copy-on-write');
CREATE TABLE IF NOT EXISTS db.dims (cat string, label string) USING iceberg;
CREATE TABLE IF NOT EXISTS db.dims (other int) USING iceberg;
INSERT INTO db.events VALUES
  (1, DATE '2024-01-01', 'aa', 1.50, 1), (2, DATE '2024-01-01', 'bb', 2.25, 2),
  (3, DATE '2024-01-02', 'aa', 3.00, 3), (4, DATE '2024-01-02', 'cc', 4.75, 4),
  (5, DATE '2024-01-03', 'bb', 5.10, 5), (6, DATE '2024-01-03', NULL, NULL, 6);
INSERT INTO TABLE db.events SELECT id + 10, day, cat, amount, n FROM db.events WHERE id <= 3;
INSERT INTO db.dims (label, cat) VALUES ('first', 'aa'), ('second', 'bb'), ('third', 'zz');
DELETE FROM db.events WHERE id = 13;
UPDATE db.events SET amount = amount * 2, n = n + 100 WHERE cat = 'bb';
MERGE INTO db.events AS t
USING (SELECT * FROM VALUES (1, 'aa', 10), (2, 'bb', 20), (7, 'dd', 70) AS s(id, cat, n)) AS s
ON t.id = s.id
WHEN MATCHED AND s.n > 15 THEN DELETE
WHEN MATCHED THEN UPDATE SET n = s.n, cat = s.cat
WHEN NOT MATCHED THEN INSERT (id, day, cat, amount, n) VALUES (s.id, DATE '2024-01-04', s.cat, 7.00, s.n)
WHEN NOT MATCHED BY SOURCE AND t.n = 6 THEN UPDATE SET n = 60;
CREATE TABLE db.ctas USING iceberg PARTITIONED BY (cat)
  AS SELECT e.id, e.cat, d.label FROM db.events e JOIN db.dims d ON e.cat = d.cat;
CREATE TABLE db.parts (id int, p string) USING iceberg PARTITIONED BY (p);
INSERT INTO db.parts VALUES (1, 'a'), (2, 'b'), (3, 'c');
INSERT OVERWRITE db.parts PARTITION (p = 'b') SELECT 20;
INSERT OVERWRITE db.parts SELECT 9, 'z';
CREATE TABLE db.dyn (id int, p string) USING iceberg PARTITIONED BY (p);
INSERT INTO db.dyn VALUES (1, 'a'), (2, 'b');
SET spark.sql.sources.partitionOverwriteMode = dynamic;
INSERT OVERWRITE db.dyn VALUES (3, 'b'), (4, 'c');
RESET spark.sql.sources.partitionOverwriteMode;
CREATE TABLE db.mor (id int, v string) USING iceberg
  TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read');
INSERT INTO db.mor VALUES (1, 'a'), (2, 'b'), (3, 'c');
DELETE FROM db.mor WHERE id = 1;
UPDATE db.mor SET v = 'z' WHERE id = 2;
CREATE TABLE db.rep USING iceberg PARTITIONED BY (a) AS SELECT 1 AS a, 'x' AS b;
REPLACE TABLE db.rep USING iceberg PARTITIONED BY (bucket(2, c)) AS SELECT 'y' AS b, 2 AS c;
CREATE OR REPLACE TABLE db.rep2 (id bigint, c2 string) USING iceberg;
INSERT INTO db.rep2 VALUES (1, 'a');
CREATE OR REPLACE TABLE db.rep2 (id bigint, cat string) USING iceberg PARTITIONED BY (cat)
  TBLPROPERTIES ('team' = 'x');
CREATE TABLE db.typed (
  v varchar(10) COMMENT 'short', c char(3),
  s struct<a: int COMMENT 'inner', b: varchar(4)> COMMENT 'outer') USING iceberg;
CREATE TABLE db.good_events (session_time int) USING iceberg;
INSERT INTO db.good_events VALUES (5), (7);
CREATE TABLE db.all_events (session_time int, ignored boolean, m float) USING iceberg;
INSERT INTO db.all_events VALUES (1, false, 1.0), (6, false, 2.0), (9, false, 3.0);
DELETE FROM db.all_events WHERE session_time < (SELECT min(session_time) FROM db.good_events);
INSERT INTO db.all_events VALUES (2, false, 4.0);
UPDATE db.all_events SET session_time = 0, ignored = true
  WHERE session_time < (SELECT min(session_time) FROM db.good_events);
ALTER TABLE db.all_events ALTER COLUMN m TYPE double;
ALTER TABLE db.all_events ALTER COLUMN m COMMENT 'unit is bytes per second';
CREATE TABLE db.orders (oid int, order_status string) USING iceberg;
CREATE TABLE db.returned_orders (oid int) USING iceberg;
INSERT INTO db.orders VALUES (1, 'ok'), (2, 'ok'), (3, 'ok'), (4, 'ok');
INSERT INTO db.returned_orders VALUES (2), (4);
UPDATE db.orders AS t1 SET order_status = 'returned'
  WHERE EXISTS (SELECT oid FROM db.returned_orders WHERE t1.oid = oid);
DELETE FROM db.orders AS t1
  WHERE EXISTS (SELECT oid FROM db.returned_orders WHERE t1.oid = oid) AND t1.oid > 3;
DELETE FROM db.orders WHERE oid IN (SELECT oid - 2 FROM db.returned_orders WHERE oid = 4);
CREATE NAMESPACE db.sub;
CREATE NAMESPACE db2;
CREATE TABLE db2.x (a int) USING iceberg;
DROP TABLE db2.x;
DROP TABLE IF EXISTS db2.x;
DROP NAMESPACE db2
"""

QUERIES = [
    "SELECT * FROM db.events WHERE day >= DATE '2024-01-02' AND cat = 'aa'",
    "SELECT id, amount, n FROM db.events WHERE id IN (1, 2, 4, 12) OR n > 100",
    "SELECT e.id, d.label FROM db.events e JOIN db.dims d ON e.cat = d.cat WHERE e.n < 50",
    "SELECT e.id, d.label FROM db.events e LEFT JOIN db.dims d ON e.cat = d.cat "
    "AND d.label = 'first' WHERE e.day BETWEEN '2024-01-01' AND '2024-01-02'",
    "SELECT d.label, count(*) AS c FROM db.dims d FULL OUTER JOIN db.events e "
    "ON e.cat = d.cat GROUP BY d.label",
    "WITH x AS (SELECT cat, sum(amount) AS s FROM db.events GROUP BY cat) "
    "SELECT cat, s, rank() OVER (ORDER BY s DESC NULLS LAST) AS r FROM x",
    "SELECT id FROM db.events WHERE cat IN (SELECT cat FROM db.dims WHERE label LIKE 'f%')",
    "SELECT `e`.`id`, db.events.n FROM `db`.`events` AS e, db.events "
    "WHERE e.id = db.events.id AND e.id > 3",
    "SELECT id, cat FROM db.events WHERE cat IS NULL OR NOT (cat <> 'cc')",
    "SELECT * FROM db.ctas",
    "SELECT * FROM db.parts",
    "SELECT id FROM db.events FOR VERSION AS OF 'main' WHERE id < 3",
    "SELECT count(*) FROM db.events TIMESTAMP AS OF '2100-01-01 00:00:00'",
    "SELECT operation FROM db.events.snapshots ORDER BY committed_at",
    "SELECT name, type FROM db.events.refs",
    "SELECT sum(record_count) FROM db.events.files",
    "SELECT count(*) FROM db.events.history",
    "SELECT id, label FROM db.ctas.branch_main WHERE id > 1",
    "SELECT * FROM db.dyn",
    "SELECT * FROM db.mor",
    "SELECT * FROM db.rep",
    "SELECT * FROM db.dims.branch_b1",
    "SELECT count(*) FROM db.dims VERSION AS OF 'b1'",
    "DESCRIBE db.events",
    "DESCRIBE TABLE db.dims",
    "SHOW TABLES IN db",
    "SHOW NAMESPACES",
    "SHOW NAMESPACES IN db",
    "SHOW TBLPROPERTIES db.events ('team')",
    "SELECT * FROM db.all_events",  # DELETE and UPDATE with a scalar subquery
    "SELECT * FROM db.orders",  # ... with EXISTS (correlated) and IN subqueries
]


TABLES = (
    "db.events",
    "db.dims",
    "db.ctas",
    "db.parts",
    "db.dyn",
    "db.mor",
    "db.rep",
    "db.rep2",
    "db.typed",  # char/varchar as strings, a nested field's comment as its doc
    "db.all_events",  # db.orders: rows compared; its files differ (Java writes 1, icepark 2)
)

# icepark's tables Java reads back (position deletes, replaced tables and branches included)
READ_BACK = (
    "db.events",
    "db.dims",
    "db.dims.branch_b1",
    "db.ctas",
    "db.parts",
    "db.dyn",
    "db.mor",
    "db.rep",
)


def _norm(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()  # as the reference engine prints binary
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    return value


def _rows(rows: Any) -> list[Any]:
    return sorted((tuple(_norm(v) for v in r) for r in rows), key=repr)


def _java(refspark: Any, catalog: str, statements: list[str]) -> list[dict[str, Any]]:
    """Run statements with ``catalog`` as Java's current catalog (then back to Spark's)."""
    results = refspark.request([f"USE {catalog}", *statements, "USE spark_catalog"], check=False)
    for r in results:
        assert "error" not in r, f"reference engine: {r['sql']}: {r['error']}"
    return results[1:-1]


def _normal(text: str, catalog: str, table: Any) -> str:
    # Java's core adds write.parquet.compression-codec=zstd to every new table; icepark's
    # catalogs do not (its writer's default is zstd already)
    text = text.replace(",\n  'write.parquet.compression-codec' = 'zstd'", "")
    text = text.replace(f"{catalog}.db.", "CAT.db.").replace(table.metadata.location, "LOC")
    return text.replace(str(table.metadata.current_snapshot_id), "SNAP")


def _split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _table_facts(table: Any) -> dict[str, Any]:
    md = table.metadata
    return {
        "schema": [
            (f.field_id, f.name, str(f.field_type), f.required, f.doc) for f in md.schema().fields
        ],
        "spec": [(f.source_id, f.field_id, str(f.transform), f.name) for f in md.spec().fields],
        "props": {k: md.properties.get(k) for k in ("team", "write.delete.mode", "comment")},
        "operations": [str(s.operation) for s in md.snapshots],
        "parents": [s.parent_snapshot_id is None for s in md.snapshots],
        "ids": (md.current_schema_id, md.default_spec_id, md.last_column_id, md.last_partition_id),
        "refs": sorted(md.refs),
    }


@pytest.fixture
def warehouses(tmp_path: Path) -> tuple[Any, Any]:
    ours = load_catalog("sqlcore", type="filesystem", warehouse=str(tmp_path / "ice"))
    (tmp_path / "java").mkdir()
    theirs = load_catalog("javawh", type="filesystem", warehouse=str(tmp_path / "java"))
    return ours, theirs


def test_script_queries_and_metadata_match_java(
    spark: Any, refspark: Any, warehouses: tuple[Any, Any]
) -> None:
    ours, theirs = warehouses
    java = refspark.catalog_for(theirs.properties["warehouse"])
    ice_for_java = refspark.catalog_for(ours.properties["warehouse"])
    # a write to a branch: the branch made by Java's ALTER TABLE there, by the Table API here
    # (ALTER TABLE ... CREATE BRANCH is the extensions module's)
    branch_write = "INSERT INTO db.dims.branch_b1 VALUES ('yy', 'on a branch')"
    java_setup = [*_split(SETUP), "ALTER TABLE db.dims CREATE BRANCH b1", branch_write]
    # each engine runs while the other does: two JVMs, one Java round trip at a time
    with ThreadPoolExecutor(max_workers=1) as pool:
        java_done = pool.submit(_java, refspark, java, java_setup)
        ispark.sql(spark, SETUP, ours)
        ours.load_table("db.dims").create_branch("b1")
        ispark.sql(spark, branch_write, ours)
        java_done.result()

        for name in TABLES:
            mine, java_facts = ours.load_table(name), theirs.load_table(name)
            assert _table_facts(mine) == _table_facts(java_facts), name

        # time travel by snapshot id: each engine its own table's first snapshot
        first_ours = ours.load_table("db.events").metadata.snapshots[0].snapshot_id
        first_theirs = theirs.load_table("db.events").metadata.snapshots[0].snapshot_id
        travel = [
            "SELECT * FROM db.events VERSION AS OF {s}",
            "SELECT sum(record_count) FROM db.events.files FOR VERSION AS OF {s}",
        ]
        java_queries = QUERIES + [q.format(s=first_theirs) for q in travel]
        our_queries = QUERIES + [q.format(s=first_ours) for q in travel]
        # Java also reads icepark's tables
        shown = "SHOW CREATE TABLE db.events"
        cross = [shown] + [f"SELECT * FROM {ice_for_java}.{n}" for n in READ_BACK]
        java_answers = pool.submit(_java, refspark, java, java_queries + cross)
        mine_rows = [_rows(ispark.sql(spark, q, ours).collect()) for q in our_queries]
        our_shown = ispark.sql(spark, shown, ours).first()[0]
        read_back = [
            _rows(ispark.sql(spark, f"SELECT * FROM {n}", ours).collect()) for n in READ_BACK
        ]
        results = java_answers.result()
    for query, mine, answer in zip(QUERIES + travel, mine_rows, results, strict=False):
        assert mine == _rows(answer["rows"]), query
    # SHOW CREATE TABLE: the same text but for the catalog's name, location and snapshot id
    java_text = results[-1 - len(READ_BACK)]["rows"][0][0]
    java_text = _normal(java_text, java, theirs.load_table("db.events"))
    our_text = _normal(our_shown, ours.name, ours.load_table("db.events"))
    assert our_text == java_text
    for name, answer, mine in zip(READ_BACK, results[-len(READ_BACK) :], read_back, strict=True):
        assert _rows(answer["rows"]) == mine, name


# Iceberg's functions of the ``system`` namespace (Iceberg's docs: spark-queries,
# spark-functions), over every type each takes, before and after 1970, with nulls, in a
# session whose time zone is not UTC (a timestamp's day and hour are UTC's in Java)
FUNCTION_SETUP = """
SET spark.sql.session.timeZone = America/New_York;
CREATE NAMESPACE IF NOT EXISTS db;
CREATE TABLE db.fn (id bigint, i int, sm smallint, ti tinyint, s string, d decimal(9,2),
  big decimal(38,6), dt date, ts timestamp, tsn timestamp_ntz, b binary)
USING iceberg;
INSERT INTO db.fn SELECT id * 7919 - 5000000, CAST(id * 31 - 1000 AS INT),
  CAST(id % 300 - 150 AS SMALLINT), CAST(id % 200 - 100 AS TINYINT),
  substring('ünïcödé😀iceberg', 1 + id % 7, id % 9), CAST(id * 1.37 - 500 AS DECIMAL(9,2)),
  CAST(id * 123456789.123457 - 100000000000 AS DECIMAL(38,6)),
  date_add(DATE '1969-06-01', CAST(id * 13 - 3000 AS INT)),
  timestamp_micros(id * 987654321123 - 500000000000000),
  CAST(timestamp_micros(id * 987654321123 - 500000000000000) AS TIMESTAMP_NTZ),
  CAST(substring('ünïcödé😀iceberg', 1 + id % 5, id % 11) AS BINARY)
FROM range(0, 600);
INSERT INTO db.fn VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
"""
FUNCTION_QUERIES = [
    "SELECT id, system.bucket(16, id), system.bucket(16, i), system.bucket(16, sm), "
    "system.bucket(16, ti), system.bucket(16, s), system.bucket(16, d), "
    "system.bucket(16, big), system.bucket(16, dt), system.bucket(16, ts), "
    "system.bucket(16, tsn), system.bucket(1000, b), "
    "system.truncate(10, id), system.truncate(10, i), system.truncate(7, sm), "
    "system.truncate(3, ti), system.truncate(3, s), system.truncate(10, d), "
    "system.truncate(1000, big), system.truncate(3, b), "
    "system.years(dt), system.years(ts), system.years(tsn), system.months(dt), "
    "system.months(ts), system.months(tsn), system.days(dt), system.days(ts), "
    "system.days(tsn), system.hours(ts), system.hours(tsn) FROM db.fn",
    "SELECT id FROM db.fn WHERE system.bucket(8, id) = 3 AND system.days(ts) >= DATE '1975-01-01'",
    "SELECT system.days(ts) AS day, count(*) AS n FROM db.fn GROUP BY system.days(ts)",
    "SELECT system.bucket(4, system.truncate(2, s)) AS x, count(*) FROM db.fn GROUP BY 1",
    "SELECT e.id, system.bucket(4, e.s) FROM db.fn e JOIN db.fn f ON e.id = f.id + 7919 "
    "WHERE system.truncate(100, e.i) = system.truncate(100, f.i)",
    "SELECT system.bucket(16, 'iceberg'), system.bucket(1000, 77), system.truncate(10, 1.55), "
    "system.truncate(2, '😀😀x'), system.bucket(16, X'00010203'), "
    "system.days(DATE '2020-02-29'), system.hours(TIMESTAMP '2020-01-01 20:30:00'), "
    "system.truncate(1000, CAST(-123456789012.123456 AS DECIMAL(38,6)))",
    "SELECT * FROM VALUES (system.bucket(4, 1), 2) AS v(a, b)",
]
FUNCTION_WRITES = [
    "DELETE FROM db.fn WHERE system.bucket(8, id) = 5",
    "MERGE INTO db.fn t USING (SELECT 2 AS k) s ON system.bucket(16, t.id) = s.k "
    "WHEN MATCHED THEN UPDATE SET s = system.truncate(1, t.s)",
]
FUNCTION_AFTER = "SELECT id, i, s FROM db.fn"
FUNCTION_REFUSED = [
    "SELECT system.bucket(16, 1.5D)",
    "SELECT system.hours(DATE '2020-01-01')",
    "SELECT system.truncate(3, 1.5D)",
]


def test_iceberg_functions_match_java(
    spark: Any, refspark: Any, warehouses: tuple[Any, Any]
) -> None:
    from icepark.spark.sql.errors import SqlAnalysisError
    from icepark.spark.sql.functions import iceberg_version

    ours, theirs = warehouses
    java = refspark.catalog_for(theirs.properties["warehouse"])
    zone = spark.conf.get("spark.sql.session.timeZone")
    typed = [q for q in FUNCTION_QUERIES if "VALUES" not in q]
    statements = [
        *_split(FUNCTION_SETUP),
        *FUNCTION_QUERIES,
        *[f"DESCRIBE QUERY {q}" for q in typed],
        "SELECT system.iceberg_version()",
        *FUNCTION_WRITES,
        FUNCTION_AFTER,
    ]
    java_statements = [
        f"USE {java}",
        *statements,
        *FUNCTION_REFUSED,
        "SET spark.sql.session.timeZone = UTC",
        "USE spark_catalog",
    ]
    # Java runs while icepark does (two JVMs)
    with ThreadPoolExecutor(max_workers=1) as pool:
        java_done = pool.submit(refspark.request, java_statements, check=False)
        try:
            ispark.sql(spark, FUNCTION_SETUP, ours)
            mine = [ispark.sql(spark, q, ours) for q in FUNCTION_QUERIES]
            mine_rows = [_rows(df.collect()) for df in mine]
            mine_types = [[f.dataType.simpleString() for f in df.schema] for df in mine]
            version = ispark.sql(spark, "SELECT system.iceberg_version() AS v", ours)
            version_row = (version.first()[0], version.schema[0].dataType.simpleString())
            ispark.sql(spark, "; ".join(FUNCTION_WRITES), ours)
            after_rows = _rows(ispark.sql(spark, FUNCTION_AFTER, ours).collect())
            refused = []
            for query in FUNCTION_REFUSED:
                with pytest.raises(SqlAnalysisError) as caught:
                    ispark.sql(spark, query, ours)
                refused.append(str(caught.value))
        finally:
            spark.conf.set("spark.sql.session.timeZone", zone)
        answers = java_done.result()[1:-2]
    for a in answers[: len(statements)]:
        assert "error" not in a, f"reference engine: {a['sql']}: {a['error']}"
    answers = answers[len(_split(FUNCTION_SETUP)) :]
    for query, rows, answer in zip(FUNCTION_QUERIES, mine_rows, answers, strict=False):
        assert rows == _rows(answer["rows"]), query
    described = answers[len(FUNCTION_QUERIES) : len(FUNCTION_QUERIES) + len(typed)]
    typed_types = [t for q, t in zip(FUNCTION_QUERIES, mine_types, strict=True) if q in typed]
    for query, types, answer in zip(typed, typed_types, described, strict=True):
        assert types == [r[1] for r in answer["rows"]], query
    # Java names its Iceberg library's version; icepark its own
    assert answers[len(FUNCTION_QUERIES) + len(typed)]["rows"] == [["1.10.2"]]
    assert version_row == (iceberg_version(), "string")
    after = answers[len(FUNCTION_QUERIES) + len(typed) + 1 + len(FUNCTION_WRITES)]
    assert after_rows == _rows(after["rows"])
    for query, mine_error, answer in zip(
        FUNCTION_REFUSED, refused, answers[-len(FUNCTION_REFUSED) :], strict=True
    ):
        assert "cannot process input" in answer["error"], query
        assert answer["error"].split(";")[0] in mine_error, query
