"""Compaction of position delete files, engine-neutral (Java's
``RewritePositionDeleteFilesSparkAction`` and ``RewritePositionDeletesCommitManager``).

1. Plan at the head of ``main``
   (:func:`~icepark.table.rewrite_planner.plan_position_delete_groups`): on v2, the
   partition's small (or large) position delete files, packed by size; on v3, each
   partition where a data file has more than one position delete source.
2. Tell each group what still applies (:func:`prepare_groups`): the partition's live data
   files (v2), or its scan tasks with their position deletes as a reader applies them (v3).
3. Rewrite each group (:func:`rewrite_group`, run by the engine, e.g. in Spark tasks):

   * v2: the group's deletes whose data file is still live, merged and sorted by path and
     position, into ``expected_output_files`` position delete files of the partition (split
     at data file boundaries); deletes of removed data files are dropped;
   * v3: one deletion vector per data file, holding every position its DVs and position delete
     files delete.

4. Commit (:class:`~icepark.table.rewrite_files.RewriteFilesAction`, a ``replace``
   snapshot): the group's delete files are replaced by the new ones, which keep the highest
   data sequence number of those they replace (so they apply to exactly the same data files).
   With ``partial-progress.enabled`` groups commit in ``partial-progress.max-commits``
   batches, and a batch that fails is dropped (its files deleted) without failing the others.

The result has the columns of Java's procedure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from icepark.arrow.delete_writer import write_deletion_vectors, write_position_delete_file
from icepark.arrow.deletes import DeleteCache
from icepark.errors import CommitFailedError, CommitStateUnknownError, ValidationError
from icepark.expressions import AlwaysTrue, BooleanExpression
from icepark.io import FileIO
from icepark.manifest import DataFile, FileContent, ManifestContent
from icepark.planning.planner import plan_files
from icepark.planning.walk import live_entries
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.rewrite_files import RewriteFilesAction
from icepark.table.rewrite_planner import (
    POSITION_DELETE_PLANNER_OPTIONS,
    FileRewritePlan,
    PositionDeletesGroup,
    RewriteOptions,
    plan_position_delete_groups,
)
from icepark.table.row_delta import deleted_positions
from icepark.table.table import Table

__all__ = [
    "GroupsRunner",
    "RewritePositionDeleteFiles",
    "RewritePositionDeleteFilesResult",
    "prepare_groups",
    "rewrite_group",
]

log = logging.getLogger(__name__)

_OPTIONS = POSITION_DELETE_PLANNER_OPTIONS | {
    "max-concurrent-file-group-rewrites",
    "partial-progress.enabled",
    "partial-progress.max-commits",
}

GroupsRunner = Callable[[TableMetadata, Sequence[PositionDeletesGroup]], list[list[DataFile]]]
"""Runs :func:`rewrite_group` for each group (e.g. as Spark tasks); the files of each."""


@dataclass(frozen=True)
class RewritePositionDeleteFilesResult:
    """What ``rewrite_position_delete_files`` did, with the columns of Java's procedure."""

    rewritten_delete_files_count: int = 0
    added_delete_files_count: int = 0
    rewritten_bytes_count: int = 0
    added_bytes_count: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def to_df(self, spark: Any) -> Any:
        """A one-row Spark DataFrame of the result."""
        schema = ", ".join(
            f"{n} {'long' if n.endswith('bytes_count') else 'int'}" for n in self.to_dict()
        )
        return spark.createDataFrame([tuple(self.to_dict().values())], schema)


def prepare_groups(
    io: FileIO, metadata: TableMetadata, groups: Sequence[PositionDeletesGroup]
) -> None:
    """Give each group what it needs to know which of its deletes still apply."""
    head = metadata.current_snapshot()
    if any(not g.to_dvs for g in groups):
        live: dict[tuple[int, tuple[Any, ...]], set[str]] = {}
        for _, entries in live_entries(io, metadata, head, None, ManifestContent.DATA):
            for e in entries:
                f = e.data_file
                live.setdefault((f.spec_id or 0, tuple(f.partition)), set()).add(f.file_path)
        for g in groups:
            if not g.to_dvs:
                g.live_paths = frozenset(live.get(g.info.partition, ()))
    if any(g.to_dvs for g in groups):
        by_partition: dict[tuple[int, tuple[Any, ...]], list[Any]] = {}
        for t in plan_files(io, metadata, head, AlwaysTrue()):
            if any(d.content == FileContent.POSITION_DELETES for d in t.delete_files):
                by_partition.setdefault((t.spec_id, tuple(t.file.partition)), []).append(t)
        for g in groups:
            if g.to_dvs:
                g.data_tasks = by_partition.get(g.info.partition, [])


