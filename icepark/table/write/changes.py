"""Building the actions of row-level changes: ``delete``, ``upsert`` and ``apply_changes``.

* ``delete(filter)``: a :class:`~icepark.table.write.row_delta.DeleteAction` in the table's
  ``write.delete.mode`` (``copy-on-write`` by default, as Java) and
  ``write.delete.isolation-level`` (``serializable`` by default).
* ``upsert(data, on)``: rows of ``data`` whose key (``on``, else the schema's identifier
  fields) matches a live row replace it; the others are inserted; one snapshot. By
  ``write.merge.mode``: ``copy-on-write`` (default) deletes the matching rows by rewriting
  their files and adds ``data``; ``merge-on-read`` (v2+) writes an equality delete file on
  the key columns plus ``data`` as data files. Keys must be unique within ``data``.
* ``apply_changes(data, on, op_column="_op")``: change data capture. Each row carries an
  operation: ``I`` (insert), ``U`` (update: replace the row with this key) or ``D`` (delete
  the row with this key). One snapshot holds an equality delete file (on the ``on``
  columns) with the keys of the ``U`` and ``D`` rows, and data files with the ``I`` and
  ``U`` rows (without ``op_column``). The data and the deletes share the snapshot's
  sequence number and an equality delete only applies to older data, so the new rows are
  not deleted by their own commit. Each key should appear at most once per call. On a
  partitioned table an equality delete only applies within its row's partition and spec, so
  the partition must be a function of the key (as for Flink's upserts), under every spec
  that still has live data files: after a partition change the deletes are written once per
  such spec (Flink's writer writes them in the current spec only, which leaves the old rows
  of files written before the change).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.arrow.delete_writer import write_equality_delete_files
from icepark.errors import ValidationError
from icepark.expressions import AlwaysFalse, BooleanExpression, and_, col, or_
from icepark.io import FileIO
from icepark.manifest import DataFile, ManifestContent
from icepark.planning.walk import manifests_of
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.write.data_files import write_arrow
from icepark.table.write.operations import Action, check_no_conflicting_data
from icepark.table.write.row_delta import COPY_ON_WRITE, MERGE_ON_READ, DeleteAction, RowDeltaAction

__all__ = [
    "apply_changes_action",
    "delete_action",
    "isolation_level",
    "row_level_mode",
    "upsert_action",
]

_OPS = ("I", "U", "D")


def row_level_mode(metadata: TableMetadata, operation: str) -> str:
    """``write.<operation>.mode`` of the table (``delete``, ``update`` or ``merge``):
    copy-on-write (the default, as in Java) or merge-on-read."""
    try:
        return P.row_level_mode(metadata.properties, operation)
    except ValidationError as exc:
        raise ValidationError(f"{exc} (table {metadata.location})") from None


def isolation_level(metadata: TableMetadata, operation: str) -> str:
    """``write.<operation>.isolation-level``: serializable (the default) or snapshot."""
    try:
        return P.row_level_isolation(metadata.properties, operation)
    except ValidationError as exc:
        raise ValidationError(f"{exc} (table {metadata.location})") from None


def delete_action(
    io: FileIO,
    metadata: TableMetadata,
    row_filter: BooleanExpression,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    snapshot_properties: dict[str, str] | None = None,
) -> Action:
    return DeleteAction(
        io,
        row_filter,
        branch,
        row_level_mode(metadata, "delete"),
        isolation_level(metadata, "delete"),
        case_sensitive,
        dict(snapshot_properties or {}),
    )


def _as_table(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    return pa.Table.from_batches(list(data))


def _keys(metadata: TableMetadata, on: Sequence[str] | None) -> list[str]:
    schema = metadata.schema()
    keys = list(on) if on else schema.identifier_field_names
    if not keys:
        raise ValidationError(
            f"No key columns: pass on=[...] or set identifier fields on table {metadata.location}"
        )
    for k in keys:
        schema.find_field(k)  # raises naming the column
    return keys


def _key_filter(table: pa.Table, keys: list[str]) -> BooleanExpression:
    """Rows whose key equals one of ``table``'s (rows with a null key match nothing)."""
    if len(keys) == 1:
        values = sorted({v for v in _nested(table, keys[0]) if v is not None}, key=repr)
        return col(keys[0]).isin(values) if values else AlwaysFalse()
    rows = set(zip(*(_nested(table, k) for k in keys)))
    terms = [
        and_(*(col(k) == v for k, v in zip(keys, row)))
        for row in sorted(rows, key=repr)
        if all(v is not None for v in row)
    ]
    return or_(*terms) if terms else AlwaysFalse()


def _nested(table: pa.Table, name: str) -> list[Any]:
    parts = name.split(".")
    arr: Any = table.column(parts[0])
    for p in parts[1:]:
        arr = pc.struct_field(arr, p)
    return list(arr.to_pylist())


def _check_unique(table: pa.Table, keys: list[str], what: str) -> None:
    rows = list(zip(*(_nested(table, k) for k in keys)))
    if len(set(rows)) != len(rows):
        raise ValidationError(f"{what}: duplicate keys on {keys} in the input")


