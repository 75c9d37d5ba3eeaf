"""Manifests: Java-compatible schemas and metadata, partition values of every type, summaries,
inheritance, reading by field id and errors."""

from __future__ import annotations

import io
import json
import math
import pickle
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.errors import FileAlreadyExistsError, InvalidAvroFileError, ValidationError
from icepark.io import PyArrowFileIO
from icepark.manifest import (
    DEFAULT_BLOCK_SIZE,
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
    manifest_entry_avro_schema,
    manifest_entry_schema,
    read_manifest,
    read_manifest_list,
    read_manifest_metadata,
    write_manifest,
    write_manifest_list,
)
from icepark.spec.conversions import from_bytes, to_bytes, unscaled_to_decimal
from icepark.spec.partitioning import (
    UNPARTITIONED,
    PartitionField,
    PartitionSpec,
    build_partition_spec,
    partition_spec_from_json,
)
from icepark.spec.schema import Schema, schema_from_json
from icepark.spec.transforms import IdentityTransform
from icepark.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

FILEIO = PyArrowFileIO()
SNAPSHOT_ID = 3051729675574597004

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "ts", TimestamptzType()),
    NestedField(3, "name", StringType()),
    NestedField(4, "price", DoubleType()),
    NestedField(5, "category", StringType()),
    schema_id=3,
)
SPEC = build_partition_spec(
    SCHEMA, ["bucket(16, id)", "day(ts)", "truncate(2, name)", "price", "category"], spec_id=2
)


def _file(path: str, partition: tuple[Any, ...], records: int = 10, **kwargs: Any) -> DataFile:
    return DataFile(
        content=kwargs.pop("content", FileContent.DATA),
        file_path=path,
        file_format=kwargs.pop("file_format", FileFormat.PARQUET),
        partition=partition,
        record_count=records,
        file_size_in_bytes=kwargs.pop("file_size_in_bytes", 1234),
        spec_id=kwargs.pop("spec_id", SPEC.spec_id),
        **kwargs,
    )


def _path(tmp_path: Path, name: str = "m.avro") -> str:
    return str(tmp_path / name)


def _avro(path: str) -> tuple[dict[str, Any], dict[str, str], list[dict[str, Any]]]:
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        return reader.writer_schema, dict(reader.metadata), list(reader)


FULL_FILE = _file(
    "s3://bucket/data/00000-0.parquet",
    (3, 19000, "ab", 1.5, "x"),
    records=100,
    column_sizes={1: 10, 2: 20},
    value_counts={1: 100, 2: 100},
    null_value_counts={1: 0, 2: 5},
    nan_value_counts={4: 1},
    lower_bounds={1: to_bytes(LongType(), 1), 3: b"a"},
    upper_bounds={1: to_bytes(LongType(), 99), 3: b"z"},
    key_metadata=b"key",
    split_offsets=[4, 1000],
    sort_order_id=1,
)


# -- schema and metadata ---------------------------------------------------------------------


def _fields(record: dict[str, Any]) -> list[tuple[str, int]]:
    return [(f["name"], f["field-id"]) for f in record["fields"]]


def test_v1_schema_matches_java(tmp_path: Path) -> None:
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=1, snapshot_id=SNAPSHOT_ID
    ) as writer:
        writer.add(FULL_FILE)
    schema, metadata, records = _avro(path)
    assert schema["name"] == "manifest_entry"
    assert _fields(schema) == [("status", 0), ("snapshot_id", 1), ("data_file", 2)]
    data_file = schema["fields"][2]["type"]
    assert data_file["name"] == "r2"
    assert _fields(data_file) == [
        ("file_path", 100),
        ("file_format", 101),
        ("partition", 102),
        ("record_count", 103),
        ("file_size_in_bytes", 104),
        ("block_size_in_bytes", 105),
        ("column_sizes", 108),
        ("value_counts", 109),
        ("null_value_counts", 110),
        ("nan_value_counts", 137),
        ("lower_bounds", 125),
        ("upper_bounds", 128),
        ("key_metadata", 131),
        ("split_offsets", 132),
        ("sort_order_id", 140),
    ]
    assert "doc" not in data_file["fields"][2]
    assert records[0]["data_file"]["block_size_in_bytes"] == DEFAULT_BLOCK_SIZE == 67108864
    assert records[0]["snapshot_id"] == SNAPSHOT_ID
    assert {k: v for k, v in metadata.items() if not k.startswith("avro.")}.keys() == {
        "schema",
        "schema-id",
        "partition-spec",
        "partition-spec-id",
        "format-version",
        "iceberg.schema",
    }
    assert metadata["format-version"] == "1"
    iceberg_schema = schema_from_json(json.loads(metadata["iceberg.schema"]))
    assert iceberg_schema.as_struct() == manifest_entry_schema(1, SPEC.partition_type(SCHEMA))


