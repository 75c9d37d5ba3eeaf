"""Metadata tables on Spark: ``db.events.files`` and its fifteen siblings as DataFrames.

One rule decides what a name means, used by :func:`icepark.spark.read` and by the
``icepark`` data source alike (:func:`resolve_table_or_metadata`): as in Java, ``db.events.files``
is the table of that name if it exists, else the ``files`` metadata table of ``db.events``;
a table opened from a metadata file takes ``#files`` after the path (Java's spelling for
path-based tables).

The rows are computed on one machine by :mod:`icepark.table.inspect` (manifests read in
parallel, column-wise) and handed to Spark as Arrow, with Spark types from the metadata
table's Iceberg schema (:func:`~icepark.spark.types.to_spark_schema`, so the types are Java's:
``timestamp`` for commit times, ``map<int,bigint>`` for metrics, nested structs for
partitions and ``readable_metrics``). :func:`read_metadata_table` builds the DataFrame on the
driver; the data source's reader computes the table in its one task.

Time travel (``snapshot_id``/``as_of``/``ref``, or the data source's ``snapshot-id``,
``as-of-timestamp``, ``branch`` and ``tag`` options) applies where Java allows it; see
:mod:`icepark.table.inspect`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType as SparkStructType

from icepark.errors import NoSuchTableError, ValidationError
from icepark.expressions import BooleanExpression, as_filter
from icepark.spark.filters import to_spark_column
from icepark.spark.runtime import arrow_frame
from icepark.spark.types import cast_to_spark_arrow, spark_arrow_schema, to_spark_schema
from icepark.spec.schema import Schema
from icepark.table import Table
from icepark.table.inspect import (
    METADATA_TABLES,
    InspectContext,
    check_time_travel,
    metadata_batches,
    metadata_table,
    metadata_table_schema,
)

__all__ = [
    "MetadataTableReader",
    "metadata_schema",
    "metadata_source",
    "metadata_spark_schema",
    "read_metadata_table",
    "resolve_table_or_metadata",
]


def _context(table: Table) -> InspectContext:
    return InspectContext(table.io, table.metadata, table.metadata_location, table.name)


def resolve_table_or_metadata(table: Table | str, catalog: Any = None) -> tuple[Table, str | None]:
    """The table a name means and the metadata table asked for (None: the table itself).

    ``db.events.files`` is table ``db.events.files`` when it exists, else metadata table
    ``files`` of ``db.events``; a name that is neither raises the catalog's
    :class:`~icepark.errors.NoSuchTableError` for the name as given."""
    from icepark.spark.tables import resolve_table

    if isinstance(table, Table):
        return table, None
    try:
        return resolve_table(table, catalog), None
    except NoSuchTableError:
        base, _, last = table.rpartition(".")
        if not base or "." not in base.strip(".") or last.lower() not in METADATA_TABLES:
            raise
        try:
            return resolve_table(base, catalog), last.lower()
        except NoSuchTableError:
            raise NoSuchTableError(
                f"Table does not exist: {table} (nor {base}, whose {last.lower()} metadata "
                "table it would be)"
            ) from None


def _at(options: Mapping[str, str]) -> dict[str, Any]:
    opts = {k.lower(): v for k, v in options.items()}
    try:
        snapshot_id = int(opts["snapshot-id"]) if opts.get("snapshot-id") else None
        as_of = int(opts["as-of-timestamp"]) if opts.get("as-of-timestamp") else None
    except ValueError as exc:
        raise ValidationError(f"Invalid time travel option: {exc}") from None
    return {
        "snapshot_id": snapshot_id,
        "as_of": as_of,
        "ref": opts.get("branch") or opts.get("tag"),
    }


def metadata_schema(table: Table, name: str) -> Schema:
    """The Iceberg schema of metadata table ``name`` of ``table`` (with Java's docs)."""
    return metadata_table_schema(_context(table), name)


def metadata_spark_schema(table: Table, name: str) -> SparkStructType:
    """The Spark schema of metadata table ``name`` of ``table`` (Java's types)."""
    return to_spark_schema(metadata_schema(table, name), with_ids=False)


def _spark_arrow(
    table: Table, name: str, at: Mapping[str, Any]
) -> tuple[pa.Table, SparkStructType]:
    schema = metadata_spark_schema(table, name)
    rows = metadata_table(
        _context(table), name, at.get("snapshot_id"), ref=at.get("ref"), as_of=at.get("as_of")
    )
    target = spark_arrow_schema(schema)
    batches = [cast_to_spark_arrow(b, target) for b in rows.to_batches() if b.num_rows]
    return pa.Table.from_batches(batches, schema=target), schema


def _filled(arr: pa.Array) -> pa.Array:
    """``arr`` with a placeholder where a required child of a struct holds a null (under a
    null parent, so unseen): pyspark casts the Arrow table it is given, and Arrow refuses a
    null in a required field even there (a deleted ``row`` a delete file did not store)."""
    if not pa.types.is_struct(arr.type):
        return arr
    children = []
    for i, f in enumerate(arr.type):
        child = _filled(arr.field(i))
        if not f.nullable and child.null_count:
            child = child.fill_null(_placeholder(f.type))
        children.append(child)
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(arr.type), mask=mask)


