"""Reading Avro data files: the Parquet reader's whole suite of projection, evolution, name
mapping, constants, metadata columns and filters run again on Avro files, plus what is
Avro's own (codecs, logical types written by other tools, blocks and splits, bad files,
unprojected fields stepped over). Files are written by icepark's Avro writer (checked
against fastavro in test_avro_writer.py) or by fastavro directly."""

from __future__ import annotations

import datetime
import io
import itertools
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
import test_arrow_reader as parquet_suite
from test_arrow_reader import (
    BASE,
    BASE_ROWS,
    test_added_columns_read_initial_defaults,
    test_batches_are_bounded_and_streamed,
    test_columns_in_the_file_win_over_partition_values,
    test_empty_projection_keeps_row_counts,
    test_file_io_without_a_pyarrow_filesystem,
    test_file_without_ids_and_without_mapping_fails,
    test_file_without_ids_reads_through_name_mapping,
    test_filter_matches_python_evaluation,
    test_filter_on_columns_the_file_lacks,
    test_filter_on_nested_field_added_later,
    test_identity_partition_values_fill_missing_columns,
    test_incompatible_type_fails,
    test_list_of_struct_and_map_evolution,
    test_metadata_columns,
    test_missing_required_field_without_default_fails,
    test_nested_struct_field_added_renamed_and_dropped,
    test_rename_reorder_drop_and_add,
    test_type_promotion,
    test_unmapped_columns_read_as_missing,
    test_uuid_filter_and_projection,
    test_whole_nested_columns_and_filters_on_nested_fields,
)

from icepark.arrow.avro_writer import AvroOpenFile
from icepark.arrow.conform import conform_batch
from icepark.arrow.schema import schema_to_arrow
from icepark.avro.decoder import compile_decoder
from icepark.avro.file import FASTAVRO_CODECS, AvroBlockWriter
from icepark.avro.file_schema import resolve_file_schema
from icepark.avro.schema import schema_to_avro
from icepark.errors import InvalidAvroFileError, InvalidSchemaError
from icepark.expressions import col
from icepark.io.pyarrow_fileio import PyArrowFileIO
from icepark.spec.manifests import DataFile, FileContent
from icepark.spec.metadata_columns import POS_FIELD
from icepark.spec.name_mapping import name_mapping_from_json
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DecimalType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

IO = PyArrowFileIO()

REUSED = (
    test_added_columns_read_initial_defaults,
    test_batches_are_bounded_and_streamed,
    test_columns_in_the_file_win_over_partition_values,
    test_empty_projection_keeps_row_counts,
    test_file_io_without_a_pyarrow_filesystem,
    test_file_without_ids_and_without_mapping_fails,
    test_file_without_ids_reads_through_name_mapping,
    test_filter_matches_python_evaluation,
    test_filter_on_columns_the_file_lacks,
    test_filter_on_nested_field_added_later,
    test_identity_partition_values_fill_missing_columns,
    test_incompatible_type_fails,
    test_list_of_struct_and_map_evolution,
    test_metadata_columns,
    test_missing_required_field_without_default_fails,
    test_nested_struct_field_added_renamed_and_dropped,
    test_rename_reorder_drop_and_add,
    test_type_promotion,
    test_unmapped_columns_read_as_missing,
    test_uuid_filter_and_projection,
    test_whole_nested_columns_and_filters_on_nested_fields,
)


def _strip_ids(avro: Any) -> Any:
    if isinstance(avro, list):
        return [_strip_ids(a) for a in avro]
    if not isinstance(avro, dict):
        return avro
    ids = ("field-id", "element-id", "key-id", "value-id")
    return {k: _strip_ids(v) for k, v in avro.items() if k not in ids}


