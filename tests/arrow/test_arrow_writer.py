"""Writing Arrow data as data files: schema matching, partitions, sorting, rolling, cleanup."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import icepark.arrow.writer as writer_module
from icepark.arrow.metrics import MetricsConfig, compute_metrics
from icepark.arrow.schema import schema_to_arrow
from icepark.arrow.writer import data_file_name, data_location, write_data_files
from icepark.errors import ValidationError
from icepark.io.pyarrow_fileio import PyArrowFileIO
from icepark.spec.manifests import DataFile, FileContent, FileFormat
from icepark.spec.partitioning import UNPARTITIONED, PartitionSpec, build_partition_spec
from icepark.spec.schema import Schema
from icepark.spec.sorting import UNSORTED_ORDER, SortOrder, build_sort_order
from icepark.spec.transforms import BucketTransform
from icepark.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "b", BooleanType()),
    NestedField(3, "i", IntegerType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dec", DecimalType(9, 2)),
    NestedField(7, "dt", DateType()),
    NestedField(8, "t", TimeType()),
    NestedField(9, "ts", TimestampType()),
    NestedField(10, "tz", TimestamptzType()),
    NestedField(11, "ns", TimestampNanoType()),
    NestedField(12, "s", StringType()),
    NestedField(13, "u", UUIDType()),
    NestedField(14, "fx", FixedType(3)),
    NestedField(15, "bin", BinaryType()),
    NestedField(
        16,
        "st",
        StructType(NestedField(20, "x", IntegerType()), NestedField(21, "y", StringType())),
    ),
    NestedField(17, "l", ListType(22, LongType(), element_required=False)),
    NestedField(18, "m", MapType(23, StringType(), 24, DoubleType(), value_required=False)),
    NestedField(
        19,
        "ls",
        ListType(25, StructType(NestedField(26, "z", DecimalType(20, 3))), element_required=True),
    ),
)


def _rows(n: int = 40) -> list[dict[str, Any]]:
    out = []
    for k in range(n):
        null = k % 7 == 3
        out.append(
            {
                "id": k,
                "b": None if null else k % 2 == 0,
                "i": None if null else k * 3 - 50,
                "f": None if null else (float("nan") if k % 11 == 5 else k / 4),
                "d": None if null else -k * 1.5,
                "dec": None if null else Decimal(k * 37 - 400).scaleb(-2),
                "dt": None if null else date(2024, 1, 1 + k % 28),
                "t": None if null else time(k % 24, k % 60, 1, k),
                "ts": None if null else datetime(2023, 12, 30, k % 24, 5, k % 60, 17),
                "tz": None if null else datetime(2024, 1, 1 + k % 9, k % 24, tzinfo=UTC),
                "ns": None if null else 1_700_000_000_000_000_000 + k * 1001,
                "s": None if null else f"name-{k % 5}-é",
                "u": None if null else uuid.UUID(int=k * 7919),
                "fx": None if null else bytes([k, k + 1, 255 - k]),
                "bin": None if null else bytes(range(k % 9)),
                "st": None if null else {"x": None if k % 5 == 0 else k, "y": f"y{k}"},
                "l": None if null else [k, None, k * 2][: k % 4],
                "m": None if null else {f"k{k % 3}": float(k)},
                "ls": None if null else [{"z": Decimal(k).scaleb(-3)}],
            }
        )
    return out


def _table(rows: list[dict[str, Any]], schema: Schema = SCHEMA) -> pa.Table:
    arrow = schema_to_arrow(schema)
    columns = {}
    for f in arrow:
        values = [r.get(f.name) for r in rows]
        if isinstance(f.type, pa.BaseExtensionType):  # uuid
            storage = pa.array([None if v is None else v.bytes for v in values], pa.binary(16))
            columns[f.name] = pa.ExtensionArray.from_storage(f.type, storage)
        elif pa.types.is_timestamp(f.type) and f.type.unit == "ns":
            columns[f.name] = pa.array(values, pa.int64()).cast(f.type)
        else:
            columns[f.name] = pa.array(values, f.type)
    return pa.table(columns, schema=arrow)


def _write(
    tmp_path: Path,
    data: Any,
    *,
    schema: Schema = SCHEMA,
    spec: PartitionSpec = UNPARTITIONED,
    order: SortOrder = UNSORTED_ORDER,
    properties: dict[str, str] | None = None,
    **kw: Any,
) -> list[DataFile]:
    return write_data_files(
        PyArrowFileIO(),
        table_location=str(tmp_path / "table"),
        schema=schema,
        spec=spec,
        sort_order=order,
        properties=properties or {},
        data=data,
        **kw,
    )


def _read(files: list[DataFile]) -> pa.Table:
    return pa.concat_tables([pq.read_table(f.file_path) for f in files])


def _sorted_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows by id, NaN replaced so that equal rows compare equal."""

    def fix(v: Any) -> Any:
        if isinstance(v, float) and v != v:
            return "NaN"
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    return sorted((fix(r) for r in table.to_pylist()), key=lambda r: r["id"])


