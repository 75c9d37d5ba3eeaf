"""Iceberg <-> Arrow schema conversion: type table, field ids, name mappings, Parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.arrow.schema import (
    FIELD_ID_KEY,
    apply_name_mapping,
    arrow_to_schema,
    assign_fresh_ids_from_arrow,
    field_id_of,
    primitive_from_arrow,
    primitive_to_arrow,
    schema_to_arrow,
    type_to_arrow,
)
from icepark.errors import InvalidSchemaError
from icepark.spec.name_mapping import create_name_mapping, name_mapping_from_json
from icepark.spec.schema import Schema
from icepark.spec.types import (
    RESERVED_FIELD_ID_START,
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)


def _fid(i: int) -> dict[bytes, bytes]:
    return {FIELD_ID_KEY: str(i).encode()}


# -- the type table --------------------------------------------------------------------------

TYPE_TABLE: list[tuple[PrimitiveType, pa.DataType]] = [
    (BooleanType(), pa.bool_()),
    (IntegerType(), pa.int32()),
    (LongType(), pa.int64()),
    (FloatType(), pa.float32()),
    (DoubleType(), pa.float64()),
    (DecimalType(9, 2), pa.decimal128(9, 2)),
    (DecimalType(38, 10), pa.decimal128(38, 10)),
    (DateType(), pa.date32()),
    (TimeType(), pa.time64("us")),
    (TimestampType(), pa.timestamp("us")),
    (TimestamptzType(), pa.timestamp("us", tz="UTC")),
    (TimestampNanoType(), pa.timestamp("ns")),
    (TimestamptzNanoType(), pa.timestamp("ns", tz="UTC")),
    (StringType(), pa.string()),
    (UUIDType(), pa.uuid()),
    (FixedType(3), pa.binary(3)),
    (FixedType(16), pa.binary(16)),
    (BinaryType(), pa.binary()),
    (UnknownType(), pa.null()),
]


@pytest.mark.parametrize(("iceberg", "arrow"), TYPE_TABLE, ids=[str(t) for t, _ in TYPE_TABLE])
def test_type_table(iceberg: PrimitiveType, arrow: pa.DataType) -> None:
    assert primitive_to_arrow(iceberg) == arrow
    assert type_to_arrow(iceberg) == arrow
    assert primitive_from_arrow(arrow) == iceberg


READ_ONLY: list[tuple[pa.DataType, IcebergType]] = [
    (pa.int8(), IntegerType()),
    (pa.int16(), IntegerType()),
    (pa.uint8(), IntegerType()),
    (pa.uint16(), IntegerType()),
    (pa.uint32(), LongType()),
    (pa.float16(), FloatType()),
    (pa.large_string(), StringType()),
    (pa.string_view(), StringType()),
    (pa.large_binary(), BinaryType()),
    (pa.binary_view(), BinaryType()),
    (pa.decimal32(5, 2), DecimalType(5, 2)),
    (pa.decimal64(12, 3), DecimalType(12, 3)),
    (pa.decimal256(38, 0), DecimalType(38, 0)),
    (pa.date64(), DateType()),
    (pa.time32("s"), TimeType()),
    (pa.time32("ms"), TimeType()),
    (pa.time64("ns"), TimeType()),
    (pa.timestamp("s"), TimestampType()),
    (pa.timestamp("ms"), TimestampType()),
    (pa.timestamp("ms", tz="UTC"), TimestamptzType()),
    (pa.timestamp("us", tz="+00:00"), TimestamptzType()),
    (pa.timestamp("us", tz="America/New_York"), TimestamptzType()),
    (pa.timestamp("ns", tz="Etc/UTC"), TimestamptzNanoType()),
    (pa.dictionary(pa.int32(), pa.string()), StringType()),
    (pa.dictionary(pa.int8(), pa.int64()), LongType()),
    (pa.run_end_encoded(pa.int32(), pa.float64()), DoubleType()),
    (pa.json_(), StringType()),
    (pa.bool8(), BooleanType()),
]


@pytest.mark.parametrize(("arrow", "iceberg"), READ_ONLY, ids=[str(a) for a, _ in READ_ONLY])
def test_arrow_types_read(arrow: pa.DataType, iceberg: IcebergType) -> None:
    schema = arrow_to_schema(pa.schema([pa.field("c", arrow, metadata=_fid(1))]))
    assert schema == Schema(NestedField(1, "c", iceberg))


@pytest.mark.parametrize(
    ("arrow", "message"),
    [
        (pa.uint64(), "uint64"),
        (pa.decimal256(40, 2), "precision 40"),
        (pa.duration("us"), "duration"),
        (pa.month_day_nano_interval(), "interval"),
    ],
)
def test_arrow_types_rejected(arrow: pa.DataType, message: str) -> None:
    pa_schema = pa.schema(
        [pa.field("s", pa.struct([pa.field("bad", arrow, metadata=_fid(2))]), metadata=_fid(1))]
    )
    with pytest.raises(InvalidSchemaError, match=message) as info:
        arrow_to_schema(pa_schema)
    assert "'s.bad'" in str(info.value)


def test_nested_list_variants_read() -> None:
    element = pa.field("item", pa.int32(), nullable=False, metadata=_fid(2))
    for list_type in (
        pa.list_(element),
        pa.large_list(element),
        pa.list_(element, 3),
        pa.list_view(element),
        pa.large_list_view(element),
    ):
        schema = arrow_to_schema(pa.schema([pa.field("l", list_type, metadata=_fid(1))]))
        assert schema == Schema(NestedField(1, "l", ListType(2, IntegerType(), True)))


# -- Iceberg -> Arrow: ids, nullability, docs ------------------------------------------------

NESTED = Schema(
    NestedField(1, "id", LongType(), required=True, doc="the id"),
    NestedField(
        2,
        "location",
        StructType(NestedField(6, "lat", DoubleType()), NestedField(7, "long", DoubleType(), True)),
    ),
    NestedField(3, "tags", ListType(8, StringType(), element_required=False), required=True),
    NestedField(
        4,
        "props",
        MapType(9, StringType(), 10, ListType(11, LongType(), True), value_required=False),
    ),
    NestedField(5, "u", UUIDType()),
)


def test_schema_to_arrow_nested() -> None:
    pa_schema = schema_to_arrow(NESTED)
    expected = pa.schema(
        [
            pa.field("id", pa.int64(), False, {FIELD_ID_KEY: b"1", b"doc": b"the id"}),
            pa.field(
                "location",
                pa.struct(
                    [
                        pa.field("lat", pa.float64(), True, _fid(6)),
                        pa.field("long", pa.float64(), False, _fid(7)),
                    ]
                ),
                True,
                _fid(2),
            ),
            pa.field(
                "tags", pa.list_(pa.field("element", pa.string(), True, _fid(8))), False, _fid(3)
            ),
            pa.field(
                "props",
                pa.map_(
                    pa.field("key", pa.string(), False, _fid(9)),
                    pa.field(
                        "value",
                        pa.list_(pa.field("element", pa.int64(), False, _fid(11))),
                        True,
                        _fid(10),
                    ),
                ),
                True,
                _fid(4),
            ),
            pa.field("u", pa.uuid(), True, _fid(5)),
        ]
    )
    assert pa_schema.equals(expected, check_metadata=True)
    assert arrow_to_schema(pa_schema) == NESTED
    assert arrow_to_schema(pa.struct(list(pa_schema))) == NESTED
    assert schema_to_arrow(NESTED.as_struct()).equals(expected, check_metadata=True)


def test_schema_to_arrow_without_ids() -> None:
    pa_schema = schema_to_arrow(NESTED, include_field_ids=False)
    assert pa_schema.field("location").metadata is None
    assert pa_schema.field("tags").type.value_field.metadata is None
    assert pa_schema.field("id").metadata == {b"doc": b"the id"}
    assert pa_schema.equals(schema_to_arrow(NESTED), check_metadata=False)


def test_required_unknown_becomes_nullable() -> None:
    pa_schema = schema_to_arrow(Schema(NestedField(1, "n", UnknownType(), required=True)))
    assert pa_schema.field("n").nullable


# -- missing ids, name mappings, fresh ids ---------------------------------------------------


def test_missing_id_error_names_the_field() -> None:
    pa_schema = pa.schema(
        [
            pa.field("a", pa.int32(), metadata=_fid(1)),
            pa.field("b", pa.list_(pa.field("element", pa.int32())), metadata=_fid(2)),
        ]
    )
    with pytest.raises(InvalidSchemaError, match=r"'b\.element' has no field id"):
        arrow_to_schema(pa_schema)
    with pytest.raises(InvalidSchemaError, match=r"'x' has no field id.*no name mapping"):
        arrow_to_schema(pa.schema([pa.field("x", pa.int32())]))


def test_invalid_field_id_metadata() -> None:
    with pytest.raises(InvalidSchemaError, match="invalid field id"):
        arrow_to_schema(pa.schema([pa.field("x", pa.int32(), metadata={FIELD_ID_KEY: b"one"})]))


@pytest.mark.parametrize("key", [b"PARQUET:field_id", b"field_id", b"parquet.field.id"])
def test_field_id_keys(key: bytes) -> None:
    f = pa.field("x", pa.int32(), metadata={key: b"42"})
    assert field_id_of(f) == 42
    assert arrow_to_schema(pa.schema([f])) == Schema(NestedField(42, "x", IntegerType()))
    assert field_id_of(pa.field("y", pa.int32())) is None


SPEC_MAPPING = name_mapping_from_json(
    '[{"field-id":1,"names":["id","record_id"]},{"field-id":2,"names":["data"]},'
    '{"field-id":3,"names":["location"],"fields":[{"field-id":4,"names":["latitude","lat"]},'
    '{"field-id":5,"names":["longitude","long"]}]}]'
)


def test_name_mapping_resolution_spec_example() -> None:
    pa_schema = pa.schema(
        [
            pa.field("record_id", pa.int64(), nullable=False),
            pa.field("location", pa.struct([("lat", pa.float64()), ("long", pa.float64())])),
            pa.field("unmapped", pa.string()),
        ]
    )
    schema = arrow_to_schema(pa_schema, name_mapping=SPEC_MAPPING)
    assert schema == Schema(
        NestedField(1, "record_id", LongType(), required=True),
        NestedField(
            3,
            "location",
            StructType(NestedField(4, "lat", DoubleType()), NestedField(5, "long", DoubleType())),
        ),
    )
    other = pa.schema(
        [pa.field("id", pa.int64()), pa.field("location", pa.struct([("latitude", pa.float64())]))]
    )
    assert arrow_to_schema(other, name_mapping=SPEC_MAPPING) == Schema(
        NestedField(1, "id", LongType()),
        NestedField(3, "location", StructType(NestedField(4, "latitude", DoubleType()))),
    )


def test_name_mapping_list_and_map_use_canonical_names() -> None:
    mapping = create_name_mapping(NESTED)
    pa_schema = schema_to_arrow(NESTED, include_field_ids=False)
    assert arrow_to_schema(pa_schema, name_mapping=mapping) == NESTED
    # pyarrow's default list element name is 'item'; the mapping's is 'element'
    items = pa.schema([pa.field("tags", pa.list_(pa.string()))])
    assert arrow_to_schema(items, name_mapping=mapping) == Schema(
        NestedField(3, "tags", ListType(8, StringType(), element_required=False))
    )


def test_name_mapping_drops_list_without_mapped_element() -> None:
    mapping = name_mapping_from_json(
        '[{"field-id": 1, "names": ["l"]}, {"field-id": 2, "names": ["x"]}]'
    )
    pa_schema = pa.schema([pa.field("l", pa.list_(pa.int32())), pa.field("x", pa.int32())])
    assert arrow_to_schema(pa_schema, name_mapping=mapping) == Schema(
        NestedField(2, "x", IntegerType())
    )


def test_ids_in_file_win_over_mapping() -> None:
    pa_schema = pa.schema(
        [pa.field("id", pa.int64(), metadata=_fid(7)), pa.field("data", pa.string())]
    )
    assert arrow_to_schema(pa_schema, name_mapping=SPEC_MAPPING) == Schema(
        NestedField(7, "id", LongType()), NestedField(2, "data", StringType())
    )


def test_apply_name_mapping() -> None:
    pa_schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("location", pa.struct([("lat", pa.float64()), ("alt", pa.float64())])),
            pa.field("other", pa.list_(pa.int32())),
        ],
        metadata={b"k": b"v"},
    )
    mapped = apply_name_mapping(pa_schema, SPEC_MAPPING)
    assert mapped.metadata == {b"k": b"v"}
    assert field_id_of(mapped.field("id")) == 1
    location = mapped.field("location")
    assert field_id_of(location) == 3
    assert field_id_of(location.type.field("lat")) == 4
    assert field_id_of(location.type.field("alt")) is None
    assert field_id_of(mapped.field("other")) is None
    assert field_id_of(mapped.field("other").type.value_field) is None
    # existing ids are kept
    kept = apply_name_mapping(
        pa.schema([pa.field("id", pa.int64(), metadata=_fid(9))]), SPEC_MAPPING
    )
    assert field_id_of(kept.field("id")) == 9
    # map and list children via key/value/element
    full = apply_name_mapping(
        schema_to_arrow(NESTED, include_field_ids=False), create_name_mapping(NESTED)
    )
    assert full.equals(schema_to_arrow(NESTED), check_metadata=True)


def test_apply_name_mapping_list_kinds() -> None:
    mapping = name_mapping_from_json(
        '[{"field-id": 1, "names": ["l"], "fields": [{"field-id": 2, "names": ["element"]}]}]'
    )
    element = pa.field("item", pa.int32())
    for list_type in (
        pa.list_(element),
        pa.large_list(element),
        pa.list_(element, 2),
        pa.list_view(element),
        pa.large_list_view(element),
    ):
        out = apply_name_mapping(pa.schema([pa.field("l", list_type)]), mapping)
        assert type(out.field("l").type) is type(list_type)
        assert field_id_of(out.field("l").type.value_field) == 2


def test_assign_fresh_ids_breadth_first() -> None:
    pa_schema = pa.schema(
        [
            pa.field(
                "a", pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))]), metadata=_fid(50)
            ),
            pa.field("b", pa.map_(pa.string(), pa.int64())),
            pa.field("c", pa.int32(), nullable=False),
        ]
    )
    expected = Schema(
        NestedField(
            1,
            "a",
            StructType(
                NestedField(4, "x", IntegerType()),
                NestedField(5, "y", ListType(6, StringType(), False)),
            ),
        ),
        NestedField(2, "b", MapType(7, StringType(), 8, LongType(), False)),
        NestedField(3, "c", IntegerType(), required=True),
    )
    assert assign_fresh_ids_from_arrow(pa_schema) == expected
    assert arrow_to_schema(pa_schema, assign_ids=True) == expected


# -- hypothesis round trips ------------------------------------------------------------------

_DECIMALS = st.integers(1, 38).flatmap(
    lambda p: st.builds(DecimalType, st.just(p), st.integers(0, p))
)
_PRIMITIVES = (
    st.sampled_from([t for t, _ in TYPE_TABLE if not isinstance(t, UnknownType)])
    | _DECIMALS
    | st.builds(FixedType, st.integers(1, 64))
)
_NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)

# templates: ("p", type, None) | ("s", [(name, required, doc, tpl)]) | ("l", required, tpl)
#            | ("m", key_type, value_required, tpl)
Template = tuple[Any, ...]


def _templates(allow_empty_struct: bool) -> st.SearchStrategy[Template]:
    leaves = _PRIMITIVES.map(lambda t: ("p", t)) | st.just(("p", UnknownType()))

    def extend(children: st.SearchStrategy[Template]) -> st.SearchStrategy[Template]:
        struct_fields = st.lists(
            st.tuples(_NAMES, st.booleans(), st.none() | _NAMES, children),
            min_size=0 if allow_empty_struct else 1,
            max_size=4,
            unique_by=lambda f: f[0],
        )
        return (
            struct_fields.map(lambda fs: ("s", fs))
            | st.tuples(st.just("l"), st.booleans(), children)
            | st.tuples(st.just("m"), _PRIMITIVES, st.booleans(), children)
        )

    return st.recursive(leaves, extend, max_leaves=12)


def _count_ids(tpl: Template) -> int:
    kind = tpl[0]
    if kind == "s":
        return sum(1 + _count_ids(f[3]) for f in tpl[1])
    if kind == "l":
        return 1 + _count_ids(tpl[2])
    if kind == "m":
        return 2 + _count_ids(tpl[3])
    return 0


def _build(tpl: Template, ids: list[int]) -> IcebergType:
    kind = tpl[0]
    if kind == "s":
        fields = []
        for name, required, doc, child in tpl[1]:
            fid = ids.pop()
            child_type = _build(child, ids)
            fields.append(
                NestedField(
                    fid, name, child_type, required and not isinstance(child_type, UnknownType), doc
                )
            )
        return StructType(*fields)
    if kind == "l":
        eid = ids.pop()
        element = _build(tpl[2], ids)
        return ListType(eid, element, tpl[1] and not isinstance(element, UnknownType))
    if kind == "m":
        kid, vid = ids.pop(), ids.pop()
        value = _build(tpl[3], ids)
        return MapType(kid, tpl[1], vid, value, tpl[2] and not isinstance(value, UnknownType))
    return tpl[1]  # type: ignore[no-any-return]


@st.composite
def schemas(draw: st.DrawFn, allow_empty_struct: bool = True) -> Schema:
    fields = draw(
        st.lists(
            st.tuples(_NAMES, st.booleans(), st.none() | _NAMES, _templates(allow_empty_struct)),
            min_size=1,
            max_size=5,
            unique_by=lambda f: f[0],
        )
    )
    tpl = ("s", fields)
    n = _count_ids(tpl)
    ids = draw(
        st.lists(st.integers(1, RESERVED_FIELD_ID_START - 1), min_size=n, max_size=n, unique=True)
    )
    struct = _build(tpl, ids)
    assert isinstance(struct, StructType)
    return Schema(*struct.fields)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas())
def test_round_trip_through_arrow(schema: Schema) -> None:
    pa_schema = schema_to_arrow(schema)
    assert arrow_to_schema(pa_schema) == schema
    # every field of the Arrow schema carries an id
    ids: list[int] = []

    def collect(f: pa.Field) -> None:
        fid = field_id_of(f)
        assert fid is not None, f
        ids.append(fid)
        t = f.type
        if pa.types.is_struct(t):
            for c in t:
                collect(c)
        elif pa.types.is_list(t):
            collect(t.value_field)
        elif pa.types.is_map(t):
            collect(t.key_field)
            collect(t.item_field)

    for f in pa_schema:
        collect(f)
    assert sorted(ids) == sorted(schema.field_ids())
    # without ids, the schema's own name mapping restores them
    bare = schema_to_arrow(schema, include_field_ids=False)
    assert arrow_to_schema(bare, name_mapping=create_name_mapping(schema)) == schema


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas(allow_empty_struct=False))
def test_round_trip_through_parquet(
    tmp_path_factory: pytest.TempPathFactory, schema: Schema
) -> None:
    path = tmp_path_factory.mktemp("rt") / "t.parquet"
    # Schema.empty_table cannot build extension types (uuid) nested in lists
    pq.write_table(pa.Table.from_batches([], schema=schema_to_arrow(schema)), path)
    assert arrow_to_schema(pq.ParquetFile(path).schema_arrow) == schema
    assert arrow_to_schema(pq.read_schema(path)) == schema


# -- Parquet field ids -----------------------------------------------------------------------


def test_parquet_field_ids_on_elements_keys_values(tmp_path: Path) -> None:
    pa_schema = schema_to_arrow(NESTED)
    table = pa.Table.from_pylist(
        [
            {
                "id": 1,
                "location": {"lat": 1.5, "long": 2.5},
                "tags": ["a", None],
                "props": [("k", [1, 2])],
                "u": b"\x00" * 16,
            }
        ],
        schema=pa_schema,
    )
    path = tmp_path / "nested.parquet"
    pq.write_table(table, path, store_schema=False)  # ids must come from the Parquet schema itself
    pf = pq.ParquetFile(path)
    columns = {pf.schema.column(i).path: pf.schema.column(i) for i in range(len(pf.schema))}
    assert set(columns) == {
        "id",
        "location.lat",
        "location.long",
        "tags.list.element",
        "props.key_value.key",
        "props.key_value.value.list.element",
        "u",
    }
    arrow = pf.schema_arrow
    assert arrow.field("tags").type.value_field.metadata[FIELD_ID_KEY] == b"8"
    props = arrow.field("props").type
    assert props.key_field.metadata[FIELD_ID_KEY] == b"9"
    assert props.item_field.metadata[FIELD_ID_KEY] == b"10"
    assert props.item_field.type.value_field.metadata[FIELD_ID_KEY] == b"11"
    assert arrow.field("location").type.field("long").metadata[FIELD_ID_KEY] == b"7"
    text = str(pf.schema)
    assert "field_id=8 element" in text and "field_id=9 key" in text and "field_id=10 value" in text
    # uuid is fixed_len_byte_array(16) with the UUID logical type, as Java writes it
    assert "fixed_len_byte_array(16) field_id=5 u (UUID)" in text
    # the doc does not survive without the stored Arrow schema; everything else does
    read = arrow_to_schema(arrow)
    assert read.find_field(1).doc is None
    assert read.as_struct().fields[1:] == NESTED.as_struct().fields[1:]
    assert pq.read_table(path).to_pylist()[0]["props"] == [("k", [1, 2])]


# -- conformance: Parquet files without field ids --------------------------------------------

ENCODINGS = Path("apache-iceberg/parquet/src/testFixtures/resources/encodings")
DATA_MAPPING = name_mapping_from_json('[{"field-id": 1, "names": ["data"]}]')


@pytest.mark.parametrize(
    ("relpath", "iceberg_type"),
    [
        ("PLAIN/int32.parquet", IntegerType()),
        ("DELTA_BINARY_PACKED/int32.parquet", IntegerType()),
        ("PLAIN/string_with_nulls.parquet", StringType()),
    ],
)
def test_conformance_files_without_ids(
    conformance_dir: Path, relpath: str, iceberg_type: IcebergType
) -> None:
    path = conformance_dir / ENCODINGS / relpath
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    arrow = pq.ParquetFile(path).schema_arrow
    assert arrow_to_schema(arrow, name_mapping=DATA_MAPPING) == Schema(
        NestedField(1, "data", iceberg_type, required=False)
    )
    with pytest.raises(InvalidSchemaError, match="'data' has no field id"):
        arrow_to_schema(arrow)
    assert field_id_of(apply_name_mapping(arrow, DATA_MAPPING).field("data")) == 1
