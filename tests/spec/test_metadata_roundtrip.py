"""Property tests: writing table metadata and reading it back is the identity."""

from __future__ import annotations

import copy
import gzip
import itertools
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.errors import InvalidMetadataError
from icepark.spec.metadata import (
    TableMetadata,
    table_metadata_from_dict,
    table_metadata_from_json,
    table_metadata_to_dict,
    table_metadata_to_json,
)
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import (
    MAIN_BRANCH,
    BlobMetadata,
    MetadataLogEntry,
    Operation,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
    StatisticsFile,
    Summary,
)
from icepark.spec.sorting import UNSORTED_ORDER, NullOrder, SortDirection, SortField, SortOrder
from icepark.spec.transforms import (
    BucketTransform,
    DayTransform,
    IdentityTransform,
    TruncateTransform,
    VoidTransform,
)
from icepark.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestamptzType,
    UnknownType,
    UUIDType,
)

Draw = Callable[[st.SearchStrategy[Any]], Any]

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
NAMES = st.text("abcdefghij_", min_size=1, max_size=6)
LONGS = st.integers(-(2**63), 2**63 - 1)
POSITIVE = st.integers(1, 2**40)
SNAPSHOT_IDS = st.integers(0, 2**63 - 1)  # Java never makes negative ids: -1 means "none"

# primitive types with a strategy for default values that survive JSON exactly
DEFAULTABLE: list[tuple[IcebergType, st.SearchStrategy[Any]]] = [
    (BooleanType(), st.booleans()),
    (IntegerType(), st.integers(-(2**31), 2**31 - 1)),
    (LongType(), LONGS),
    (StringType(), TEXT),
    (DateType(), st.integers(-100_000, 100_000)),
    (DecimalType(9, 2), st.integers(-(10**9) + 1, 10**9 - 1).map(lambda u: Decimal(u).scaleb(-2))),
    (UUIDType(), st.uuids()),
]
OTHERS: list[IcebergType] = [DoubleType(), TimestamptzType()]
V3_ONLY: list[IcebergType] = [TimestampNanoType(), UnknownType()]


@st.composite
def schemas(draw: Draw, version: int, schema_id: int) -> Schema:
    ids = itertools.count(1)

    def primitive(depth_ok: bool) -> NestedField:
        fid = next(ids)
        name = f"c{fid}"
        choices = len(DEFAULTABLE) + len(OTHERS) + (len(V3_ONLY) if version >= 3 else 0)
        pick = draw(st.integers(0, choices - 1))
        if pick < len(DEFAULTABLE):
            t, values = DEFAULTABLE[pick]
            initial = write = None
            if version >= 3:
                initial = draw(st.none() | values)
                write = draw(st.none() | values)
            required = draw(st.booleans())
            return NestedField(fid, name, t, required, draw(st.none() | TEXT), initial, write)
        pick -= len(DEFAULTABLE)
        t = (OTHERS + V3_ONLY)[pick]
        required = False if isinstance(t, UnknownType) else draw(st.booleans())
        return NestedField(fid, name, t, required)

    def field(depth: int) -> NestedField:
        kind = draw(st.sampled_from(["p", "p", "p", "s", "l", "m"] if depth < 3 else ["p"]))
        if kind == "p":
            return primitive(True)
        fid = next(ids)
        if kind == "s":
            children = [field(depth + 1) for _ in range(draw(st.integers(0, 3)))]
            t: IcebergType = StructType(*children)
        elif kind == "l":
            eid = next(ids)
            t = ListType(eid, field(depth + 1).field_type, draw(st.booleans()))
        else:
            kid, vid = next(ids), next(ids)
            t = MapType(kid, StringType(), vid, field(depth + 1).field_type, draw(st.booleans()))
        return NestedField(fid, f"c{fid}", t, draw(st.booleans()))

    top = [field(0) for _ in range(draw(st.integers(1, 5)))]
    candidates = [
        f.field_id
        for f in top
        if f.required and isinstance(f.field_type, IntegerType | LongType | StringType | DateType)
    ]
    identifiers = draw(st.lists(st.sampled_from(candidates), unique=True)) if candidates else []
    return Schema(*top, schema_id=schema_id, identifier_field_ids=identifiers)


TRANSFORMS = st.sampled_from(
    [
        IdentityTransform(),
        BucketTransform(16),
        TruncateTransform(4),
        DayTransform(),
        VoidTransform(),
    ]
)


