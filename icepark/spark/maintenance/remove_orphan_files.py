"""Orphan file removal on Spark, for tables with millions of files.

The same operation as
:func:`icepark.table.maintenance.remove_orphan_files.remove_orphan_files` (same arguments,
checks, hidden-path rules, URI equivalences and prefix-mismatch modes), with the two costly
steps spread over the cluster, as Java's ``DeleteOrphanFilesSparkAction``:

* **listing**: the driver lists the top of the location (at most 3 levels, and only folders
  with at most 10 sub-folders); every folder below that is listed recursively by a Spark task
  through the table's FileIO;
* **the referenced files**: the driver reads the manifest lists (and knows the metadata,
  manifest-list and statistics files); the manifests are read by Spark tasks, each giving the
  paths of its live entries;
* **comparing**: a left outer join of the listed files with the referenced ones on the path,
  grouped per listed file: an orphan has no referenced file of that path, or (mode
  ``delete``) only ones of another scheme or authority.

The orphans are collected on the driver and deleted there in parallel (a failed delete is
reported, never raised).
"""

from __future__ import annotations

import datetime as dt
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.manifest import ManifestFile
from icepark.planning.reachable import content_files, referenced_files
from icepark.spark.runtime import TASK_PAYLOAD, arrow_frame, default_parallelism, task_frame
from icepark.spark.tables import resolve_table
from icepark.table import Table
from icepark.table.maintenance.remove_orphan_files import (
    OrphanOptions,
    PrefixMismatchError,
    Progress,
    RemoveOrphanFilesResult,
    delete_orphans,
    hidden_path_filter,
    orphan_options,
    to_file_uri,
)

__all__ = ["remove_orphan_files"]

MAX_DRIVER_LISTING_DEPTH = 3
MAX_DRIVER_LISTING_DIRECT_SUB_DIRS = 10

_URI_FIELDS = [
    T.StructField("scheme", T.StringType()),
    T.StructField("authority", T.StringType()),
    T.StructField("path", T.StringType()),
]
_ACTUAL = T.StructType(
    [T.StructField("uri", T.StringType()), *_URI_FIELDS, T.StructField("size", T.LongType())]
)
_VALID = T.StructType(_URI_FIELDS)
_URI_ARROW = [("scheme", pa.string()), ("authority", pa.string()), ("path", pa.string())]
_ACTUAL_ARROW = pa.schema([("uri", pa.string()), *_URI_ARROW, ("size", pa.int64())])
_VALID_ARROW = pa.schema(_URI_ARROW)
_BATCH_ROWS = 8192

_Uri = tuple[str | None, str | None, str]


def _uri(location: str, options: OrphanOptions) -> _Uri:
    u = to_file_uri(location, options.equal_schemes, options.equal_authorities)
    return u.scheme, u.authority, u.path


# -- listing -----------------------------------------------------------------------------------


