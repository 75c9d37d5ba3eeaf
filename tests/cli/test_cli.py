"""The ``icepark`` command line, run through click's test runner against temporary catalogs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from icepark.catalog import Catalog, load_catalog
from icepark.cli.main import cli, main
from icepark.spec.snapshots import Operation, Snapshot, SnapshotRefType, Summary
from icepark.spec.updates import AddSnapshotUpdate, SetSnapshotRefUpdate
from icepark.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("name", pa.string(), metadata={"doc": "the name"}),
        pa.field(
            "point",
            pa.struct([pa.field("x", pa.float64(), nullable=False), pa.field("y", pa.float64())]),
        ),
        pa.field("tags", pa.list_(pa.string())),
    ]
)

FIRST_ID = 1111111111111111111
SECOND_ID = 2222222222222222222


# -- helpers ---------------------------------------------------------------------------------


def _run(args: list[str], catalog_args: list[str] | None = None) -> Result:
    runner = CliRunner()
    return runner.invoke(cli, [*(catalog_args or []), *args], catch_exceptions=False)


def _ok(args: list[str], catalog_args: list[str] | None = None) -> str:
    result = _run(args, catalog_args)
    assert result.exit_code == 0, (result.output, result.stderr)
    return result.stdout


def _json(args: list[str], catalog_args: list[str] | None = None) -> Any:
    return json.loads(_ok([*args, "--json"], catalog_args))


def _add_snapshot(
    table: Table, snapshot_id: int, parent: int | None, seq: int, manifest_list: str
) -> None:
    summary = Summary(
        Operation.APPEND,
        {"added-data-files": "2", "added-records": str(10 * seq), "total-records": str(15 * seq)},
    )
    snapshot = Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent,
        sequence_number=seq,
        timestamp_ms=1_700_000_000_000 + seq * 1000,
        manifest_list=manifest_list,
        summary=summary,
        schema_id=table.schema().schema_id,
    )
    table.commit([], [AddSnapshotUpdate(snapshot), SetSnapshotRefUpdate("main", snapshot_id)])


def _make_table(catalog: Catalog, tmp: Path) -> Table:
    catalog.create_namespace("db")
    catalog.create_namespace("other")
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["day(ts)", "bucket(16, id)"],
        sort_by=["id"],
        properties={"owner": "tests"},
    )
    catalog.create_table("db.u", SCHEMA)
    _add_snapshot(table, FIRST_ID, None, 1, str(tmp / "snap-1.avro"))
    _add_snapshot(table, SECOND_ID, FIRST_ID, 2, str(tmp / "snap-2.avro"))
    table.commit([], [SetSnapshotRefUpdate("v1", FIRST_ID, SnapshotRefType.TAG)])
    return table


@pytest.fixture(params=["sql", "filesystem"])
def catalog_setup(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Table, list[str]]:
    if request.param == "sql":
        catalog = load_catalog(uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path))
        args = ["--uri", f"sqlite:///{tmp_path}/catalog.db", "--warehouse", str(tmp_path)]
    else:
        catalog = load_catalog(type="filesystem", warehouse=str(tmp_path))
        args = ["--type", "filesystem", "--warehouse", str(tmp_path)]
    return _make_table(catalog, tmp_path), args


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the user's ~/.icepark.yaml and ICEPARK_* variables out of the tests."""
    monkeypatch.setenv("ICEPARK_CONFIG", str(tmp_path / "no-such-config.yaml"))
    for name in (
        "ICEPARK_CATALOG",
        "ICEPARK_CATALOG_URI",
        "ICEPARK_WAREHOUSE",
        "ICEPARK_CATALOG_TYPE",
    ):
        monkeypatch.delenv(name, raising=False)


# -- catalog commands ------------------------------------------------------------------------


def test_help_and_entry_point() -> None:
    assert "describe" in _ok(["--help"])
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0


def test_namespaces(catalog_setup: tuple[Table, list[str]]) -> None:
    _, args = catalog_setup
    assert _ok(["namespaces"], args).split() == ["db", "other"]
    assert _json(["namespaces"], args) == {"namespaces": [["db"], ["other"]]}
    # the global --json works as well as the per-command one
    assert json.loads(_ok(["--json", "namespaces"], args)) == {"namespaces": [["db"], ["other"]]}