@pytest.mark.parametrize("version", [2, 3])
def test_v2_v3_schema_matches_java(tmp_path: Path, version: int) -> None:
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=version, snapshot_id=SNAPSHOT_ID
    ) as writer:
        writer.add(FULL_FILE)
    schema, metadata, _ = _avro(path)
    assert schema == manifest_entry_avro_schema(version, SPEC.partition_type(SCHEMA))
    assert _fields(schema) == [
        ("status", 0),
        ("snapshot_id", 1),
        ("sequence_number", 3),
        ("file_sequence_number", 4),
        ("data_file", 2),
    ]
    assert [f["type"] for f in schema["fields"][:4]] == [
        "int",
        ["null", "long"],
        ["null", "long"],
        ["null", "long"],
    ]
    data_file = schema["fields"][4]["type"]
    expected = [
        ("content", 134),
        ("file_path", 100),
        ("file_format", 101),
        ("partition", 102),
        ("record_count", 103),
        ("file_size_in_bytes", 104),
        ("column_sizes", 108),
        ("value_counts", 109),
        ("null_value_counts", 110),
        ("nan_value_counts", 137),
        ("lower_bounds", 125),
        ("upper_bounds", 128),
        ("key_metadata", 131),
        ("split_offsets", 132),
        ("equality_ids", 135),
        ("sort_order_id", 140),
    ]
    if version == 2:
        expected += [("referenced_data_file", 143)]
    else:
        expected += [
            ("first_row_id", 142),
            ("referenced_data_file", 143),
            ("content_offset", 144),
            ("content_size_in_bytes", 145),
        ]
    assert _fields(data_file) == expected
    assert data_file["fields"][0]["type"] == "int"  # content is required from v2
    partition = data_file["fields"][3]
    assert partition["doc"] == "Partition data tuple, schema based on the partition spec"
    assert partition["type"]["name"] == "r102"
    assert [(f["name"], f["field-id"], f["type"]) for f in partition["type"]["fields"]] == [
        ("id_bucket", 1000, ["null", "int"]),
        ("ts_day", 1001, ["null", {"type": "int", "logicalType": "date"}]),
        ("name_trunc", 1002, ["null", "string"]),
        ("price", 1003, ["null", "double"]),
        ("category", 1004, ["null", "string"]),
    ]
    column_sizes = data_file["fields"][6]
    assert column_sizes["type"] == [
        "null",
        {
            "type": "array",
            "items": {
                "type": "record",
                "name": "k117_v118",
                "fields": [
                    {"name": "key", "type": "int", "field-id": 117},
                    {"name": "value", "type": "long", "field-id": 118},
                ],
            },
            "logicalType": "map",
        },
    ]
    assert data_file["fields"][13]["type"] == [
        "null",
        {"type": "array", "items": "long", "element-id": 133},
    ]
    assert metadata["format-version"] == str(version)
    assert metadata["content"] == "data"


def test_metadata_describes_the_manifest(tmp_path: Path) -> None:
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=2, snapshot_id=SNAPSHOT_ID
    ):
        pass
    metadata = read_manifest_metadata(FILEIO.new_input(path))
    assert schema_from_json(json.loads(metadata["schema"])) == SCHEMA
    assert metadata["schema-id"] == "3"
    assert json.loads(metadata["partition-spec"]) == [
        {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1000},
        {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1001},
        {"name": "name_trunc", "transform": "truncate[2]", "source-id": 3, "field-id": 1002},
        {"name": "price", "transform": "identity", "source-id": 4, "field-id": 1003},
        {"name": "category", "transform": "identity", "source-id": 5, "field-id": 1004},
    ]
    assert metadata["partition-spec-id"] == "2"
    assert metadata["avro.codec"] == "deflate"


# -- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3])
def test_round_trip(tmp_path: Path, version: int) -> None:
    path = _path(tmp_path)
    other = _file("s3://bucket/data/00001.parquet", (None, None, None, None, None), records=7)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=version, snapshot_id=SNAPSHOT_ID
    ) as writer:
        writer.add(FULL_FILE)
        writer.add(other)
    manifest = writer.to_manifest_file()
    assert manifest.manifest_length == Path(path).stat().st_size
    entries = read_manifest(FILEIO.new_input(path))
    seq = 0 if version == 1 else None
    assert entries == [
        ManifestEntry(ManifestEntryStatus.ADDED, SNAPSHOT_ID, seq, seq, FULL_FILE),
        ManifestEntry(ManifestEntryStatus.ADDED, SNAPSHOT_ID, seq, seq, other),
    ]


def test_unpartitioned(tmp_path: Path) -> None:
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), UNPARTITIONED, SCHEMA, format_version=2, snapshot_id=1
    ) as writer:
        writer.add(_file("s3://b/f.parquet", (), spec_id=0))
    schema, _, _ = _avro(path)
    assert schema["fields"][4]["type"]["fields"][3]["type"] == {
        "type": "record",
        "name": "r102",
        "fields": [],
    }
    assert writer.to_manifest_file().partitions == ()
    (entry,) = read_manifest(FILEIO.new_input(path))
    assert entry.data_file.partition == ()


_INT = st.integers(-(2**31), 2**31 - 1)
_LONG = st.integers(-(2**63), 2**63 - 1)


