"""Manifest lists: Java-compatible schemas and metadata, assignment on write, reading by id."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.avro import WRITE_CODECS, read_avro_metadata
from icepark.errors import (
    InvalidAvroFileError,
    NoSuchFileError,
    UnsupportedFormatVersionError,
    ValidationError,
)
from icepark.io import PyArrowFileIO
from icepark.manifest import (
    ManifestContent,
    ManifestFile,
    PartitionFieldSummary,
    manifest_list_avro_schema,
    manifest_list_schema,
    read_manifest_list,
    write_manifest_list,
)
from icepark.spec.schema import schema_from_json

FILEIO = PyArrowFileIO()
SNAPSHOT_ID = 8744736658442914487


def _manifest(path: str, **kwargs: Any) -> ManifestFile:
    values: dict[str, Any] = {
        "manifest_path": path,
        "manifest_length": 7989,
        "partition_spec_id": 0,
        "added_snapshot_id": SNAPSHOT_ID,
        "added_files_count": 3,
        "existing_files_count": 1,
        "deleted_files_count": 0,
        "added_rows_count": 237993,
        "existing_rows_count": 10,
        "deleted_rows_count": 0,
        "partitions": [
            PartitionFieldSummary(True, False, b"\x01\x00\x00\x00", b"\x02\x00\x00\x00"),
            PartitionFieldSummary(False, None, None, None),
        ],
    }
    values.update(kwargs)
    return ManifestFile(**values)


def _write(tmp_path: Path, manifests: list[ManifestFile], version: int, **kwargs: Any) -> Any:
    path = str(tmp_path / f"snap-{version}.avro")
    args: dict[str, Any] = {
        "format_version": version,
        "snapshot_id": SNAPSHOT_ID,
        "parent_snapshot_id": None,
        "sequence_number": 5,
        "first_row_id": 1000 if version >= 3 else None,
    }
    args.update(kwargs)
    return write_manifest_list(FILEIO.new_output(path), manifests, **args)


def _header(path: str) -> tuple[dict[str, Any], dict[str, str], list[dict[str, Any]]]:
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        return reader.writer_schema, dict(reader.metadata), list(reader)


# -- schemas and metadata --------------------------------------------------------------------


def _ids(avro: dict[str, Any]) -> list[tuple[str, int, bool]]:
    return [
        (f["name"], f["field-id"], isinstance(f["type"], list) and f["type"][0] == "null")
        for f in avro["fields"]
    ]


def test_v1_schema_matches_java() -> None:
    avro = manifest_list_avro_schema(1)
    assert avro["name"] == "manifest_file"
    assert _ids(avro) == [
        ("manifest_path", 500, False),
        ("manifest_length", 501, False),
        ("partition_spec_id", 502, False),
        ("added_snapshot_id", 503, False),
        ("added_files_count", 504, True),
        ("existing_files_count", 505, True),
        ("deleted_files_count", 506, True),
        ("partitions", 507, True),
        ("added_rows_count", 512, True),
        ("existing_rows_count", 513, True),
        ("deleted_rows_count", 514, True),
        ("key_metadata", 519, True),
    ]


@pytest.mark.parametrize("version", [2, 3])
def test_v2_v3_schema_matches_java(version: int) -> None:
    avro = manifest_list_avro_schema(version)
    expected = [
        ("manifest_path", 500, False),
        ("manifest_length", 501, False),
        ("partition_spec_id", 502, False),
        ("content", 517, False),
        ("sequence_number", 515, False),
        ("min_sequence_number", 516, False),
        ("added_snapshot_id", 503, False),
        ("added_files_count", 504, False),
        ("existing_files_count", 505, False),
        ("deleted_files_count", 506, False),
        ("added_rows_count", 512, False),
        ("existing_rows_count", 513, False),
        ("deleted_rows_count", 514, False),
        ("partitions", 507, True),
        ("key_metadata", 519, True),
    ]
    if version == 3:
        expected.append(("first_row_id", 520, True))
    assert _ids(avro) == expected
    partitions = avro["fields"][13]
    assert partitions["doc"] == "Summary for each partition"
    array = partitions["type"][1]
    assert array["type"] == "array" and array["element-id"] == 508
    assert array["items"]["name"] == "r508"
    assert _ids(array["items"]) == [
        ("contains_null", 509, False),
        ("contains_nan", 518, True),
        ("lower_bound", 510, True),
        ("upper_bound", 511, True),
    ]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_file_metadata_matches_java(tmp_path: Path, version: int) -> None:
    written = _write(tmp_path, [_manifest("s3://b/m0.avro")], version, parent_snapshot_id=None)
    schema, metadata, _ = _header(written.location)
    expected = {"snapshot-id": str(SNAPSHOT_ID), "parent-snapshot-id": "null"}
    if version >= 2:
        expected["sequence-number"] = "5"
    if version >= 3:
        expected["first-row-id"] = "1000"
    expected["format-version"] = str(version)
    iceberg_schema = schema_from_json(json.loads(metadata.pop("iceberg.schema")))
    assert iceberg_schema.as_struct() == manifest_list_schema(version)
    assert {k: v for k, v in metadata.items() if not k.startswith("avro.")} == expected
    assert metadata["avro.codec"] == "deflate"
    assert schema == manifest_list_avro_schema(version)
    assert written.length == Path(written.location).stat().st_size

    again = _write(tmp_path, [], version, parent_snapshot_id=17, overwrite=True)
    assert _header(again.location)[1]["parent-snapshot-id"] == "17"


# -- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3])
def test_round_trip(tmp_path: Path, version: int) -> None:
    manifests = [
        _manifest("s3://b/m0.avro", sequence_number=3, min_sequence_number=1, key_metadata=b"k"),
        _manifest("s3://b/m1.avro", partition_spec_id=3, partitions=[]),
    ]
    if version >= 2:
        manifests.append(
            _manifest("s3://b/d0.avro", content=ManifestContent.DELETES, partitions=None)
        )
    written = _write(tmp_path, manifests, version)
    read = read_manifest_list(FILEIO.new_input(written.location))
    if version == 1:
        expected = [
            dataclasses.replace(m, sequence_number=0, min_sequence_number=0) for m in manifests
        ]
    else:
        expected = list(written.manifests)
    assert read == expected


def test_v2_assigns_sequence_numbers_of_this_snapshot(tmp_path: Path) -> None:
    new = _manifest("s3://b/new.avro")
    new_java_style = _manifest("s3://b/new2.avro", sequence_number=-1, min_sequence_number=-1)
    old = _manifest(
        "s3://b/old.avro", added_snapshot_id=1, sequence_number=2, min_sequence_number=1
    )
    only_min = _manifest("s3://b/min.avro", min_sequence_number=4)
    written = _write(tmp_path, [new, new_java_style, old, only_min], 2)
    read = read_manifest_list(FILEIO.new_input(written.location))
    assert [(m.sequence_number, m.min_sequence_number) for m in read] == [
        (5, 5),
        (5, 5),
        (2, 1),
        (5, 4),
    ]
    assert read == list(written.manifests)


def test_unassigned_sequence_number_from_another_snapshot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="unassigned sequence number"):
        _write(tmp_path, [_manifest("s3://b/m.avro", added_snapshot_id=1)], 2)
    assert not (tmp_path / "snap-2.avro").exists()


def test_missing_snapshot_id_is_the_lists_own(tmp_path: Path) -> None:
    written = _write(tmp_path, [_manifest("s3://b/m.avro", added_snapshot_id=None)], 2)
    assert read_manifest_list(FILEIO.new_input(written.location))[0].added_snapshot_id == (
        SNAPSHOT_ID
    )


def test_v2_needs_counts(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="added_rows_count"):
        _write(tmp_path, [_manifest("s3://b/m.avro", added_rows_count=None)], 2)


def test_v1_refuses_delete_manifests(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        _write(tmp_path, [_manifest("s3://b/d.avro", content=ManifestContent.DELETES)], 1)


def test_unsupported_version(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFormatVersionError):
        _write(tmp_path, [], 4)


def test_v3_assigns_first_row_ids(tmp_path: Path) -> None:
    manifests = [
        _manifest("s3://b/a.avro", added_rows_count=10, existing_rows_count=5),
        _manifest("s3://b/kept.avro", first_row_id=7, added_snapshot_id=1, sequence_number=1,
                  min_sequence_number=1),
        _manifest("s3://b/deletes.avro", content=ManifestContent.DELETES, first_row_id=3),
        _manifest("s3://b/b.avro", added_rows_count=2, existing_rows_count=0),
        _manifest("s3://b/c.avro", added_rows_count=1, existing_rows_count=0),
    ]  # fmt: skip
    written = _write(tmp_path, manifests, 3, first_row_id=1000)
    assert [m.first_row_id for m in written.manifests] == [1000, 7, None, 1015, 1017]
    assert written.first_row_id == 1000
    assert written.next_row_id == 1018
    assert written.added_rows == 18
    read = read_manifest_list(FILEIO.new_input(written.location))
    assert [m.first_row_id for m in read] == [1000, 7, None, 1015, 1017]


def test_v3_needs_first_row_id(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="first_row_id"):
        _write(tmp_path, [], 3, first_row_id=None)


def test_v2_leaves_row_ids_alone(tmp_path: Path) -> None:
    written = _write(tmp_path, [_manifest("s3://b/m.avro")], 2)
    assert written.next_row_id is None and written.added_rows is None
    _, _, records = _header(written.location)
    assert "first_row_id" not in records[0]


# -- reading by field id ---------------------------------------------------------------------


def _raw_list(tmp_path: Path, fields: list[dict[str, Any]], records: list[dict[str, Any]]) -> str:
    path = tmp_path / "raw.avro"
    schema = {"type": "record", "name": "manifest_file", "fields": fields}
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, metadata={"format-version": "2"})
    return str(path)


def _field(name: str, field_id: int, avro_type: Any, optional: bool = False) -> dict[str, Any]:
    if optional:
        return {"name": name, "type": ["null", avro_type], "default": None, "field-id": field_id}
    return {"name": name, "type": avro_type, "field-id": field_id}


def test_reads_java_1_4_field_names_by_id(tmp_path: Path) -> None:
    summary = {
        "type": "record",
        "name": "r508",
        "fields": [
            _field("contains_null", 509, "boolean"),
            _field("contains_nan", 518, "boolean", True),
            _field("lower_bound", 510, "bytes", True),
            _field("upper_bound", 511, "bytes", True),
        ],
    }
    fields = [
        _field("manifest_path", 500, "string"),
        _field("manifest_length", 501, "long"),
        _field("partition_spec_id", 502, "int"),
        _field("content", 517, "int"),
        _field("sequence_number", 515, "long"),
        _field("min_sequence_number", 516, "long"),
        _field("added_snapshot_id", 503, "long"),
        _field("added_data_files_count", 504, "int"),
        _field("existing_data_files_count", 505, "int"),
        _field("deleted_data_files_count", 506, "int"),
        _field("added_rows_count", 512, "long"),
        _field("existing_rows_count", 513, "long"),
        _field("deleted_rows_count", 514, "long"),
        _field("partitions", 507, {"type": "array", "items": summary, "element-id": 508}, True),
    ]
    record = {
        "manifest_path": "s3://b/m.avro",
        "manifest_length": 10,
        "partition_spec_id": 1,
        "content": 1,
        "sequence_number": 4,
        "min_sequence_number": 2,
        "added_snapshot_id": 99,
        "added_data_files_count": 6,
        "existing_data_files_count": 7,
        "deleted_data_files_count": 8,
        "added_rows_count": 60,
        "existing_rows_count": 70,
        "deleted_rows_count": 80,
        "partitions": [
            {"contains_null": True, "contains_nan": None, "lower_bound": b"a", "upper_bound": b"b"}
        ],
    }
    (m,) = read_manifest_list(FILEIO.new_input(_raw_list(tmp_path, fields, [record])))
    assert m == ManifestFile(
        manifest_path="s3://b/m.avro",
        manifest_length=10,
        partition_spec_id=1,
        content=ManifestContent.DELETES,
        sequence_number=4,
        min_sequence_number=2,
        added_snapshot_id=99,
        added_files_count=6,
        existing_files_count=7,
        deleted_files_count=8,
        added_rows_count=60,
        existing_rows_count=70,
        deleted_rows_count=80,
        partitions=(PartitionFieldSummary(True, None, b"a", b"b"),),
    )


def test_reads_by_id_whatever_the_names(tmp_path: Path) -> None:
    fields = [
        _field("z1", 503, "long"),
        _field("z2", 500, "string"),
        _field("z3", 502, "int"),
        _field("z4", 501, "long"),
        _field("unrelated", 9999, "string"),
    ]
    record = {"z1": 5, "z2": "p", "z3": 1, "z4": 2, "unrelated": "x"}
    (m,) = read_manifest_list(FILEIO.new_input(_raw_list(tmp_path, fields, [record])))
    assert (m.manifest_path, m.manifest_length, m.partition_spec_id, m.added_snapshot_id) == (
        "p",
        2,
        1,
        5,
    )
    # v1-style: no content or sequence numbers -> data, 0
    assert (m.content, m.sequence_number, m.min_sequence_number) == (ManifestContent.DATA, 0, 0)
    assert m.added_files_count is None and m.partitions is None


def test_not_a_manifest_list(tmp_path: Path) -> None:
    path = _raw_list(tmp_path, [_field("x", 1, "int")], [{"x": 1}])
    with pytest.raises(InvalidAvroFileError, match="Not a manifest list"):
        read_manifest_list(FILEIO.new_input(path))


# -- broken files and codecs -----------------------------------------------------------------


def test_truncated_files_raise_invalid_avro_file(tmp_path: Path) -> None:
    written = _write(tmp_path, [_manifest(f"s3://b/m{i}.avro") for i in range(20)], 2)
    data = Path(written.location).read_bytes()
    for cut in (0, 2, 4, 40, len(data) // 2, len(data) - 1):
        path = tmp_path / f"cut-{cut}.avro"
        path.write_bytes(data[:cut])
        with pytest.raises(InvalidAvroFileError, match=str(path)):
            read_manifest_list(FILEIO.new_input(str(path)))


def test_not_avro(tmp_path: Path) -> None:
    path = tmp_path / "list.avro"
    path.write_text(json.dumps({"not": "avro"}))
    with pytest.raises(InvalidAvroFileError, match="not an Avro file"):
        read_manifest_list(FILEIO.new_input(str(path)))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(NoSuchFileError):
        read_manifest_list(FILEIO.new_input(str(tmp_path / "nope.avro")))


def test_unreadable_codec(tmp_path: Path) -> None:
    # a header naming a codec nothing here can decode
    written = _write(tmp_path, [_manifest("s3://b/m.avro")], 2, codec="null")
    data = Path(written.location).read_bytes()
    path = tmp_path / "odd.avro"
    header_schema = {
        "type": "record",
        "name": "org.apache.avro.file.Header",
        "fields": [
            {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
            {"name": "meta", "type": {"type": "map", "values": "bytes"}},
            {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
        ],
    }
    stream = io.BytesIO(data)
    header = fastavro.schemaless_reader(stream, fastavro.parse_schema(header_schema), None)
    header["meta"]["avro.codec"] = b"brotli"
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(header_schema), header)
    path.write_bytes(out.getvalue() + data[stream.tell() :])
    with pytest.raises(InvalidAvroFileError, match="codec"):
        read_manifest_list(FILEIO.new_input(str(path)))


@pytest.mark.parametrize("codec", ["null", "deflate", "gzip", "zstd", "snappy"])
def test_codecs(tmp_path: Path, codec: str) -> None:
    assert "snappy" in WRITE_CODECS  # compressed by icepark where fastavro cannot
    written = _write(tmp_path, [_manifest("s3://b/m.avro")], 2, codec=codec)
    expected = {
        "null": "null",
        "deflate": "deflate",
        "gzip": "deflate",
        "zstd": "zstandard",
        "snappy": "snappy",
    }
    metadata = read_avro_metadata(FILEIO.new_input(written.location))
    assert metadata["avro.codec"] == expected[codec]
    assert read_manifest_list(FILEIO.new_input(written.location)) == list(written.manifests)


def test_unknown_write_codec(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="codec"):
        _write(tmp_path, [], 2, codec="brotli")


# -- property --------------------------------------------------------------------------------

_INT = st.integers(0, 2**31 - 1)
_LONG = st.integers(0, 2**63 - 1)
_SUMMARY = st.builds(
    PartitionFieldSummary,
    st.booleans(),
    st.none() | st.booleans(),
    st.none() | st.binary(max_size=8),
    st.none() | st.binary(max_size=8),
)
_MANIFESTS = st.builds(
    ManifestFile,
    manifest_path=st.text(min_size=1),
    manifest_length=_LONG,
    partition_spec_id=_INT,
    content=st.sampled_from(ManifestContent),
    sequence_number=_LONG,
    min_sequence_number=_LONG,
    added_snapshot_id=_LONG,
    added_files_count=_INT,
    existing_files_count=_INT,
    deleted_files_count=_INT,
    added_rows_count=_LONG,
    existing_rows_count=_LONG,
    deleted_rows_count=_LONG,
    partitions=st.none() | st.lists(_SUMMARY, max_size=3),
    key_metadata=st.none() | st.binary(max_size=8),
    first_row_id=st.none() | _LONG,
)


@given(st.lists(_MANIFESTS, max_size=5))
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_v2_round_trip_property(tmp_path: Path, manifests: list[ManifestFile]) -> None:
    written = _write(tmp_path, manifests, 2, overwrite=True)
    expected = [dataclasses.replace(m, first_row_id=None) for m in manifests]
    assert read_manifest_list(FILEIO.new_input(written.location)) == expected
