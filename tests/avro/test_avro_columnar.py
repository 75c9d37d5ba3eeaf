"""The columnar Avro decoder gives what fastavro gives: for random records of a schema with
every Avro type (nullable unions either way round, nested records, arrays of ints, of flat
records and of nested ones, maps, enums, fixed, floats), the Arrow columns equal
``pa.array(fastavro's records, type=avro_arrow_type(...))``; arrays written in several
blocks, with and without byte sizes, read the same; corrupt data raises
UnsupportedAvroError (callers then fall back to fastavro)."""

from __future__ import annotations

import io
import math
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.avro.blocks import UnsupportedAvroError, read_avro_blocks
from icepark.avro.columnar import ColumnarDecoder, avro_arrow_type, decode_varints
from icepark.avro.schema import named_avro_types

PAIR = {
    "type": "record",
    "name": "k1_v2",
    "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "long"}],
}
BOUND = {
    "type": "record",
    "name": "k3_v4",
    "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "bytes"}],
}
INNER = {
    "type": "record",
    "name": "inner",
    "fields": [
        {"name": "a", "type": ["null", "int"]},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "top",
    "fields": [
        {"name": "i", "type": "int"},
        {"name": "l", "type": ["null", "long"]},
        {"name": "l2", "type": ["long", "null"]},
        {"name": "b", "type": "boolean"},
        {"name": "nb", "type": ["null", "boolean"]},
        {"name": "f", "type": "float"},
        {"name": "d", "type": ["null", "double"]},
        {"name": "s", "type": "string"},
        {"name": "ns", "type": ["null", "string"]},
        {"name": "by", "type": ["null", "bytes"]},
        {"name": "fx", "type": ["null", {"type": "fixed", "name": "f16", "size": 16}]},
        {"name": "e", "type": {"type": "enum", "name": "color", "symbols": ["R", "G", "B"]}},
        {"name": "ints", "type": ["null", {"type": "array", "items": "long"}]},
        {"name": "pairs", "type": ["null", {"type": "array", "items": PAIR}]},
        {"name": "bounds", "type": ["null", {"type": "array", "items": BOUND}]},
        {"name": "inner", "type": ["null", INNER]},
        {"name": "inners", "type": {"type": "array", "items": "inner"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "double"]}},
        {"name": "empty", "type": {"type": "record", "name": "nothing", "fields": []}},
    ],
}

LONGS = st.integers(-(2**63), 2**63 - 1)
INTS = st.integers(-(2**31), 2**31 - 1)
TEXT = st.text(max_size=80)
BYTES = st.binary(max_size=150)


def _inner() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"a": st.none() | INTS, "tags": st.lists(TEXT, max_size=3)})


RECORDS = st.fixed_dictionaries(
    {
        "i": INTS,
        "l": st.none() | LONGS,
        "l2": st.none() | LONGS,
        "b": st.booleans(),
        "nb": st.none() | st.booleans(),
        "f": st.floats(width=32, allow_nan=False),
        "d": st.none() | st.floats(allow_nan=False),
        "s": TEXT,
        "ns": st.none() | TEXT,
        "by": st.none() | BYTES,
        "fx": st.none() | st.binary(min_size=16, max_size=16),
        "e": st.sampled_from(["R", "G", "B"]),
        "ints": st.none() | st.lists(LONGS, max_size=70),
        "pairs": st.none()
        | st.lists(st.fixed_dictionaries({"key": INTS, "value": LONGS}), max_size=70),
        "bounds": st.none()
        | st.lists(st.fixed_dictionaries({"key": INTS, "value": BYTES}), max_size=10),
        "inner": st.none() | _inner(),
        "inners": st.lists(_inner(), max_size=3),
        "m": st.dictionaries(TEXT, st.none() | st.floats(allow_nan=False), max_size=3),
        "empty": st.just({}),
    }
)


def _container(records: list[dict[str, Any]], codec: str = "deflate", block: int = 7) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(SCHEMA), records, codec=codec, sync_interval=block)
    return out.getvalue()


def _decode(data: bytes) -> pa.StructArray:
    blocks = read_avro_blocks("mem", data)
    return ColumnarDecoder(blocks.writer_schema, blocks.named).decode(blocks.block_data())


