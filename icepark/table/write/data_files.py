"""Writing Arrow data into a table's data files, and the copy-on-write rewrite of a file."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.arrow.deletes import read_task
from icepark.arrow.expressions import to_arrow_expression
from icepark.arrow.writer import write_data_files
from icepark.expressions import BooleanExpression, bind
from icepark.io import FileIO
from icepark.manifest import DataFile
from icepark.planning.planner import FileScanTask
from icepark.spec.metadata import TableMetadata

__all__ = ["ArrowData", "write_arrow", "rewrite_without"]

ArrowData = pa.Table | pa.RecordBatchReader | Iterable[pa.RecordBatch]


def write_arrow(
    io: FileIO,
    metadata: TableMetadata,
    data: Any,
    task_id: int = 0,
    *,
    write_uuid: str | None = None,
    attempt_id: int = 0,
    file_format: str | None = None,
) -> list[DataFile]:
    """Write ``data`` as data files of the table's current schema, spec and sort order, named
    by ``write_uuid`` (a new one when None), ``task_id`` and ``attempt_id``, in
    ``file_format`` (default: ``write.format.default``)."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    return write_data_files(
        io,
        table_location=metadata.location,
        schema=metadata.schema(),
        spec=metadata.spec(),
        sort_order=metadata.sort_order(),
        properties=metadata.properties,
        data=data,
        write_uuid=write_uuid or str(uuid.uuid4()),
        task_id=task_id,
        attempt_id=attempt_id,
        file_format=file_format,
    )


def rewrite_without(
    io: FileIO,
    metadata: TableMetadata,
    task: FileScanTask,
    row_filter: BooleanExpression,
    case_sensitive: bool = True,
) -> list[DataFile]:
    """Copy-on-write: rewrite the task's data file (its deletes applied) keeping the rows the
    filter does not select (rows where it is false or null), in the file's own spec."""
    schema = metadata.schema()
    spec = metadata.spec_by_id(task.spec_id)
    bound = bind(schema, row_filter, case_sensitive)
    batches = read_task(
        io,
        task,
        projected_schema=schema,
        table_schema=schema,
        partition_spec=spec,
        name_mapping=metadata.name_mapping(),
    )
    names = {f.field_id: f.name for f in schema.fields}

    def column(field_id: int) -> pc.Expression:
        path = schema.find_column_name(field_id) or names[field_id]
        return pc.field(*path.split("."))

    selects = to_arrow_expression(bound, column)
    keep = selects.is_null() | ~selects  # Kleene logic: a null (unknown) match keeps the row
    kept = (pa.Table.from_batches([b]).filter(keep) for b in batches)
    remaining = [t for t in kept if t.num_rows]
    if not remaining:
        return []
    target_spec_metadata = metadata
    if spec is not None and spec.spec_id != metadata.default_spec_id:
        from icepark.spec.builder import MetadataBuilder
        from icepark.spec.updates import SetDefaultSpecUpdate

        target_spec_metadata = (
            MetadataBuilder(metadata).apply(SetDefaultSpecUpdate(spec.spec_id)).build()
        )
    return write_arrow(io, target_spec_metadata, pa.concat_tables(remaining))
