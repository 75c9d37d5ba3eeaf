"""Name mappings: JSON form, lookups (spec Appendix C example), creation and update."""

from __future__ import annotations

import json

import pytest

from icepark.errors import InvalidSchemaError
from icepark.spec.name_mapping import (
    ROOT_PARENT_ID,
    MappedField,
    NameMapping,
    create_name_mapping,
    name_mapping_from_json,
    name_mapping_to_json,
    update_name_mapping,
)
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)

# EXPECTED.md 7.5 (spec Appendix C example)
SPEC_EXAMPLE = (
    '[{"field-id":1,"names":["id","record_id"]},{"field-id":2,"names":["data"]},'
    '{"field-id":3,"names":["location"],"fields":[{"field-id":4,"names":["latitude","lat"]},'
    '{"field-id":5,"names":["longitude","long"]}]}]'
)


def _id(mapping: NameMapping, *path: str) -> int | None:
    found = mapping.find(*path)
    return None if found is None else found.field_id


def test_spec_example_resolution() -> None:
    mapping = name_mapping_from_json(SPEC_EXAMPLE)
    assert _id(mapping, "id") == 1
    assert _id(mapping, "record_id") == 1
    assert _id(mapping, "data") == 2
    assert _id(mapping, "location") == 3
    assert _id(mapping, "location", "lat") == 4
    assert _id(mapping, "location", "latitude") == 4
    assert _id(mapping, "location", "long") == 5
    assert _id(mapping, "location", "longitude") == 5
    assert mapping.find("lat") is None
    assert mapping.find("location", "alt") is None
    assert mapping.find("location.lat") is None  # names are literal, never dotted paths
    assert mapping.find() is None
    assert mapping.find_by_id(4) == MappedField(4, ("latitude", "lat"))
    assert mapping.find_by_id(99) is None
    location = mapping.find("location")
    assert location is not None and location.field("long") == MappedField(5, ("longitude", "long"))


def test_spec_example_json_round_trip() -> None:
    mapping = name_mapping_from_json(SPEC_EXAMPLE)
    text = name_mapping_to_json(mapping)
    assert json.loads(text) == json.loads(SPEC_EXAMPLE)
    assert name_mapping_from_json(text) == mapping
    assert text.startswith('[{"field-id": 1, "names": ["id", "record_id"]}, ')


def test_json_optional_parts() -> None:
    mapping = name_mapping_from_json(
        '[{"names": ["extra"]}, {"field-id": 7, "names": []}, {"field-id": 8, "names": ["x"],'
        ' "fields": null}]'
    )
    assert mapping.fields == (
        MappedField(None, ("extra",)),
        MappedField(7, ()),
        MappedField(8, ("x",)),
    )
    assert json.loads(name_mapping_to_json(mapping)) == [
        {"names": ["extra"]},
        {"field-id": 7, "names": []},
        {"field-id": 8, "names": ["x"]},
    ]
    assert name_mapping_from_json(b"[]") == NameMapping()
    assert name_mapping_from_json([{"field-id": 1, "names": ["a"]}]).find("a") == MappedField(
        1, ("a",)
    )


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "not json",
        '[{"field-id": 1}]',
        '[{"field-id": "1", "names": ["a"]}]',
        '[{"field-id": true, "names": ["a"]}]',
        '[{"field-id": 1, "names": "a"}]',
        '[{"field-id": 1, "names": [1]}]',
        '[{"field-id": 1, "names": ["a"], "fields": {}}]',
        "[1]",
    ],
)
def test_json_malformed(text: str) -> None:
    with pytest.raises(InvalidSchemaError, match="name mapping"):
        name_mapping_from_json(text)


def test_duplicate_ids_rejected_on_id_lookup() -> None:
    mapping = name_mapping_from_json(
        '[{"field-id": 1, "names": ["a"]}, {"field-id": 1, "names": ["b"]}]'
    )
    assert _id(mapping, "b") == 1
    with pytest.raises(InvalidSchemaError, match="not unique"):
        mapping.find_by_id(1)


NESTED = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(
        2,
        "location",
        StructType(NestedField(5, "lat", DoubleType()), NestedField(6, "long", DoubleType())),
    ),
    NestedField(3, "tags", ListType(7, StringType(), element_required=False)),
    NestedField(
        4,
        "props",
        MapType(
            8,
            StringType(),
            9,
            StructType(NestedField(10, "v", IntegerType())),
            value_required=False,
        ),
    ),
)


