"""The ``position_deletes`` table: a row per position deleted by a live position delete file
or deletion vector of the snapshot (Java's ``PositionDeletesTable``).

Each row has the data file and position deleted, the deleted ``row`` when the delete file
stored it (null otherwise, and always for deletion vectors), the delete file's partition
(under the table's unified partition type) and spec, and the delete file's path; v3 tables
add the deletion vector's ``content_offset`` and ``content_size_in_bytes`` (null for Parquet
delete files). Delete files are read in parallel: Parquet ones by field id with icepark's
reader, deletion vectors through :class:`~icepark.arrow.deletes.DeleteCache`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from icepark.arrow.deletes import DeleteCache
from icepark.arrow.reader import read_file_table
from icepark.arrow.schema import schema_to_arrow, type_to_arrow
from icepark.manifest import ManifestContent
from icepark.planning.walk import manifests_of, parallel_map, read_entries_table
from icepark.spec.manifests import DataFile, FileContent, FileFormat
from icepark.spec.schema import Schema
from icepark.table.inspect.arrow_values import empty_table
from icepark.table.inspect.context import InspectContext
from icepark.table.inspect.schemas import (
    data_file_struct,
    position_deletes_schema,
    table_partition_type,
)

__all__ = ["position_deletes_table"]


def position_deletes_table(
    ctx: InspectContext, snapshot_id: int | None = None, **kw: Any
) -> pa.Table:
    """The deleted positions of the snapshot (the current one by default)."""
    md = ctx.metadata
    schema = position_deletes_schema(md)
    arrow_schema = schema_to_arrow(schema, include_field_ids=False)
    snapshot = ctx.snapshot(snapshot_id, **kw)
    ptype = table_partition_type(md)
    struct = data_file_struct(ptype)
    arrow_type = type_to_arrow(struct, include_field_ids=False)
    assert isinstance(arrow_type, pa.StructType)
    manifests = manifests_of(ctx.io, snapshot, ManifestContent.DELETES)
    entries = read_entries_table(ctx.io, manifests, arrow_type, struct, ctx.specs, live_only=True)
    files = entries.column("data_file").combine_chunks() if entries.num_rows else None
    if files is None:
        return empty_table(arrow_schema)
    rows = files.to_pylist()
    wanted = [i for i, r in enumerate(rows) if r["content"] == int(FileContent.POSITION_DELETES)]
    file_schema = Schema(
        schema.find_field("file_path"), schema.find_field("pos"), schema.find_field("row")
    )
    cache = DeleteCache()

    def read(i: int) -> pa.Table:
        return _read_one(ctx, rows[i], file_schema, cache)

    parts = list(parallel_map(read, wanted))
    tables = []
    for i, part in zip(wanted, parts):
        k = part.num_rows
        same = pa.array(np.full(k, i, dtype=np.int64))
        columns: dict[str, Any] = {
            "file_path": part.column("file_path"),
            "pos": part.column("pos"),
            "row": part.column("row"),
        }
        if "partition" in arrow_schema.names:
            columns["partition"] = files.field("partition").take(same)
        columns["spec_id"] = files.field("spec_id").take(same)
        columns["delete_file_path"] = files.field("file_path").take(same)
        if "content_offset" in arrow_schema.names:
            columns["content_offset"] = files.field("content_offset").take(same)
            columns["content_size_in_bytes"] = files.field("content_size_in_bytes").take(same)
        arrays = []
        for f in arrow_schema:
            column = columns[f.name]
            if isinstance(column, pa.ChunkedArray):
                column = column.combine_chunks()
            arrays.append(column if column.type.equals(f.type) else column.cast(f.type))
        tables.append(pa.Table.from_arrays(arrays, schema=arrow_schema))
    return pa.concat_tables(tables) if tables else empty_table(arrow_schema)


def _read_one(
    ctx: InspectContext, row: dict[str, Any], file_schema: Schema, cache: DeleteCache
) -> pa.Table:
    arrow_schema = schema_to_arrow(file_schema, include_field_ids=False)
    delete_file = DataFile(
        content=FileContent.POSITION_DELETES,
        file_path=row["file_path"],
        file_format=FileFormat.parse(row["file_format"]),
        partition=(),
        record_count=row["record_count"],
        file_size_in_bytes=row["file_size_in_bytes"],
        referenced_data_file=row["referenced_data_file"],
        content_offset=row["content_offset"],
        content_size_in_bytes=row["content_size_in_bytes"],
        spec_id=row["spec_id"] or 0,
    )
    if delete_file.file_format == FileFormat.PUFFIN:
        target = delete_file.referenced_data_file or ""
        positions = cache.positions(ctx.io, delete_file, target)
        k = len(positions)
        return pa.Table.from_arrays(
            [
                pa.repeat(pa.scalar(target, pa.string()), k),
                pa.array(positions, pa.int64()),
                pa.nulls(k, arrow_schema.field("row").type),
            ],
            schema=arrow_schema,
        )
    read = read_file_table(ctx.io, delete_file, file_schema)
    return pa.Table.from_arrays(read.columns, schema=arrow_schema)