@st.composite
def specs(draw: Draw, spec_id: int, source_ids: list[int]) -> PartitionSpec:
    n = draw(st.integers(0, 3))
    fields = [
        PartitionField(draw(st.sampled_from(source_ids)), 1000 + i, draw(TRANSFORMS), f"p{i}")
        for i in range(n)
    ]
    return PartitionSpec(spec_id, tuple(fields))


@st.composite
def sort_orders(draw: Draw, order_id: int, source_ids: list[int]) -> SortOrder:
    fields = [
        SortField(
            draw(st.sampled_from(source_ids)),
            draw(TRANSFORMS),
            draw(st.sampled_from(list(SortDirection))),
            draw(st.sampled_from(list(NullOrder))),
        )
        for _ in range(draw(st.integers(1, 3)))
    ]
    return SortOrder(order_id, tuple(fields))


@st.composite
def metadata(draw: Draw) -> TableMetadata:
    version = draw(st.sampled_from([1, 2, 3]))
    schema_list = [draw(schemas(version, i)) for i in range(draw(st.integers(1, 3)))]
    current = draw(st.sampled_from(schema_list))
    source_ids = sorted(current.field_ids())
    spec_list = [draw(specs(i, source_ids)) for i in range(draw(st.integers(1, 3)))]
    order_list = [UNSORTED_ORDER] + [
        draw(sort_orders(i, source_ids)) for i in range(1, draw(st.integers(1, 3)))
    ]
    last_seq = 0 if version == 1 else draw(st.integers(0, 1000))
    snapshots: list[Snapshot] = []
    for i in range(draw(st.integers(0, 4))):
        sid = draw(SNAPSHOT_IDS.filter(lambda s: s not in {x.snapshot_id for x in snapshots}))
        summary = draw(
            st.none()
            | st.builds(
                Summary, st.sampled_from(list(Operation)), st.dictionaries(NAMES, TEXT, max_size=3)
            )
        )
        legacy = version == 1 and draw(st.booleans())
        snapshots.append(
            Snapshot(
                snapshot_id=sid,
                parent_snapshot_id=snapshots[-1].snapshot_id if snapshots and i % 2 else None,
                sequence_number=0 if version == 1 else draw(st.integers(0, last_seq)),
                timestamp_ms=draw(st.integers(0, 2**45)),
                manifest_list=None if legacy else draw(TEXT),
                summary=summary,
                schema_id=draw(st.none() | st.sampled_from([s.schema_id for s in schema_list])),
                first_row_id=draw(st.integers(0, 2**40)) if version >= 3 else None,
                added_rows=draw(st.integers(0, 2**40)) if version >= 3 else None,
                key_id=draw(st.none() | NAMES) if version >= 3 else None,
                manifests=tuple(draw(st.lists(TEXT, max_size=2))) if legacy else None,
            )
        )
    ids = [s.snapshot_id for s in snapshots]
    current_snapshot = draw(st.none() | st.sampled_from(ids)) if ids else None
    refs: dict[str, SnapshotRef] = {}
    if ids:
        for name in draw(st.lists(NAMES.filter(lambda n: n != MAIN_BRANCH), max_size=3)):
            if draw(st.booleans()):
                refs[name] = SnapshotRef(
                    draw(st.sampled_from(ids)),
                    SnapshotRefType.TAG,
                    max_ref_age_ms=draw(st.none() | POSITIVE),
                )
            else:
                refs[name] = SnapshotRef(
                    draw(st.sampled_from(ids)),
                    SnapshotRefType.BRANCH,
                    draw(st.none() | st.integers(1, 100)),
                    draw(st.none() | POSITIVE),
                    draw(st.none() | POSITIVE),
                )
    if current_snapshot is not None and draw(st.booleans()):
        refs[MAIN_BRANCH] = SnapshotRef(
            current_snapshot, SnapshotRefType.BRANCH, draw(st.none() | st.integers(1, 10))
        )
    statistics = (
        [
            StatisticsFile(
                sid,
                draw(TEXT),
                draw(POSITIVE),
                draw(POSITIVE),
                draw(st.none() | NAMES),
                tuple(
                    BlobMetadata(
                        draw(NAMES),
                        sid,
                        draw(st.integers(0, 99)),
                        tuple(draw(st.lists(st.sampled_from(source_ids), max_size=3))),
                        draw(st.dictionaries(NAMES, TEXT, max_size=2)),
                    )
                    for _ in range(draw(st.integers(0, 2)))
                ),
            )
            for sid in draw(st.lists(st.sampled_from(ids), unique=True))
            if ids
        ]
        if ids
        else []
    )
    partition_statistics = [
        PartitionStatisticsFile(sid, draw(TEXT), draw(POSITIVE))
        for sid in (draw(st.lists(st.sampled_from(ids), unique=True)) if ids else [])
    ]
    return TableMetadata(
        format_version=version,
        table_uuid=str(draw(st.uuids())),
        location="s3://bucket/" + draw(NAMES),
        last_sequence_number=last_seq,
        last_updated_ms=draw(st.integers(0, 2**45)),
        last_column_id=max(s.highest_field_id for s in schema_list) + draw(st.integers(0, 3)),
        schemas=tuple(schema_list),
        current_schema_id=current.schema_id,
        partition_specs=tuple(spec_list),
        default_spec_id=draw(st.sampled_from([s.spec_id for s in spec_list])),
        last_partition_id=max(s.last_assigned_field_id for s in spec_list),
        properties=draw(st.dictionaries(TEXT, TEXT, max_size=4)),
        current_snapshot_id=current_snapshot,
        snapshots=tuple(snapshots),
        snapshot_log=tuple(
            SnapshotLogEntry(draw(st.sampled_from(ids)), draw(st.integers(0, 2**45)))
            for _ in range(draw(st.integers(0, 3)) if ids else 0)
        ),
        metadata_log=tuple(
            MetadataLogEntry(draw(TEXT), draw(st.integers(0, 2**45)))
            for _ in range(draw(st.integers(0, 3)))
        ),
        sort_orders=tuple(order_list),
        default_sort_order_id=draw(st.sampled_from([o.order_id for o in order_list])),
        refs=refs,
        statistics=tuple(statistics),
        partition_statistics=tuple(partition_statistics),
        next_row_id=draw(st.integers(0, 2**50)) if version >= 3 else None,
    )


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(metadata())
def test_write_then_read_is_identity(md: TableMetadata) -> None:
    text = table_metadata_to_json(md)
    back = table_metadata_from_json(text)
    assert back == md
    assert table_metadata_to_json(back) == text
    assert table_metadata_from_dict(table_metadata_to_dict(md)) == md


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metadata())
def test_gzip_write_then_read_is_identity(md: TableMetadata) -> None:
    packed = gzip.compress(table_metadata_to_json(md, indent=2).encode("utf-8"))
    assert table_metadata_from_json(packed) == md