def _files_on_disk(tmp_path: Path) -> list[Path]:
    return sorted(p for p in (tmp_path / "table").rglob("*") if p.is_file())


def _field_ids(schema: Any) -> list[tuple[str, int]]:
    """(name, field_id) of every node of a Parquet schema below the root."""
    text = str(schema)
    return [(m.group(2), int(m.group(1))) for m in re.finditer(r"field_id=(-?\d+) (\w+)", text)]


# -- basics ------------------------------------------------------------------------------------


def test_every_type_round_trips_with_field_ids(tmp_path: Path) -> None:
    table = _table(_rows())
    files = _write(tmp_path, table)
    assert len(files) == 1
    (f,) = files
    assert f.content == FileContent.DATA and f.file_format == FileFormat.PARQUET
    assert f.record_count == 40 and f.partition == () and f.spec_id == 0
    assert f.file_size_in_bytes == Path(f.file_path).stat().st_size
    assert f.sort_order_id == 0
    pf = pq.ParquetFile(f.file_path)
    ids = dict((name, fid) for name, fid in _field_ids(pf.schema) if name not in ("schema",))
    expected = {
        "id": 1, "b": 2, "i": 3, "f": 4, "d": 5, "dec": 6, "dt": 7, "t": 8, "ts": 9, "tz": 10,
        "ns": 11, "s": 12, "u": 13, "fx": 14, "bin": 15, "st": 16, "x": 20, "y": 21, "l": 17,
        "m": 18, "key": 23, "value": 24, "ls": 19, "z": 26,
    }  # fmt: skip
    for name, fid in expected.items():
        assert ids[name] == fid, name
    element_ids = [fid for name, fid in _field_ids(pf.schema) if name == "element"]
    assert sorted(element_ids) == [22, 25]
    text = str(pf.schema)
    assert "int32 field_id=6 dec (Decimal(precision=9, scale=2))" in text
    assert "fixed_len_byte_array(16) field_id=13 u (UUID)" in text
    assert "field_id=9 ts (Timestamp(isAdjustedToUTC=false, timeUnit=microseconds" in text
    assert "field_id=10 tz (Timestamp(isAdjustedToUTC=true, timeUnit=microseconds" in text
    assert "field_id=11 ns (Timestamp(isAdjustedToUTC=false, timeUnit=nanoseconds" in text
    assert "fixed_len_byte_array(9) field_id=26 z (Decimal(precision=20, scale=3))" in text
    assert pf.metadata.row_group(0).column(0).compression == "ZSTD"
    assert pf.metadata.metadata is None or b"ARROW:schema" not in pf.metadata.metadata
    back = pq.read_table(f.file_path)
    assert _sorted_rows(back.cast(table.schema)) == _sorted_rows(table)
    assert f.split_offsets == (4,)


