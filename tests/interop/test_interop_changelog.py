"""Changelog and incremental scans judged by the reference engine.

* copy-on-write histories written by the reference engine: ``table.changelog_scan`` equals
  its ``CALL system.create_changelog_view`` (plain, with update images, with net changes);
* merge-on-read histories (v2 position deletes, v3 deletion vectors, icepark's equality
  deletes), which Java 1.10 refuses to changelog: icepark's changelog equals the reference
  engine's changelog of the same statements run on a copy-on-write table;
* ``incremental_append_scan`` equals the reference engine's incremental read
  (``start-snapshot-id``/``end-snapshot-id``), deleted rows included as Java returns them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from refengine import REF_SCRIPT, REF_VENV, RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.table import Table

pytestmark = pytest.mark.interop

HISTORY = [
    "INSERT INTO {t} SELECT id, concat('v', id), CAST(id % 3 AS int) FROM range(0, 30)",
    "INSERT INTO {t} VALUES (100, 'x', 1), (101, 'y', 2)",
    "DELETE FROM {t} WHERE id < 3 OR id = 100",
    "UPDATE {t} SET v = concat(v, '!') WHERE id IN (5, 6, 101)",
    "MERGE INTO {t} t USING (SELECT * FROM VALUES (7, 'm7', 1), (200, 'new', 2) AS s(id, v, p))"
    " s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.v = s.v"
    " WHEN NOT MATCHED THEN INSERT *",
    "DELETE FROM {t} WHERE p = 2",
    "INSERT INTO {t} VALUES (5, 'v5!', 2)",
]


def _create(c: str, name: str, mode: str, version: int) -> str:
    modes = ", ".join(f"'write.{op}.mode'='{mode}'" for op in ("delete", "update", "merge"))
    return (
        f"CREATE TABLE {c}.db.{name} (id bigint, v string, p int) USING iceberg"
        f" TBLPROPERTIES ('format-version'='{version}', {modes})"
    )


def _history(refspark: RefEngine, c: str, name: str, mode: str, version: int) -> None:
    t = f"{c}.db.{name}"
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            _create(c, name, mode, version),
            # one file per insert: copy-on-write then rewrites files and leaves carry-overs
            *[s.format(t=t) for s in HISTORY],
        ]
    )


def _ref_changelog(
    refspark: RefEngine, c: str, name: str, view: str, args: str = ""
) -> list[tuple]:
    results = refspark.request(
        [
            f"CALL {c}.system.create_changelog_view(table => 'db.{name}',"
            f" changelog_view => '{view}'{args})",
            f"SELECT id, v, p, _change_type, _change_ordinal, _commit_snapshot_id FROM {view}",
        ]
    )
    return sorted(tuple(r) for r in results[1]["rows"])


def _ours(table: Table, **kw: Any) -> list[tuple]:
    rows = table.changelog_scan(**kw).to_arrow().to_pylist()
    return sorted(
        (
            r["id"],
            r["v"],
            r["p"],
            r["_change_type"],
            r["_change_ordinal"],
            r["_commit_snapshot_id"],
        )
        for r in rows
    )


def _without_ids(rows: list[tuple]) -> list[tuple]:
    return sorted(r[:5] for r in rows)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "wh"


def test_changelog_equals_reference_copy_on_write(refspark: RefEngine, warehouse: Path) -> None:
    c = refspark.catalog_for(warehouse)
    _history(refspark, c, "cow", "copy-on-write", 2)
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.cow")
    theirs = _ref_changelog(refspark, c, "cow", "cow_changes")
    ours = _ours(table)
    assert ours == theirs
    kinds = {r[3] for r in ours}
    assert kinds == {"INSERT", "DELETE"}
    # update images on an identifier column
    theirs = _ref_changelog(
        refspark, c, "cow", "cow_updates", ", identifier_columns => array('id')"
    )
    assert _ours(table, identifier_columns=["id"]) == theirs
    assert _ours(table, compute_updates=True, identifier_columns=["id"]) == theirs
    assert {r[3] for r in theirs} >= {"UPDATE_BEFORE", "UPDATE_AFTER", "INSERT", "DELETE"}
    # net changes across all snapshots
    theirs = _ref_changelog(refspark, c, "cow", "cow_net", ", net_changes => true")
    assert _ours(table, net_changes=True) == theirs
    # a range of snapshots (start exclusive, end inclusive)
    snaps = [s.snapshot_id for s in table.snapshots()]
    theirs = _ref_changelog(
        refspark,
        c,
        "cow",
        "cow_range",
        f", options => map('start-snapshot-id', '{snaps[1]}', 'end-snapshot-id', '{snaps[4]}')",
    )
    assert _ours(table, from_snapshot_id=snaps[1], to_snapshot_id=snaps[4]) == theirs
    # a filter and a projection
    filtered = table.changelog_scan(filter="id >= 5 and id < 8", columns=["id", "v"])
    assert filtered.to_arrow().column_names == [
        "id",
        "v",
        "_change_type",
        "_change_ordinal",
        "_commit_snapshot_id",
    ]
    expected = sorted((r[0], r[1], r[3], r[4]) for r in _ours(table) if 5 <= r[0] < 8)
    got = sorted(
        (r["id"], r["v"], r["_change_type"], r["_change_ordinal"])
        for r in filtered.to_arrow().to_pylist()
    )
    assert got == expected


@pytest.mark.parametrize("version", [2, 3])
def test_merge_on_read_changelog_equals_copy_on_write(
    refspark: RefEngine, warehouse: Path, version: int
) -> None:
    c = refspark.catalog_for(warehouse)
    _history(refspark, c, "cow", "copy-on-write", version)
    _history(refspark, c, "mor", "merge-on-read", version)
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    mor = catalog.load_table("db.mor")
    deletes = {d.file_format.value for t in mor.scan().plan_files() for d in t.delete_files}
    assert deletes == ({"PUFFIN"} if version == 3 else {"PARQUET"})
    # Java refuses a changelog over delete files; its copy-on-write twin is the judge
    with pytest.raises(Exception, match="Delete files are currently not supported"):
        refspark.request(
            [
                f"CALL {c}.system.create_changelog_view(table => 'db.mor', changelog_view => 'x')",
                "SELECT count(*) FROM x",
            ]
        )
    theirs = _ref_changelog(refspark, c, "cow", f"cow{version}")
    assert _without_ids(_ours(mor)) == _without_ids(theirs)
    theirs = _ref_changelog(
        refspark, c, "cow", f"cowu{version}", ", identifier_columns => array('id')"
    )
    assert _without_ids(_ours(mor, identifier_columns=["id"])) == _without_ids(theirs)
    theirs = _ref_changelog(refspark, c, "cow", f"cown{version}", ", net_changes => true")
    # net changes keep a run's first row: compare the changes, not their ordinals
    assert sorted(r[:4] for r in _ours(mor, net_changes=True)) == sorted(r[:4] for r in theirs)


def test_equality_delete_changelog_equals_copy_on_write(
    refspark: RefEngine, warehouse: Path
) -> None:
    c = refspark.catalog_for(warehouse)
    t = f"{c}.db.cow"
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            _create(c, "cow", "copy-on-write", 2),
            f"INSERT INTO {t} SELECT id, concat('v', id), CAST(id % 3 AS int) FROM range(0, 20)",
            f"UPDATE {t} SET v = 'u' WHERE id IN (3, 4)",
            f"DELETE FROM {t} WHERE id = 5",
            f"INSERT INTO {t} VALUES (50, 'n', 2)",
            f"UPDATE {t} SET v = 'w' WHERE id = 3",
        ]
    )
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.int32())])
    eq = catalog.create_table(
        "db.eq",
        schema,
        properties={"format-version": "2", "write.merge.mode": "merge-on-read"},
    )
    ids = list(range(20))
    eq.append(
        pa.table({"id": ids, "v": [f"v{i}" for i in ids], "p": [i % 3 for i in ids]}, schema=schema)
    )

    def changes(rows: list[tuple[int, str, int, str]]) -> pa.Table:
        return pa.table(
            {
                "id": [r[0] for r in rows],
                "v": [r[1] for r in rows],
                "p": [r[2] for r in rows],
                "_op": [r[3] for r in rows],
            },
            schema=schema.append(pa.field("_op", pa.string())),
        )

    eq.apply_changes(changes([(3, "u", 0, "U"), (4, "u", 1, "U")]), on=["id"])
    eq.apply_changes(changes([(5, "v5", 2, "D")]), on=["id"])
    eq.apply_changes(changes([(50, "n", 2, "I")]), on=["id"])
    eq.apply_changes(changes([(3, "w", 0, "U")]), on=["id"])
    assert any(
        d.content.name == "EQUALITY_DELETES" for t in eq.scan().plan_files() for d in t.delete_files
    )
    theirs = _ref_changelog(refspark, c, "cow", "eq_cow")
    assert _without_ids(_ours(eq)) == _without_ids(theirs)
    theirs = _ref_changelog(refspark, c, "cow", "eq_cowu", ", identifier_columns => array('id')")
    assert _without_ids(_ours(eq, identifier_columns=["id"])) == _without_ids(theirs)


INCREMENTAL_SCRIPT = """
import json, sys
sys.path.insert(0, {refdir!r})
from refspark import session
spark = session({warehouse!r})
df = spark.read.format("iceberg").option("start-snapshot-id", {start}).option("end-snapshot-id", {end}).load("ref.db.mor")
print("ROWS " + json.dumps(sorted([list(r) for r in df.select("id", "v").collect()])))
spark.stop()
"""


def test_incremental_append_scan_equals_reference(
    refspark: RefEngine, warehouse: Path, tmp_path: Path
) -> None:
    c = refspark.catalog_for(warehouse)
    _history(refspark, c, "mor", "merge-on-read", 2)
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.mor")
    snaps = table.snapshots()
    start, end = snaps[0].snapshot_id, snaps[-1].snapshot_id
    # Spark's incremental read runs only from the DataFrame API: a script of its own
    script = tmp_path / "incremental.py"
    script.write_text(
        INCREMENTAL_SCRIPT.format(
            refdir=str(REF_SCRIPT.parent), warehouse=str(warehouse), start=start, end=end
        )
    )
    out = subprocess.run(
        [str(REF_VENV / "bin" / "python"), str(script)], capture_output=True, text=True, timeout=600
    )
    line = next(x for x in out.stdout.splitlines() if x.startswith("ROWS "))
    theirs = json.loads(line[5:])
    scan = table.incremental_append_scan(from_snapshot_id=start, to_snapshot_id=end)
    ours = sorted([r["id"], r["v"]] for r in scan.to_arrow().select(["id", "v"]).to_pylist())
    assert ours == theirs
    assert [100, "x"] in ours  # appended, then deleted: Java still reports it
