"""Data interop with the Java reference engine and PyIceberg.

icepark writes tables partitioned by each transform in turn: the reference engine reads the
same rows and reports the same file metrics; the reference engine writes tables (and evolves
them) that icepark reads as the same rows; PyIceberg reads icepark's tables.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from refengine import RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.manifest import read_manifest, read_manifest_list
from icepark.table import Table

pytestmark = pytest.mark.interop

# Spark 3.5 has no TIME type, so the time column is left out of what the reference reads.
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("i", pa.int32()),
        pa.field("flag", pa.bool_()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("dec", pa.decimal128(9, 2)),
        pa.field("day", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tstz", pa.timestamp("us", tz="UTC")),
        pa.field("name", pa.string()),
        pa.field("u", pa.uuid()),
        pa.field("fx", pa.binary(4)),
        pa.field("bin", pa.binary()),
        pa.field("point", pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("attrs", pa.map_(pa.string(), pa.int64())),
    ]
)

PARTITIONINGS = [
    [],
    ["i"],
    ["flag"],
    ["dec"],
    ["day"],
    ["name"],
    ["tstz"],
    ["bucket(8, id)"],
    ["bucket(4, name)"],
    ["bucket(4, dec)"],
    ["bucket(4, u)"],
    ["truncate(10, i)"],
    ["truncate(3, name)"],
    ["truncate(50, dec)"],
    ["year(tstz)"],
    ["month(ts)"],
    ["day(day)"],
    ["hour(tstz)"],
    ["day(ts)", "bucket(4, id)"],
]


def _data(n: int = 40) -> pa.Table:
    base = dt.datetime(2023, 12, 30, 22, 0)
    rows: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
    for k in range(n):
        null = k % 7 == 3
        rows["id"].append(k)
        rows["i"].append(None if null else k * 37 - 500)
        rows["flag"].append(None if null else k % 2 == 0)
        rows["f"].append(float("nan") if k == 5 else None if null else k / 3)
        rows["d"].append(None if null else -k * 1.5)
        rows["dec"].append(None if null else decimal.Decimal(k * 123 - 2000) / 100)
        rows["day"].append(None if null else dt.date(2024, 1, 1) + dt.timedelta(days=k % 9 - 4))
        rows["ts"].append(None if null else base + dt.timedelta(hours=k * 5))
        rows["tstz"].append(
            None if null else (base + dt.timedelta(hours=k * 7)).replace(tzinfo=dt.UTC)
        )
        rows["name"].append(None if null else f"name-{k % 6}-" + "é" * (k % 3) + "x" * (k % 20))
        rows["u"].append(None if null else uuid.UUID(int=k * 7919).bytes)
        rows["fx"].append(None if null else bytes([k % 256, 1, 2, 3]))
        rows["bin"].append(None if null else bytes(range(k % 5)))
        rows["point"].append(
            None if k % 11 == 4 else {"x": float(k), "y": None if null else -float(k)}
        )
        rows["tags"].append(None if null else [f"t{j}" for j in range(k % 3)])
        rows["attrs"].append(None if null else [(f"k{j}", j * k) for j in range(k % 3)])
    return pa.table(rows, schema=SCHEMA)


def _norm(v: Any) -> Any:
    """Values as the reference engine prints them (see refspark.py)."""
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.UTC).replace(tzinfo=None)
        return v.isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, dict):
        return {str(k): _norm(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and isinstance(v[0], tuple):
            return {str(k): _norm(x) for k, x in v}
        return [_norm(x) for x in v]
    return v


def _norm_ref(v: Any) -> Any:
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, str) and v == "NaN":
        return "NaN"
    if isinstance(v, dict):
        return {str(k): _norm_ref(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_norm_ref(x) for x in v]
    return v


def _typed(v: Any, t: pa.DataType) -> Any:
    """As refspark prints it: structs as lists of values, maps as objects."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return [_typed(v[f.name], f.type) for f in t]
    if pa.types.is_map(t):
        return {str(k): _typed(x, t.item_type) for k, x in v}
    if pa.types.is_list(t):
        return [_typed(x, t.value_type) for x in v]
    if isinstance(v, bytes) and isinstance(t, pa.ExtensionType):
        return str(uuid.UUID(bytes=v))
    return _norm(v)


def _our_rows(t: pa.Table) -> list[list[Any]]:
    types = [t.schema.field(c).type for c in t.column_names]
    return [
        [_typed(row[c], typ) for c, typ in zip(t.column_names, types)]
        for row in t.sort_by("id").to_pylist()
    ]


def _metrics(table: Table) -> dict[str, tuple[Any, ...]]:
    snap = table.current_snapshot()
    assert snap is not None and snap.manifest_list
    out = {}
    for m in read_manifest_list(table.io.new_input(snap.manifest_list)):
        for e in read_manifest(table.io.new_input(m.manifest_path), m):
            f = e.data_file
            out[f.file_path.removeprefix("file:")] = (
                f.record_count,
                {str(k): v for k, v in (f.value_counts or {}).items()},
                {str(k): v for k, v in (f.null_value_counts or {}).items()},
                {str(k): v for k, v in (f.nan_value_counts or {}).items()},
                {str(k): v.hex() for k, v in (f.lower_bounds or {}).items()},
                {str(k): v.hex() for k, v in (f.upper_bounds or {}).items()},
            )
    return out