class _Lister:
    """Lists a folder of the table's file system; picklable (it goes to the tasks)."""

    def __init__(self, io: FileIO, options: OrphanOptions) -> None:
        self.io = io
        self.options = options
        self.root = to_file_uri(options.location.rstrip("/") + "/").path

    def _hidden(self, location: str) -> bool:
        path = to_file_uri(location).path
        relative = path[len(self.root) :] if path.startswith(self.root) else path
        return hidden_path_filter(self.options.partition_names)(relative)

    def _row(self, location: str, size: int) -> tuple[Any, ...]:
        return (location, *_uri(location, self.options), size)

    def files_under(self, folders: Iterable[str]) -> Iterator[tuple[Any, ...]]:
        """Every old-enough, visible file below ``folders`` (recursively)."""
        for folder in folders:
            for entry in self.io.list_prefix(folder):
                if self._hidden(entry.location):
                    continue
                modified = entry.last_modified_ms
                if modified is None or modified < self.options.older_than_ms:
                    yield self._row(entry.location, entry.size)

    def top(self) -> tuple[list[tuple[Any, ...]], list[str]]:
        """The files the driver lists itself, and the folders left for the tasks."""
        import pyarrow.fs as pafs

        location = self.options.location.rstrip("/")
        fs, fs_path = self.io.filesystem(location)
        if not location.endswith(fs_path):  # cannot map paths back: list everything here
            return list(self.files_under(iter([location]))), []
        prefix = location[: len(location) - len(fs_path)]
        files: list[tuple[Any, ...]] = []
        folders: list[str] = []

        def walk(path: str, depth: int) -> None:
            if depth <= 0:
                folders.append(prefix + path)
                return
            selector = pafs.FileSelector(path, recursive=False, allow_not_found=True)
            subdirs = []
            for info in fs.get_file_info(selector):
                here = prefix + info.path
                if self._hidden(here):
                    continue
                if info.type == pafs.FileType.Directory:
                    subdirs.append(info.path)
                elif info.type == pafs.FileType.File:
                    modified = None if info.mtime_ns is None else info.mtime_ns // 1_000_000
                    if modified is None or modified < self.options.older_than_ms:
                        files.append(self._row(here, int(info.size)))
            if len(subdirs) > MAX_DRIVER_LISTING_DIRECT_SUB_DIRS:
                folders.extend(prefix + d for d in subdirs)
                return
            for d in subdirs:
                walk(d, depth - 1)

        walk(fs_path, MAX_DRIVER_LISTING_DEPTH)
        return files, folders


def _listed(files: DataFrame, options: OrphanOptions) -> DataFrame:
    """The candidates of a given file list, as Java's ``filteredCompareToFileList``: the
    files whose path starts with the location and that were last modified before
    ``older_than`` (no hidden-path rule: the list is taken as given)."""
    fields = {f.name: f.dataType for f in files.schema.fields}
    for name, kind in (("file_path", T.StringType), ("last_modified", T.TimestampType)):
        if name not in fields:
            raise ValidationError(f"Invalid file list: no {name} column (it has {list(fields)})")
        if not isinstance(fields[name], kind):
            raise ValidationError(
                f"Invalid {name} column: {fields[name].simpleString()} is not a "
                f"{'string' if name == 'file_path' else 'timestamp'}"
            )
    older = F.timestamp_millis(F.lit(options.older_than_ms))
    kept = files.where(
        F.col("file_path").startswith(options.location) & (F.col("last_modified") < older)
    )
    return kept.select("file_path").mapInArrow(_ListedRows(options), _ACTUAL)


class _ListedRows:
    """A file list's paths as listed rows (in a task); picklable."""

    def __init__(self, options: OrphanOptions) -> None:
        self.options = options

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def rows() -> Iterator[tuple[Any, ...]]:
            for batch in batches:
                for path in batch.column(0).to_pylist():
                    if path is not None:
                        yield (path, *_uri(path, self.options), None)

        yield from _arrow_rows(rows(), _ACTUAL_ARROW)


# -- referenced files --------------------------------------------------------------------------


class _ManifestPaths:
    """The live files of manifests (in a task)."""

    def __init__(self, io: FileIO, options: OrphanOptions) -> None:
        self.io = io
        self.options = options

    def __call__(self, manifests: Iterable[ManifestFile]) -> Iterator[_Uri]:
        for manifest in manifests:
            for path, _, _ in content_files(self.io, [manifest], workers=1):
                yield _uri(path, self.options)


# -- the operation -----------------------------------------------------------------------------


def _parallelism(spark: SparkSession, items: int) -> int:
    return max(1, min(items, 4 * default_parallelism(spark)))


