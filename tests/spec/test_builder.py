"""MetadataBuilder and new_table_metadata: every update, its bookkeeping and its failures."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import icepark.spec.builder as builder_module
from icepark.errors import InvalidTransformError, ValidationError
from icepark.spec.builder import MetadataBuilder
from icepark.spec.metadata import TableMetadata, table_metadata_from_json, table_metadata_to_json
from icepark.spec.new_table import creation_updates, new_table_metadata
from icepark.spec.partitioning import PartitionField, PartitionSpec, build_partition_spec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import (
    MAIN_BRANCH,
    Operation,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
    StatisticsFile,
    Summary,
)
from icepark.spec.sorting import UNSORTED_ORDER, SortOrder, build_sort_order
from icepark.spec.transforms import DayTransform, IdentityTransform, VoidTransform
from icepark.spec.types import (
    BooleanType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestamptzType,
    UnknownType,
)
from icepark.spec.updates import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSnapshotUpdate,
    AddSortOrderUpdate,
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
    TableUpdate,
    UpgradeFormatVersionUpdate,
)

UUID = "9c12d441-03fe-4693-9a96-a0705ddf69c1"
NOW = 1_700_000_000_000


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(builder_module, "_now_ms", lambda: NOW)
    yield


def user_schema() -> Schema:
    # deliberately odd ids: new_table_metadata must renumber them
    return Schema(
        NestedField(10, "id", LongType(), True),
        NestedField(20, "data", StringType()),
        NestedField(30, "ts", TimestamptzType()),
        NestedField(40, "tags", ListType(41, StringType(), False)),
        NestedField(50, "loc", StructType(NestedField(51, "city", StringType()))),
        identifier_field_ids=[10],
    )


def new_table(version: int = 2, **props: str) -> TableMetadata:
    schema = user_schema()
    spec = build_partition_spec(schema, ["day(ts)", "bucket(8, id)"])
    order = build_sort_order(schema, ["id desc", "loc.city"])
    return new_table_metadata(
        schema, spec, order, "s3://bucket/db/t/", {**props}, format_version=version, table_uuid=UUID
    )


def snap(
    sid: int, seq: int, parent: int | None = None, ts: int = NOW - 10, **kw: int | None
) -> Snapshot:
    return Snapshot(
        sid,
        parent,
        seq,
        ts,
        f"s3://bucket/db/t/metadata/snap-{sid}.avro",
        Summary(Operation.APPEND),
        0,
        **kw,
    )  # type: ignore[arg-type]


# -- new tables ------------------------------------------------------------------------------


def test_new_table_metadata_assigns_fresh_ids() -> None:
    md = new_table()
    schema = md.schema()
    assert md.format_version == 2 and md.table_uuid == UUID
    assert md.location == "s3://bucket/db/t"
    assert schema.schema_id == 0 and md.current_schema_id == 0
    # breadth first: top-level fields 1..5, then nested ids
    assert [f.field_id for f in schema.fields] == [1, 2, 3, 4, 5]
    assert schema.find_field_id("tags.element") == 6
    assert schema.find_field_id("loc.city") == 7
    assert schema.identifier_field_ids == (1,)
    assert md.last_column_id == 7
    spec = md.spec()
    assert spec.spec_id == 0 and md.default_spec_id == 0
    assert [(f.source_id, f.field_id, f.name, str(f.transform)) for f in spec.fields] == [
        (3, 1000, "ts_day", "day"),
        (1, 1001, "id_bucket", "bucket[8]"),
    ]
    assert md.last_partition_id == 1001
    order = md.sort_order()
    assert order.order_id == 1 and md.default_sort_order_id == 1
    assert [f.source_id for f in order.fields] == [1, 7]
    assert md.snapshots == () and md.current_snapshot_id is None
    assert md.last_sequence_number == 0
    assert md.last_updated_ms == NOW
    assert md.properties == {}
    assert table_metadata_from_json(table_metadata_to_json(md)) == md


def test_new_table_unpartitioned_unsorted_and_properties() -> None:
    md = new_table_metadata(
        user_schema(),
        None,
        None,
        "file:/tmp/t",
        {"format-version": "3", "uuid": "x", "owner": "me"},
    )
    assert md.format_version == 3 and md.next_row_id == 0
    assert md.properties == {"owner": "me"}
    assert md.spec().fields == () and md.last_partition_id == 999
    assert md.sort_order() == UNSORTED_ORDER and md.default_sort_order_id == 0
    assert len(md.table_uuid) == 36
    v1 = new_table(1)
    assert v1.format_version == 1
    assert [f.field_id for f in v1.spec().fields] == [1000, 1001]


def test_new_table_rejects_bad_versions_and_types() -> None:
    with pytest.raises(ValidationError, match="Invalid table property format-version"):
        new_table_metadata(user_schema(), None, None, "s3://b/t", {"format-version": "two"})
    with pytest.raises(ValidationError, match="Unsupported format version: v4"):
        new_table_metadata(user_schema(), None, None, "s3://b/t", {"format-version": "4"})
    nanos = Schema(NestedField(1, "ts", TimestampNanoType()), NestedField(2, "u", UnknownType()))
    with pytest.raises(ValidationError, match=r"timestamp_ns is not supported until v3"):
        new_table_metadata(nanos, None, None, "s3://b/t", {}, format_version=1)
    with pytest.raises(ValidationError, match=r"unknown is not supported until v3"):
        new_table_metadata(nanos, None, None, "s3://b/t", {}, format_version=2)
    assert new_table_metadata(nanos, None, None, "s3://b/t", {}, format_version=3)
    defaults = Schema(NestedField(1, "n", LongType(), True, initial_default=5, write_default=5))
    with pytest.raises(ValidationError, match="Invalid initial default for n"):
        new_table_metadata(defaults, None, None, "s3://b/t", {})
    md = new_table_metadata(defaults, None, None, "s3://b/t", {}, format_version=3)
    assert md.schema().find_field("n").initial_default == 5


def test_creation_updates_rebuild_the_same_table() -> None:
    md = new_table(owner="me")
    updates = creation_updates(md)
    assert [u.action for u in updates] == [
        "assign-uuid",
        "upgrade-format-version",
        "add-schema",
        "set-current-schema",
        "add-spec",
        "set-default-spec",
        "add-sort-order",
        "set-default-sort-order",
        "set-location",
        "set-properties",
    ]
    rebuilt = MetadataBuilder(None).apply_all(updates).build()
    assert rebuilt == md


def test_empty_builder_needs_location_schema_spec_order() -> None:
    b = MetadataBuilder(None)
    with pytest.raises(ValidationError, match="location"):
        b.build()
    b.set_location("s3://b/t")
    with pytest.raises(ValidationError, match="current schema"):
        b.build()
    with pytest.raises(ValidationError, match="before a schema is added"):
        b.add_partition_spec(PartitionSpec(0, ()))
    b.add_schema(Schema(NestedField(1, "a", LongType()))).set_current_schema(-1)
    with pytest.raises(ValidationError, match="default partition spec"):
        b.build()
    b.add_partition_spec(PartitionSpec(0, ())).set_default_spec(-1)
    with pytest.raises(ValidationError, match="default sort order"):
        b.build()
    with pytest.raises(ValidationError, match="before a sort order"):
        b.add_snapshot(snap(1, 1))
    md = b.add_sort_order(UNSORTED_ORDER).set_default_sort_order(-1).build()
    assert md.format_version == 2 and md.last_column_id == 1
    with pytest.raises(ValidationError, match="format_version applies only to new tables"):
        MetadataBuilder(md, format_version=3)
    with pytest.raises(ValidationError, match="Unsupported format version"):
        MetadataBuilder(None, format_version=0)


def test_no_changes_returns_base() -> None:
    md = new_table()
    b = MetadataBuilder(md).set_location(md.location).set_properties({})
    b.with_previous_metadata("s3://bucket/db/t/metadata/v1.metadata.json")
    assert not b.has_changes and b.updates == []
    assert b.build() is md


# -- identity and version --------------------------------------------------------------------


def test_assign_uuid() -> None:
    md = new_table()
    other = "d20125c8-7284-442c-9aea-15fee620737c"
    b = MetadataBuilder(md).assign_uuid(UUID)
    assert b.updates == []
    b.assign_uuid(other)
    assert b.updates == [AssignUUIDUpdate(other)]
    assert b.build().table_uuid == other
    with pytest.raises(ValidationError, match="Invalid table UUID"):
        MetadataBuilder(md).assign_uuid("not-a-uuid")


def test_upgrade_format_version() -> None:
    v1 = new_table(1)
    v2 = MetadataBuilder(v1).upgrade_format_version(2).build()
    assert v2.format_version == 2 and v2.next_row_id is None
    assert v2.table_uuid == v1.table_uuid
    b = MetadataBuilder(v2).upgrade_format_version(3)
    assert b.updates == [UpgradeFormatVersionUpdate(3)]
    v3 = b.build()
    assert v3.format_version == 3 and v3.next_row_id == 0
    assert MetadataBuilder(v3).upgrade_format_version(3).updates == []
    with pytest.raises(ValidationError, match="Cannot downgrade v3 table to v2"):
        MetadataBuilder(v3).upgrade_format_version(2)
    with pytest.raises(ValidationError, match="unsupported format version: v4"):
        MetadataBuilder(v3).upgrade_format_version(4)
    # a table being created may pick any version before anything is added
    fresh = MetadataBuilder(None).upgrade_format_version(1)
    assert fresh.format_version == 1
    fresh.add_schema(Schema(NestedField(1, "a", LongType())))
    with pytest.raises(ValidationError, match="Cannot downgrade"):
        fresh.upgrade_format_version(0)


# -- schemas ---------------------------------------------------------------------------------


def test_add_schema_new_and_reused_ids() -> None:
    md = new_table()
    evolved = Schema(*md.schema().fields, NestedField(8, "extra", BooleanType()), schema_id=0)
    b = MetadataBuilder(md).add_schema(evolved)
    assert b.last_added_schema_id == 1
    (update,) = b.updates
    assert isinstance(update, AddSchemaUpdate)
    assert update.schema.schema_id == 1 and update.last_column_id == 8
    b.set_current_schema(-1)
    assert b.updates[-1] == SetCurrentSchemaUpdate(-1)
    new = b.build()
    assert new.current_schema_id == 1 and new.last_column_id == 8
    assert [s.schema_id for s in new.schemas] == [0, 1]
    # re-adding an identical schema (any id) reuses its id without a change
    b2 = MetadataBuilder(new).add_schema(md.schema().with_schema_id(7))
    assert b2.updates == [] and b2.last_added_schema_id == 0
    b2.set_current_schema(-1)
    # the schema was not added by this builder, so the explicit id is recorded
    assert b2.updates == [SetCurrentSchemaUpdate(0)]
    assert b2.build().current_schema_id == 0
    # the same schema again but with a higher last-column-id is a change
    b3 = MetadataBuilder(new).add_schema(evolved, last_column_id=20)
    assert b3.build().last_column_id == 20 and len(b3.build().schemas) == 2


def test_schema_errors() -> None:
    md = new_table()
    with pytest.raises(ValidationError, match="no schema has been added"):
        MetadataBuilder(md).set_current_schema(-1)
    with pytest.raises(ValidationError, match="unknown schema: 9"):
        MetadataBuilder(md).set_current_schema(9)
    with pytest.raises(ValidationError, match=r"Invalid last column ID: 3 < 7"):
        MetadataBuilder(md).add_schema(md.schema(), last_column_id=3)
    with pytest.raises(ValidationError, match="timestamp_ns is not supported until v3"):
        MetadataBuilder(md).add_schema(Schema(NestedField(8, "t", TimestampNanoType())))
    assert MetadataBuilder(md).set_current_schema(0).updates == []


def test_remove_schemas() -> None:
    md = new_table()
    md2 = MetadataBuilder(md).add_schema(Schema(NestedField(1, "id", LongType(), True))).build()
    assert [s.schema_id for s in md2.schemas] == [0, 1]
    with pytest.raises(ValidationError, match="Cannot remove the current schema"):
        MetadataBuilder(md2).remove_schemas([0])
    b = MetadataBuilder(md2).remove_schemas([1])
    assert b.updates == [RemoveSchemasUpdate((1,))]
    assert [s.schema_id for s in b.build().schemas] == [0]
    assert MetadataBuilder(md2).remove_schemas([]).updates == []


# -- partition specs -------------------------------------------------------------------------


def test_add_spec_new_and_reused() -> None:
    md = new_table()
    same = PartitionSpec(5, md.spec().fields)
    b = MetadataBuilder(md).add_partition_spec(same)
    assert b.updates == [] and b.last_added_spec_id == 0
    identity = PartitionSpec(0, (PartitionField(2, 1002, IdentityTransform(), "data"),))
    b = MetadataBuilder(md).add_partition_spec(identity).set_default_spec(-1)
    assert b.updates == [
        AddPartitionSpecUpdate(PartitionSpec(1, identity.fields)),
        SetDefaultSpecUpdate(-1),
    ]
    new = b.build()
    assert new.default_spec_id == 1 and new.last_partition_id == 1002
    assert new.spec_by_id(0) == md.spec()
    # switching back to an existing spec records its id
    b2 = MetadataBuilder(new).set_default_spec(0)
    assert b2.updates == [SetDefaultSpecUpdate(0)]
    with pytest.raises(ValidationError, match="Cannot remove the default partition spec"):
        MetadataBuilder(new).remove_partition_specs([1])
    removed = MetadataBuilder(b2.build()).remove_partition_specs([1])
    assert removed.updates == [RemovePartitionSpecsUpdate((1,))]
    assert list(removed.build().specs()) == [0]


def test_spec_errors() -> None:
    md = new_table()
    with pytest.raises(InvalidTransformError, match="Invalid source type"):
        MetadataBuilder(md).add_partition_spec(
            PartitionSpec(0, (PartitionField(2, 1002, DayTransform(), "d"),))
        )
    with pytest.raises(ValidationError, match="Cannot find source column"):
        MetadataBuilder(md).add_partition_spec(
            PartitionSpec(0, (PartitionField(99, 1002, IdentityTransform(), "x"),))
        )
    with pytest.raises(ValidationError, match="non-primitive"):
        MetadataBuilder(md).add_partition_spec(
            PartitionSpec(0, (PartitionField(5, 1002, IdentityTransform(), "x"),))
        )
    with pytest.raises(ValidationError, match="Invalid partition field parent"):
        MetadataBuilder(md).add_partition_spec(
            PartitionSpec(0, (PartitionField(6, 1002, IdentityTransform(), "x"),))
        )
    with pytest.raises(ValidationError, match="no spec has been added"):
        MetadataBuilder(md).set_default_spec(-1)
    with pytest.raises(ValidationError, match="unknown spec: 4"):
        MetadataBuilder(md).set_default_spec(4)
    v1 = new_table(1)
    with pytest.raises(ValidationError, match="sequential IDs that are required in v1"):
        MetadataBuilder(v1).add_partition_spec(
            PartitionSpec(0, (PartitionField(2, 1005, IdentityTransform(), "data"),))
        )
    # void fields are not checked: v1 tables keep dropped partition sources as void
    void = PartitionSpec(0, (PartitionField(99, 1002, VoidTransform(), "gone"),))
    assert MetadataBuilder(md).add_partition_spec(void).build().last_partition_id == 1002
    ok = (
        MetadataBuilder(v1)
        .add_partition_spec(
            PartitionSpec(0, (PartitionField(2, 1000, IdentityTransform(), "data"),))
        )
        .build()
    )
    assert len(ok.partition_specs) == 2


# -- sort orders -----------------------------------------------------------------------------


def test_add_sort_order() -> None:
    md = new_table()
    b = MetadataBuilder(md).add_sort_order(SortOrder(9, md.sort_order().fields))
    assert b.updates == [] and b.last_added_sort_order_id == 1
    b = MetadataBuilder(md).add_sort_order(UNSORTED_ORDER).set_default_sort_order(-1)
    assert b.updates == [AddSortOrderUpdate(UNSORTED_ORDER), SetDefaultSortOrderUpdate(-1)]
    unsorted = b.build()
    assert unsorted.default_sort_order_id == 0 and unsorted.sort_order().is_unsorted
    new_order = build_sort_order(md.schema(), ["data"], order_id=1)
    b = MetadataBuilder(unsorted).add_sort_order(new_order).set_default_sort_order(-1)
    assert b.last_added_sort_order_id == 2
    assert isinstance(b.updates[0], AddSortOrderUpdate)
    assert b.updates[0].sort_order.order_id == 2
    assert b.build().sort_order().order_id == 2
    assert MetadataBuilder(unsorted).add_sort_order(UNSORTED_ORDER).updates == []


def test_sort_order_errors() -> None:
    md = new_table()
    bad = build_sort_order(md.schema(), ["data"], order_id=1)
    bad = SortOrder(1, (type(bad.fields[0])(99, IdentityTransform()),))
    with pytest.raises(ValidationError, match="Cannot find source column for sort field"):
        MetadataBuilder(md).add_sort_order(bad)
    with pytest.raises(ValidationError, match="no sort order has been added"):
        MetadataBuilder(md).set_default_sort_order(-1)
    with pytest.raises(ValidationError, match="unknown order: 5"):
        MetadataBuilder(md).set_default_sort_order(5)


# -- snapshots and refs ----------------------------------------------------------------------


def test_add_snapshot_and_set_main() -> None:
    md = new_table()
    b = (
        MetadataBuilder(md)
        .add_snapshot(snap(1, 1, ts=NOW - 5))
        .set_ref(MAIN_BRANCH, SnapshotRef(1))
    )
    assert [u.action for u in b.updates] == ["add-snapshot", "set-snapshot-ref"]
    new = b.build()
    assert new.current_snapshot_id == 1 and new.last_sequence_number == 1
    assert new.last_updated_ms == NOW - 5
    assert new.snapshot_log == (SnapshotLogEntry(1, NOW - 5),)
    assert new.refs == {MAIN_BRANCH: SnapshotRef(1)}
    # sequence numbers must grow
    with pytest.raises(ValidationError, match="number 1 older than last sequence number 1"):
        MetadataBuilder(new).add_snapshot(snap(2, 1, 1))
    with pytest.raises(ValidationError, match="Snapshot already exists for id: 1"):
        MetadataBuilder(new).add_snapshot(snap(1, 2))
    # a tag, then moving main back to the old snapshot logs it with the current time
    b = (
        MetadataBuilder(new)
        .add_snapshot(snap(2, 2, 1, ts=NOW - 3))
        .set_ref("t", SnapshotRef(2, SnapshotRefType.TAG))
    )
    newer = b.build()
    assert newer.current_snapshot_id == 1 and newer.snapshot_by_name("t").snapshot_id == 2  # type: ignore[union-attr]
    assert newer.last_updated_ms == NOW - 3
    back = MetadataBuilder(newer).set_ref(MAIN_BRANCH, SnapshotRef(1))
    assert back.updates == []  # unchanged ref is a no-op


def test_set_ref_errors() -> None:
    md = MetadataBuilder(new_table()).add_snapshot(snap(1, 1)).build()
    with pytest.raises(ValidationError, match="Cannot set main to unknown snapshot: 5"):
        MetadataBuilder(md).set_ref(MAIN_BRANCH, SnapshotRef(5))
    with pytest.raises(ValidationError, match="main must be a branch"):
        MetadataBuilder(md).set_ref(MAIN_BRANCH, SnapshotRef(1, SnapshotRefType.TAG))
    tagged = MetadataBuilder(md).set_ref("t", SnapshotRef(1, SnapshotRefType.TAG)).build()
    with pytest.raises(ValidationError, match="Cannot update branch: t is a tag"):
        MetadataBuilder(tagged).set_branch_snapshot(1, "t")
    with pytest.raises(ValidationError, match="Cannot set b to unknown snapshot: 3"):
        MetadataBuilder(md).set_branch_snapshot(3, "b")


def test_set_branch_snapshot_keeps_retention() -> None:
    md = MetadataBuilder(new_table()).add_snapshot(snap(1, 1)).build()
    md = MetadataBuilder(md).set_ref("dev", SnapshotRef(1, min_snapshots_to_keep=3)).build()
    md = MetadataBuilder(md).add_snapshot(snap(2, 2, 1)).set_branch_snapshot(2, "dev").build()
    assert md.refs["dev"] == SnapshotRef(2, min_snapshots_to_keep=3)
    assert md.current_snapshot_id is None
    b = MetadataBuilder(md).set_branch_snapshot(2)
    assert b.updates == [SetSnapshotRefUpdate("main", 2)]
    assert b.build().current_snapshot_id == 2
    assert MetadataBuilder(b.build()).set_branch_snapshot(2).updates == []


def test_intermediate_snapshots_leave_the_log() -> None:
    md = new_table()
    b = (
        MetadataBuilder(md)
        .add_snapshot(snap(1, 1, ts=NOW - 9))
        .set_branch_snapshot(1)
        .add_snapshot(snap(2, 2, 1, ts=NOW - 8))
        .set_branch_snapshot(2)
    )
    new = b.build()
    assert [e.snapshot_id for e in new.snapshot_log] == [2]
    assert new.current_snapshot_id == 2 and new.last_sequence_number == 2


def test_remove_snapshots_refs_stats_and_history() -> None:
    md = new_table()
    b = MetadataBuilder(md)
    for i in (1, 2, 3):
        b.add_snapshot(snap(i, i, i - 1 or None, ts=NOW - 10 + i))
        md = b.set_branch_snapshot(i).build()
        b = MetadataBuilder(md)
    md = (
        MetadataBuilder(md)
        .set_ref("t", SnapshotRef(1, SnapshotRefType.TAG))
        .set_statistics(StatisticsFile(1, "s1.puffin", 1, 1))
        .set_partition_statistics(PartitionStatisticsFile(1, "p1.parquet", 1))
        .set_statistics(StatisticsFile(3, "s3.puffin", 1, 1))
        .build()
    )
    assert [e.snapshot_id for e in md.snapshot_log] == [1, 2, 3]
    b = MetadataBuilder(md).remove_snapshots([2, 99])
    assert b.updates == [RemoveSnapshotsUpdate((2,))]
    new = b.build()
    assert [s.snapshot_id for s in new.snapshots] == [1, 3]
    # history before the removed snapshot is cut so time travel never skips it
    assert [e.snapshot_id for e in new.snapshot_log] == [3]
    b = MetadataBuilder(new).remove_snapshots([1, 3])
    assert [u.action for u in b.updates] == [
        "remove-snapshots",
        "remove-statistics",
        "remove-partition-statistics",
        "remove-statistics",
        "remove-snapshot-ref",
        "remove-snapshot-ref",
    ]
    gone = b.build()
    assert gone.snapshots == () and gone.refs == {} and gone.current_snapshot_id is None
    assert gone.statistics == () and gone.partition_statistics == ()
    assert gone.snapshot_log == ()
    assert MetadataBuilder(gone).remove_snapshots([5]).updates == []


def test_remove_ref() -> None:
    md = MetadataBuilder(new_table()).add_snapshot(snap(1, 1)).set_branch_snapshot(1).build()
    b = MetadataBuilder(md).remove_ref(MAIN_BRANCH)
    assert b.updates == [RemoveSnapshotRefUpdate(MAIN_BRANCH)]
    new = b.build()
    assert new.current_snapshot_id is None and new.refs == {}
    assert [s.snapshot_id for s in new.snapshots] == [1]
    assert MetadataBuilder(new).remove_ref("nope").updates == []


def test_v1_snapshots_have_sequence_zero() -> None:
    v1 = new_table(1)
    md = MetadataBuilder(v1).add_snapshot(snap(1, 0)).set_branch_snapshot(1).build()
    md = MetadataBuilder(md).add_snapshot(snap(2, 0, 1)).build()
    assert md.last_sequence_number == 0
    with pytest.raises(ValidationError, match="Sequence number must be 0 in v1: 3"):
        MetadataBuilder(v1).add_snapshot(snap(1, 3))


def test_v3_row_lineage() -> None:
    v3 = new_table(3)
    md = MetadataBuilder(v3).add_snapshot(snap(1, 1, first_row_id=0, added_rows=10)).build()
    assert md.next_row_id == 10
    md = MetadataBuilder(md).add_snapshot(snap(2, 2, 1, first_row_id=15, added_rows=5)).build()
    assert md.next_row_id == 20
    with pytest.raises(ValidationError, match="first-row-id is null"):
        MetadataBuilder(md).add_snapshot(snap(3, 3, 2, added_rows=1))
    with pytest.raises(ValidationError, match=r"first-row-id is behind table next-row-id: 19 < 20"):
        MetadataBuilder(md).add_snapshot(snap(3, 3, 2, first_row_id=19, added_rows=1))
    with pytest.raises(ValidationError, match="added-rows is null"):
        MetadataBuilder(md).add_snapshot(snap(3, 3, 2, first_row_id=20))


# -- location, properties, statistics --------------------------------------------------------


def test_location_and_properties() -> None:
    md = new_table(owner="a")
    b = (
        MetadataBuilder(md)
        .set_location("s3://other/t")
        .set_properties({"owner": "b", "k": "v"})
        .remove_properties(["k", "missing"])
    )
    assert b.updates == [
        SetLocationUpdate("s3://other/t"),
        SetPropertiesUpdate({"owner": "b", "k": "v"}),
        RemovePropertiesUpdate(("k", "missing")),
    ]
    new = b.build()
    assert new.location == "s3://other/t" and new.properties == {"owner": "b"}
    assert new.last_updated_ms == NOW
    assert MetadataBuilder(new).remove_properties([]).updates == []
    with pytest.raises(ValidationError, match="must be strings"):
        MetadataBuilder(md).set_properties({"n": 1})  # type: ignore[dict-item]


def test_statistics_updates() -> None:
    md = MetadataBuilder(new_table()).add_snapshot(snap(1, 1)).build()
    stats = StatisticsFile(1, "s.puffin", 10, 4)
    b = MetadataBuilder(md).set_statistics(stats)
    b.set_statistics(StatisticsFile(1, "s2.puffin", 10, 4))  # replaces: one per snapshot
    new = b.build()
    assert new.statistics == (StatisticsFile(1, "s2.puffin", 10, 4),)
    b = MetadataBuilder(new).remove_statistics(1).remove_statistics(1)
    assert b.updates == [RemoveStatisticsUpdate(1)]
    assert b.build().statistics == ()
    ps = PartitionStatisticsFile(1, "p.parquet", 3)
    b = MetadataBuilder(md).set_partition_statistics(ps)
    assert b.updates == [SetPartitionStatisticsUpdate(ps)]
    with_ps = b.build()
    assert with_ps.partition_statistics == (ps,)
    b = MetadataBuilder(with_ps).remove_partition_statistics(1).remove_partition_statistics(2)
    assert b.updates == [RemovePartitionStatisticsUpdate(1)]
    assert b.build().partition_statistics == ()
    assert SetStatisticsUpdate(stats).to_json()["snapshot-id"] == 1


# -- metadata log and timestamps -------------------------------------------------------------


def test_with_previous_metadata() -> None:
    md = new_table()
    v1_path = "s3://bucket/db/t/metadata/00000-a.metadata.json"
    md2 = MetadataBuilder(md).set_properties({"a": "1"}).with_previous_metadata(v1_path).build()
    assert [(e.metadata_file, e.timestamp_ms) for e in md2.metadata_log] == [
        (v1_path, md.last_updated_ms)
    ]
    # the log is capped by write.metadata.previous-versions-max (at least one entry kept)
    cur = md2
    for i in range(5):
        cur = (
            MetadataBuilder(cur)
            .set_properties({"write.metadata.previous-versions-max": "3", "i": str(i)})
            .with_previous_metadata(f"v{i + 2}.json")
            .build()
        )
    assert [e.metadata_file for e in cur.metadata_log] == ["v4.json", "v5.json", "v6.json"]
    capped = (
        MetadataBuilder(cur)
        .set_properties({"i": "x"})
        .with_previous_metadata("v7.json", max_entries=0)
        .build()
    )
    assert [e.metadata_file for e in capped.metadata_log] == ["v7.json"]
    bad = (
        MetadataBuilder(cur)
        .set_properties({"write.metadata.previous-versions-max": "x"})
        .with_previous_metadata("v7.json")
        .build()
    )
    assert len(bad.metadata_log) == 4
    # without with_previous_metadata the log is carried over unchanged
    assert MetadataBuilder(cur).set_properties({"j": "1"}).build().metadata_log == cur.metadata_log


def test_last_updated_is_now_when_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builder_module, "_now_ms", lambda: time.time_ns() // 1_000_000)
    md = new_table()
    before = time.time_ns() // 1_000_000
    new = MetadataBuilder(md).set_properties({"a": "b"}).build()
    assert before <= new.last_updated_ms <= time.time_ns() // 1_000_000


# -- apply -----------------------------------------------------------------------------------


def test_replaying_updates_reproduces_metadata() -> None:
    md = new_table()
    evolved = Schema(*md.schema().fields, NestedField(8, "extra", BooleanType()))
    b = (
        MetadataBuilder(md)
        .add_schema(evolved)
        .set_current_schema(-1)
        .add_partition_spec(
            PartitionSpec(0, (PartitionField(8, 1002, IdentityTransform(), "extra"),))
        )
        .set_default_spec(-1)
        .add_sort_order(build_sort_order(evolved, ["extra"]))
        .set_default_sort_order(-1)
        .add_snapshot(snap(1, 1))
        .set_branch_snapshot(1)
        .set_ref("tag", SnapshotRef(1, SnapshotRefType.TAG, max_ref_age_ms=5))
        .set_statistics(StatisticsFile(1, "s", 1, 1))
        .set_partition_statistics(PartitionStatisticsFile(1, "p", 1))
        .set_properties({"a": "b"})
        .remove_properties(["a"])
        .set_location("s3://x/y")
        .upgrade_format_version(3)
        .assign_uuid("d20125c8-7284-442c-9aea-15fee620737c")
        .remove_schemas([0])
        .remove_partition_specs([0])
    )
    expected = b.build()
    replayed = MetadataBuilder(md).apply_all(b.updates).build()
    assert replayed == expected
    # the updates survive their REST JSON form too
    from_json = [TableUpdate.from_json(u.to_json()) for u in b.updates]
    assert from_json == b.updates
    assert MetadataBuilder(md).apply_all(from_json).build() == expected
    # and removing what was added replays as well
    r = MetadataBuilder(expected).remove_ref("tag").remove_snapshots([1])
    assert MetadataBuilder(expected).apply_all(r.updates).build() == r.build()


def test_apply_each_update_type() -> None:
    md = MetadataBuilder(new_table()).add_snapshot(snap(1, 1)).build()
    cases: list[TableUpdate] = [
        AssignUUIDUpdate("d20125c8-7284-442c-9aea-15fee620737c"),
        UpgradeFormatVersionUpdate(3),
        AddSchemaUpdate(Schema(NestedField(1, "id", LongType(), True)), 7),
        SetCurrentSchemaUpdate(0),
        AddPartitionSpecUpdate(PartitionSpec(0, ())),
        SetDefaultSpecUpdate(0),
        AddSortOrderUpdate(UNSORTED_ORDER),
        SetDefaultSortOrderUpdate(0),
        AddSnapshotUpdate(snap(2, 2, 1, first_row_id=0, added_rows=3)),
        SetSnapshotRefUpdate("main", 1),
        RemoveSnapshotsUpdate((2,)),
        RemoveSnapshotRefUpdate("main"),
        SetLocationUpdate("s3://z"),
        SetPropertiesUpdate({"x": "y"}),
        RemovePropertiesUpdate(("x",)),
        SetStatisticsUpdate(StatisticsFile(1, "s", 1, 1)),
        RemoveStatisticsUpdate(1),
        SetPartitionStatisticsUpdate(PartitionStatisticsFile(1, "p", 1)),
        RemovePartitionStatisticsUpdate(1),
        RemovePartitionSpecsUpdate((5,)),
        RemoveSchemasUpdate((5,)),
    ]
    assert {type(u) for u in cases} == set(builder_module._HANDLERS)
    b = MetadataBuilder(md)
    for update in cases:
        b.apply(update)
    result = b.build()
    assert result.format_version == 3 and result.location == "s3://z"
    assert result.current_snapshot_id is None and [s.snapshot_id for s in result.snapshots] == [1]

    class Strange(TableUpdate):
        action = ""

    with pytest.raises(ValidationError, match="unsupported update"):
        MetadataBuilder(md).apply(Strange())


def test_create_applies_the_requested_format_version_first() -> None:
    nanos = Schema(NestedField(1, "ts", TimestampNanoType()))
    updates: list[TableUpdate] = [
        AddSchemaUpdate(nanos),
        SetCurrentSchemaUpdate(-1),
        AddPartitionSpecUpdate(PartitionSpec(0, ())),
        SetDefaultSpecUpdate(-1),
        AddSortOrderUpdate(UNSORTED_ORDER),
        SetDefaultSortOrderUpdate(-1),
        SetLocationUpdate("s3://b/t"),
        UpgradeFormatVersionUpdate(3),
    ]
    b = MetadataBuilder(None).apply_all(updates)
    assert b.updates[0] == UpgradeFormatVersionUpdate(3)
    md = b.build()
    assert md.format_version == 3 and md.next_row_id == 0
    with pytest.raises(ValidationError, match="not supported until v3"):
        MetadataBuilder(None).apply_all(updates[:-1])


# -- the update orders clients send ------------------------------------------------------------


def _client_create(order: list[str], version: int = 2) -> list[TableUpdate]:
    """A create's updates in a client's order (``order`` names the actions)."""
    schema = Schema(
        NestedField(1, "a", LongType(), True),
        NestedField(2, "b", StringType()),
        NestedField(3, "ts", TimestamptzType()),
    )
    spec = PartitionSpec(0, (PartitionField(3, 1000, DayTransform(), "ts_day"),))
    order_ = SortOrder(1, build_sort_order(schema, ["a desc"]).fields)
    by_action: dict[str, TableUpdate] = {
        "assign-uuid": AssignUUIDUpdate(UUID),
        "upgrade-format-version": UpgradeFormatVersionUpdate(version),
        "add-schema": AddSchemaUpdate(schema, 3),
        "set-current-schema": SetCurrentSchemaUpdate(-1),
        "add-spec": AddPartitionSpecUpdate(spec),
        "set-default-spec": SetDefaultSpecUpdate(-1),
        "add-sort-order": AddSortOrderUpdate(order_),
        "set-default-sort-order": SetDefaultSortOrderUpdate(-1),
        "set-location": SetLocationUpdate("s3://b/db/t"),
        "set-properties": SetPropertiesUpdate({"owner": "me"}),
    }
    return [by_action[a] for a in order]


JAVA_ORDER = [
    "assign-uuid",
    "upgrade-format-version",
    "add-schema",
    "set-current-schema",
    "add-spec",
    "set-default-spec",
    "add-sort-order",
    "set-default-sort-order",
    "set-location",
    "set-properties",
]
# DuckDB 1.5's CREATE TABLE (a stage-create, then this commit with assert-create)
DUCKDB_ORDER = [
    "assign-uuid",
    "upgrade-format-version",
    "add-schema",
    "add-spec",
    "set-default-spec",
    "add-sort-order",
    "set-default-sort-order",
    "set-location",
    "set-properties",
    "set-current-schema",
]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_create_in_any_client_order_builds_the_same_table(version: int) -> None:
    """A spec and a sort order added before set-current-schema bind against the schema
    added (Java's builder counts schema 0 as current until one is set): DuckDB's order, a
    reversed one and the defaults left unset all build Java's order's table."""
    expected = MetadataBuilder(None).apply_all(_client_create(JAVA_ORDER, version)).build()
    assert expected.spec().fields[0].name == "ts_day" and expected.sort_order().order_id == 1
    orders = [
        DUCKDB_ORDER,
        [
            "set-location",
            "set-properties",
            "add-schema",
            "add-sort-order",
            "add-spec",
            "set-default-sort-order",
            "set-default-spec",
            "set-current-schema",
            "upgrade-format-version",
            "assign-uuid",
        ],
        # set-current-schema, set-default-spec and set-default-sort-order left out: Java's
        # builder starts with schema 0 and spec 0 current (a sorted order is id 1: not implicit)
        [a for a in JAVA_ORDER if a not in ("set-current-schema", "set-default-spec")],
    ]
    for order in orders:
        built = MetadataBuilder(None).apply_all(_client_create(order, version)).build()
        assert built == expected, order
    # without any schema nothing can bind
    with pytest.raises(ValidationError, match="Cannot add a partition spec before a schema"):
        MetadataBuilder(None).apply_all(_client_create(["add-spec"]))
    with pytest.raises(ValidationError, match="Cannot add a sort order before a schema"):
        MetadataBuilder(None).apply_all(_client_create(["add-sort-order"]))


def test_spec_before_set_current_schema_binds_schema_zero() -> None:
    """Two schemas added to a new table before any is current: a spec binds against schema
    0, as Java's builder (its current schema id starts at 0), not against the second."""
    first = Schema(NestedField(1, "a", LongType()))
    second = Schema(NestedField(1, "a", LongType()), NestedField(2, "b", StringType()))
    on_b = PartitionSpec(0, (PartitionField(2, 1000, IdentityTransform(), "b"),))
    b = MetadataBuilder(None).add_schema(first).add_schema(second)
    with pytest.raises(ValidationError, match="Cannot find source column"):
        b.add_partition_spec(on_b)
    md = (
        b.set_current_schema(-1)
        .add_partition_spec(on_b)
        .set_default_spec(-1)
        .add_sort_order(UNSORTED_ORDER)
        .set_location("s3://b/t")
        .build()
    )
    assert md.current_schema_id == 1 and md.spec().fields[0].source_id == 2
    assert md.default_sort_order_id == 0


def test_rest_add_schema_never_lowers_last_column_id() -> None:
    """Java ignores an add-schema's last-column-id: a lower one sent over REST is no error
    and the table keeps its highest id (the typed method still refuses it)."""
    md = new_table()
    dropped = Schema(NestedField(1, "id", LongType(), True))
    new = MetadataBuilder(md).apply(AddSchemaUpdate(dropped, 1)).build()
    assert new.last_column_id == md.last_column_id == 7
    assert [s.schema_id for s in new.schemas] == [0, 1]
    higher = MetadataBuilder(md).apply(AddSchemaUpdate(dropped, 12)).build()
    assert higher.last_column_id == 12
