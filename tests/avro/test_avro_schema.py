"""Iceberg <-> Avro schema conversion and raw Avro values, checked against Java's conventions."""

from __future__ import annotations

import io
import itertools
import uuid
from decimal import Decimal
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.avro import (
    AvroFileWriter,
    avro_to_schema,
    avro_to_type,
    decimal_required_bytes,
    from_avro_value,
    is_valid_avro_name,
    make_compatible_name,
    named_avro_types,
    normalize_codec,
    read_avro_file,
    read_avro_metadata,
    schema_to_avro,
    strip_logical_types,
    to_avro_value,
    type_to_avro,
)
from icepark.errors import InvalidAvroFileError, InvalidSchemaError, ValidationError
from icepark.io import PyArrowFileIO
from icepark.spec.conversions import unscaled_to_decimal
from icepark.spec.schema import Schema
from icepark.spec.types import (
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

# -- primitives ------------------------------------------------------------------------------

PRIMITIVE_AVRO: list[tuple[PrimitiveType, Any]] = [
    (BooleanType(), "boolean"),
    (IntegerType(), "int"),
    (LongType(), "long"),
    (FloatType(), "float"),
    (DoubleType(), "double"),
    (StringType(), "string"),
    (BinaryType(), "bytes"),
    (UnknownType(), "null"),
    (DateType(), {"type": "int", "logicalType": "date"}),
    (TimeType(), {"type": "long", "logicalType": "time-micros"}),
    (
        TimestampType(),
        {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False},
    ),
    (
        TimestamptzType(),
        {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True},
    ),
    (
        TimestampNanoType(),
        {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": False},
    ),
    (
        TimestamptzNanoType(),
        {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": True},
    ),
    (UUIDType(), {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}),
    (FixedType(7), {"type": "fixed", "name": "fixed_7", "size": 7}),
    (
        DecimalType(9, 2),
        {
            "type": "fixed",
            "name": "decimal_9_2",
            "size": 4,
            "logicalType": "decimal",
            "precision": 9,
            "scale": 2,
        },
    ),
]


@pytest.mark.parametrize(("iceberg", "avro"), PRIMITIVE_AVRO, ids=lambda x: str(x))
def test_primitive_to_avro(iceberg: PrimitiveType, avro: Any) -> None:
    assert type_to_avro(iceberg) == avro
    assert avro_to_type(avro) == iceberg


# Java's TypeUtil.decimalRequiredBytes, precision -> bytes
JAVA_DECIMAL_BYTES = {
    1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3, 7: 4, 8: 4, 9: 4, 10: 5, 11: 5, 12: 6, 13: 6, 14: 6,
    15: 7, 16: 7, 17: 8, 18: 8, 19: 9, 20: 9, 21: 9, 22: 10, 23: 10, 24: 11, 25: 11, 26: 11,
    27: 12, 28: 12, 29: 13, 30: 13, 31: 13, 32: 14, 33: 14, 34: 15, 35: 15, 36: 16, 37: 16,
    38: 16,
}  # fmt: skip


def test_decimal_required_bytes_matches_java() -> None:
    assert {p: decimal_required_bytes(p) for p in range(1, 39)} == JAVA_DECIMAL_BYTES


def test_decimal_required_bytes_rejects_zero() -> None:
    with pytest.raises(InvalidSchemaError):
        decimal_required_bytes(0)


# -- nested types ----------------------------------------------------------------------------


def test_struct_records_named_after_their_field_ids() -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), True, "the id"),
        NestedField(
            2,
            "location",
            StructType(NestedField(3, "lat", DoubleType()), NestedField(4, "lon", DoubleType())),
        ),
    )
    avro = schema_to_avro(schema, "table")
    assert avro == {
        "type": "record",
        "name": "table",
        "fields": [
            {"name": "id", "type": "long", "doc": "the id", "field-id": 1},
            {
                "name": "location",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "r2",
                        "fields": [
                            {
                                "name": "lat",
                                "type": ["null", "double"],
                                "default": None,
                                "field-id": 3,
                            },
                            {
                                "name": "lon",
                                "type": ["null", "double"],
                                "default": None,
                                "field-id": 4,
                            },
                        ],
                    },
                ],
                "default": None,
                "field-id": 2,
            },
        ],
    }
    assert avro_to_schema(avro).as_struct() == schema.as_struct()


