"""Changelog scans: the rows each snapshot inserted and deleted, as Java's
``create_changelog_view`` procedure gives them.

Planning follows Java's ``BaseIncrementalChangelogScan``: the snapshots after ``from`` up to
``to`` (REPLACE snapshots skipped, as they change no rows), oldest first, numbered by
``_change_ordinal``. For each snapshot S (parent P), from S's manifests alone:

* data files S added: their rows are INSERTs (read with the deletes live at S: a position
  delete or DV committed with the file may drop rows that were never visible);
* data files S removed (copy-on-write, or whole files deleted): their rows live at P are
  DELETEs (read with the deletes live at P);
* data files S did not touch but that delete files S added apply to (merge-on-read position
  deletes, deletion vectors, equality deletes): the rows live at P and not at S are DELETEs
  (the file is read with P's deletes and with S's, and rows compared by position).

The delete files live at P are found in S's delete manifests: the live ones S did not add,
plus those S removed (a DV that S replaced by a newer one). Java 1.10 refuses a changelog
over a table with delete files ("Delete files are currently not supported in changelog
scans"); the rules above are what its change semantics imply (the row was visible before S
and is not after), and they give a merge-on-read history the changelog the same operations
give on a copy-on-write table.

The rows are then post-processed as the procedure does (Spark's ``ChangelogIterator``s):

* carry-overs are removed: within one snapshot, a DELETE and an INSERT of identical rows (a
  copy-on-write rewrite keeping a row) cancel, count for count (``RemoveCarryoverIterator``);
* with ``compute_updates`` (or ``identifier_columns`` given, as Java defaults), a DELETE and
  an INSERT of one snapshot with equal identifier columns (the schema's identifier fields by
  default) become ``UPDATE_BEFORE``/``UPDATE_AFTER``; two DELETEs with one identifier are an
  error (``ComputeUpdateIterator``);
* with ``net_changes``, rows are compared across snapshots instead: per identical row, in
  ordinal order, opposite changes cancel and what remains is reported with the first row's
  ordinal and snapshot (``RemoveNetCarryoverIterator``).

Post-processing compares whole rows, so rows are read with every column and projected to
``columns`` at the end. A filter prunes files and rows before post-processing (carry-over
pairs are identical rows, so both or neither match); with ``compute_updates`` a filter on
columns other than the identifiers is applied after it, as a filter on Java's view is.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.arrow.deletes import DeleteCache, read_task
from icepark.arrow.expressions import to_arrow_expression
from icepark.arrow.schema import schema_to_arrow
from icepark.errors import ValidationError
from icepark.expressions import (
    AlwaysTrue,
    BooleanExpression,
    as_filter,
    bind,
    referenced_field_ids,
)
from icepark.io import FileIO
from icepark.manifest import ManifestContent, ManifestEntry, ManifestEntryStatus
from icepark.planning.delete_index import DeleteFileIndex
from icepark.planning.planner import FileScanTask, TaskBuilder
from icepark.planning.walk import manifests_of, read_entries
from icepark.spec.metadata import TableMetadata
from icepark.spec.metadata_columns import (
    CHANGE_ORDINAL_FIELD,
    CHANGE_TYPE_FIELD,
    COMMIT_SNAPSHOT_ID_FIELD,
    POS_FIELD,
)
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from icepark.spec.types import MapType, NestedField
from icepark.table.incremental.append_scan import snapshots_between

if TYPE_CHECKING:
    from icepark.table.interface import TableLike

__all__ = [
    "ChangelogScan",
    "ChangelogScanTask",
    "DELETE",
    "INSERT",
    "UPDATE_AFTER",
    "UPDATE_BEFORE",
    "changelog_scan",
]

INSERT = "INSERT"
DELETE = "DELETE"
UPDATE_BEFORE = "UPDATE_BEFORE"
UPDATE_AFTER = "UPDATE_AFTER"

ChangeKind = Literal["added-rows", "deleted-data-file", "deleted-rows"]


@dataclass(frozen=True)
class ChangelogScanTask:
    """One file's changes in one snapshot (Java's ``AddedRowsScanTask``,
    ``DeletedDataFileScanTask`` and ``DeletedRowsScanTask``).

    ``task`` is the data file with the deletes that applied when its rows were live (at the
    snapshot for added rows, at its parent for deleted ones); ``after`` (deleted rows only)
    is the same file with the deletes live at the snapshot."""

    kind: ChangeKind
    change_ordinal: int
    commit_snapshot_id: int
    task: FileScanTask
    after: FileScanTask | None = None

    @property
    def change_type(self) -> str:
        return INSERT if self.kind == "added-rows" else DELETE


def _delete_key(f: Any) -> tuple[str, int | None]:
    return (f.file_path, f.content_offset)


@dataclass(frozen=True)
class ChangelogScan:
    """The changes of the snapshots after ``from_snapshot_id`` (exclusive; from the first
    when None) up to ``to_snapshot_id`` (inclusive; the head of ``ref`` or the current
    snapshot when None); build with ``table.changelog_scan(...)``."""

    io: FileIO
    metadata: TableMetadata
    row_filter: BooleanExpression = field(default_factory=AlwaysTrue)
    selected: tuple[str, ...] | None = None
    from_snapshot_id: int | None = None
    to_snapshot_id: int | None = None
    ref: str | None = None
    case_sensitive: bool = True
    compute_updates: bool = False
    identifier_columns: tuple[str, ...] | None = None
    net_changes: bool = False

    # -- resolution ------------------------------------------------------------------------

    @cached_property
    def schema(self) -> Schema:
        return self.metadata.schema()

    @cached_property
    def _computes_updates(self) -> bool:
        # Java computes update images when asked, or by default when identifier columns
        # are given
        return self.compute_updates or self.identifier_columns is not None

    @cached_property
    def identifiers(self) -> tuple[str, ...]:
        if self.identifier_columns is not None:
            for name in self.identifier_columns:
                self.schema.find_field(name, self.case_sensitive)  # fails naming the column
            return tuple(self.identifier_columns)
        return tuple(
            self.schema.find_column_name(fid) or str(fid)
            for fid in self.schema.identifier_field_ids
        )

    def _validate(self) -> None:
        if self._computes_updates:
            if self.net_changes:
                raise ValidationError("Not support net changes with update images")
            if not self.identifiers:
                raise ValidationError(
                    "Cannot compute the update images because identifier columns are not set"
                )
        elif not self.identifiers:
            unorderable = [f.name for f in self.schema.fields if isinstance(f.field_type, MapType)]
            if unorderable:
                raise ValidationError(
                    "Identifier field is required as table contains unorderable columns: "
                    f"{unorderable}"
                )

    @cached_property
    def to_snapshot(self) -> Snapshot | None:
        if self.to_snapshot_id is not None:
            found = self.metadata.snapshot_by_id(self.to_snapshot_id)
            if found is None:
                raise ValidationError(
                    f"Cannot find the end snapshot {self.to_snapshot_id} in table "
                    f"{self.metadata.location}"
                )
            return found
        if self.ref is not None and self.ref != MAIN_BRANCH:
            if self.metadata.ref(self.ref) is None:
                raise ValidationError(
                    f"Cannot find ref {self.ref!r} in table {self.metadata.location}"
                )
            return self.metadata.snapshot_by_name(self.ref)
        return self.metadata.current_snapshot()

    @cached_property
    def snapshots(self) -> list[Snapshot]:
        """The snapshots whose changes are reported, oldest first (index = ordinal)."""
        to = self.to_snapshot
        if to is None:
            return []
        between = snapshots_between(self.metadata, self.from_snapshot_id, to.snapshot_id)
        return [s for s in between if s.operation != Operation.REPLACE]

    @cached_property
    def _post_filter(self) -> bool:
        """Whether the filter must be applied after computing updates (it names a column
        other than the identifiers, which may tell apart the two images of an update)."""
        if isinstance(self.row_filter, AlwaysTrue) or not self._computes_updates:
            return False
        ids = {self.schema.find_field(n, self.case_sensitive).field_id for n in self.identifiers}
        used = referenced_field_ids(self.row_filter, self.schema, self.case_sensitive)
        return not used <= ids

    @cached_property
    def _plan_filter(self) -> BooleanExpression:
        return AlwaysTrue() if self._post_filter else self.row_filter

    # -- planning --------------------------------------------------------------------------

    def plan_files(self) -> list[ChangelogScanTask]:
        """The changed files, snapshot by snapshot (oldest first)."""
        self._validate()
        bind(self.schema, self.row_filter, self.case_sensitive)  # fail early on bad columns
        builder = TaskBuilder(self.metadata, self._plan_filter, self.schema, self.case_sensitive)
        out: list[ChangelogScanTask] = []
        for ordinal, snapshot in enumerate(self.snapshots):
            out.extend(self._plan_snapshot(builder, ordinal, snapshot))
        return out

    def _plan_snapshot(
        self, builder: TaskBuilder, ordinal: int, snapshot: Snapshot
    ) -> list[ChangelogScanTask]:
        sid = snapshot.snapshot_id
        specs = self.metadata.specs()
        before, after = DeleteFileIndex(specs), DeleteFileIndex(specs)
        added_deletes: set[tuple[str, int | None]] = set()
        delete_manifests = manifests_of(self.io, snapshot, ManifestContent.DELETES)
        for _, entries in read_entries(self.io, delete_manifests, builder.matcher, live_only=False):
            for e in entries:
                seq = e.sequence_number or 0
                mine = e.snapshot_id == sid
                if e.status == ManifestEntryStatus.DELETED:
                    if mine:
                        before.add(e.data_file, seq)
                elif mine and e.status == ManifestEntryStatus.ADDED:
                    after.add(e.data_file, seq)
                    added_deletes.add(_delete_key(e.data_file))
                else:
                    before.add(e.data_file, seq)
                    after.add(e.data_file, seq)
        data_manifests = [
            m
            for m in manifests_of(self.io, snapshot, ManifestContent.DATA)
            if (m.added_snapshot_id == sid or added_deletes)
            and builder.matcher.manifest_might_match(m)
        ]
        out: list[ChangelogScanTask] = []
        for _, entries in read_entries(self.io, data_manifests, builder.matcher, live_only=False):
            for e in entries:
                out.extend(self._changes_of(builder, e, ordinal, sid, before, after, added_deletes))
        return out

    def _changes_of(
        self,
        builder: TaskBuilder,
        e: ManifestEntry,
        ordinal: int,
        sid: int,
        before: DeleteFileIndex,
        after: DeleteFileIndex,
        added_deletes: set[tuple[str, int | None]],
    ) -> list[ChangelogScanTask]:
        mine = e.snapshot_id == sid
        if e.status == ManifestEntryStatus.ADDED and mine:
            return [ChangelogScanTask("added-rows", ordinal, sid, builder.task(e, after))]
        if e.status == ManifestEntryStatus.DELETED:
            if not mine:
                return []  # removed by an earlier snapshot
            return [ChangelogScanTask("deleted-data-file", ordinal, sid, builder.task(e, before))]
        if not added_deletes:
            return []
        now = builder.task(e, after)
        if not any(_delete_key(d) in added_deletes for d in now.delete_files):
            return []
        return [ChangelogScanTask("deleted-rows", ordinal, sid, builder.task(e, before), now)]

    # -- reading ---------------------------------------------------------------------------

    @cached_property
    def projected_fields(self) -> list[NestedField]:
        if self.selected is None or "*" in self.selected:
            return list(self.schema.fields)
        return list(self.schema.select(list(self.selected), self.case_sensitive).fields)

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        """The columns asked for, then ``_change_type``, ``_change_ordinal`` and
        ``_commit_snapshot_id``."""
        meta = (CHANGE_TYPE_FIELD, CHANGE_ORDINAL_FIELD, COMMIT_SNAPSHOT_ID_FIELD)
        return schema_to_arrow(Schema(*self.projected_fields, *meta))

    @cached_property
    def _full_arrow(self) -> pa.Schema:
        return schema_to_arrow(self.schema)

    @cached_property
    def _with_pos(self) -> Schema:
        return Schema(*self.schema.fields, POS_FIELD)

    @cached_property
    def _cache(self) -> DeleteCache:
        return DeleteCache()

    def _read(self, task: FileScanTask, projected: Schema) -> pa.Table:
        residual = None
        if not isinstance(task.residual, AlwaysTrue):
            residual = bind(self.schema, task.residual, self.case_sensitive)
        batches = list(
            read_task(
                self.io,
                task,
                projected_schema=projected,
                table_schema=self.schema,
                partition_spec=self.metadata.spec_by_id(task.spec_id),
                row_filter=residual,
                name_mapping=self.metadata.name_mapping(),
                cache=self._cache,
            )
        )
        return pa.Table.from_batches(batches, schema=schema_to_arrow(projected))

    def read_changes(self, change: ChangelogScanTask) -> pa.Table:
        """The rows of one changed file, with every column of the table (not yet
        post-processed, no change columns)."""
        if change.kind != "deleted-rows":
            return self._read(change.task, self.schema)
        assert change.after is not None
        before = self._read(change.task, self._with_pos)
        still = self._read(change.after, self._with_pos)
        gone = ~np.isin(
            before.column(POS_FIELD.name).to_numpy(),
            still.column(POS_FIELD.name).to_numpy(),
        )
        return before.filter(pa.array(gone)).drop_columns([POS_FIELD.name])

    def _raw(self, changes: Sequence[ChangelogScanTask]) -> pa.Table:
        """The changed rows of ``changes`` with the three change columns."""
        tables = []
        for change in changes:
            rows = self.read_changes(change)
            n = rows.num_rows
            if not n:
                continue
            rows = rows.append_column(
                CHANGE_TYPE_FIELD.name, pa.array([change.change_type] * n, pa.string())
            )
            rows = rows.append_column(
                CHANGE_ORDINAL_FIELD.name, pa.array(np.full(n, change.change_ordinal), pa.int32())
            )
            rows = rows.append_column(
                COMMIT_SNAPSHOT_ID_FIELD.name,
                pa.array(np.full(n, change.commit_snapshot_id), pa.int64()),
            )
            tables.append(rows)
        if not tables:
            return self._empty_full()
        return pa.concat_tables(tables)

    def _empty_full(self) -> pa.Table:
        meta = (CHANGE_TYPE_FIELD, CHANGE_ORDINAL_FIELD, COMMIT_SNAPSHOT_ID_FIELD)
        return schema_to_arrow(Schema(*self.schema.fields, *meta)).empty_table()

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The changelog, snapshot by snapshot (all at once with ``net_changes``)."""
        changes = self.plan_files()
        if self.net_changes:
            yield from self._finish(_remove_net_carryovers(self._raw(changes), self._data_names))
            return
        by_ordinal: dict[int, list[ChangelogScanTask]] = defaultdict(list)
        for change in changes:
            by_ordinal[change.change_ordinal].append(change)
        for ordinal in sorted(by_ordinal):
            rows = self._raw(by_ordinal[ordinal])
            rows = _remove_carryovers(rows, self._data_names)
            if self._computes_updates:
                rows = _compute_updates(rows, list(self.identifiers), self.case_sensitive)
            yield from self._finish(rows)

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.arrow_schema)

    @cached_property
    def _data_names(self) -> list[str]:
        return [f.name for f in self.schema.fields]

    def _finish(self, rows: pa.Table) -> Iterator[pa.RecordBatch]:
        if self._post_filter and rows.num_rows:
            rows = rows.filter(self._filter_expression())
        names = [f.name for f in self.arrow_schema]
        out = rows.select(names).cast(self.arrow_schema)
        yield from out.to_batches()

    def _filter_expression(self) -> pc.Expression:
        bound = bind(self.schema, self.row_filter, self.case_sensitive)

        def column(field_id: int) -> pc.Expression:
            path = self.schema.find_column_name(field_id) or str(field_id)
            return pc.field(*path.split("."))

        return to_arrow_expression(bound, column)  # a null (unknown) match drops the row

    def columns(self) -> list[str]:
        return [f.name for f in self.arrow_schema]