def _decimals(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    bound = 10**precision - 1
    return st.integers(-bound, bound).map(lambda u: unscaled_to_decimal(u, scale))


PRIMITIVES: list[tuple[PrimitiveType, st.SearchStrategy[Any]]] = [
    (BooleanType(), st.booleans()),
    (IntegerType(), _INT),
    (LongType(), _LONG),
    (FloatType(), st.floats(width=32, allow_nan=False)),
    (DoubleType(), st.floats(allow_nan=False)),
    (DecimalType(9, 2), _decimals(9, 2)),
    (DecimalType(38, 0), _decimals(38, 0)),
    (DecimalType(1, 1), _decimals(1, 1)),
    (DateType(), _INT),
    (TimeType(), st.integers(0, 86_400_000_000 - 1)),
    (TimestampType(), _LONG),
    (TimestamptzType(), _LONG),
    (TimestampNanoType(), _LONG),
    (TimestamptzNanoType(), _LONG),
    (StringType(), st.text()),
    (UUIDType(), st.uuids()),
    (FixedType(5), st.binary(min_size=5, max_size=5)),
    (BinaryType(), st.binary()),
]


@pytest.mark.parametrize(("ptype", "values"), PRIMITIVES, ids=[str(t) for t, _ in PRIMITIVES])
@pytest.mark.parametrize("version", [1, 2, 3])
@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_identity_partition_on_every_type(
    tmp_path: Path, ptype: PrimitiveType, values: st.SearchStrategy[Any], version: int,
    data: st.DataObject,
) -> None:  # fmt: skip
    schema = Schema(NestedField(1, "col", ptype), NestedField(2, "other", ptype))
    spec = PartitionSpec(
        0,
        (
            PartitionField(1, 1000, IdentityTransform(), "col"),
            PartitionField(2, 1001, IdentityTransform(), "other"),
        ),
    )
    partitions = data.draw(st.lists(st.tuples(values, st.none() | values), min_size=1, max_size=4))
    path = _path(tmp_path, f"{uuid.uuid4()}.avro")
    with write_manifest(
        FILEIO.new_output(path), spec, schema, format_version=version, snapshot_id=1
    ) as writer:
        for i, p in enumerate(partitions):
            writer.add(_file(f"f{i}", p, spec_id=0))
    entries = read_manifest(FILEIO.new_input(path))
    assert [e.data_file.partition for e in entries] == [tuple(p) for p in partitions]

    summaries = writer.to_manifest_file().partitions
    assert summaries is not None and len(summaries) == 2
    first = summaries[0]
    assert not first.contains_null and first.contains_nan is False
    assert first.lower_bound is not None and first.upper_bound is not None
    lows = [from_bytes(ptype, s.lower_bound) for s in summaries if s.lower_bound is not None]
    assert lows[0] in [p[0] for p in partitions]
    assert summaries[1].contains_null == any(p[1] is None for p in partitions)


def test_transforms_round_trip(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "ts", TimestampType()),
        NestedField(3, "d", DateType()),
        NestedField(4, "dec", DecimalType(10, 2)),
        NestedField(5, "s", StringType()),
        NestedField(6, "b", BinaryType()),
        NestedField(7, "u", UUIDType()),
        NestedField(8, "tsns", TimestamptzNanoType()),
    )
    terms = [
        "bucket(8, id)", "truncate(10, id)", "year(ts)", "month(ts)", "day(ts)", "hour(ts)",
        "year(d)", "month(d)", "day(d)", "truncate(100, dec)", "bucket(4, dec)", "truncate(3, s)",
        "bucket(3, s)", "truncate(2, b)", "bucket(5, u)", "day(tsns)", "hour(tsns)", "void(s)",
    ]  # fmt: skip
    spec = build_partition_spec(schema, terms)
    ptype = spec.partition_type(schema)
    sources = {
        1: 1234567,
        2: 1_700_000_000_123_456,
        3: 19000,
        4: Decimal("123.45"),
        5: "abcdef",
        6: b"\x01\x02\x03",
        7: uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        8: 1_700_000_000_123_456_789,
    }
    partition = tuple(
        f.transform.apply(schema.find_type(f.source_id), sources[f.source_id]) for f in spec.fields
    )
    assert partition[-1] is None
    path = _path(tmp_path)
    for version in (1, 2, 3):
        with write_manifest(
            FILEIO.new_output(path), spec, schema, format_version=version, snapshot_id=1,
            overwrite=True,
        ) as writer:  # fmt: skip
            writer.add(_file("f", partition, spec_id=0))
        (entry,) = read_manifest(FILEIO.new_input(path))
        assert entry.data_file.partition == partition
        summaries = writer.to_manifest_file().partitions
        assert summaries is not None
        for f, s, value in zip(ptype.fields, summaries, partition):
            if value is None:
                assert s == PartitionFieldSummary(True, False, None, None)
            else:
                assert isinstance(f.field_type, PrimitiveType)
                assert s.lower_bound == s.upper_bound == to_bytes(f.field_type, value)


# -- counts and summaries --------------------------------------------------------------------


