"""Content file JSON in icepark alone: the spec's form and Java 1.10's read back to the same
file; malformed ones are refused (Java's reading: tests/rest/test_scan_planning_java.py)."""

from __future__ import annotations

import pytest

from icepark.errors import ValidationError
from icepark.manifest.content_json import content_file_from_json, content_file_to_json
from icepark.spec.manifests import DataFile, FileContent, FileFormat
from icepark.spec.types import DateType, IntegerType, NestedField, StringType, StructType

PART = StructType(
    NestedField(1000, "day", DateType()),
    NestedField(1001, "cat", StringType()),
    NestedField(1002, "b", IntegerType()),
)
TYPES = {3: PART, 0: StructType()}

FILE = DataFile(
    content=FileContent.EQUALITY_DELETES,
    file_path="s3://b/t/data/f.parquet",
    file_format=FileFormat.PARQUET,
    partition=(19782, "a", None),
    record_count=10,
    file_size_in_bytes=2048,
    column_sizes={1: 100, 2: 200},
    null_value_counts={1: 0},
    lower_bounds={1: b"\x01\x00\x00\x00"},
    upper_bounds={1: b"\xff\x00\x00\x00"},
    key_metadata=b"\x00\x10",
    split_offsets=(4,),
    equality_ids=(1, 2),
    sort_order_id=0,
    spec_id=3,
)


def test_spec_form() -> None:
    out = content_file_to_json(FILE, PART)
    assert out["content"] == "equality-deletes" and out["file-format"] == "parquet"
    assert out["partition"] == ["2024-02-29", "a", None]
    assert out["lower-bounds"] == {"keys": [1], "values": ["01000000"]}
    assert out["upper-bounds"] == {"keys": [1], "values": ["FF000000"]}
    assert out["column-sizes"] == {"keys": [1, 2], "values": [100, 200]}
    assert "value-counts" not in out and "referenced-data-file" not in out
    assert content_file_from_json(out, TYPES) == FILE


def test_java_1_10_form() -> None:
    out = content_file_to_json(FILE, PART, legacy=True)
    assert out["content"] == "EQUALITY_DELETES" and out["file-format"] == "PARQUET"
    assert out["partition"] == {"1000": "2024-02-29", "1001": "a"}
    assert content_file_from_json(out, TYPES) == FILE


def test_deletion_vector_fields() -> None:
    dv = DataFile(
        content=FileContent.POSITION_DELETES,
        file_path="/t/data/dv.puffin",
        file_format=FileFormat.PUFFIN,
        partition=(),
        record_count=3,
        file_size_in_bytes=100,
        referenced_data_file="/t/data/a.parquet",
        content_offset=4,
        content_size_in_bytes=40,
    )
    out = content_file_to_json(dv, StructType())
    assert out["partition"] == [] and out["content-offset"] == 4
    assert out["referenced-data-file"] == "/t/data/a.parquet"
    assert content_file_from_json(out, TYPES) == dv


@pytest.mark.parametrize(
    "change, words",
    [
        ({"spec-id": 9}, "unknown spec-id"),
        ({"content": "data-ish"}, "Unknown content"),
        ({"partition": ["2024-02-29"]}, "does not match"),
        ({"record-count": "10"}, "record-count"),
        ({"lower-bounds": {"keys": [1], "values": []}}, "keys and values"),
        ({"key-metadata": "zz"}, "hexadecimal"),
    ],
)
def test_malformed_content_files_are_refused(change: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        content_file_from_json({**content_file_to_json(FILE, PART), **change}, TYPES)