def write_avro(
    path: Path,
    schema: Schema,
    rows: list[dict[str, Any]],
    *,
    row_group_size: int | None = None,
    with_ids: bool = True,
    partition: tuple[Any, ...] = (),
    spec_id: int = 0,
    codec: str = "gzip",
) -> DataFile:
    """An Avro data file of ``rows`` in blocks of ``row_group_size`` rows."""
    table = pa.Table.from_pylist(rows, schema=schema_to_arrow(schema, include_field_ids=False))
    avro = schema_to_avro(schema)
    props = {"write.avro.compression-codec": codec, "write.avro.compression-level": "6"}
    out = AvroOpenFile(
        IO,
        str(path),
        schema,
        props,
        avro_schema=avro if with_ids else _strip_ids(avro),
        block_bytes=1 << 40,
    )
    step = row_group_size or max(1, len(rows))
    for start in range(0, len(rows), step):
        out.write(
            pa.Table.from_batches(
                [conform_batch(table.slice(start, step).combine_chunks().to_batches()[0], schema)]
            )
        )
    size = out.close()
    return DataFile(
        content=FileContent.DATA,
        file_path=str(path),
        file_format="AVRO",
        partition=partition,
        record_count=len(rows),
        file_size_in_bytes=size,
        spec_id=spec_id,
    )