def _summary(
    nulls: bool, nans: bool, t: PrimitiveType, lower: Any, upper: Any
) -> PartitionFieldSummary:
    return PartitionFieldSummary(nulls, nans, to_bytes(t, lower), to_bytes(t, upper))


def test_counts_and_summaries(tmp_path: Path) -> None:
    path = _path(tmp_path)
    existing = ManifestEntry(
        ManifestEntryStatus.ADDED, 11, 3, 4, _file("e", (1, 18000, "zz", -0.0, None), records=5)
    )
    deleted = ManifestEntry(
        ManifestEntryStatus.ADDED, 12, 2, 2, _file("d", (15, 17000, "a", 2.0, "k"), records=7)
    )
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=2, snapshot_id=SNAPSHOT_ID
    ) as writer:
        writer.add(_file("a1", (3, 19000, "ab", 0.0, None), records=10))
        writer.add(_file("a2", (None, 19001, "ac", math.nan, None), records=20))
        writer.existing(existing)
        writer.delete(deleted)
    m = writer.to_manifest_file()
    assert m == ManifestFile(
        manifest_path=path,
        manifest_length=Path(path).stat().st_size,
        partition_spec_id=2,
        content=ManifestContent.DATA,
        sequence_number=None,
        min_sequence_number=3,  # live entries only; the added ones inherit a later number
        added_snapshot_id=SNAPSHOT_ID,
        added_files_count=2,
        existing_files_count=1,
        deleted_files_count=1,
        added_rows_count=30,
        existing_rows_count=5,
        deleted_rows_count=7,
        partitions=(
            _summary(True, False, IntegerType(), 1, 15),
            _summary(False, False, DateType(), 17000, 19001),
            PartitionFieldSummary(False, False, b"a", b"zz"),
            _summary(False, True, DoubleType(), -0.0, 2.0),
            PartitionFieldSummary(True, False, b"k", b"k"),
        ),
    )
    entries = read_manifest(FILEIO.new_input(path))
    assert [(e.status, e.snapshot_id) for e in entries] == [
        (ManifestEntryStatus.ADDED, SNAPSHOT_ID),
        (ManifestEntryStatus.ADDED, SNAPSHOT_ID),
        (ManifestEntryStatus.EXISTING, 11),
        (ManifestEntryStatus.DELETED, SNAPSHOT_ID),
    ]
    assert [(e.sequence_number, e.file_sequence_number) for e in entries] == [
        (None, None),
        (None, None),
        (3, 4),
        (2, 2),
    ]


def test_zero_bounds_keep_their_sign(tmp_path: Path) -> None:
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=2, snapshot_id=1
    ) as writer:
        writer.add(_file("a", (None, None, None, 0.0, None)))
        writer.add(_file("b", (None, None, None, -0.0, None)))
    summary = writer.to_manifest_file().partitions[3]  # type: ignore[index]
    assert summary.lower_bound == to_bytes(DoubleType(), -0.0)
    assert summary.upper_bound == to_bytes(DoubleType(), 0.0)


def test_string_bounds_compare_utf16_like_java(tmp_path: Path) -> None:
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=2, snapshot_id=1
    ) as writer:
        writer.add(_file("a", (None, None, "\U0001f600", None, None)))  # surrogates D83D DE00
        writer.add(_file("b", (None, None, "\uffff", None, None)))
    summary = writer.to_manifest_file().partitions[2]  # type: ignore[index]
    assert summary.lower_bound == "\U0001f600".encode()
    assert summary.upper_bound == "\uffff".encode()


# -- full flow and inheritance ---------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 3])
def test_inheritance_through_manifest_list(tmp_path: Path, version: int) -> None:
    path = _path(tmp_path)
    old = _file("old", (1, 1, "a", 1.0, "a"), records=4, first_row_id=500)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=version, snapshot_id=SNAPSHOT_ID
    ) as writer:
        writer.add(_file("new1", (1, 1, "a", 1.0, "a"), records=10))
        writer.existing(ManifestEntry(ManifestEntryStatus.EXISTING, 7, 2, 2, old))
        writer.add(_file("new2", (1, 1, "a", 1.0, "a"), records=20))
        writer.existing(
            ManifestEntry(
                ManifestEntryStatus.EXISTING, 7, 2, 2, old.replace(file_path="x", first_row_id=None)
            )
        )
        writer.delete(
            ManifestEntry(
                ManifestEntryStatus.EXISTING,
                7,
                1,
                1,
                old.replace(file_path="gone", first_row_id=None),
            )
        )
    list_path = _path(tmp_path, "snap.avro")
    write_manifest_list(
        FILEIO.new_output(list_path), [writer.to_manifest_file()], format_version=version,
        snapshot_id=SNAPSHOT_ID, parent_snapshot_id=7, sequence_number=9, first_row_id=100,
    )  # fmt: skip
    (manifest,) = read_manifest_list(FILEIO.new_input(list_path))
    assert (manifest.sequence_number, manifest.min_sequence_number) == (9, 2)
    entries = read_manifest(FILEIO.new_input(path), manifest)
    assert [(e.data_file.file_path, e.snapshot_id, e.sequence_number, e.file_sequence_number)
            for e in entries] == [
        ("new1", SNAPSHOT_ID, 9, 9),
        ("old", 7, 2, 2),
        ("new2", SNAPSHOT_ID, 9, 9),
        ("x", 7, 2, 2),
        ("gone", SNAPSHOT_ID, 1, 1),
    ]  # fmt: skip
    row_ids = [e.data_file.first_row_id for e in entries]
    if version == 3:
        assert manifest.first_row_id == 100
        # nulls take the manifest's first row id plus the rows before them; deleted stay null
        assert row_ids == [100, 500, 110, 130, None]
    else:
        assert manifest.first_row_id is None
        assert row_ids == [None, None, None, None, None]