@SETTINGS
@given(metadata())
def test_written_fields_match_format_version(md: TableMetadata) -> None:
    out = table_metadata_to_dict(md)
    v = md.format_version
    assert ("schema" in out) == ("partition-spec" in out) == (v == 1)
    assert ("last-sequence-number" in out) == (v > 1)
    assert ("next-row-id" in out) == (v >= 3)
    assert out["current-snapshot-id"] == (
        -1 if md.current_snapshot_id is None else md.current_snapshot_id
    )
    assert isinstance(out["statistics"], list) and isinstance(out["partition-statistics"], list)
    if md.current_snapshot_id is not None:
        assert out["refs"][MAIN_BRANCH]["snapshot-id"] == md.current_snapshot_id
    uuid.UUID(out["table-uuid"])


# -- robustness: anything malformed is an InvalidMetadataError, never a raw exception --------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | TEXT,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "fields", "id", "name", "x"]) | TEXT, children, max_size=3
        )
    ),
    max_leaves=8,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _parse_or_reject(obj: Any) -> None:
    try:
        md = table_metadata_from_dict(obj)
    except InvalidMetadataError:
        return
    assert table_metadata_from_json(table_metadata_to_json(md)) == md


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metadata(), st.data())
def test_mutated_documents_fail_cleanly(md: TableMetadata, data: st.DataObject) -> None:
    doc = table_metadata_to_dict(md)
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    mutated = copy.deepcopy(doc)
    parent = mutated
    for key in path[:-1]:
        parent = parent[key]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(JSON_VALUES)
    _parse_or_reject(mutated)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64) | st.text(max_size=64))
def test_random_input_fails_cleanly(data: bytes | str) -> None:
    with pytest.raises(InvalidMetadataError):
        table_metadata_from_json(data)
    with pytest.raises(InvalidMetadataError):
        table_metadata_from_json(
            gzip.compress(
                data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
            )
        )
