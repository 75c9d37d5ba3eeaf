"""Metadata tables on Spark, judged by the reference engine: ``icepark.spark.read(spark,
"db.t.<name>")`` and ``spark.read.format("icepark").option("table", "db.t.<name>")`` give
the rows of ``SELECT * FROM t.<name>`` in the reference engine, with its column names and
Spark types (its ``DESCRIBE``), for all sixteen tables, with time travel where Java allows
it; a table whose name ends like a metadata table is read as itself; bad names and
snapshots are typed errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from inspect_compare import spark_json, theirs
from refengine import RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.errors import NoSuchTableError, UnsupportedOperationError, ValidationError
from icepark.spark import read
from icepark.table.inspect import METADATA_TABLES

pytestmark = pytest.mark.interop


def _key(row: list[Any]) -> str:
    import json

    return json.dumps(row, sort_keys=True, default=str)


def _rows(df: Any, types: list[pa.DataType]) -> list[str]:
    return sorted(
        _key([theirs(spark_json(v), t) for v, t in zip(row, types)]) for row in df.collect()
    )


def _reference_rows(result: dict[str, Any], types: list[pa.DataType]) -> list[str]:
    return sorted(_key([theirs(v, t) for v, t in zip(row, types)]) for row in result["rows"])


@pytest.fixture(scope="module")
def warehouse(refspark: RefEngine, tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("spark-inspect") / "wh"
    c = refspark.catalog_for(wh)
    t = f"{c}.db.t"
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {t} (id bigint NOT NULL, ts timestamp, name string,"
            " amount decimal(10,2)) USING iceberg PARTITIONED BY (days(ts)) TBLPROPERTIES"
            " ('format-version'='2', 'write.delete.mode'='merge-on-read',"
            " 'write.update.mode'='merge-on-read')",
            f"INSERT INTO {t} SELECT id, TIMESTAMP '2024-01-01 00:00:00' +"
            " make_interval(0,0,0,0,CAST(id AS INT),0,0), concat('n', id), id / 4 FROM range(0, 40)",
            f"ALTER TABLE {t} ADD PARTITION FIELD bucket(2, id)",
            f"INSERT INTO {t} VALUES (100, TIMESTAMP '2024-01-01 03:00:00', 'late', 1.5)",
            f"DELETE FROM {t} WHERE id % 7 = 3",
            f"UPDATE {t} SET name = 'u' WHERE id = 10",
            f"ALTER TABLE {t} CREATE TAG t1",
            f"INSERT INTO {t} VALUES (101, TIMESTAMP '2024-01-05 03:00:00', 'later', 2.5)",
        ]
    )
    return wh


def _catalog(warehouse: Path) -> dict[str, str]:
    return {"type": "filesystem", "warehouse": str(warehouse)}


def test_read_gives_the_reference_rows_and_types(
    spark: Any, refspark: RefEngine, warehouse: Path
) -> None:
    c = refspark.catalog_for(warehouse)
    names = list(METADATA_TABLES)
    selects = refspark.request([f"SELECT * FROM {c}.db.t.{n}" for n in names])
    describes = refspark.request([f"DESCRIBE {c}.db.t.{n}" for n in names])
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.t")
    for name, result, described in zip(names, selects, describes):
        df = read(spark, f"db.t.{name}", catalog=_catalog(warehouse))
        assert df.columns == result["columns"], name
        spark_types = [f.dataType.simpleString() for f in df.schema.fields]
        # DESCRIBE may add a "# Partitioning" section after the columns
        columns = [r for r in described["rows"][: len(df.columns)]]
        assert spark_types == [r[1] for r in columns], name
        types = [f.type for f in table.inspect.table(name).schema]
        assert _rows(df, types) == _reference_rows(result, types), name


def test_data_source_gives_the_reference_rows(
    spark: Any, refspark: RefEngine, warehouse: Path
) -> None:
    c = refspark.catalog_for(warehouse)
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.t")
    tag = table.metadata.refs["t1"].snapshot_id
    cases = [
        ("snapshots", {}, ""),
        ("files", {}, ""),
        ("entries", {"snapshot-id": str(tag)}, f" VERSION AS OF {tag}"),
        ("partitions", {"tag": "t1"}, " VERSION AS OF 't1'"),
        ("manifests", {"branch": "main"}, ""),
        ("position_deletes", {}, ""),
        ("all_manifests", {}, ""),
    ]
    for name, options, version in cases:
        df = (
            spark.read.format("icepark")
            .option("table", f"db.t.{name}")
            .options(**_catalog(warehouse), **options)
            .load()
        )
        result = refspark.sql(f"SELECT * FROM {c}.db.t.{name}{version}")
        types = [f.type for f in table.inspect.table(name).schema]
        assert df.columns == result["columns"], name
        assert _rows(df, types) == _reference_rows(result, types), name
    # a view over a metadata table, queried with SQL
    df = spark.read.format("icepark").option("table", "db.t.history")
    df.options(**_catalog(warehouse)).load().createOrReplaceTempView("t_history")
    count = spark.sql("SELECT count(*) FROM t_history WHERE is_current_ancestor").collect()[0][0]
    assert count == len(table.metadata.snapshot_log)


def test_filters_columns_and_time_travel(spark: Any, warehouse: Path) -> None:
    catalog = _catalog(warehouse)
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.t")
    first = table.metadata.snapshot_log[0].snapshot_id
    df = read(spark, "db.t.files", filter="content = 0 and record_count > 1", catalog=catalog)
    expected = [
        r["file_path"]
        for r in table.inspect.files().to_pylist()
        if r["content"] == 0 and r["record_count"] > 1
    ]
    assert sorted(r.file_path for r in df.collect()) == sorted(expected)
    old = read(spark, "db.t.data_files", columns=["file_path"], snapshot_id=first, catalog=catalog)
    assert old.columns == ["file_path"]
    assert sorted(r[0] for r in old.collect()) == sorted(
        table.inspect.data_files(snapshot_id=first).column("file_path").to_pylist()
    )


def test_bad_names_and_snapshots(spark: Any, warehouse: Path) -> None:
    catalog = _catalog(warehouse)
    with pytest.raises(NoSuchTableError, match=r"db\.t\.filez"):
        read(spark, "db.t.filez", catalog=catalog)
    with pytest.raises(NoSuchTableError, match=r"db\.nope"):
        read(spark, "db.nope.files", catalog=catalog)
    with pytest.raises(ValidationError, match="424242"):
        read(spark, "db.t.files", snapshot_id=424242, catalog=catalog)
    with pytest.raises(UnsupportedOperationError, match="all_files"):
        read(spark, "db.t.all_files", snapshot_id=424242, catalog=catalog)
    with pytest.raises(Exception, match="all_entries"):
        (
            spark.read.format("icepark")
            .option("table", "db.t.all_entries")
            .option("snapshot-id", "1")
            .options(**catalog)
            .load()
            .collect()
        )


def test_a_table_named_like_a_metadata_table_is_read_as_itself(spark: Any, tmp_path: Path) -> None:
    from icepark.catalog import load_catalog

    options = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": str(tmp_path / "wh")}
    catalog = load_catalog("named_like", **options)  # a SQL catalog: namespaces nest freely
    catalog.create_namespace("db")
    catalog.create_namespace(("db", "t"))
    schema = pa.schema([pa.field("x", pa.int64())])
    catalog.create_table("db.t", schema).append(pa.table({"x": [1, 2]}, schema=schema))
    catalog.create_table("db.t.files", schema).append(pa.table({"x": [7]}, schema=schema))
    assert [r.x for r in read(spark, "db.t.files", catalog=catalog).collect()] == [7]
    snapshots = read(spark, "db.t.snapshots", catalog=catalog)
    assert snapshots.count() == 1 and "snapshot_id" in snapshots.columns


def test_the_data_source_task_reads_files_and_entries_a_part_at_a_time(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The data source's task streams the files and entries tables (a part of the manifests
    per batch) instead of building the whole table first: the same files as ``inspect``, in
    more than one batch, with the whole-table builder out of reach."""
    import importlib

    import icepark.planning.walk as walk

    mt = importlib.import_module("icepark.spark.read.metadata_tables")
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table("db.t")
    tag = table.metadata.refs["t1"].snapshot_id

    def paths(rows: pa.Table) -> list[str]:
        if "data_file" in rows.column_names:
            return sorted(f["file_path"] for f in rows.column("data_file").to_pylist())
        return sorted(rows.column("file_path").to_pylist())

    expected = {
        "files": paths(table.inspect.files()),
        "entries": paths(table.inspect.entries(tag)),
        "all_data_files": paths(table.inspect.all_data_files()),
    }

    def whole(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the whole table was built")

    monkeypatch.setattr(mt, "metadata_table", whole)
    monkeypatch.setattr(walk, "ENTRIES_PER_PART", 1)  # a manifest per part
    for name, wanted in expected.items():
        options = {"table": f"db.t.{name}", **_catalog(warehouse)}
        if name == "entries":
            options["snapshot-id"] = str(tag)
        reader = mt.MetadataTableReader(options, mt.metadata_spark_schema(table, name))
        (part,) = reader.partitions()
        batches = list(reader.read(part))
        assert len(batches) > 1, name
        assert paths(pa.Table.from_batches(batches)) == wanted != [], name
