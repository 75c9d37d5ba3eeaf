"""Expiring snapshots: drop old snapshots and refs from metadata, then delete the files that
only they reached (Java's ``RemoveSnapshots`` and ``ExpireSnapshotsSparkAction``).

How it flows:

1. **Choose** (:func:`plan_expiry`, re-run on fresh metadata if the commit must retry), as
   Java's ``RemoveSnapshots.internalApply``:

   * refs: ``main`` is always kept; another branch or tag is removed when its snapshot is
     older than its ``max-ref-age-ms`` (default ``history.expire.max-ref-age-ms``: forever);
   * every kept branch keeps its newest ancestors: at least ``min-snapshots-to-keep``
     (default ``retain_last``, else ``history.expire.min-snapshots-to-keep``, 1) and all
     those not older than ``max-snapshot-age-ms`` (default ``older_than``, else now minus
     ``history.expire.max-snapshot-age-ms``, 5 days); every kept tag keeps its snapshot;
   * a snapshot no ref reaches is kept while it is not older than the default age;
   * everything else is expired, and so are the ``snapshot_ids`` asked for (refused if a
     kept ref points at one); with ``clean_expired_metadata``, partition specs and schemas
     that no kept snapshot uses (other than the current ones) are removed too.

2. **Commit** the metadata change (``remove-snapshot-ref``, ``remove-snapshots``,
   ``remove-partition-specs``, ``remove-schemas``), requiring every ref to be where it was.
   If the outcome is unknown (:class:`~icepark.errors.CommitStateUnknownError`) nothing is
   deleted.

3. **Clean up** (after a successful commit, and only when ``gc.enabled`` is true, as the whole
   operation is refused otherwise): the files reachable from the expired snapshots minus the
   files reachable from the retained ones (:func:`icepark.planning.reachable.referenced_files`;
   manifests that a retained snapshot still lists are never read): data and delete files,
   manifests, manifest lists, statistics and partition-statistics files. They are deleted in
   parallel (:mod:`icepark.table.maintenance.file_cleanup`); a failed delete is logged and
   reported in the result, never raised.

``dry_run`` commits nothing and deletes nothing, and reports what would have been expired
and deleted.
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.manifest import FileContent
from icepark.planning.reachable import referenced_files
from icepark.planning.walk import DEFAULT_WORKERS, manifests_of, parallel_map
from icepark.spec import properties as P
from icepark.spec.builder import MetadataBuilder
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, SnapshotRef
from icepark.spec.updates import (
    AssertCurrentSchemaId,
    AssertDefaultSpecId,
    AssertRefSnapshotId,
    AssertTableUUID,
    RemovePartitionSpecsUpdate,
    RemoveSchemasUpdate,
    RemoveSnapshotRefUpdate,
    RemoveSnapshotsUpdate,
    TableRequirement,
    TableUpdate,
)
from icepark.table.interface import TableLike
from icepark.table.maintenance.file_cleanup import delete_files
from icepark.table.scan import to_epoch_ms
from icepark.table.transaction import Transaction
from icepark.table.write.operations import Action, Staged

__all__ = [
    "ExpirePlan",
    "ExpireSnapshotsResult",
    "expire_snapshots",
    "files_to_delete",
    "plan_expiry",
]

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ExpirePlan:
    """What an expiry removes from one metadata, and the commit that does it."""

    expired_snapshot_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]
    removed_spec_ids: tuple[int, ...]
    removed_schema_ids: tuple[int, ...]
    updates: list[TableUpdate]
    requirements: list[TableRequirement]


@dataclass(frozen=True)
class ExpireSnapshotsResult:
    """Java's six counts of files deleted (would be deleted, on a dry run), and more."""

    deleted_data_files_count: int = 0
    deleted_position_delete_files_count: int = 0
    deleted_equality_delete_files_count: int = 0
    deleted_manifest_files_count: int = 0
    deleted_manifest_lists_count: int = 0
    deleted_statistics_files_count: int = 0
    expired_snapshot_ids: tuple[int, ...] = ()
    removed_refs: tuple[str, ...] = ()
    deleted_files: tuple[str, ...] = ()
    deleted_bytes: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    dry_run: bool = False

    @property
    def deleted_files_count(self) -> int:
        return len(self.deleted_files)

    def counts(self) -> dict[str, int]:
        """The six counts, named as Java's ``expire_snapshots`` procedure's output columns."""
        return {
            "deleted_data_files_count": self.deleted_data_files_count,
            "deleted_position_delete_files_count": self.deleted_position_delete_files_count,
            "deleted_equality_delete_files_count": self.deleted_equality_delete_files_count,
            "deleted_manifest_files_count": self.deleted_manifest_files_count,
            "deleted_manifest_lists_count": self.deleted_manifest_lists_count,
            "deleted_statistics_files_count": self.deleted_statistics_files_count,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.counts(),
            "expired_snapshot_ids": list(self.expired_snapshot_ids),
            "removed_refs": list(self.removed_refs),
            "deleted_files": list(self.deleted_files),
            "deleted_bytes": self.deleted_bytes,
            "failed": dict(self.failed),
            "dry_run": self.dry_run,
        }