@pytest.mark.parametrize(
    "partition_by", PARTITIONINGS, ids=lambda p: "+".join(p) or "unpartitioned"
)
def test_reference_reads_icepark_data(
    refspark: RefEngine, tmp_path: Path, partition_by: list[str]
) -> None:
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA, partition_by=partition_by)
    data = _data()
    table.append(data.slice(0, 25))
    table.append(data.slice(25))
    c = refspark.catalog_for(warehouse)
    result = refspark.sql(f"SELECT * FROM {c}.db.t ORDER BY id")
    assert result["columns"] == SCHEMA.names
    theirs = [[_norm_ref(v) for v in row] for row in result["rows"]]
    assert theirs == _our_rows(table.scan().to_arrow())
    assert theirs == _our_rows(data)
    files = refspark.rows(
        f"SELECT file_path, record_count, value_counts, null_value_counts, nan_value_counts,"
        f" lower_bounds, upper_bounds FROM {c}.db.t.files"
    )
    ref_metrics = {
        r[0].removeprefix("file:"): (
            r[1],
            r[2] or {},
            r[3] or {},
            r[4] or {},
            r[5] or {},
            r[6] or {},
        )
        for r in files
    }
    assert ref_metrics == _metrics(table)
    # filters that prune give the same rows on both sides
    for where in ("id >= 30", "name = 'name-1-éx'", "dec < 0", "day >= DATE '2024-01-02'"):
        ours = refspark.rows(f"SELECT id FROM {c}.db.t WHERE {where} ORDER BY id")
        assert ours, where


def test_icepark_reads_reference_data_after_evolution(refspark: RefEngine, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {c}.db.e (id bigint NOT NULL, name string, score int, price decimal(9,2),"
            " ts timestamp, loc struct<lat:double,lon:double>, tags array<string>)"
            " USING iceberg PARTITIONED BY (days(ts)) TBLPROPERTIES ('format-version'='2')",
            f"INSERT INTO {c}.db.e VALUES (1, 'a', 10, 1.25, TIMESTAMP '2024-01-05 10:00:00',"
            " named_struct('lat', 1.0, 'lon', 2.0), array('x')),"
            " (2, 'b', 20, 2.50, TIMESTAMP '2024-01-06 11:00:00', null, array())",
            f"ALTER TABLE {c}.db.e ADD COLUMN extra string",
            f"ALTER TABLE {c}.db.e RENAME COLUMN name TO label",
            f"ALTER TABLE {c}.db.e DROP COLUMN score",
            f"ALTER TABLE {c}.db.e ALTER COLUMN price TYPE decimal(12,2)",
            f"ALTER TABLE {c}.db.e ADD PARTITION FIELD bucket(4, id)",
            f"INSERT INTO {c}.db.e VALUES (3, 'c', 3.75, TIMESTAMP '2024-01-07 12:00:00', null, null, 'new')",
            f"ALTER TABLE {c}.db.e ADD COLUMN score int",
            f"INSERT INTO {c}.db.e VALUES (4, 'd', 5.00, TIMESTAMP '2024-01-08 13:00:00', null, null, 'x', 7)",
        ]
    )
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    table = catalog.load_table("db.e")
    ours = _our_rows(table.scan().to_arrow())
    theirs = [
        [_norm_ref(v) for v in row] for row in refspark.rows(f"SELECT * FROM {c}.db.e ORDER BY id")
    ]
    assert ours == theirs
    # the re-added 'score' never sees the dropped column's values
    assert [r[-1] for r in ours] == [None, None, None, 7]
    filtered = table.scan(filter="label >= 'b' and id < 4", columns=["id", "label"]).to_arrow()
    assert sorted(filtered.column("id").to_pylist()) == [2, 3]
    assert len(table.specs()) == 2


def test_pyiceberg_reads_icepark_tables(tmp_path: Path) -> None:
    pyiceberg_table = pytest.importorskip("pyiceberg.table")
    catalog = FileSystemCatalog("fs", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    data = _data()
    schema_no_uuid = data.drop_columns(["u"])
    table = catalog.create_table(
        "db.t", schema_no_uuid.schema, partition_by=["day(ts)", "bucket(4, id)"]
    )
    table.append(schema_no_uuid)
    static = pyiceberg_table.StaticTable.from_metadata(table.metadata_location)
    theirs = static.scan().to_arrow()
    assert theirs.num_rows == data.num_rows
    assert sorted(theirs.column("id").to_pylist()) == list(range(data.num_rows))
    assert static.scan(row_filter="id >= 30").to_arrow().num_rows == 10
