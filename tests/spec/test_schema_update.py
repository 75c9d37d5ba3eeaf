"""Pure schema evolution: recorded changes applied to a Schema."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.spec.partitioning import build_partition_spec
from icepark.spec.schema import Schema
from icepark.spec.schema_update import (
    AddColumn,
    DeleteColumn,
    MoveColumn,
    RenameColumn,
    SchemaChange,
    SetIdentifierFields,
    UnionByName,
    UpdateColumn,
    apply_schema_changes,
    is_promotion_allowed,
    to_path,
    to_type,
)
from icepark.spec.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    UnknownType,
)

BASE = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "age", IntegerType()),
    NestedField(
        4, "loc", StructType(NestedField(5, "lat", FloatType()), NestedField(6, "lon", FloatType()))
    ),
    NestedField(7, "pts", ListType(8, StructType(NestedField(9, "x", IntegerType())))),
    NestedField(10, "props", MapType(11, StringType(), 12, IntegerType())),
    schema_id=0,
    identifier_field_ids=[1],
)


def _apply(*changes: SchemaChange, **kw: object) -> Schema:
    return apply_schema_changes(BASE, 12, changes, **kw).schema  # type: ignore[arg-type]


def test_paths_and_types() -> None:
    assert to_path("a.b") == ("a", "b") and to_path(("a.b",)) == ("a.b",)
    assert to_type("decimal(12,2)") == DecimalType(12, 2) and to_type(LongType()) == LongType()


def test_promotions() -> None:
    assert is_promotion_allowed(IntegerType(), LongType())
    assert is_promotion_allowed(FloatType(), DoubleType())
    assert is_promotion_allowed(DecimalType(9, 2), DecimalType(12, 2))
    assert not is_promotion_allowed(DecimalType(9, 2), DecimalType(12, 3))
    assert not is_promotion_allowed(DecimalType(12, 2), DecimalType(9, 2))
    assert not is_promotion_allowed(LongType(), IntegerType())
    assert not is_promotion_allowed(IntegerType(), DoubleType())
    assert is_promotion_allowed(UnknownType(), StringType(), 3)
    assert not is_promotion_allowed(UnknownType(), StringType(), 2)


def test_add_fresh_ids_and_positions() -> None:
    result = apply_schema_changes(
        BASE,
        12,
        [
            AddColumn(("a",), ListType(0, StructType(NestedField(0, "q", IntegerType())))),
            AddColumn(("loc", "alt"), DoubleType(), first=True),
            AddColumn(("pts", "y"), LongType(), after=("x",)),
            AddColumn(("b",), IntegerType(), before=("name",)),
        ],
    )
    s = result.schema
    a = s.find_field("a")
    assert a.field_id == 13
    assert isinstance(a.field_type, ListType) and a.field_type.element_id == 14
    assert s.find_field("a.element.q").field_id == 15
    assert s.find_field("loc.alt").field_id == 16
    assert [f.name for f in s.find_type("loc").fields] == ["alt", "lat", "lon"]  # type: ignore[attr-defined]
    assert s.find_field("pts.element.y").field_id == 17
    assert [f.name for f in s.fields] == ["id", "b", "name", "age", "loc", "pts", "props", "a"]
    assert result.last_column_id == 18
    assert result.added[-1][0].name == "a" and result.added[8][0].name == "y"


def test_last_column_id_is_never_reused() -> None:
    # ids above the schema's highest (from dropped columns) stay used
    s = apply_schema_changes(BASE, 40, [AddColumn(("n",), IntegerType())]).schema
    assert s.find_field("n").field_id == 41


def test_delete_rename_update_move() -> None:
    s = _apply(
        DeleteColumn(("name",)),
        RenameColumn(("loc", "lon"), "lng"),
        UpdateColumn(("age",), LongType(), doc="years"),
        UpdateColumn(("pts", "x"), LongType()),
        UpdateColumn(("pts", "element"), required=False),
        UpdateColumn(("props", "value"), LongType()),
        MoveColumn(("age",), "first"),
        MoveColumn(("loc", "lat"), "after", ("loc", "lon")),
    )
    assert [f.name for f in s.fields] == ["age", "id", "loc", "pts", "props"]
    assert s.find_field("age").field_type == LongType() and s.find_field("age").doc == "years"
    assert [f.name for f in s.find_type("loc").fields] == ["lng", "lat"]  # type: ignore[attr-defined]
    assert s.find_field("loc.lng").field_id == 6
    pts = s.find_type("pts")
    assert isinstance(pts, ListType) and not pts.element_required
    assert s.find_field("pts.element.x").field_type == LongType()
    props = s.find_type("props")
    assert isinstance(props, MapType) and props.value_type == LongType()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ([UpdateColumn(("name",), IntegerType())], "column type: name: string -> int"),
        ([UpdateColumn(("age",), DoubleType())], "Cannot change column type: age"),
        ([UpdateColumn(("loc",), StringType())], "Cannot change column type: loc"),
        ([UpdateColumn(("name",), required=True)], "nullability: name: optional -> required"),
        ([DeleteColumn(("id",))], "Cannot delete identifier field id"),
        ([DeleteColumn(("nope",))], "Cannot delete missing column: nope"),
        ([DeleteColumn(("pts", "element"))], "element, key or value"),
        ([RenameColumn(("name",), "age")], "Duplicate field names.*age"),
        ([AddColumn(("age",), IntegerType())], "name already exists: age"),
        ([AddColumn(("x",), IntegerType()), AddColumn(("x",), IntegerType())], "already added: x"),
        ([AddColumn(("age", "x"), IntegerType())], "non-struct column age"),
        ([AddColumn(("x",), IntegerType(), required=True)], "without a default value: x"),
        ([AddColumn(("x",), IntegerType(), initial_default=1)], "defaults need format v3"),
        ([MoveColumn(("loc", "lat"), "before", ("id",))], "different struct"),
        ([MoveColumn(("age",), "after", ("age",))], "itself"),
        ([MoveColumn(("nope",), "first")], "missing column: nope"),
        ([DeleteColumn(("name",)), RenameColumn(("name",), "n")], "will be deleted: name"),
        ([RenameColumn(("name",), "n"), DeleteColumn(("name",))], "has updates: name"),
        ([SetIdentifierFields(("age",))], "not a required field"),
        ([SetIdentifierFields(("nope",))], "no such column"),
        ([DeleteColumn(("loc",)), AddColumn(("loc", "z"), IntegerType())], "will be deleted"),
    ],
)
def test_refusals(changes: list[SchemaChange], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _apply(*changes)


def test_allow_incompatible() -> None:
    s = _apply(
        AddColumn(("x",), IntegerType(), required=True),
        UpdateColumn(("name",), required=True),
        allow_incompatible_changes=True,
    )
    assert s.find_field("x").required and s.find_field("name").required


def test_v3_defaults() -> None:
    s = _apply(
        AddColumn(("x",), IntegerType(), required=True, initial_default=3, write_default=4),
        format_version=3,
    )
    f = s.find_field("x")
    assert (f.initial_default, f.write_default) == (3, 4)
    with pytest.raises(ValidationError, match="Invalid default value for x"):
        _apply(AddColumn(("x",), IntegerType(), initial_default="no"), format_version=3)


def test_partition_and_sort_sources_cannot_be_deleted() -> None:
    spec = build_partition_spec(BASE, ["loc.lat"])
    with pytest.raises(ValidationError, match="Cannot delete column loc: used by partition field"):
        apply_schema_changes(BASE, 12, [DeleteColumn(("loc",))], spec=spec)
    apply_schema_changes(BASE, 12, [DeleteColumn(("age",))], spec=spec)


def test_identifier_fields_follow_renames_and_can_be_replaced() -> None:
    s = _apply(RenameColumn(("id",), "key"))
    assert s.identifier_field_names == ["key"]
    s = _apply(SetIdentifierFields(()), DeleteColumn(("id",)))
    assert s.identifier_field_ids == ()


def test_union_by_name() -> None:
    other = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "age", LongType()),
        NestedField(3, "loc", StructType(NestedField(4, "alt", DoubleType()))),
        NestedField(
            5,
            "pts",
            ListType(
                6, StructType(NestedField(7, "x", LongType()), NestedField(8, "w", IntegerType()))
            ),
        ),
        NestedField(9, "new", MapType(10, StringType(), 11, IntegerType())),
    )
    s = _apply(SetIdentifierFields(()), UnionByName(other))
    assert not s.find_field("id").required
    assert s.find_field("age").field_type == LongType()
    assert s.find_field("loc.alt").field_id == 13
    assert s.find_field("pts.element.w").field_id == 14
    assert s.find_field("pts.element.x").field_type == LongType()
    assert s.find_field("new").field_id == 15 and s.find_field("new.key").field_id == 16
    assert s.column_names()[:3] == ["id", "name", "age"]  # nothing dropped or reordered
    # a narrower type in the new schema is ignored; an incompatible one refused
    narrower = Schema(NestedField(1, "age", IntegerType()))
    assert _apply(UnionByName(narrower)).find_field("age").field_type == IntegerType()
    with pytest.raises(ValidationError, match="Cannot change column type: name"):
        _apply(UnionByName(Schema(NestedField(1, "name", IntegerType()))))


def test_case_insensitive() -> None:
    s = _apply(RenameColumn(("NAME",), "n"), case_sensitive=False)
    assert s.find_field("n").field_id == 2
    with pytest.raises(ValidationError):
        _apply(RenameColumn(("NAME",), "n"))


_NAMES = st.sampled_from(["a", "b", "c", "name", "age"])
_CHANGE = st.one_of(
    st.builds(lambda n: AddColumn((n,), IntegerType()), _NAMES),
    st.builds(lambda n: DeleteColumn((n,)), _NAMES),
    st.builds(lambda n, m: RenameColumn((n,), m), _NAMES, _NAMES),
)


@given(st.lists(_CHANGE, max_size=8))
def test_random_changes_keep_ids_unique(changes: list[SchemaChange]) -> None:
    schema, last = BASE, 12
    for change in changes:
        try:
            result = apply_schema_changes(schema, last, [change])
        except ValidationError:
            continue
        new_ids = result.schema.field_ids() - schema.field_ids()
        assert all(i > last for i in new_ids)
        assert result.last_column_id >= max(result.schema.field_ids())
        for fid in result.schema.field_ids() & schema.field_ids():
            # a surviving id keeps its type
            assert result.schema.find_type(fid) == schema.find_type(fid)
        schema, last = result.schema, result.last_column_id


def test_tuple_paths_allow_dots_in_names() -> None:
    s = _apply(AddColumn(("a.b",), IntegerType()))
    s2 = apply_schema_changes(
        s, 13, [RenameColumn(("a.b",), "c"), AddColumn(("pts", "w.z"), IntegerType())]
    ).schema
    assert s2.find_field("c").field_id == 13
    assert s2.find_field(14).name == "w.z"
