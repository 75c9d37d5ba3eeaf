"""Table metadata JSON: the conformance corpus (EXPECTED.md section 1), the writer's shape,
accessors, gzip, and errors that must never escape as raw library exceptions."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from icepark.errors import InvalidMetadataError, UnsupportedFormatVersionError
from icepark.spec.metadata import (
    TableMetadata,
    table_metadata_from_dict,
    table_metadata_from_json,
    table_metadata_to_dict,
    table_metadata_to_json,
)
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import (
    Operation,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
    Summary,
)
from icepark.spec.sorting import NullOrder, SortDirection
from icepark.spec.transforms import BucketTransform, IdentityTransform
from icepark.spec.types import LongType, NestedField

RESOURCES = (
    Path(__file__).parents[2]
    / ".."
    / "shared"
    / "conformance"
    / "apache-iceberg"
    / "core"
    / "src"
    / "test"
    / "resources"
)


def load(name: str) -> bytes:
    path = RESOURCES / name
    if not path.is_file():
        pytest.skip("../shared/conformance is absent")
    return path.read_bytes()


def roundtrip(md: TableMetadata) -> TableMetadata:
    text = table_metadata_to_json(md)
    back = table_metadata_from_json(text)
    assert back == md
    assert table_metadata_to_json(back) == text
    return back


XYZ = (
    NestedField(1, "x", LongType(), True),
    NestedField(2, "y", LongType(), True, doc="comment"),
    NestedField(3, "z", LongType(), True),
)


# -- conformance: LOAD -----------------------------------------------------------------------


def test_v1_valid() -> None:
    md = table_metadata_from_json(load("TableMetadataV1Valid.json"))
    assert md.format_version == 1
    assert md.table_uuid == "d20125c8-7284-442c-9aea-15fee620737c"
    assert md.location == "s3://bucket/test/location"
    assert md.last_updated_ms == 1602638573874
    assert md.last_column_id == 3
    assert md.current_schema_id == 0
    assert [s.schema_id for s in md.schemas] == [0]
    assert md.schema() == Schema(*XYZ, schema_id=0)
    assert md.schema().find_field("y").doc == "comment"
    assert md.default_spec_id == 0
    assert md.spec().spec_id == 0
    (field,) = md.spec().fields
    assert (field.name, field.source_id, field.field_id) == ("x", 1, 1000)
    assert isinstance(field.transform, IdentityTransform)
    assert md.last_partition_id == 1000
    assert [o.order_id for o in md.sort_orders] == [0]
    assert md.default_sort_order_id == 0 and md.sort_order().is_unsorted
    assert md.current_snapshot_id is None and md.current_snapshot() is None
    assert md.snapshots == ()
    assert md.refs == {}
    assert md.last_sequence_number == 0
    assert md.properties == {}
    assert md.next_row_id is None
    roundtrip(md)


def test_v2_valid() -> None:
    md = table_metadata_from_json(load("TableMetadataV2Valid.json"))
    assert md.format_version == 2
    assert md.table_uuid == "9c12d441-03fe-4693-9a96-a0705ddf69c1"
    assert md.last_sequence_number == 34
    assert md.last_updated_ms == 1602638573590
    assert md.last_column_id == 3
    assert md.current_schema_id == 1
    assert md.schema_by_id(0) == Schema(XYZ[0], schema_id=0)
    assert md.schema_by_id(0).identifier_field_ids == ()  # type: ignore[union-attr]
    assert md.schema() == Schema(*XYZ, schema_id=1, identifier_field_ids=[1, 2])
    assert md.schema_by_id(5) is None
    (field,) = md.spec().fields
    assert (field.name, field.source_id, field.field_id) == ("x", 1, 1000)
    assert md.last_partition_id == 1000
    assert md.default_sort_order_id == 3
    order = md.sort_order()
    assert order.order_id == 3
    f1, f2 = order.fields
    assert (f1.source_id, f1.direction, f1.null_order) == (
        2,
        SortDirection.ASC,
        NullOrder.NULLS_FIRST,
    )
    assert isinstance(f1.transform, IdentityTransform)
    assert (f2.source_id, f2.direction, f2.null_order) == (
        3,
        SortDirection.DESC,
        NullOrder.NULLS_LAST,
    )
    assert f2.transform == BucketTransform(4)
    assert md.current_snapshot_id == 3055729675574597004
    first, second = md.snapshots
    assert (first.snapshot_id, first.timestamp_ms, first.sequence_number) == (
        3051729675574597004,
        1515100955770,
        0,
    )
    assert first.parent_snapshot_id is None and first.manifest_list == "s3://a/b/1.avro"
    assert second.parent_snapshot_id == 3051729675574597004
    assert (second.timestamp_ms, second.sequence_number, second.schema_id) == (1555100955770, 1, 1)
    assert second.manifest_list == "s3://a/b/2.avro"
    assert first.operation is Operation.APPEND and second.operation is Operation.APPEND
    assert len(md.snapshot_log) == 2 and md.metadata_log == ()
    # no refs in the file: main is synthesised from current-snapshot-id
    assert md.refs == {"main": SnapshotRef(3055729675574597004, SnapshotRefType.BRANCH)}
    assert md.current_snapshot() == second
    assert md.snapshot_by_name("main") == second
    back = roundtrip(md)
    assert table_metadata_to_dict(back)["refs"] == {
        "main": {"snapshot-id": 3055729675574597004, "type": "branch"}
    }


def test_v2_valid_minimal() -> None:
    md = table_metadata_from_json(load("TableMetadataV2ValidMinimal.json"))
    assert md.format_version == 2
    assert md.current_schema_id == 0
    assert md.schema() == Schema(*XYZ, schema_id=0)
    assert md.default_spec_id == 0 and md.last_partition_id == 1000
    assert md.default_sort_order_id == 3
    assert md.last_sequence_number == 34
    assert md.snapshots == () and md.snapshot_log == () and md.metadata_log == ()
    assert md.properties == {}
    assert md.current_snapshot_id is None and md.refs == {}
    roundtrip(md)


def test_v3_valid_minimal() -> None:
    md = table_metadata_from_json(load("TableMetadataV3ValidMinimal.json"))
    assert md.format_version == 3
    assert md.next_row_id == 0
    x = md.schema().find_field("x")
    assert x.initial_default == 1 and x.write_default == 1
    assert md.schema().find_field("y").initial_default is None
    assert md.last_sequence_number == 34 and md.default_sort_order_id == 3
    back = roundtrip(md)
    written = table_metadata_to_dict(back)
    assert written["next-row-id"] == 0
    assert written["schemas"][0]["fields"][0]["initial-default"] == 1
    assert written["schemas"][0]["fields"][0]["write-default"] == 1


def test_statistics_files() -> None:
    md = table_metadata_from_json(load("TableMetadataStatisticsFiles.json"))
    assert md.format_version == 2
    assert len(md.snapshots) == 1 and md.current_snapshot_id == 3055729675574597004
    assert md.default_sort_order_id == 0
    (stats,) = md.statistics
    assert stats.snapshot_id == 3055729675574597004
    assert stats.statistics_path == "s3://a/b/stats.puffin"
    assert stats.file_size_in_bytes == 413 and stats.file_footer_size_in_bytes == 42
    (blob,) = stats.blob_metadata
    assert (blob.type, blob.snapshot_id, blob.sequence_number, blob.fields, blob.properties) == (
        "ndv",
        3055729675574597004,
        1,
        (1,),
        {},
    )
    assert md.statistics_for(3055729675574597004) == stats
    roundtrip(md)


def test_partition_statistics_files() -> None:
    md = table_metadata_from_json(load("TableMetadataPartitionStatisticsFiles.json"))
    (ps,) = md.partition_statistics
    assert ps.snapshot_id == 3055729675574597004
    assert ps.statistics_path == "s3://a/b/partition-stats.parquet"
    assert ps.file_size_in_bytes == 43
    assert md.partition_statistics_for(3055729675574597004) == ps
    roundtrip(md)


# -- conformance: FAIL -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        (
            "TableMetadataUnsupportedVersion.json",
            UnsupportedFormatVersionError,
            "Cannot read unsupported version 42",
        ),
        (
            "TableMetadataV1MissingSchemaType.json",
            InvalidMetadataError,
            "Cannot parse type from json",
        ),
        (
            "TableMetadataV2CurrentSchemaNotFound.json",
            InvalidMetadataError,
            "Cannot find schema with current-schema-id=2 from schemas",
        ),
        (
            "TableMetadataV2MissingLastPartitionId.json",
            InvalidMetadataError,
            "last-partition-id must exist in format v2",
        ),
        (
            "TableMetadataV2MissingPartitionSpecs.json",
            InvalidMetadataError,
            "partition-specs must exist in format v2",
        ),
        (
            "TableMetadataV2MissingSchemas.json",
            InvalidMetadataError,
            "schemas must exist in format v2",
        ),
        (
            "TableMetadataV2MissingSortOrder.json",
            InvalidMetadataError,
            "sort-orders must exist in format v2",
        ),
    ],
)
def test_conformance_failures(name: str, error: type[Exception], message: str) -> None:
    data = load(name)
    with pytest.raises(error, match=message):
        table_metadata_from_json(data)
    # gzip-compressed input fails the same way
    with pytest.raises(error, match=message):
        table_metadata_from_json(gzip.compress(data))


# -- writer shape ----------------------------------------------------------------------------


def test_v1_writes_legacy_fields_v2_does_not() -> None:
    v1 = table_metadata_to_dict(table_metadata_from_json(load("TableMetadataV1Valid.json")))
    assert v1["schema"]["fields"][0]["name"] == "x"
    assert v1["partition-spec"] == [
        {"name": "x", "transform": "identity", "source-id": 1, "field-id": 1000}
    ]
    assert "last-sequence-number" not in v1
    assert "next-row-id" not in v1
    assert v1["current-snapshot-id"] == -1
    assert v1["statistics"] == [] and v1["partition-statistics"] == []
    assert v1["refs"] == {}
    v2 = table_metadata_to_dict(table_metadata_from_json(load("TableMetadataV2Valid.json")))
    assert "schema" not in v2 and "partition-spec" not in v2
    assert v2["last-sequence-number"] == 34
    assert list(v2)[:6] == [
        "format-version",
        "table-uuid",
        "location",
        "last-sequence-number",
        "last-updated-ms",
        "last-column-id",
    ]
    assert v2["statistics"] == [] and v2["partition-statistics"] == []
    assert "next-row-id" not in v2


def test_indent_and_compact_output_parse_the_same() -> None:
    md = table_metadata_from_json(load("TableMetadataV2Valid.json"))
    pretty = table_metadata_to_json(md, indent=2)
    assert "\n" in pretty
    assert "\n" not in table_metadata_to_json(md)
    assert table_metadata_from_json(pretty) == md


# -- gzip and garbage ------------------------------------------------------------------------


def test_gzip_roundtrip() -> None:
    md = table_metadata_from_json(load("TableMetadataV2Valid.json"))
    packed = gzip.compress(table_metadata_to_json(md).encode())
    assert packed[:2] == b"\x1f\x8b"
    assert table_metadata_from_json(packed) == md
    assert table_metadata_from_json(bytearray(packed)) == md
    assert table_metadata_from_json(memoryview(packed)) == md
    assert table_metadata_from_json(load("TableMetadataV2Valid.json")) == md


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b"[1, 2]",
        b"null",
        b"\xff\xfe\x00garbage",
        b"\x1f\x8b\x08\x00truncated",
        '{"format-version": 2',
        "42",
    ],
)
def test_garbage_is_invalid_metadata(data: str | bytes) -> None:
    with pytest.raises(InvalidMetadataError):
        table_metadata_from_json(data)


def test_truncated_gzip_and_json() -> None:
    raw = load("TableMetadataV2Valid.json")
    packed = gzip.compress(raw)
    for cut in (3, len(packed) // 2, len(packed) - 4):
        with pytest.raises(InvalidMetadataError):
            table_metadata_from_json(packed[:cut])
    for cut in (1, len(raw) // 3, len(raw) - 2):
        with pytest.raises(InvalidMetadataError):
            table_metadata_from_json(raw[:cut])


def _v2() -> dict[str, Any]:
    return json.loads(load("TableMetadataV2Valid.json"))


def _without(key: str) -> dict[str, Any]:
    obj = _v2()
    del obj[key]
    return obj


def _with(**changes: Any) -> dict[str, Any]:
    obj = _v2()
    for key, value in changes.items():
        obj[key.replace("_", "-")] = value
    return obj


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (_without("format-version"), "Cannot parse missing int: format-version"),
        (_with(format_version="2"), "format-version"),
        (_with(format_version=0), "format version"),
        (_without("table-uuid"), "UUID is required in format v2"),
        (_without("location"), "Cannot parse missing string: location"),
        (_without("last-sequence-number"), "last-sequence-number"),
        (_without("last-updated-ms"), "last-updated-ms"),
        (_without("last-column-id"), "last-column-id"),
        (_without("current-schema-id"), "current-schema-id"),
        (_without("default-spec-id"), "default-spec-id"),
        (_without("default-sort-order-id"), "default-sort-order-id"),
        (_with(schemas={"a": 1}), "schemas"),
        (_with(schemas=[{"type": "struct", "schema-id": 1, "fields": [{"id": 1}]}]), "field"),
        (_with(default_spec_id=7), "default-spec-id=7"),
        (_with(default_sort_order_id=7), "default-sort-order-id=7"),
        (_with(partition_specs=[{"spec-id": 0, "fields": [{"name": "x"}]}]), "partition field"),
        (_with(sort_orders=[{"order-id": 3, "fields": [{"transform": "identity"}]}]), "sort field"),
        (
            _with(
                partition_specs=[
                    {
                        "spec-id": 0,
                        "fields": [
                            {
                                "name": "x",
                                "transform": "identity",
                                "source-id": "1",
                                "field-id": 1000,
                            }
                        ],
                    }
                ]
            ),
            "partition field",
        ),
        (_with(partition_specs=[{"spec-id": "0", "fields": []}]), "partition spec id"),
        (
            _with(
                sort_orders=[
                    {
                        "order-id": 3,
                        "fields": [
                            {
                                "transform": "identity",
                                "source-id": "2",
                                "direction": "asc",
                                "null-order": "nulls-first",
                            }
                        ],
                    }
                ]
            ),
            "sort field",
        ),
        (
            _with(
                sort_orders=[
                    {
                        "order-id": 3,
                        "fields": [
                            {
                                "transform": "identity",
                                "source-id": 2,
                                "direction": "up",
                                "null-order": "nulls-first",
                            }
                        ],
                    }
                ]
            ),
            "sort field",
        ),
        (_with(properties={"a": 1}), "Cannot parse to a string value: a"),
        (_with(properties=[]), "properties"),
        (_with(current_snapshot_id=5), "Cannot find current snapshot 5"),
        (_with(snapshots={}), "snapshots"),
        (_with(snapshots=[{"snapshot-id": 1}]), "timestamp-ms"),
        (_with(last_sequence_number=0), "greater than last sequence number 0"),
        (_with(refs={"b": {"snapshot-id": 9, "type": "branch"}}), "reference b"),
        (
            _with(refs={"main": {"snapshot-id": 3051729675574597004, "type": "branch"}}),
            "does not match main branch",
        ),
        (
            _with(refs={"main": {"snapshot-id": 3055729675574597004, "type": "tag"}}),
            "main must be a branch",
        ),
        (
            _with(
                current_snapshot_id=-1,
                refs={"main": {"snapshot-id": 3055729675574597004, "type": "branch"}},
            ),
            "Current snapshot is not set, but main branch exists",
        ),
        (_with(refs=[]), "refs"),
        (_with(statistics=[{"snapshot-id": 1}]), "statistics-path"),
        (_with(snapshot_log=[{"snapshot-id": 1}]), "timestamp-ms"),
        (_with(metadata_log=[{"timestamp-ms": 1}]), "metadata-file"),
        (_with(schemas=[{"type": "struct", "schema-id": 1, "fields": []}] * 2), "Duplicate schema"),
    ],
)
def test_invalid_documents(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidMetadataError, match=message):
        table_metadata_from_dict(obj)
    with pytest.raises(InvalidMetadataError, match=message):
        table_metadata_from_json(json.dumps(obj))


def test_non_object_document() -> None:
    with pytest.raises(InvalidMetadataError, match="non-object"):
        table_metadata_from_dict([1])


# -- lenient reading -------------------------------------------------------------------------


def test_v1_without_uuid_gets_one_and_keeps_it() -> None:
    obj = json.loads(load("TableMetadataV1Valid.json"))
    del obj["table-uuid"]
    md = table_metadata_from_dict(obj)
    assert len(md.table_uuid) == 36
    assert roundtrip(md).table_uuid == md.table_uuid


def test_v1_legacy_spec_without_field_ids() -> None:
    obj = json.loads(load("TableMetadataV1Valid.json"))
    obj["partition-spec"] = [
        {"name": "x", "transform": "identity", "source-id": 1},
        {"name": "y_bucket", "transform": "bucket[8]", "source-id": 2},
    ]
    md = table_metadata_from_dict(obj)
    assert [f.field_id for f in md.spec().fields] == [1000, 1001]
    assert md.last_partition_id == 1001
    obj["partition-spec"] = []
    md = table_metadata_from_dict(obj)
    assert md.spec().fields == () and md.last_partition_id == 999


def test_v1_prefers_schemas_and_specs_over_legacy_fields() -> None:
    obj = json.loads(load("TableMetadataV1Valid.json"))
    obj["schemas"] = [{"type": "struct", "schema-id": 4, "fields": []}, obj["schema"]]
    obj["current-schema-id"] = 4
    obj["partition-specs"] = [{"spec-id": 2, "fields": []}]
    obj["default-spec-id"] = 2
    md = table_metadata_from_dict(obj)
    assert md.current_schema_id == 4 and len(md.schemas) == 2
    assert md.default_spec_id == 2 and md.spec().fields == ()
    roundtrip(md)


def test_unknown_transforms_are_read_and_kept() -> None:
    obj = _v2()
    obj["partition-specs"][0]["fields"][0]["transform"] = "zorder[3]"
    obj["sort-orders"][0]["fields"][0]["transform"] = "hilbert"
    md = table_metadata_from_dict(obj)
    assert str(md.spec().fields[0].transform) == "zorder[3]"
    written = table_metadata_to_dict(roundtrip(md))
    assert written["partition-specs"][0]["fields"][0]["transform"] == "zorder[3]"
    assert written["sort-orders"][0]["fields"][0]["transform"] == "hilbert"


def test_refs_without_main_and_missing_optional_fields() -> None:
    obj = _v2()
    obj["refs"] = {"tag1": {"snapshot-id": 3051729675574597004, "type": "tag"}}
    md = table_metadata_from_dict(obj)
    assert set(md.refs) == {"tag1", "main"}
    assert md.snapshot_by_name("tag1") == md.snapshots[0]
    assert md.snapshot_by_name("nope") is None

    # optional fields may be absent
    for keys in (
        ["properties"],
        ["snapshot-log"],
        ["metadata-log"],
        ["current-snapshot-id"],
        ["current-snapshot-id", "snapshots", "snapshot-log"],
    ):
        obj = _v2()
        for key in keys:
            del obj[key]
        md = table_metadata_from_dict(obj)
        if "current-snapshot-id" in keys:
            assert md.current_snapshot_id is None and md.refs == {}


def test_v3_next_row_id_defaults_to_zero() -> None:
    obj = json.loads(load("TableMetadataV3ValidMinimal.json"))
    del obj["next-row-id"]
    assert table_metadata_from_dict(obj).next_row_id == 0
    obj["next-row-id"] = 77
    assert table_metadata_from_dict(obj).next_row_id == 77


def test_location_trailing_slash_stripped() -> None:
    md = table_metadata_from_dict(_with(location="s3://bucket/t/"))
    assert md.location == "s3://bucket/t"


# -- accessors -------------------------------------------------------------------------------


def _history_metadata() -> TableMetadata:
    snaps = (
        Snapshot(1, None, 1, 100, "m1", Summary(Operation.APPEND)),
        Snapshot(2, 1, 2, 200, "m2", Summary(Operation.APPEND)),
        Snapshot(3, 2, 3, 300, "m3", Summary(Operation.DELETE)),
        Snapshot(4, 1, 4, 400, "m4", Summary(Operation.OVERWRITE)),
    )
    return TableMetadata(
        format_version=2,
        table_uuid="9c12d441-03fe-4693-9a96-a0705ddf69c1",
        location="s3://b/t",
        last_sequence_number=4,
        last_updated_ms=500,
        last_column_id=3,
        schemas=(Schema(*XYZ, schema_id=0),),
        current_schema_id=0,
        partition_specs=(PartitionSpec(0, ()),),
        default_spec_id=0,
        last_partition_id=999,
        properties={"commit.retry.num-retries": "4"},
        current_snapshot_id=3,
        snapshots=snaps,
        snapshot_log=(SnapshotLogEntry(1, 100), SnapshotLogEntry(2, 200), SnapshotLogEntry(3, 300)),
        refs={"audit": SnapshotRef(4), "v1": SnapshotRef(1, SnapshotRefType.TAG)},
    )


def test_accessors() -> None:
    md = _history_metadata()
    assert md.refs["main"] == SnapshotRef(3)
    assert md.current_snapshot().snapshot_id == 3  # type: ignore[union-attr]
    assert md.snapshot_by_id(2).timestamp_ms == 200  # type: ignore[union-attr]
    assert md.snapshot_by_id(9) is None
    assert md.snapshot_by_name("audit").snapshot_id == 4  # type: ignore[union-attr]
    assert md.snapshot_by_name("v1").snapshot_id == 1  # type: ignore[union-attr]
    assert md.snapshot_as_of(99) is None
    assert md.snapshot_as_of(100).snapshot_id == 1  # type: ignore[union-attr]
    assert md.snapshot_as_of(250).snapshot_id == 2  # type: ignore[union-attr]
    assert md.snapshot_as_of(10**12).snapshot_id == 3  # type: ignore[union-attr]
    assert [s.snapshot_id for s in md.ancestors_of(3)] == [3, 2, 1]
    assert [s.snapshot_id for s in md.ancestors_of(4)] == [4, 1]
    assert md.ancestors_of(42) == [] and md.ancestors_of(None) == []
    assert md.property("commit.retry.num-retries") == "4"
    assert md.property("missing") is None and md.property("missing", "d") == "d"
    assert md.specs() == {0: PartitionSpec(0, ())}
    assert md.spec_by_id(0) == PartitionSpec(0, ()) and md.spec_by_id(1) is None
    assert md.sort_order_by_id(0) is not None and md.sort_order_by_id(1) is None
    assert md.next_sequence_number() == 5
    assert md.schemas_by_id() == {0: md.schema()}
    assert md.ref("audit") == SnapshotRef(4) and md.ref("x") is None
    roundtrip(md)
    # equal metadata hash equally (dict fields are left out of the hash)
    assert hash(md) == hash(copy.deepcopy(md))


def test_constructor_normalises() -> None:
    md = _history_metadata()
    assert isinstance(md.snapshots, tuple)
    v1 = TableMetadata(
        format_version=1,
        table_uuid="9c12d441-03fe-4693-9a96-a0705ddf69c1",
        location="s3://b/t///",
        last_updated_ms=1,
        last_column_id=3,
        schemas=[Schema(*XYZ)],  # type: ignore[arg-type]
        current_schema_id=0,
        partition_specs=[PartitionSpec()],  # type: ignore[arg-type]
        default_spec_id=0,
        last_partition_id=999,
        current_snapshot_id=-1,
        next_row_id=5,
    )
    assert v1.location == "s3://b/t"
    assert v1.current_snapshot_id is None and v1.next_row_id is None
    assert v1.next_sequence_number() == 0
    assert isinstance(v1.schemas, tuple)
    with pytest.raises(InvalidMetadataError, match="Sequence number must be 0 in v1"):
        TableMetadata(**{**_fields(v1), "last_sequence_number": 3})
    with pytest.raises(UnsupportedFormatVersionError):
        TableMetadata(**{**_fields(v1), "format_version": 4})


def _fields(md: TableMetadata) -> dict[str, Any]:
    return {name: getattr(md, name) for name in md.__dataclass_fields__}


def test_decimals_are_written_as_java_writes_them() -> None:
    """``decimal(P, S)`` with a space after the comma, as Java's ``Types.DecimalType`` and
    PyIceberg write it; either form (and extra spaces) is read."""
    from icepark.spec.types import DecimalType, parse_primitive_type, type_to_json

    assert type_to_json(DecimalType(5, 2)) == "decimal(5, 2)"
    for text in ("decimal(5, 2)", "decimal(5,2)", "decimal( 5 ,2 )"):
        assert parse_primitive_type(text) == DecimalType(5, 2)