def test_inheritance_rules(tmp_path: Path) -> None:
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=2, snapshot_id=None
    ) as writer:
        writer.add(_file("a", (None,) * 5))
        writer.add(_file("b", (None,) * 5), sequence_number=4)
    m = writer.to_manifest_file().replace(sequence_number=6, added_snapshot_id=77)
    a, b = read_manifest(FILEIO.new_input(path), m)
    assert (a.snapshot_id, a.sequence_number, a.file_sequence_number) == (77, 6, 6)
    assert (b.snapshot_id, b.sequence_number, b.file_sequence_number) == (77, 4, 6)
    # without the manifest's entry nothing is inherited
    a, b = read_manifest(FILEIO.new_input(path))
    assert (a.snapshot_id, a.sequence_number, b.sequence_number) == (None, None, 4)


def test_v1_manifest_in_a_v2_table(tmp_path: Path) -> None:
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=1, snapshot_id=5
    ) as writer:
        writer.add(_file("a", (None,) * 5))
    m = writer.to_manifest_file()
    (entry,) = read_manifest(FILEIO.new_input(path), m.replace(sequence_number=0))
    assert (entry.sequence_number, entry.file_sequence_number) == (0, 0)
    (entry,) = read_manifest(FILEIO.new_input(path), m.replace(sequence_number=3))
    assert (entry.sequence_number, entry.file_sequence_number) == (3, 3)


# -- delete files ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 3])
def test_delete_manifest(tmp_path: Path, version: int) -> None:
    path = _path(tmp_path)
    dv = _file(
        "s3://b/dv.puffin", (1, 2, "a", 1.0, "c"), records=3, content=FileContent.POSITION_DELETES,
        file_format=FileFormat.PUFFIN, referenced_data_file="s3://b/data.parquet",
        content_offset=4, content_size_in_bytes=40, first_row_id=9,
    )  # fmt: skip
    eq = _file(
        "s3://b/eq.parquet", (1, 2, "a", 1.0, "c"), records=2, content=FileContent.EQUALITY_DELETES,
        equality_ids=[1, 3], referenced_data_file="ignored",
    )  # fmt: skip
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=version, snapshot_id=1,
        content=ManifestContent.DELETES,
    ) as writer:  # fmt: skip
        writer.add(dv)
        writer.add(eq)
    assert read_manifest_metadata(FILEIO.new_input(path))["content"] == "deletes"
    m = writer.to_manifest_file()
    assert m.content == ManifestContent.DELETES
    read = [
        e.data_file
        for e in read_manifest(
            FILEIO.new_input(path), m.replace(sequence_number=3, first_row_id=50)
        )
    ]
    expected_dv = dv.replace(first_row_id=None)  # delete files never carry row ids
    if version == 2:
        expected_dv = expected_dv.replace(content_offset=None, content_size_in_bytes=None)
    assert read == [expected_dv, eq.replace(referenced_data_file=None)]


