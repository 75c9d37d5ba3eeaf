"""icepark.spark.read: planning in icepark, native Parquet reads by field id, the python path."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.manifest import DataFile
from icepark.spark import choose_path, read
from icepark.spec.manifests import FileContent, FileFormat
from icepark.spec.types import LongType
from icepark.spec.updates import AddSchemaUpdate, SetCurrentSchemaUpdate

pytestmark = pytest.mark.spark

UTC = dt.UTC


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _arrow_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def _events(n: int = 40) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "qty": pa.array([i % 7 for i in range(n)], pa.int32()),
            "cat": pa.array([None if i % 10 == 9 else f"c{i % 3}" for i in range(n)]),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=5 * i) for i in range(n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "tags": pa.array([[f"t{i}", "x"] if i % 2 else [] for i in range(n)]),
            "attrs": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
            "pt": pa.array(
                [{"x": float(i), "y": None} for i in range(n)],
                pa.struct([("x", pa.float64()), ("y", pa.float64())]),
            ),
        }
    )


@pytest.fixture
def events(catalog: Any) -> Any:
    table = catalog.create_table("db.events", _events().schema, partition_by=["day(ts)", "cat"])
    table.append(_events())
    return table


def test_native_read_matches_icepark_scan(spark: Any, events: Any) -> None:
    scan = events.scan()
    assert choose_path(scan, scan.plan_files())[0] == "native"
    df = read(spark, events)
    assert df.columns == ["id", "qty", "cat", "ts", "tags", "attrs", "pt"]
    expected = scan.to_arrow()
    got = [(r.id, r.qty, r.cat, r.ts, r.tags, r.attrs, r.pt.asDict()) for r in df.collect()]
    want = [
        (
            r["id"],
            r["qty"],
            r["cat"],
            r["ts"].replace(tzinfo=None),
            r["tags"],
            dict(r["attrs"]),
            r["pt"],
        )
        for r in expected.to_pylist()
    ]
    assert sorted(got, key=repr) == sorted(want, key=repr)


def test_filters_columns_and_metadata_columns(spark: Any, events: Any) -> None:
    flt = "ts >= '2024-01-03T00:00:00+00:00' and qty < 4 and cat in ('c0', 'c2')"
    cols = ["id", "cat", "_file", "_pos", "_spec_id", "_partition"]
    table = events.scan(filter=flt, columns=cols).to_arrow()
    want = sorted(
        (
            (
                r["id"],
                r["cat"],
                r["_file"],
                r["_pos"],
                r["_spec_id"],
                tuple(r["_partition"].values()),
            )
            for r in table.to_pylist()
        ),
        key=repr,
    )
    assert want
    for path in ("native", "python"):
        df = read(spark, events, filter=flt, columns=cols, path=path)
        got = [
            (r.id, r.cat, r._file, r._pos, r._spec_id, tuple(r._partition)) for r in df.collect()
        ]
        assert sorted(got, key=repr) == want, path


def test_schema_evolution_by_field_id(spark: Any, events: Any) -> None:
    schema = events.schema()
    # rename qty -> quantity, promote it to long, add a column: old files read by field id
    from icepark.spec.schema import Schema
    from icepark.spec.types import NestedField

    fields = []
    for f in schema.fields:
        if f.name == "qty":
            fields.append(NestedField(f.field_id, "quantity", LongType(), f.required))
        else:
            fields.append(f)
    fields.append(NestedField(schema.highest_field_id + 1, "note", pa_string_type(), False))
    new = Schema(*fields, schema_id=1)
    events.commit([], [AddSchemaUpdate(new), SetCurrentSchemaUpdate(-1)])
    df = read(spark, events, columns=["id", "quantity", "note"], filter="quantity = 3")
    rows = _rows(df)
    assert rows == sorted([(i, 3, None) for i in range(40) if i % 7 == 3], key=repr)
    assert dict(df.dtypes)["quantity"] == "bigint"


def pa_string_type() -> Any:
    from icepark.spec.types import StringType

    return StringType()


def test_identity_constants_for_files_without_the_column(
    spark: Any, catalog: Any, tmp_path: Any
) -> None:
    schema = pa.schema([("id", pa.int64()), ("region", pa.string())])
    table = catalog.create_table("db.imported", schema, partition_by=["region"])
    table.append(pa.table({"id": [1, 2], "region": ["eu", "eu"]}, schema=schema))
    # a file holding only `id` (as imported Hive-style partitions are), partition region=us
    path = f"{table.location}/data/region=us/imported-{uuid.uuid4()}.parquet"
    data = pa.table({"id": pa.array([10, 11], pa.int64())}).cast(
        pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    )
    with table.io.new_output(path).create() as out:
        pq.write_table(data, out)
    f = DataFile(
        FileContent.DATA,
        path,
        FileFormat.PARQUET,
        ("us",),
        2,
        table.io.new_input(path).length(),
        value_counts={1: 2},
        spec_id=0,
    )
    with table.transaction() as tx:
        tx.append_files([f])
    df = read(spark, table, columns=["id", "region"])
    assert _rows(df) == sorted([(1, "eu"), (2, "eu"), (10, "us"), (11, "us")], key=repr)
    assert _rows(read(spark, table, filter="region = 'us'", columns=["id"])) == [(10,), (11,)]
    assert _rows(read(spark, table, columns=["id", "region"], path="python")) == _rows(df)


def test_time_travel_and_empty(spark: Any, events: Any, catalog: Any) -> None:
    first = events.current_snapshot().snapshot_id
    events.append(_events(3))
    assert read(spark, events).count() == 43
    assert read(spark, events, snapshot_id=first).count() == 40
    assert read(spark, events, filter="id > 1000").count() == 0
    empty = catalog.create_table("db.empty", _events().schema)
    assert read(spark, empty).collect() == []
    assert read(spark, "db.events", catalog=catalog).count() == 43


@pytest.mark.parametrize("version", [2, 3])
def test_position_deletes_read_natively(spark: Any, catalog: Any, version: int) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    props = {"write.delete.mode": "merge-on-read", "format-version": str(version)}
    table = catalog.create_table("db.deletes", schema, partition_by=["name"], properties=props)
    table.append(pa.table({"id": list(range(20)), "name": [f"n{i % 2}" for i in range(20)]}))
    table.delete("id < 6")
    table.delete("id = 9")  # a second delete on the same files
    scan = table.scan(filter="id < 15")
    tasks = scan.plan_files()
    assert any(t.delete_files for t in tasks)
    assert choose_path(scan, tasks)[0] == "native"
    got = sorted(r.id for r in read(spark, table, filter="id < 15").collect())
    assert got == [i for i in range(6, 15) if i != 9]
    columns = ["id", "name", "_file", "_pos"]
    native = read(spark, table, columns=columns, path="native")
    assert _rows(native) == _rows(read(spark, table, columns=columns, path="python"))


def test_position_deletes_join_on_path_when_keys_may_collide(
    spark: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icepark.spark.read import positions

    monkeypatch.setattr(positions, "bitmap_filter", lambda deleted, sizes: None)
    monkeypatch.setattr(positions, "_blocks_differ", lambda hashes, bits: False)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    props = {"write.delete.mode": "merge-on-read", "format-version": "3"}
    table = catalog.create_table("db.collide", schema, partition_by=["name"], properties=props)
    table.append(pa.table({"id": list(range(20)), "name": [f"n{i % 2}" for i in range(20)]}))
    table.delete("id < 6 or id = 9")
    got = sorted(r.id for r in read(spark, table, path="native").collect())
    assert got == [i for i in range(6, 20) if i != 9]


def test_equality_deletes_use_the_python_path(spark: Any, catalog: Any) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    table = catalog.create_table("db.eq", schema, properties={"format-version": "2"})
    table.append(pa.table({"id": list(range(10)), "name": ["a"] * 10}, schema=schema))
    changes = pa.table({"id": [3, 4], "name": ["a", "a"], "_op": ["D", "D"]})
    table.apply_changes(changes, on=["id"])
    scan = table.scan()
    assert choose_path(scan, scan.plan_files())[0] == "python"
    assert sorted(r.id for r in read(spark, table).collect()) == [0, 1, 2, 5, 6, 7, 8, 9]
