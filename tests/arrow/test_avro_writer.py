"""Writing Avro data files: the column-wise encoder checked by fastavro (an independent
decoder) on every type, nulls at every level and random data; the one writer's Avro files
(Iceberg's schema with ids, codec and level, rolling at the target size, no column metrics)."""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import io
import math
import uuid
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.arrow.avro_writer import AvroOpenFile, avro_codec_and_level, encode_rows
from icepark.arrow.conform import conform_batch
from icepark.arrow.schema import schema_to_arrow
from icepark.arrow.writer import write_data_files
from icepark.avro.schema import from_avro_value, schema_to_avro, strip_logical_types
from icepark.io.pyarrow_fileio import PyArrowFileIO
from icepark.spec.partitioning import build_partition_spec
from icepark.spec.schema import Schema
from icepark.spec.sorting import UNSORTED_ORDER
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
    UUIDType,
)

IO = PyArrowFileIO()

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "b", BooleanType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dec", DecimalType(9, 2)),
    NestedField(7, "big", DecimalType(38, 10)),
    NestedField(8, "day", DateType()),
    NestedField(9, "t", TimeType()),
    NestedField(10, "ts", TimestampType()),
    NestedField(11, "tstz", TimestamptzType()),
    NestedField(12, "ns", TimestampNanoType()),
    NestedField(13, "s", StringType()),
    NestedField(14, "u", UUIDType()),
    NestedField(15, "fx", FixedType(3)),
    NestedField(16, "bin", BinaryType()),
    NestedField(
        17,
        "st",
        StructType(
            NestedField(18, "x", LongType(), required=True),
            NestedField(19, "inner", StructType(NestedField(20, "y", StringType()))),
        ),
    ),
    NestedField(21, "l", ListType(22, StructType(NestedField(23, "z", IntegerType())), False)),
    NestedField(24, "m", MapType(25, StringType(), 26, ListType(27, LongType(), False), False)),
    NestedField(28, "im", MapType(29, IntegerType(), 30, StringType(), True)),
)


def _row(k: int) -> dict[str, Any]:
    null = k % 5 == 4
    return {
        "id": k * (-1) ** k * 10**k % (2**62),
        "i": None if null else k * 1000 - 2**31 + 7,
        "b": None if null else k % 2 == 0,
        "f": None if null else (float("nan") if k == 3 else k / 3),
        "d": None if null else -k * 1e300,
        "dec": None if null else decimal.Decimal(k * 1234 - 9999) / 100,
        "big": None if null else decimal.Decimal(f"-{k}1234567890123456789012345.6789012345"),
        "day": None if null else dt.date(1969, 12, 31) + dt.timedelta(days=k * 400),
        "t": None if null else dt.time(k % 24, 59, 59, 999999),
        "ts": None if null else dt.datetime(1900 + k * 20, 1, 1, 0, 0, 0, 1),
        "tstz": None if null else dt.datetime(2024, 1, 1, k, tzinfo=dt.UTC),
        "ns": None if null else pa.scalar(k * 10**17 + 123, pa.timestamp("ns")).as_py(),
        "s": None if null else "é" * k + "x" * (k * 50),
        "u": None if null else uuid.UUID(int=k * 7919).bytes,
        "fx": None if null else bytes([k, 0, 255]),
        "bin": None if null else bytes(range(k * 40 % 256)),
        "st": None if k % 7 == 6 else {"x": k, "inner": None if null else {"y": f"y{k}"}},
        "l": None if null else [None if j == 1 else {"z": j} for j in range(k % 4)],
        "m": None if null else [(f"k{j}", [j, None] if j else None) for j in range(k % 3)],
        "im": None if null else [(j, "v" * j) for j in range(k % 3)],
    }


ROWS = [_row(k) for k in range(12)]


def _batch(rows: list[dict[str, Any]], schema: Schema = SCHEMA) -> pa.RecordBatch:
    table = pa.Table.from_pylist(rows, schema=schema_to_arrow(schema, include_field_ids=False))
    return conform_batch(table.combine_chunks().to_batches()[0], schema)


