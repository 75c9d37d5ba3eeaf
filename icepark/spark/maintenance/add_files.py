"""``add_files`` on Spark: register existing Parquet files, their footers read by executors.

Java's ``add_files`` procedure. The source is a folder or file (Hive-style ``key=value``
folders give partition values) or the name of a table Spark knows (its input files are
added; ``key=value`` folders in their paths give partition values). Finding the files, the
name mapping, the checks and the commit are :mod:`icepark.table.maintenance.add_files`'s; the
footers are read in Spark tasks (:func:`~icepark.table.maintenance.add_files.describe_file`), a
task per 64 files.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import SparkSession

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.manifest import DataFile
from icepark.spark.runtime import TASK_PAYLOAD, task_frame
from icepark.spark.tables import resolve_table
from icepark.spec.metadata import TableMetadata
from icepark.spec.name_mapping import NameMapping
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table import Table
from icepark.table.maintenance.add_files import (
    AddFilesResult,
    FoundFile,
    describe_file,
    find_files,
    partition_values_from_path,
)
from icepark.table.maintenance.add_files import (
    add_files as add_files_to_table,
)

__all__ = ["add_files"]

_PER_TASK = 64


class _Describe:
    """The function ``mapInArrow`` runs: describe the pickled files of each input row."""

    def __init__(self, io: FileIO, metadata: TableMetadata, mapping: NameMapping) -> None:
        self.io, self.metadata, self.mapping = io, metadata, mapping

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column(TASK_PAYLOAD).to_pylist():
                found = pickle.loads(payload)
                files = [describe_file(self.io, self.metadata, f, self.mapping) for f in found]
                yield pa.RecordBatch.from_pydict(
                    {"files": [pickle.dumps(files)]}, schema=pa.schema([("files", pa.binary())])
                )


def _describer(spark: SparkSession, table: Table) -> Any:
    def describe(
        metadata: TableMetadata, found: list[FoundFile], mapping: NameMapping
    ) -> list[tuple[DataFile, bool]]:
        chunks = [found[i : i + _PER_TASK] for i in range(0, len(found), _PER_TASK)]
        frame = task_frame(spark, [pickle.dumps(c) for c in chunks])
        out = frame.mapInArrow(_Describe(table.io, metadata, mapping), "files binary").collect()
        return [f for row in out for f in pickle.loads(row["files"])]

    return describe


def _local(location: str) -> str:
    """A Spark input file URI as icepark names it (``file:/x`` is ``/x``)."""
    if location.startswith("file:"):
        rest = location[len("file:") :]
        if rest.startswith("//"):
            rest = rest[2:]
            rest = rest[rest.index("/") :] if "/" in rest else "/"
        return unquote(rest)
    if location.startswith("s3a://"):
        return "s3://" + location[len("s3a://") :]
    return location


def _table_files(spark: SparkSession, table: Table, source: str) -> list[FoundFile]:
    try:
        files = spark.table(source).inputFiles()
    except Exception as exc:
        raise ValidationError(
            f"Cannot add files from {source!r}: not a table Spark knows ({exc})"
        ) from None
    metadata = table.metadata
    out = []
    for uri in files:
        location = _local(uri)
        folders = location.split("/")[:-1]
        values = partition_values_from_path(metadata.spec(), metadata.schema(), folders, location)
        out.append(FoundFile(location, table.io.new_input(location).length(), values))
    return out


def _is_path(source: str) -> bool:
    return "/" in source or "://" in source or source.endswith(".parquet")


def _filtered(
    table: Table, sources: Sequence[str], partition_filter: Mapping[str, str]
) -> list[FoundFile]:
    """The files of the ``key=value`` folders matching every entry of ``partition_filter``
    (Java's ``partition_filter``: keys are partition columns of the table)."""
    spec = table.metadata.spec()
    names = [f.name for f in spec.fields]
    if not names:
        raise ValidationError(
            f"Cannot use a partition filter when importing to unpartitioned table {table.name}"
        )
    unknown = sorted(set(partition_filter) - set(names))
    if unknown:
        raise ValidationError(
            f"Cannot add files to table {table.name} with a partition filter on non-partition "
            f"columns {unknown} (partition columns: {names})"
        )
    wanted = {f"{k}={v}" for k, v in partition_filter.items()}
    found = find_files(table.io, spec, table.metadata.schema(), sources)
    kept = [f for f in found if wanted <= set(f.location.split("/")[:-1])]
    if not kept:
        raise ValidationError(
            f"Cannot find any matching partitions in {list(sources)} for {dict(partition_filter)}"
        )
    return kept


def add_files(
    spark: SparkSession,
    table: Table | str,
    source_path_or_table: str | Sequence[str],
    check_duplicate_files: bool = True,
    *,
    catalog: Any = None,
    branch: str = MAIN_BRANCH,
    partition_filter: Mapping[str, str] | None = None,
) -> AddFilesResult:
    """Register existing Parquet files in ``table`` without rewriting them, as one ``append``
    snapshot (Java's ``add_files`` procedure); their footers are read in Spark tasks. The
    files become the table's: they are never copied, and never deleted by this call whatever
    fails. See :mod:`icepark.table.maintenance.add_files` for how columns, partition values
    and metrics are found.

    Args:
        spark: the session (classic or Spark Connect).
        table: a Table, or a name looked up in ``catalog``.
        source_path_or_table: a folder or Parquet file (or several); Hive-style
            ``key=value`` folders give partition values. Or the name of one table Spark
            knows (e.g. a Hive table), whose input files are added.
        check_duplicate_files: refuse files the branch already references or that are
            given twice.
        catalog: a Catalog, a configured catalog name or a mapping of catalog properties
            where ``table`` is a name (default: ``icepark.load_catalog()``).
        branch: the branch committed to (default ``main``).
        partition_filter: with paths, add only the files of the ``key=value`` folders that
            match every entry (keys are the table's partition fields).

    Returns:
        Java's output columns: ``added_files_count`` and ``changed_partition_count``.

    Raises:
        ValidationError: no Parquet file is found, a file's columns or partition values do
            not fit the table, a file is already referenced (with
            ``check_duplicate_files``), a partition filter that does not fit, or a source
            that is neither paths nor a table Spark knows; nothing is committed.
        NoSuchTableError: the table does not exist.
        CommitFailedError: a concurrent commit conflicts.
    """
    resolved = resolve_table(table, catalog)
    describe = _describer(spark, resolved)
    sources = (
        [source_path_or_table]
        if isinstance(source_path_or_table, str)
        else list(source_path_or_table)
    )
    if all(_is_path(s) for s in sources):
        found = None
        if partition_filter:
            found = _filtered(resolved, sources, partition_filter)
        return add_files_to_table(
            resolved, sources, check_duplicate_files, branch=branch, describe=describe, found=found
        )
    if len(sources) != 1:
        raise ValidationError("Give one table name, or paths, to add files from")
    if partition_filter:
        raise ValidationError(
            f"A partition filter applies to files added from paths, not from table {sources[0]}"
        )
    found = _table_files(spark, resolved, sources[0])
    return add_files_to_table(
        resolved,
        [],
        check_duplicate_files,
        branch=branch,
        describe=describe,
        found=found,
    )