def rewrite_group(
    io: FileIO, metadata: TableMetadata, group: PositionDeletesGroup
) -> list[DataFile]:
    """Write the group's replacement delete files (see the module docstring); on failure
    nothing is left behind."""
    cache = DeleteCache()
    written: list[DataFile] = []
    try:
        if group.to_dvs:
            vectors = []
            for task in group.data_tasks:
                only_positions = [
                    d for d in task.delete_files if d.content == FileContent.POSITION_DELETES
                ]
                positions = deleted_positions(
                    io, replace(task, delete_files=tuple(only_positions)), cache
                )
                vectors.append((task.file, positions))
            written.extend(write_deletion_vectors(io, metadata, vectors))
            return written
        merged: dict[str, list[np.ndarray]] = {}
        for d, _ in group.deletes:
            for path in sorted(cache.referenced_data_files(io, d)):
                if path in group.live_paths:
                    merged.setdefault(path, []).append(cache.positions(io, d, path))
        deletes = {p: np.unique(np.concatenate(parts)) for p, parts in merged.items()}
        spec_id, partition = group.info.partition
        for chunk in _chunks(deletes, group.expected_output_files):
            f = write_position_delete_file(io, metadata, spec_id, partition, chunk)
            if f is not None:
                written.append(f)
        return written
    except BaseException:
        for f in written:
            try:
                io.delete(f.file_path)
            except Exception:
                pass
        raise


def _chunks(deletes: Mapping[str, np.ndarray], parts: int) -> list[dict[str, np.ndarray]]:
    """Split the deletes by data file, in path order, into ``parts`` of about equal rows."""
    paths = sorted(deletes)
    total = sum(len(deletes[p]) for p in paths)
    if parts <= 1 or not total:
        return [dict(deletes)] if paths else []
    per_part = -(-total // parts)
    out: list[dict[str, np.ndarray]] = [{}]
    filled = 0
    for p in paths:
        if filled >= per_part:
            out.append({})
            filled = 0
        out[-1][p] = deletes[p]
        filled += len(deletes[p])
    return out


class RewritePositionDeleteFiles:
    """One ``rewrite_position_delete_files`` run on ``table``; ``runner`` rewrites groups."""

    def __init__(
        self,
        table: Table,
        runner: GroupsRunner,
        *,
        options: Mapping[str, Any] | None = None,
        where: BooleanExpression | None = None,
        case_sensitive: bool = True,
    ) -> None:
        self.table = table
        self.runner = runner
        self.options = RewriteOptions(options, "rewrite_position_delete_files")
        self.options.check_known(_OPTIONS)
        self.where = where
        self.case_sensitive = case_sensitive
        self.partial_progress = self.options.flag("partial-progress.enabled", False)
        self.max_commits = self.options.integer("partial-progress.max-commits", 10)
        self.options.require(
            not self.partial_progress or self.max_commits > 0,
            "partial-progress.max-commits",
            "must be > 0 when partial-progress.enabled is true",
        )
        concurrent = self.options.integer("max-concurrent-file-group-rewrites", 5)
        self.options.require(concurrent >= 1, "max-concurrent-file-group-rewrites", "must be > 0")
        self.metadata = table.metadata

    def plan(self) -> FileRewritePlan:
        return plan_position_delete_groups(
            self.table.io,
            self.metadata,
            self.metadata.current_snapshot(),
            self.options,
            self.where,
            case_sensitive=self.case_sensitive,
        )

    def execute(self) -> RewritePositionDeleteFilesResult:
        plan = self.plan()
        groups: list[PositionDeletesGroup] = list(plan.groups)
        if not groups:
            return RewritePositionDeleteFilesResult()
        prepare_groups(self.table.io, self.metadata, groups)
        for group, files in zip(groups, self.runner(self.metadata, groups)):
            group.added_files = list(files)
        per_commit = len(groups)
        if self.partial_progress:
            per_commit = -(-len(groups) // self.max_commits)
        done: list[PositionDeletesGroup] = []
        for start in range(0, len(groups), per_commit):
            batch = groups[start : start + per_commit]
            try:
                self._commit(batch)
            except CommitStateUnknownError:
                raise
            except (ValidationError, CommitFailedError) as exc:
                if not self.partial_progress:
                    for group in groups[start + per_commit :]:
                        self._abort(group)
                    raise type(exc)(
                        f"Cannot commit rewrite of position delete files of table "
                        f"{self.table.name}: {exc}. Set partial-progress.enabled=true to commit "
                        f"file groups separately"
                    ) from exc
                log.error("Cannot commit %d position delete groups: %s", len(batch), exc)
                continue
            done.extend(batch)
        return RewritePositionDeleteFilesResult(
            rewritten_delete_files_count=sum(g.input_file_count for g in done),
            added_delete_files_count=sum(len(g.added_files) for g in done),
            rewritten_bytes_count=sum(g.input_size for g in done),
            added_bytes_count=sum(_size(f) for g in done for f in g.added_files),
        )

    def _abort(self, group: PositionDeletesGroup) -> None:
        for path in sorted({f.file_path for f in group.added_files}):
            try:
                self.table.io.delete(path)
            except Exception:
                pass

    def _commit(self, groups: Sequence[PositionDeletesGroup]) -> None:
        head = self.metadata.snapshot_by_name(MAIN_BRANCH)
        replaced = [d for g in groups for d, _ in g.deletes]
        added = [f for g in groups for f in g.added_files]
        sequences = {
            f.file_path: g.max_rewritten_sequence_number for g in groups for f in g.added_files
        }
        action = RewriteFilesAction(
            self.table.io,
            replaced_delete_files=replaced,
            added_delete_files=added,
            starting_snapshot_id=head.snapshot_id if head else None,
            delete_sequence_numbers=sequences,
        )
        with self.table.transaction() as tx:
            tx.add_action(action)


def _size(f: DataFile) -> int:
    if f.content_size_in_bytes is not None and f.referenced_data_file is not None:
        return f.content_size_in_bytes
    return f.file_size_in_bytes
