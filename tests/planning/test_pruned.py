"""The pruned manifest reader gives the same entries as reading everything and judging each
data file with the metrics evaluator, for random files and random filters."""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import icepark.manifest.pruned as pruned
from icepark.avro.blocks import UnsupportedAvroError
from icepark.avro.file import WRITE_CODECS
from icepark.expressions import (
    AlwaysTrue,
    BooleanExpression,
    InclusiveMetricsEvaluator,
    Operation,
    and_,
    not_,
    or_,
    predicate,
)
from icepark.io import PyArrowFileIO
from icepark.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest,
    write_manifest,
)
from icepark.manifest.pruned import read_manifest_pruned
from icepark.planning.matching import FileMatcher
from icepark.spec.conversions import to_bytes
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import IdentityTransform
from icepark.spec.types import DoubleType, IntegerType, LongType, NestedField, StringType

FILEIO = PyArrowFileIO()
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "d", DoubleType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "p", IntegerType()),
    NestedField(70, "far", LongType()),  # a field id that takes two bytes in Avro
)
SPEC = PartitionSpec(0, (PartitionField(4, 1000, IdentityTransform(), "p"),))
TYPES = {1: LongType(), 2: DoubleType(), 3: StringType(), 4: IntegerType(), 70: LongType()}
STRINGS = st.text(alphabet="abc\u00e9", max_size=4)
VALUES: dict[int, st.SearchStrategy[Any]] = {
    1: st.integers(-50, 50),
    2: st.floats(-10, 10, allow_nan=False, width=32),
    3: STRINGS,
    4: st.integers(-5, 5),
    70: st.integers(-(2**40), 2**40),
}


@st.composite
def _data_file(draw: st.DrawFn, n: int) -> DataFile:
    records = draw(st.sampled_from([0, 1, 10, 10, 10, -1]))
    value_counts: dict[int, int] = {}
    nulls: dict[int, int] = {}
    nans: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    for fid, t in TYPES.items():
        total = max(records, 0)
        if draw(st.booleans()):
            value_counts[fid] = total
        if draw(st.booleans()):
            nulls[fid] = draw(st.sampled_from([0, total, min(1, total)]))
        if fid == 2 and draw(st.booleans()):
            nans[fid] = draw(st.sampled_from([0, total, min(1, total)]))
        if draw(st.booleans()):
            a, b = sorted([draw(VALUES[fid]), draw(VALUES[fid])])
            if fid == 3 and draw(st.booleans()):  # truncated bounds
                a, b = a[:1], b[:1] + "\U0010ffff" if b else b
            lower[fid] = to_bytes(t, a)
            upper[fid] = to_bytes(t, b)
            if fid == 2 and draw(st.booleans()):
                lower[fid] = struct.pack("<d", math.nan)  # unreliable NaN bound
        if fid == 70 and draw(st.booleans()):
            lower[fid] = b"\x01"  # a bound that does not decode
    maybe = st.booleans()
    return DataFile(
        content=FileContent.DATA,
        file_path=f"s3://bucket/data/file-{n}-{'x' * draw(st.integers(0, 200))}.parquet",
        file_format=FileFormat.PARQUET,
        partition=(draw(st.one_of(st.none(), st.integers(-5, 5))),),
        record_count=records,
        file_size_in_bytes=draw(st.integers(1, 10**9)),
        column_sizes=draw(st.sampled_from([None, {1: 10, 70: 20**5}])),
        value_counts=value_counts if draw(maybe) else None,
        null_value_counts=nulls if draw(maybe) else None,
        nan_value_counts=nans if draw(maybe) else None,
        lower_bounds=lower if draw(maybe) else None,
        upper_bounds=upper if draw(maybe) else None,
        split_offsets=draw(st.sampled_from([None, (4,), (4, 10**6)])),
        first_row_id=draw(st.sampled_from([None, None, 7])),
    )


def _literal(draw: st.DrawFn, fid: int) -> Any:
    return draw(VALUES[fid])


@st.composite
def _predicate(draw: st.DrawFn) -> BooleanExpression:
    fid = draw(st.sampled_from(sorted(TYPES)))
    name = SCHEMA.find_field(fid).name
    ops = [
        Operation.IS_NULL,
        Operation.NOT_NULL,
        Operation.LT,
        Operation.LT_EQ,
        Operation.GT,
        Operation.GT_EQ,
        Operation.EQ,
        Operation.NOT_EQ,
        Operation.IN,
        Operation.NOT_IN,
    ]
    if fid == 2:
        ops += [Operation.IS_NAN, Operation.NOT_NAN]
    if fid == 3:
        ops += [Operation.STARTS_WITH, Operation.NOT_STARTS_WITH]
    op = draw(st.sampled_from(ops))
    if op.is_unary:
        return predicate(op, name)
    if op.is_set:
        return predicate(op, name, draw(st.lists(VALUES[fid], min_size=1, max_size=3)))
    return predicate(op, name, _literal(draw, fid))


