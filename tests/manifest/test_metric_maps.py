"""A run of metric maps read with one pattern per shape gives what reading them map by map
gives, for random maps; maps it cannot fit are left to the map-by-map reader."""

from __future__ import annotations

import io
from typing import Any

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.avro.blocks import compile_skipper
from icepark.manifest.metric_maps import (
    BOUNDS,
    COUNTS,
    SKIPPED,
    metric_map_reader,
    metrics_run,
)


def _map(name: str, fid: int, value: str) -> dict[str, Any]:
    item = {
        "type": "record",
        "name": f"k{fid}_v{fid + 1}",
        "fields": [
            {"name": "key", "type": "int", "field-id": fid},
            {"name": "value", "type": value, "field-id": fid + 1},
        ],
    }
    array = {"type": "array", "items": item, "element-id": fid + 2}
    return {"name": name, "type": ["null", array], "default": None, "field-id": fid + 100}


FIELDS = [
    _map("column_sizes", 117, "long"),
    _map("value_counts", 119, "long"),
    _map("null_value_counts", 121, "long"),
    _map("nan_value_counts", 138, "long"),
    _map("lower_bounds", 126, "bytes"),
    _map("upper_bounds", 129, "bytes"),
]
ROLES = [SKIPPED, COUNTS, COUNTS, COUNTS, BOUNDS, BOUNDS]
SCHEMA = {"type": "record", "name": "r", "fields": [*FIELDS, {"name": "tail", "type": "long"}]}
PARSED = fastavro.parse_schema(SCHEMA)
KEYS = st.sampled_from([1, 2, 3, 63, 64, 70, 1000, 2**20])
COUNTS_MAP = st.one_of(
    st.none(), st.dictionaries(KEYS, st.integers(-(2**40), 2**40), max_size=8)
)
SHORT_BOUNDS = st.one_of(st.none(), st.dictionaries(KEYS, st.binary(max_size=63), max_size=8))
ANY_BOUNDS = st.one_of(st.none(), st.dictionaries(KEYS, st.binary(max_size=100), max_size=8))
WANTED = st.frozensets(KEYS, max_size=3)


def _encode(maps: list[dict[int, Any] | None]) -> bytes:
    record: dict[str, Any] = {"tail": 7}
    for f, m in zip(FIELDS, maps, strict=True):
        record[f["name"]] = None if m is None else [{"key": k, "value": v} for k, v in m.items()]
    out = io.BytesIO()
    fastavro.schemaless_writer(out, PARSED, record)
    return out.getvalue()


def _by_map(data: bytes, wanted: frozenset[int]) -> tuple[tuple[Any, ...], int]:
    """What the map-by-map readers give: count map starts and the wanted bounds."""
    pos, values = 0, []
    for f, role in zip(FIELDS, ROLES, strict=True):
        if data[pos] == 0:
            pos += 1
            if role != SKIPPED:
                values.append(None)
            continue
        array = f["type"][1]
        if role == SKIPPED:
            pos = compile_skipper(array, {})(data, pos + 1)
            continue
        read = metric_map_reader(array, {}, wanted, "bytes" if role == BOUNDS else "long")
        value, pos = read(data, pos + 1)
        values.append(value)
    return tuple(values), pos


def _run(wanted: frozenset[int]) -> Any:
    run = metrics_run(FIELDS, ROLES, {}, wanted, [5, 6, 7, 8, 9])
    assert run is not None and run.length == 6 and run.slots == (5, 6, 7, 8, 9)
    return run.reader


@settings(max_examples=300, deadline=None)
@given(
    entries=st.lists(
        st.tuples(COUNTS_MAP, COUNTS_MAP, COUNTS_MAP, COUNTS_MAP, ANY_BOUNDS, ANY_BOUNDS),
        min_size=1,
        max_size=6,
    ),
    wanted=WANTED,
)
def test_a_run_reads_what_the_maps_read(
    entries: list[tuple[Any, ...]], wanted: frozenset[int]
) -> None:
    reader = _run(wanted)
    for maps in entries:  # shapes change between entries; the reader follows
        data = _encode(list(maps))
        got = reader.read(data, 0)
        long_bound = any(len(v) >= 64 for m in maps[4:] if m for v in m.values())
        if got is None:
            assert long_bound  # only a bound of 64 bytes or more does not fit
            continue
        assert got == _by_map(data, wanted)
        assert data[got[1] :] == b"\x0e"  # stopped where the maps end: the tail, 7


@settings(max_examples=100, deadline=None)
@given(
    maps=st.tuples(COUNTS_MAP, COUNTS_MAP, COUNTS_MAP, COUNTS_MAP, SHORT_BOUNDS, SHORT_BOUNDS),
    wanted=WANTED,
)
def test_maps_of_short_bounds_always_fit(maps: tuple[Any, ...], wanted: frozenset[int]) -> None:
    data = _encode(list(maps))
    got = _run(wanted).read(data, 0)
    assert got is not None
    assert got == _by_map(data, wanted)


def _two_blocks(data: bytes) -> bytes:
    """``data`` with its value counts (three items) written as two blocks of 2 and 1."""
    assert data[:2] == b"\x00\x02" and data[2] == 6  # no column sizes; 3 value counts
    items = data[3:9]  # three one-byte keys with one-byte values
    return data[:2] + b"\x04" + items[:4] + b"\x02" + items[4:] + data[9:]


def test_a_map_in_two_blocks_is_left_to_the_map_reader() -> None:
    maps: list[dict[int, Any] | None] = [None, {1: 5, 2: 6, 3: 7}, None, None, {1: b"a"}, None]
    data = _two_blocks(_encode(maps))
    reader = _run(frozenset({1}))
    assert reader.read(data, 0) is None
    assert _by_map(data, frozenset({1}))[0] == (2, None, None, {1: b"a"}, None)


def test_entries_that_never_fit_stop_being_tried() -> None:
    reader = _run(frozenset({1}))
    long = _encode([None, {1: 1}, None, None, {1: b"x" * 70}, None])
    short = _encode([None, {1: 1}, None, None, {1: b"x" * 7}, None])
    assert reader.read(short, 0) == _by_map(short, frozenset({1}))
    for _ in range(64):
        assert reader.read(long, 0) is None
    assert reader.read(short, 0) is None  # given up: the scanner reads map by map


def test_a_run_needs_optional_maps_of_the_right_items() -> None:
    required = [{**FIELDS[0], "type": FIELDS[0]["type"][1]}, *FIELDS[1:]]
    assert metrics_run(required, ROLES, {}, frozenset(), [5, 6, 7, 8, 9]) is None
    swapped = [*FIELDS[:4], FIELDS[5], FIELDS[1]]  # a count map where bounds are expected
    assert metrics_run(swapped, ROLES, {}, frozenset(), [5, 6, 7, 8, 9]) is None
