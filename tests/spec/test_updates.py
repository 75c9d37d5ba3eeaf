"""REST TableUpdate / TableRequirement JSON shapes, round trips, parse errors and validation."""

from __future__ import annotations

from typing import Any

import pytest

from icepark.errors import InvalidMetadataError, RequirementFailedError
from icepark.spec.builder import MetadataBuilder
from icepark.spec.metadata import TableMetadata
from icepark.spec.new_table import new_table_metadata
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import (
    Operation,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotRef,
    SnapshotRefType,
    StatisticsFile,
    Summary,
)
from icepark.spec.sorting import NullOrder, SortDirection, SortField, SortOrder
from icepark.spec.transforms import BucketTransform, IdentityTransform
from icepark.spec.types import LongType, NestedField, StringType
from icepark.spec.updates import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSnapshotUpdate,
    AddSortOrderUpdate,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    AssignUUIDUpdate,
    RemovePartitionSpecsUpdate,
    RemovePartitionStatisticsUpdate,
    RemovePropertiesUpdate,
    RemoveSchemasUpdate,
    RemoveSnapshotRefUpdate,
    RemoveSnapshotsUpdate,
    RemoveStatisticsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetLocationUpdate,
    SetPartitionStatisticsUpdate,
    SetPropertiesUpdate,
    SetSnapshotRefUpdate,
    SetStatisticsUpdate,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersionUpdate,
    table_requirement_from_json,
    table_update_from_json,
)

UUID = "9c12d441-03fe-4693-9a96-a0705ddf69c1"
SCHEMA = Schema(
    NestedField(1, "id", LongType(), True), NestedField(2, "data", StringType()), schema_id=3
)
SPEC = PartitionSpec(1, (PartitionField(1, 1000, BucketTransform(16), "id_bucket"),))
ORDER = SortOrder(2, (SortField(2, IdentityTransform(), SortDirection.DESC, NullOrder.NULLS_LAST),))
SNAPSHOT = Snapshot(7, 6, 3, 1000, "s3://a/snap.avro", Summary(Operation.APPEND, {"a": "1"}), 3)

