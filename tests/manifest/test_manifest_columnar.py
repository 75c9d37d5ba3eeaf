"""Manifest entries read column-wise equal the entries the object reader gives.

For random data and delete files in manifests of format versions 1 to 3 (random statuses,
codecs, partition values of many types, metrics, inherited and explicit sequence numbers and
first row ids), every field of :func:`read_entries_columnar`'s rows equals the same field of
:func:`~icepark.manifest.read_manifest`'s entries, with the inheritance applied; several
manifests read together come back in their order; the fastavro fallback gives the same rows.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import icepark.manifest.columnar as columnar
from icepark.arrow.schema import type_to_arrow
from icepark.avro.blocks import UnsupportedAvroError
from icepark.io import PyArrowFileIO
from icepark.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest,
    write_manifest,
)
from icepark.manifest.columnar import ManifestBytes, read_entries_columnar
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import parse_transform
from icepark.spec.types import (
    DateType,
    DecimalType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
    UUIDType,
)
from icepark.table.inspect.arrow_values import internal_to_arrow
from icepark.table.inspect.schemas import data_file_struct

FILEIO = PyArrowFileIO()
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "ts", TimestamptzType()),
    NestedField(4, "price", DecimalType(9, 2)),
    NestedField(5, "u", UUIDType()),
)
SPEC = PartitionSpec(
    3,
    (
        PartitionField(2, 1000, parse_transform("identity"), "name"),
        PartitionField(3, 1001, parse_transform("day"), "ts_day"),
        PartitionField(4, 1002, parse_transform("identity"), "price"),
        PartitionField(5, 1003, parse_transform("identity"), "u"),
        PartitionField(1, 1004, parse_transform("bucket[4]"), "id_bucket"),
    ),
)
# the table's partition type: one field of another spec, one of SPEC missing
PTYPE = StructType(
    NestedField(1000, "name", StringType()),
    NestedField(1001, "ts_day", DateType()),
    NestedField(1002, "price", DecimalType(9, 2)),
    NestedField(1003, "u", UUIDType()),
    NestedField(1005, "other", LongType()),
)
STRUCT = data_file_struct(PTYPE)
ARROW = type_to_arrow(STRUCT, include_field_ids=False)

PARTITIONS = st.tuples(
    st.none() | st.text(max_size=5),
    st.none() | st.integers(-1000, 30000),
    st.none() | st.decimals(-9999999, 9999999, places=2, allow_nan=False, allow_infinity=False),
    st.none() | st.uuids(),
    st.none() | st.integers(0, 3),
)
COUNTS = st.none() | st.dictionaries(st.integers(1, 200), st.integers(0, 2**40), max_size=6)
BOUNDS = st.none() | st.dictionaries(st.integers(1, 200), st.binary(max_size=70), max_size=6)


@st.composite
def _file(draw: st.DrawFn, version: int, deletes: bool, n: int) -> DataFile:
    content = (
        draw(st.sampled_from([FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES]))
        if deletes
        else FileContent.DATA
    )
    return DataFile(
        content=content,
        file_path=f"s3://b/data/{n}-{'p' * draw(st.integers(0, 150))}.parquet",
        file_format=FileFormat.PARQUET,
        partition=draw(PARTITIONS),
        record_count=draw(st.integers(0, 10**6)),
        file_size_in_bytes=draw(st.integers(1, 10**10)),
        column_sizes=draw(COUNTS),
        value_counts=draw(COUNTS),
        null_value_counts=draw(COUNTS),
        nan_value_counts=draw(COUNTS),
        lower_bounds=draw(BOUNDS),
        upper_bounds=draw(BOUNDS),
        key_metadata=draw(st.none() | st.binary(max_size=8)),
        split_offsets=draw(st.none() | st.lists(st.integers(0, 2**40), max_size=3)),
        equality_ids=(
            draw(st.lists(st.integers(1, 5), min_size=1, max_size=2))
            if content == FileContent.EQUALITY_DELETES
            else None
        ),
        sort_order_id=draw(st.none() | st.integers(0, 3)),
        first_row_id=draw(st.none() | st.integers(0, 100))
        if version >= 3 and not deletes
        else None,
        referenced_data_file=(
            draw(st.none() | st.just("s3://b/data/x.parquet"))
            if content == FileContent.POSITION_DELETES and version >= 2
            else None
        ),
        spec_id=SPEC.spec_id,
    )


def _write(
    tmp_path: Path, name: str, version: int, deletes: bool, codec: str, entries: list[Any]
) -> ManifestBytes:
    location = str(tmp_path / name)
    content = ManifestContent.DELETES if deletes else ManifestContent.DATA
    with write_manifest(
        FILEIO.new_output(location),
        SPEC,
        SCHEMA,
        format_version=version,
        snapshot_id=None if version > 1 else 42,
        content=content,
        codec=codec,
        overwrite=True,
    ) as writer:
        for status, explicit, f in entries:
            # added entries may inherit their snapshot and sequence numbers; others may not
            explicit = explicit or status != ManifestEntryStatus.ADDED
            seq = 3 if explicit and version > 1 else None
            snapshot = 17 if explicit else None
            if version == 1:
                snapshot = 42
            writer.write_entry(ManifestEntry(ManifestEntryStatus(status), snapshot, seq, seq, f))
    manifest: ManifestFile = writer.to_manifest_file().replace(
        added_snapshot_id=99,
        sequence_number=5 if version > 1 else None,
        first_row_id=1000 if version >= 3 and not deletes else None,
    )
    return ManifestBytes(location, Path(location).read_bytes(), manifest)


def _expected(m: ManifestBytes) -> list[dict[str, Any]]:
    rows = []
    for e in read_manifest(FILEIO.new_input(m.location), m.manifest, spec=SPEC):
        f = e.data_file
        partition = dict(zip([pf.field_id for pf in SPEC.fields], f.partition, strict=True))
        values = {}
        for pf, arrow_field in zip(PTYPE.fields, ARROW.field("partition").type):
            value = partition.get(pf.field_id)
            values[pf.name] = internal_to_arrow([value], pf.field_type, arrow_field.type)[0].as_py()
        rows.append(
            {
                "status": int(e.status),
                "snapshot_id": e.snapshot_id,
                "sequence_number": e.sequence_number,
                "file_sequence_number": e.file_sequence_number,
                "data_file": {
                    "content": int(f.content),
                    "file_path": f.file_path,
                    "file_format": str(f.file_format),
                    "spec_id": f.spec_id,
                    "partition": values,
                    "record_count": f.record_count,
                    "file_size_in_bytes": f.file_size_in_bytes,
                    "column_sizes": f.column_sizes,
                    "value_counts": f.value_counts,
                    "null_value_counts": f.null_value_counts,
                    "nan_value_counts": f.nan_value_counts,
                    "lower_bounds": f.lower_bounds,
                    "upper_bounds": f.upper_bounds,
                    "key_metadata": f.key_metadata,
                    "split_offsets": None if f.split_offsets is None else list(f.split_offsets),
                    "equality_ids": None if f.equality_ids is None else list(f.equality_ids),
                    "sort_order_id": f.sort_order_id,
                    "first_row_id": f.first_row_id,
                    "referenced_data_file": f.referenced_data_file,
                    "content_offset": f.content_offset,
                    "content_size_in_bytes": f.content_size_in_bytes,
                },
            }
        )
    return rows


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    out = table.to_pylist()
    for row in out:
        f = row["data_file"]
        for name in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts"):
            f[name] = None if f[name] is None else dict(f[name])
        for name in ("lower_bounds", "upper_bounds"):
            f[name] = None if f[name] is None else dict(f[name])
    return out


def _read(manifests: list[ManifestBytes], live_only: bool = False) -> pa.Table:
    return read_entries_columnar(
        manifests, ARROW, STRUCT, {SPEC.spec_id: SPEC}, live_only=live_only
    )


ENTRIES = st.tuples(st.sampled_from([0, 1, 1, 2]), st.booleans())


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    version=st.sampled_from([1, 2, 3]),
    deletes=st.booleans(),
    codec=st.sampled_from(["deflate", "null"]),
    data=st.data(),
)
def test_same_entries_as_the_object_reader(
    tmp_path: Path, version: int, deletes: bool, codec: str, data: st.DataObject
) -> None:
    deletes = deletes and version > 1
    manifests = []
    for k in range(data.draw(st.integers(1, 3))):
        entries = [
            (*data.draw(ENTRIES), data.draw(_file(version, deletes, i)))
            for i in range(data.draw(st.integers(0, 8)))
        ]
        manifests.append(_write(tmp_path, f"m{k}.avro", version, deletes, codec, entries))
    expected = [row for m in manifests for row in _expected(m)]
    assert _rows(_read(manifests)) == expected
    live = [row for row in expected if row["status"] != 2]
    assert _rows(_read(manifests, live_only=True)) == live


def test_fallback_reads_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = [
        (1, False, DataFile(FileContent.DATA, f"/d/{i}.parquet", FileFormat.PARQUET,
                            ("a", 19000 + i, Decimal("1.25"), uuid.UUID(int=i), i % 4),
                            10 + i, 100, lower_bounds={1: b"\x01"}, first_row_id=None,
                            spec_id=SPEC.spec_id))
        for i in range(5)
    ]  # fmt: skip
    manifests = [_write(tmp_path, "m.avro", 3, False, "deflate", files)]
    fast = _rows(_read(manifests))

    def refuse(*_: Any, **__: Any) -> Any:
        raise UnsupportedAvroError("refused for the test")

    monkeypatch.setattr(columnar.ColumnarDecoder, "decode", refuse)
    assert _rows(_read(manifests)) == fast == [r for m in manifests for r in _expected(m)]
    assert [r["data_file"]["first_row_id"] for r in fast] == [1000, 1010, 1021, 1033, 1046]
    assert fast[0]["data_file"]["partition"]["ts_day"] == dt.date(2022, 1, 8)
    assert fast[0]["data_file"]["partition"]["other"] is None
