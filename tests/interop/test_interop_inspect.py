"""Metadata tables against the Java reference engine: for each of the sixteen tables, the rows
of ``table.inspect.<name>()`` equal ``SELECT * FROM t.<name>`` in the reference engine (row
order aside; timestamps, dates, decimals, binary and nested values normalised to one form),
with the same column names, on tables the reference engine wrote (v1, v2 and v3, evolved
partition specs and schemas, position deletes and deletion vectors from merge-on-read DELETE,
UPDATE and MERGE, copy-on-write deletes, branches, tags, a rollback) and on tables icepark
wrote (equality deletes, DVs). Time travel is compared where Java allows it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from inspect_compare import assert_same
from refengine import RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.errors import NoSuchTableError, UnsupportedOperationError, ValidationError
from icepark.table import Table
from icepark.table.inspect import METADATA_TABLES

pytestmark = pytest.mark.interop

ALL = list(METADATA_TABLES)


def compare(
    refspark: RefEngine,
    table: Table,
    sql_name: str,
    names: list[str],
    *,
    version: str | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
) -> None:
    suffix = f" VERSION AS OF {version}" if version is not None else ""
    results = refspark.request([f"SELECT * FROM {sql_name}.{n}{suffix}" for n in names])
    for name, result in zip(names, results):
        mine = table.inspect.table(name, snapshot_id, ref=ref)
        assert_same(mine, result, f"{sql_name}.{name}{suffix}")


def _load(warehouse: Path, name: str) -> Table:
    return FileSystemCatalog("fs", warehouse=str(warehouse)).load_table(name)


# -- tables the reference engine wrote ---------------------------------------------------------

V2_COLUMNS = (
    "id bigint NOT NULL, ts timestamp, name string, amount decimal(10,2),"
    " info struct<a:int, b:string>, score double, flag boolean, d date"
)


def _rows(start: int, count: int) -> str:
    values = []
    for i in range(start, start + count):
        score = "double('NaN')" if i % 4 == 0 else ("NULL" if i % 5 == 0 else f"{i / 3}")
        name = "NULL" if i % 3 == 0 else f"'n{i}'"
        values.append(
            f"({i}, TIMESTAMP '2024-01-0{1 + i % 3} 10:00:00' + make_interval(0,0,0,0,{i},0,0),"
            f" {name}, {i}.25, named_struct('a', {i}, 'b', 'b{i}'), {score}, {i % 2 == 0!s},"
            f" DATE '2023-12-0{1 + i % 5}')"
        )
    return ", ".join(values)


@pytest.fixture(scope="module")
def reference_tables(refspark: RefEngine, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Tables built by the reference engine, with the snapshot ids tests travel to."""
    warehouse = tmp_path_factory.mktemp("inspect") / "wh"
    c = refspark.catalog_for(warehouse)
    t = f"{c}.db.v2"
    props = (
        "'format-version'='2', 'write.delete.mode'='merge-on-read',"
        " 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read',"
        " 'commit.manifest.min-count-to-merge'='3'"
    )
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {t} ({V2_COLUMNS}) USING iceberg PARTITIONED BY (days(ts))"
            f" TBLPROPERTIES ({props})",
            f"INSERT INTO {t} VALUES {_rows(0, 6)}",
            f"ALTER TABLE {t} ADD PARTITION FIELD bucket(4, id)",
            f"INSERT INTO {t} VALUES {_rows(6, 4)}",
            f"ALTER TABLE {t} ADD COLUMN extra string",
            f"INSERT INTO {t} SELECT *, 'x' FROM (VALUES {_rows(10, 3)})",
            f"DELETE FROM {t} WHERE id = 2",
            f"UPDATE {t} SET name = 'u' WHERE id = 7",
            f"MERGE INTO {t} s USING (SELECT 8L AS id, 'm' AS name UNION ALL SELECT 30L, 'new')"
            " u ON s.id = u.id WHEN MATCHED THEN UPDATE SET s.name = u.name"
            " WHEN NOT MATCHED THEN INSERT (id, name) VALUES (u.id, u.name)",
            f"ALTER TABLE {t} CREATE TAG t1",
            f"ALTER TABLE {t} CREATE BRANCH audit RETAIN 7 DAYS WITH SNAPSHOT RETENTION 2 SNAPSHOTS",
            f"INSERT INTO {t}.branch_audit SELECT *, 'b' FROM (VALUES {_rows(40, 2)})",
            f"ALTER TABLE {t} SET TBLPROPERTIES ('write.delete.mode'='copy-on-write')",
            f"DELETE FROM {t} WHERE id = 4",
            f"INSERT INTO {t} SELECT *, 'y' FROM (VALUES {_rows(50, 2)})",
        ]
    )
    table = _load(warehouse, "db.v2")
    history = [e.snapshot_id for e in table.metadata.snapshot_log]
    refspark.request(
        [
            f"CALL {c}.system.rollback_to_snapshot('db.v2', {history[-2]})",
            f"INSERT INTO {t} SELECT *, 'z' FROM (VALUES {_rows(60, 1)})",
        ]
    )
    v3 = f"{c}.db.v3"
    refspark.request(
        [
            f"CREATE TABLE {v3} (id bigint NOT NULL, name string, part int) USING iceberg"
            " PARTITIONED BY (part) TBLPROPERTIES ('format-version'='3',"
            " 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')",
            f"INSERT INTO {v3} SELECT id, concat('n', id), CAST(id % 3 AS int) FROM range(0, 30)",
            f"DELETE FROM {v3} WHERE id < 4",
            f"DELETE FROM {v3} WHERE id = 10",
            f"UPDATE {v3} SET name = 'u' WHERE id = 20",
            f"INSERT INTO {v3} SELECT id, 'late', 1 FROM range(100, 103)",
        ]
    )
    nested = f"{c}.db.nested"
    refspark.request(
        [
            f"CREATE TABLE {nested} (id bigint, tags array<string>, props map<string, int>,"
            " loc struct<lat: double, lon: double>, u binary) USING iceberg"
            " TBLPROPERTIES ('format-version'='2')",
            f"INSERT INTO {nested} VALUES (1, array('a', 'b'), map('k', 1), named_struct('lat',"
            " 1.5, 'lon', 2.5), X'0102'), (2, NULL, map(), NULL, NULL)",
            f"INSERT INTO {nested} VALUES (3, array(), map('z', 9), named_struct('lat', -1.0,"
            " 'lon', double('NaN')), X'ff')",
        ]
    )
    unpart = f"{c}.db.unpart"
    refspark.request(
        [
            f"CREATE TABLE {unpart} (id bigint, name string) USING iceberg TBLPROPERTIES"
            " ('format-version'='2', 'write.delete.mode'='merge-on-read')",
            f"INSERT INTO {unpart} SELECT id, concat('n', id) FROM range(0, 10)",
            f"DELETE FROM {unpart} WHERE id IN (3, 4)",
        ]
    )
    v1 = f"{c}.db.v1"
    refspark.request(
        [
            f"CREATE TABLE {v1} (id bigint, category string, ts timestamp) USING iceberg"
            " PARTITIONED BY (category, months(ts)) TBLPROPERTIES ('format-version'='1')",
            f"INSERT INTO {v1} VALUES (1, 'a', TIMESTAMP '2024-01-05 00:00:00'),"
            " (2, 'b', TIMESTAMP '2024-02-05 00:00:00')",
            f"ALTER TABLE {v1} DROP PARTITION FIELD category",
            f"INSERT INTO {v1} VALUES (3, 'c', TIMESTAMP '2024-03-05 00:00:00')",
            f"DELETE FROM {v1} WHERE id = 1",
        ]
    )
    return warehouse, c, history