# -- choosing ----------------------------------------------------------------------------------


def _branch_snapshots_to_retain(
    base: TableMetadata, head: int, older_than_ms: int, min_to_keep: int
) -> set[int]:
    kept: set[int] = set()
    for ancestor in base.ancestors_of(head):
        if len(kept) < min_to_keep or ancestor.timestamp_ms >= older_than_ms:
            kept.add(ancestor.snapshot_id)
        else:
            break
    return kept


def _retained_refs(base: TableMetadata, now_ms: int, max_ref_age_ms: int) -> dict[str, SnapshotRef]:
    kept: dict[str, SnapshotRef] = {}
    for name, ref in base.refs.items():
        if name == MAIN_BRANCH:
            kept[name] = ref
            continue
        snapshot = base.snapshot_by_id(ref.snapshot_id)
        max_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else max_ref_age_ms
        if snapshot is not None and now_ms - snapshot.timestamp_ms <= max_age:
            kept[name] = ref
    return kept


def plan_expiry(
    io: FileIO,
    base: TableMetadata,
    *,
    now_ms: int,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] = (),
    clean_expired_metadata: bool = False,
) -> ExpirePlan:
    """What to expire from ``base`` (see the module docstring); raises
    :class:`ValidationError` for a snapshot id that a kept ref still points at."""
    props = base.properties
    default_older_than = (
        older_than_ms if older_than_ms is not None else now_ms - P.MAX_SNAPSHOT_AGE_MS.get(props)
    )
    min_to_keep = retain_last if retain_last is not None else P.MIN_SNAPSHOTS_TO_KEEP.get(props)
    refs = _retained_refs(base, now_ms, P.MAX_REF_AGE_MS.get(props))
    explicit = list(dict.fromkeys(snapshot_ids))
    by_snapshot: dict[int, list[str]] = {}
    for name, ref in refs.items():
        by_snapshot.setdefault(ref.snapshot_id, []).append(name)
    for snapshot_id in explicit:
        if snapshot_id in by_snapshot:
            raise ValidationError(
                f"Cannot expire {snapshot_id}. Still referenced by refs: "
                f"{sorted(by_snapshot[snapshot_id])} (table {base.location})"
            )
    retain = set(by_snapshot)
    reached: set[int] = set()
    for ref in refs.values():
        if ref.is_branch:
            ref_older_than = (
                now_ms - ref.max_snapshot_age_ms
                if ref.max_snapshot_age_ms is not None
                else default_older_than
            )
            ref_min = (
                ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else min_to_keep
            )
            retain |= _branch_snapshots_to_retain(base, ref.snapshot_id, ref_older_than, ref_min)
            reached |= {s.snapshot_id for s in base.ancestors_of(ref.snapshot_id)}
        else:
            reached.add(ref.snapshot_id)
    for snapshot in base.snapshots:
        if snapshot.snapshot_id not in reached and snapshot.timestamp_ms >= default_older_than:
            retain.add(snapshot.snapshot_id)
    expired = [
        s.snapshot_id
        for s in base.snapshots
        if s.snapshot_id in explicit or s.snapshot_id not in retain
    ]
    removed_refs = tuple(sorted(name for name in base.refs if name not in refs))

    updates: list[TableUpdate] = [RemoveSnapshotRefUpdate(name) for name in removed_refs]
    requirements: list[TableRequirement] = [AssertTableUUID(base.table_uuid)]
    requirements += [AssertRefSnapshotId(n, r.snapshot_id) for n, r in sorted(base.refs.items())]
    if expired:
        updates.append(RemoveSnapshotsUpdate(tuple(expired)))
    removed_specs: tuple[int, ...] = ()
    removed_schemas: tuple[int, ...] = ()
    if clean_expired_metadata:
        kept = [s for s in base.snapshots if s.snapshot_id not in set(expired)]
        specs = {base.default_spec_id}
        for found in parallel_map(lambda s: manifests_of(io, s), kept, DEFAULT_WORKERS):
            specs |= {m.partition_spec_id for m in found}
        schemas = {base.current_schema_id} | {s.schema_id for s in kept if s.schema_id is not None}
        removed_specs = tuple(s.spec_id for s in base.partition_specs if s.spec_id not in specs)
        removed_schemas = tuple(s.schema_id for s in base.schemas if s.schema_id not in schemas)
        if removed_specs:
            updates.append(RemovePartitionSpecsUpdate(removed_specs))
            requirements.append(AssertDefaultSpecId(base.default_spec_id))
        if removed_schemas:
            updates.append(RemoveSchemasUpdate(removed_schemas))
            requirements.append(AssertCurrentSchemaId(base.current_schema_id))
    return ExpirePlan(
        tuple(expired), removed_refs, removed_specs, removed_schemas, updates, requirements
    )