def _expected(data: bytes) -> pa.Array:
    records = list(fastavro.reader(io.BytesIO(data)))
    return pa.array(records, type=avro_arrow_type(SCHEMA, named_avro_types(SCHEMA)))


@settings(max_examples=60)
@given(st.lists(RECORDS, max_size=12), st.sampled_from(["null", "deflate"]))
def test_same_as_fastavro(records: list[dict[str, Any]], codec: str) -> None:
    data = _container(records, codec)
    got = _decode(data)
    assert got.type == avro_arrow_type(SCHEMA, named_avro_types(SCHEMA))
    assert got.to_pylist() == _expected(data).to_pylist()


def test_floats_keep_nan_and_infinities() -> None:
    base = {name: None for name in ("l", "l2", "nb", "ns", "by", "fx", "ints", "pairs")}
    record = {
        **base,
        "i": 1,
        "b": True,
        "f": math.inf,
        "d": math.nan,
        "s": "x",
        "e": "B",
        "bounds": None,
        "inner": None,
        "inners": [],
        "m": {},
        "empty": {},
    }
    got = _decode(_container([record])).to_pylist()[0]
    assert got["f"] == math.inf and math.isnan(got["d"]) and got["e"] == "B"


def _zigzag(v: int) -> bytes:
    u = (v << 1) ^ (v >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def test_arrays_in_several_blocks_with_byte_sizes() -> None:
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "ints", "type": {"type": "array", "items": "long"}},
            {"name": "bounds", "type": {"type": "array", "items": BOUND}},
            {"name": "names", "type": {"type": "array", "items": "string"}},
        ],
    }
    ints = _zigzag(2) + _zigzag(300) + _zigzag(-1)  # a block of two
    body = _zigzag(-1) + _zigzag(len(_zigzag(7))) + _zigzag(7)  # one, with its byte size
    ints += body + _zigzag(0)
    item = _zigzag(5) + _zigzag(2) + b"ab"
    bounds = _zigzag(1) + item + _zigzag(-1) + _zigzag(len(item)) + item + _zigzag(0)
    names = _zigzag(1) + _zigzag(1) + b"x" + _zigzag(0)
    record = ints + bounds + names
    decoder = ColumnarDecoder(schema, named_avro_types(schema))
    got = decoder.decode([(2, record + record)]).to_pylist()
    want = {
        "ints": [300, -1, 7],
        "bounds": [{"key": 5, "value": b"ab"}, {"key": 5, "value": b"ab"}],
        "names": ["x"],
    }
    assert got == [want, want]


def test_corrupt_data_is_refused() -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]}
    decoder = ColumnarDecoder(schema, named_avro_types(schema))
    with pytest.raises((UnsupportedAvroError, IndexError)):
        decoder.decode([(2, _zigzag(3) + b"abc")])  # the second record is missing
    with pytest.raises(UnsupportedAvroError):
        decoder.decode([(1, _zigzag(-3) + b"abc")])  # a negative length
    with pytest.raises(UnsupportedAvroError):
        decoder.decode([(1, _zigzag(2) + b"\xff\xfe")])  # not UTF-8
    with pytest.raises(UnsupportedAvroError):
        decoder.decode([(1, _zigzag(1) + b"ab")])  # bytes left after the last record


def test_unions_of_several_types_are_refused() -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "u", "type": ["int", "string"]}]}
    with pytest.raises(UnsupportedAvroError):
        ColumnarDecoder(schema, named_avro_types(schema))


@given(st.lists(LONGS, max_size=50))
def test_decode_varints(values: list[int]) -> None:
    data = np.frombuffer(b"".join(_zigzag(v) for v in values), dtype=np.uint8)
    assert decode_varints(data).tolist() == values


def test_a_long_is_at_most_ten_bytes() -> None:
    """A varint that never ends (hostile block headers) is refused at its 11th byte, not
    decoded into an ever larger int (quadratic in its length)."""
    from icepark.avro.file import read_long

    assert read_long(b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", 0) == (2**63 - 1, 10)
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        read_long(b"\xff" * 300_000, 0)