@pytest.mark.parametrize("name", ["v2", "v3", "nested", "unpart", "v1"])
def test_reference_tables_match(refspark: RefEngine, reference_tables: Any, name: str) -> None:
    warehouse, c, _ = reference_tables
    table = _load(warehouse, f"db.{name}")
    names = [n for n in ALL if not (name == "nested" and n == "position_deletes")]
    compare(refspark, table, f"{c}.db.{name}", names)


@pytest.mark.parametrize("name", ["v2", "v3", "nested", "unpart", "v1"])
def test_partitions_of_manifests_read_as_arrays_match(
    refspark: RefEngine, reference_tables: Any, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The partitions table of a huge table (its manifests decoded into arrays, as from 5,000
    entries) equals Java's too, at every snapshot of v2 (several specs, deletes)."""
    import icepark.planning.walk as walk
    from icepark.avro.compiled import kernel_available

    if not kernel_available():
        pytest.skip("numba is not importable")
    monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
    warehouse, c, history = reference_tables
    table = _load(warehouse, f"db.{name}")
    compare(refspark, table, f"{c}.db.{name}", ["partitions"])
    if name == "v2":
        for snapshot_id in history:
            compare(
                refspark, table, f"{c}.db.v2", ["partitions"], version=str(snapshot_id),
                snapshot_id=snapshot_id,
            )  # fmt: skip


def test_reference_v2_has_what_the_tables_should_show(reference_tables: Any) -> None:
    """The comparison covers what it should: deleted entries, existing entries from merged
    manifests, several specs, a rolled-back snapshot, branch and tag, NaN counts."""
    warehouse, _, _ = reference_tables
    table = _load(warehouse, "db.v2")
    entries = table.inspect.entries().to_pylist()
    assert {e["status"] for e in entries} == {0, 1, 2}
    files = table.inspect.files()
    assert set(files.column("spec_id").to_pylist()) == {0, 1}
    assert set(files.column("content").to_pylist()) == {0, 1}
    history = table.inspect.history().column("is_current_ancestor").to_pylist()
    assert False in history and True in history
    assert set(table.inspect.refs().column("name").to_pylist()) == {"main", "t1", "audit"}
    metrics = files.column("readable_metrics").to_pylist()
    assert any((m["score"]["nan_value_count"] or 0) > 0 for m in metrics)
    assert table.inspect.position_deletes().num_rows >= 3


def test_reference_time_travel(refspark: RefEngine, reference_tables: Any) -> None:
    warehouse, c, history = reference_tables
    table = _load(warehouse, "db.v2")
    travelling = ["entries", "files", "data_files", "delete_files", "manifests", "partitions"]
    travelling.append("position_deletes")
    for snapshot_id in (history[0], history[3], history[-1]):
        compare(
            refspark, table, f"{c}.db.v2", travelling, version=str(snapshot_id),
            snapshot_id=snapshot_id,
        )  # fmt: skip
    compare(refspark, table, f"{c}.db.v2", travelling, version="'t1'", ref="t1")
    # the reference fails on VERSION AS OF a branch of a partitioned table ("Cannot find
    # source column for partition field"): compare the branch with its head snapshot
    audit = table.metadata.refs["audit"].snapshot_id
    compare(refspark, table, f"{c}.db.v2", travelling, version=str(audit), ref="audit")
    # Java lists every snapshot whatever the version asked for
    compare(refspark, table, f"{c}.db.v2", ["snapshots", "history", "refs"], version="'t1'")


def test_unknown_names_and_snapshots_are_typed_errors(reference_tables: Any) -> None:
    warehouse, _, _ = reference_tables
    table = _load(warehouse, "db.v2")
    with pytest.raises(NoSuchTableError, match="'filez'"):
        table.inspect.table("filez")
    with pytest.raises(ValidationError, match="123456789"):
        table.inspect.files(snapshot_id=123456789)
    with pytest.raises(ValidationError, match="123456789"):
        table.inspect.snapshots(snapshot_id=123456789)
    with pytest.raises(ValidationError, match="'nope'"):
        table.inspect.partitions(ref="nope")
    with pytest.raises(UnsupportedOperationError, match="all_files"):
        table.inspect.all_files(snapshot_id=table.metadata.current_snapshot_id)


# -- tables icepark wrote ----------------------------------------------------------------------

ICE_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("part", pa.int32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def _ice_rows(ids: list[int], suffix: str = "") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"n{i}{suffix}" for i in ids]),
            "part": pa.array([i % 3 for i in ids], pa.int32()),
            "ts": pa.array(
                [dt.datetime(2024, 3, 1, tzinfo=dt.UTC) + dt.timedelta(hours=7 * i) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
        },
        schema=ICE_SCHEMA,
    )