def _placeholder(t: pa.DataType) -> pa.Scalar:
    if pa.types.is_struct(t):
        return pa.scalar({f.name: _placeholder(f.type).as_py() for f in t}, t)
    if pa.types.is_list(t) or pa.types.is_map(t) or pa.types.is_large_list(t):
        return pa.scalar([], t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(bytes(t.byte_width), t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    return pa.scalar(0, pa.int64()).cast(t)


def _placeholders(table: pa.Table) -> pa.Table:
    columns = []
    for column in table.columns:
        chunks = [_filled(c) for c in column.chunks]
        columns.append(pa.chunked_array(chunks, column.type))
    return pa.Table.from_arrays(columns, schema=table.schema)


def read_metadata_table(
    spark: SparkSession,
    table: Table,
    name: str,
    *,
    filter: str | BooleanExpression | None = None,
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    as_of: int | dt.datetime | dt.date | None = None,
    ref: str | None = None,
    case_sensitive: bool = True,
) -> DataFrame:
    """Metadata table ``name`` of ``table`` as a DataFrame; ``filter`` is an icepark filter
    over its columns (``"record_count > 100 and content = 0"``), ``columns`` a projection."""
    rows, _ = _spark_arrow(table, name, {"snapshot_id": snapshot_id, "as_of": as_of, "ref": ref})
    df = arrow_frame(spark, _placeholders(rows))
    if filter is not None:
        expr = as_filter(filter)
        condition = to_spark_column(
            expr, metadata_table_schema(_context(table), name), case_sensitive
        )
        if condition is not None:
            df = df.filter(condition)
    if columns is not None:
        df = df.select(*columns)
    return df


# -- the data source -------------------------------------------------------------------------


@dataclass(frozen=True)
class MetadataSource:
    """What a data source's options name: a table and one of its metadata tables."""

    table: Table
    name: str


def metadata_source(options: Mapping[str, str]) -> MetadataSource | None:
    """The metadata table the data source's options name, or None for a table's rows: the
    ``table`` option goes through :func:`resolve_table_or_metadata`, a ``path`` may end in
    ``#<metadata table>``."""
    from icepark.spark.tables import catalog_from_options

    opts = {k.lower(): v for k, v in options.items()}
    name = opts.get("table")
    if name:
        table, meta = resolve_table_or_metadata(name, catalog_from_options(options))
        return None if meta is None else MetadataSource(table, meta)
    path = opts.get("path") or ""
    base, hash_, meta = path.rpartition("#")
    if hash_ and meta.lower() in METADATA_TABLES:
        return MetadataSource(Table.from_metadata(base), meta.lower())
    return None


@dataclass
class _Whole(InputPartition):
    """The one task of a metadata table read."""

    index: int = 0


class MetadataTableReader(DataSourceReader):
    """Reads a metadata table in one task, which loads the table and computes the rows (so
    a view over it shows the table as it is when queried), as batches: the files and
    entries tables a part of their manifests at a time."""

    def __init__(self, options: Mapping[str, str], schema: SparkStructType) -> None:
        self.options = dict(options)
        self.schema = schema
        source = metadata_source(self.options)
        if source is None:
            raise ValidationError(f"Options name no metadata table: {self.options}")
        # refuse bad time travel now, on the driver, rather than in the task
        at = _at(self.options)
        check_time_travel(_context(source.table), source.name, **at)

    def partitions(self) -> list[InputPartition]:
        return [_Whole(0)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        source = metadata_source(self.options)
        assert source is not None
        at = _at(self.options)
        target = spark_arrow_schema(self.schema)
        # a part of the manifests at a time for the files and entries tables: the task of
        # a table of a million files holds about 300 MB, not the whole table's 1 GB
        for batch in metadata_batches(
            _context(source.table),
            source.name,
            at["snapshot_id"],
            ref=at["ref"],
            as_of=at["as_of"],
        ):
            if batch.num_rows:
                yield cast_to_spark_arrow(batch, target)
