"""PyIceberg judges the files icepark writes, without a JVM: every metadata file, manifest
list, manifest, Puffin file and deletion vector of icepark tables (v2 and v3, partition and
schema evolution, branches and tags, position, equality and DV deletes, overwrites) is read by
PyIceberg's own readers and must say what icepark says it wrote."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark.catalog import Catalog, SqlCatalog
from icepark.manifest import read_manifest, read_manifest_list
from icepark.puffin.dv import bitmaps_to_positions, deserialize_deletion_vector
from icepark.spec.manifests import FileFormat
from icepark.spec.metadata import table_metadata_from_json
from icepark.spec.schema import schema_to_json
from icepark.table import Table

pyiceberg_metadata = pytest.importorskip("pyiceberg.table.metadata")
pyiceberg_manifest = pytest.importorskip("pyiceberg.manifest")
pyiceberg_puffin = pytest.importorskip("pyiceberg.table.puffin")
pyiceberg_dv = pytest.importorskip("pyiceberg.table.deletion_vector")
pyiceberg_io = pytest.importorskip("pyiceberg.io.pyarrow")

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("name", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("amount", pa.decimal128(10, 2)),
    ]
)


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": ids,
            "name": [f"n{i % 7}" for i in ids],
            "ts": [1_700_000_000_000_000 + i * 3_600_000_000 for i in ids],
            "amount": [Decimal(i) / 4 for i in ids],
        },
        schema=SCHEMA,
    )


def _history(catalog: Catalog, version: int) -> Table:
    table = catalog.create_table(
        f"db.t{version}",
        SCHEMA,
        partition_by=["day(ts)", "bucket(4, id)"],
        properties={
            "format-version": str(version),
            "write.delete.mode": "merge-on-read",
            "write.merge.mode": "merge-on-read",
        },
    )
    table.append(_rows(0, 200))
    table.append(_rows(200, 100))
    table.delete("id < 30")  # position deletes (v2) or DVs (v3)
    table.delete("id >= 40 and id < 45")  # DVs merged with the ones before (v3)
    table.create_tag("v1")
    with table.update_spec() as u:
        u.add_field("truncate(2, name)")
    with table.update_schema() as u:
        u.add_column("note", "string")
    table.append(_rows(300, 50).append_column("note", pa.array(["x"] * 50)))
    table.create_branch("audit")
    table.append(_rows(400, 10).append_column("note", pa.array(["y"] * 10)), branch="audit")
    table.upsert(_rows(5, 3).append_column("note", pa.array(["u"] * 3)), on=["id"])
    table.overwrite(
        _rows(100, 5).append_column("note", pa.array(["o"] * 5)), "id >= 100 and id < 105"
    )
    return table


@pytest.fixture(scope="module", params=[2, 3], ids=["v2", "v3"])
def table(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Table:
    root = tmp_path_factory.mktemp(f"judge{request.param}")
    catalog = SqlCatalog("j", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    return _history(catalog, request.param)


def _norm(value: Any) -> Any:
    """JSON with type strings spaced alike and empty lists dropped (the two writers differ
    only in these)."""
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items() if v != []}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, str):
        return value.replace(", ", ",")
    return value


def _metadata_files(table: Table) -> list[str]:
    return [e.metadata_file for e in table.metadata.metadata_log] + [table.metadata_location]


def _py_io() -> Any:
    return pyiceberg_io.PyArrowFileIO()


def test_metadata_files(table: Table) -> None:
    for location in _metadata_files(table):
        text = Path(location.removeprefix("file://")).read_text()
        ours = table_metadata_from_json(text)
        theirs = pyiceberg_metadata.TableMetadataUtil.parse_raw(text)
        assert theirs.format_version == ours.format_version
        assert str(theirs.table_uuid) == ours.table_uuid
        assert theirs.location == ours.location
        assert theirs.last_column_id == ours.last_column_id
        assert theirs.current_schema_id == ours.current_schema_id
        assert theirs.default_spec_id == ours.default_spec_id
        assert theirs.last_partition_id == ours.last_partition_id
        assert theirs.default_sort_order_id == ours.default_sort_order_id
        assert dict(theirs.properties) == dict(ours.properties)
        assert (theirs.current_snapshot_id or None) == ours.current_snapshot_id
        for py_schema in theirs.schemas:
            schema = ours.schema_by_id(py_schema.schema_id)
            assert schema is not None
            py_json = json.loads(py_schema.model_dump_json(by_alias=True, exclude_none=True))
            assert _norm(py_json) == _norm(schema_to_json(schema))
        for py_spec in theirs.partition_specs:
            spec = ours.spec_by_id(py_spec.spec_id)
            assert spec is not None
            assert [
                (f.source_id, f.field_id, f.name, str(f.transform)) for f in py_spec.fields
            ] == [(f.source_id, f.field_id, f.name, str(f.transform)) for f in spec.fields]
        py_snaps = {s.snapshot_id: s for s in theirs.snapshots}
        assert set(py_snaps) == {s.snapshot_id for s in ours.snapshots}
        for s in ours.snapshots:
            p = py_snaps[s.snapshot_id]
            assert (p.parent_snapshot_id, p.timestamp_ms, p.manifest_list) == (
                s.parent_snapshot_id,
                s.timestamp_ms,
                s.manifest_list,
            )
            if ours.format_version >= 2:
                assert p.sequence_number == s.sequence_number
            assert p.summary is not None and s.summary is not None
            assert p.summary.operation.value == s.summary.operation.value
            assert dict(p.summary.additional_properties) == dict(s.summary.properties)
        assert {k: (r.snapshot_id, r.snapshot_ref_type.value) for k, r in theirs.refs.items()} == {
            k: (r.snapshot_id, r.type.value) for k, r in ours.refs.items()
        }
        assert [(e.metadata_file, e.timestamp_ms) for e in theirs.metadata_log] == [
            (e.metadata_file, e.timestamp_ms) for e in ours.metadata_log
        ]


def _manifest_fields(m: Any) -> tuple[Any, ...]:
    return (
        m.manifest_path,
        m.manifest_length,
        m.partition_spec_id,
        int(m.content),
        m.sequence_number,
        m.min_sequence_number,
        m.added_snapshot_id,
        m.added_files_count,
        m.existing_files_count,
        m.deleted_files_count,
        m.added_rows_count,
        m.existing_rows_count,
        m.deleted_rows_count,
        [
            (s.contains_null, s.contains_nan, s.lower_bound, s.upper_bound)
            for s in (m.partitions or [])
        ],
    )


def _all_manifests(table: Table) -> list[Any]:
    seen: dict[str, Any] = {}
    for s in table.metadata.snapshots:
        for m in read_manifest_list(table.io.new_input(s.manifest_list)):
            seen.setdefault(m.manifest_path, m)
    return list(seen.values())


def test_manifest_lists(table: Table) -> None:
    io = _py_io()
    for s in table.metadata.snapshots:
        ours = read_manifest_list(table.io.new_input(s.manifest_list))
        theirs = list(pyiceberg_manifest.read_manifest_list(io.new_input(s.manifest_list)))
        assert [_manifest_fields(m) for m in theirs] == [_manifest_fields(m) for m in ours]


def _entry_fields(e: Any, pyiceberg: bool) -> tuple[Any, ...]:
    f = e.data_file
    fmt = str(f.file_format.value if hasattr(f.file_format, "value") else f.file_format).upper()
    partition = (
        list(f.partition) if not pyiceberg else [f.partition[i] for i in range(len(f.partition))]
    )
    return (
        int(e.status),
        e.snapshot_id,
        e.sequence_number,
        e.file_sequence_number,
        int(f.content),
        f.file_path,
        fmt,
        f.record_count,
        f.file_size_in_bytes,
        dict(f.column_sizes or {}),
        dict(f.value_counts or {}),
        dict(f.null_value_counts or {}),
        dict(f.nan_value_counts or {}),
        dict(f.lower_bounds or {}),
        dict(f.upper_bounds or {}),
        list(f.split_offsets or []),
        list(f.equality_ids or []),
        f.sort_order_id,
        len(partition),
    )


def test_manifests(table: Table) -> None:
    io = _py_io()
    py_lists = {
        m.manifest_path: m
        for s in table.metadata.snapshots
        for m in pyiceberg_manifest.read_manifest_list(io.new_input(s.manifest_list))
    }
    checked = 0
    for m in _all_manifests(table):
        ours = read_manifest(table.io.new_input(m.manifest_path), m)
        theirs = py_lists[m.manifest_path].fetch_manifest_entry(io, discard_deleted=False)
        assert [_entry_fields(e, True) for e in theirs] == [_entry_fields(e, False) for e in ours]
        checked += len(ours)
    assert checked > 20


def test_puffin_files_and_deletion_vectors(table: Table) -> None:
    if table.format_version < 3:
        pytest.skip("deletion vectors are v3")
    dvs = [
        e.data_file
        for m in _all_manifests(table)
        for e in read_manifest(table.io.new_input(m.manifest_path), m)
        if e.data_file.file_format == FileFormat.PUFFIN
    ]
    assert len({d.file_path for d in dvs}) >= 2
    for path in sorted({d.file_path for d in dvs}):
        raw = Path(path.removeprefix("file://")).read_bytes()
        puffin = pyiceberg_puffin.PuffinFile(raw)
        blobs = {b.offset: b for b in puffin.footer.blobs}
        theirs = {
            dv.referenced_data_file: sorted(dv.to_vector().to_pylist())
            for dv in pyiceberg_dv.deletion_vectors_from_puffin_file(puffin)
        }
        for d in (d for d in dvs if d.file_path == path):
            blob = blobs[d.content_offset]
            assert blob.type == "deletion-vector-v1" and blob.length == d.content_size_in_bytes
            assert blob.properties["referenced-data-file"] == d.referenced_data_file
            assert int(blob.properties["cardinality"]) == d.record_count
            payload = raw[blob.offset : blob.offset + blob.length]
            ours = bitmaps_to_positions(deserialize_deletion_vector(payload))
            assert theirs[d.referenced_data_file] == sorted(int(p) for p in ours)
            assert len(ours) == d.record_count


def test_pyiceberg_reads_the_same_rows(table: Table) -> None:
    """Rows at the tag (position deletes or DVs applied; PyIceberg reads no equality deletes,
    which the later upsert wrote)."""
    from pyiceberg.table import StaticTable

    static = StaticTable.from_metadata(table.metadata_location)
    tag = table.metadata.ref("v1")
    assert tag is not None
    theirs = static.scan(snapshot_id=tag.snapshot_id).to_arrow().sort_by("id")
    ours = table.scan(ref="v1").to_arrow().sort_by("id")
    assert theirs.column("id").to_pylist() == ours.column("id").to_pylist()
    assert ours.num_rows == 300 - 30 - 5