def _filters() -> st.SearchStrategy[BooleanExpression]:
    return st.recursive(
        _predicate(),
        lambda inner: st.one_of(
            st.builds(and_, inner, inner), st.builds(or_, inner, inner), st.builds(not_, inner)
        ),
        max_leaves=4,
    )


def _write(
    tmp_path: Path, name: str, version: int, codec: str, files: list[tuple[int, DataFile]]
) -> tuple[Any, ManifestFile]:
    location = str(tmp_path / name)
    with write_manifest(
        FILEIO.new_output(location),
        SPEC,
        SCHEMA,
        format_version=version,
        snapshot_id=42,
        codec=codec,
        overwrite=True,
    ) as writer:
        for status, f in files:
            if version < 3:
                f = f.replace(first_row_id=None)
            seq = None if status == ManifestEntryStatus.ADDED or version == 1 else 3
            writer.write_entry(ManifestEntry(ManifestEntryStatus(status), 42, seq, seq, f))
    manifest = writer.to_manifest_file().replace(
        sequence_number=5, first_row_id=1000 if version >= 3 else None
    )
    return FILEIO.new_input(location), manifest


def _expected(input_file: Any, manifest: ManifestFile, matcher: FileMatcher) -> list[Any]:
    evaluator = InclusiveMetricsEvaluator(SCHEMA, matcher.row_filter)
    return [
        e for e in read_manifest(input_file, manifest) if e.is_live and evaluator.eval(e.data_file)
    ]


_STATUSES = st.sampled_from([1, 1, 0, 2])


