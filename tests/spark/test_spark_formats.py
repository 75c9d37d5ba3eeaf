"""Avro and ORC tables on Spark, through icepark's reader and writer in Python tasks (the pip
pyspark has no Avro reader): an Avro table written, read, deleted from and updated in both
row-level modes reads the same in the reference engine; the reference engine's Avro and ORC
tables (with merge-on-read deletes) read the same on Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from refengine import RefEngine

from icepark.catalog import Catalog, FileSystemCatalog
from icepark.manifest import FileContent, FileFormat
from icepark.spark import delete, read, update, write
from icepark.spark.read.reader import choose_path

pytestmark = pytest.mark.spark

ROWS = """
    SELECT id, CASE WHEN id % 7 = 0 THEN NULL ELSE concat('c', CAST(id % 3 AS STRING)) END
           AS category, CAST(id * 10 AS BIGINT) AS value, CAST(id % 4 AS INT) AS part,
           named_struct('x', CAST(id AS DOUBLE), 'tags', array(CAST(id AS STRING))) AS info
    FROM range(0, 90)
"""


def _formats(table: Any) -> set[tuple[FileContent, FileFormat]]:
    out = set()
    for t in table.refresh().scan().plan_files():
        out.add((t.file.content, t.file.file_format))
        out |= {(d.content, d.file_format) for d in t.delete_files}
    return out


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_avro_table_write_read_delete_update(
    spark: Any, catalog: Catalog, refspark: RefEngine, tmp_path: Path, mode: str
) -> None:
    from icepark.spark.types import spark_schema_to_arrow

    df = spark.sql(ROWS)
    table = catalog.create_table(
        "db.a",
        spark_schema_to_arrow(df.schema),
        partition_by=["part"],
        properties={
            "format-version": "2",
            "write.format.default": "avro",
            "write.delete.mode": mode,
            "write.update.mode": mode,
        },
    )
    write(df.repartition(2), table)
    assert _formats(table) == {(FileContent.DATA, FileFormat.AVRO)}
    scan = table.refresh().scan()
    assert choose_path(scan, scan.plan_files())[0] == "python"
    expected = sorted(tuple(r) for r in df.collect())
    assert sorted(tuple(r) for r in read(spark, table).collect()) == expected
    delete(spark, table, "id % 5 = 0")
    update(spark, table, set={"value": "value + 1"}, where="category = 'c1'")
    wanted = sorted(
        (r[0], r[1], r[2] + (1 if r[1] == "c1" else 0), r[3], r[4]) for r in expected if r[0] % 5
    )
    got = sorted(tuple(r) for r in read(spark, table.refresh()).collect())
    assert got == wanted
    formats = _formats(table)
    assert {f for _, f in formats} == {FileFormat.AVRO}
    if mode == "merge-on-read":
        assert (FileContent.POSITION_DELETES, FileFormat.AVRO) in formats
    c = refspark.catalog_for(Path(catalog.properties["warehouse"]))
    theirs = sorted(
        tuple(r[:4]) for r in refspark.rows(f"SELECT id, category, value, part FROM {c}.db.a")
    )
    assert theirs == [w[:4] for w in wanted]


@pytest.mark.parametrize("fmt", ["avro", "orc"])
def test_spark_reads_reference_tables(
    spark: Any, refspark: RefEngine, tmp_path: Path, fmt: str
) -> None:
    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    t = f"{c}.db.r"
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {t} (id bigint, name string, ts timestamp, dec decimal(9,2),"
            " loc struct<lat:double,lon:double>, tags array<string>, attrs map<string,int>)"
            " USING iceberg PARTITIONED BY (days(ts), bucket(3, id))"
            f" TBLPROPERTIES ('format-version'='2', 'write.format.default'='{fmt}',"
            " 'write.delete.mode'='merge-on-read')",
            f"INSERT INTO {t} SELECT id, concat('n', CAST(id AS STRING)),"
            " TIMESTAMP '2024-03-01 00:00:00' + make_interval(0,0,0,0,CAST(id AS INT),0,0),"
            " CAST(id / 4.0 AS DECIMAL(9,2)), named_struct('lat', CAST(id AS DOUBLE), 'lon', 1.0),"
            " array(CAST(id AS STRING)), map('k', CAST(id AS INT)) FROM range(0, 60)",
            f"ALTER TABLE {t} RENAME COLUMN name TO label",
            f"DELETE FROM {t} WHERE id % 6 = 1",
        ]
    )
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.r")
    sql = "SELECT id, label, CAST(dec AS STRING), loc.lat, tags[0], attrs['k'] FROM {t}"
    theirs = sorted(tuple(r) for r in refspark.rows(sql.format(t=t)))
    df = read(spark, table)
    df.createOrReplaceTempView("icepark_formats_r")
    ours = sorted(tuple(r) for r in spark.sql(sql.format(t="icepark_formats_r")).collect())
    assert len(ours) == 50
    assert ours == theirs
    filtered = read(spark, table, filter="id >= 40 and label < 'n45'", columns=["id"])
    assert sorted(r[0] for r in filtered.collect()) == [40, 41, 42, 44]