def _arrow_rows(rows: Iterable[Sequence[Any]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Row tuples as record batches of ``schema`` (at most ``_BATCH_ROWS`` rows each)."""
    chunk: list[Sequence[Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= _BATCH_ROWS:
            yield pa.RecordBatch.from_pylist([dict(zip(schema.names, r)) for r in chunk], schema)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist([dict(zip(schema.names, r)) for r in chunk], schema)


class _RowsOf:
    """The function ``mapInArrow`` runs: the rows ``produce`` makes of each pickled payload."""

    def __init__(self, produce: Callable[[Iterable[Any]], Iterator[Any]], schema: pa.Schema):
        self.produce = produce
        self.schema = schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def values() -> Iterator[Any]:
            for batch in batches:
                for payload in batch.column(TASK_PAYLOAD).to_pylist():
                    yield pickle.loads(payload)

        yield from _arrow_rows(self.produce(values()), self.schema)


def _frame(
    spark: SparkSession,
    rows: Sequence[Sequence[Any]],
    schema: pa.Schema,
    spark_schema: T.StructType,
    inputs: Sequence[Any],
    produce: Callable[[Iterable[Any]], Iterator[Any]],
) -> DataFrame:
    """``rows`` (made on the driver) and the rows Spark tasks make of ``inputs``."""
    known = arrow_frame(spark, pa.Table.from_batches(list(_arrow_rows(rows, schema)), schema))
    if not inputs:
        return known
    tasks = task_frame(
        spark, [pickle.dumps(i) for i in inputs], partitions=_parallelism(spark, len(inputs))
    )
    return known.unionByName(tasks.mapInArrow(_RowsOf(produce, schema), spark_schema))


def remove_orphan_files(
    spark: SparkSession,
    table: Table | str,
    older_than: int | dt.datetime | dt.date | None = None,
    location: str | None = None,
    dry_run: bool = False,
    equal_schemes: Mapping[str, str] | None = None,
    equal_authorities: Mapping[str, str] | None = None,
    prefix_mismatch_mode: str = "error",
    *,
    allow_recent: bool = False,
    catalog: Any = None,
    progress: Progress | None = None,
    file_list: DataFrame | None = None,
) -> RemoveOrphanFilesResult:
    """Delete the files under ``table``'s location that none of its metadata references and
    that were last modified before ``older_than``, listing and comparing on Spark (Java's
    ``remove_orphan_files`` procedure, for tables with millions of files). Arguments,
    checks and results are those of
    :meth:`~icepark.table.Table.remove_orphan_files`; see the module docstring for what runs
    where.

    Args:
        spark: the session (classic or Spark Connect).
        table: a Table, or a name looked up in ``catalog``.
        older_than: only files last modified before this (epoch ms, datetime or date) are
            candidates; default 3 days ago. Less than 24 hours ago is refused unless
            ``allow_recent``: a write in flight has files no metadata references yet.
        location: the folder to clean (default: the table's location); it must be inside
            the table's location.
        dry_run: find the orphans and delete nothing.
        equal_schemes: schemes to treat as one, as Java's ``equal_schemes``
            (``{"s3a,s3n": "s3"}``; ``s3a`` and ``s3n`` are ``s3`` already).
        equal_authorities: authorities (buckets, hosts) to treat as one, the same way.
        prefix_mismatch_mode: what to do with a listed file referenced only under another
            scheme or authority: ``"error"`` (refuse), ``"ignore"`` (keep it) or
            ``"delete"``.
        allow_recent: allow an ``older_than`` less than 24 hours ago.
        catalog: a Catalog, a configured catalog name or a mapping of catalog properties
            where ``table`` is a name (default: ``icepark.load_catalog()``).
        progress: called with ``(done, total)`` as orphans are deleted.
        file_list: the files to consider instead of listing the location (Java's
            ``compareToFileList``, the procedure's ``file_list_view``): a DataFrame with a
            string column ``file_path`` and a timestamp column ``last_modified``; only its
            files under ``location`` (a prefix of the path as written) last modified before
            ``older_than`` are candidates. Their sizes are unknown (counted as 0).

    Returns:
        The orphans found (``orphan_file_locations``, ``orphan_bytes``) and what was deleted
        (``deleted``) or failed (``failed``, path to reason); as a sequence, the paths
        deleted (on a dry run, the orphans). A failed delete is reported, never raised.

    Raises:
        ValidationError: ``gc.enabled`` is false, ``older_than`` is in the future or too
            recent, ``location`` is outside the table, or the mode is unknown.
        PrefixMismatchError: (a ValidationError) with mode ``"error"``, listed files match
            referenced ones but for their scheme or authority; nothing is deleted.
        NoSuchTableError: the table does not exist.
    """
    resolved = resolve_table(table, catalog)
    options = orphan_options(
        resolved,
        older_than,
        location,
        equal_schemes,
        equal_authorities,
        prefix_mismatch_mode,
        allow_recent,
    )
    if file_list is not None:
        actual = _listed(file_list, options)
    else:
        lister = _Lister(resolved.io, options)
        top_files, folders = lister.top()
        actual = _frame(spark, top_files, _ACTUAL_ARROW, _ACTUAL, folders, lister.files_under)

    resolved.refresh()  # the metadata as it is after the listing was planned
    found = referenced_files(
        resolved.io,
        resolved.metadata,
        metadata_location=resolved.metadata_location,
        read_content=False,
    )
    small = [_uri(p, options) for p in found.paths()]
    manifests = list(found.manifests.values())
    paths = _ManifestPaths(resolved.io, options)
    valid = _frame(spark, small, _VALID_ARROW, _VALID, manifests, paths).dropDuplicates()

    def matches(valid_part: str, actual_part: str) -> Any:
        v, a = F.col(f"v.{valid_part}"), F.col(f"a.{actual_part}")
        return F.coalesce(v.isNull() | (v == "") | F.lower(v).eqNullSafe(F.lower(a)), F.lit(False))

    joined = actual.alias("a").join(valid.alias("v"), F.col("a.path") == F.col("v.path"), "left")
    same = matches("scheme", "scheme") & matches("authority", "authority")
    referenced = F.col("v.path").isNotNull()
    # one job: per listed file, whether a referenced file has its path, whether one matches
    # in scheme and authority too, and (to name a mismatch) one referenced scheme/authority;
    # only the files no referenced file matches come back to the driver
    unmatched = (
        joined.groupBy("a.uri", "a.size", "a.scheme", "a.authority")
        .agg(
            F.max(referenced).alias("referenced"),
            F.max(referenced & same).alias("matched"),
            F.first("v.scheme", ignorenulls=True).alias("valid_scheme"),
            F.first("v.authority", ignorenulls=True).alias("valid_authority"),
        )
        .where(~F.coalesce(F.col("matched"), F.lit(False)))
        .collect()
    )
    mode = options.prefix_mismatch_mode
    mismatched = [r for r in unmatched if r.referenced]
    if mismatched and mode == "error":
        pairs = sorted(
            {(str(r.valid_scheme), str(r.scheme)) for r in mismatched if r.valid_scheme != r.scheme}
            | {
                (str(r.valid_authority), str(r.authority))
                for r in mismatched
                if r.valid_authority != r.authority
            }
        )
        raise PrefixMismatchError(
            "Unable to determine whether certain files are orphan: metadata references "
            "files that match listed files except for authority/scheme. Say which are "
            "equal with equal_schemes and equal_authorities, or set prefix_mismatch_mode "
            "to 'ignore' or 'delete'. Conflicting (referenced, listed) authorities/schemes: "
            + ", ".join(f"({a}, {b})" for a, b in pairs)
        )
    rows = [r for r in unmatched if not r.referenced or mode == "delete"]
    orphans = sorted(r.uri for r in rows)
    sizes = {r.uri: int(r.size or 0) for r in rows}
    return delete_orphans(resolved, orphans, sizes, dry_run, progress)
