"""Pure partition spec evolution."""

from __future__ import annotations

import pytest

from icepark.errors import ValidationError
from icepark.spec.partitioning import PartitionField, PartitionSpec, build_partition_spec
from icepark.spec.schema import Schema
from icepark.spec.spec_update import (
    AddField,
    RemoveField,
    RenameField,
    SpecChange,
    apply_spec_changes,
    partition_field_name,
    to_transform,
)
from icepark.spec.transforms import (
    BucketTransform,
    DayTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    VoidTransform,
)
from icepark.spec.types import DateType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "dt", DateType()),
)
SPEC = build_partition_spec(SCHEMA, ["dt", "bucket(4, id)"])


def _fields(spec: PartitionSpec) -> list[tuple[str, str, int]]:
    return [(f.name, str(f.transform), f.field_id) for f in spec.fields]


def _apply(
    *changes: SpecChange,
    version: int = 2,
    history: tuple[PartitionSpec, ...] = (SPEC,),
    spec: PartitionSpec = SPEC,
    last: int = 1001,
) -> PartitionSpec:
    return apply_spec_changes(SCHEMA, spec, history, last, version, changes).spec


def test_transform_names() -> None:
    assert to_transform("bucket[16]") == BucketTransform(16)
    assert to_transform("bucket(16)") == BucketTransform(16)
    assert to_transform("day") == DayTransform()
    assert partition_field_name("id", BucketTransform(16)) == "id_bucket_16"
    assert partition_field_name("s", TruncateTransform(4)) == "s_trunc_4"
    assert partition_field_name("dt", DayTransform()) == "dt_day"
    assert partition_field_name("dt", IdentityTransform()) == "dt"
    assert partition_field_name("dt", VoidTransform()) == "dt_null"


def test_v2_add_remove_rename() -> None:
    spec = _apply(
        RemoveField("dt"), AddField("name", TruncateTransform(2)), RenameField("id_bucket", "b")
    )
    assert _fields(spec) == [("b", "bucket[4]", 1001), ("name_trunc_2", "truncate[2]", 1002)]


def test_v2_reuses_historical_ids() -> None:
    old = PartitionSpec(0, (PartitionField(2, 1005, TruncateTransform(2), "n2"),))
    spec = _apply(AddField("name", TruncateTransform(2)), history=(old, SPEC), last=1005)
    assert _fields(spec)[-1] == ("n2", "truncate[2]", 1005)
    named = _apply(AddField("name", TruncateTransform(2), "other"), history=(old, SPEC), last=1005)
    assert _fields(named)[-1] == ("other", "truncate[2]", 1006)


def test_v2_remove_and_readd_keeps_field() -> None:
    spec = _apply(RemoveField("dt"), AddField("dt", IdentityTransform(), "d"))
    assert _fields(spec) == [("d", "identity", 1000), ("id_bucket", "bucket[4]", 1001)]


def test_remove_by_term() -> None:
    assert _fields(_apply(RemoveField("bucket(4, id)"))) == [("dt", "identity", 1000)]


def test_v1_voids_and_sequential_ids() -> None:
    spec = _apply(RemoveField("dt"), AddField("dt", MonthTransform()), version=1)
    assert _fields(spec) == [
        ("dt", "void", 1000),
        ("id_bucket", "bucket[4]", 1001),
        ("dt_month", "month", 1002),
    ]
    spec = _apply(RemoveField("dt"), AddField("dt", IdentityTransform()), version=1)
    assert _fields(spec) == [
        ("dt_1000", "void", 1000),
        ("id_bucket", "bucket[4]", 1001),
        ("dt", "identity", 1002),
    ]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ([AddField("dt", IdentityTransform())], "duplicate partition field"),
        ([AddField("nope", IdentityTransform())], "Cannot find source column.*nope"),
        ([AddField("name", DayTransform())], "does not accept string"),
        ([RemoveField("nope")], "Cannot find partition field to remove: nope"),
        ([RenameField("nope", "x")], "Cannot find partition field to rename: nope"),
        ([AddField("name", IdentityTransform(), "x"), RemoveField("x")], "newly added"),
        ([RemoveField("dt"), RenameField("dt", "x")], "delete and rename"),
        ([RenameField("dt", "x"), RemoveField("dt")], "rename and delete"),
        ([RenameField("dt", "id_bucket")], "id_bucket exists"),
        ([AddField("name", BucketTransform(2), "id_bucket")], "duplicate partition field name"),
        ([AddField("name", BucketTransform(2), "id")], "conflicts with a schema column"),
        (
            [AddField("dt", DayTransform()), AddField("dt", MonthTransform())],
            "redundant partition field",
        ),
        (
            [AddField("name", IdentityTransform()), AddField("name", IdentityTransform(), "n")],
            "already added",
        ),
    ],
)
def test_refusals(changes: list[SpecChange], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _apply(*changes)
