"""The bugs the hostile-file fuzzing found, each pinned at the function that had it with the
input (or the smallest form of it) that broke it. The whole crashing files are replayed by
``test_hostile_files.py::test_crash_input``."""

from __future__ import annotations

import io
import json
import re
import struct
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.arrow.avro_reader import AvroDataFile
from icepark.arrow.footer import data_file_from_footer
from icepark.arrow.metrics import MetricsConfig
from icepark.arrow.reader import read_data_file
from icepark.avro.blocks import read_avro_blocks
from icepark.avro.file import read_avro_file
from icepark.avro.file_schema import resolve_file_schema
from icepark.errors import (
    InvalidAvroFileError,
    InvalidMetadataError,
    InvalidSchemaError,
    InvalidValueError,
    ValidationError,
)
from icepark.expressions import bind, parse_filter
from icepark.io.pyarrow_fileio import PyArrowFileIO
from icepark.manifest import read_manifest_list
from icepark.puffin import deserialize_roaring64, read_puffin, read_puffin_blob
from icepark.spec.manifests import DataFile, FileContent, FileFormat
from icepark.spec.metadata import table_metadata_from_json
from icepark.spec.name_mapping import name_mapping_from_json
from icepark.spec.partitioning import UNPARTITIONED
from icepark.spec.schema import Schema
from icepark.spec.types import LongType, NestedField
from icepark.spec.view_metadata import read_view_metadata_json

DEEP = 50_000  # far past the interpreter's recursion limit


def test_view_metadata_nested_too_deep() -> None:
    # spec/view_metadata.py read_view_metadata_json: RecursionError escaped json.loads
    text = "[" * DEEP + "]" * DEEP
    with pytest.raises(InvalidMetadataError, match=re.escape("s3://b/v1.metadata.json")):
        read_view_metadata_json(text, "s3://b/v1.metadata.json")


def test_name_mapping_nested_too_deep() -> None:
    # spec/name_mapping.py name_mapping_from_json: RecursionError from json.loads and from
    # walking nested "fields"
    with pytest.raises(InvalidSchemaError, match="name mapping"):
        name_mapping_from_json("[" * DEEP + "]" * DEEP)
    nested: list[Any] = [{"field-id": 1, "names": ["leaf"]}]
    for i in range(5000):
        nested = [{"field-id": i + 2, "names": [f"f{i}"], "fields": nested}]
    with pytest.raises(InvalidSchemaError, match="nested too deeply"):
        name_mapping_from_json(nested)


@pytest.mark.parametrize(
    "text",
    ["(" * 3000 + "x = 1" + ")" * 3000, "not " * 3000 + "x = 1", "x = 1 or " + "(" * 3000],
)
def test_filter_nested_too_deep(text: str) -> None:
    # expressions/parser.py parse_filter: RecursionError
    with pytest.raises(ValidationError, match="Invalid filter"):
        parse_filter(text)


def test_filter_nested_a_little_still_parses() -> None:
    assert parse_filter("(" * 50 + "x = 1" + ")" * 50) == parse_filter("x = 1")