def test_list_has_element_id_and_optional_items() -> None:
    assert type_to_avro(ListType(5, IntegerType(), True)) == {
        "type": "array",
        "items": "int",
        "element-id": 5,
    }
    assert type_to_avro(ListType(5, IntegerType(), False)) == {
        "type": "array",
        "items": ["null", "int"],
        "element-id": 5,
    }


def test_list_of_structs_names_record_after_element_id() -> None:
    avro = type_to_avro(ListType(508, StructType(NestedField(509, "a", BooleanType(), True))))
    assert avro["items"]["name"] == "r508"


def test_string_keyed_map_is_an_avro_map() -> None:
    avro = type_to_avro(MapType(7, StringType(), 8, LongType(), False))
    assert avro == {"type": "map", "values": ["null", "long"], "key-id": 7, "value-id": 8}
    assert avro_to_type(avro) == MapType(7, StringType(), 8, LongType(), False)


def test_other_maps_are_arrays_of_key_value_records() -> None:
    avro = type_to_avro(MapType(117, IntegerType(), 118, LongType(), True))
    assert avro == {
        "type": "array",
        "items": {
            "type": "record",
            "name": "k117_v118",
            "fields": [
                {"name": "key", "type": "int", "field-id": 117},
                {"name": "value", "type": "long", "field-id": 118},
            ],
        },
        "logicalType": "map",
    }
    assert avro_to_type(avro) == MapType(117, IntegerType(), 118, LongType(), True)


def test_repeated_named_types_are_referenced_by_name() -> None:
    struct = StructType(
        NestedField(1, "a", DecimalType(9, 2)),
        NestedField(2, "b", DecimalType(9, 2)),
        NestedField(3, "c", UUIDType()),
        NestedField(4, "d", UUIDType()),
        NestedField(5, "e", FixedType(3)),
        NestedField(6, "f", FixedType(3)),
    )
    avro = schema_to_avro(struct, "r")
    types = [f["type"][1] for f in avro["fields"]]
    assert types[1] == "decimal_9_2" and types[3] == "uuid_fixed" and types[5] == "fixed_3"
    fastavro.parse_schema(avro)  # no redefined named types
    assert avro_to_type(avro) == struct
    assert set(named_avro_types(avro)) == {"r", "decimal_9_2", "uuid_fixed", "fixed_3"}


def test_optional_unknown_is_plain_null() -> None:
    avro = schema_to_avro(StructType(NestedField(1, "u", UnknownType())), "r")
    assert avro["fields"][0]["type"] == "null"
    assert avro_to_type(avro) == StructType(NestedField(1, "u", UnknownType()))


def test_struct_needs_a_name() -> None:
    with pytest.raises(InvalidSchemaError):
        type_to_avro(StructType())


def test_missing_field_id_is_an_error() -> None:
    with pytest.raises(InvalidSchemaError, match="field-id"):
        avro_to_type({"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]})


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("id", "id"),
        ("_x", "_x"),
        ("ünï", "ünï"),
        ("1st col", "_1st_x20col"),
        ("a.b", "a_x2Eb"),
        ("a-b", "a_x2Db"),
        ("$", "_x24"),
        ("a😀", "a_xD83D_xDE00"),
    ],
)
def test_names_are_sanitized_as_java_does(name: str, expected: str) -> None:
    assert make_compatible_name(name) == expected
    assert is_valid_avro_name(name) == (name == expected)