# -- post-processing (the procedure's iterators) -----------------------------------------------


class _NaN:
    """NaN equals NaN here, as ``Objects.equals`` on boxed doubles."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaN)

    def __hash__(self) -> int:
        return 0x7FF8


_NAN = _NaN()


def _freeze(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return _NAN
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _row_keys(rows: pa.Table, names: Sequence[str]) -> list[tuple[Any, ...]]:
    columns = [[_freeze(v) for v in rows.column(n).to_pylist()] for n in names]
    return list(zip(*columns)) if columns else [() for _ in range(rows.num_rows)]


def _remove_carryovers(rows: pa.Table, names: Sequence[str]) -> pa.Table:
    """Within one snapshot, identical DELETE and INSERT rows cancel count for count."""
    types = rows.column(CHANGE_TYPE_FIELD.name).to_pylist()
    if len(set(types)) < 2:
        return rows
    deletes: dict[Any, list[int]] = defaultdict(list)
    inserts: dict[Any, list[int]] = defaultdict(list)
    for i, (key, kind) in enumerate(zip(_row_keys(rows, names), types)):
        (deletes if kind == DELETE else inserts)[key].append(i)
    keep: list[int] = []
    for key, ds in deletes.items():
        surplus = len(ds) - len(inserts.get(key, ()))
        keep.extend(ds[:surplus] if surplus > 0 else ())
    for key, ins in inserts.items():
        surplus = len(ins) - len(deletes.get(key, ()))
        keep.extend(ins[:surplus] if surplus > 0 else ())
    keep.sort()
    return rows.take(pa.array(keep, pa.int64()))


def _compute_updates(rows: pa.Table, identifiers: list[str], case_sensitive: bool) -> pa.Table:
    """Within one snapshot, a DELETE followed by an INSERT with the same identifier values
    become UPDATE_BEFORE and UPDATE_AFTER."""
    types = rows.column(CHANGE_TYPE_FIELD.name).to_pylist()
    if len(set(types)) < 2:
        return rows
    names = _resolve_names(rows.schema.names, identifiers, case_sensitive)
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, key in enumerate(_row_keys(rows, names)):
        groups[key].append(i)
    new_types = list(types)
    for indices in groups.values():
        ordered = [i for i in indices if types[i] == DELETE] + [
            i for i in indices if types[i] != DELETE
        ]
        j = 0
        while j < len(ordered):
            current = ordered[j]
            if types[current] == DELETE and j + 1 < len(ordered):
                following = ordered[j + 1]
                if types[following] != INSERT:
                    raise ValidationError(
                        "Cannot compute updates because there are multiple rows with the same "
                        f"identifier fields([{','.join(identifiers)}]). Please make sure the "
                        "rows are unique."
                    )
                new_types[current], new_types[following] = UPDATE_BEFORE, UPDATE_AFTER
                j += 2
                continue
            j += 1
    index = rows.schema.get_field_index(CHANGE_TYPE_FIELD.name)
    return rows.set_column(index, CHANGE_TYPE_FIELD.name, pa.array(new_types, pa.string()))


def _resolve_names(available: list[str], wanted: list[str], case_sensitive: bool) -> list[str]:
    if case_sensitive:
        return wanted
    lowered = {n.lower(): n for n in available}
    return [lowered.get(n.lower(), n) for n in wanted]


def _remove_net_carryovers(rows: pa.Table, names: Sequence[str]) -> pa.Table:
    """Across snapshots: per identical row, in ordinal order (DELETE before INSERT within a
    snapshot), a run starts at a row and each following row of the opposite change cancels
    one, of the same change adds one; when the count reaches zero the next row starts a new
    run; a run that ends with a positive count reports its first row that many times."""
    if not rows.num_rows:
        return rows
    types = rows.column(CHANGE_TYPE_FIELD.name).to_pylist()
    ordinals = rows.column(CHANGE_ORDINAL_FIELD.name).to_pylist()
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, key in enumerate(_row_keys(rows, names)):
        groups[key].append(i)
    keep: list[int] = []
    for indices in groups.values():
        ordered = sorted(indices, key=lambda i: (ordinals[i], types[i]))
        j = 0
        while j < len(ordered):
            first = ordered[j]
            count = 1
            j += 1
            while j < len(ordered) and count > 0:
                count += -1 if types[ordered[j]] != types[first] else 1
                j += 1
            keep.extend([first] * max(count, 0))
    keep.sort()
    return rows.take(pa.array(keep, pa.int64()))


def changelog_scan(
    table: TableLike,
    from_snapshot_id: int | None = None,
    to_snapshot_id: int | None = None,
    filter: str | BooleanExpression | None = None,
    columns: Sequence[str] | None = None,
    compute_updates: bool = False,
    identifier_columns: Sequence[str] | None = None,
    net_changes: bool = False,
    *,
    ref: str | None = None,
    case_sensitive: bool = True,
) -> ChangelogScan:
    """The rows each snapshot of ``table`` inserted and deleted after ``from_snapshot_id``
    up to ``to_snapshot_id``, as Java's ``create_changelog_view`` gives them;
    ``compute_updates`` (or ``identifier_columns``) pairs deletes and inserts of one key into
    update images, ``net_changes`` folds a row's changes across snapshots."""
    return ChangelogScan(
        table.io,
        table.metadata,
        as_filter(filter),
        tuple(columns) if columns is not None else None,
        from_snapshot_id,
        to_snapshot_id,
        ref,
        case_sensitive,
        compute_updates,
        tuple(identifier_columns) if identifier_columns is not None else None,
        net_changes,
    )
