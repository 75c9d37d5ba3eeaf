"""Interop with the Java reference engine: table metadata, manifest lists and manifests.

icepark creates tables in a file-system warehouse that the reference engine opens as its
Hadoop catalog ``ref``; the reference engine creates and fills tables that icepark loads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from refengine import RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.manifest import ManifestEntryStatus, read_manifest, read_manifest_list
from icepark.spec.metadata import table_metadata_from_json
from icepark.spec.updates import SetPropertiesUpdate

pytestmark = pytest.mark.interop

# Spark 3.5 has no TIME type, so the time column is left out here.
ALL_TYPES = pa.schema(
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

# Spark SQL's names for each icepark partition term, as DESCRIBE prints them.
PARTITIONINGS = {
    "identity": (["name"], "name"),
    "bucket": (["bucket(16, id)"], "bucket(16, id)"),
    "truncate": (["truncate(4, name)"], "truncate(4, name)"),
    "year": (["year(tstz)"], "years(tstz)"),
    "month": (["month(ts)"], "months(ts)"),
    "day": (["day(day)"], "days(day)"),
    "hour": (["hour(tstz)"], "hours(tstz)"),
}


def _describe(ref: RefEngine, warehouse: Path, table: str) -> tuple[dict[str, str], list[str]]:
    rows = ref.rows(f"DESCRIBE TABLE {ref.catalog_for(warehouse)}.{table}")
    columns: dict[str, str] = {}
    partitions: list[str] = []
    section = "columns"
    for name, dtype, _ in rows:
        if name.startswith("#"):
            if name != "# col_name":
                section = "partitions" if "Partition" in name else "other"
            continue
        if not name:
            continue
        if section == "columns":
            columns[name] = dtype
        elif section == "partitions":
            term = dtype if name.startswith("Part ") else name
            if term not in partitions:
                partitions.append(term)
    return columns, partitions


@pytest.mark.parametrize("version", [1, 2, 3])
def test_reference_loads_icepark_tables(refspark: RefEngine, tmp_path: Path, version: int) -> None:
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    for kind, (terms, _) in PARTITIONINGS.items():
        catalog.create_table(
            f"db.{kind}",
            ALL_TYPES,
            partition_by=terms,
            sort_by=["id", "ts desc nulls last"],
            properties={"format-version": str(version), "team": "icepark"},
        )
    c = refspark.catalog_for(warehouse)
    for kind, (_, spark_term) in PARTITIONINGS.items():
        columns, partitions = _describe(refspark, warehouse, f"db.{kind}")
        assert list(columns) == [f.name for f in ALL_TYPES]
        assert columns["dec"] == "decimal(9,2)"
        assert columns["ts"] == "timestamp_ntz" and columns["tstz"] == "timestamp"
        assert columns["point"] == "struct<x:double,y:double>"
        assert columns["attrs"] == "map<string,bigint>"
        assert partitions == [spark_term]
        props = dict(refspark.rows(f"SHOW TBLPROPERTIES {c}.db.{kind}"))
        assert props["team"] == "icepark"
        assert props["format-version"] == str(version)
        assert props["sort-order"] == "id ASC NULLS FIRST, ts DESC NULLS LAST"
        assert refspark.rows(f"SELECT count(*) FROM {c}.db.{kind}") == [[0]]


def test_reference_commits_on_icepark_metadata(refspark: RefEngine, tmp_path: Path) -> None:
    """Java reads icepark's metadata, commits on top of it, and keeps every field as it was."""
    warehouse = tmp_path / "wh"
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("name", pa.string()),
            pa.field("tstz", pa.timestamp("us", tz="UTC")),
            pa.field("amount", pa.decimal128(9, 2)),
        ]
    )
    table = catalog.create_table(
        "db.t",
        schema,
        partition_by=["day(tstz)", "bucket(8, id)", "truncate(3, name)"],
        sort_by=["id"],
    )
    table.commit([], [SetPropertiesUpdate({"k": "v"})])
    c = refspark.catalog_for(warehouse)
    refspark.sql(
        f"INSERT INTO {c}.db.t VALUES (1, 'alpha', TIMESTAMP '2024-01-05 10:00:00', 1.25),"
        " (2, 'beta', TIMESTAMP '2024-01-06 11:00:00', null)"
    )
    reloaded = catalog.load_table("db.t")
    assert reloaded.metadata_location.endswith("v3.metadata.json")
    assert reloaded.schema() == table.schema()
    assert reloaded.spec() == table.spec()
    assert reloaded.sort_order() == table.sort_order()
    assert reloaded.properties["k"] == "v"
    assert reloaded.metadata.table_uuid == table.metadata.table_uuid

    # the schema's JSON as Java writes it (``decimal(9, 2)``, with the space) in both files
    def amount_type(location: str) -> Any:
        document = json.loads(Path(location.removeprefix("file:")).read_text())
        (schema,) = [s for s in document["schemas"] if s["schema-id"] == 0]
        return next(f["type"] for f in schema["fields"] if f["name"] == "amount")

    assert amount_type(reloaded.metadata_location) == "decimal(9, 2)"
    assert amount_type(table.metadata_location) == "decimal(9, 2)"
    snapshot = reloaded.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert snapshot.summary.properties["added-records"] == "2"
    # icepark reads Java's manifest list and manifests; the entries equal Java's `entries`.
    _compare_entries(refspark, warehouse, "db.t", reloaded)