def test_metrics_equal_independent_computation(tmp_path: Path) -> None:
    table = _table(_rows())
    (f,) = _write(tmp_path, table)
    back = pq.read_table(f.file_path).cast(table.schema)
    expected = compute_metrics(SCHEMA, MetricsConfig(), back)
    assert f.value_counts == expected.value_counts
    assert f.null_value_counts == expected.null_value_counts
    assert f.nan_value_counts == expected.nan_value_counts
    assert f.lower_bounds == expected.lower_bounds
    assert f.upper_bounds == expected.upper_bounds
    # a few by hand
    ids = [r["id"] for r in _rows()]
    assert f.value_counts is not None and f.value_counts[1] == 40
    assert f.lower_bounds is not None and f.upper_bounds is not None
    assert f.lower_bounds[1] == min(ids).to_bytes(8, "little", signed=True)
    assert f.upper_bounds[1] == max(ids).to_bytes(8, "little", signed=True)
    assert f.null_value_counts is not None and f.null_value_counts[12] == 6
    assert f.nan_value_counts == {4: 3, 5: 0}
    assert f.lower_bounds[12] == "name-0-é".encode()
    assert 22 not in f.value_counts and 26 not in f.lower_bounds  # in lists: no metrics
    assert f.column_sizes is not None and {22, 23, 24, 26} <= set(f.column_sizes)


def test_file_names_and_locations(tmp_path: Path) -> None:
    files = _write(tmp_path, _table(_rows(3)), write_uuid="abc", task_id=7)
    (f,) = files
    assert f.file_path == f"{tmp_path}/table/data/00007-0-abc-00001.parquet"
    assert data_file_name(3, 1, "u", 12) == "00003-1-u-00012.parquet"
    assert data_location("s3://b/t/", {}) == "s3://b/t/data"
    assert data_location("s3://b/t", {"write.data.path": "s3://x/y/"}) == "s3://x/y"
    other = tmp_path / "elsewhere"
    files = _write(tmp_path, _table(_rows(3)), properties={"write.data.path": str(other)})
    assert files[0].file_path.startswith(f"{other}/00000-0-")


@pytest.mark.parametrize("codec", ["snappy", "gzip", "lz4", "none", "uncompressed", "zstd"])
def test_compression_codecs(tmp_path: Path, codec: str) -> None:
    props = {"write.parquet.compression-codec": codec, "write.parquet.compression-level": "1"}
    if codec in ("snappy", "lz4", "none", "uncompressed"):
        del props["write.parquet.compression-level"]
    (f,) = _write(tmp_path, _table(_rows(5)), properties=props)
    compression = pq.ParquetFile(f.file_path).metadata.row_group(0).column(0).compression
    expected = {"none": "UNCOMPRESSED", "uncompressed": "UNCOMPRESSED", "lz4": "LZ4"}
    assert compression.startswith(expected.get(codec, codec.upper()))


def test_unsupported_codec(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="lzo"):
        _write(tmp_path, _table(_rows(2)), properties={"write.parquet.compression-codec": "lzo"})


def test_empty_input_writes_nothing(tmp_path: Path) -> None:
    assert _write(tmp_path, _table([])) == []
    assert _write(tmp_path, iter([])) == []
    assert _files_on_disk(tmp_path) == []


# -- partitions --------------------------------------------------------------------------------


PARTITION_CASES = [
    (["b"], "b", bool),
    (["i"], "i", int),
    (["dec"], "dec", Decimal),
    (["dt"], "dt", int),
    (["t"], "t", int),
    (["tz"], "tz", int),
    (["s"], "s", str),
    (["u"], "u", uuid.UUID),
    (["fx"], "fx", bytes),
    (["bin"], "bin", bytes),
    (["f"], "f", float),
    (["bucket(4, id)"], "id_bucket", int),
    (["bucket(3, s)"], "s_bucket", int),
    (["bucket(5, u)"], "u_bucket", int),
    (["bucket(2, ns)"], "ns_bucket", int),
    (["truncate(10, i)"], "i_trunc", int),
    (["truncate(3, s)"], "s_trunc", str),
    (["truncate(100, dec)"], "dec_trunc", Decimal),
    (["year(ts)"], "ts_year", int),
    (["month(tz)"], "tz_month", int),
    (["day(tz)"], "tz_day", int),
    (["day(dt)"], "dt_day", int),
    (["hour(ts)"], "ts_hour", int),
    (["hour(ns)"], "ns_hour", int),
    (["st.x"], "st.x", int),
    (["void(i)"], "i_null", type(None)),
]


