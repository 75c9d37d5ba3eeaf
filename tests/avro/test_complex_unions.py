"""Complex unions in Avro data files (written by fastavro from schemas without ids, read
through a name mapping): ``struct<tag, field0, ...>`` with the tag the number of the non-null
branch taken, at the top level and inside records, arrays and maps, and every projection of a
subset of the branches giving what the full read gives for them (a hypothesis property over
random union schemas and values)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.arrow.reader import read_data_file
from icepark.avro.file_schema import avro_to_iceberg_schema, resolve_file_schema
from icepark.errors import InvalidAvroFileError
from icepark.io.pyarrow_fileio import PyArrowFileIO
from icepark.spec.manifests import DataFile, FileContent
from icepark.spec.name_mapping import create_name_mapping
from icepark.spec.schema import Schema, prune_columns
from icepark.spec.types import (
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)

IO = PyArrowFileIO()


def _write(path: Path, avro: dict[str, Any], records: list[dict[str, Any]]) -> DataFile:
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(avro), records, codec="deflate", sync_interval=200)
    return DataFile(FileContent.DATA, str(path), "AVRO", (), len(records), path.stat().st_size)


def _read(df: DataFile, table: Schema, projected: Schema) -> list[dict[str, Any]]:
    batches = read_data_file(
        IO,
        df,
        projected_schema=projected,
        table_schema=table,
        partition_spec=None,
        row_filter=None,
        name_mapping=create_name_mapping(table),
    )
    return pa.Table.from_batches(list(batches)).to_pylist()


# -- a fixed schema with unions everywhere ---------------------------------------------------

POINT = {
    "type": "record",
    "name": "Point",
    "fields": [{"name": "x", "type": "long"}, {"name": "y", "type": ["null", "string"]}],
}
FIXED_AVRO = {
    "type": "record",
    "name": "event",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "u", "type": ["null", "int", "string", POINT]},
        {"name": "plain", "type": ["null", "string"]},
        {"name": "two", "type": ["long", "string"]},
        {
            "name": "inner",
            "type": {
                "type": "record",
                "name": "Inner",
                "fields": [{"name": "v", "type": ["string", "Point", "null"]}],
            },
        },
        {"name": "arr", "type": {"type": "array", "items": ["null", "long", "string"]}},
        {"name": "m", "type": {"type": "map", "values": ["int", "Point"]}},
    ],
}
FIXED_RECORDS = [
    {
        "id": 1,
        "u": ("int", 7),
        "plain": "p",
        "two": ("string", "s"),
        "inner": {"v": ("Point", {"x": 3, "y": None})},
        "arr": [("long", 5), None, ("string", "e")],
        "m": {"k": ("int", 1), "q": ("Point", {"x": 9, "y": "yy"})},
    },
    {
        "id": 2,
        "u": None,
        "plain": None,
        "two": ("long", -4),
        "inner": {"v": None},
        "arr": [],
        "m": {},
    },
    {
        "id": 3,
        "u": ("Point", {"x": -1, "y": "w"}),
        "plain": "q",
        "two": ("long", 0),
        "inner": {"v": ("string", "z")},
        "arr": [("string", "only")],
        "m": {"a": ("int", -2)},
    },
]


def _u(tag: int | None, n: int, value: Any = None) -> dict[str, Any] | None:
    if tag is None:
        return None
    out: dict[str, Any] = {"tag": tag}
    for i in range(n):
        out[f"field{i}"] = value if i == tag else None
    return out


FIXED_EXPECTED = [
    {
        "id": 1,
        "u": _u(0, 3, 7),
        "plain": "p",
        "two": _u(1, 2, "s"),
        "inner": {"v": _u(1, 2, {"x": 3, "y": None})},
        "arr": [_u(0, 2, 5), None, _u(1, 2, "e")],
        "m": [("k", _u(0, 2, 1)), ("q", _u(1, 2, {"x": 9, "y": "yy"}))],
    },
    {
        "id": 2,
        "u": None,
        "plain": None,
        "two": _u(0, 2, -4),
        "inner": {"v": None},
        "arr": [],
        "m": [],
    },
    {
        "id": 3,
        "u": _u(2, 3, {"x": -1, "y": "w"}),
        "plain": "q",
        "two": _u(0, 2, 0),
        "inner": {"v": _u(0, 2, "z")},
        "arr": [_u(1, 2, "only")],
        "m": [("a", _u(0, 2, -2))],
    },
]


def test_schema_conversion_gives_structs_with_tag_and_branch_fields() -> None:
    schema = avro_to_iceberg_schema(FIXED_AVRO)
    u = schema.find_field("u")
    assert not u.required and isinstance(u.field_type, StructType)
    assert [f.name for f in u.field_type.fields] == ["tag", "field0", "field1", "field2"]
    assert u.field_type.fields[0].required and isinstance(
        u.field_type.fields[0].field_type, IntegerType
    )
    assert all(not f.required for f in u.field_type.fields[1:])
    assert isinstance(u.field_type.fields[3].field_type, StructType)  # a record branch
    assert schema.find_field("plain").field_type == StringType()  # [null, T] stays optional T
    assert schema.find_field("two").required
    arr = schema.find_field("arr").field_type
    assert isinstance(arr, ListType) and not arr.element_required
    m = schema.find_field("m").field_type
    assert isinstance(m, MapType) and m.value_required
    # the mapping of that schema resolves every branch of the file to its field id
    resolved = resolve_file_schema("f", FIXED_AVRO, create_name_mapping(schema))
    assert resolved.struct == schema.as_struct()


def test_full_read_and_tags(tmp_path: Path) -> None:
    df = _write(tmp_path / "u.avro", FIXED_AVRO, FIXED_RECORDS)
    schema = avro_to_iceberg_schema(FIXED_AVRO)
    assert _read(df, schema, schema) == FIXED_EXPECTED


def _branch_ids(schema: Schema) -> list[list[int]]:
    """For each union struct of ``schema``: the ids of its tag and branch fields."""
    out = []
    for _, f in _walk(schema.as_struct()):
        t = f.field_type
        if isinstance(t, StructType) and t.fields and t.fields[0].name == "tag":
            out.append([c.field_id for c in t.fields])
    return out


def _walk(t: IcebergType) -> list[tuple[str, NestedField]]:
    out = []
    children: tuple[NestedField, ...] = ()
    if isinstance(t, StructType):
        children = t.fields
    elif isinstance(t, ListType):
        children = (t.element_field,)
    elif isinstance(t, MapType):
        children = (t.key_field, t.value_field)
    for c in children:
        out.append((c.name, c))
        out.extend(_walk(c.field_type))
    return out


def _restrict(value: Any, full: IcebergType, part: IcebergType) -> Any:
    """A value of the full read restricted to a projected type."""
    if value is None:
        return None
    if isinstance(part, StructType):
        assert isinstance(full, StructType)
        return {
            f.name: _restrict(value[f.name], full.field(f.field_id).field_type, f.field_type)
            for f in part.fields
        }
    if isinstance(part, ListType):
        assert isinstance(full, ListType)
        return [_restrict(v, full.element_type, part.element_type) for v in value]
    if isinstance(part, MapType):
        assert isinstance(full, MapType)
        return [(k, _restrict(v, full.value_type, part.value_type)) for k, v in value]
    return value


def _check_projections(df: DataFile, schema: Schema, full_rows: list[dict[str, Any]]) -> None:
    top_ids = [f.field_id for f in schema.fields]
    for ids in _branch_ids(schema):
        for k in range(1, len(ids) + 1):
            for subset in itertools.combinations(ids, k):
                projected = prune_columns(schema, {top_ids[0], *subset})
                expected = [
                    {
                        f.name: _restrict(
                            r[f.name], schema.find_field(f.field_id).field_type, f.field_type
                        )
                        for f in projected.fields
                    }
                    for r in full_rows
                ]
                assert _read(df, schema, projected) == expected, subset


def test_every_projection_of_branches(tmp_path: Path) -> None:
    df = _write(tmp_path / "u.avro", FIXED_AVRO, FIXED_RECORDS)
    schema = avro_to_iceberg_schema(FIXED_AVRO)
    _check_projections(df, schema, FIXED_EXPECTED)


def test_projecting_one_branch_steps_over_the_others(tmp_path: Path) -> None:
    from icepark.avro.decoder import compile_decoder

    schema = avro_to_iceberg_schema(FIXED_AVRO)
    resolved = resolve_file_schema("f", FIXED_AVRO, create_name_mapping(schema))
    u = schema.find_field("u")
    field1 = u.field_type.fields[2]  # the string branch
    decoder = compile_decoder(resolved, {u.field_id: {field1.field_id: None}})
    # validity of u and the string branch: no tag, no int, no Point fields decoded
    assert decoder.list_count == 2
    assert decoder.source.count("(data[pos:pos + n])") == 1


def test_same_type_twice_in_a_union_is_an_error() -> None:
    avro = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "u", "type": ["int", "string", "int"]}],
    }
    with pytest.raises(
        InvalidAvroFileError,
        match=r"file\.avro: field 'u': the union has two branches of type 'int'",
    ):
        resolve_file_schema(
            "file.avro", avro, create_name_mapping(Schema(NestedField(1, "u", LongType())))
        )


# -- the property ----------------------------------------------------------------------------

_PRIMITIVES: dict[str, Any] = {
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "string": st.text(max_size=8),
    "bytes": st.binary(max_size=8),
    "double": st.floats(allow_nan=False, width=64),
    "boolean": st.booleans(),
}


@st.composite
def _union(draw: Any, name: str) -> tuple[list[Any], list[Any]]:
    """A union schema (named types suffixed with ``name``) and a strategy per branch
    giving ``(branch name, value, expected)``."""
    kinds = draw(
        st.lists(
            st.sampled_from([*_PRIMITIVES, "record", "array", "map", "enum", "fixed"]),
            min_size=2,
            max_size=5,
            unique=True,
        )
    )
    branches: list[Any] = []
    makers: list[Any] = []
    for kind in kinds:
        if kind in _PRIMITIVES:
            branches.append(kind)
            makers.append(_PRIMITIVES[kind].map(lambda v, k=kind: (k, v, v)))
        elif kind == "record":
            rec = {
                "type": "record",
                "name": f"R{name}",
                "fields": [
                    {"name": "a", "type": "long"},
                    {"name": "b", "type": ["null", "string"]},
                ],
            }
            branches.append(rec)
            makers.append(
                st.fixed_dictionaries(
                    {"a": _PRIMITIVES["long"], "b": st.none() | st.text(max_size=4)}
                ).map(lambda v, n=f"R{name}": (n, v, dict(v)))
            )
        elif kind == "array":
            branches.append({"type": "array", "items": "int"})
            makers.append(
                st.lists(_PRIMITIVES["int"], max_size=3).map(lambda v: ("array", v, list(v)))
            )
        elif kind == "map":
            branches.append({"type": "map", "values": "long"})
            makers.append(
                st.dictionaries(st.text(max_size=3), _PRIMITIVES["long"], max_size=3).map(
                    lambda v: ("map", v, list(v.items()))
                )
            )
        elif kind == "enum":
            branches.append({"type": "enum", "name": f"E{name}", "symbols": ["A", "B", "C"]})
            makers.append(st.sampled_from(["A", "B", "C"]).map(lambda v, n=f"E{name}": (n, v, v)))
        else:
            branches.append({"type": "fixed", "name": f"F{name}", "size": 3})
            makers.append(st.binary(min_size=3, max_size=3).map(lambda v, n=f"F{name}": (n, v, v)))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(branches)))
        branches.insert(at, "null")
        makers.insert(at, None)
    return branches, makers


@st.composite
def _case(draw: Any) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    union, makers = draw(_union("0"))
    where = draw(st.sampled_from(["top", "record", "array", "map"]))
    n_branches = sum(1 for m in makers if m is not None)
    value_type: Any = union
    if where == "record":
        value_type = {"type": "record", "name": "Holder", "fields": [{"name": "u", "type": union}]}
    elif where == "array":
        value_type = {"type": "array", "items": union}
    elif where == "map":
        value_type = {"type": "map", "values": union}
    avro = {
        "type": "record",
        "name": "row",
        "fields": [{"name": "id", "type": "long"}, {"name": "v", "type": value_type}],
    }

    def one_value() -> tuple[Any, Any]:
        index = draw(st.integers(0, len(makers) - 1))
        maker = makers[index]
        if maker is None:
            return None, None
        branch_name, value, expected = draw(maker)
        tag = sum(1 for m in makers[:index] if m is not None)
        return (branch_name, value), _u(tag, n_branches, expected)

    records, expected_rows = [], []
    for i in range(draw(st.integers(1, 6))):
        if where == "top":
            raw, exp = one_value()
        elif where == "record":
            raw0, exp0 = one_value()
            raw, exp = {"u": raw0}, {"u": exp0}
        elif where == "array":
            pairs = [one_value() for _ in range(draw(st.integers(0, 3)))]
            raw, exp = [p[0] for p in pairs], [p[1] for p in pairs]
        else:
            keys = draw(st.lists(st.text(max_size=3), unique=True, max_size=3))
            pairs = [one_value() for _ in keys]
            raw = {k: p[0] for k, p in zip(keys, pairs)}
            exp = [(k, p[1]) for k, p in zip(keys, pairs)]
        records.append({"id": i, "v": raw})
        expected_rows.append({"id": i, "v": exp})
    return avro, records, expected_rows


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=_case())
def test_property_projections_of_random_unions(tmp_path: Path, case: Any) -> None:
    avro, records, expected = case
    df = _write(tmp_path / "p.avro", avro, records)
    schema = avro_to_iceberg_schema(avro)
    full = _read(df, schema, schema)
    assert full == expected
    _check_projections(df, schema, full)


def test_recursive_records_are_an_error() -> None:
    avro = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"]}],
    }
    mapping = create_name_mapping(Schema(NestedField(1, "next", LongType())))
    with pytest.raises(
        InvalidAvroFileError, match=r"f\.avro: field 'next'.*'Node' contains itself"
    ):
        resolve_file_schema("f.avro", avro, mapping)