UPDATES: list[tuple[TableUpdate, dict[str, Any]]] = [
    (AssignUUIDUpdate(UUID), {"action": "assign-uuid", "uuid": UUID}),
    (UpgradeFormatVersionUpdate(3), {"action": "upgrade-format-version", "format-version": 3}),
    (
        AddSchemaUpdate(SCHEMA, 2),
        {
            "action": "add-schema",
            "schema": {
                "type": "struct",
                "schema-id": 3,
                "fields": [
                    {"id": 1, "name": "id", "required": True, "type": "long"},
                    {"id": 2, "name": "data", "required": False, "type": "string"},
                ],
            },
            "last-column-id": 2,
        },
    ),
    (
        AddSchemaUpdate(SCHEMA),
        {
            "action": "add-schema",
            "schema": {
                "type": "struct",
                "schema-id": 3,
                "fields": [
                    {"id": 1, "name": "id", "required": True, "type": "long"},
                    {"id": 2, "name": "data", "required": False, "type": "string"},
                ],
            },
        },
    ),
    (SetCurrentSchemaUpdate(-1), {"action": "set-current-schema", "schema-id": -1}),
    (
        AddPartitionSpecUpdate(SPEC),
        {
            "action": "add-spec",
            "spec": {
                "spec-id": 1,
                "fields": [
                    {
                        "name": "id_bucket",
                        "transform": "bucket[16]",
                        "source-id": 1,
                        "field-id": 1000,
                    }
                ],
            },
        },
    ),
    (SetDefaultSpecUpdate(1), {"action": "set-default-spec", "spec-id": 1}),
    (
        AddSortOrderUpdate(ORDER),
        {
            "action": "add-sort-order",
            "sort-order": {
                "order-id": 2,
                "fields": [
                    {
                        "transform": "identity",
                        "source-id": 2,
                        "direction": "desc",
                        "null-order": "nulls-last",
                    }
                ],
            },
        },
    ),
    (SetDefaultSortOrderUpdate(-1), {"action": "set-default-sort-order", "sort-order-id": -1}),
    (
        AddSnapshotUpdate(SNAPSHOT),
        {
            "action": "add-snapshot",
            "snapshot": {
                "sequence-number": 3,
                "snapshot-id": 7,
                "parent-snapshot-id": 6,
                "timestamp-ms": 1000,
                "summary": {"operation": "append", "a": "1"},
                "manifest-list": "s3://a/snap.avro",
                "schema-id": 3,
            },
        },
    ),
    (
        SetSnapshotRefUpdate("main", 7),
        {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 7, "type": "branch"},
    ),
    (
        SetSnapshotRefUpdate("b", 7, SnapshotRefType.BRANCH, 2, 3, 4),
        {
            "action": "set-snapshot-ref",
            "ref-name": "b",
            "snapshot-id": 7,
            "type": "branch",
            "min-snapshots-to-keep": 2,
            "max-snapshot-age-ms": 3,
            "max-ref-age-ms": 4,
        },
    ),
    (
        SetSnapshotRefUpdate("t", 7, SnapshotRefType.TAG, max_ref_age_ms=9),
        {
            "action": "set-snapshot-ref",
            "ref-name": "t",
            "snapshot-id": 7,
            "type": "tag",
            "max-ref-age-ms": 9,
        },
    ),
    (RemoveSnapshotsUpdate((7, 8)), {"action": "remove-snapshots", "snapshot-ids": [7, 8]}),
    (RemoveSnapshotRefUpdate("t"), {"action": "remove-snapshot-ref", "ref-name": "t"}),
    (SetLocationUpdate("s3://x"), {"action": "set-location", "location": "s3://x"}),
    (SetPropertiesUpdate({"a": "b"}), {"action": "set-properties", "updates": {"a": "b"}}),
    (RemovePropertiesUpdate(("a",)), {"action": "remove-properties", "removals": ["a"]}),
    (
        SetStatisticsUpdate(StatisticsFile(7, "s.puffin", 10, 2)),
        {
            "action": "set-statistics",
            "snapshot-id": 7,
            "statistics": {
                "snapshot-id": 7,
                "statistics-path": "s.puffin",
                "file-size-in-bytes": 10,
                "file-footer-size-in-bytes": 2,
                "blob-metadata": [],
            },
        },
    ),
    (RemoveStatisticsUpdate(7), {"action": "remove-statistics", "snapshot-id": 7}),
    (
        SetPartitionStatisticsUpdate(PartitionStatisticsFile(7, "p.parquet", 5)),
        {
            "action": "set-partition-statistics",
            "partition-statistics": {
                "snapshot-id": 7,
                "statistics-path": "p.parquet",
                "file-size-in-bytes": 5,
            },
        },
    ),
    (
        RemovePartitionStatisticsUpdate(7),
        {"action": "remove-partition-statistics", "snapshot-id": 7},
    ),
    (RemovePartitionSpecsUpdate((1, 2)), {"action": "remove-partition-specs", "spec-ids": [1, 2]}),
    (RemoveSchemasUpdate((0,)), {"action": "remove-schemas", "schema-ids": [0]}),
]


@pytest.mark.parametrize(("update", "expected"), UPDATES, ids=lambda x: getattr(x, "action", ""))
def test_update_json(update: TableUpdate, expected: dict[str, Any]) -> None:
    assert update.to_json() == expected
    assert TableUpdate.from_json(expected) == update
    assert table_update_from_json(expected) == update
    assert type(update).from_json(expected) == update


def test_every_rest_action_is_covered() -> None:
    assert {u.action for u, _ in UPDATES} == {
        "assign-uuid",
        "upgrade-format-version",
        "add-schema",
        "set-current-schema",
        "add-spec",
        "set-default-spec",
        "add-sort-order",
        "set-default-sort-order",
        "add-snapshot",
        "set-snapshot-ref",
        "remove-snapshots",
        "remove-snapshot-ref",
        "set-location",
        "set-properties",
        "remove-properties",
        "set-statistics",
        "remove-statistics",
        "set-partition-statistics",
        "remove-partition-statistics",
        "remove-partition-specs",
        "remove-schemas",
    }


def test_set_snapshot_ref_update_ref() -> None:
    u = SetSnapshotRefUpdate.of("b", SnapshotRef(5, SnapshotRefType.BRANCH, 1, 2, 3))
    assert u.ref == SnapshotRef(5, SnapshotRefType.BRANCH, 1, 2, 3)
    assert u.ref_name == "b"


def test_set_statistics_reads_without_deprecated_snapshot_id() -> None:
    obj = {"action": "set-statistics", "statistics": StatisticsFile(7, "s", 1, 1).to_json()}
    assert TableUpdate.from_json(obj) == SetStatisticsUpdate(StatisticsFile(7, "s", 1, 1))


