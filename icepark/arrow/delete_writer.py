"""Writing delete files: position delete files (v2), deletion vectors (v3) and equality
delete files.

* A position delete file holds the reserved ``file_path`` (2147483546) and ``pos``
  (2147483545) columns, sorted by path then position, in the partition of the data files it
  references; its bounds on ``file_path`` let readers skip it for other files. It is Parquet,
  Avro or ORC, as ``write.delete.format.default`` (else ``write.format.default``) says.
* Deletion vectors for several data files go into one Puffin file, one
  ``deletion-vector-v1`` blob each (snapshot id and sequence number -1, properties
  ``referenced-data-file`` and ``cardinality``, no compression); each becomes its own
  manifest entry with ``referenced_data_file``, ``content_offset`` and
  ``content_size_in_bytes``.
* An equality delete file holds the rows to delete (any columns, at least the equality
  columns) with the table's field ids, written like data files (partition fan-out, metrics)
  and then marked as equality deletes on ``equality_ids``.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from icepark.arrow.rows_file import write_rows
from icepark.arrow.writer import data_file_format, data_location, write_data_files
from icepark.io.fileio import FileIO
from icepark.puffin.dv import serialize_deletion_vector
from icepark.puffin.file import DELETION_VECTOR_V1, PuffinWriter
from icepark.spec.conversions import to_bytes
from icepark.spec.manifests import DataFile, FileContent, FileFormat
from icepark.spec.metadata import TableMetadata
from icepark.spec.metadata_columns import (
    DELETE_FILE_PATH_FIELD_ID,
    DELETE_FILE_POS_FIELD_ID,
    POS_FIELD_ID,
)
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.sorting import UNSORTED_ORDER
from icepark.spec.types import LongType, NestedField, StringType

__all__ = [
    "write_position_delete_file",
    "write_deletion_vectors",
    "write_equality_delete_files",
]

_POSITION_SCHEMA = pa.schema(
    [
        pa.field(
            "file_path",
            pa.string(),
            nullable=False,
            metadata={b"PARQUET:field_id": str(DELETE_FILE_PATH_FIELD_ID).encode()},
        ),
        pa.field(
            "pos",
            pa.int64(),
            nullable=False,
            metadata={b"PARQUET:field_id": str(DELETE_FILE_POS_FIELD_ID).encode()},
        ),
    ]
)


_POSITION_ICEBERG_SCHEMA = Schema(
    NestedField(DELETE_FILE_PATH_FIELD_ID, "file_path", StringType(), required=True),
    NestedField(DELETE_FILE_POS_FIELD_ID, "pos", LongType(), required=True),
)


def _folder(metadata: TableMetadata, spec_id: int, partition: tuple[Any, ...]) -> str:
    base = data_location(metadata.location, metadata.properties)
    spec = metadata.spec_by_id(spec_id)
    if spec is None or spec.is_unpartitioned:
        return base
    return f"{base}/{spec.partition_to_path(partition, metadata.schema())}"


def write_position_delete_file(
    io: FileIO,
    metadata: TableMetadata,
    spec_id: int,
    partition: tuple[Any, ...],
    deletes: Mapping[str, np.ndarray],
) -> DataFile | None:
    """One position delete file for ``deletes`` (data file path -> positions), all in one
    partition; None when there is nothing to delete."""
    paths = sorted(p for p, pos in deletes.items() if len(pos))
    if not paths:
        return None
    positions = [np.unique(np.asarray(deletes[p], dtype=np.int64)) for p in paths]
    table = pa.table(
        [
            pa.array([p for p, pos in zip(paths, positions) for _ in range(len(pos))], pa.string()),
            pa.array(np.concatenate(positions), pa.int64()),
        ],
        schema=_POSITION_SCHEMA,
    )
    file_format = data_file_format(metadata.properties, delete=True)
    extension = file_format.value.lower()
    location = f"{_folder(metadata, spec_id, partition)}/{uuid.uuid4()}-deletes.{extension}"
    size = write_rows(
        io, location, file_format, table, _POSITION_ICEBERG_SCHEMA, metadata.properties
    )
    n = table.num_rows
    lo, hi = int(min(int(p[0]) for p in positions)), int(max(int(p[-1]) for p in positions))
    ids = (DELETE_FILE_PATH_FIELD_ID, DELETE_FILE_POS_FIELD_ID)
    return DataFile(
        content=FileContent.POSITION_DELETES,
        file_path=location,
        file_format=file_format,
        partition=tuple(partition),
        record_count=n,
        file_size_in_bytes=size,
        value_counts=dict.fromkeys(ids, n),
        null_value_counts=dict.fromkeys(ids, 0),
        lower_bounds={
            DELETE_FILE_PATH_FIELD_ID: to_bytes(StringType(), paths[0]),
            DELETE_FILE_POS_FIELD_ID: to_bytes(LongType(), lo),
        },
        upper_bounds={
            DELETE_FILE_PATH_FIELD_ID: to_bytes(StringType(), paths[-1]),
            DELETE_FILE_POS_FIELD_ID: to_bytes(LongType(), hi),
        },
        spec_id=spec_id,
    )


def write_deletion_vectors(
    io: FileIO,
    metadata: TableMetadata,
    vectors: Sequence[tuple[DataFile, np.ndarray]],
) -> list[DataFile]:
    """One Puffin file holding a DV per data file (``(data file, deleted positions)``);
    returns a delete-file entry per DV (empty vectors are skipped)."""
    items = [(f, np.unique(np.asarray(p, dtype=np.int64))) for f, p in vectors if len(p)]
    if not items:
        return []
    writer = PuffinWriter({"created-by": "icepark"})
    metas = []
    for f, positions in items:
        metas.append(
            writer.add(
                DELETION_VECTOR_V1,
                serialize_deletion_vector(positions.tolist()),
                fields=[POS_FIELD_ID],
                properties={
                    "referenced-data-file": f.file_path,
                    "cardinality": str(len(positions)),
                },
            )
        )
    location = (
        f"{data_location(metadata.location, metadata.properties)}/{uuid.uuid4()}-deletes.puffin"
    )
    size = writer.finish(io.new_output(location))
    return [
        DataFile(
            content=FileContent.POSITION_DELETES,
            file_path=location,
            file_format=FileFormat.PUFFIN,
            partition=tuple(f.partition),
            record_count=len(positions),
            file_size_in_bytes=size,
            referenced_data_file=f.file_path,
            content_offset=meta.offset,
            content_size_in_bytes=meta.length,
            spec_id=f.spec_id or 0,
        )
        for (f, positions), meta in zip(items, metas)
    ]


def write_equality_delete_files(
    io: FileIO,
    metadata: TableMetadata,
    rows: pa.Table,
    equality_ids: Sequence[int],
    spec: PartitionSpec | None = None,
) -> list[DataFile]:
    """Equality delete files matching on ``equality_ids`` for ``rows`` (columns named as the
    table's, holding at least the equality columns and the spec's partition source columns;
    the files keep only those), partitioned by ``spec`` (default: the table's current one;
    a delete applies only to data files of its own spec and partition, or to all when its
    spec is unpartitioned)."""
    if rows.num_rows == 0:
        return []
    schema = metadata.schema()
    spec = spec or metadata.spec()
    ids = {*equality_ids, *(f.source_id for f in spec.fields)}
    names = [n for fid in sorted(ids) if (n := schema.find_column_name(fid)) is not None]
    pruned = schema.select(names)
    tops = [f.name for f in pruned.fields]
    files = write_data_files(
        io,
        table_location=metadata.location,
        schema=pruned,
        spec=spec,
        sort_order=UNSORTED_ORDER,
        properties=metadata.properties,
        data=rows.select(tops),
        write_uuid=f"{uuid.uuid4()}-eq-deletes",
        task_id=0,
        file_format=data_file_format(metadata.properties, delete=True),
    )
    return [
        dataclasses.replace(
            f,
            content=FileContent.EQUALITY_DELETES,
            equality_ids=tuple(equality_ids),
            first_row_id=None,
            sort_order_id=None,
        )
        for f in files
    ]
