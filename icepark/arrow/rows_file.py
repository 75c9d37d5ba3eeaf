"""One Arrow table of rows as one file of a given format, for the small files Iceberg keeps
besides data files (position deletes, partition statistics): Parquet with the Arrow schema's
field ids (zstd, as Java's writers default to), Avro and ORC through the data writers' file
classes (:class:`~icepark.arrow.avro_writer.AvroOpenFile`,
:class:`~icepark.arrow.orc_writer.OrcOpenFile`), which take the Iceberg schema."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.arrow.avro_writer import AvroOpenFile
from icepark.arrow.metrics import MetricsCollector, MetricsConfig
from icepark.arrow.orc_writer import OrcOpenFile
from icepark.io.fileio import FileIO
from icepark.spec.manifests import FileFormat
from icepark.spec.schema import Schema
from icepark.spec.sorting import UNSORTED_ORDER

__all__ = ["write_rows"]


def write_rows(
    io: FileIO,
    location: str,
    file_format: FileFormat,
    table: pa.Table,
    schema: Schema,
    props: Mapping[str, str],
) -> int:
    """Write ``table`` (whose Arrow schema carries ``schema``'s field ids for Parquet) as the
    file at ``location``; its size. A failed write leaves no file."""
    if file_format == FileFormat.PARQUET:
        with io.new_output(location).create() as stream:
            pq.write_table(table, stream, compression="zstd")
        return io.new_input(location).length()
    out: AvroOpenFile | OrcOpenFile
    if file_format == FileFormat.AVRO:
        out = AvroOpenFile(io, location, schema, props)
    else:
        config = MetricsConfig.from_properties(props, schema, UNSORTED_ORDER)
        out = OrcOpenFile(io, location, schema, props, MetricsCollector(schema, config))
    try:
        out.write(table)
    except BaseException:
        out.abort()
        raise
    closed = out.close()
    return closed if isinstance(closed, int) else closed[0]
