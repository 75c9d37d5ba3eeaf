"""delete, update and merge from Spark: copy-on-write and merge-on-read on v2 and v3 tables,
metadata-only deletes, MERGE INTO semantics and errors, and the reference engine reading the
results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from refengine import RefEngine

from icepark.catalog import Catalog, FileSystemCatalog
from icepark.errors import ValidationError
from icepark.manifest import FileContent
from icepark.spark import delete, merge, read, update, write
from icepark.table import Table

pytestmark = pytest.mark.spark

ROWS = """
    SELECT id, CASE WHEN id % 7 = 0 THEN NULL ELSE concat('c', CAST(id % 3 AS STRING)) END
           AS category, CAST(id * 10 AS BIGINT) AS value, CAST(id % 4 AS INT) AS part
    FROM range(0, 120)
"""
MODES = ["copy-on-write", "merge-on-read"]


def _make(spark: Any, catalog: Catalog, name: str, version: int, mode: str, **props: str) -> Table:
    df = spark.sql(ROWS)
    from icepark.spark.types import spark_schema_to_arrow

    table = catalog.create_table(
        f"db.{name}",
        spark_schema_to_arrow(df.schema),
        partition_by=["part"],
        properties={
            "format-version": str(version),
            "write.delete.mode": mode,
            "write.update.mode": mode,
            "write.merge.mode": mode,
            **props,
        },
    )
    write(df.repartition(3), table)  # a few files per partition
    return table


def _rows(spark: Any, table: Table) -> list[tuple[Any, ...]]:
    df = read(spark, table.refresh(), columns=["id", "category", "value", "part"])
    return sorted(tuple(r) for r in df.collect())


def _expected(spark: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(ROWS).collect())


def _files(table: Table) -> tuple[list[Any], list[Any]]:
    tasks = table.scan().plan_files()
    data = [t.file for t in tasks]
    deletes = {(d.file_path, d.content_offset): d for t in tasks for d in t.delete_files}
    return data, list(deletes.values())


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("mode", MODES)
def test_delete(spark: Any, catalog: Catalog, version: int, mode: str) -> None:
    table = _make(spark, catalog, "t", version, mode)
    before_files, _ = _files(table)
    delete(spark, table, "category != 'c1' and value < 600")
    expected = [
        r for r in _expected(spark) if not (r[1] is not None and r[1] != "c1" and r[2] < 600)
    ]
    assert _rows(spark, table) == expected  # null categories stay (SQL: unknown)
    data, deletes = _files(table)
    snapshot = table.current_snapshot()
    assert snapshot is not None
    assert snapshot.summary["operation"] in ("delete", "overwrite")
    if mode == "merge-on-read":
        assert {f.file_path for f in data} == {f.file_path for f in before_files}
        assert deletes and all(d.content == FileContent.POSITION_DELETES for d in deletes)
        if version == 3:
            assert {d.file_format.value for d in deletes} == {"PUFFIN"}
            # a second delete on the same files merges into one DV per data file
            delete(spark, table, "id = 1 or id = 2")
            _, again = _files(table)
            assert len({d.referenced_data_file for d in again}) == len(again)
            expected = [r for r in expected if r[0] not in (1, 2)]
            assert _rows(spark, table) == expected
    else:
        assert not deletes
        assert {f.file_path for f in data} != {f.file_path for f in before_files}


@pytest.mark.parametrize("mode", MODES)
def test_delete_whole_partitions_is_metadata_only(spark: Any, catalog: Catalog, mode: str) -> None:
    table = _make(spark, catalog, "t", 2, mode)
    delete(spark, table, "part = 1")
    snapshot = table.current_snapshot()
    assert snapshot is not None
    assert snapshot.summary["operation"] == "delete"
    assert "added-data-files" not in snapshot.summary
    assert "added-delete-files" not in snapshot.summary
    assert _rows(spark, table) == [r for r in _expected(spark) if r[3] != 1]
    # nothing matches: no new snapshot
    delete(spark, table, "part = 1")
    assert table.refresh().current_snapshot() == snapshot


@pytest.mark.parametrize("mode", MODES)
def test_delete_with_a_spark_only_condition(spark: Any, catalog: Catalog, mode: str) -> None:
    from pyspark.sql import functions as F

    table = _make(spark, catalog, "t", 3, mode)
    delete(spark, table, "upper(category) = 'C2'")
    delete(spark, table, F.col("id") % 10 == 0)
    expected = [r for r in _expected(spark) if r[1] != "c2" and r[0] % 10 != 0]
    assert _rows(spark, table) == expected


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("mode", MODES)
def test_update(spark: Any, catalog: Catalog, version: int, mode: str) -> None:
    table = _make(spark, catalog, "t", version, mode)
    update(spark, table, set={"value": "value + 1", "category": "'upd'"}, where="id >= 100")
    # moving rows between partitions works too
    update(spark, table, set={"part": "part + 10"}, where="id < 3")
    expected = []
    for r in _expected(spark):
        if r[0] >= 100:
            r = (r[0], "upd", r[2] + 1, r[3])
        if r[0] < 3:
            r = (r[0], r[1], r[2], r[3] + 10)
        expected.append(r)
    assert _rows(spark, table) == sorted(expected)
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary["operation"] == "overwrite"
    with pytest.raises(ValidationError, match="no column 'nope'"):
        update(spark, table, set={"nope": "1"})


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("mode", MODES)
def test_merge_upsert_and_delete(spark: Any, catalog: Catalog, version: int, mode: str) -> None:
    table = _make(spark, catalog, "t", version, mode)
    source = spark.sql(
        """SELECT id, 'new' AS category, CAST(-id AS BIGINT) AS value, CAST(id % 4 AS INT) AS part,
                  id % 2 = 0 AS drop FROM range(110, 130)"""
    )
    merge(
        spark,
        table,
        source,
        on="id",
        when_matched_delete="s.drop",
        when_matched_update={"value": "s.value", "category": "s.category"},
        when_not_matched_insert={c: f"s.{c}" for c in ("id", "category", "value", "part")},
    )
    expected = []
    for r in _expected(spark):
        if r[0] >= 110:
            if r[0] % 2 == 0:
                continue
            r = (r[0], "new", -r[0], r[3])
        expected.append(r)
    expected += [(i, "new", -i, i % 4) for i in range(120, 130)]
    assert _rows(spark, table) == sorted(expected)

    # '*' clauses and a SQL join condition
    source2 = spark.sql(
        "SELECT id, 'star' AS category, CAST(0 AS BIGINT) AS value, CAST(id % 4 AS INT) AS part"
        " FROM range(125, 135)"
    )
    merge(
        spark,
        table,
        source2,
        on="t.id = s.id",
        when_matched_update="*",
        when_not_matched_insert="*",
    )
    expected = [r for r in expected if r[0] < 125] + [
        (i, "star", 0, i % 4) for i in range(125, 135)
    ]
    assert _rows(spark, table) == sorted(expected)


def test_merge_refuses_a_target_row_matched_twice(spark: Any, catalog: Catalog) -> None:
    table = _make(spark, catalog, "t", 2, "merge-on-read")
    before = table.current_snapshot()
    source = spark.sql("SELECT CAST(5 AS BIGINT) AS id, CAST(1 AS BIGINT) AS value FROM range(2)")
    with pytest.raises(ValidationError, match="matches 2 source rows"):
        merge(spark, table, source, on="id", when_matched_update={"value": "s.value"})
    assert table.refresh().current_snapshot() == before
    # inserts only: duplicates in the source are simply inserted
    source = spark.sql("SELECT CAST(500 AS BIGINT) AS id, 1 AS part FROM range(2)")
    with pytest.raises(ValidationError, match=r"required columns \['value'\]"):
        merge(spark, table, source, on="id", when_not_matched_insert={"id": "s.id"})
    merge(
        spark,
        table,
        source,
        on="id",
        when_not_matched_insert={"id": "s.id", "part": "s.part", "value": "7"},
    )
    assert [r for r in _rows(spark, table) if r[0] == 500] == [(500, None, 7, 1)] * 2


def test_delete_conflicts_and_retries(spark: Any, catalog: Catalog) -> None:
    table = _make(spark, catalog, "t", 2, "merge-on-read")
    other = catalog.load_table("db.t")
    # a concurrent append into another partition is retried through
    from icepark.spark.write import row_level

    original = row_level._Target.commit

    def commit_after_concurrent(self: Any, change: Any, *args: Any) -> Table:
        write(spark.sql("SELECT 1000 AS id, 'x' AS category, 1L AS value, 3 AS part"), other)
        return original(self, change, *args)

    row_level._Target.commit = commit_after_concurrent  # type: ignore[method-assign]
    try:
        delete(spark, table, "part = 2 and id < 50")
        with pytest.raises(ValidationError, match="conflicting files"):
            delete(spark, table, "part = 3 and id > 900")
    finally:
        row_level._Target.commit = original  # type: ignore[method-assign]
    rows = _rows(spark, table)
    assert [r for r in rows if r[3] == 2 and r[0] < 50] == []
    assert sum(1 for r in rows if r[0] == 1000) == 2


def test_reference_reads_row_level_changes(spark: Any, refspark: RefEngine, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    tables = {
        "v2mor": _make(spark, catalog, "v2mor", 2, "merge-on-read"),
        "v3mor": _make(spark, catalog, "v3mor", 3, "merge-on-read"),
        "v2cow": _make(spark, catalog, "v2cow", 2, "copy-on-write"),
    }
    source = spark.sql(
        "SELECT id, 'm' AS category, CAST(id AS BIGINT) AS value, CAST(id % 4 AS INT) AS part"
        " FROM range(100, 140)"
    )
    c = refspark.catalog_for(warehouse)
    for name, table in tables.items():
        delete(spark, table, "category = 'c0' and id > 20")
        update(spark, table, set={"value": "value * 2"}, where="part = 1")
        merge(spark, table, source, on="id", when_matched_update="*", when_not_matched_insert="*")
        ours = [list(r) for r in _rows(spark, table)]
        theirs = sorted(
            refspark.rows(f"SELECT id, category, value, part FROM {c}.db.{name}"),
            key=lambda r: tuple(r),
        )
        assert theirs == ours, name


def test_spark_reads_reference_row_level_changes_on_refs(
    spark: Any, refspark: RefEngine, tmp_path: Path
) -> None:
    """The reference engine's merge-on-read DELETE on a branch (a tag keeps the old rows),
    two deletes on the same files and a MERGE INTO read the same through icepark on Spark;
    so does a second read (deletes from the driver's cache) and one after another delete."""
    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    t = f"{c}.db.r"
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {t} (id bigint, category string, value bigint, part int) USING iceberg"
            " PARTITIONED BY (part) TBLPROPERTIES ('format-version'='3',"
            " 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read',"
            " 'write.merge.mode'='merge-on-read')",
            f"INSERT INTO {t} SELECT id, concat('c', CAST(id % 3 AS STRING)), id * 10,"
            " CAST(id % 4 AS INT) FROM range(0, 60)",
            f"ALTER TABLE {t} CREATE TAG before",
            f"ALTER TABLE {t} CREATE BRANCH audit",
            f"DELETE FROM {t}.branch_audit WHERE id < 10",
            f"DELETE FROM {t} WHERE category = 'c1'",
            f"DELETE FROM {t} WHERE id = 30",
            f"MERGE INTO {t} t USING (SELECT id, 'm' AS category, -id AS value,"
            " CAST(id % 4 AS INT) AS part FROM range(50, 70)) s ON t.id = s.id"
            " WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        ]
    )
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.r")
    columns = ["id", "category", "value", "part"]
    query = "SELECT id, category, value, part FROM {t}"
    for ref, suffix in ((None, ""), ("before", ".tag_before"), ("audit", ".branch_audit")):
        theirs = sorted(tuple(r) for r in refspark.rows(query.format(t=t + suffix)))
        ours = sorted(tuple(r) for r in read(spark, table, columns=columns, ref=ref).collect())
        assert ours == theirs, ref
    assert len(sorted(read(spark, table, ref="before").collect())) == 60
    # read again (the driver's delete cache is warm), then after one more delete by Java
    main = sorted(tuple(r) for r in refspark.rows(query.format(t=t)))
    assert sorted(tuple(r) for r in read(spark, table, columns=columns).collect()) == main
    refspark.request([f"DELETE FROM {t} WHERE id IN (42, 44)"])  # rows of c0 and c2
    theirs = sorted(tuple(r) for r in refspark.rows(query.format(t=t)))
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.r")
    ours = sorted(tuple(r) for r in read(spark, table, columns=columns).collect())
    assert ours == theirs and len(ours) == len(main) - 2


