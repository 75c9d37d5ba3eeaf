"""Expiry and orphan removal judged by the reference engine, on two identical histories.

The reference engine writes a table's history (inserts, a static overwrite, merge-on-read
deletes, a copy-on-write update, a merge, a whole-partition delete, a branch and tags with
writes of their own, a statistics file) and icepark adds commits to the same table (an append,
an upsert with equality deletes, a merge-on-read delete, a copy-on-write overwrite), then sets
each ref's retention. The reference engine's ``rewrite_table_path`` makes an identical copy
at another location (same snapshot ids, same relative paths). icepark's ``expire_snapshots``
runs on the original and the reference engine's ``CALL system.expire_snapshots`` with the same
arguments on the copy: the same snapshots and refs must remain, the same files (by relative
path) must be deleted, with the same six counts; then the reference engine reads every
remaining snapshot and ref of icepark's table. Finally the same stray files are dropped into
both tables and icepark's ``remove_orphan_files`` and the reference engine's
``CALL system.remove_orphan_files`` must find the same ones.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest
from refengine import RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.table import Table

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [pa.field("id", pa.int64()), pa.field("p", pa.string()), pa.field("v", pa.string())]
)
COUNTS = (
    "deleted_data_files_count",
    "deleted_position_delete_files_count",
    "deleted_equality_delete_files_count",
    "deleted_manifest_files_count",
    "deleted_manifest_lists_count",
    "deleted_statistics_files_count",
)
DAY_MS = 86_400_000


def _rows(ids: range, v: str = "ice") -> pa.Table:
    return pa.table(
        {"id": list(ids), "p": [f"p{i % 3}" for i in ids], "v": [v] * len(ids)}, schema=SCHEMA
    )


def _files(root: Path) -> set[str]:
    """Files under ``root`` by relative path, hidden ones (``.crc``, ``_...``) left out."""
    out = set()
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and not any(part.startswith((".", "_")) for part in rel.parts):
            out.add(rel.as_posix())
    return out


def _relative(location: str, root: Path) -> str:
    path = location.removeprefix("file:")
    return Path(path).relative_to(root).as_posix()


def _ts(ms: int) -> str:
    """A Spark SQL TIMESTAMP literal (the reference engine's session zone is UTC)."""
    moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return f"TIMESTAMP '{moment.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def _build_history(ref: RefEngine, warehouse: Path) -> tuple[Table, int]:
    """The table, and a time after the snapshots that rewrote the delete files (so that
    expiring before it removes data, position delete and equality delete files)."""
    a = ref.catalog_for(warehouse)
    t = f"{a}.db.t"
    insert = (
        "INSERT INTO {} SELECT id, concat('p', CAST(id % 3 AS STRING)), 'java' FROM range({}, {})"
    )
    for sql in [
        f"CREATE TABLE {t} (id bigint, p string, v string) USING iceberg PARTITIONED BY (p)"
        " TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read',"
        " 'write.update.mode'='copy-on-write', 'write.merge.mode'='merge-on-read')",
        *[insert.format(t, i * 100, i * 100 + 100) for i in range(6)],
        f"INSERT OVERWRITE {t} PARTITION (p = 'p1') SELECT id, 'over' FROM range(1000, 1040)",
        f"DELETE FROM {t} WHERE id % 10 = 3",
        f"UPDATE {t} SET v = 'upd' WHERE id < 50",
    ]:
        ref.sql(sql)
    # a table statistics file (Puffin) for an early snapshot, which expiry will remove
    first = ref.rows(f"SELECT snapshot_id FROM {t}.snapshots ORDER BY committed_at LIMIT 2")[1][0]
    ref.sql(f"CALL {a}.system.compute_table_stats(table => 'db.t', snapshot_id => {first})")

    catalog = FileSystemCatalog("a", warehouse=str(warehouse))
    table = catalog.load_table("db.t")
    table.append(_rows(range(900, 960)))
    table.upsert(_rows(range(940, 980), "upserted"), on=["id"])  # equality deletes
    table.delete("id >= 500 and id < 520")  # merge-on-read: position deletes
    table.overwrite(_rows(range(5000, 5010)), "id >= 5000")
    ref.sql(f"REFRESH TABLE {t}")
    for sql in [
        # new delete files replace the old ones, then data files absorb the deletes
        f"CALL {a}.system.rewrite_position_delete_files(table => 'db.t',"
        " options => map('rewrite-all', 'true'))",
        f"CALL {a}.system.rewrite_data_files(table => 'db.t',"
        " options => map('rewrite-all', 'true', 'remove-dangling-deletes', 'true'))",
    ]:
        ref.sql(sql)
    cutoff = max(s.timestamp_ms for s in catalog.load_table("db.t").snapshots()) + 1
    time.sleep(0.01)
    for sql in [
        f"ALTER TABLE {t} CREATE TAG old_tag",
        f"ALTER TABLE {t} CREATE BRANCH b1",
        insert.format(f"{t}.branch_b1", 2000, 2010),
        insert.format(f"{t}.branch_b1", 2010, 2020),
        insert.format(f"{t}.branch_b1", 2020, 2030),
        insert.format(t, 600, 700),
        f"ALTER TABLE {t} CREATE TAG keep_tag",
        f"MERGE INTO {t} USING (SELECT id, concat('p', CAST(id % 3 AS STRING)) AS p, 'merged' AS v"
        f" FROM range(650, 750)) s ON {t}.id = s.id"
        " WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
        f"ALTER TABLE {t} CREATE BRANCH stale",
        insert.format(f"{t}.branch_stale", 3000, 3005),
        f"DELETE FROM {t} WHERE p = 'p2' AND id > 500",
        insert.format(t, 800, 900),
        f"DELETE FROM {t} WHERE p = 'p0'",
        insert.format(t, 1100, 1110),
        insert.format(t, 1110, 1120),
    ]:
        ref.sql(sql)
    table = catalog.load_table("db.t")
    table.append(_rows(range(1200, 1210)))
    table.set_ref_retention("old_tag", max_ref_age_ms=1)  # expires
    table.set_ref_retention("keep_tag", max_ref_age_ms=10 * DAY_MS)
    table.set_ref_retention("b1", min_snapshots_to_keep=2, max_snapshot_age_ms=1)
    table.set_ref_retention("stale", max_ref_age_ms=1)  # expires
    return table, cutoff


def _backup(root: Path, to: Path) -> None:
    shutil.rmtree(to, ignore_errors=True)
    shutil.copytree(root, to)


def _restore(root: Path, backup: Path) -> None:
    """Put the table back as it was: same files at the same absolute paths."""
    shutil.rmtree(root)
    shutil.copytree(backup, root)


def _read_all(ref: RefEngine, name: str, versions: list[str]) -> dict[str, list[object]]:
    ref.sql(f"REFRESH TABLE {name}")
    return {
        v: ref.rows(f"SELECT count(*), sum(id), count(DISTINCT v) FROM {name} VERSION AS OF {v}")[0]
        for v in versions
    }


def _age(root: Path, days: float) -> None:
    moment = time.time() - days * 86400
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (moment, moment))


