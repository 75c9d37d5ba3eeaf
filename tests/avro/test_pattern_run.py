"""A pattern run reads what the record holds: random records of a schema with strings,
unions, fixed values, arrays, maps and nested records, read one after another by one run
(learning their lengths and counts), give the wanted values and end where the fields end."""

from __future__ import annotations

import io
from typing import Any

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.avro.pattern_run import START, KeyedBytes, pattern_run
from icepark.avro.scanner import LONG

KV = {
    "type": "array",
    "items": {
        "type": "record",
        "name": "kv",
        "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "bytes"}],
    },
}
LONGS = {"type": "array", "items": "long"}
FIELDS: list[dict[str, Any]] = [
    {"name": "a", "type": "long"},
    {"name": "o", "type": ["null", "long"]},
    {"name": "s", "type": "string"},
    {"name": "u", "type": ["null", "string", "int"]},
    {"name": "f", "type": {"type": "fixed", "name": "f3", "size": 3}},
    {"name": "d", "type": "double"},
    {"name": "arr", "type": ["null", LONGS]},
    {"name": "m", "type": {"type": "map", "values": "int"}},
    {"name": "kv", "type": ["null", KV]},
    {
        "name": "nested",
        "type": {
            "type": "record",
            "name": "n",
            "fields": [{"name": "x", "type": "int"}, {"name": "y", "type": ["null", "string"]}],
        },
    },
]
SCHEMA = fastavro.parse_schema(
    {"type": "record", "name": "r", "fields": [*FIELDS, {"name": "tail", "type": "long"}]}
)
WANTED_KEYS = frozenset({1, 70, 300})
WANTED = {
    id(FIELDS[0]): (0, LONG),
    id(FIELDS[1]): (1, LONG),
    id(FIELDS[6]): (2, START),
    id(FIELDS[8]): (3, KeyedBytes(WANTED_KEYS)),
}
LONG_VALUES = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(max_size=80)
KEYS = st.sampled_from([1, 2, 63, 64, 70, 300, -1])
RECORDS = st.fixed_dictionaries(
    {
        "a": LONG_VALUES,
        "o": st.none() | LONG_VALUES,
        "s": TEXT,
        "u": st.none() | TEXT | st.integers(-(2**31), 2**31 - 1),
        "f": st.binary(min_size=3, max_size=3),
        "d": st.floats(allow_nan=False),
        "arr": st.none() | st.lists(LONG_VALUES, max_size=5),
        "m": st.dictionaries(st.text(max_size=5), st.integers(-5, 5), max_size=3),
        "kv": st.none()
        | st.lists(
            st.fixed_dictionaries({"key": KEYS, "value": st.binary(max_size=100)}), max_size=6
        ),
        "nested": st.fixed_dictionaries({"x": st.integers(-9, 9), "y": st.none() | TEXT}),
        "tail": st.just(7),
    }
)


def _encode(record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, SCHEMA, record)
    return out.getvalue()


def _keyed(items: list[dict[str, Any]] | None) -> dict[int, bytes] | None:
    if items is None:
        return None
    return {i["key"]: i["value"] for i in items if i["key"] in WANTED_KEYS}


def _reader() -> Any:
    run = pattern_run(FIELDS, {}, WANTED)
    assert run is not None and run.length == len(FIELDS) and run.slots == (0, 1, 2, 3)
    return run.reader


@settings(max_examples=300, deadline=None)
@given(records=st.lists(RECORDS, min_size=1, max_size=8))
def test_a_run_reads_what_the_records_hold(records: list[dict[str, Any]]) -> None:
    reader = _reader()
    for record in records:
        data = _encode(record)
        got = reader.read(data, 0)
        assert got is not None
        (a, o, arr_at, kv), end = got
        assert (a, o, kv) == (record["a"], record["o"], _keyed(record["kv"]))
        if record["arr"] is None:
            assert arr_at is None
        else:
            array = fastavro.schemaless_reader(io.BytesIO(data[arr_at:]), LONGS)
            assert array == record["arr"]
        assert data[end:] == b"\x0e"  # the tail, 7


def _record(**changes: Any) -> dict[str, Any]:
    base = {
        "a": 1,
        "o": None,
        "s": "x",
        "u": None,
        "f": b"abc",
        "d": 0.5,
        "arr": [1, 2, 3],
        "m": {},
        "kv": [{"key": 1, "value": b"lo"}],
        "nested": {"x": 1, "y": None},
        "tail": 7,
    }
    return {**base, **changes}


def test_an_array_in_two_blocks_is_left_to_the_field_reader() -> None:
    data = _encode(_record())
    at = data.index(b"\x06\x02\x04\x06\x00")  # arr: 3 items (1, 2, 3), then the end
    two_blocks = data[:at] + b"\x04\x02\x04\x02\x06\x00" + data[at + 5 :]
    reader = _reader()
    assert reader.read(data, 0) is not None
    assert reader.read(two_blocks, 0) is None
    assert reader.read(data, 0) is not None  # one record that does not fit changes nothing


def test_records_that_keep_changing_form_stop_being_tried() -> None:
    """Each new string length compiles the pattern again; after 16 compiles the run gives
    up, and the scanner reads those fields one by one."""
    reader = _reader()
    results = [reader.read(_encode(_record(s="x" * n)), 0) for n in range(40)]
    assert all(r is not None for r in results[:16])
    assert all(r is None for r in results[16:])
    assert reader.read(_encode(_record()), 0) is None


def test_a_run_needs_readable_wants() -> None:
    assert pattern_run(FIELDS, {}, {id(FIELDS[2]): (0, LONG)}) is None  # a string is no long
    assert pattern_run(FIELDS, {}, {id(FIELDS[6]): (0, KeyedBytes(frozenset({1})))}) is None
    assert pattern_run(FIELDS, {}, {id(FIELDS[3]): (0, START)}) is None  # two value branches
