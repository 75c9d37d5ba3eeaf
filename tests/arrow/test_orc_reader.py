"""Reading ORC data files: the Parquet reader's suite of projection, evolution, name mapping,
constants, metadata columns and filters run again on ORC files (written by pyarrow with the
``iceberg.id`` attributes Java's ORC writer puts in the type tree), plus ORC's own marked
types and the missing-ids error. Files the reference engine writes are read in
tests/interop/test_interop_formats.py."""

from __future__ import annotations

import datetime
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pytest
import test_arrow_reader as parquet_suite
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

from icepark.arrow.schema import FIELD_ID_KEY, schema_to_arrow
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


def _orc_field(f: pa.Field, with_ids: bool) -> pa.Field:
    """An Arrow field as Java's ORC writer types it: ids in ``iceberg.id``, uuid and fixed
    as marked binary, time as a marked bigint."""
    meta: dict[bytes, bytes] = {}
    fid = (f.metadata or {}).get(FIELD_ID_KEY)
    if with_ids and fid is not None:
        meta[b"iceberg.id"] = fid
    t = f.type
    if pa.types.is_struct(t):
        t = pa.struct([_orc_field(c, with_ids) for c in t])
    elif pa.types.is_map(t):
        t = pa.map_(_orc_field(t.key_field, with_ids), _orc_field(t.item_field, with_ids))
    elif pa.types.is_list(t):
        t = pa.list_(_orc_field(t.value_field, with_ids))
    elif isinstance(t, pa.BaseExtensionType):
        t = pa.binary()
        meta[b"iceberg.binary-type"] = b"UUID"
    elif pa.types.is_fixed_size_binary(t):
        meta[b"iceberg.binary-type"] = b"FIXED"
        meta[b"iceberg.length"] = str(t.byte_width).encode()
        t = pa.binary()
    elif pa.types.is_time64(t):
        meta[b"iceberg.long-type"] = b"TIME"
        t = pa.int64()
    return pa.field(f.name, t, nullable=f.nullable, metadata=meta or None)


def _orc_array(arr: pa.Array, t: pa.DataType) -> pa.Array:
    if pa.types.is_struct(t):
        children = [_orc_array(arr.field(i), t.field(i).type) for i in range(t.num_fields)]
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_list(t):
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(
            arr.offsets, _orc_array(arr.values, t.value_type), type=t, mask=mask
        )
    if pa.types.is_map(t):
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(
            arr.offsets,
            _orc_array(arr.keys, t.key_type),
            _orc_array(arr.items, t.item_type),
            type=t,
            mask=mask,
        )
    if isinstance(arr.type, pa.BaseExtensionType):
        return arr.storage.cast(t)
    if pa.types.is_time64(arr.type):
        return arr.view(pa.int64())
    return arr.cast(t)


def write_orc(
    path: Path,
    schema: Schema,
    rows: list[dict[str, Any]],
    *,
    row_group_size: int | None = None,
    with_ids: bool = True,
    partition: tuple[Any, ...] = (),
    spec_id: int = 0,
) -> DataFile:
    table = pa.Table.from_pylist(rows, schema=schema_to_arrow(schema))
    fields = [_orc_field(f, with_ids) for f in table.schema]
    arrays = [_orc_array(c.combine_chunks(), f.type) for c, f in zip(table.columns, fields)]
    orc.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), str(path))
    return DataFile(
        content=FileContent.DATA,
        file_path=str(path),
        file_format="ORC",
        partition=partition,
        record_count=len(rows),
        file_size_in_bytes=path.stat().st_size,
        spec_id=spec_id,
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