def _fastavro_rows(data: bytes, schema: Schema) -> list[dict[str, Any]]:
    """Rows as fastavro decodes them (logical types raw), in icepark's internal values."""
    records = list(fastavro.reader(io.BytesIO(data), reader_schema=None))
    struct = schema.as_struct()
    out = []
    for r in records:
        values = from_avro_value(struct, r)
        out.append({f.name: v for f, v in zip(struct.fields, values)})
    return out


def _internal(rows: list[dict[str, Any]], schema: Schema) -> list[dict[str, Any]]:
    """The rows as icepark's internal values (via Arrow), to compare with fastavro's."""
    table = pa.Table.from_batches([_batch(rows, schema)])
    avro = strip_logical_types(schema_to_avro(schema))
    buf = io.BytesIO()
    # fastavro's own encoding of the same values, decoded back: the reference
    fastavro.writer(buf, fastavro.parse_schema(avro), _to_avro_records(table, schema))
    return _fastavro_rows(buf.getvalue(), schema)


def _to_avro_records(table: pa.Table, schema: Schema) -> list[dict[str, Any]]:
    from icepark.avro.schema import to_avro_value

    struct = schema.as_struct()
    out = []
    for row in table.to_pylist():
        values = [_to_internal(row[f.name], f.field_type) for f in struct.fields]
        out.append(to_avro_value(struct, values))
    return out


def _to_internal(v: Any, t: Any) -> Any:
    """Arrow's Python values as icepark's internal representation."""
    if v is None:
        return None
    if isinstance(t, StructType):
        return tuple(_to_internal(v[f.name], f.field_type) for f in t.fields)
    if isinstance(t, ListType):
        return [_to_internal(x, t.element_type) for x in v]
    if isinstance(t, MapType):
        return {_to_internal(k, t.key_type): _to_internal(x, t.value_type) for k, x in v}
    if isinstance(t, DateType):
        return (v - dt.date(1970, 1, 1)).days
    if isinstance(t, TimeType):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 10**6 + v.microsecond
    if isinstance(t, TimestampNanoType):
        return pa.scalar(v, pa.timestamp("ns")).cast(pa.int64()).as_py()
    if isinstance(t, TimestampType | TimestamptzType):
        naive = (
            v.replace(tzinfo=None)
            if v.tzinfo is None
            else v.astimezone(dt.UTC).replace(tzinfo=None)
        )
        return (naive - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    if isinstance(t, UUIDType):
        return uuid.UUID(bytes=v) if isinstance(v, bytes) else v
    return v


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _encoded_file(batch: pa.RecordBatch, schema: Schema) -> bytes:
    rows = encode_rows(batch, schema)
    buf = io.BytesIO()
    avro = strip_logical_types(schema_to_avro(schema))
    # a container around icepark's row encodings, written by fastavro's block writer
    fastavro.writer(buf, fastavro.parse_schema(avro), [])
    header = buf.getvalue()
    sync = header[-16:]
    from icepark.avro.file import write_long

    data = b"".join(rows.to_pylist())
    return header + write_long(len(batch)) + write_long(len(data)) + data + sync


def test_every_type_encodes_as_fastavro_decodes() -> None:
    batch = _batch(ROWS)
    got = _fastavro_rows(_encoded_file(batch, SCHEMA), SCHEMA)
    expected = _internal(ROWS, SCHEMA)
    assert len(got) == len(expected) == len(ROWS)
    for g, e in zip(got, expected):
        assert _same(g, e), (g, e)


def test_sliced_batches_encode_their_own_rows() -> None:
    batch = _batch(ROWS)
    part = batch.slice(3, 5)
    got = _fastavro_rows(_encoded_file(part, SCHEMA), SCHEMA)
    expected = _internal(ROWS[3:8], SCHEMA)
    assert all(_same(g, e) for g, e in zip(got, expected)) and len(got) == 5


_LEAF = st.sampled_from(
    [LongType(), IntegerType(), StringType(), DoubleType(), BooleanType(), DecimalType(12, 3)]
)


def _values(t: Any) -> Any:
    if isinstance(t, LongType):
        return st.integers(-(2**63), 2**63 - 1)
    if isinstance(t, IntegerType):
        return st.integers(-(2**31), 2**31 - 1)
    if isinstance(t, StringType):
        return st.text(max_size=70)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False)
    if isinstance(t, BooleanType):
        return st.booleans()
    return st.decimals(min_value=-(10**8), max_value=10**8, places=3, allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_rows_encode_as_fastavro_decodes(data: Any) -> None:
    t1, t2 = data.draw(_LEAF), data.draw(_LEAF)
    schema = Schema(
        NestedField(1, "a", t1, required=data.draw(st.booleans())),
        NestedField(2, "l", ListType(3, t2, data.draw(st.booleans()))),
        NestedField(4, "s", StructType(NestedField(5, "x", t1), NestedField(6, "y", t2))),
        NestedField(7, "m", MapType(8, StringType(), 9, t1, False)),
    )
    opt = lambda s, required: s if required else st.none() | s  # noqa: E731
    rows = data.draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "a": opt(_values(t1), schema.fields[0].required),
                    "l": st.none()
                    | st.lists(
                        opt(_values(t2), schema.fields[1].field_type.element_required), max_size=4
                    ),
                    "s": st.none()
                    | st.fixed_dictionaries(
                        {"x": st.none() | _values(t1), "y": st.none() | _values(t2)}
                    ),
                    "m": st.none()
                    | st.lists(
                        st.tuples(st.text(max_size=3), st.none() | _values(t1)),
                        max_size=3,
                        unique_by=lambda kv: kv[0],
                    ),
                }
            ),
            min_size=1,
            max_size=20,
        )
    )
    batch = _batch(rows, schema)
    got = _fastavro_rows(_encoded_file(batch, schema), schema)
    expected = _internal(rows, schema)
    assert len(got) == len(rows) and all(_same(g, e) for g, e in zip(got, expected))


