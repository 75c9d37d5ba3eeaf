"""Partition statistics files judged by the reference engine: on tables Java writes (v2 with
position deletes, v3 with deletion vectors, a partition spec evolved, rows updated and whole
files deleted), icepark's statistics equal the file Java's ``compute_partition_stats`` writes
for the same snapshot, and Java computes the next snapshot's incrementally from the file
icepark wrote (reading it back: the rows only that file can date) to the result icepark
computes."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from icepark.catalog import load_catalog
from icepark.errors import ValidationError
from icepark.table.maintenance.partition_stats import partition_stats_rows

pytestmark = pytest.mark.interop

BUILD = [
    "CREATE TABLE {t} (id bigint, cat string, d date) USING iceberg PARTITIONED BY (cat, days(d))"
    " TBLPROPERTIES ('format-version' = '{v}', 'write.delete.mode' = 'merge-on-read',"
    " 'write.update.mode' = 'merge-on-read')",
    "INSERT INTO {t} VALUES (1, 'a', DATE '2024-01-01'), (2, 'b', DATE '2024-01-01'),"
    " (3, 'a', DATE '2024-01-02'), (4, NULL, NULL), (5, 'a', DATE '2024-01-02')",
    "DELETE FROM {t} WHERE id = 1",  # the partition's only file goes: a row of zeros
    "DELETE FROM {t} WHERE id = 3",  # position deletes (v2), a deletion vector (v3)
    "ALTER TABLE {t} ADD PARTITION FIELD bucket(4, id)",
    "INSERT INTO {t} VALUES (6, 'a', DATE '2024-01-02'), (7, 'c', DATE '2024-01-03')",
    "UPDATE {t} SET cat = 'z' WHERE id = 5",
]


def _rows(table: Any) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=repr)


def _java_file(refspark: Any, name: str) -> Any:
    (row,) = refspark.rows(f"CALL {name.split('.')[0]}.system.compute_partition_stats('db.t')")
    return pq.read_table(str(row[0]).removeprefix("file:"))


@pytest.mark.parametrize("version", [2, 3])
def test_partition_stats_as_java(refspark: Any, tmp_path: Path, version: int) -> None:
    java = refspark.catalog_for(tmp_path)
    name = f"{java}.db.t"
    refspark.request([f"CREATE NAMESPACE {java}.db", *[s.format(t=name, v=version) for s in BUILD]])
    ours = load_catalog("ps", type="filesystem", warehouse=str(tmp_path))
    table = ours.load_table("db.t")
    snapshot = table.current_snapshot()
    assert snapshot is not None
    mine = partition_stats_rows(table.io, table.metadata, snapshot)
    theirs = _java_file(refspark, name)
    assert _rows(mine) == _rows(theirs) and mine.num_rows == theirs.num_rows >= 6
    assert [f.name for f in mine.schema] == [f.name for f in theirs.schema]

    # icepark registers its own file for a snapshot; Java computes the next one from it.
    # The first snapshot is expired first: a full compute can no longer date the partitions
    # only it updated (their last update is null), while an incremental one keeps the dates
    # the previous file has, so those rows show that Java read icepark's file.
    refspark.request([f"INSERT INTO {name} VALUES (8, 'a', DATE '2024-01-01')"])
    table = ours.load_table("db.t")
    first = table.metadata.current_snapshot_id
    written = table.compute_partition_stats()
    assert written is not None and written.snapshot_id == first
    assert table.compute_partition_stats() == written  # kept, not computed again
    oldest = min(table.metadata.snapshots, key=lambda s: s.sequence_number).snapshot_id
    refspark.request(
        [
            f"CALL {java}.system.expire_snapshots(table => 'db.t', snapshot_ids => ARRAY({oldest}))",
            f"INSERT INTO {name} VALUES (9, 'b', DATE '2024-01-05')",
        ]
    )
    later = {_key(r): r for r in _java_file(refspark, name).to_pylist()}
    table = ours.load_table("db.t")
    head = table.current_snapshot()
    assert head is not None and table.metadata.snapshot_by_id(oldest) is None
    full = {_key(r): r for r in partition_stats_rows(table.io, table.metadata, head).to_pylist()}
    undated = [k for k, r in full.items() if r["last_updated_snapshot_id"] is None]
    assert len(undated) == 2 and full.keys() == later.keys()
    for key, row in full.items():
        if key in undated:
            assert later[key]["last_updated_snapshot_id"] == oldest, key
            row = {
                **row,
                **{k: later[key][k] for k in ("last_updated_at", "last_updated_snapshot_id")},
            }
        assert row == later[key], key
    registered = {s.snapshot_id for s in table.metadata.partition_statistics}
    assert {first, head.snapshot_id} <= registered


def _key(row: dict[str, Any]) -> str:
    return repr((row["spec_id"], row["partition"]))


def test_partition_stats_refuses_what_java_refuses(tmp_path: Path) -> None:
    import pyarrow as pa

    catalog = load_catalog("ps", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                           warehouse=str(tmp_path / "w"))  # fmt: skip
    catalog.create_namespace("db")
    plain = catalog.create_table("db.plain", pa.schema([("id", pa.int64())]))
    with pytest.raises(ValidationError, match="partitioned"):
        plain.compute_partition_stats()
    parted = catalog.create_table(
        "db.parted", pa.schema([("id", pa.int64())]), partition_by=["bucket(2, id)"]
    )
    assert parted.compute_partition_stats() is None  # no snapshot yet
    parted.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    with pytest.raises(ValidationError, match="Snapshot not found: 42"):
        parted.compute_partition_stats(42)
    before = sorted(p.name for p in (tmp_path / "w").rglob("*"))
    written = parted.compute_partition_stats()
    assert written is not None
    stats = pq.read_table(written.statistics_path)
    assert sum(stats.column("data_record_count").to_pylist()) == 3
    assert len(sorted(p.name for p in (tmp_path / "w").rglob("*"))) == len(before) + 2
    assert glob.glob(str(tmp_path / "w" / "db" / "parted" / "metadata" / "partition-stats-*"))