class _ExpireAction(Action):
    """Plans the expiry again on every attempt's metadata; remembers the last attempt's."""

    revalidates = True

    def __init__(self, io: FileIO, choose: Callable[[TableMetadata], ExpirePlan]) -> None:
        self.io = io
        self.choose = choose
        self.base: TableMetadata | None = None
        self.plan: ExpirePlan | None = None

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        self.plan = self.choose(base)
        self.base = base
        return Staged(list(self.plan.updates), list(self.plan.requirements))


# -- what to delete ----------------------------------------------------------------------------


@dataclass
class _Doomed:
    """Files to delete, by kind, with their sizes."""

    content: dict[str, tuple[FileContent, int]] = field(default_factory=dict)
    manifests: dict[str, int] = field(default_factory=dict)
    manifest_lists: list[str] = field(default_factory=list)
    statistics: dict[str, int] = field(default_factory=dict)

    def paths(self) -> list[str]:
        return [*self.content, *self.manifests, *self.manifest_lists, *self.statistics]


def files_to_delete(
    io: FileIO, before: TableMetadata, after: TableMetadata, workers: int = DEFAULT_WORKERS
) -> _Doomed:
    """The files the snapshots of ``before`` that ``after`` no longer has reach, and that no
    snapshot of ``after`` reaches."""
    kept_ids = {s.snapshot_id for s in after.snapshots}
    expired = [s for s in before.snapshots if s.snapshot_id not in kept_ids]
    doomed = _Doomed()
    if not expired:
        return doomed
    retained = referenced_files(io, after, read_content=False, workers=workers)
    gone = referenced_files(io, before, expired, skip_manifests=retained.manifests, workers=workers)
    if gone.content_files:
        still = referenced_files(io, after, workers=workers)
        doomed.content = {
            p: v for p, v in gone.content_files.items() if p not in still.content_files
        }
    doomed.manifests = {p: m.manifest_length for p, m in gone.manifests.items()}
    doomed.manifest_lists = sorted(gone.manifest_lists - retained.manifest_lists)
    kept_stats = _statistics(after)
    doomed.statistics = {p: n for p, n in gone.statistics.items() if p not in kept_stats}
    return doomed


def _statistics(metadata: TableMetadata) -> set[str]:
    return {s.statistics_path for s in metadata.statistics} | {
        s.statistics_path for s in metadata.partition_statistics
    }


def _sizes(io: FileIO, paths: Sequence[str]) -> dict[str, int]:
    """The size of each file (0 when it cannot be found)."""

    def size(path: str) -> int:
        try:
            return io.new_input(path).length()
        except Exception:
            return 0

    return dict(zip(paths, parallel_map(size, list(paths), DEFAULT_WORKERS)))


def _result(
    doomed: _Doomed,
    plan: ExpirePlan | None,
    deleted: Iterable[str],
    failed: Mapping[str, str],
    list_sizes: Mapping[str, int],
    dry_run: bool,
) -> ExpireSnapshotsResult:
    done = set(deleted)
    by_content = {c: 0 for c in FileContent}
    size = 0
    for path, (content, length) in doomed.content.items():
        if path in done:
            by_content[content] += 1
            size += length
    manifests = [p for p in doomed.manifests if p in done]
    stats = [p for p in doomed.statistics if p in done]
    lists = [p for p in doomed.manifest_lists if p in done]
    size += sum(doomed.manifests[p] for p in manifests) + sum(doomed.statistics[p] for p in stats)
    size += sum(list_sizes.get(p, 0) for p in lists)
    return ExpireSnapshotsResult(
        deleted_data_files_count=by_content[FileContent.DATA],
        deleted_position_delete_files_count=by_content[FileContent.POSITION_DELETES],
        deleted_equality_delete_files_count=by_content[FileContent.EQUALITY_DELETES],
        deleted_manifest_files_count=len(manifests),
        deleted_manifest_lists_count=len(lists),
        deleted_statistics_files_count=len(stats),
        expired_snapshot_ids=plan.expired_snapshot_ids if plan else (),
        removed_refs=plan.removed_refs if plan else (),
        deleted_files=tuple(p for p in doomed.paths() if p in done),
        deleted_bytes=size,
        failed=dict(failed),
        dry_run=dry_run,
    )