@pytest.fixture(autouse=True)
def _avro_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reused Parquet tests write Avro files here."""
    monkeypatch.setattr(parquet_suite, "_write", write_avro)


def _read(df: DataFile, projected: Schema, table: Schema | None = None, **kw: Any) -> list[Any]:
    return parquet_suite._read(df, projected, table, **kw)


# -- codecs, blocks and splits ---------------------------------------------------------------


@pytest.mark.parametrize("codec", ["uncompressed", "gzip", "snappy", "zstd"])
def test_codecs(tmp_path: Path, codec: str) -> None:
    df = write_avro(tmp_path / "f.avro", BASE, BASE_ROWS, codec=codec, row_group_size=2)
    assert _read(df, BASE) == BASE_ROWS
    avro_codec = {"uncompressed": "null", "gzip": "deflate", "zstd": "zstandard"}.get(codec, codec)
    if avro_codec in FASTAVRO_CODECS:  # the same file as fastavro reads it (with its libraries)
        with open(df.file_path, "rb") as f:
            assert [r["a"] for r in fastavro.reader(f)] == [r["a"] for r in BASE_ROWS]


def _block_offsets(path: str) -> list[int]:
    """The offsets of a file's blocks, found by walking it with fastavro's block reader."""
    with open(path, "rb") as f:
        reader = fastavro.block_reader(f)
        offsets = []
        for block in reader:
            offsets.append(block.offset)
    return offsets


def test_splits_take_the_blocks_starting_in_them_with_file_positions(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType()))
    rows = [{"id": i} for i in range(100)]
    df = write_avro(tmp_path / "f.avro", schema, rows, row_group_size=7)
    size = Path(df.file_path).stat().st_size
    with_pos = Schema(*schema.fields, POS_FIELD)
    cuts = [0, 200, 201, 450, size]
    seen: list[dict[str, Any]] = []
    for start, end in itertools.pairwise(cuts):
        seen += _read(df, with_pos, schema, start=start, length=end - start)
    assert seen == [{"id": i, "_pos": i} for i in range(100)]
    blocks = _block_offsets(df.file_path)
    assert len(blocks) == 15
    # a split starting exactly at a block takes it, positions stay file positions
    part = _read(df, with_pos, schema, start=blocks[3], length=blocks[5] - blocks[3])
    assert part == [{"id": i, "_pos": i} for i in range(21, 35)]


def test_positions_with_filters_across_blocks(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType()))
    df = write_avro(tmp_path / "f.avro", schema, [{"id": i} for i in range(50)], row_group_size=4)
    with_pos = Schema(*schema.fields, POS_FIELD)
    got = _read(df, with_pos, schema, row_filter=col("id") > 44)
    assert got == [{"id": i, "_pos": i} for i in range(45, 50)]


# -- Avro written by other tools -------------------------------------------------------------


def _fastavro_file(
    path: Path, avro: dict[str, Any], records: list[Any], codec: str = "null"
) -> DataFile:
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(avro), records, codec=codec)
    return DataFile(FileContent.DATA, str(path), "AVRO", (), len(records), path.stat().st_size)


def test_logical_types_of_other_writers(tmp_path: Path) -> None:
    """Millisecond times and timestamps, bytes decimals, string uuids, enums, timestamps
    without the adjust-to-utc property (Java: no zone) and with it as a string."""
    avro = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}, "field-id": 1},
            {
                "name": "ts_ms",
                "type": {"type": "long", "logicalType": "timestamp-millis"},
                "field-id": 2,
            },
            {
                "name": "tstz",
                "type": {
                    "type": "long",
                    "logicalType": "timestamp-micros",
                    "adjust-to-utc": "true",
                },
                "field-id": 3,
            },
            {
                "name": "dec",
                "type": [
                    "null",
                    {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
                ],
                "field-id": 4,
            },
            {"name": "u", "type": {"type": "string", "logicalType": "uuid"}, "field-id": 5},
            {
                "name": "e",
                "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]},
                "field-id": 6,
            },
        ],
    }
    raw = avro

    records = [
        {
            "t_ms": 1500,
            "ts_ms": 1_700_000_000_123,
            "tstz": 5,
            "dec": Decimal("-1.25"),
            "u": "12345678-1234-5678-1234-567812345678",
            "e": "B",
        },
        {
            "t_ms": 0,
            "ts_ms": -1,
            "tstz": -5,
            "dec": None,
            "u": "00000000-0000-0000-0000-000000000001",
            "e": "A",
        },
    ]
    df = _fastavro_file(tmp_path / "f.avro", raw, records)
    schema = Schema(
        NestedField(1, "t_ms", TimeType(), required=True),
        NestedField(2, "ts_ms", TimestampType(), required=True),
        NestedField(3, "tstz", TimestamptzType(), required=True),
        NestedField(4, "dec", DecimalType(9, 2)),
        NestedField(5, "u", UUIDType(), required=True),
        NestedField(6, "e", StringType(), required=True),
    )
    rows = _read(df, schema)
    utc = datetime.UTC
    assert rows[0]["t_ms"] == datetime.time(0, 0, 1, 500000)
    assert rows[0]["ts_ms"] == datetime.datetime(2023, 11, 14, 22, 13, 20, 123000)
    assert rows[1]["ts_ms"] == datetime.datetime(1969, 12, 31, 23, 59, 59, 999000)
    assert rows[0]["tstz"] == datetime.datetime(1970, 1, 1, 0, 0, 0, 5, tzinfo=utc)
    assert rows[0]["dec"] == Decimal("-1.25") and rows[1]["dec"] is None
    assert rows[0]["u"] == uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert [r["e"] for r in rows] == ["B", "A"]
    assert resolve_file_schema("x", raw, None).struct.field(2).field_type == TimestampType()


def test_nullable_branch_first_or_last(tmp_path: Path) -> None:
    avro = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "a", "type": ["long", "null"], "field-id": 1},
            {"name": "b", "type": ["null", "string"], "field-id": 2},
        ],
    }
    records = [{"a": 1, "b": None}, {"a": None, "b": "x"}]
    df = _fastavro_file(tmp_path / "f.avro", avro, records, codec="deflate")
    schema = Schema(NestedField(1, "a", LongType()), NestedField(2, "b", StringType()))
    assert _read(df, schema) == records
    assert _read(df, schema, row_filter=col("a").is_null()) == [records[1]]


# -- stepping over what is not projected -----------------------------------------------------


WIDE = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "big", StringType()),
    NestedField(
        3, "nested", StructType(NestedField(4, "x", LongType()), NestedField(5, "y", StringType()))
    ),
)


def test_unprojected_fields_are_stepped_over_not_decoded() -> None:
    resolved = resolve_file_schema("x", schema_to_avro(WIDE), None)
    decoder = compile_decoder(resolved, {1: None, 3: {4: None}})
    # one list for id, one for the struct's validity, one for x: nothing for big or y
    assert decoder.list_count == 3
    assert "a1(" in decoder.source and decoder.source.count("(data[pos:pos + n])") == 0
    full = compile_decoder(resolved, None)
    assert full.list_count == 5 and full.source.count("(data[pos:pos + n])") == 2


def test_decoding_checks_each_block_against_its_count(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    avro = schema_to_avro(schema)
    writer = AvroBlockWriter(IO.new_output(str(tmp_path / "f.avro")), avro, "null", 0, {})
    writer.write_block(3, b"\x02\x04")  # two longs for three records
    writer.close()
    df = DataFile(FileContent.DATA, str(tmp_path / "f.avro"), "AVRO", (), 3, 1)
    with pytest.raises(InvalidAvroFileError, match=r"f\.avro.*block at offset \d+ does not decode"):
        _read(df, schema)
    writer = AvroBlockWriter(IO.new_output(str(tmp_path / "g.avro")), avro, "null", 0, {})
    writer.write_block(1, b"\x02\x04")  # one long and a stray byte
    writer.close()
    df = DataFile(FileContent.DATA, str(tmp_path / "g.avro"), "AVRO", (), 1, 1)
    with pytest.raises(InvalidAvroFileError, match=r"g\.avro.*1 bytes more than its 1 records"):
        _read(df, schema)


# -- bad files -------------------------------------------------------------------------------


def test_truncated_block_and_wrong_sync_marker(tmp_path: Path) -> None:
    df = write_avro(tmp_path / "f.avro", BASE, BASE_ROWS * 20, row_group_size=10)
    data = Path(df.file_path).read_bytes()
    truncated = tmp_path / "truncated.avro"
    truncated.write_bytes(data[:-30])
    with pytest.raises(
        InvalidAvroFileError, match=r"truncated\.avro: the block at offset \d+ is truncated"
    ):
        _read(df.replace(file_path=str(truncated)), BASE)
    blocks = _block_offsets(df.file_path)
    # the sync marker after the second block: 16 bytes before the third block
    broken = bytearray(data)
    broken[blocks[2] - 1] ^= 0xFF
    bad_sync = tmp_path / "sync.avro"
    bad_sync.write_bytes(bytes(broken))
    with pytest.raises(
        InvalidAvroFileError,
        match=rf"sync\.avro: the block at offset {blocks[1]} ends with a wrong sync marker",
    ):
        _read(df.replace(file_path=str(bad_sync)), BASE)
    garbage = tmp_path / "garbage.avro"
    garbage.write_bytes(b"not avro at all")
    with pytest.raises(InvalidAvroFileError, match=r"garbage\.avro"):
        _read(df.replace(file_path=str(garbage)), BASE)


def test_corrupt_compressed_block(tmp_path: Path) -> None:
    df = write_avro(tmp_path / "f.avro", BASE, BASE_ROWS, codec="gzip")
    data = bytearray(Path(df.file_path).read_bytes())
    first = _block_offsets(df.file_path)[0]
    for i in range(first + 4, first + 12):
        data[i] ^= 0x5A
    Path(df.file_path).write_bytes(bytes(data))
    with pytest.raises(InvalidAvroFileError, match=r"f\.avro: the block at offset"):
        _read(df, BASE)


def test_union_with_two_branches_of_one_type_is_rejected(tmp_path: Path) -> None:
    avro = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "u", "type": ["null", "int", "string", "int"]},
        ],
    }
    # fastavro refuses to write such a schema: write the header by hand
    path = tmp_path / "dup.avro"
    writer = AvroBlockWriter(IO.new_output(str(path)), avro, "null", 0, {})
    writer.write_block(1, b"\x02\x02\x02")
    writer.close()
    df = DataFile(FileContent.DATA, str(path), "AVRO", (), 1, 1)
    mapping = name_mapping_from_json(
        '[{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["u"]}]'
    )
    with pytest.raises(
        InvalidAvroFileError,
        match=r"dup\.avro: field 'u': the union has two branches of type 'int'",
    ):
        _read(df, Schema(NestedField(1, "id", LongType())), name_mapping=mapping)


def test_file_without_ids_names_file_and_field(tmp_path: Path) -> None:
    df = write_avro(tmp_path / "noids.avro", BASE, BASE_ROWS, with_ids=False)
    with pytest.raises(
        InvalidSchemaError, match=r"noids\.avro has no field ids \(first field 'a'\)"
    ):
        _read(df, BASE)


def test_header_codec_and_schema_problems(tmp_path: Path) -> None:
    path = tmp_path / "codec.avro"
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema_to_avro(BASE)), [], codec="null")
    raw = buf.getvalue().replace(b"\x08null", b"\x08brot")
    path.write_bytes(raw)
    df = DataFile(FileContent.DATA, str(path), "AVRO", (), 0, len(raw))
    with pytest.raises(
        InvalidAvroFileError, match=r"codec\.avro: unsupported compression codec 'brot'"
    ):
        _read(df, BASE)
