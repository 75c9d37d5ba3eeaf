"""Reading ORC data files: the Parquet reader's suite of projection, evolution, name mapping,
constants, metadata columns and filters run again on ORC files (written by pyarrow with the
``iceberg.id`` attributes Java's ORC writer puts in the type tree), plus ORC's own marked
types and the missing-ids error. Files the reference engine writes are read in
tests/interop/test_interop_formats.py."""

from __future__ import annotations

import datetime
import uuid
from pathlib import Path

import pytest
import test_arrow_reader as parquet_suite
from orc_files import write_orc
from test_arrow_reader import (
    BASE,
    BASE_ROWS,
    test_added_columns_read_initial_defaults,
    test_columns_in_the_file_win_over_partition_values,
    test_empty_projection_keeps_row_counts,
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

from icepark.errors import InvalidSchemaError, ValidationError
from icepark.spec.manifests import DataFile, FileContent
from icepark.spec.metadata_columns import POS_FIELD
from icepark.spec.schema import Schema
from icepark.spec.types import FixedType, LongType, NestedField, TimeType, UUIDType

REUSED = (
    test_added_columns_read_initial_defaults,
    test_columns_in_the_file_win_over_partition_values,
    test_empty_projection_keeps_row_counts,
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


@pytest.fixture(autouse=True)
def _orc_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reused Parquet tests write ORC files here."""
    monkeypatch.setattr(parquet_suite, "_write", write_orc)


def test_marked_types_and_positions(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "t", TimeType()),
        NestedField(3, "u", UUIDType()),
        NestedField(4, "fx", FixedType(3)),
    )
    u = uuid.uuid4()
    rows = [
        {"id": 1, "t": datetime.time(1, 2, 3, 4), "u": u.bytes, "fx": b"abc"},
        {"id": 2, "t": None, "u": None, "fx": None},
    ]
    df = write_orc(tmp_path / "f.orc", schema, rows)
    got = parquet_suite._read(df, Schema(*schema.fields, POS_FIELD), schema)
    assert got == [
        {"id": 1, "t": datetime.time(1, 2, 3, 4), "u": u, "fx": b"abc", "_pos": 0},
        {"id": 2, "t": None, "u": None, "fx": None, "_pos": 1},
    ]


def test_file_without_ids_and_without_mapping_names_file_and_field(tmp_path: Path) -> None:
    df = write_orc(tmp_path / "noids.orc", BASE, BASE_ROWS, with_ids=False)
    with pytest.raises(
        InvalidSchemaError, match=r"noids\.orc has no field ids \(first field 'a'\)"
    ):
        parquet_suite._read(df, BASE)


def test_not_an_orc_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.orc"
    path.write_bytes(b"definitely not orc")
    df = DataFile(FileContent.DATA, str(path), "ORC", (), 1, path.stat().st_size)
    with pytest.raises(ValidationError, match=r"Cannot read ORC file .*bad\.orc"):
        parquet_suite._read(df, BASE)