# -- the operation -----------------------------------------------------------------------------


def _check_gc(table: TableLike) -> None:
    if not P.GC_ENABLED.get(table.metadata.properties):
        raise ValidationError(
            f"Cannot expire snapshots of table {table.name}: GC is disabled "
            f"({P.GC_ENABLED.name}=false; deleting files may corrupt other tables)"
        )


def expire_snapshots(
    table: TableLike,
    older_than: int | dt.datetime | dt.date | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] | None = None,
    clean_expired_metadata: bool = False,
    dry_run: bool = False,
    *,
    progress: Progress | None = None,
) -> ExpireSnapshotsResult:
    """Expire snapshots of ``table``, then delete the files that only they reached, as
    Java's ``expire_snapshots``: snapshots older than ``older_than`` (epoch milliseconds or a
    datetime, naive meaning UTC; default: the table's ``history.expire.max-snapshot-age-ms``,
    5 days) beyond the last ``retain_last`` (default ``history.expire.min-snapshots-to-keep``,
    1) of each branch, or exactly ``snapshot_ids``; refs past their ``max-ref-age-ms`` go too.
    The metadata is committed first; data, delete, manifest, manifest-list and statistics
    files no retained snapshot reaches are then deleted in parallel (a failed delete is
    reported in the result, never raised). ``dry_run`` commits and deletes nothing. Returns
    Java's six counts and the files; ``progress(done, total)`` follows the deletes. See the
    module docstring for how it flows.

    >>> table.expire_snapshots(retain_last=10)  # doctest: +SKIP
    """
    _check_gc(table)
    if retain_last is not None and retain_last < 1:
        raise ValidationError(
            f"Number of snapshots to retain must be at least 1, cannot be: {retain_last} "
            f"(table {table.name})"
        )
    older_than_ms = None if older_than is None else to_epoch_ms(older_than)
    ids = list(dict.fromkeys(snapshot_ids or ()))
    unknown = [i for i in ids if table.metadata.snapshot_by_id(i) is None]
    if unknown:
        raise ValidationError(f"Cannot expire unknown snapshot ids {unknown} in table {table.name}")
    now_ms = int(time.time() * 1000)
    io = table.io

    def choose(base: TableMetadata) -> ExpirePlan:
        return plan_expiry(
            io,
            base,
            now_ms=now_ms,
            older_than_ms=older_than_ms,
            retain_last=retain_last,
            snapshot_ids=ids,
            clean_expired_metadata=clean_expired_metadata,
        )

    if dry_run:
        base = table.metadata
        plan = choose(base)
        after = MetadataBuilder(base).apply_all(plan.updates).build()
        doomed = files_to_delete(io, base, after)
        sizes = _sizes(io, doomed.manifest_lists)
        return _result(doomed, plan, doomed.paths(), {}, sizes, True)

    action = _ExpireAction(io, choose)
    Transaction(table).add_action(action).commit_transaction()  # unknown outcome: raises
    if action.base is None or not action.plan or not action.plan.expired_snapshot_ids:
        return _result(_Doomed(), action.plan, (), {}, {}, False)
    doomed = files_to_delete(io, action.base, table.metadata)
    sizes = _sizes(io, doomed.manifest_lists)
    deleted: list[str] = []
    failed: dict[str, str] = {}
    total = len(doomed.paths())
    counter = itertools.count(1)
    lock = threading.Lock()

    def tick(path: str, ok: bool) -> None:
        if progress is not None:
            with lock:
                progress(next(counter), total)

    for kind, paths in (
        ("content", list(doomed.content)),
        ("manifest", list(doomed.manifests)),
        ("manifest list", doomed.manifest_lists),
        ("statistics", list(doomed.statistics)),
    ):
        outcome = delete_files(io, paths, kind=kind, on_done=tick)
        deleted += outcome.deleted
        failed.update(outcome.failed)
    return _result(doomed, action.plan, deleted, failed, sizes, False)
