"""Schema, partition and sort order evolution against the Java reference engine.

icepark evolves a table step by step with an append after each step; the reference engine
reads every snapshot (time travel, with the snapshot's schema) and the current table as the
same rows. Then the reference engine does the same kind of sequence through ALTER TABLE and
icepark reads each snapshot as the same rows.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from refengine import RefEngine

from icepark.arrow.schema import schema_to_arrow
from icepark.catalog import FileSystemCatalog
from icepark.table import Table

pytestmark = pytest.mark.interop

BASE = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("score", pa.int32()),
        pa.field("qty", pa.int32()),
        pa.field("price", pa.decimal128(9, 2)),
        pa.field("ts", pa.timestamp("us")),
        pa.field("loc", pa.struct([pa.field("lat", pa.float64()), pa.field("lon", pa.float64())])),
    ]
)


def _value(t: pa.DataType, k: int) -> Any:
    if k % 5 == 4 and not pa.types.is_struct(t):
        return None
    if pa.types.is_integer(t):
        return k * 3
    if pa.types.is_floating(t):
        return k / 4
    if pa.types.is_decimal(t):
        return decimal.Decimal(k * 125) / 100
    if pa.types.is_timestamp(t):
        return dt.datetime(2024, 1, 1) + dt.timedelta(hours=k * 13)
    if pa.types.is_string(t):
        return f"s{k % 7}"
    if pa.types.is_struct(t):
        return {f.name: _value(f.type, k + 1) for f in t}
    raise AssertionError(f"no test value for {t}")


def _rows_for(table: Table, ids: range) -> pa.Table:
    schema = schema_to_arrow(table.schema())
    cols = {
        f.name: pa.array([k if f.name == "id" else _value(f.type, k) for k in ids], f.type)
        for f in schema
    }
    return pa.table(cols, schema=schema)


def _norm(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:  # refspark prints timestamptz as naive UTC
            v = v.astimezone(dt.UTC).replace(tzinfo=None)
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dict):
        return [_norm(x) for x in v.values()]  # refspark prints structs as lists
    return v


def _ours(t: pa.Table) -> list[list[Any]]:
    return [[_norm(row[c]) for c in t.column_names] for row in t.sort_by("id").to_pylist()]


def _theirs(result: dict[str, Any]) -> list[list[Any]]:
    return sorted(result["rows"], key=lambda r: r[result["columns"].index("id")])


STEPS: list[Callable[[Table], object]] = [
    lambda t: t.update_schema().add_column("extra", "string").commit(),
    lambda t: t.update_schema().rename_column("name", "label").commit(),
    lambda t: t.update_schema().delete_column("score").commit(),
    lambda t: t.update_schema().move_after("extra", "id").commit(),
    lambda t: (
        t.update_schema()
        .update_column("qty", "long")
        .update_column("price", "decimal(12,2)")
        .commit()
    ),
    lambda t: t.update_schema().add_column("loc.alt", "double").commit(),
    lambda t: t.update_spec().add_field("bucket(4, id)").commit(),
    lambda t: t.update_spec().remove_field("ts_day").add_field("label", "truncate[2]").commit(),
    lambda t: t.replace_sort_order("id desc"),
    lambda t: t.update_schema().add_column("score", "int", first=True).commit(),
]


def test_reference_reads_icepark_evolution(refspark: RefEngine, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", BASE, partition_by=["day(ts)"])
    table.append(_rows_for(table, range(0, 6)))
    for i, step in enumerate(STEPS, start=1):
        step(table)
        table.append(_rows_for(table, range(i * 6, i * 6 + 6)))
    assert [f.name for f in table.schema().fields] == [
        "score",
        "id",
        "extra",
        "label",
        "qty",
        "price",
        "ts",
        "loc",
    ]
    assert len(table.specs()) == 3 and table.sort_order().order_id == 1
    c = refspark.catalog_for(warehouse)
    snapshots = [s.snapshot_id for s in table.snapshots()]
    statements = [f"SELECT * FROM {c}.db.t VERSION AS OF {sid}" for sid in snapshots]
    results = refspark.request([*statements, f"SELECT * FROM {c}.db.t"])
    for sid, result in zip(snapshots, results):
        ours = table.scan(snapshot_id=sid).to_arrow()
        assert result["columns"] == ours.column_names, sid
        assert _theirs(result) == _ours(ours), sid
    current = table.scan().to_arrow()
    assert results[-1]["columns"] == current.column_names
    theirs = _theirs(results[-1])
    assert theirs == _ours(current)
    # the re-added score (first column) never sees the dropped score's values
    assert [r[0] for r in theirs[:-6]] == [None] * (len(theirs) - 6)


def test_icepark_reads_reference_evolution(refspark: RefEngine, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    t = f"{c}.db.e"

    statements = [
        f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
        f"CREATE TABLE {t} (id bigint NOT NULL, name string, score int, qty int,"
        " loc struct<lat:double,lon:double>, ts timestamp)"
        " USING iceberg PARTITIONED BY (days(ts)) TBLPROPERTIES ('format-version'='2')",
        f"INSERT INTO {t} VALUES (1, 'a', 10, 1, named_struct('lat', 1.0, 'lon', 2.0),"
        " TIMESTAMP '2024-01-05 10:00:00'), (2, 'b', 20, 2, null, TIMESTAMP '2024-01-06 10:00:00')",
        f"ALTER TABLE {t} ADD COLUMNS (extra string, n2 double)",
        f"INSERT INTO {t} VALUES (3, 'c', 30, 3, null, TIMESTAMP '2024-01-07 10:00:00', 'x', 1.5)",
        f"ALTER TABLE {t} RENAME COLUMN name TO label",
        f"ALTER TABLE {t} DROP COLUMN score",
        f"INSERT INTO {t} VALUES (4, 'd', 4, null, TIMESTAMP '2024-01-08 10:00:00', 'y', 2.5)",
        f"ALTER TABLE {t} ALTER COLUMN qty TYPE bigint",
        f"ALTER TABLE {t} ALTER COLUMN extra FIRST",
        f"ALTER TABLE {t} ALTER COLUMN n2 AFTER id",
        f"INSERT INTO {t} VALUES ('z', 5, 3.5, 'e', 5000000000, null,"
        " TIMESTAMP '2024-01-09 10:00:00')",
        f"ALTER TABLE {t} ADD COLUMN loc.alt double",
        f"ALTER TABLE {t} ADD PARTITION FIELD bucket(4, id)",
        f"INSERT INTO {t} VALUES (null, 6, null, 'f', 6, named_struct('lat', 6.0, 'lon', 7.0,"
        " 'alt', 8.0), TIMESTAMP '2024-01-10 10:00:00')",
        f"ALTER TABLE {t} DROP PARTITION FIELD days(ts)",
        f"ALTER TABLE {t} WRITE ORDERED BY id DESC",
        f"ALTER TABLE {t} ADD COLUMN score int",
        f"INSERT INTO {t} VALUES ('w', 7, 7.5, 'g', 7, null, TIMESTAMP '2024-01-11 10:00:00', 70),"
        " ('v', 8, 8.5, 'h', 8, null, TIMESTAMP '2024-01-12 10:00:00', null)",
    ]
    refspark.request(statements)
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    table = catalog.load_table("db.e")
    assert len(table.specs()) == 3 and not table.sort_order().is_unsorted
    snapshots = [s.snapshot_id for s in table.snapshots()]
    assert len(snapshots) == 6
    results = refspark.request(
        [*(f"SELECT * FROM {t} VERSION AS OF {sid}" for sid in snapshots), f"SELECT * FROM {t}"]
    )
    for sid, result in zip(snapshots, results):
        ours = table.scan(snapshot_id=sid).to_arrow()
        assert result["columns"] == ours.column_names, sid
        assert _theirs(result) == _ours(ours), sid
    current = table.scan().to_arrow()
    assert results[-1]["columns"] == current.column_names
    assert _theirs(results[-1]) == _ours(current)
    assert current.sort_by("id").column("score").to_pylist() == [None] * 6 + [70, None]
    # and icepark keeps evolving the reference engine's table, which still reads it
    with table.update_schema() as u:
        u.rename_column("label", "name")
    table.append(pa.table({"id": pa.array([9], pa.int64())}))
    _, after = refspark.request([f"REFRESH TABLE {t}", f"SELECT id, name FROM {t} ORDER BY id"])
    assert [r[0] for r in after["rows"]] == list(range(1, 10))
