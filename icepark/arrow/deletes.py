"""Applying row-level deletes to the rows of a data file (spec "Row-level Deletes").

A :class:`FileScanTask` carries the delete files that apply to its data file (the planner
assigns them by the spec's sequence-number rules). :func:`read_task` reads the
data file with its ``_pos`` and the equality columns, then drops:

* rows whose position is in a position delete file (Parquet ``file_path``/``pos`` rows for
  this data file) or in the file's deletion vector (a Puffin ``deletion-vector-v1`` blob at
  ``content_offset``/``content_size_in_bytes``);
* rows whose equality columns equal (null-safe: null equals null) a row of an equality
  delete file.

When the projection holds ``_deleted`` the rows are kept and that column says whether each
is deleted. Delete files are loaded once per scan through a :class:`DeleteCache` shared by
the scan's tasks; an equality delete file whose column bounds and null counts show it cannot
match any row of the data file is skipped without being read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icepark.arrow.reader import DEFAULT_BATCH_SIZE, read_data_file, read_file_table
from icepark.errors import UnsupportedOperationError, ValidationError
from icepark.expressions import Expression
from icepark.io.fileio import FileIO
from icepark.io.threads import io_map
from icepark.planning.planner import FileScanTask
from icepark.puffin.dv import deserialize_deletion_vector
from icepark.puffin.file import read_puffin_blob
from icepark.spec.conversions import from_bytes
from icepark.spec.manifests import DataFile, FileContent, FileFormat
from icepark.spec.metadata_columns import (
    DELETE_FILE_PATH_FIELD_ID,
    DELETE_FILE_POS_FIELD_ID,
    IS_DELETED_FIELD_ID,
    POS_FIELD_ID,
)
from icepark.spec.name_mapping import NameMapping, create_name_mapping
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DoubleType,
    FloatType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
)

__all__ = ["DeleteCache", "read_task", "equality_delete_may_match", "live_row_count"]

_EMPTY = np.zeros(0, dtype=np.int64)


class DeleteCache:
    """Delete files loaded for one scan, keyed by file (and blob), shared by its tasks.

    Thread-safe; pickles empty (a Spark task rebuilds what it needs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._positions: dict[str, dict[str, np.ndarray]] = {}
        self._vectors: dict[tuple[str, int], np.ndarray] = {}
        self._equality: dict[tuple[str, tuple[int, ...]], pa.Table] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def _get(self, store: dict[Any, Any], key: Any, load: Callable[[], Any]) -> Any:
        with self._lock:
            if key in store:
                return store[key]
        value = load()
        with self._lock:
            return store.setdefault(key, value)

    def positions(self, io: FileIO, delete_file: DataFile, data_path: str) -> np.ndarray:
        """The deleted positions of ``data_path`` in a position delete file or a DV."""
        if delete_file.file_format == FileFormat.PUFFIN:
            key = (delete_file.file_path, delete_file.content_offset or 0)
            return self._get(self._vectors, key, lambda: _load_vector(io, delete_file))
        grouped = self._get(
            self._positions, delete_file.file_path, lambda: _load_position_file(io, delete_file)
        )
        return grouped.get(data_path, _EMPTY)

    def referenced_data_files(self, io: FileIO, delete_file: DataFile) -> frozenset[str]:
        """The data files a position delete file (or a DV) names."""
        if delete_file.referenced_data_file is not None:
            return frozenset({delete_file.referenced_data_file})
        grouped = self._get(
            self._positions, delete_file.file_path, lambda: _load_position_file(io, delete_file)
        )
        return frozenset(grouped)

    def load_positions(self, io: FileIO, tasks: Iterable[FileScanTask], workers: int = 8) -> None:
        """Load the position delete files and DVs of ``tasks``, each once and ``workers`` at a
        time, so that :meth:`positions` then finds them here."""
        first_use = {
            (d.file_path, d.content_offset): (d, task.file.file_path)
            for task in tasks
            for d in task.delete_files
            if d.content == FileContent.POSITION_DELETES
        }
        if not first_use:
            return
        list(io_map(lambda pair: self.positions(io, *pair), list(first_use.values()), workers))

    def equality(
        self, io: FileIO, delete_file: DataFile, schema: Schema, name_mapping: NameMapping | None
    ) -> pa.Table:
        """The distinct key rows of an equality delete file, in the table's Arrow types."""
        ids = tuple(delete_file.equality_ids or ())
        return self._get(
            self._equality,
            (delete_file.file_path, ids),
            lambda: _load_equality_file(io, delete_file, schema, name_mapping),
        )


def _load_vector(io: FileIO, f: DataFile) -> np.ndarray:
    if f.content_offset is None or f.content_size_in_bytes is None:
        raise ValidationError(f"Deletion vector {f.file_path} has no content offset or size")
    blob = read_puffin_blob(io.new_input(f.file_path), f.content_offset, f.content_size_in_bytes)
    bitmaps = deserialize_deletion_vector(blob, f.file_path)
    parts = [
        np.frombuffer(bm.to_array(), dtype=np.uint32).astype(np.int64) + (key << 32)
        for key, bm in sorted(bitmaps.items())
    ]
    return np.concatenate(parts) if parts else _EMPTY


def _column_by_id(table: pa.Table, field_id: int, default: str) -> pa.ChunkedArray:
    for i, field in enumerate(table.schema):
        meta = field.metadata or {}
        if meta.get(b"PARQUET:field_id") == str(field_id).encode():
            return table.column(i)
    if default in table.column_names:
        return table.column(default)
    raise ValidationError(f"Position delete file has no {default!r} column (field id {field_id})")


_POSITION_SCHEMA = Schema(
    NestedField(DELETE_FILE_PATH_FIELD_ID, "file_path", StringType(), required=True),
    NestedField(DELETE_FILE_POS_FIELD_ID, "pos", LongType(), required=True),
)
_POSITION_MAPPING = create_name_mapping(_POSITION_SCHEMA)


def _load_position_file(io: FileIO, f: DataFile) -> dict[str, np.ndarray]:
    if f.file_format == FileFormat.PARQUET:
        with io.new_input(f.file_path).open() as stream:
            table = pq.read_table(stream)
        paths = _column_by_id(table, DELETE_FILE_PATH_FIELD_ID, "file_path").combine_chunks()
        pos = _column_by_id(table, DELETE_FILE_POS_FIELD_ID, "pos").to_numpy().astype(np.int64)
    else:  # Avro and ORC through the one data file reader
        table = read_file_table(io, f, _POSITION_SCHEMA, name_mapping=_POSITION_MAPPING)
        paths = table.column(0).combine_chunks()
        pos = table.column(1).to_numpy().astype(np.int64)
    encoded = pc.dictionary_encode(paths)
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    out: dict[str, np.ndarray] = {}
    for i, path in enumerate(encoded.dictionary.to_pylist()):
        out[str(path)] = np.sort(pos[indices == i])
    return out


def _load_equality_file(
    io: FileIO, f: DataFile, schema: Schema, name_mapping: NameMapping | None
) -> pa.Table:
    ids = tuple(f.equality_ids or ())
    if not ids:
        raise ValidationError(f"Equality delete file {f.file_path} has no equality field ids")
    read_schema = _equality_schema(schema, ids, f.file_path)
    table = read_file_table(io, f, read_schema, table_schema=schema, name_mapping=name_mapping)
    keys = pa.table({str(i): _extract(table, schema, fid) for i, fid in enumerate(ids)})
    return keys.group_by(keys.column_names, use_threads=False).aggregate([])


def _equality_schema(schema: Schema, ids: tuple[int, ...], location: str) -> Schema:
    names = []
    for fid in ids:
        name = schema.find_column_name(fid)
        if name is None:
            raise UnsupportedOperationError(
                f"Equality delete file {location} uses field id {fid}, which the scan schema lacks"
            )
        names.append(name)
    return schema.select(names)


def _path(schema: Schema, field_id: int) -> list[int]:
    path = [field_id]
    parent = schema.parent_id(field_id)
    while parent is not None:
        path.append(parent)
        parent = schema.parent_id(parent)
    return path[::-1]


def _extract(table: pa.Table | pa.RecordBatch, schema: Schema, field_id: int) -> pa.Array:
    """The column of ``field_id`` (possibly nested in structs) in a batch of ``schema``."""
    path = _path(schema, field_id)
    top = schema.find_field(path[0]).name
    arr: Any = table.column(top)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    for fid in path[1:]:
        arr = arr.field(schema.find_field(fid).name)
    return arr


def equality_delete_may_match(delete_file: DataFile, data_file: DataFile, schema: Schema) -> bool:
    """False when the metrics show no row of ``data_file`` can equal a row of the delete file
    (Java's ``canContainEqDeletesForFile``)."""
    for fid in delete_file.equality_ids or ():
        f = schema.field_or_none(fid)
        if f is None or not isinstance(f.field_type, PrimitiveType):
            continue
        if not _column_may_match(fid, f.field_type, delete_file, data_file):
            return False
    return True


def _count(d: dict[int, int] | None, fid: int) -> int | None:
    return None if d is None else d.get(fid)


def _column_may_match(fid: int, t: PrimitiveType, dfile: DataFile, data: DataFile) -> bool:
    data_nulls, del_nulls = (
        _count(data.null_value_counts, fid),
        _count(dfile.null_value_counts, fid),
    )
    data_all_null = data_nulls is not None and data_nulls == _count(data.value_counts, fid)
    del_all_null = del_nulls is not None and del_nulls == _count(dfile.value_counts, fid)
    if data_all_null and del_nulls == 0:
        return False
    if del_all_null and data_nulls == 0:
        return False
    if data_all_null or del_all_null or isinstance(t, FloatType | DoubleType):
        return True
    bounds = (
        (data.lower_bounds or {}).get(fid),
        (data.upper_bounds or {}).get(fid),
        (dfile.lower_bounds or {}).get(fid),
        (dfile.upper_bounds or {}).get(fid),
    )
    if any(b is None for b in bounds):
        return True
    try:
        lo, hi, dlo, dhi = (from_bytes(t, b) for b in bounds if b is not None)
        return bool(dlo <= hi and lo <= dhi)
    except (TypeError, ValueError):
        return True


def _null_safe_keys(data: pa.Array, deletes: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Integer codes of two arrays' values in a shared dictionary where null is a value."""
    both = pa.concat_arrays([data, deletes.cast(data.type)])
    codes = pc.dictionary_encode(both, null_encoding="encode").indices
    return codes.slice(0, len(data)), codes.slice(len(data))


def _equality_mask(
    batch: pa.RecordBatch, schema: Schema, ids: tuple[int, ...], keys: pa.Table
) -> np.ndarray:
    """True for the rows of ``batch`` whose equality columns match a row of ``keys``."""
    if keys.num_rows == 0 or batch.num_rows == 0:
        return np.zeros(batch.num_rows, dtype=bool)
    data_cols: dict[str, pa.Array] = {}
    del_cols: dict[str, pa.Array] = {}
    for i, fid in enumerate(ids):
        d, k = _null_safe_keys(_extract(batch, schema, fid), keys.column(i).combine_chunks())
        data_cols[f"k{i}"], del_cols[f"k{i}"] = d, k
    names = list(data_cols)
    if len(names) == 1:
        return pc.is_in(data_cols["k0"], value_set=del_cols["k0"]).to_numpy(zero_copy_only=False)
    data_cols["__row"] = pa.array(np.arange(batch.num_rows, dtype=np.int64))
    matched = pa.table(data_cols).join(pa.table(del_cols), names, join_type="left semi")
    mask = np.zeros(batch.num_rows, dtype=bool)
    mask[matched.column("__row").to_numpy()] = True
    return mask


def read_task(
    io: FileIO,
    task: FileScanTask,
    *,
    projected_schema: Schema,
    table_schema: Schema,
    partition_spec: PartitionSpec | None,
    row_filter: Expression | None = None,
    name_mapping: NameMapping | None = None,
    cache: DeleteCache | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> Iterator[pa.RecordBatch]:
    """The rows of a scan task (its data file, or its byte range) that its delete files
    leave and that ``row_filter`` (bound) selects, as batches of
    ``schema_to_arrow(projected_schema)`` of at most ``batch_size`` rows: the one reader of
    scan tasks, for scans, row-level changes and rewrites. ``cache`` keeps decoded delete
    files for the tasks that follow."""
    if not task.delete_files:
        yield from read_data_file(
            io,
            task.file,
            projected_schema=projected_schema,
            table_schema=table_schema,
            partition_spec=partition_spec,
            row_filter=row_filter,
            name_mapping=name_mapping,
            start=task.start,
            length=task.length,
            batch_size=batch_size,
        )
        return
    cache = cache if cache is not None else DeleteCache()
    data = task.file
    positional = [d for d in task.delete_files if d.content == FileContent.POSITION_DELETES]
    equality = [
        d
        for d in task.delete_files
        if d.content == FileContent.EQUALITY_DELETES
        and equality_delete_may_match(d, data, table_schema)
    ]
    deleted = _EMPTY
    if positional:
        parts = [cache.positions(io, d, data.file_path) for d in positional]
        deleted = np.unique(np.concatenate(parts)) if len(parts) > 1 else parts[0]
    groups: dict[tuple[int, ...], list[pa.Table]] = {}
    for d in equality:
        groups.setdefault(tuple(d.equality_ids or ()), []).append(
            cache.equality(io, d, table_schema, name_mapping)
        )
    key_tables = {ids: pa.concat_tables(ts) for ids, ts in groups.items()}
    read_schema = _read_schema(projected_schema, table_schema, key_tables)
    n_out = len(projected_schema.fields)
    marks_deleted = projected_schema.field_or_none(IS_DELETED_FIELD_ID) is not None
    batches = read_data_file(
        io,
        data,
        projected_schema=read_schema,
        table_schema=table_schema,
        partition_spec=partition_spec,
        row_filter=row_filter,
        name_mapping=name_mapping,
        include_positions=len(deleted) > 0,
        start=task.start,
        length=task.length,
        batch_size=batch_size,
    )
    for batch in batches:
        mask = np.zeros(batch.num_rows, dtype=bool)
        if len(deleted):
            pos_index = batch.schema.get_field_index(_pos_name(batch.schema))
            pos = batch.column(pos_index).to_numpy(zero_copy_only=False)
            mask |= np.isin(pos, deleted, assume_unique=False)
        for ids, keys in key_tables.items():
            mask |= _equality_mask(batch, read_schema, ids, keys)
        out = batch.select(list(range(n_out)))
        if marks_deleted:
            idx = out.schema.get_field_index("_deleted")
            out = out.set_column(idx, out.schema.field(idx), pa.array(mask))
        elif mask.any():
            out = out.filter(pa.array(~mask))
        if out.num_rows:
            yield out


def _pos_name(schema: pa.Schema) -> str:
    for f in schema:
        if (f.metadata or {}).get(b"PARQUET:field_id") == str(POS_FIELD_ID).encode():
            return str(f.name)
    return "_pos"


def _read_schema(
    projected: Schema, table_schema: Schema, key_tables: dict[tuple[int, ...], pa.Table]
) -> Schema:
    """The projection plus the top-level fields holding equality columns it lacks."""
    needed = {fid for ids in key_tables for fid in ids}
    have = projected.field_ids()
    extra: list[int] = []
    for fid in sorted(needed - have):
        top = _path(table_schema, fid)[0]
        if top in have:
            raise UnsupportedOperationError(
                f"Cannot apply equality deletes on field id {fid}: the projection prunes its struct"
            )
        if top not in extra:
            extra.append(top)
    if not extra:
        return projected
    fields = [*projected.fields, *(table_schema.find_field(t) for t in extra)]
    return Schema(*fields, schema_id=projected.schema_id)


def live_row_count(io: FileIO, task: FileScanTask, cache: DeleteCache) -> int | None:
    """The number of rows of a whole-file task left by its deletes, without reading the data
    file, when all of them are position deletes (DVs or position delete files); else None."""
    if not task.is_whole_file or any(
        d.content != FileContent.POSITION_DELETES for d in task.delete_files
    ):
        return None
    parts = [cache.positions(io, d, task.file.file_path) for d in task.delete_files]
    deleted = np.unique(np.concatenate(parts)) if parts else _EMPTY
    deleted = deleted[deleted < task.file.record_count]
    return int(task.file.record_count - len(deleted))