def test_equality_deletes_written_by_java_read_the_same(
    spark: Any, java_equality_deletes: dict[str, Any]
) -> None:
    """Equality deletes committed through the reference engine's Java API (two delete
    files, on different columns and partitions, then newer data they must not delete) read
    the same through icepark, on one machine and on Spark, as in the Java implementation."""
    warehouse, theirs = java_equality_deletes["parquet"]
    assert theirs == [(1, "a", "x"), (2, "a", "again"), (3, "b", "z")]
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.eq")
    tasks = table.scan().plan_files()
    assert {d.content for t in tasks for d in t.delete_files} == {FileContent.EQUALITY_DELETES}
    mine = sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())
    assert mine == theirs
    assert sorted(tuple(r) for r in read(spark, table).collect()) == theirs


def test_merge_into_an_empty_table_and_update_of_nothing(spark: Any, catalog: Catalog) -> None:
    from icepark.spark.types import spark_schema_to_arrow

    source = spark.sql(ROWS)
    table = catalog.create_table(
        "db.empty",
        spark_schema_to_arrow(source.schema),
        properties={"format-version": "3", "write.merge.mode": "merge-on-read"},
    )
    merge(spark, table, source, on="id", when_matched_update="*", when_not_matched_insert="*")
    assert _rows(spark, table) == _expected(spark)
    before = table.current_snapshot()
    update(spark, table, set={"value": "0"}, where="id > 1000")  # no row: no new snapshot
    delete(spark, table, "id > 1000")
    assert table.refresh().current_snapshot() == before