def upsert_action(
    io: FileIO,
    metadata: TableMetadata,
    data: Any,
    on: Sequence[str] | None = None,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: dict[str, str] | None = None,
) -> Action:
    table = _as_table(data)
    keys = _keys(metadata, on)
    _check_unique(table, keys, f"Cannot upsert into {metadata.location}")
    mode = row_level_mode(metadata, "merge")
    props = dict(snapshot_properties or {})
    if mode == MERGE_ON_READ and metadata.format_version >= 2:
        ids = [metadata.schema().find_field_id(k) for k in keys]
        files = write_arrow(io, metadata, table)
        try:
            deletes = _equality_deletes(io, metadata, table, ids, branch)
        except BaseException:
            _remove(io, [f.file_path for f in files])
            raise
        validate = _no_conflicting_data(io, metadata, branch, _key_filter(table, keys), "merge")
        return RowDeltaAction(io, files, deletes, branch, props, validate)
    files = write_arrow(io, metadata, table)
    return DeleteAction(
        io,
        _key_filter(table, keys),
        branch,
        COPY_ON_WRITE,
        isolation_level(metadata, "merge"),
        True,
        props,
        added_files=files,
    )


def apply_changes_action(
    io: FileIO,
    metadata: TableMetadata,
    data: Any,
    on: Sequence[str] | None = None,
    op_column: str = "_op",
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: dict[str, str] | None = None,
) -> Action:
    if metadata.format_version < 2:
        raise ValidationError(
            f"Cannot apply changes to format version 1 table {metadata.location}: "
            "equality deletes need format version 2 or later"
        )
    table = _as_table(data)
    if op_column not in table.column_names:
        raise ValidationError(f"Change data has no operation column {op_column!r}")
    keys = _keys(metadata, on)
    ops = table.column(op_column).cast(pa.string())
    unknown = set(pc.unique(ops).to_pylist()) - set(_OPS)
    if unknown:
        raise ValidationError(
            f"Unknown change operations {sorted(map(str, unknown))} in column {op_column!r}: "
            "expected I, U or D"
        )
    rows = table.drop_columns([op_column])
    removed = rows.filter(pc.is_in(ops, pa.array(["U", "D"])))
    added = rows.filter(pc.is_in(ops, pa.array(["I", "U"])))
    ids = [metadata.schema().find_field_id(k) for k in keys]
    files = write_arrow(io, metadata, added) if added.num_rows else []
    try:
        deletes = _equality_deletes(io, metadata, removed, ids, branch)
    except BaseException:
        _remove(io, [f.file_path for f in files])
        raise
    validate = _no_conflicting_data(io, metadata, branch, _key_filter(removed, keys), "merge")
    return RowDeltaAction(io, files, deletes, branch, dict(snapshot_properties or {}), validate)


def _equality_deletes(
    io: FileIO, metadata: TableMetadata, rows: pa.Table, ids: list[int], branch: str
) -> list[DataFile]:
    """Equality delete files for ``rows``: one set partitioned by the current spec, and one
    by each older spec that still has live data files on ``branch``. A delete applies only
    to data files of its own spec and partition (the spec's rule), so after a partition
    change the rows of files written under the old spec would otherwise stay. A delete of
    an unpartitioned spec applies to every file, so where one of those specs is
    unpartitioned, its set alone is written."""
    ids_found = {metadata.default_spec_id}
    for manifest in manifests_of(io, metadata.branch_head(branch), ManifestContent.DATA):
        if manifest.has_added_files or manifest.has_existing_files:
            ids_found.add(manifest.partition_spec_id)
    ordered = sorted(ids_found, key=lambda s: s != metadata.default_spec_id)
    specs = [spec for s in ordered if (spec := metadata.spec_by_id(s)) is not None]
    specs = [spec for spec in specs if spec.is_unpartitioned][:1] or specs
    written: list[DataFile] = []
    try:
        for spec in specs:
            written += write_equality_delete_files(io, metadata, rows, ids, spec)
    except BaseException:
        _remove(io, [f.file_path for f in written])
        raise
    return written


def _no_conflicting_data(
    io: FileIO, metadata: TableMetadata, branch: str, key_filter: BooleanExpression, what: str
) -> Callable[[TableMetadata, TableMetadata], None]:
    """The retry check of an equality-delete commit: under ``serializable`` isolation
    (``write.<what>.isolation-level``) a concurrent commit that added data files which may
    hold the deleted keys fails it, as the new equality deletes would delete those rows
    too. Under ``snapshot`` everything is retried through."""
    isolation = isolation_level(metadata, what)

    def validate(base: TableMetadata, start: TableMetadata) -> None:
        if isolation == "serializable":
            planned = start.branch_head(branch)
            planned_id = planned.snapshot_id if planned else None
            check_no_conflicting_data(io, base, branch, planned_id, key_filter, True, what)

    return validate


def _remove(io: FileIO, paths: list[str]) -> None:
    for p in paths:
        try:
            io.delete(p)
        except Exception:  # best-effort cleanup of files we wrote
            pass