def test_sanitized_field_keeps_its_iceberg_name() -> None:
    struct = StructType(NestedField(1, "a.b", IntegerType(), True))
    avro = schema_to_avro(struct, "r")
    assert avro["fields"][0] == {
        "name": "a_x2Eb",
        "type": "int",
        "iceberg-field-name": "a.b",
        "field-id": 1,
    }
    assert avro_to_type(avro) == struct


# -- random types round trip -----------------------------------------------------------------

_PRIMITIVES = st.sampled_from([t for t, _ in PRIMITIVE_AVRO if not isinstance(t, UnknownType)])


def _types(ids: itertools.count[int]) -> st.SearchStrategy[IcebergType]:
    def extend(children: st.SearchStrategy[IcebergType]) -> st.SearchStrategy[IcebergType]:
        return st.one_of(
            st.builds(lambda t, r: ListType(next(ids), t, r), children, st.booleans()),
            st.builds(
                lambda k, v, r: MapType(next(ids), k, next(ids), v, r),
                _PRIMITIVES,
                children,
                st.booleans(),
            ),
            st.lists(st.tuples(children, st.booleans()), max_size=3).map(
                lambda fs: StructType(
                    *(NestedField(next(ids), f"f{i}", t, req) for i, (t, req) in enumerate(fs))
                )
            ),
        )

    return st.recursive(_PRIMITIVES, extend, max_leaves=6)


@given(st.data())
@settings(max_examples=150)
def test_types_round_trip_through_avro(data: st.DataObject) -> None:
    ids = itertools.count(1)
    t = data.draw(_types(ids))
    struct = StructType(NestedField(next(ids), "top", t, data.draw(st.booleans())))
    avro = schema_to_avro(struct, "table")
    fastavro.parse_schema(avro)
    assert avro_to_type(avro) == struct


# -- values ----------------------------------------------------------------------------------

ALL_PRIMITIVES = StructType(
    NestedField(1, "b", BooleanType()),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "l", LongType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dec", DecimalType(38, 10)),
    NestedField(7, "dec2", DecimalType(3, 1)),
    NestedField(8, "date", DateType()),
    NestedField(9, "time", TimeType()),
    NestedField(10, "ts", TimestampType()),
    NestedField(11, "tstz", TimestamptzType()),
    NestedField(12, "ts_ns", TimestampNanoType()),
    NestedField(13, "s", StringType()),
    NestedField(14, "u", UUIDType()),
    NestedField(15, "fx", FixedType(3)),
    NestedField(16, "bin", BinaryType()),
    NestedField(17, "unk", UnknownType()),
    NestedField(18, "lst", ListType(19, DecimalType(5, 2), False)),
    NestedField(20, "m", MapType(21, IntegerType(), 22, StringType(), True)),
    NestedField(23, "sm", MapType(24, StringType(), 25, UUIDType(), False)),
)

INT = st.integers(-(2**31), 2**31 - 1)
LONG = st.integers(-(2**63), 2**63 - 1)


def _decimal(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    bound = 10**precision - 1
    return st.integers(-bound, bound).map(lambda u: unscaled_to_decimal(u, scale))


ROWS = st.tuples(
    st.none() | st.booleans(),
    st.none() | INT,
    st.none() | LONG,
    st.none() | st.floats(width=32, allow_nan=False),
    st.none() | st.floats(allow_nan=False),
    st.none() | _decimal(38, 10),
    st.none() | _decimal(3, 1),
    st.none() | INT,
    st.none() | st.integers(0, 86_400_000_000 - 1),
    st.none() | LONG,
    st.none() | LONG,
    st.none() | LONG,
    st.none() | st.text(),
    st.none() | st.uuids(),
    st.none() | st.binary(min_size=3, max_size=3),
    st.none() | st.binary(),
    st.none(),
    st.none() | st.lists(st.none() | _decimal(5, 2), max_size=3),
    st.none() | st.dictionaries(INT, st.text(), max_size=3),
    st.none() | st.dictionaries(st.text(), st.none() | st.uuids(), max_size=3),
)


class _BytesInput:
    """Just enough of an InputFile for read_avro_file."""

    def __init__(self, data: bytes) -> None:
        self.location = "memory://row.avro"
        self._data = data

    def read_bytes(self) -> bytes:
        return self._data


@given(ROWS)
@settings(max_examples=100)
def test_values_round_trip_through_fastavro(row: tuple[Any, ...]) -> None:
    # written with the logical types in the schema (raw values pass through fastavro) ...
    avro = schema_to_avro(ALL_PRIMITIVES, "row")
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(avro), [to_avro_value(ALL_PRIMITIVES, row)])
    # ... and read back raw, whatever logical types the writer schema declares
    contents = read_avro_file(_BytesInput(buf.getvalue()))
    assert contents.writer_schema == avro
    (record,) = contents.records
    assert from_avro_value(ALL_PRIMITIVES, record) == row