def test_merge_reads_only_files_in_the_source_key_range(spark: Any, catalog: Catalog) -> None:
    from icepark.spark.types import spark_schema_to_arrow

    df = spark.sql(ROWS)
    table = catalog.create_table(
        "db.ranged",
        spark_schema_to_arrow(df.schema),
        sort_by=["id"],
        properties={"format-version": "2", "write.merge.mode": "merge-on-read"},
    )
    for low in (0, 40, 80):  # three files with disjoint id ranges
        write(df.filter(f"id >= {low} and id < {low + 40}").coalesce(1), table)
    far = [t.file for t in table.scan(filter="id < 40").plan_files()]
    assert len(far) == 1
    table.io.delete(far[0].file_path)  # reading it now would fail
    source = spark.sql(
        "SELECT id, 'z' AS category, CAST(0 AS BIGINT) AS value, 0 AS part FROM range(90, 130)"
    )
    merge(spark, table, source, on=["id"], when_matched_update="*", when_not_matched_insert="*")
    rows = read(spark, table.refresh(), filter="id >= 40").collect()
    assert sorted(r.id for r in rows if r.category == "z") == list(range(90, 130))
    assert len(rows) == 40 + 40 + 10
    with pytest.raises(ValidationError, match="no column 'nope' in the table"):
        merge(spark, table, source, on="nope", when_not_matched_insert="*")
    with pytest.raises(ValidationError, match="the source has no column 'value'"):
        merge(spark, table, source.drop("value"), on="value", when_matched_delete=True)
