"""Test helper: ORC data files as Java's ORC writer types them (``iceberg.id`` attributes on
every field, uuid and fixed as marked binary, time as a marked bigint), written by pyarrow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc

from icepark.arrow.schema import FIELD_ID_KEY, schema_to_arrow
from icepark.spec.manifests import DataFile, FileContent
from icepark.spec.schema import Schema

__all__ = ["write_orc"]


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
