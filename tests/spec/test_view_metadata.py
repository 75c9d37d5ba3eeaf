"""View metadata: the conformance corpus (EXPECTED.md section 5), JSON round trips, and the
builder's rules (Java's ViewMetadata.Builder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import InvalidMetadataError, RequirementFailedError, ValidationError
from icepark.spec.requirements import table_requirement_from_json
from icepark.spec.schema import Schema
from icepark.spec.types import LongType, NestedField, StringType
from icepark.spec.updates import SetPropertiesUpdate, table_update_from_json
from icepark.spec.view_builder import (
    LAST_ADDED,
    AddViewVersionUpdate,
    AssertViewUUID,
    SetCurrentViewVersionUpdate,
    ViewMetadataBuilder,
    new_view_metadata,
    view_update_from_json,
)
from icepark.spec.view_metadata import (
    SQLViewRepresentation,
    ViewMetadata,
    ViewVersion,
    read_view_metadata_json,
    view_metadata_from_json,
    view_metadata_to_json,
)

VIEWS = (
    Path(__file__).parents[2]
    / ".."
    / "shared"
    / "conformance"
    / "apache-iceberg/core/src/test/resources/org/apache/iceberg/view"
)


def _load(name: str) -> bytes:
    path = VIEWS / name
    if not path.is_file():
        pytest.skip("../shared/conformance is absent")
    return path.read_bytes()


def _roundtrip(md: ViewMetadata) -> ViewMetadata:
    doc = view_metadata_to_json(md)
    back = view_metadata_from_json(json.loads(json.dumps(doc)))
    assert back == md
    assert view_metadata_to_json(back) == doc
    return back


# -- conformance ------------------------------------------------------------------------------


def test_valid_view_metadata_loads_as_expected() -> None:
    md = read_view_metadata_json(_load("ValidViewMetadata.json"))
    assert md.view_uuid == "fa6506c3-7681-40c8-86dc-e36561f83385"
    assert md.format_version == 1
    assert md.location == "s3://bucket/test/location"
    assert dict(md.properties) == {"some-key": "some-value", "comment": "some-comment"}
    assert md.current_schema_id == 0
    assert [f.name for f in md.schema.fields] == ["x", "y", "z"]
    assert md.current_version_id == 2
    assert md.current_version.sql_for("spark-sql") == "select 1 id, 'abc' data"
    assert md.version(1) is not None and md.version(1).sql_for("SPARK-SQL") == "select 'foo' foo"  # type: ignore[union-attr]
    assert [(e.timestamp_ms, e.version_id) for e in md.version_log] == [(4353, 1), (5555, 2)]
    _roundtrip(md)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ViewMetadataMissingLocation.json", "location"),
        ("ViewMetadataMissingCurrentVersion.json", "current-version-id"),
    ],
)
def test_invalid_view_metadata_fails_on_load(name: str, message: str) -> None:
    with pytest.raises(InvalidMetadataError, match=message):
        read_view_metadata_json(_load(name), name)


def test_unknown_current_version_fails_when_resolved() -> None:
    md = read_view_metadata_json(_load("ViewMetadataInvalidCurrentVersion.json"))
    with pytest.raises(InvalidMetadataError, match=r"current version 1234.*\[1, 2\]"):
        _ = md.current_version


def test_unknown_current_schema_fails_when_resolved() -> None:
    md = read_view_metadata_json(_load("ViewMetadataInvalidCurrentSchema.json"))
    assert md.current_version_id == 2
    with pytest.raises(InvalidMetadataError, match=r"schema with id 1234.*\[1\]"):
        _ = md.schema


def test_two_queries_for_one_dialect_are_tolerated_on_read() -> None:
    md = read_view_metadata_json(_load("ViewMetadataMultipleSQLsForDialect.json"))
    assert md.current_version_id == 1 and md.current_schema_id == 0
    assert len(md.current_version.representations) == 2


def test_unsupported_format_version_and_bad_json_are_typed() -> None:
    doc = json.loads(_load("ValidViewMetadata.json"))
    doc["format-version"] = 2
    with pytest.raises(InvalidMetadataError, match="format version: 2"):
        view_metadata_from_json(doc)
    with pytest.raises(InvalidMetadataError, match=r"v\.json"):
        read_view_metadata_json(b"{not json", "v.json")
    with pytest.raises(InvalidMetadataError, match="timestamp-ms"):
        view_metadata_from_json({**doc, "format-version": 1, "versions": [{"version-id": 1}]})


# -- round trips ------------------------------------------------------------------------------

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "name", StringType()))
_names = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FFF), min_size=1, max_size=12)


def _version(version_id: int, sql: str, dialect: str = "spark", **kw: object) -> ViewVersion:
    args: dict = {
        "version_id": version_id,
        "timestamp_ms": 1000 + version_id,
        "schema_id": 0,
        "representations": (SQLViewRepresentation(sql=sql, dialect=dialect),),
        "default_namespace": ("db",),
        "summary": {"engine-name": "icepark"},
    }
    args.update(kw)
    return ViewVersion(**args)


@settings(max_examples=60, deadline=None)
@given(
    sqls=st.lists(_names, min_size=1, max_size=14),
    dialects=st.lists(st.sampled_from(["spark", "trino", "presto"]), min_size=1, max_size=3),
    props=st.dictionaries(_names, _names, max_size=3),
    catalog=st.none() | _names,
    namespace=st.lists(_names, max_size=3),
)
def test_built_metadata_round_trips(
    sqls: list[str], dialects: list[str], props: dict, catalog: str | None, namespace: list
) -> None:
    md, _ = new_view_metadata("file:/wh/v", SCHEMA, _version(1, sqls[0]), props)
    for sql in sqls[1:]:
        reps = tuple(
            SQLViewRepresentation(sql=sql, dialect=d) for d in dict.fromkeys(["spark", *dialects])
        )
        builder = ViewMetadataBuilder(md)
        new = _version(
            0,
            sql,
            representations=reps,
            default_catalog=catalog,
            default_namespace=tuple(namespace),
        )
        builder.set_current_version(new, SCHEMA)
        md = builder.build()
        _roundtrip(md)
    assert len(md.versions) <= 10
    assert md.current_version.sql_for("spark") == sqls[-1]


# -- the builder's rules ----------------------------------------------------------------------


def test_create_assigns_ids_and_logs_the_first_version() -> None:
    md, changes = new_view_metadata("file:/wh/v", SCHEMA.with_schema_id(7), _version(5, "select 1"))
    assert md.current_version_id == 5 and md.current_schema_id == 0
    assert [(e.timestamp_ms, e.version_id) for e in md.version_log] == [(1005, 5)]
    actions = [c.action for c in changes]
    assert actions == [
        "assign-uuid",
        "set-location",
        "add-schema",
        "add-view-version",
        "set-current-view-version",
    ]
    # ids added in the same change are written as -1, as Java's builder does
    add = changes[3]
    assert isinstance(add, AddViewVersionUpdate) and add.view_version.schema_id == LAST_ADDED
    assert changes[4] == SetCurrentViewVersionUpdate(LAST_ADDED)


def test_replaying_the_changes_rebuilds_the_same_view() -> None:
    md, changes = new_view_metadata("file:/wh/v", SCHEMA, _version(1, "select 1"), {"a": "b"})
    builder = ViewMetadataBuilder()
    for change in changes:
        builder.apply(view_update_from_json(change.to_json()))
    assert builder.build() == md


def test_an_equal_version_reuses_its_id_and_new_ids_follow_the_highest() -> None:
    md, _ = new_view_metadata("file:/wh/v", SCHEMA, _version(1, "select 1"))
    b = ViewMetadataBuilder(md)
    b.set_current_version(_version(1, "select 2"), SCHEMA)
    md2 = b.build()
    assert md2.current_version_id == 2 and len(md2.versions) == 2
    b = ViewMetadataBuilder(md2)
    b.set_current_version(_version(9, "select 1", timestamp_ms=99), SCHEMA)  # same query as 1
    md3 = b.build()
    assert md3.current_version_id == 1 and len(md3.versions) == 2
    assert md3.version_log[-1].version_id == 1  # logged again, now
    assert md3.version_log[-1].timestamp_ms > 10**12


def test_a_new_schema_gets_the_next_id_and_an_equal_one_is_reused() -> None:
    md, _ = new_view_metadata("file:/wh/v", SCHEMA, _version(1, "select 1"))
    wider = Schema(*SCHEMA.fields, NestedField(3, "n", LongType()))
    b = ViewMetadataBuilder(md)
    b.set_current_version(_version(1, "select 1, 2"), wider)
    md2 = b.build()
    assert [s.schema_id for s in md2.schemas] == [0, 1] and md2.current_schema_id == 1
    b = ViewMetadataBuilder(md2)
    assert b.add_schema(SCHEMA.with_schema_id(42)) == 0


def test_two_queries_for_one_dialect_are_refused_on_write() -> None:
    reps = (
        SQLViewRepresentation(sql="select 1", dialect="spark"),
        SQLViewRepresentation(sql="select 2", dialect="SPARK"),
    )
    with pytest.raises(ValidationError, match="multiple queries for dialect spark"):
        new_view_metadata("file:/wh/v", SCHEMA, _version(1, "x", representations=reps))


def test_dropping_a_dialect_needs_the_property() -> None:
    reps = (
        SQLViewRepresentation(sql="select 1", dialect="spark"),
        SQLViewRepresentation(sql="select 1", dialect="trino"),
    )
    md, _ = new_view_metadata("file:/wh/v", SCHEMA, _version(1, "x", representations=reps))
    b = ViewMetadataBuilder(md)
    b.set_current_version(_version(1, "select 2"), SCHEMA)
    with pytest.raises(ValidationError, match=r"loss of view dialects.*\['spark', 'trino'\]"):
        b.build()
    b = ViewMetadataBuilder(md)
    b.set_properties({"replace.drop-dialect.allowed": "true"})
    b.set_current_version(_version(1, "select 2"), SCHEMA)
    assert b.build().current_version.dialects == {"spark"}


def test_old_versions_expire_and_the_log_restarts_after_them() -> None:
    md, _ = new_view_metadata(
        "file:/wh/v", SCHEMA, _version(1, "select 0"), {"version.history.num-entries": "3"}
    )
    for i in range(1, 6):
        b = ViewMetadataBuilder(md)
        b.set_current_version(_version(1, f"select {i}"), SCHEMA)
        md = b.build()
    assert sorted(v.version_id for v in md.versions) == [4, 5, 6]
    assert [e.version_id for e in md.version_log] == [4, 5, 6]
    with pytest.raises(ValidationError, match="must be positive"):
        b = ViewMetadataBuilder(md)
        b.set_properties({"version.history.num-entries": "0"})
        b.build()


def test_unknown_schema_and_version_ids_are_refused() -> None:
    md, _ = new_view_metadata("file:/wh/v", SCHEMA, _version(1, "select 1"))
    with pytest.raises(ValidationError, match="unknown schema: 5"):
        ViewMetadataBuilder(md).add_version(_version(3, "select 3", schema_id=5))
    with pytest.raises(ValidationError, match="unknown version: 8"):
        ViewMetadataBuilder(md).set_current_version_id(8)
    with pytest.raises(ValidationError, match="no current version id"):
        ViewMetadataBuilder(md).set_current_version_id(LAST_ADDED)
    with pytest.raises(ValidationError, match="reassign"):
        ViewMetadataBuilder(md).assign_uuid("other")
    with pytest.raises(ValidationError, match="no versions"):
        ViewMetadataBuilder().set_location("file:/x").build()


def test_view_updates_and_requirement_parse_from_rest_json() -> None:
    md, _ = new_view_metadata("file:/wh/v", SCHEMA, _version(1, "select 1"))
    add = table_update_from_json(AddViewVersionUpdate(_version(2, "q")).to_json())
    assert isinstance(add, AddViewVersionUpdate) and add.view_version == _version(2, "q")
    with pytest.raises(ValidationError, match="'add-snapshot' to a view"):
        view_update_from_json({"action": "add-snapshot", "snapshot": {}})
    assert view_update_from_json(SetPropertiesUpdate({"k": "v"}).to_json()) == SetPropertiesUpdate(
        {"k": "v"}
    )
    req = table_requirement_from_json({"type": "assert-view-uuid", "uuid": md.view_uuid.upper()})
    assert isinstance(req, AssertViewUUID)
    req.validate(md)
    with pytest.raises(RequirementFailedError, match="view UUID does not match"):
        AssertViewUUID("nope").validate(md)