@pytest.mark.parametrize(("terms", "name", "kind"), PARTITION_CASES)
def test_partitioned_by_each_transform(
    tmp_path: Path, terms: list[str], name: str, kind: type
) -> None:
    spec = build_partition_spec(SCHEMA, terms, spec_id=3)
    table = _table(_rows())
    files = _write(tmp_path, table, spec=spec)
    assert sum(f.record_count for f in files) == 40
    assert _sorted_rows(_read(files).cast(table.schema)) == _sorted_rows(table)
    (pf,) = spec.fields
    source = SCHEMA.find_field(pf.source_id)
    for f in files:
        assert f.spec_id == 3
        (value,) = f.partition
        assert value is None or isinstance(value, kind), (value, kind)
        folder = f.file_path.split("/data/")[1].rsplit("/", 1)[0]
        if pf.transform.is_void:
            assert "/" not in f.file_path.split("/data/")[1]
        else:
            assert folder == spec.partition_to_path(f.partition, SCHEMA)
        # every row of the file has this partition value
        rows = pq.read_table(f.file_path).cast(table.schema).to_pylist()
        for row in rows:
            raw = row
            for part in SCHEMA.find_column_name(source.field_id).split("."):  # type: ignore[union-attr]
                raw = None if raw is None else raw[part]
            got = pf.transform.apply(source.field_type, _internal(raw, source))
            assert got == value or (got != got and value != value)
    if not pf.transform.is_void:
        assert len({f.partition for f in files}) == len(files)


def _internal(value: Any, source: NestedField) -> Any:
    """A value read back by pyarrow in icepark's internal representation."""
    if value is None:
        return None
    t = source.field_type
    if isinstance(t, DateType):
        return (value - date(1970, 1, 1)).days
    if isinstance(t, TimeType):
        seconds = (value.hour * 60 + value.minute) * 60 + value.second
        return seconds * 1_000_000 + value.microsecond
    if isinstance(t, TimestampNanoType):
        return pa.scalar(value, pa.timestamp("ns")).cast(pa.int64()).as_py()
    if isinstance(t, TimestampType | TimestamptzType):
        tz = UTC if isinstance(t, TimestamptzType) else None
        delta = value.replace(tzinfo=tz) - datetime(1970, 1, 1, tzinfo=tz)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return value


def test_partition_folder_names(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "ts", TimestamptzType()),
        NestedField(3, "name", StringType()),
    )
    spec = build_partition_spec(schema, ["day(ts)", "bucket(16, id)", "name"])
    ts = pa.array([datetime(2024, 1, 5, 10, tzinfo=UTC), None], pa.timestamp("us", "UTC"))
    table = pa.table({"id": [1, 2], "ts": ts, "name": ["a b/c", None]})
    files = _write(tmp_path, table, schema=schema, spec=spec)
    folders = sorted(f.file_path.split("/data/")[1].rsplit("/", 1)[0] for f in files)
    bucket = BucketTransform(16)
    b1, b2 = bucket.apply(LongType(), 1), bucket.apply(LongType(), 2)
    assert folders == [
        f"ts_day=2024-01-05/id_bucket={b1}/name=a+b%2Fc",
        f"ts_day=null/id_bucket={b2}/name=null",
    ]
    by_day = {f.partition[0]: f.partition for f in files}
    assert by_day[19727] == (19727, b1, "a b/c")
    assert by_day[None] == (None, b2, None)


# -- sorting -----------------------------------------------------------------------------------


def _sort_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "k", StringType()),
        NestedField(3, "v", DoubleType()),
        NestedField(4, "p", IntegerType()),
    )


def _sort_table() -> pa.Table:
    return pa.table(
        {
            "id": list(range(12)),
            "k": ["b", None, "a", "c", None, "a", "b", "c", "a", None, "d", "b"],
            "v": [1.0, 2.0, float("nan"), None, -1.0, 3.0, 0.5, None, 7.0, 1.0, 2.5, float("nan")],
            "p": pa.array([1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2], pa.int32()),
        }
    )