def test_expiry_and_orphans_match_the_reference_engine(refspark: RefEngine, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    table, cutoff = _build_history(refspark, warehouse)
    root, backup = warehouse / "db" / "t", tmp_path / "backup"
    ref = refspark.catalog_for(warehouse)
    name = f"{ref}.db.t"
    snapshots = sorted(table.snapshots(), key=lambda s: s.timestamp_ms)
    assert len(snapshots) >= 22
    assert {"old_tag", "keep_tag", "b1", "stale", "main"} == set(table.refs())
    assert table.metadata.statistics
    before = _files(root)

    # the reference engine expires a copy of the table first ...
    _backup(root, backup)
    refspark.sql(f"REFRESH TABLE {name}")
    ((*java_counts,),) = refspark.rows(
        f"CALL {ref}.system.expire_snapshots(table => 'db.t', older_than => {_ts(cutoff)},"
        " retain_last => 3)"
    )
    java_snapshots = {r[0] for r in refspark.rows(f"SELECT snapshot_id FROM {name}.snapshots")}
    java_refs = {
        tuple(r) for r in refspark.rows(f"SELECT name, type, snapshot_id FROM {name}.refs")
    }
    java_deleted = before - _files(root)
    versions = [str(s) for s in sorted(java_snapshots)] + [f"'{n}'" for n, _, _ in java_refs]
    java_reads = _read_all(refspark, name, versions)

    # ... then icepark expires the same table, restored at the same paths
    _restore(root, backup)
    table.refresh()
    result = table.expire_snapshots(older_than=cutoff, retain_last=3)

    # the same snapshots and refs remain
    remaining = {s.snapshot_id for s in table.snapshots()}
    assert remaining == java_snapshots
    assert len(remaining) < len(snapshots)
    refs = {(n, r.type.value.upper(), r.snapshot_id) for n, r in table.refs().items()}
    assert refs == java_refs
    assert set(table.refs()) == {"main", "keep_tag", "b1"}
    assert {"old_tag", "stale"} == set(result.removed_refs)

    # the same files were deleted, the six counts agree, and icepark reported what it deleted
    deleted = before - _files(root)
    assert deleted == java_deleted
    assert {_relative(p, root) for p in result.deleted_files} == deleted
    assert result.failed == {}
    assert list(result.counts().values()) == java_counts
    counts = result.counts()
    assert counts["deleted_data_files_count"] > 0
    assert counts["deleted_position_delete_files_count"] > 0
    assert counts["deleted_equality_delete_files_count"] > 0
    assert counts["deleted_manifest_lists_count"] > 0
    assert counts["deleted_statistics_files_count"] == 1

    # the reference engine reads every remaining snapshot and ref of icepark's table
    reads = _read_all(refspark, name, versions)
    assert reads == java_reads
    for snapshot_id in remaining:
        assert reads[str(snapshot_id)][0] == table.scan(snapshot_id=snapshot_id).to_arrow().num_rows

    # orphans: the same strays, found by both engines on the same table; hidden files stay
    strays = [
        "data/p=p1/stray-00001.parquet",
        "data/stray.txt",
        "metadata/stray-m0.avro",
        "metadata/00999-0f0e-stray.metadata.json",
        "data/_temporary/attempt-1.parquet",  # hidden: kept
        "data/p=p1/.stray.crc",  # hidden: kept
    ]
    for rel in strays:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"stray")
    _age(root, 3)
    _backup(root, backup)
    older_than = int(time.time() * 1000) - 2 * DAY_MS
    refspark.sql(f"REFRESH TABLE {name}")
    java_orphans = refspark.rows(
        f"CALL {ref}.system.remove_orphan_files(table => 'db.t', older_than => {_ts(older_than)})"
    )
    _restore(root, backup)
    found = table.remove_orphan_files(older_than=older_than)
    assert {_relative(p, root) for p in found} == {_relative(r[0], root) for r in java_orphans}
    assert {_relative(p, root) for p in found} == set(strays[:4])
    assert all(not (root / rel).exists() for rel in strays[:4])
    assert all((root / rel).exists() for rel in strays[4:])
    refspark.sql(f"REFRESH TABLE {name}")
    assert _read_all(refspark, name, versions) == reads
