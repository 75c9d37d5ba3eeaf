"""Write-audit-publish to a branch, as the Iceberg Spark documentation's example runs it
(``SET spark.wap.branch = audit``, then writes to the table name): the same statements on the
reference engine and through ``ispark.sql``, equal rows after each step and the same refs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icepark import spark as ispark
from icepark.catalog import load_catalog
from icepark.errors import ValidationError

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SCRIPT = [
    "CREATE TABLE db.w (id bigint, data string) USING iceberg"
    " TBLPROPERTIES ('write.wap.enabled' = 'true')",
    "INSERT INTO db.w VALUES (1, 'a'), (2, 'b')",
    "CREATE TABLE db.plain (id bigint) USING iceberg",
    "SET spark.wap.branch = audit",
    "SELECT * FROM db.w",  # no branch audit yet: main
    "INSERT INTO db.w VALUES (3, 'c')",  # creates audit from main's snapshot
    "INSERT INTO db.plain VALUES (7)",  # WAP not enabled: main
    "SELECT * FROM db.w",
    "DELETE FROM db.w WHERE id = 1",
    "UPDATE db.w SET data = 'z' WHERE id = 2",
    "MERGE INTO db.w t USING (SELECT 4 AS id, 'd' AS data) s ON t.id = s.id"
    " WHEN NOT MATCHED THEN INSERT *",
    "INSERT INTO db.w SELECT id + 10, data FROM db.w",  # reads audit too
    "SELECT * FROM db.w",
    "SELECT * FROM db.w VERSION AS OF 'main'",
    "SELECT count(*) FROM db.w.snapshots",
    "RESET spark.wap.branch",
    "SELECT * FROM db.w",
    "SELECT * FROM db.w.branch_audit",
    "SELECT * FROM db.plain",
    "SELECT name, type FROM db.w.refs",
]

REFUSED = [
    # a WAP branch and a branch_ name at once, and a WAP branch and id at once
    (["SET spark.wap.branch = audit"], "INSERT INTO db.w.branch_audit VALUES (5, 'e')"),
    (["SET spark.wap.branch = audit", "SET spark.wap.id = 1234"], "DELETE FROM db.w WHERE id = 3"),
]


def _rows(rows: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in rows), key=repr)


def test_wap_branch_writes_and_reads_as_java(any_spark: Any, refspark: Any, tmp_path: Path) -> None:
    spark = any_spark
    ours = load_catalog("wapb", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                        warehouse=str(tmp_path / "ice"))  # fmt: skip
    ours.create_namespace("db")
    (tmp_path / "java").mkdir()
    java = refspark.catalog_for(tmp_path / "java")
    refspark.request([f"CREATE NAMESPACE {java}.db"])
    try:
        theirs = refspark.request([f"USE {java}", *SCRIPT, "USE spark_catalog"], check=False)[1:-1]
    finally:
        refspark.request(["RESET spark.wap.branch", "RESET spark.wap.id"], check=False)
    try:
        for statement, answer in zip(SCRIPT, theirs, strict=True):
            assert "error" not in answer, f"reference engine: {statement}: {answer['error']}"
            mine = _rows(ispark.sql(spark, statement, ours).collect())
            if statement.startswith("SELECT"):
                assert mine == _rows(map(tuple, answer["rows"])), statement
    finally:
        spark.conf.unset("spark.wap.branch")
    audit = ours.load_table("db.w").metadata.refs["audit"]
    java_audit = load_catalog("j", type="filesystem", warehouse=str(tmp_path / "java"))
    assert java_audit.load_table("db.w").metadata.refs["audit"].is_branch and audit.is_branch

    for settings, write in REFUSED:
        refused = refspark.request([f"USE {java}", *settings, write, "USE spark_catalog"],
                                   check=False)  # fmt: skip
        refspark.request(["RESET spark.wap.branch", "RESET spark.wap.id"], check=False)
        # a ValidationException, its text not passed on
        assert "error" in refused[len(settings) + 1], write
        before = ours.load_table("db.w").metadata.refs
        for setting in settings:
            ispark.sql(spark, setting, ours)
        try:
            with pytest.raises(ValidationError, match=r"Cannot (write to both|set both)"):
                ispark.sql(spark, write, ours)
        finally:
            spark.conf.unset("spark.wap.branch")
            spark.conf.unset("spark.wap.id")
        assert ours.load_table("db.w").metadata.refs == before