def test_delete_manifest_needs_v2(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        write_manifest(
            FILEIO.new_output(_path(tmp_path)), SPEC, SCHEMA, format_version=1, snapshot_id=1,
            content=ManifestContent.DELETES,
        )  # fmt: skip
    assert not (tmp_path / "m.avro").exists()


# -- validation ------------------------------------------------------------------------------


def test_rejected_entries(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        with write_manifest(
            FILEIO.new_output(_path(tmp_path)), SPEC, SCHEMA, format_version=2, snapshot_id=1
        ) as writer:
            with pytest.raises(ValidationError, match="POSITION_DELETES"):
                writer.add(_file("d", (None,) * 5, content=FileContent.POSITION_DELETES))
            with pytest.raises(ValidationError, match="does not match spec"):
                writer.add(_file("p", (1, 2)))
            with pytest.raises(ValidationError, match="null sequence number"):
                writer.existing(
                    ManifestEntry(ManifestEntryStatus.ADDED, 5, None, None, _file("e", (None,) * 5))
                )
            with pytest.raises(ValidationError, match="unassigned sequence number"):
                writer.write_entry(
                    ManifestEntry(ManifestEntryStatus.ADDED, 5, None, None, _file("e", (None,) * 5))
                )
            raise ValidationError("give up")
    # a writer left by an exception publishes nothing
    assert not (tmp_path / "m.avro").exists()


def test_closed_writer(tmp_path: Path) -> None:
    writer = write_manifest(
        FILEIO.new_output(_path(tmp_path)), SPEC, SCHEMA, format_version=2, snapshot_id=1
    )
    with pytest.raises(ValidationError, match="still open"):
        writer.to_manifest_file()
    m = writer.close()
    assert writer.close() is m and writer.to_manifest_file() is m
    with pytest.raises(ValidationError, match="closed"):
        writer.add(_file("a", (None,) * 5))


# -- reading by field id and standalone ------------------------------------------------------


def test_reads_by_field_id_with_other_names(tmp_path: Path) -> None:
    partition = {
        "type": "record",
        "name": "r102",
        "fields": [
            {"name": "other_name", "type": ["null", "string"], "field-id": 1004},
            {"name": "bucket_renamed", "type": ["null", "int"], "field-id": 1000},
        ],
    }
    data_file = {
        "type": "record",
        "name": "r2",
        "fields": [
            {"name": "where", "type": "string", "field-id": 100},
            {"name": "fmt", "type": "string", "field-id": 101},
            {"name": "part", "type": partition, "field-id": 102},
            {"name": "rows", "type": "long", "field-id": 103},
            {"name": "bytes", "type": "long", "field-id": 104},
            {"name": "extra", "type": "string", "field-id": 9999},
        ],
    }
    schema = {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            {"name": "st", "type": "int", "field-id": 0},
            {"name": "df", "type": data_file, "field-id": 2},
        ],
    }
    spec = PartitionSpec(
        5,
        (
            PartitionField(1, 1000, IdentityTransform(), "id_bucket"),
            PartitionField(5, 1004, IdentityTransform(), "category"),
        ),
    )
    record = {
        "st": 1,
        "df": {
            "where": "s3://b/f.orc",
            "fmt": "orc",
            "part": {"other_name": "c", "bucket_renamed": 7},
            "rows": 3,
            "bytes": 4,
            "extra": "x",
        },
    }
    path = _path(tmp_path)
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [record], metadata={
            "partition-spec": json.dumps([
                {"name": "id_bucket", "transform": "identity", "source-id": 1, "field-id": 1000},
                {"name": "category", "transform": "identity", "source-id": 5, "field-id": 1004},
            ]),
            "partition-spec-id": "5",
            "format-version": "1",
        })  # fmt: skip
    (entry,) = read_manifest(FILEIO.new_input(path))
    assert entry == ManifestEntry(
        ManifestEntryStatus.ADDED, None, 0, 0,
        DataFile(FileContent.DATA, "s3://b/f.orc", FileFormat.ORC, (7, "c"), 3, 4, spec_id=5),
    )  # fmt: skip
    # an explicit spec orders the tuple
    reversed_spec = PartitionSpec(5, tuple(reversed(spec.fields)))
    (entry,) = read_manifest(FILEIO.new_input(path), spec=reversed_spec)
    assert entry.data_file.partition == ("c", 7)


def test_not_a_manifest(tmp_path: Path) -> None:
    path = _path(tmp_path)
    schema = {"type": "record", "name": "x", "fields": [{"name": "a", "type": "int"}]}
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [{"a": 1}])
    with pytest.raises(InvalidAvroFileError, match="Not a manifest"):
        read_manifest(FILEIO.new_input(path))