@pytest.mark.parametrize("version", [2, 3])
def test_icepark_tables_match(refspark: RefEngine, tmp_path: Path, version: int) -> None:
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.ice",
        ICE_SCHEMA,
        partition_by=["part"],
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    table.append(_ice_rows(list(range(20))))
    with table.update_spec() as update:
        update.add_field("day(ts)")
    table.append(_ice_rows(list(range(20, 30))))
    table.delete("id < 3 or id = 25")
    changes = _ice_rows([5, 6, 50], "-v2").append_column("_op", pa.array(["U", "D", "I"]))
    table.apply_changes(changes, on=["id"])
    table.create_tag("snap")
    table.append(_ice_rows([70]))
    c = refspark.catalog_for(warehouse)
    compare(refspark, table, f"{c}.db.ice", ALL)
    assert table.inspect.delete_files().num_rows >= 2
    assert 2 in table.inspect.files().column("content").to_pylist()  # equality deletes
    first = table.metadata.snapshot_log[0].snapshot_id
    travelling = ["files", "entries", "manifests", "partitions", "position_deletes"]
    compare(refspark, table, f"{c}.db.ice", travelling, version=str(first), snapshot_id=first)
    compare(refspark, table, f"{c}.db.ice", travelling, version="'snap'", ref="snap")