def _key(value: Any, asc: bool, nulls_first: bool) -> tuple[Any, ...]:
    if value is None:
        return (0 if nulls_first else 2,)
    if isinstance(value, float) and value != value:
        return (1, 1 if asc else 0, 0)
    return (1, 0 if asc else 1, value if asc else _Neg(value))


class _Neg:
    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Neg) -> bool:
        return bool(self.value > other.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Neg) and self.value == other.value


@pytest.mark.parametrize(
    "terms",
    [
        ["k"],
        ["k desc"],
        ["k desc nulls last", "v asc nulls last"],
        ["k asc nulls last", "v desc nulls first"],
        ["v desc"],
        ["v"],
    ],
)
def test_sort_order_honoured(tmp_path: Path, terms: list[str]) -> None:
    schema = _sort_schema()
    order = build_sort_order(schema, terms, order_id=5)
    spec = build_partition_spec(schema, ["p"])
    files = _write(tmp_path, _sort_table(), schema=schema, order=order, spec=spec)
    assert len(files) == 2
    for f in files:
        assert f.sort_order_id == 5
        rows = pq.read_table(f.file_path).to_pylist()
        keys = []
        for row in rows:
            key = []
            for sf in order.fields:
                name = schema.find_column_name(sf.source_id)
                asc = sf.direction.value == "asc"
                key.append(_key(row[name], asc, sf.null_order.value == "nulls-first"))
            keys.append(tuple(key))
        assert keys == sorted(keys), [r["id"] for r in rows]


def test_sort_by_transform(tmp_path: Path) -> None:
    schema = _sort_schema()
    order = build_sort_order(schema, ["truncate(1, k) desc nulls last", "id desc"])
    files = _write(tmp_path, _sort_table(), schema=schema, order=order)
    ids = pq.read_table(files[0].file_path).column("id").to_pylist()
    assert ids == [10, 7, 3, 11, 6, 0, 8, 5, 2, 9, 4, 1]


def test_streamed_sort_is_per_batch(tmp_path: Path) -> None:
    schema = _sort_schema()
    order = build_sort_order(schema, ["id desc"])
    batches = _sort_table().to_batches(max_chunksize=4)
    files = _write(tmp_path, iter(batches), schema=schema, order=order)
    (f,) = files
    assert pq.read_table(f.file_path).column("id").to_pylist() == [
        3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8
    ]  # fmt: skip
    assert f.sort_order_id == 0  # the file as a whole is not sorted
    one = _write(tmp_path / "one", iter(batches[:1]), schema=schema, order=order)
    assert one[0].sort_order_id == order.order_id


# -- rolling and streaming ---------------------------------------------------------------------


def _big_table(n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "k": [f"value-{i * 7919 % 10007:05d}" for i in range(n)],
            "v": pa.array([i * 0.37 for i in range(n)]),
            "p": pa.array([i % 3 for i in range(n)], pa.int32()),
        }
    )


def test_rolling_by_target_file_size(tmp_path: Path) -> None:
    schema = _sort_schema()
    table = _big_table(20_000)
    props = {
        "write.target-file-size-bytes": "40000",
        "write.parquet.row-group-size-bytes": "20000",
    }
    files = _write(tmp_path, table, schema=schema, properties=props)
    assert len(files) > 3
    assert sum(f.record_count for f in files) == 20_000
    assert _sorted_rows(_read(files)) == _sorted_rows(table)
    numbers = sorted(int(f.file_path.rsplit("-", 1)[1].split(".")[0]) for f in files)
    assert numbers == list(range(1, len(files) + 1))
    for f in files[:-1]:
        assert f.file_size_in_bytes < 40_000 * 2
        md = pq.ParquetFile(f.file_path).metadata
        assert f.split_offsets is not None and len(f.split_offsets) == md.num_row_groups
    assert any(len(f.split_offsets or ()) > 1 for f in files)


def test_tiny_target_gives_a_file_per_row_group(tmp_path: Path) -> None:
    schema = _sort_schema()
    files = _write(
        tmp_path,
        _sort_table(),
        schema=schema,
        properties={"write.target-file-size-bytes": "1"},
    )
    assert len(files) == 12 and all(f.record_count == 1 for f in files)