def test_add_spec_without_field_ids_assigns_from_1000() -> None:
    obj = {
        "action": "add-spec",
        "spec": {
            "fields": [
                {"name": "a", "transform": "identity", "source-id": 1},
                {"name": "b", "transform": "void", "source-id": 2},
            ]
        },
    }
    update = TableUpdate.from_json(obj)
    assert isinstance(update, AddPartitionSpecUpdate)
    assert [f.field_id for f in update.spec.fields] == [1000, 1001]


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"action": "explode"}, "unknown action 'explode'"),
        ({"uuid": UUID}, "Cannot parse missing string: action"),
        ([], "non-object"),
        ({"action": "assign-uuid"}, "uuid"),
        ({"action": "upgrade-format-version", "format-version": "3"}, "format-version"),
        ({"action": "add-schema", "schema": {"fields": []}}, "Cannot parse type from json"),
        ({"action": "add-schema"}, "schema"),
        ({"action": "set-current-schema"}, "schema-id"),
        ({"action": "add-spec", "spec": {"fields": [{"name": "a"}]}}, "partition field"),
        (
            {
                "action": "add-spec",
                "spec": {
                    "spec-id": 0,
                    "fields": [{"name": "a", "transform": "zz", "source-id": 1}],
                },
            },
            None,
        ),
        ({"action": "add-sort-order", "sort-order": {"fields": []}}, "sort order"),
        ({"action": "add-snapshot", "snapshot": {"snapshot-id": 1}}, "timestamp-ms"),
        ({"action": "set-snapshot-ref", "snapshot-id": 1, "type": "branch"}, "ref-name"),
        (
            {"action": "set-snapshot-ref", "ref-name": "a", "snapshot-id": 1, "type": "x"},
            "Invalid snapshot ref type",
        ),
        ({"action": "remove-snapshots", "snapshot-ids": ["1"]}, "snapshot-ids"),
        ({"action": "set-properties", "updates": {"a": 1}}, "string"),
        ({"action": "remove-properties", "removals": "a"}, "removals"),
        ({"action": "set-statistics"}, "statistics"),
        ({"action": "remove-statistics"}, "snapshot-id"),
        ({"action": "set-partition-statistics", "partition-statistics": {}}, "snapshot-id"),
        ({"action": "remove-partition-specs", "spec-ids": [1.5]}, "spec-ids"),
        ({"action": "remove-schemas"}, "schema-ids"),
    ],
)
def test_update_parse_errors(obj: Any, message: str | None) -> None:
    if message is None:  # an unknown transform is kept (readers must tolerate it)
        TableUpdate.from_json(obj)
        return
    with pytest.raises(InvalidMetadataError, match=message):
        TableUpdate.from_json(obj)


def test_subclass_from_json_checks_the_action() -> None:
    with pytest.raises(InvalidMetadataError, match="Expected a assign-uuid update"):
        AssignUUIDUpdate.from_json({"action": "set-location", "location": "x"})
    with pytest.raises(InvalidMetadataError, match="Expected a assert-create requirement"):
        AssertCreate.from_json({"type": "assert-table-uuid", "uuid": UUID})


# -- requirements ----------------------------------------------------------------------------

REQUIREMENTS: list[tuple[TableRequirement, dict[str, Any]]] = [
    (AssertCreate(), {"type": "assert-create"}),
    (AssertTableUUID(UUID), {"type": "assert-table-uuid", "uuid": UUID}),
    (
        AssertRefSnapshotId("main", 5),
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 5},
    ),
    (
        AssertRefSnapshotId("b", None),
        {"type": "assert-ref-snapshot-id", "ref": "b", "snapshot-id": None},
    ),
    (
        AssertLastAssignedFieldId(3),
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 3},
    ),
    (AssertCurrentSchemaId(1), {"type": "assert-current-schema-id", "current-schema-id": 1}),
    (
        AssertLastAssignedPartitionId(1000),
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1000},
    ),
    (AssertDefaultSpecId(0), {"type": "assert-default-spec-id", "default-spec-id": 0}),
    (
        AssertDefaultSortOrderId(1),
        {"type": "assert-default-sort-order-id", "default-sort-order-id": 1},
    ),
]