def _zigzag(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _peak_bytes(run: Any) -> int:
    tracemalloc.start()
    try:
        run()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_avro_header_with_a_huge_length_allocates_nothing(tmp_path: Path) -> None:
    # avro/file.py _read_header: fastavro read the header's byte lengths with stream.read(n),
    # which allocated n bytes (9.9 GB for one corrupt data file) before finding the end
    key = b"avro.schema"
    data = b"Obj\x01" + _zigzag(1) + _zigzag(len(key)) + key + _zigzag(2**30) + b'{"type"'
    path = tmp_path / "huge-header.avro"
    path.write_bytes(data)

    def run() -> None:
        with pytest.raises(InvalidAvroFileError, match=re.escape(str(path))):
            AvroDataFile(PyArrowFileIO(), str(path), None)

    assert _peak_bytes(run) < 16 * 2**20


_SCHEMA = {
    "type": "record",
    "name": "r",
    "fields": [{"name": "id", "type": "long", "field-id": 1}],
}


def _header(schema: Any, sync: bytes = b"s" * 16, codec: bytes = b"null") -> bytes:
    out = io.BytesIO()
    header_schema = {
        "type": "record",
        "name": "Header",
        "fields": [
            {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
            {"name": "meta", "type": {"type": "map", "values": "bytes"}},
            {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
        ],
    }
    text = schema if isinstance(schema, bytes) else json.dumps(schema).encode()
    meta = {"avro.schema": text, "avro.codec": codec}
    fastavro.schemaless_writer(
        out, header_schema, {"magic": b"Obj\x01", "meta": meta, "sync": sync}
    )
    return out.getvalue()


def test_avro_block_with_a_huge_size_allocates_nothing(tmp_path: Path) -> None:
    # avro/blocks.py iter_avro_blocks: stream.read(size) with the block size of the file
    path = tmp_path / "huge-block.avro"
    path.write_bytes(_header(_SCHEMA) + _zigzag(1) + _zigzag(2**30) + b"\x02" * 10)

    def run() -> None:
        with AvroDataFile(PyArrowFileIO(), str(path), None) as avro:
            with pytest.raises(InvalidAvroFileError, match=re.escape(str(path))):
                list(avro.batches({1: None}, 100))

    assert _peak_bytes(run) < 16 * 2**20


def test_snappy_block_claiming_gigabytes_allocates_nothing(tmp_path: Path) -> None:
    # avro/file.py _unsnappy: the uncompressed length of snappy's preamble was allocated as
    # read (a manifest list mutated in one byte asked for 6+ GB)
    path = tmp_path / "snappy.avro"
    payload = _zigzag(2**30)[:-1] + b"\x7f" + b"\x00" * 40 + b"crc!"
    sync = b"s" * 16
    block = _zigzag(1) + _zigzag(len(payload)) + payload + sync
    path.write_bytes(_header(_SCHEMA, sync, b"snappy") + block)

    def run() -> None:
        with pytest.raises(InvalidAvroFileError, match=re.escape(str(path))):
            read_avro_file(PyArrowFileIO().new_input(str(path)))

    assert _peak_bytes(run) < 16 * 2**20


@pytest.mark.parametrize(
    "schema",
    [
        {
            "type": "record",
            "name": "r",
            "fields": [{"name": "a", "type": "long", "field-id": 1}, "b"],
        },
        {"type": "record", "name": "r", "fields": True},  # TypeError
        {"type": "record", "name": {"x": 1}, "fields": []},  # TypeError: unhashable name
        {"type": "record", "name": "r", "fields": [{"name": "a", "type": "nu,l", "field-id": 1}]},
        {
            "type": "record",
            "name": "r",
            "fields": [
                {"name": "a", "type": "long", "field-id": 1},
                {"name": "a", "type": "long", "field-id": 2},  # KeyError when projected
            ],
        },
    ],
)
def test_avro_data_file_schema_of_the_wrong_shape(schema: Any) -> None:
    # avro/file_schema.py resolve_file_schema: raw AttributeError, TypeError, KeyError and
    # the internal UnsupportedAvroError
    with pytest.raises(InvalidAvroFileError, match=re.escape("s3://b/d.avro")):
        resolve_file_schema("s3://b/d.avro", schema, None)


def test_avro_schema_nested_too_deep(tmp_path: Path) -> None:
    # avro/file.py _writer_schema: RecursionError (every Avro reader: manifests too)
    path = tmp_path / "deep.avro"
    path.write_bytes(_header(b"[" * DEEP + b"]" * DEEP))
    with pytest.raises(InvalidAvroFileError, match=re.escape(str(path))):
        AvroDataFile(PyArrowFileIO(), str(path), None)


def test_manifest_list_field_of_the_wrong_type(tmp_path: Path) -> None:
    # manifest/manifest_list.py: values were taken as decoded whatever the writer schema's
    # type: bytes(2**40) of a key_metadata written as a long allocated a terabyte
    path = tmp_path / "snap.avro"
    ids = {"manifest_path": 500, "manifest_length": 501, "partition_spec_id": 502}
    fields = [
        {"name": name, "type": "string" if fid == 500 else "long", "field-id": fid}
        for name, fid in ids.items()
    ]
    fields += [
        {"name": "added_snapshot_id", "type": "long", "field-id": 503},
        {"name": "key_metadata", "type": "long", "field-id": 519},
    ]
    schema = {"type": "record", "name": "manifest_file", "fields": fields}
    record = {"manifest_path": "m.avro", "manifest_length": 1, "partition_spec_id": 0}
    with path.open("wb") as f:
        fastavro.writer(f, schema, [{**record, "added_snapshot_id": 1, "key_metadata": 2**40}])

    def run() -> None:
        with pytest.raises(InvalidAvroFileError, match=re.escape(str(path)) + ".*key_metadata"):
            read_manifest_list(PyArrowFileIO().new_input(str(path)))

    assert _peak_bytes(run) < 16 * 2**20


def test_truncated_roaring_bitmap() -> None:
    # puffin/dv.py deserialize_roaring64: pyroaring's IndexError on a truncated bitmap
    data = bytes.fromhex("030000000000000000000000")
    with pytest.raises(InvalidValueError, match=re.escape("dv.bin")):
        deserialize_roaring64(data, "dv.bin")


def _puffin(footer: Any, blobs: bytes = b"") -> bytes:
    payload = json.dumps(footer).encode() if not isinstance(footer, bytes) else footer
    return b"PFA1" + blobs + b"PFA1" + payload + struct.pack("<iI", len(payload), 0) + b"PFA1"


@pytest.mark.parametrize(
    "footer",
    [
        b"[" * DEEP + b"]" * DEEP,  # RecursionError
        {"blobs": [], "properties": ["a"]},  # AttributeError
        {"blobs": [["not", "an", "object"]]},
    ],
)
def test_puffin_footer_of_the_wrong_shape(tmp_path: Path, footer: Any) -> None:
    # puffin/file.py parse_footer: RecursionError and AttributeError escaped
    path = tmp_path / "footer.puffin"
    path.write_bytes(_puffin(footer))
    with pytest.raises(ValidationError, match=re.escape(str(path))):
        read_puffin(PyArrowFileIO().new_input(str(path)))


def test_puffin_blob_past_the_end_allocates_nothing(tmp_path: Path) -> None:
    # puffin/file.py read_puffin_blob: read(length) with the footer's length allocated it
    path = tmp_path / "blob.puffin"
    blob = {"type": "t", "fields": [1], "snapshot-id": 1, "sequence-number": 1}
    path.write_bytes(_puffin({"blobs": [{**blob, "offset": 4, "length": 2**30}]}, b"abc"))
    input_file = PyArrowFileIO().new_input(str(path))
    (meta,) = read_puffin(input_file).blobs

    def run() -> None:
        with pytest.raises(ValidationError, match=re.escape(str(path))):
            read_puffin_blob(input_file, meta.offset, meta.length)

    assert _peak_bytes(run) < 16 * 2**20
    with pytest.raises(ValidationError, match="outside the file"):
        read_puffin_blob(input_file, -1, 2)


def _metadata(**changes: Any) -> dict[str, Any]:
    md: dict[str, Any] = {
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://bucket/t",
        "last-sequence-number": 1,
        "last-updated-ms": 1602638573590,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [
            {
                "type": "struct",
                "schema-id": 0,
                "fields": [{"id": 1, "name": "x", "required": True, "type": "long"}],
            }
        ],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "snapshots": [
            {
                "snapshot-id": 1,
                "sequence-number": 1,
                "timestamp-ms": 1602638573590,
                "summary": {"operation": "append"},
                "manifest-list": "s3://bucket/t/metadata/snap-1.avro",
            }
        ],
    }
    md.update(changes)
    return md


def test_metadata_fixture_reads() -> None:
    assert table_metadata_from_json(json.dumps(_metadata())).last_sequence_number == 1


def test_partition_field_id_beyond_32_bits() -> None:
    # spec/partitioning.py partition_spec_from_json took any integer as a field id; the
    # metadata read, but its JSON (last-partition-id -4294966296) did not read back
    spec = {"spec-id": 0, "fields": [{"name": "x", "transform": "identity", "source-id": 1}]}
    spec["fields"][0]["field-id"] = -4294966296
    md = _metadata(**{"partition-specs": [spec]})
    del md["last-partition-id"]
    md["format-version"] = 1
    with pytest.raises(InvalidMetadataError, match="partition field"):
        table_metadata_from_json(json.dumps(md))


def test_negative_sequence_numbers() -> None:
    # spec/metadata.py: a negative last-sequence-number (and snapshot sequence number)
    # read, and the JSON written from it did not read back
    md = _metadata(**{"last-sequence-number": -4294967262})
    md["snapshots"][0]["sequence-number"] = -4294967295
    with pytest.raises(InvalidMetadataError, match="sequence number"):
        table_metadata_from_json(json.dumps(md))
    md = _metadata()
    md["snapshots"][0]["sequence-number"] = -1
    with pytest.raises(InvalidMetadataError, match="negative sequence number"):
        table_metadata_from_json(json.dumps(md))


def test_bad_name_mapping_property_is_named() -> None:
    md = table_metadata_from_json(
        json.dumps(_metadata(properties={"schema.name-mapping.default": "[{"}))
    )
    with pytest.raises(InvalidSchemaError, match=re.escape("schema.name-mapping.default")):
        md.name_mapping()


def test_parquet_with_two_columns_of_one_name(tmp_path: Path) -> None:
    # arrow/reader.py: columns are found by name paths; two of one name gave pyarrow's
    # KeyError when a filter needed one of them
    path = tmp_path / "dup.parquet"
    fields = [
        pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
        pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"2"}),
    ]
    pq.write_table(pa.table([[1], [2]], schema=pa.schema(fields)), path)
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "other", LongType()))
    data_file = DataFile(
        FileContent.DATA, str(path), FileFormat.PARQUET, (), 1, path.stat().st_size
    )
    with pytest.raises(ValidationError, match=re.escape(str(path)) + ".*two columns named 'id'"):
        list(
            read_data_file(
                PyArrowFileIO(),
                data_file,
                projected_schema=schema,
                table_schema=schema,
                partition_spec=None,
                row_filter=bind(schema, parse_filter("id > 0")),
                name_mapping=None,
            )
        )


