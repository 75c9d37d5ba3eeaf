"""SQL as Spark users type it, run through ``ispark.sql`` and on the reference engine: an
``INSERT ... SELECT`` from a table-valued function whose column names repeat, Spark's
``FOR SYSTEM_VERSION AS OF`` / ``FOR SYSTEM_TIME AS OF`` synonyms, and ``DESCRIBE`` of a
view (a column without a comment shows an empty one, as Java's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icepark import spark as ispark
from icepark.catalog import load_catalog

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SCRIPT = [
    "CREATE TABLE db.t (id bigint, c string, n int) USING iceberg",
    "INSERT INTO db.t SELECT id, concat('c', CAST(id % 3 AS STRING)), CAST(id AS INT)"
    " FROM range(0, 60)",
]


def test_repeated_names_and_time_travel_synonyms_as_java(
    spark: Any, refspark: Any, tmp_path: Path
) -> None:
    ours = load_catalog("forms", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                        warehouse=str(tmp_path / "ice"))  # fmt: skip
    ours.create_namespace("db")
    (tmp_path / "java").mkdir()
    java = refspark.catalog_for(tmp_path / "java")
    refspark.request([f"CREATE NAMESPACE {java}.db"])
    refspark.request([s.replace("db.t", f"{java}.db.t") for s in SCRIPT])
    ispark.sql(spark, ";\n".join(SCRIPT), ours)
    query = "SELECT id, c, n FROM {t} FOR SYSTEM_VERSION AS OF {s} WHERE n >= 55"
    mine_snapshot = ours.load_table("db.t").metadata.current_snapshot_id
    theirs_snapshot = (
        load_catalog("javawh", type="filesystem", warehouse=str(tmp_path / "java"))
        .load_table("db.t")
        .metadata.current_snapshot_id
    )
    mine = ispark.sql(spark, query.format(t="db.t", s=mine_snapshot), ours).collect()
    theirs = refspark.rows(query.format(t=f"{java}.db.t", s=theirs_snapshot))
    assert sorted(map(list, mine)) == sorted(theirs) and len(theirs) == 5
    timed = "SELECT count(*) FROM {t} FOR SYSTEM_TIME AS OF '2100-01-01 00:00:00'"
    assert ispark.sql(spark, timed.format(t="db.t"), ours).first()[0] == 60
    assert refspark.rows(timed.format(t=f"{java}.db.t")) == [[60]]
    ispark.sql(spark, "CREATE VIEW db.v AS SELECT id, c FROM db.t", ours)
    described = ispark.sql(spark, "DESCRIBE db.v", ours).collect()
    assert [tuple(r) for r in described] == [("id", "bigint", ""), ("c", "string", "")]