def test_create_name_mapping() -> None:
    mapping = create_name_mapping(NESTED)
    assert mapping == NameMapping(
        [
            MappedField(1, ("id",)),
            MappedField(2, ("location",), (MappedField(5, ("lat",)), MappedField(6, ("long",)))),
            MappedField(3, ("tags",), (MappedField(7, ("element",)),)),
            MappedField(
                4,
                ("props",),
                (MappedField(8, ("key",)), MappedField(9, ("value",), (MappedField(10, ("v",)),))),
            ),
        ]
    )
    assert _id(mapping, "props", "value", "v") == 10
    assert _id(mapping, "tags", "element") == 7
    assert create_name_mapping(NESTED.as_struct()) == mapping
    assert json.loads(name_mapping_to_json(mapping))[2] == {
        "field-id": 3,
        "names": ["tags"],
        "fields": [{"field-id": 7, "names": ["element"]}],
    }


def test_update_rename_keeps_old_names() -> None:
    mapping = create_name_mapping(NESTED)
    updated = update_name_mapping(
        mapping,
        {
            1: NestedField(1, "record_id", LongType(), required=True),
            5: NestedField(5, "latitude", DoubleType()),
        },
        {},
    )
    assert updated.find("id") == updated.find("record_id") == MappedField(1, ("id", "record_id"))
    assert _id(updated, "location", "lat") == _id(updated, "location", "latitude") == 5
    assert update_name_mapping(mapping, {}, {}) == mapping


def test_update_adds_fields_at_root_and_nested() -> None:
    mapping = create_name_mapping(NESTED)
    added_root = NestedField(11, "point", StructType(NestedField(12, "x", DoubleType())))
    added_nested = NestedField(13, "alt", DoubleType())
    added_in_value = NestedField(14, "w", LongType())
    updated = update_name_mapping(
        mapping, {}, {ROOT_PARENT_ID: [added_root], 2: [added_nested], 9: [added_in_value]}
    )
    assert updated.fields[-1] == MappedField(11, ("point",), (MappedField(12, ("x",)),))
    assert _id(updated, "point", "x") == 12
    assert _id(updated, "location", "alt") == 13
    assert _id(updated, "props", "value", "w") == 14
    assert _id(updated, "props", "value", "v") == 10


def test_update_reassigned_name_moves_to_new_field() -> None:
    # rename 'id' -> 'old_id', then add a new column called 'id'
    mapping = create_name_mapping(NESTED)
    updated = update_name_mapping(
        mapping,
        {1: NestedField(1, "old_id", LongType(), required=True)},
        {ROOT_PARENT_ID: [NestedField(11, "id", StringType())]},
    )
    assert _id(updated, "id") == 11
    assert _id(updated, "old_id") == 1
    assert updated.find_by_id(1) == MappedField(1, ("old_id",))


def test_update_rename_to_sibling_name_strips_it() -> None:
    # 'lat' renamed to 'long' while the old 'long' field is renamed to 'lng'
    mapping = create_name_mapping(NESTED)
    updated = update_name_mapping(
        mapping,
        {5: NestedField(5, "long", DoubleType()), 6: NestedField(6, "lng", DoubleType())},
        {},
    )
    assert _id(updated, "location", "long") == 5
    assert _id(updated, "location", "lng") == 6
    assert _id(updated, "location", "lat") == 5
    assert updated.find_by_id(6) == MappedField(6, ("lng",))


def test_update_readded_id_is_merged() -> None:
    mapping = NameMapping([MappedField(1, ("a",)), MappedField(2, ("b",))])
    updated = update_name_mapping(
        mapping, {}, {ROOT_PARENT_ID: [NestedField(2, "c", IntegerType())]}
    )
    assert updated.fields == (MappedField(1, ("a",)), MappedField(2, ("b", "c")))


def test_mapped_field_accepts_lists() -> None:
    f = MappedField(1, ["a", "b"], [MappedField(2, ["c"])])  # type: ignore[arg-type]
    assert f.names == ("a", "b") and f.fields == (MappedField(2, ("c",)),)
    assert hash(f) == hash(MappedField(1, ("a", "b"), (MappedField(2, ("c",)),)))
    assert "a, b" in str(f)