def test_streaming_many_batches_partitioned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "MAX_OPEN_FILES", 2)
    schema = _sort_schema()
    table = _big_table(5_000)
    pieces = table.to_batches(max_chunksize=97)
    seen = []

    def gen() -> Iterator[pa.RecordBatch]:
        for batch in pieces:
            seen.append(batch.num_rows)
            yield batch

    reader = pa.RecordBatchReader.from_batches(table.schema, gen())
    spec = build_partition_spec(schema, ["p"])
    files = _write(tmp_path, reader, schema=schema, spec=spec)
    assert sum(seen) == 5_000
    assert sum(f.record_count for f in files) == 5_000
    # three partitions, two open at a time: the least recently used one is closed
    assert len(files) > 3
    assert {f.partition for f in files} == {(0,), (1,), (2,)}
    for f in files:
        ps = pq.read_table(f.file_path).column("p").to_pylist()
        assert set(ps) == {f.partition[0]}
    assert _sorted_rows(_read(files)) == _sorted_rows(table)


def test_buffer_budget_bounds_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "BUFFER_BUDGET_BYTES", 10_000)
    schema = _sort_schema()
    table = _big_table(6_000)
    files = _write(tmp_path, iter(table.to_batches(max_chunksize=500)), schema=schema)
    (f,) = files
    assert pq.ParquetFile(f.file_path).metadata.num_row_groups > 5
    assert _sorted_rows(_read(files)) == _sorted_rows(table)


# -- input matching ----------------------------------------------------------------------------


def test_input_matched_by_name_and_cast(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "d", DoubleType()),
        NestedField(3, "ts", TimestampType()),
        NestedField(4, "s", StringType()),
        NestedField(5, "missing", IntegerType()),
        NestedField(6, "defaulted", StringType(), write_default="dflt"),
        NestedField(7, "st", StructType(NestedField(8, "a", LongType()))),
        NestedField(9, "u", UnknownType()),
        NestedField(10, "dict", StringType()),
        NestedField(11, "lst", ListType(12, LongType(), element_required=False)),
    )
    data = pa.table(
        {
            "lst": pa.array([[1], None], pa.large_list(pa.int16())),
            "dict": pa.array(["x", "y"]).dictionary_encode(),
            "st": pa.array([{"a": 1}, None], pa.struct([("a", pa.int32())])),
            "s": pa.array(["p", None], pa.large_string()),
            "ts": pa.array([1_000, None], pa.timestamp("ms")),
            "d": pa.array([1.5, None], pa.float32()),
            "id": pa.array([1, 2], pa.int32()),
            "u": pa.nulls(2),
        }
    )
    (f,) = _write(tmp_path, data, schema=schema)
    back = pq.read_table(f.file_path)
    assert back.schema.names == ["id", "d", "ts", "s", "missing", "defaulted", "st", "dict", "lst"]
    assert back.column("ts").type == pa.timestamp("us")
    assert back.column("ts").to_pylist()[0] == datetime(1970, 1, 1, 0, 0, 1)
    assert back.column("defaulted").to_pylist() == ["dflt", "dflt"]
    assert back.column("missing").to_pylist() == [None, None]
    assert back.column("st").to_pylist() == [{"a": 1}, None]
    assert back.column("lst").to_pylist() == [[1], None]
    assert back.column("dict").to_pylist() == ["x", "y"]
    assert f.value_counts is not None and 9 not in f.value_counts
    assert "u" not in str(pq.ParquetFile(f.file_path).schema).split()


def _assert_fails_clean(tmp_path: Path, data: Any, match: str, **kw: Any) -> None:
    with pytest.raises(ValidationError, match=match):
        _write(tmp_path, data, **kw)
    assert _files_on_disk(tmp_path) == []


def test_missing_required_column(tmp_path: Path) -> None:
    table = _table(_rows(3)).drop_columns(["id"])
    _assert_fails_clean(tmp_path, table, "required column 'id'")


def test_null_in_required_column(tmp_path: Path) -> None:
    table = _table(_rows(3))
    ids = pa.array([1, None, 3], pa.int64())
    table = table.set_column(0, pa.field("id", pa.int64()), ids)
    _assert_fails_clean(tmp_path, table, "'id' has 1 null")


