"""Avro and ORC data files between icepark and the Java reference engine.

The reference engine writes Avro and ORC tables (``write.format.default``) with every
primitive type Spark has, nested structs, lists and maps, partition transforms of every kind
(the spec evolved between writes), schema evolution between writes (added, renamed, dropped
and promoted columns), merge-on-read DELETE and UPDATE (position deletes in the table's
format) and equality deletes committed through Java's API: icepark reads the same rows.
icepark writes Avro tables (each codec, position deletes in Avro) and ORC tables: the
reference engine reads the same rows, and its ``files`` table shows the same formats and record
counts (and no column metrics for Avro files, as for its own).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from refengine import RefEngine
from test_interop_data import SCHEMA, _data, _norm_ref, _our_rows

from icepark.catalog import FileSystemCatalog
from icepark.manifest import FileContent, FileFormat

pytestmark = pytest.mark.interop

_COLUMNS = (
    "id bigint NOT NULL, i int, l bigint, flag boolean, f float, d double, dec decimal(9,2),"
    " day date, ts timestamp_ntz, tstz timestamp, name string, bin binary,"
    " point struct<x:double,y:double>, tags array<string>, attrs map<string,bigint>,"
    " imap map<int,string>"
)


def _select(lo: int, hi: int, evolved: bool) -> str:
    null = "id % 7 = 3"
    name = (
        f"CASE WHEN {null} THEN NULL ELSE concat('name-', CAST(id % 6 AS STRING),"
        " repeat('x', CAST(id % 20 AS INT))) END"
    )
    cols = [
        "id",
        f"CASE WHEN {null} THEN NULL ELSE CAST(id * 37 - 500 AS INT) END",
        "id * 1000000007",
        f"CASE WHEN {null} THEN NULL ELSE id % 2 = 0 END",
        "CASE WHEN id = 5 THEN CAST('NaN' AS FLOAT) ELSE CAST(id / 3.0 AS FLOAT) END",
        "-id * 1.5",
        "CAST((id * 123 - 2000) / 100.0 AS DECIMAL(9,2))",
        "date_add(DATE '2024-01-01', CAST(id % 9 - 4 AS INT))",
        "TIMESTAMP_NTZ '2023-12-30 22:00:00' + make_interval(0,0,0,0,CAST(id * 5 AS INT),0,0)",
        "TIMESTAMP '2023-12-30 22:00:00' + make_interval(0,0,0,0,CAST(id * 7 AS INT),0,0)",
        name,
        "CAST(repeat('b', CAST(id % 4 AS INT)) AS BINARY)",
        "CASE WHEN id % 11 = 4 THEN NULL ELSE named_struct('x', CAST(id AS DOUBLE),"
        " 'y', -CAST(id AS DOUBLE)) END",
        f"CASE WHEN {null} THEN NULL ELSE array_repeat(concat('t', CAST(id AS STRING)),"
        " CAST(id % 3 AS INT)) END",
        "map('k', id)",
        "map(CAST(id AS INT), concat('v', CAST(id AS STRING)))",
    ]
    if evolved:  # bin dropped, name renamed (same place), extra added at the end
        del cols[11]
        cols.append("concat('e', CAST(id AS STRING))")
    return f"SELECT {', '.join(cols)} FROM range({lo}, {hi})"


@pytest.mark.parametrize("fmt", ["avro", "orc"])
def test_icepark_reads_reference_tables(refspark: RefEngine, tmp_path: Path, fmt: str) -> None:
    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    t = f"{c}.db.t"
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {t} ({_COLUMNS}) USING iceberg"
            " PARTITIONED BY (bucket(4, id), days(tstz), truncate(3, name))"
            f" TBLPROPERTIES ('format-version'='2', 'write.format.default'='{fmt}',"
            " 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')",
            f"INSERT INTO {t} {_select(0, 20, False)}",
            f"ALTER TABLE {t} ADD COLUMN extra string",
            f"ALTER TABLE {t} RENAME COLUMN name TO label",
            f"ALTER TABLE {t} DROP COLUMN bin",
            f"ALTER TABLE {t} ALTER COLUMN i TYPE bigint",
            f"ALTER TABLE {t} ALTER COLUMN f TYPE double",
            f"ALTER TABLE {t} ALTER COLUMN dec TYPE decimal(12,2)",
            f"ALTER TABLE {t} ADD PARTITION FIELD years(ts)",
            f"ALTER TABLE {t} ADD PARTITION FIELD months(day)",
            f"ALTER TABLE {t} ADD PARTITION FIELD hours(tstz)",
            f"ALTER TABLE {t} ADD PARTITION FIELD truncate(10, l)",
            f"ALTER TABLE {t} ADD PARTITION FIELD flag",
            f"INSERT INTO {t} {_select(20, 40, True)}",
            f"DELETE FROM {t} WHERE id % 5 = 0",
            f"UPDATE {t} SET extra = 'updated', d = d + 1 WHERE id % 7 = 1",
        ]
    )
    files = refspark.rows(f"SELECT file_format, content FROM {t}.files")
    assert {r[0] for r in files} == {fmt.upper()}
    assert {r[1] for r in files} == {0, 1}  # data and position deletes
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.t")
    theirs = [
        [_norm_ref(v) for v in row] for row in refspark.rows(f"SELECT * FROM {t} ORDER BY id")
    ]
    ours = _our_rows(table.scan().to_arrow())
    assert len(ours) == 32
    assert ours == theirs
    for where, icepark_filter in [
        ("id >= 25 AND label >= 'name-3'", "id >= 25 and label >= 'name-3'"),
        ("extra IS NULL", "extra is null"),
        ("point.x > 10", "point.x > 10"),
        ("dec < 0", "dec < 0"),
    ]:
        ref_ids = [r[0] for r in refspark.rows(f"SELECT id FROM {t} WHERE {where} ORDER BY id")]
        got = table.scan(filter=icepark_filter, columns=["id"]).to_arrow().column("id")
        assert sorted(got.to_pylist()) == ref_ids, where
    # time travel to the first snapshot: the unevolved rows
    first = table.snapshots()[0].snapshot_id
    assert table.scan(snapshot_id=first).to_arrow().num_rows == 20


@pytest.mark.parametrize("fmt", ["avro", "orc"])
def test_equality_deletes_written_by_java(java_equality_deletes: dict[str, Any], fmt: str) -> None:
    warehouse, theirs = java_equality_deletes[fmt]
    assert theirs == [(1, "a", "x"), (2, "a", "again"), (3, "b", "z")]
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.eq")
    tasks = table.scan().plan_files()
    deletes = {(d.content, d.file_format) for t in tasks for d in t.delete_files}
    assert deletes == {(FileContent.EQUALITY_DELETES, FileFormat(fmt.upper()))}
    assert {t.file.file_format for t in tasks} == {FileFormat(fmt.upper())}
    mine = sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())
    assert mine == theirs


@pytest.mark.parametrize(
    ("fmt", "codec"),
    [
        ("avro", "gzip"),
        ("avro", "snappy"),
        ("avro", "zstd"),
        ("avro", "uncompressed"),
        ("orc", "zlib"),
        ("orc", "zstd"),
    ],
)
def test_reference_reads_icepark_tables(
    refspark: RefEngine, tmp_path: Path, fmt: str, codec: str
) -> None:
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["day(ts)", "bucket(4, id)"],
        properties={
            "format-version": "2",
            "write.format.default": fmt,
            f"write.{fmt}.compression-codec": codec,
            "write.delete.mode": "merge-on-read",
        },
    )
    data = _data()
    table.append(data.slice(0, 25))
    table.append(data.slice(25))
    table.delete("id < 3 or id = 30")
    c = refspark.catalog_for(warehouse)
    result = refspark.sql(f"SELECT * FROM {c}.db.t ORDER BY id")
    theirs = [[_norm_ref(v) for v in row] for row in result["rows"]]
    assert theirs == _our_rows(table.scan().to_arrow())
    kept = data.filter([i >= 3 and i != 30 for i in data.column("id").to_pylist()])
    assert theirs == _our_rows(kept)
    files = refspark.rows(
        f"SELECT file_path, file_format, content, record_count, value_counts, lower_bounds"
        f" FROM {c}.db.t.files"
    )
    ours = {}
    for task in table.scan().plan_files():
        for f in (task.file, *task.delete_files):
            ours[f.file_path] = (f.file_format.value, int(f.content), f.record_count)
    theirs_files = {r[0].removeprefix("file:"): (r[1], r[2], r[3]) for r in files}
    assert theirs_files == ours
    assert {r[1] for r in files} == {fmt.upper()}
    if fmt == "avro":  # no column metrics for Avro data files, as Java writes them
        assert all(r[4] is None and r[5] is None for r in files if r[2] == 0)
    else:  # ORC files have them, and they prune in the reference engine as in icepark
        assert all(r[4] and r[5] for r in files if r[2] == 0)
        for where in ("id >= 30", "name = 'name-1-éx'", "dec < 0"):
            ref_ids = [
                r[0] for r in refspark.rows(f"SELECT id FROM {c}.db.t WHERE {where} ORDER BY id")
            ]
            ours_ids = table.scan(filter=where, columns=["id"]).to_arrow().column("id")
            assert sorted(ours_ids.to_pylist()) == ref_ids, where