def _compare_entries(refspark: RefEngine, warehouse: Path, name: str, table: Any) -> None:
    snapshot = table.current_snapshot()
    manifests = read_manifest_list(table.io.new_input(snapshot.manifest_list))
    ours = []
    for manifest in manifests:
        for entry in read_manifest(table.io.new_input(manifest.manifest_path), manifest):
            df = entry.data_file
            ours.append(
                (
                    int(entry.status),
                    entry.snapshot_id,
                    entry.sequence_number,
                    entry.file_sequence_number,
                    df.file_path.removeprefix("file:"),
                    df.record_count,
                    df.file_size_in_bytes,
                    {str(k): v for k, v in sorted((df.value_counts or {}).items())},
                    {str(k): v for k, v in sorted((df.null_value_counts or {}).items())},
                    {str(k): v.hex() for k, v in sorted((df.lower_bounds or {}).items())},
                    {str(k): v.hex() for k, v in sorted((df.upper_bounds or {}).items())},
                )
            )
    rows = refspark.rows(
        f"SELECT status, snapshot_id, sequence_number, file_sequence_number, data_file.file_path,"
        f" data_file.record_count, data_file.file_size_in_bytes, data_file.value_counts,"
        f" data_file.null_value_counts, data_file.lower_bounds, data_file.upper_bounds"
        f" FROM {refspark.catalog_for(warehouse)}.{name}.entries"
    )
    theirs = [
        (
            r[0],
            r[1],
            r[2],
            r[3],
            r[4].removeprefix("file:"),
            r[5],
            r[6],
            dict(sorted((r[7] or {}).items())),
            dict(sorted((r[8] or {}).items())),
            dict(sorted((r[9] or {}).items())),
            dict(sorted((r[10] or {}).items())),
        )
        for r in rows
    ]
    assert sorted(ours, key=lambda e: e[4]) == sorted(theirs, key=lambda e: e[4])
    assert all(e[0] == ManifestEntryStatus.ADDED for e in ours) or len(ours) > 0


@pytest.mark.parametrize("version", [1, 2])
def test_icepark_loads_reference_tables(refspark: RefEngine, tmp_path: Path, version: int) -> None:
    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {c}.db.events (id bigint NOT NULL, ts timestamp, category string,"
            " amount decimal(10,2), tags array<string>, attrs map<string,int>,"
            " loc struct<lat:double,lon:double>)"
            " USING iceberg PARTITIONED BY (days(ts), bucket(4, id), category)"
            f" TBLPROPERTIES ('format-version'='{version}', 'team'='java')",
            f"ALTER TABLE {c}.db.events WRITE ORDERED BY id ASC NULLS LAST, ts DESC",
            f"INSERT INTO {c}.db.events VALUES"
            " (1, TIMESTAMP '2024-01-05 10:00:00', 'a', 1.50, array('x'), map('k', 1), named_struct('lat', 1.0, 'lon', 2.0)),"
            " (2, TIMESTAMP '2024-01-06 11:00:00', 'b', 2.25, array(), map(), null),"
            " (3, null, null, null, null, null, null)",
            f"INSERT INTO {c}.db.events VALUES (4, TIMESTAMP '2024-02-01 00:00:00', 'a', 9.99, null, null, null)",
        ]
    )
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    assert catalog.list_namespaces() == [("db",)]
    assert catalog.list_tables("db") == [("db", "events")]
    table = catalog.load_table("db.events")
    assert table.format_version == version
    assert table.properties["team"] == "java"
    schema = table.schema()
    assert [f.name for f in schema.fields] == [
        "id",
        "ts",
        "category",
        "amount",
        "tags",
        "attrs",
        "loc",
    ]
    assert str(schema.find_type("amount")) == "decimal(10, 2)"
    assert schema.find_field("id").required
    assert [str(f.transform) for f in table.spec().fields] == ["day", "bucket[4]", "identity"]
    assert [f.name for f in table.spec().fields] == ["ts_day", "id_bucket", "category"]
    order = table.sort_order()
    assert [(f.source_id, f.direction.value, f.null_order.value) for f in order.fields] == [
        (1, "asc", "nulls-last"),
        (2, "desc", "nulls-last"),
    ]
    assert len(table.snapshots()) == 2
    _compare_entries(refspark, warehouse, "db.events", table)
    # The manifest list agrees with Java's `manifests` metadata table.
    snapshot = table.current_snapshot()
    assert snapshot is not None
    ours = sorted(
        (
            m.manifest_path.removeprefix("file:"),
            m.manifest_length,
            m.partition_spec_id,
            m.added_snapshot_id,
            m.added_files_count,
            m.existing_files_count,
            m.deleted_files_count,
        )
        for m in read_manifest_list(table.io.new_input(snapshot.manifest_list))
    )
    theirs = sorted(
        (r[0].removeprefix("file:"), r[1], r[2], r[3], r[4], r[5], r[6])
        for r in refspark.rows(
            "SELECT path, length, partition_spec_id, added_snapshot_id, added_data_files_count,"
            f" existing_data_files_count, deleted_data_files_count FROM {c}.db.events.manifests"
        )
    )
    assert ours == theirs
    # Every metadata file Java wrote parses, and re-serialising is stable.
    for path in sorted((warehouse / "db" / "events" / "metadata").glob("v*.metadata.json")):
        md = table_metadata_from_json(path.read_bytes())
        from icepark.spec.metadata import table_metadata_to_json

        assert table_metadata_from_json(table_metadata_to_json(md)) == md