def _short_statistic(path: Path) -> None:
    """A Parquet file whose INT64 column ``id`` has 1-byte max statistics (the Thrift of its
    footer rewritten: each binary field of length 8 holding the max, 2, cut to 1 byte)."""
    fields = [pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"})]
    pq.write_table(pa.table([[1, 2]], schema=pa.schema(fields)), path, compression="none")
    data = path.read_bytes()
    n = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - n
    footer = data[start : len(data) - 8]
    value = b"\x08" + (2).to_bytes(8, "little")
    at = footer.find(value)
    while at > 0:
        if footer[at - 1] & 0x0F == 8:  # a binary field: max (1) or max_value (5)
            footer = footer[:at] + b"\x01\x02" + footer[at + len(value) :]
        at = footer.find(value, at + 1)
    path.write_bytes(data[:start] + footer + len(footer).to_bytes(4, "little") + b"PAR1")


def test_parquet_statistic_too_short_for_its_type(tmp_path: Path) -> None:
    # arrow/footer.py data_file_from_footer: pyarrow aborts the process (a C++ exception
    # through a noexcept frame) when it decodes such a statistic; the footer's Thrift is
    # checked first
    path = tmp_path / "short-stat.parquet"
    _short_statistic(path)
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    with pytest.raises(ValidationError, match=re.escape(str(path)) + ".*1-byte statistic"):
        data_file_from_footer(
            PyArrowFileIO(),
            str(path),
            path.stat().st_size,
            schema=schema,
            spec=UNPARTITIONED,
            sort_order=None,
            config=MetricsConfig.from_properties({}, schema),
        )


def test_corrupt_parquet_is_a_typed_error(tmp_path: Path) -> None:
    # arrow/reader.py read_data_file: pyarrow's ArrowInvalid / OSError escaped raw
    path = tmp_path / "garbage.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 20 + b"\xff\xff\x00\x00PAR1")
    schema = Schema(NestedField(1, "id", LongType()))
    data_file = DataFile(FileContent.DATA, str(path), FileFormat.PARQUET, (), 1, 32)
    with pytest.raises(ValidationError, match=re.escape(f"Cannot read PARQUET data file {path}")):
        list(
            read_data_file(
                PyArrowFileIO(),
                data_file,
                projected_schema=schema,
                table_schema=schema,
                partition_spec=None,
                row_filter=None,
                name_mapping=None,
            )
        )


def _deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def _bomb_file(path: Path, codec: bytes, blocks: list[bytes], count: int = 1) -> None:
    sync = b"s" * 16
    body = b"".join(_zigzag(count) + _zigzag(len(b)) + b + sync for b in blocks)
    path.write_bytes(_header(_SCHEMA, sync, codec) + body)


_BOMB = _deflate(b"\x00" * (200 * 2**20))  # 200 MiB of zeros in ~200 KB


@pytest.mark.parametrize("reader", ["whole file", "blocks", "data file"])
def test_deflate_bomb_is_refused_before_it_is_allocated(tmp_path: Path, reader: str) -> None:
    # every Avro reader inflated a block whatever it claimed (fastavro's, blocks.py's): a
    # 200 KB manifest took 200 MiB
    path = tmp_path / "bomb.avro"
    _bomb_file(path, b"deflate", [_BOMB])
    io_ = PyArrowFileIO()

    def run() -> None:
        with pytest.raises(InvalidAvroFileError, match=re.escape(str(path))) as raised:
            if reader == "whole file":
                read_avro_file(io_.new_input(str(path)))
            elif reader == "blocks":
                read_avro_blocks(str(path), path.read_bytes())
            else:
                with AvroDataFile(io_, str(path), None) as avro:
                    list(avro.batches({1: None}, 100))
        assert "more than" in str(raised.value)

    assert _peak_bytes(run) < 64 * 2**20


def test_blocks_of_a_file_share_one_budget(tmp_path: Path) -> None:
    # each block within its own bound (1 MiB), together far past what the file's size allows
    path = tmp_path / "many.avro"
    block = _deflate(b"\x00" * 2**20)
    _bomb_file(path, b"deflate", [block] * 200)
    with pytest.raises(InvalidAvroFileError, match="more than"):
        read_avro_file(PyArrowFileIO().new_input(str(path)))
    with pytest.raises(InvalidAvroFileError, match="more than"):
        read_avro_blocks(str(path), path.read_bytes())


def test_zstandard_bomb_is_refused(tmp_path: Path) -> None:
    import zstandard

    path = tmp_path / "bomb-zstd.avro"
    _bomb_file(path, b"zstandard", [zstandard.ZstdCompressor().compress(b"\x00" * (200 * 2**20))])

    def run() -> None:
        with pytest.raises(InvalidAvroFileError, match="more than"):
            read_avro_file(PyArrowFileIO().new_input(str(path)))

    assert _peak_bytes(run) < 64 * 2**20


def test_puffin_zstd_bomb_is_refused(tmp_path: Path) -> None:
    import zstandard

    path = tmp_path / "bomb.puffin"
    blob = zstandard.ZstdCompressor().compress(b"\x00" * (200 * 2**20))
    meta = {"type": "t", "fields": [1], "snapshot-id": 1, "sequence-number": 1}
    footer = {"blobs": [{**meta, "offset": 4, "length": len(blob), "compression-codec": "zstd"}]}
    path.write_bytes(_puffin(footer, blob))
    input_file = PyArrowFileIO().new_input(str(path))
    (found,) = read_puffin(input_file).blobs

    def run() -> None:
        with pytest.raises(ValidationError, match=re.escape(str(path))):
            read_puffin_blob(input_file, found.offset, found.length, found.compression_codec)

    assert _peak_bytes(run) < 64 * 2**20


def test_highly_compressible_blocks_within_bounds_still_read(tmp_path: Path) -> None:
    # 1 Mi records of one zero byte each (id 0) in one block, ~1000:1: data, not a bomb
    path = tmp_path / "zeros.avro"
    rows = 2**20
    _bomb_file(path, b"deflate", [_deflate(b"\x00" * rows)], count=rows)
    contents = read_avro_file(PyArrowFileIO().new_input(str(path)))
    assert len(contents.records) == rows and contents.records[-1] == {"id": 0}
    ((count, data),) = read_avro_blocks(str(path), path.read_bytes()).block_data()
    assert count == rows and len(data) == rows