def test_required_field_in_optional_struct(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "st", StructType(NestedField(2, "a", LongType(), required=True))),
    )
    struct_type = pa.struct([("a", pa.int64())])
    ok = pa.table({"st": pa.array([{"a": 1}, None], struct_type)})
    (f,) = _write(tmp_path, ok, schema=schema)
    assert pq.read_table(f.file_path).column("st").to_pylist() == [{"a": 1}, None]
    bad = pa.table({"st": pa.array([{"a": None}, None], struct_type)})
    _assert_fails_clean(tmp_path / "bad", bad, r"'st\.a' has 1 null", schema=schema)


def test_required_fields_of_every_kind_under_null_structs(tmp_path: Path) -> None:
    inner = StructType(NestedField(7, "q", IntegerType(), required=True))
    schema = Schema(
        NestedField(
            1,
            "st",
            StructType(
                NestedField(2, "u", UUIDType(), required=True),
                NestedField(3, "dec", DecimalType(5, 2), required=True),
                NestedField(4, "l", ListType(8, StringType()), required=True),
                NestedField(5, "in", inner, required=True),
                NestedField(6, "f", DoubleType(), required=True),
                NestedField(9, "m", MapType(10, StringType(), 11, LongType()), required=True),
            ),
        ),
    )
    value = {
        "u": uuid.UUID(int=3).bytes,
        "dec": Decimal("1.50"),
        "l": ["a"],
        "in": {"q": 4},
        "f": 2.5,
        "m": [("k", 1)],
    }
    loose = pa.struct(
        [
            ("u", pa.binary(16)),
            ("dec", pa.decimal128(5, 2)),
            ("l", pa.list_(pa.string())),
            ("in", pa.struct([("q", pa.int32())])),
            ("f", pa.float64()),
            ("m", pa.map_(pa.string(), pa.int64())),
        ]
    )
    data = pa.table({"st": pa.array([value, None, value], loose)})
    (f,) = _write(tmp_path, data, schema=schema)
    back = pq.read_table(f.file_path).column("st").to_pylist()
    assert back[1] is None and back[0] == back[2]
    assert back[0]["l"] == ["a"] and back[0]["in"] == {"q": 4}
    assert f.value_counts is not None and f.null_value_counts is not None
    assert f.value_counts[3] == 3 and f.null_value_counts[3] == 1
    assert f.value_counts[6] == 2 and f.null_value_counts[6] == 0  # floats: as Java counts
    assert f.lower_bounds is not None and f.lower_bounds[7] == (4).to_bytes(4, "little")
    missing = pa.table({"st": pa.array([None, None], pa.struct([("f", pa.float64())]))})
    (g,) = _write(tmp_path / "missing", missing, schema=schema)
    assert pq.read_table(g.file_path).column("st").to_pylist() == [None, None]


def test_incompatible_type(tmp_path: Path) -> None:
    table = _table(_rows(3))
    table = table.set_column(2, "i", pa.array(["1", "2", "3"]))
    _assert_fails_clean(tmp_path, table, "'i': Arrow type string is not compatible with .*int")
    narrowing = _table(_rows(3)).set_column(2, "i", pa.array([1, 2, 3], pa.int64()))
    _assert_fails_clean(tmp_path, narrowing, "'i'")
    naive = _table(_rows(3)).set_column(9, "tz", pa.array([1, 2, 3], pa.timestamp("us")))
    _assert_fails_clean(tmp_path, naive, "'tz'")


def test_lossy_cast_is_refused(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "ts", TimestampType()))
    data = pa.table({"ts": pa.array([1_500], pa.timestamp("ns"))})
    _assert_fails_clean(tmp_path, data, "would lose data", schema=schema)


def test_extra_column(tmp_path: Path) -> None:
    table = _table(_rows(3)).append_column("surprise", pa.array([1, 2, 3]))
    _assert_fails_clean(tmp_path, table, r"\['surprise'\]")
    struct_type = pa.struct([("x", pa.int32()), ("y", pa.string()), ("w", pa.int8())])
    nested = _table(_rows(3)).set_column(
        15, "st", pa.array([{"x": 1, "y": "a", "w": 1}] * 3, struct_type)
    )
    _assert_fails_clean(tmp_path, nested, r"\['st\.w'\]")