def test_catalog_from_environment(
    catalog_setup: tuple[Table, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, args = catalog_setup
    options = dict(zip(args[::2], args[1::2]))
    if "--uri" in options:
        monkeypatch.setenv("ICEPARK_CATALOG_URI", options["--uri"])
    else:
        monkeypatch.setenv("ICEPARK_CATALOG_TYPE", options["--type"])
    monkeypatch.setenv("ICEPARK_WAREHOUSE", options["--warehouse"])
    assert _ok(["tables"]).split() == ["db.t", "db.u"]


def test_tables(catalog_setup: tuple[Table, list[str]]) -> None:
    _, args = catalog_setup
    assert _ok(["tables", "db"], args).split() == ["db.t", "db.u"]
    assert _ok(["tables"], args).split() == ["db.t", "db.u"]
    assert _ok(["tables", "other"], args).split() == []
    assert _json(["tables", "db"], args) == {
        "identifiers": [{"namespace": ["db"], "name": "t"}, {"namespace": ["db"], "name": "u"}]
    }


def test_missing_namespace_and_table_are_clean_errors(
    catalog_setup: tuple[Table, list[str]],
) -> None:
    _, args = catalog_setup
    result = _run(["describe", "db.nope"], args)
    assert result.exit_code == 1
    assert "db.nope" in result.stderr
    assert "Traceback" not in result.output + result.stderr
    result = _run(["tables", "nope"], args)
    assert result.exit_code == 1
    assert "nope" in result.stderr


def test_unknown_catalog_name_is_a_clean_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --catalog names a catalog of ~/.icepark.yaml: one it lacks is refused, not opened as a
    # new empty catalog in ./warehouse (where "describe" then found no table)
    monkeypatch.chdir(tmp_path)
    result = _run(["--catalog", "prod", "tables"])
    assert result.exit_code == 1
    assert "No catalog named 'prod'" in result.stderr and "does not exist" in result.stderr
    assert not (tmp_path / "warehouse").exists()


def test_usage_error_is_status_2() -> None:
    result = _run(["describe"])
    assert result.exit_code == 2
    result = _run(["--type", "nessie", "namespaces"])
    assert result.exit_code == 2


def test_rest_type_without_uri_is_a_clean_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ICEPARK_CATALOG_URI", raising=False)
    monkeypatch.setenv("ICEPARK_CONFIG", "/nonexistent/icepark.yaml")
    result = _run(["--type", "rest", "namespaces"])
    assert result.exit_code == 1
    assert "needs a 'uri'" in result.stderr


# -- describe and snapshots ------------------------------------------------------------------


def test_describe_text(catalog_setup: tuple[Table, list[str]]) -> None:
    table, args = catalog_setup
    out = _ok(["describe", "db.t"], args)
    for expected in (
        table.metadata_location,
        table.location,
        table.metadata.table_uuid,
        "format version",
        "ts_day",
        "id_bucket",
        "bucket[16]",
        "day",
        "ts (2)",
        "id (1)",
        "asc",
        "nulls-first",
        "owner",
        "tests",
        str(SECOND_ID),
        "append",
        "added-records",
        "the name",
        "timestamptz",
        "required",
        "optional",
    ):
        assert expected in out, expected
    lines = out.splitlines()
    # nested fields are indented below their parent
    point = next(line for line in lines if " point " in line)
    x_line = next(line for line in lines if " x " in line)
    assert x_line.index("x") > point.index("point")
    assert any(" element " in line for line in lines)


def test_describe_json(catalog_setup: tuple[Table, list[str]]) -> None:
    table, args = catalog_setup
    doc = _json(["describe", "db.t"], args)
    assert doc["identifier"] == ["db", "t"]
    assert doc["format-version"] == 2
    assert doc["location"] == table.location
    assert doc["metadata-location"] == table.metadata_location
    assert [f["name"] for f in doc["schema"]["fields"]] == ["id", "ts", "name", "point", "tags"]
    assert doc["schema"]["fields"][0]["required"] is True
    partition = doc["partition-spec"]["fields"]
    assert [(f["name"], f["transform"], f["source-name"]) for f in partition] == [
        ("ts_day", "day", "ts"),
        ("id_bucket", "bucket[16]", "id"),
    ]
    assert partition[0]["field-id"] == 1000
    assert [(f["source-name"], f["direction"]) for f in doc["sort-order"]["fields"]] == [
        ("id", "asc")
    ]
    assert doc["properties"]["owner"] == "tests"
    current = doc["current-snapshot"]
    assert current["snapshot-id"] == SECOND_ID
    assert current["operation"] == "append"
    assert current["summary"]["added-records"] == "20"
    assert current["refs"] == ["main"]
    assert current["timestamp"] == "2023-11-14T22:13:22.000Z"


def test_describe_metadata_file(catalog_setup: tuple[Table, list[str]]) -> None:
    table, _ = catalog_setup
    doc = _json(["describe", table.metadata_location])
    assert doc["identifier"] is None
    assert doc["metadata-location"] == table.metadata_location
    assert "ts_day" in _ok(["describe", table.metadata_location])


def test_snapshots(catalog_setup: tuple[Table, list[str]]) -> None:
    _, args = catalog_setup
    out = _ok(["snapshots", "db.t"], args)
    first = next(line for line in out.splitlines() if line.lstrip().startswith(str(FIRST_ID)))
    second = next(line for line in out.splitlines() if line.lstrip().startswith(str(SECOND_ID)))
    assert "v1 (tag)" in first and "2023-11-14T22:13:21.000Z" in first
    assert "main" in second and str(FIRST_ID) in second and "append" in second
    assert "30" in second  # total-records

    doc = _json(["snapshots", "db.t"], args)
    assert doc["current-snapshot-id"] == SECOND_ID
    snaps = doc["snapshots"]
    assert [s["snapshot-id"] for s in snaps] == [FIRST_ID, SECOND_ID]
    assert [s["sequence-number"] for s in snaps] == [1, 2]
    assert snaps[0]["parent-snapshot-id"] is None
    assert snaps[1]["parent-snapshot-id"] == FIRST_ID
    assert snaps[0]["refs"] == ["v1 (tag)"] and snaps[1]["refs"] == ["main"]
    assert snaps[1]["summary"]["total-records"] == "30"
    assert snaps[0]["timestamp"] == "2023-11-14T22:13:21.000Z"


def test_snapshots_of_empty_table(catalog_setup: tuple[Table, list[str]]) -> None:
    _, args = catalog_setup
    assert "no snapshots" in _ok(["snapshots", "db.u"], args)
    assert _json(["snapshots", "db.u"], args) == {"current-snapshot-id": None, "snapshots": []}


# -- metadata --------------------------------------------------------------------------------


def test_metadata_valid(catalog_setup: tuple[Table, list[str]]) -> None:
    table, _ = catalog_setup
    out = _ok(["metadata", table.metadata_location])
    assert "valid" in out and table.metadata_location in out
    assert table.metadata.table_uuid in out
    doc = _json(["metadata", table.metadata_location])
    assert doc["valid"] is True
    assert doc["path"] == table.metadata_location
    assert doc["format-version"] == 2
    assert doc["snapshots"] == 2
    assert doc["current-snapshot-id"] == SECOND_ID
    assert doc["refs"]["v1"] == {"type": "tag", "snapshot-id": FIRST_ID}


def test_metadata_garbage(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.metadata.json"
    bad.write_bytes(b"\x00\x01 this is not json")
    result = _run(["metadata", str(bad)])
    assert result.exit_code == 1
    assert str(bad) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output + result.stderr
    result = _run(["metadata", str(bad), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["valid"] is False


def test_metadata_wrong_shape(tmp_path: Path) -> None:
    bad = tmp_path / "v2.metadata.json"
    bad.write_text(json.dumps({"format-version": 2, "table-uuid": 5}))
    result = _run(["metadata", str(bad)])
    assert result.exit_code == 1
    assert str(bad) in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_metadata_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.metadata.json"
    result = _run(["metadata", str(missing)])
    assert result.exit_code == 1
    assert str(missing) in result.stderr


def test_metadata_conformance(conformance_dir: Path) -> None:
    resources = conformance_dir / "apache-iceberg/core/src/test/resources"
    unsupported = resources / "TableMetadataUnsupportedVersion.json"
    if not unsupported.is_file():
        pytest.skip("TableMetadataUnsupportedVersion.json is absent")
    result = _run(["metadata", str(unsupported)])
    assert result.exit_code == 1
    assert str(unsupported) in result.stderr
    assert "version" in result.stderr.lower() and "42" in result.stderr

    for name in ("TableMetadataV2MissingSortOrder.json", "TableMetadataV1MissingSchemaType.json"):
        path = resources / name
        result = _run(["metadata", str(path)])
        assert result.exit_code == 1, name
        assert str(path) in result.stderr

    valid = resources / "TableMetadataV2Valid.json"
    doc = _json(["metadata", str(valid)])
    assert doc["table-uuid"] == "9c12d441-03fe-4693-9a96-a0705ddf69c1"
    assert doc["refs"] == {"main": {"type": "branch", "snapshot-id": 3055729675574597004}}
    snaps = _json(["snapshots", str(valid)])["snapshots"]
    assert [s["snapshot-id"] for s in snaps] == [3051729675574597004, 3055729675574597004]
    assert snaps[1]["refs"] == ["main"]


# -- avro ------------------------------------------------------------------------------------


@pytest.fixture
def manifest_list(tmp_path: Path) -> Path:
    from icepark.io import load_file_io
    from icepark.manifest import ManifestFile, PartitionFieldSummary, write_manifest_list

    path = tmp_path / "snap-1.avro"
    manifest = ManifestFile(
        manifest_path=str(tmp_path / "m0.avro"),
        manifest_length=1234,
        partition_spec_id=0,
        added_snapshot_id=FIRST_ID,
        added_files_count=2,
        existing_files_count=0,
        deleted_files_count=0,
        added_rows_count=10,
        existing_rows_count=0,
        deleted_rows_count=0,
        partitions=(PartitionFieldSummary(False, None, b"\x01\x00\x00\x00", b"\xff\x00\x00\x00"),),
    )
    write_manifest_list(
        load_file_io({}, str(path)).new_output(str(path)),
        [manifest],
        format_version=2,
        snapshot_id=FIRST_ID,
        parent_snapshot_id=None,
        sequence_number=1,
    )
    return path


def test_avro_manifest_list(manifest_list: Path, tmp_path: Path) -> None:
    out = _ok(["avro", str(manifest_list)])
    lines = out.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["manifest_path"] == str(tmp_path / "m0.avro")
    assert record["added_snapshot_id"] == FIRST_ID
    assert record["sequence_number"] == 1
    assert record["partitions"][0]["lower_bound"] == "01000000"
    assert record["partitions"][0]["upper_bound"] == "ff000000"


def test_avro_json_encoding(manifest_list: Path) -> None:
    record = json.loads(_ok(["avro", "--avro-json", str(manifest_list)]).strip())
    # Avro's JSON encoding (as avro-tools tojson): unions tagged, bytes as code points
    assert record["added_snapshot_id"] == FIRST_ID  # required in v2: no union
    assert record["key_metadata"] is None
    summary = record["partitions"]["array"][0]
    assert summary["lower_bound"] == {"bytes": "\x01\x00\x00\x00"}
    assert summary["upper_bound"] == {"bytes": "\xff\x00\x00\x00"}


def test_avro_header(manifest_list: Path) -> None:
    header = _json(["avro", "--header", str(manifest_list)])
    assert header["snapshot-id"] == str(FIRST_ID)
    assert header["format-version"] == "2"
    assert header["avro.schema"]["type"] == "record"


def test_avro_raw_logical_types(tmp_path: Path) -> None:
    import fastavro

    path = tmp_path / "logical.avro"
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "t", "type": {"type": "long", "logicalType": "timestamp-micros"}}],
    }
    with path.open("wb") as f:
        fastavro.writer(f, schema, [{"t": 5}, {"t": 6}])
    assert [json.loads(line) for line in _ok(["avro", str(path)]).splitlines()] == [
        {"t": 5},
        {"t": 6},
    ]


def test_avro_manifest(catalog_setup: tuple[Table, list[str]], tmp_path: Path) -> None:
    from icepark.manifest import DataFile, FileContent, FileFormat, write_manifest

    table, _ = catalog_setup
    path = str(tmp_path / "manifest.avro")
    writer = write_manifest(
        table.io.new_output(path),
        table.spec(),
        table.schema(),
        format_version=2,
        snapshot_id=FIRST_ID,
    )
    with writer:
        writer.add(
            DataFile(
                content=FileContent.DATA,
                file_path="/data/a.parquet",
                file_format=FileFormat.PARQUET,
                partition=(19000, 3),
                record_count=10,
                file_size_in_bytes=100,
                lower_bounds={1: b"\x01\x00\x00\x00\x00\x00\x00\x00"},
            )
        )
    record = json.loads(_ok(["avro", path]))
    assert record["snapshot_id"] == FIRST_ID
    data_file = record["data_file"]
    assert data_file["file_path"] == "/data/a.parquet"
    assert data_file["partition"] == {"ts_day": 19000, "id_bucket": 3}  # a date as raw days
    assert data_file["lower_bounds"] == [{"key": 1, "value": "0100000000000000"}]
    header = _json(["avro", "--header", path])
    assert header["partition-spec"][0]["name"] == "ts_day"


def test_avro_truncated_and_garbage(manifest_list: Path, tmp_path: Path) -> None:
    data = manifest_list.read_bytes()
    truncated = tmp_path / "truncated.avro"
    truncated.write_bytes(data[: len(data) - 40])
    result = _run(["avro", str(truncated)])
    assert result.exit_code == 1
    assert str(truncated) in result.stderr
    assert "Traceback" not in result.output + result.stderr

    garbage = tmp_path / "garbage.avro"
    garbage.write_bytes(b"not avro at all")
    result = _run(["avro", str(garbage)])
    assert result.exit_code == 1
    assert str(garbage) in result.stderr and "Avro" in result.stderr

    header_only = tmp_path / "header.avro"
    header_only.write_bytes(data[:20])
    result = _run(["avro", str(header_only)])
    assert result.exit_code == 1
    assert str(header_only) in result.stderr

    result = _run(["avro", str(tmp_path / "missing.avro")])
    assert result.exit_code == 1
    assert "missing.avro" in result.stderr