def test_truncated_manifest(tmp_path: Path) -> None:
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=2, snapshot_id=1, codec="null"
    ) as writer:
        for i in range(50):
            writer.add(_file(f"f{i}", (i, i, "s", 1.0, "c")))
    data = Path(path).read_bytes()
    for cut in (0, 5, 100, len(data) // 2, len(data) - 3):
        broken = tmp_path / f"cut{cut}.avro"
        broken.write_bytes(data[:cut])
        with pytest.raises(InvalidAvroFileError, match=str(broken)):
            read_manifest(FILEIO.new_input(str(broken)))
        if cut < 50:
            with pytest.raises(InvalidAvroFileError):
                read_manifest_metadata(FILEIO.new_input(str(broken)))


def _to_zstd(data: bytes) -> bytes:
    """Re-encode a null-codec Avro file with zstandard (as Java can write manifests)."""
    zstandard = pytest.importorskip("zstandard")
    header_schema = fastavro.parse_schema({
        "type": "record", "name": "org.apache.avro.file.Header",
        "fields": [
            {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
            {"name": "meta", "type": {"type": "map", "values": "bytes"}},
            {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
        ],
    })  # fmt: skip
    stream = io.BytesIO(data)
    header = fastavro.schemaless_reader(stream, header_schema, None)
    assert isinstance(header, dict)
    header["meta"]["avro.codec"] = b"zstandard"
    out = io.BytesIO()
    fastavro.schemaless_writer(out, header_schema, header)
    # walk the blocks by hand: count, size, bytes, sync
    rest = stream.read()
    pos = 0

    def read_long() -> int:
        nonlocal pos
        result = shift = 0
        while True:
            b = rest[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7

    def write_long(n: int) -> bytes:
        n = (n << 1) ^ (n >> 63)
        buf = bytearray()
        while n & ~0x7F:
            buf.append((n & 0x7F) | 0x80)
            n >>= 7
        buf.append(n)
        return bytes(buf)

    while pos < len(rest):
        count = read_long()
        size = read_long()
        block = rest[pos : pos + size]
        pos += size
        sync = rest[pos : pos + 16]
        pos += 16
        compressed = zstandard.ZstdCompressor().compress(block)
        out.write(write_long(count) + write_long(len(compressed)) + compressed + sync)
    return out.getvalue()


@pytest.mark.parametrize("codec", ["null", "deflate", "zstd-read"])
def test_codecs(tmp_path: Path, codec: str) -> None:
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), SPEC, SCHEMA, format_version=2, snapshot_id=1,
        codec="null" if codec == "zstd-read" else codec,
    ) as writer:  # fmt: skip
        for i in range(3):
            writer.add(_file(f"f{i}", (i, i, "s", 1.0, "c")))
    if codec == "zstd-read":
        Path(path).write_bytes(_to_zstd(Path(path).read_bytes()))
    assert read_manifest_metadata(FILEIO.new_input(path))["avro.codec"] == (
        "zstandard" if codec == "zstd-read" else codec
    )
    entries = read_manifest(FILEIO.new_input(path))
    assert [e.data_file.partition[0] for e in entries] == [0, 1, 2]


# -- values ----------------------------------------------------------------------------------


def test_models_pickle_and_normalize() -> None:
    entry = ManifestEntry(1, 5, None, None, FULL_FILE)  # type: ignore[arg-type]
    assert entry.status is ManifestEntryStatus.ADDED
    assert pickle.loads(pickle.dumps(entry)) == entry
    assert FULL_FILE.split_offsets == (4, 1000)
    assert DataFile(0, "p", "parquet", [1], 1, 1).file_format is FileFormat.PARQUET  # type: ignore[arg-type]
    assert FULL_FILE.without_stats().lower_bounds is None
    manifest = ManifestFile("p", 1, 0, partitions=[PartitionFieldSummary(True)])
    assert manifest.partitions == (PartitionFieldSummary(True, None, None, None),)
    assert pickle.loads(pickle.dumps(manifest)) == manifest
    assert (
        manifest.has_added_files
        and not ManifestFile("p", 1, 0, added_files_count=0).has_added_files
    )
    assert {FULL_FILE, FULL_FILE} == {FULL_FILE}
    with pytest.raises(ValidationError):
        FileFormat.parse("csv")


def test_nested_partition_source_names(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "loc", StructType(NestedField(2, "city", StringType())), False),
    )
    spec = build_partition_spec(schema, ["loc.city"])
    assert spec.fields[0].name == "loc.city"
    path = _path(tmp_path)
    with write_manifest(
        FILEIO.new_output(path), spec, schema, format_version=2, snapshot_id=1
    ) as writer:
        writer.add(_file("f", ("Paris",), spec_id=0))
    avro, _, _ = _avro(path)
    field = avro["fields"][4]["type"]["fields"][3]["type"]["fields"][0]
    assert field["name"] == "loc_x2Ecity" and field["iceberg-field-name"] == "loc.city"
    (entry,) = read_manifest(FILEIO.new_input(path))
    assert entry.data_file.partition == ("Paris",)


# -- the reference engine reads what icepark rewrites ----------------------------------------

_REF_COLUMNS = (
    "id bigint, i int, flag boolean, f float, d double, dec decimal(9,2), day date, "
    "ts timestamp_ntz, tstz timestamp, name string, bin binary"
)
_REF_PARTITIONING = (
    "bucket(16, id), i, flag, f, d, dec, days(tstz), day, ts, truncate(2, name), bin"
)
_REF_ROWS = [
    "(1, 2, true, 1.5, 2.5, 3.14, DATE '2024-01-05', TIMESTAMP_NTZ '2024-01-05 10:00:00', "
    "TIMESTAMP '2024-01-05 10:00:00', 'hello', X'0102'), "
    "(2, null, null, null, null, null, null, null, null, null, null)",
    "(3, -7, false, -1.0, double('NaN'), -3.14, DATE '1960-01-05', "
    "TIMESTAMP_NTZ '1960-01-05 10:00:00', TIMESTAMP '1960-01-05 10:00:00', 'zz', X'FF')",
]
_REF_QUERIES = [
    "SELECT * FROM {t} ORDER BY id",
    "SELECT id FROM {t} WHERE i = 2",
    "SELECT id FROM {t} WHERE dec < 0 OR day > DATE '2000-01-01' ORDER BY id",
    "SELECT content, file_path, partition, record_count, lower_bounds, upper_bounds"
    " FROM {t}.files ORDER BY file_path",
    "SELECT status, snapshot_id, sequence_number, file_sequence_number, data_file.file_path"
    " FROM {t}.entries ORDER BY data_file.file_path, status",
    "SELECT content, path, partition_spec_id, added_snapshot_id, added_data_files_count,"
    " existing_data_files_count, deleted_data_files_count, partition_summaries"
    " FROM {t}.all_manifests ORDER BY path, reference_snapshot_id",
]


def _rewrite_with_icepark(table_dir: Path, version: int) -> int:
    """Rewrite every manifest and manifest list of a Java-written table with icepark."""

    def drop_crc(path: Path) -> None:  # Hadoop's checksum sidecar would no longer match
        path.with_name(f".{path.name}.crc").unlink(missing_ok=True)

    rewritten: dict[str, ManifestFile] = {}
    lists = sorted((table_dir / "metadata").glob("snap-*.avro"))
    for list_path in lists:
        list_meta = read_manifest_metadata(FILEIO.new_input(str(list_path)))
        manifests = []
        for m in read_manifest_list(FILEIO.new_input(str(list_path))):
            if m.manifest_path not in rewritten:
                local = Path(m.manifest_path.removeprefix("file:"))
                meta = read_manifest_metadata(FILEIO.new_input(str(local)))
                schema = schema_from_json(json.loads(meta["schema"]))
                fields = partition_spec_from_json(json.loads(meta["partition-spec"])).fields
                spec = PartitionSpec(int(meta["partition-spec-id"]), fields)
                entries = read_manifest(FILEIO.new_input(str(local)))  # raw: nothing inherited
                content = (
                    ManifestContent.DELETES
                    if meta.get("content") == "deletes"
                    else ManifestContent.DATA
                )
                with write_manifest(
                    FILEIO.new_output(str(local)), spec, schema, format_version=version,
                    snapshot_id=m.added_snapshot_id, content=content, overwrite=True,
                ) as writer:  # fmt: skip
                    for e in entries:
                        if version == 1:
                            e = e.replace(sequence_number=None, file_sequence_number=None)
                        writer.write_entry(e)
                drop_crc(local)
                mine = writer.to_manifest_file()
                assert mine.partitions == m.partitions
                counts = ("added_rows_count", "existing_rows_count", "deleted_rows_count")
                assert [getattr(mine, n) for n in counts] == [getattr(m, n) for n in counts]
                rewritten[m.manifest_path] = mine
            manifests.append(
                rewritten[m.manifest_path].replace(
                    manifest_path=m.manifest_path,
                    sequence_number=m.sequence_number,
                    min_sequence_number=m.min_sequence_number,
                    first_row_id=m.first_row_id,
                )
            )
        parent = list_meta["parent-snapshot-id"]
        write_manifest_list(
            FILEIO.new_output(str(list_path)), manifests, format_version=version,
            snapshot_id=int(list_meta["snapshot-id"]),
            parent_snapshot_id=None if parent == "null" else int(parent),
            sequence_number=int(list_meta.get("sequence-number", "0")),
            first_row_id=int(list_meta["first-row-id"]) if version >= 3 else None,
            overwrite=True,
        )  # fmt: skip
        drop_crc(list_path)
    return len(lists)


@pytest.mark.interop
@pytest.mark.parametrize("version", [1, 2, 3])
def test_reference_reads_manifests_rewritten_by_icepark(
    refspark: Any, tmp_path: Path, version: int
) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    c = refspark.catalog_for(warehouse)
    table = f"{c}.db.t"
    statements = [
        f"CREATE TABLE {table} ({_REF_COLUMNS}) USING iceberg PARTITIONED BY "
        f"({_REF_PARTITIONING}) TBLPROPERTIES ('format-version'='{version}')",
        *(f"INSERT INTO {table} VALUES {rows}" for rows in _REF_ROWS),
    ]
    if version >= 2:
        statements.append(f"DELETE FROM {table} WHERE id = 3")
    refspark.request(statements)
    queries = list(_REF_QUERIES)
    if version >= 3:
        queries.append("SELECT id, _row_id, _last_updated_sequence_number FROM {t} ORDER BY id")
    snapshots = refspark.rows(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at")
    queries += [f"SELECT id FROM {{t}} VERSION AS OF {s} ORDER BY id" for (s,) in snapshots]
    before = [refspark.rows(q.format(t=table)) for q in queries]

    assert _rewrite_with_icepark(warehouse / "db" / "t", version) == len(snapshots)

    # forget the snapshots (and manifest lengths) Spark has cached, then read again
    refspark.sql(f"REFRESH TABLE {table}")
    after = [refspark.rows(q.format(t=table)) for q in queries]
    assert repr(after) == repr(before)  # repr: NaN equals itself


def test_existing_file_is_not_replaced(tmp_path: Path) -> None:
    path = _path(tmp_path)
    Path(path).write_bytes(b"keep")
    with pytest.raises(FileAlreadyExistsError):
        write_manifest(FILEIO.new_output(path), SPEC, SCHEMA, format_version=2, snapshot_id=1)
    assert Path(path).read_bytes() == b"keep"


def test_unencodable_entry_aborts_the_manifest(tmp_path: Path) -> None:
    path = _path(tmp_path)
    writer = write_manifest(FILEIO.new_output(path), SPEC, SCHEMA, format_version=2, snapshot_id=1)
    writer.add(_file("ok", (None,) * 5))
    with pytest.raises(ValidationError, match="nothing was written"):
        writer.add(_file("bad", ("not an int", None, None, None, None)))
    assert not Path(path).exists()