# -- the one writer --------------------------------------------------------------------------


def test_write_data_files_in_avro_roll_and_carry_no_metrics(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType())
    )
    spec = build_partition_spec(schema, ["bucket(2, id)"])
    notes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(4000)]
    data = pa.table({"id": list(range(4000)), "s": notes})
    files = write_data_files(
        IO,
        table_location=str(tmp_path / "t"),
        schema=schema,
        spec=spec,
        sort_order=UNSORTED_ORDER,
        properties={"write.format.default": "avro", "write.target-file-size-bytes": "20000"},
        data=data,
    )
    assert len(files) > 4 and all(f.file_path.endswith(".avro") for f in files)
    assert {f.file_format for f in files} == {"AVRO"}
    assert sum(f.record_count for f in files) == 4000
    for f in files:
        assert f.value_counts is None and f.lower_bounds is None and f.column_sizes is None
        assert f.file_size_in_bytes == Path(f.file_path).stat().st_size
        # a file is closed once it reaches the target (a block may overshoot it)
        assert f.file_size_in_bytes < 20000 + 70_000
        with open(f.file_path, "rb") as fh:
            reader = fastavro.reader(fh)
            assert reader.metadata["avro.codec"] == "deflate"
            assert reader.writer_schema["fields"][0]["field-id"] == 1
            records = list(reader)
        assert len(records) == f.record_count
    ids = sorted(
        r for f in files for r in [x["id"] for x in fastavro.reader(open(f.file_path, "rb"))]
    )
    assert ids == list(range(4000))


def test_codec_and_level_follow_java() -> None:
    assert avro_codec_and_level({}) == ("deflate", 9)
    assert avro_codec_and_level({"write.avro.compression-codec": "zstd"}) == ("zstandard", 1)
    assert avro_codec_and_level(
        {"write.avro.compression-codec": "gzip", "write.avro.compression-level": "3"}
    ) == ("deflate", 3)
    assert avro_codec_and_level({"write.avro.compression-codec": "uncompressed"})[0] == "null"
    from icepark.errors import ValidationError

    with pytest.raises(ValidationError, match="brotli"):
        avro_codec_and_level({"write.avro.compression-codec": "brotli"})


def test_an_aborted_file_leaves_nothing(tmp_path: Path) -> None:
    out = AvroOpenFile(IO, str(tmp_path / "x.avro"), SCHEMA, {})
    out.write(pa.Table.from_batches([_batch(ROWS)]))
    out.abort()
    assert not (tmp_path / "x.avro").exists()