def test_struct_values_by_field_id() -> None:
    struct = StructType(NestedField(1, "a.b", IntegerType()), NestedField(2, "c", StringType()))
    assert to_avro_value(struct, {1: 5}) == {"a_x2Eb": 5, "c": None}
    assert from_avro_value(struct, {"a_x2Eb": 5, "c": "x"}) == (5, "x")


def test_decimal_values_are_fixed_size_twos_complement() -> None:
    t = DecimalType(9, 2)
    assert to_avro_value(t, Decimal("-1.00")) == b"\xff\xff\xff\x9c"
    assert from_avro_value(t, b"\xff\xff\xff\x9c") == Decimal("-1.00")
    assert to_avro_value(UUIDType(), uuid.UUID(int=1)) == b"\x00" * 15 + b"\x01"


def test_strip_logical_types() -> None:
    avro = schema_to_avro(ALL_PRIMITIVES, "row")
    assert "logicalType" not in str(strip_logical_types(avro))
    assert "logicalType" in str(avro)


# -- container files -------------------------------------------------------------------------


def test_avro_file_round_trip_keeps_raw_values(tmp_path: Any) -> None:
    fileio = PyArrowFileIO()
    struct = StructType(
        NestedField(1, "d", DateType(), True), NestedField(2, "x", DecimalType(4, 2))
    )
    path = str(tmp_path / "f.avro")
    with AvroFileWriter(fileio.new_output(path), schema_to_avro(struct, "r"), {"k": "v"}) as w:
        w.write(to_avro_value(struct, (19000, Decimal("1.25"))))
    assert w.length == fileio.new_input(path).length()
    contents = read_avro_file(fileio.new_input(path))
    assert contents.records == [{"d": 19000, "x": b"\x00\x7d"}]
    assert contents.metadata["k"] == "v"
    assert contents.writer_schema["fields"][0]["type"]["logicalType"] == "date"
    assert read_avro_metadata(fileio.new_input(path))["avro.codec"] == "deflate"


def test_aborted_writer_leaves_no_file(tmp_path: Any) -> None:
    fileio = PyArrowFileIO()
    path = str(tmp_path / "f.avro")
    struct = StructType(NestedField(1, "a", IntegerType(), True))
    with pytest.raises(RuntimeError):
        with AvroFileWriter(fileio.new_output(path), schema_to_avro(struct, "r"), {}) as w:
            w.write({"a": 1})
            raise RuntimeError("boom")
    assert not fileio.new_input(path).exists()


def test_not_an_avro_file(tmp_path: Any) -> None:
    path = tmp_path / "x.avro"
    path.write_bytes(b"{'json': true}")
    with pytest.raises(InvalidAvroFileError, match=str(path)):
        read_avro_file(PyArrowFileIO().new_input(str(path)))


def test_codec_names() -> None:
    assert normalize_codec("gzip") == "deflate"
    assert normalize_codec("uncompressed") == "null"
    with pytest.raises(ValidationError):
        normalize_codec("lz4")
