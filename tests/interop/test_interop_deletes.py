"""Row-level delete interop with the Java reference engine: its merge-on-read deletes (v2
position delete files, v3 deletion vectors) read the same in icepark, and icepark's
deletes (position deletes, DVs, equality deletes) read the same in the reference engine."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from refengine import RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.manifest import FileFormat

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("part", pa.int32()),
    ]
)


def _data(ids: list[int], suffix: str = "") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"n{i}{suffix}" for i in ids]),
            "part": pa.array([i % 2 for i in ids], pa.int32()),
        },
        schema=SCHEMA,
    )


@pytest.mark.parametrize("version", [2, 3])
def test_icepark_reads_reference_deletes(refspark: RefEngine, tmp_path: Path, version: int) -> None:
    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {c}.db.d (id bigint NOT NULL, name string, part int) USING iceberg"
            " PARTITIONED BY (part) TBLPROPERTIES ('write.delete.mode'='merge-on-read',"
            f" 'write.update.mode'='merge-on-read', 'format-version'='{version}')",
            f"INSERT INTO {c}.db.d SELECT id, concat('n', id), CAST(id % 2 AS int)"
            " FROM range(0, 40)",
            f"DELETE FROM {c}.db.d WHERE id < 5 OR id = 20",
            f"DELETE FROM {c}.db.d WHERE id = 21",
            f"UPDATE {c}.db.d SET name = 'changed' WHERE id = 30",
        ]
    )
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.d")
    deletes = [d for t in table.scan().plan_files() for d in t.delete_files]
    assert deletes
    expected = FileFormat.PUFFIN if version == 3 else FileFormat.PARQUET
    assert {d.file_format for d in deletes} == {expected}
    ours = sorted(table.scan().to_arrow().select(["id", "name"]).to_pylist(), key=lambda r: r["id"])
    theirs = refspark.rows(f"SELECT id, name FROM {c}.db.d ORDER BY id")
    assert [[r["id"], r["name"]] for r in ours] == theirs
    assert table.scan().count() == len(theirs) == 40 - 7 + 0
    assert table.scan(filter="id >= 20").count() == 18


@pytest.mark.parametrize("version", [2, 3])
def test_reference_reads_icepark_deletes(refspark: RefEngine, tmp_path: Path, version: int) -> None:
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.m",
        SCHEMA,
        partition_by=["part"],
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    table.append(_data(list(range(30))))
    table.delete("id < 4")
    table.delete("id = 10 or id = 11")
    changes = _data([12, 13, 50], "-v2").append_column("_op", pa.array(["U", "D", "I"]))
    table.apply_changes(changes, on=["id"])
    c = refspark.catalog_for(warehouse)
    theirs = refspark.rows(f"SELECT id, name FROM {c}.db.m ORDER BY id")
    ours = sorted(table.scan().to_arrow().select(["id", "name"]).to_pylist(), key=lambda r: r["id"])
    assert [[r["id"], r["name"]] for r in ours] == theirs
    assert [r[0] for r in theirs] == [*range(4, 10), 12, *range(14, 30), 50]
    files = refspark.rows(f"SELECT content, file_format, record_count FROM {c}.db.m.delete_files")
    formats = {r[1] for r in files}
    assert formats == ({"PUFFIN", "PARQUET"} if version == 3 else {"PARQUET"})


@pytest.mark.parametrize(
    ("how", "first", "delete_specs"),
    [
        ("apply_changes", ["part"], [0, 1]),
        ("upsert", ["part"], [0, 1]),
        ("upsert", [], [0]),  # an unpartitioned spec's deletes apply to every file
    ],
)
def test_equality_deletes_reach_files_of_an_older_spec(
    refspark: RefEngine, tmp_path: Path, how: str, first: list[str], delete_specs: list[int]
) -> None:
    """After a partition change, an update of a row written under the old spec replaces it:
    the equality deletes are written under every spec with live files (a delete applies only
    to files of its own spec and partition), or under the unpartitioned one alone where one
    of them is. The reference engine reads no duplicate."""
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.evolved",
        SCHEMA,
        partition_by=first,
        properties={"format-version": "2", "write.merge.mode": "merge-on-read"},
    )
    table.append(_data(list(range(10))))  # under spec 0: `first`
    with table.update_spec() as u:
        u.add_field("bucket(4, id)")
    table.append(_data(list(range(10, 20))))  # under spec 1: `first` and bucket(4, id)
    changed = _data([3, 4, 14, 30], "-new")
    if how == "apply_changes":
        table.apply_changes(changed.append_column("_op", pa.array(["U", "D", "U", "I"])), ["id"])
        expected = [[i, f"n{i}"] for i in range(20) if i not in (3, 4, 14)]
        expected += [[3, "n3-new"], [14, "n14-new"], [30, "n30-new"]]
    else:
        table.upsert(changed, on=["id"])
        expected = [[i, f"n{i}"] for i in range(20) if i not in (3, 4, 14)]
        expected += [[i, f"n{i}-new"] for i in (3, 4, 14, 30)]
    expected.sort()
    c = refspark.catalog_for(warehouse)
    assert refspark.rows(f"SELECT id, name FROM {c}.db.evolved ORDER BY id") == expected
    ours = table.refresh().scan().to_arrow().select(["id", "name"]).to_pylist()
    assert sorted([r["id"], r["name"]] for r in ours) == expected
    specs = refspark.rows(f"SELECT DISTINCT spec_id FROM {c}.db.evolved.delete_files")
    assert sorted(s for (s,) in specs) == delete_specs