@pytest.mark.parametrize(("req", "expected"), REQUIREMENTS, ids=lambda x: getattr(x, "type", ""))
def test_requirement_json(req: TableRequirement, expected: dict[str, Any]) -> None:
    assert req.to_json() == expected
    assert TableRequirement.from_json(expected) == req
    assert table_requirement_from_json(expected) == req


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"type": "assert-nothing"}, "unknown type"),
        ({"type": "assert-table-uuid"}, "uuid"),
        ({"type": "assert-ref-snapshot-id", "ref": "main"}, "snapshot-id"),
        ({"type": "assert-ref-snapshot-id", "snapshot-id": 1}, "ref"),
        ({"type": "assert-current-schema-id", "current-schema-id": None}, "current-schema-id"),
        ({"ref": "main"}, "type"),
    ],
)
def test_requirement_parse_errors(obj: Any, message: str) -> None:
    with pytest.raises(InvalidMetadataError, match=message):
        TableRequirement.from_json(obj)


@pytest.fixture(scope="module")
def table() -> TableMetadata:
    schema = Schema(NestedField(1, "id", LongType(), True))
    spec = PartitionSpec(0, (PartitionField(1, 1000, IdentityTransform(), "id"),))
    md = new_table_metadata(schema, spec, None, "s3://b/t", {}, table_uuid=UUID)
    return (
        MetadataBuilder(md)
        .add_snapshot(Snapshot(1, None, 1, 10, "m", Summary(Operation.APPEND)))
        .add_snapshot(Snapshot(2, 1, 2, 20, "m", Summary(Operation.APPEND)))
        .set_branch_snapshot(2)
        .set_ref("tag", SnapshotRef(1, SnapshotRefType.TAG))
        .build()
    )


def test_requirements_that_hold(table: TableMetadata) -> None:
    for req in [
        AssertTableUUID(UUID),
        AssertTableUUID(UUID.upper()),
        AssertRefSnapshotId("main", 2),
        AssertRefSnapshotId("tag", 1),
        AssertRefSnapshotId("new-branch", None),
        AssertLastAssignedFieldId(1),
        AssertCurrentSchemaId(0),
        AssertLastAssignedPartitionId(1000),
        AssertDefaultSpecId(0),
        AssertDefaultSortOrderId(0),
    ]:
        req.validate(table)
    AssertCreate().validate(None)
    AssertRefSnapshotId("main", None).validate(None)
    AssertLastAssignedFieldId(9).validate(None)
    AssertLastAssignedPartitionId(9).validate(None)


@pytest.mark.parametrize(
    ("req", "message"),
    [
        (AssertCreate(), "Requirement failed: table already exists"),
        (
            AssertTableUUID("d20125c8-7284-442c-9aea-15fee620737c"),
            "Requirement failed: UUID does not match",
        ),
        (
            AssertRefSnapshotId("main", 1),
            "Requirement failed: branch main has changed: expected id 1 != 2",
        ),
        (
            AssertRefSnapshotId("tag", 2),
            "Requirement failed: tag tag has changed: expected id 2 != 1",
        ),
        (
            AssertRefSnapshotId("main", None),
            "Requirement failed: branch main was created concurrently",
        ),
        (
            AssertRefSnapshotId("gone", 3),
            "Requirement failed: branch or tag gone is missing, expected 3",
        ),
        (
            AssertLastAssignedFieldId(5),
            "Requirement failed: last assigned field id changed: expected id 5 != 1",
        ),
        (
            AssertCurrentSchemaId(3),
            "Requirement failed: current schema changed: expected id 3 != 0",
        ),
        (
            AssertLastAssignedPartitionId(1001),
            "Requirement failed: last assigned partition id changed: expected id 1001 != 1000",
        ),
        (
            AssertDefaultSpecId(1),
            "Requirement failed: default partition spec changed: expected id 1 != 0",
        ),
        (
            AssertDefaultSortOrderId(2),
            "Requirement failed: default sort order changed: expected id 2 != 0",
        ),
    ],
)
def test_requirements_that_fail(table: TableMetadata, req: TableRequirement, message: str) -> None:
    with pytest.raises(RequirementFailedError, match=message):
        req.validate(table)


@pytest.mark.parametrize(
    "req",
    [
        AssertTableUUID(UUID),
        AssertCurrentSchemaId(0),
        AssertDefaultSpecId(0),
        AssertDefaultSortOrderId(0),
        AssertRefSnapshotId("main", 1),
    ],
)
def test_requirements_on_a_missing_table(req: TableRequirement) -> None:
    with pytest.raises(RequirementFailedError, match="Requirement failed"):
        req.validate(None)