@pytest.fixture(autouse=True)
def _no_fallback(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path must handle every manifest written here (the fallback reads everything)."""
    if request.node.name.startswith("test_falls_back"):
        return

    def fallback(*_: Any, **__: Any) -> Any:
        raise AssertionError("the pruned reader fell back to read_manifest")

    monkeypatch.setattr(pruned, "read_manifest", fallback)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    files=st.lists(st.tuples(_STATUSES, st.integers(0, 10**6)), min_size=0, max_size=12).flatmap(
        lambda specs: st.tuples(*[_data_file(n) for n in range(len(specs))]).map(
            lambda dfs: [(s, f) for (s, _), f in zip(specs, dfs)]
        )
    ),
    row_filter=_filters(),
    version=st.sampled_from([1, 2, 3]),
    codec=st.sampled_from(sorted({"null", "deflate"} & WRITE_CODECS)),
)
def test_pruned_reader_matches_the_evaluator(
    tmp_path: Path,
    files: list[tuple[int, DataFile]],
    row_filter: BooleanExpression,
    version: int,
    codec: str,
) -> None:
    input_file, manifest = _write(tmp_path, "m.avro", version, codec, files)
    matcher = FileMatcher(SCHEMA, {0: SPEC}, row_filter)
    got = read_manifest_pruned(
        input_file, manifest, matcher.metrics_field_ids, matcher.metrics_might_match
    )
    assert got == _expected(input_file, manifest, matcher)


def _many(n: int) -> list[tuple[int, DataFile]]:
    out = []
    for i in range(n):
        out.append(
            (
                [1, 0, 2][i % 3],
                DataFile(
                    content=FileContent.DATA,
                    file_path=f"s3://bucket/data/{i:05d}.parquet",
                    file_format=FileFormat.PARQUET,
                    partition=(i % 4,),
                    record_count=100,
                    file_size_in_bytes=1000 + i,
                    column_sizes={fid: 10 for fid in TYPES},
                    value_counts={fid: 100 for fid in TYPES},
                    null_value_counts={fid: 0 for fid in TYPES},
                    nan_value_counts={2: 0},
                    lower_bounds={1: to_bytes(LongType(), i * 100), 3: b"a"},
                    upper_bounds={1: to_bytes(LongType(), i * 100 + 99), 3: b"b"},
                    first_row_id=None if i % 5 else 10**6 + i,
                ),
            )
        )
    return out


FILTERS = [
    "id = 50007",
    "id = 0",
    "id in (5, 12345, 40000)",
    "id > 30000 and s = 'a'",
    "id < 100 or id >= 49900",
    "s like 'a%'",
    "d is nan",
    "p = 1",
    "far is null",
]


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("text", FILTERS)
def test_many_blocks(tmp_path: Path, version: int, text: str) -> None:
    from icepark.expressions import parse_filter

    input_file, manifest = _write(tmp_path, "many.avro", version, "deflate", _many(600))
    matcher = FileMatcher(SCHEMA, {0: SPEC}, parse_filter(text))
    got = read_manifest_pruned(
        input_file, manifest, matcher.metrics_field_ids, matcher.metrics_might_match
    )
    assert got == _expected(input_file, manifest, matcher)


def test_falls_back_when_the_scanner_gives_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icepark.expressions import parse_filter

    def refuse(*_: Any, **__: Any) -> Any:
        raise UnsupportedAvroError("no")

    input_file, manifest = _write(tmp_path, "m.avro", 3, "deflate", _many(50))
    matcher = FileMatcher(SCHEMA, {0: SPEC}, parse_filter("id < 1000"))
    monkeypatch.setattr(pruned, "compile_scanner", refuse)
    got = read_manifest_pruned(
        input_file, manifest, matcher.metrics_field_ids, matcher.metrics_might_match
    )
    assert got == _expected(input_file, manifest, matcher)
    assert len(got) == 7  # live files among the first ten


def test_match_all_keeps_every_live_entry(tmp_path: Path) -> None:
    input_file, manifest = _write(tmp_path, "m.avro", 2, "deflate", _many(30))
    matcher = FileMatcher(SCHEMA, {0: SPEC}, AlwaysTrue())
    got = read_manifest_pruned(input_file, manifest, (), matcher.metrics_might_match)
    assert got == [e for e in read_manifest(input_file, manifest) if e.is_live]


def test_cached_scans_serve_other_filters(tmp_path: Path) -> None:
    from icepark.expressions import parse_filter

    input_file, manifest = _write(tmp_path, "c.avro", 2, "deflate", _many(200))
    for text in ["id = 5000", "id = 7000", "s = 'a' and id < 300", "id = 5000"]:
        matcher = FileMatcher(SCHEMA, {0: SPEC}, parse_filter(text))
        got = read_manifest_pruned(
            input_file, manifest, matcher.metrics_field_ids, matcher.metrics_might_match
        )
        assert got == _expected(input_file, manifest, matcher)


def test_a_manifest_rewritten_in_place_is_scanned_again(tmp_path: Path) -> None:
    from icepark.expressions import parse_filter

    matcher = FileMatcher(SCHEMA, {0: SPEC}, parse_filter("id < 1000"))
    first, manifest = _write(tmp_path, "r.avro", 2, "null", _many(20))
    before = read_manifest_pruned(
        first, manifest, matcher.metrics_field_ids, matcher.metrics_might_match
    )
    files = [
        (s, f.replace(lower_bounds={**(f.lower_bounds or {}), 1: to_bytes(LongType(), 10**6)}))
        for s, f in _many(20)
    ]
    second, again = _write(tmp_path, "r.avro", 2, "null", files)
    assert again.manifest_length == manifest.manifest_length
    after = read_manifest_pruned(
        second, again, matcher.metrics_field_ids, matcher.metrics_might_match
    )
    assert len(before) == 7
    assert after == []


def test_cache_drops_the_least_recently_used(tmp_path: Path) -> None:
    from icepark.avro.blocks import read_avro_blocks
    from icepark.lru import LruCache

    input_file, _ = _write(tmp_path, "w.avro", 2, "null", _many(10))
    raw = input_file.read_bytes()
    blocks = read_avro_blocks(input_file.location, raw)
    weight = pruned._Scanned(raw, blocks, {}).weight()
    assert weight > len(raw)  # the file and its decompressed blocks
    # the module's cache, at room for two of these manifests
    cache: LruCache[tuple[str, int], pruned._Scanned] = LruCache(
        2 * weight + 1, pruned._Scanned.weight
    )
    assert pruned._MANIFESTS._weigh is pruned._Scanned.weight
    for name in ("a", "b", "c"):
        cache.put((name, 1), pruned._Scanned(raw, blocks, {}))
        assert cache.get(("a", 1)) is not None or name == "c"
    assert cache.get(("a", 1)) is not None  # used last, kept
    assert cache.get(("b", 1)) is None
    assert cache.get(("c", 1)) is not None


def test_planner_gives_the_same_tasks_as_judging_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa

    import icepark.planning.walk as walk
    from icepark.catalog import SqlCatalog

    catalog = SqlCatalog("p", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    arrow_schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("g", pa.string()),
            pa.field("v", pa.float64()),
        ]
    )
    table = catalog.create_table(
        "db.t",
        arrow_schema,
        partition_by=["g"],
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"},
    )
    for start in range(0, 400, 100):
        ids = list(range(start, start + 100))
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "g": pa.array(["a" if i < 200 else None if i % 7 == 0 else "b" for i in ids]),
                    "v": pa.array(
                        [None if i % 5 == 0 else math.nan if i % 11 == 0 else i / 3 for i in ids]
                    ),
                },
                schema=arrow_schema,
            )
        )
    table.delete("id = 150 or id = 350")
    filters = [
        "id = 150",
        "id < 120",
        "g = 'b' and id > 300",
        "v is nan",
        "v > 100",
        "g is null",
        None,
    ]

    def plan(text: str | None) -> list[Any]:
        return sorted(table.scan(filter=text).plan_files(), key=lambda t: t.file.file_path)

    fast = {text: plan(text) for text in filters}

    def judge_every_file(
        input_file: Any,
        manifest: Any,
        ids: Any,
        might_match: Any,
        live_only: bool = True,
        added_only: bool = False,
        fetched: Any = None,
    ) -> list[Any]:
        entries = read_manifest(input_file, manifest)
        return [
            e
            for e in entries
            if (e.is_live or not live_only)
            and (e.status == 1 or not added_only)
            and might_match(e.data_file)
        ]

    monkeypatch.setattr(walk, "read_manifest_pruned", judge_every_file)
    for text in filters:
        assert fast[text] == plan(text), text
    assert len(fast["id = 150"]) == 1 and fast["id = 150"][0].delete_files


@pytest.mark.parametrize("text", ["id = 30007", "s = 'b'", "s > 'aa' and id < 30000"])
def test_long_bounds_and_changing_shapes(tmp_path: Path, text: str) -> None:
    """Entries whose metric maps change shape from file to file, some with string bounds
    of 64 bytes or more (read map by map), plan as judging every file does."""
    from icepark.expressions import parse_filter

    files = []
    for i, (status, f) in enumerate(_many(400)):
        lower, upper = dict(f.lower_bounds or {}), dict(f.upper_bounds or {})
        if i % 3 == 0:
            lower[3], upper[3] = b"a" * 70, b"b" * (64 + i % 7)
        counts = None if i % 5 == 0 else {fid: 100 for fid in list(TYPES)[: 1 + i % 4]}
        f = f.replace(lower_bounds=lower, upper_bounds=upper, value_counts=counts)
        files.append((status, f))
    input_file, manifest = _write(tmp_path, "shapes.avro", 2, "deflate", files)
    matcher = FileMatcher(SCHEMA, {0: SPEC}, parse_filter(text))
    got = read_manifest_pruned(
        input_file, manifest, matcher.metrics_field_ids, matcher.metrics_might_match
    )
    expected = _expected(input_file, manifest, matcher)
    assert got == expected
    assert expected  # the filter keeps some files


def test_the_collector_is_paused_only_while_scanning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from icepark.expressions import parse_filter

    input_file, manifest = _write(tmp_path, "gc.avro", 2, "deflate", _many(50))
    matcher = FileMatcher(SCHEMA, {0: SPEC}, parse_filter("id < 1000"))
    seen: list[bool] = []
    scanning: list[bool] = []
    records = pruned._Scanner.records

    def watched(self: Any, blocks: Any) -> Any:
        scanning.append(gc.isenabled())
        return records(self, blocks)

    monkeypatch.setattr(pruned._Scanner, "records", watched)

    def might_match(stats: Any) -> bool:
        seen.append(gc.isenabled())
        return matcher.metrics_might_match(stats)

    assert gc.isenabled()
    read_manifest_pruned(input_file, manifest, matcher.metrics_field_ids, might_match)
    assert scanning == [False]  # off while scanning
    assert gc.isenabled() and seen and all(seen)  # judged with it on, and on again after
    pruned.clear_cache()
    gc.disable()
    try:
        read_manifest_pruned(input_file, None, matcher.metrics_field_ids, might_match)
        assert not gc.isenabled()  # turned off by someone else: left off
    finally:
        gc.enable()


def test_a_manifest_scanned_already_is_not_decompressed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icepark.expressions import parse_filter

    input_file, manifest = _write(tmp_path, "again.avro", 2, "deflate", _many(100))
    matcher = FileMatcher(SCHEMA, {0: SPEC}, parse_filter("id < 1000"))
    splits: list[str] = []
    split = pruned.read_avro_blocks
    monkeypatch.setattr(pruned, "read_avro_blocks", lambda *a: splits.append(a[0]) or split(*a))
    results = []
    for _ in range(2):
        fetched = pruned.fetch_manifest(input_file, manifest)
        results.append(
            read_manifest_pruned(
                input_file,
                manifest,
                matcher.metrics_field_ids,
                matcher.metrics_might_match,
                fetched=fetched,
            )
        )
    assert results[0] == results[1] == _expected(input_file, manifest, matcher)
    assert len(splits) == 1  # the second fetch found the scan kept for the same bytes