def test_failure_in_a_later_batch_removes_written_files(tmp_path: Path) -> None:
    schema = _sort_schema()
    good = _big_table(3_000)
    bad = pa.table({"id": [1], "k": ["x"], "v": [1.0], "p": pa.array([1], pa.int32()), "z": [0]})
    props = {"write.target-file-size-bytes": "5000"}

    def gen() -> Iterator[pa.RecordBatch]:
        yield from good.to_batches(max_chunksize=500)
        assert len(_files_on_disk(tmp_path)) > 1  # files were written and published
        yield from bad.to_batches()

    _assert_fails_clean(tmp_path, gen(), "'z'", schema=schema, properties=props)


def test_error_in_data_source_removes_files(tmp_path: Path) -> None:
    schema = _sort_schema()
    props = {"write.target-file-size-bytes": "1"}

    def gen() -> Iterator[pa.RecordBatch]:
        yield from _sort_table().to_batches()
        raise RuntimeError("source broke")

    with pytest.raises(RuntimeError, match="source broke"):
        _write(tmp_path, gen(), schema=schema, properties=props)
    assert _files_on_disk(tmp_path) == []


def test_record_batch_and_list_inputs(tmp_path: Path) -> None:
    schema = _sort_schema()
    table = _sort_table()
    files = _write(tmp_path, table.to_batches()[0], schema=schema)
    assert sum(f.record_count for f in files) == 12
    files = _write(tmp_path / "list", [table, *table.to_batches()], schema=schema)
    assert sum(f.record_count for f in files) == 24
    with pytest.raises(ValidationError, match="record batches"):
        _write(tmp_path / "bad", [1, 2], schema=schema)


def test_partition_source_must_exist(tmp_path: Path) -> None:
    schema = _sort_schema()
    spec = build_partition_spec(schema, ["p"])
    narrower = Schema(*[f for f in schema.fields if f.name != "p"])
    with pytest.raises(ValidationError, match="partition field 'p'"):
        _write(tmp_path, pc.cast(pa.array([1]), pa.int64()), schema=narrower, spec=spec)


def test_sort_on_uuid_decimal_and_date(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "u", UUIDType()),
        NestedField(3, "dec", DecimalType(12, 3)),
        NestedField(4, "dt", DateType()),
    )
    rows = [
        {
            "id": k,
            "u": uuid.UUID(int=(k * 0x9E3779B97F4A7C15) % (1 << 128)),
            "dec": Decimal(k * 97 % 13 - 6).scaleb(-3),
            "dt": date(2024, 1, 1 + k * 5 % 17),
        }
        for k in range(30)
    ]
    table = _table(rows, schema)
    for terms, key in [
        (["u desc"], lambda r: r["u"].bytes),
        (["dec", "id desc"], lambda r: (r["dec"], -r["id"])),
        (["month(dt) desc", "id"], lambda r: (-(r["dt"].year * 12 + r["dt"].month), r["id"])),
    ]:
        order = build_sort_order(schema, terms)
        (f,) = _write(tmp_path / terms[0], table, schema=schema, order=order)
        ids = pq.read_table(f.file_path).column("id").to_pylist()
        expected = sorted(rows, key=key, reverse=terms == ["u desc"])
        assert ids == [r["id"] for r in expected], terms


def test_sort_columns_keep_bounds_when_metrics_are_off(tmp_path: Path) -> None:
    schema = _sort_schema()
    order = build_sort_order(schema, ["k"])
    props = {"write.metadata.metrics.default": "none"}
    (f,) = _write(tmp_path, _sort_table(), schema=schema, order=order, properties=props)
    assert f.lower_bounds == {2: b"a"} and f.upper_bounds == {2: b"d"}
    assert f.value_counts == {2: 12} and f.null_value_counts == {2: 3}
    assert f.column_sizes is not None and set(f.column_sizes) == {2}
