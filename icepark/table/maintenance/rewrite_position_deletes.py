"""Compaction of position delete files, engine-neutral (Java's
``RewritePositionDeleteFilesSparkAction`` and ``RewritePositionDeletesCommitManager``).

1. Plan at the head of ``main``
   (:func:`~icepark.table.maintenance.rewrite_planner.plan_position_delete_groups`): on v2, the
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

4. Commit (:class:`~icepark.table.write.rewrite_files.RewriteFilesAction`, a ``replace``
   snapshot): the group's delete files are replaced by the new ones, which keep the highest
   data sequence number of those they replace (so they apply to exactly the same data files).
   With ``partial-progress.enabled`` groups commit in ``partial-progress.max-commits``
   batches, and a batch that fails is dropped (its files deleted) without failing the others.

The result has the columns of Java's procedure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from icepark.arrow.delete_writer import write_deletion_vectors, write_position_delete_file
from icepark.arrow.deletes import DeleteCache
from icepark.errors import CommitFailedError, CommitStateUnknownError, ValidationError
from icepark.expressions import AlwaysTrue, BooleanExpression
from icepark.io import FileIO
from icepark.manifest import DataFile, FileContent, ManifestContent
from icepark.planning.matching import FileMatcher
from icepark.planning.planner import FileScanTask, plan_files
from icepark.planning.walk import live_entries
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, Snapshot
from icepark.table.maintenance.rewrite_planner import (
    POSITION_DELETE_PLANNER_OPTIONS,
    FileGroupInfo,
    FileRewritePlan,
    PartitionKey,
    RewriteOptions,
    SizeThresholds,
    job_order,
    order_groups,
    pack_groups,
)
from icepark.table.transaction import Transaction
from icepark.table.write.rewrite_files import RewriteFilesAction
from icepark.table.write.row_delta import deleted_positions

if TYPE_CHECKING:
    from icepark.table.interface import TableLike

__all__ = [
    "GroupsRunner",
    "PositionDeletesGroup",
    "plan_position_delete_groups",
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

GroupsRunner = Callable[[TableMetadata, Sequence["PositionDeletesGroup"]], list[list[DataFile]]]
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


# -- planning ------------------------------------------------------------------------------------


@dataclass
class PositionDeletesGroup:
    """Position delete files of one partition rewritten together (Java's
    ``RewritePositionDeletesGroup``); ``deletes`` pairs each file with its data sequence
    number. On v3 tables a group is a whole partition, rewritten into one deletion vector
    per data file (``to_dvs``). Before the rewrite runs, ``live_paths`` (v2: the live data
    files of the partition) or ``data_tasks`` (v3: the partition's scan tasks with their
    position deletes) say which deletes still apply."""

    info: FileGroupInfo
    deletes: list[tuple[DataFile, int]]
    max_output_file_size: int
    expected_output_files: int
    to_dvs: bool = False
    added_files: list[DataFile] = field(default_factory=list)
    live_paths: frozenset[str] = frozenset()
    data_tasks: list[FileScanTask] = field(default_factory=list)

    @property
    def rewritten_files(self) -> list[DataFile]:
        return [d for d, _ in self.deletes]

    @property
    def input_file_count(self) -> int:
        return len(self.deletes)

    @property
    def input_size(self) -> int:
        return sum(_delete_size(d) for d, _ in self.deletes)

    @property
    def max_rewritten_sequence_number(self) -> int:
        return max(seq for _, seq in self.deletes)


def _delete_size(d: DataFile) -> int:
    if d.file_format.name == "PUFFIN" and d.content_size_in_bytes is not None:
        return d.content_size_in_bytes
    return d.file_size_in_bytes


def plan_position_delete_groups(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    options: RewriteOptions,
    row_filter: BooleanExpression | None = None,
    *,
    case_sensitive: bool = True,
) -> FileRewritePlan:
    """Java's ``BinPackRewritePositionDeletePlanner.plan``: live position delete files whose
    partition may match ``row_filter``, by partition and size (default target
    ``write.delete.target-file-size-bytes``). On v3 tables, the partitions where a data file
    has more than one position delete source (v2 files or DVs) are planned whole, to become
    one DV per data file."""
    sizes = SizeThresholds.from_options(
        options, P.DELETE_TARGET_FILE_SIZE_BYTES.get(metadata.properties)
    )
    order = job_order(options)
    if snapshot is None or metadata.format_version < 2:
        return FileRewritePlan([], {})
    matcher = FileMatcher(
        metadata.schema(),
        metadata.specs(),
        row_filter if row_filter is not None else AlwaysTrue(),
        case_sensitive,
    )
    by_partition: dict[PartitionKey, list[tuple[DataFile, int]]] = {}
    for _, entries in live_entries(io, metadata, snapshot, matcher, ManifestContent.DELETES):
        for e in entries:
            f = e.data_file
            if f.content == FileContent.POSITION_DELETES:
                key = (f.spec_id or 0, tuple(f.partition))
                by_partition.setdefault(key, []).append((f, e.sequence_number or 0))
    groups: list[PositionDeletesGroup] = []
    in_partition: dict[PartitionKey, int] = {}
    for key, files in by_partition.items():
        if metadata.format_version >= 3:
            if _needs_dv_rewrite(files):
                in_partition[key] = 1
                groups.append(
                    PositionDeletesGroup(
                        FileGroupInfo(len(groups) + 1, 1, key), files, sizes.max, 1, to_dvs=True
                    )
                )
            continue
        chosen = (
            files
            if sizes.rewrite_all
            else [f for f in files if sizes.outside_range(f[0].file_size_in_bytes)]
        )
        packed = pack_groups(chosen, lambda f: f[0].file_size_in_bytes, sizes.max_group_size)
        if not sizes.rewrite_all:
            packed = [
                g
                for g in packed
                if sizes.enough_input_files(len(g))
                or sizes.enough_content(len(g), sum(f.file_size_in_bytes for f, _ in g))
                or sizes.too_much_content(sum(f.file_size_in_bytes for f, _ in g))
            ]
        if not packed:
            continue
        in_partition[key] = len(packed)
        for number, group in enumerate(packed, 1):
            size = sum(f.file_size_in_bytes for f, _ in group)
            groups.append(
                PositionDeletesGroup(
                    FileGroupInfo(len(groups) + 1, number, key),
                    group,
                    sizes.write_max_file_size,
                    sizes.expected_output_files(size),
                )
            )
    return FileRewritePlan(order_groups(groups, order), in_partition)


def _needs_dv_rewrite(files: Sequence[tuple[DataFile, int]]) -> bool:
    """On v3: any v2 position delete file, or a data file with several DVs."""
    referenced: set[str] = set()
    for f, _ in files:
        if f.file_format.name != "PUFFIN":
            return True
        target = f.referenced_data_file or ""
        if target in referenced:
            return True
        referenced.add(target)
    return False


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
        table: TableLike,
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
        with Transaction(self.table) as tx:
            tx.add_action(action)


def _size(f: DataFile) -> int:
    if f.content_size_in_bytes is not None and f.referenced_data_file is not None:
        return f.content_size_in_bytes
    return f.file_size_in_bytes
