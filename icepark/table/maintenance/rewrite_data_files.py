"""Compaction of data files, engine-neutral: plan file groups, rewrite them, commit.

Java's ``RewriteDataFilesSparkAction`` and ``RewriteDataFilesCommitManager`` without Spark:
the engine supplies a *runner* that rewrites one :class:`RewriteFileGroup` (reads its files
with their deletes applied, writes ``expected_output_files`` files into the group's output
spec and returns them; :mod:`icepark.spark.maintenance.rewrite_data_files` is the Spark one). How
it flows:

1. Plan at the head of ``branch``
   (:func:`~icepark.table.maintenance.rewrite_planner.plan_data_file_groups`).
2. Rewrite the groups, ``max-concurrent-file-group-rewrites`` (5) at a time.
3. Commit with :class:`~icepark.table.write.rewrite_files.RewriteFilesAction` (a ``replace``
   snapshot validated against the commits since the plan's snapshot), the new files keeping
   the starting sequence number (``use-starting-sequence-number``, true):

   * without ``partial-progress.enabled``: every group in one commit; a group that fails to
     rewrite, or a commit that fails, deletes every file written and raises;
   * with it: groups are committed as they finish, ``ceil(groups / partial-progress.max-commits)``
     per commit. A commit that a concurrent change conflicts with is retried group by group,
     so that only the conflicting groups fail; a failed group's files are deleted and its
     files counted in ``failed_data_files_count``; more than
     ``partial-progress.max-failed-commits`` failed commits raise at the end.

4. With each commit go the deletes that the rewrite leaves applying to nothing: the
   deletion vectors of rewritten files (as Java), position delete files all of whose data
   files this run removed, and equality delete files whose partition keeps no data file older
   than them (Java leaves the last two for ``remove-dangling-deletes``). With
   ``remove-dangling-deletes`` a separate commit then removes the table's other dangling
   deletes (:mod:`icepark.table.maintenance.remove_dangling_deletes`).

The result has Java's columns; nothing is committed and nothing written is left behind when
it raises (except after an unknown commit state, when nothing may be deleted).
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from icepark.arrow.deletes import DeleteCache
from icepark.errors import CommitFailedError, CommitStateUnknownError, ValidationError
from icepark.expressions import BooleanExpression
from icepark.manifest import DataFile, FileContent, ManifestContent
from icepark.planning.walk import live_entries
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.maintenance.rewrite_planner import (
    DATA_PLANNER_OPTIONS,
    SHUFFLING_PLANNER_OPTIONS,
    FileRewritePlan,
    RewriteFileGroup,
    RewriteOptions,
    plan_data_file_groups,
)
from icepark.table.transaction import Transaction
from icepark.table.write.rewrite_files import DeleteKey, RewriteFilesAction, delete_key

if TYPE_CHECKING:
    from icepark.table.interface import TableLike

__all__ = [
    "GroupRunner",
    "ProgressListener",
    "RewriteDataFiles",
    "RewriteDataFilesResult",
    "ACTION_OPTIONS",
]

log = logging.getLogger(__name__)

MAX_CONCURRENT_FILE_GROUP_REWRITES = "max-concurrent-file-group-rewrites"
PARTIAL_PROGRESS_ENABLED = "partial-progress.enabled"
PARTIAL_PROGRESS_MAX_COMMITS = "partial-progress.max-commits"
PARTIAL_PROGRESS_MAX_FAILED_COMMITS = "partial-progress.max-failed-commits"
USE_STARTING_SEQUENCE_NUMBER = "use-starting-sequence-number"
REMOVE_DANGLING_DELETES = "remove-dangling-deletes"
ACTION_OPTIONS = frozenset(
    {
        MAX_CONCURRENT_FILE_GROUP_REWRITES,
        PARTIAL_PROGRESS_ENABLED,
        PARTIAL_PROGRESS_MAX_COMMITS,
        PARTIAL_PROGRESS_MAX_FAILED_COMMITS,
        USE_STARTING_SEQUENCE_NUMBER,
        REMOVE_DANGLING_DELETES,
    }
)

GroupRunner = Callable[[RewriteFileGroup], list[DataFile]]
"""Rewrites one group (its tasks read with their deletes) and returns the files written;
on failure it leaves nothing behind."""

ProgressListener = Callable[[str, RewriteFileGroup, FileRewritePlan], None]
"""Told ``"started"``, ``"written"``, ``"committed"`` or ``"failed"`` for each group."""


@dataclass(frozen=True)
class RewriteDataFilesResult:
    """What ``rewrite_data_files`` did, with the columns of Java's procedure."""

    rewritten_data_files_count: int = 0
    added_data_files_count: int = 0
    rewritten_bytes_count: int = 0
    failed_data_files_count: int = 0
    removed_delete_files_count: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def to_df(self, spark: Any) -> Any:
        """A one-row Spark DataFrame of the result (as ``CALL system.rewrite_data_files``)."""
        schema = ", ".join(
            f"{name} {'long' if name == 'rewritten_bytes_count' else 'int'}"
            for name in self.to_dict()
        )
        return spark.createDataFrame([tuple(self.to_dict().values())], schema)


class _Failures:
    def __init__(self) -> None:
        self.files = 0
        self.commits = 0


class RewriteDataFiles:
    """One ``rewrite_data_files`` run on ``table`` (see the module docstring).

    ``runner`` rewrites a group; ``runner_options`` are the option names it reads (refused
    by the planner otherwise); ``shuffling`` selects the planner of sort and z-order rewrites
    (which takes ``compression-factor``)."""

    def __init__(
        self,
        table: TableLike,
        runner: GroupRunner,
        *,
        options: Mapping[str, Any] | None = None,
        where: BooleanExpression | None = None,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        shuffling: bool = False,
        runner_options: Iterable[str] = (),
        description: str = "bin-pack",
        progress: ProgressListener | None = None,
    ) -> None:
        self.table = table
        self.runner = runner
        self.options = RewriteOptions(options, f"rewrite_data_files ({description})")
        planner = SHUFFLING_PLANNER_OPTIONS if shuffling else DATA_PLANNER_OPTIONS
        self.options.check_known(ACTION_OPTIONS | planner | set(runner_options))
        self.where = where
        self.branch = branch
        self.case_sensitive = case_sensitive
        self.shuffling = shuffling
        self.progress = progress
        opts = self.options
        self.max_concurrent = opts.integer(MAX_CONCURRENT_FILE_GROUP_REWRITES, 5)
        opts.require(self.max_concurrent >= 1, MAX_CONCURRENT_FILE_GROUP_REWRITES, "must be > 0")
        self.partial_progress = opts.flag(PARTIAL_PROGRESS_ENABLED, False)
        self.max_commits = opts.integer(PARTIAL_PROGRESS_MAX_COMMITS, 10)
        opts.require(
            not self.partial_progress or self.max_commits > 0,
            PARTIAL_PROGRESS_MAX_COMMITS,
            f"must be > 0 when {PARTIAL_PROGRESS_ENABLED} is true",
        )
        self.max_failed_commits = opts.integer(
            PARTIAL_PROGRESS_MAX_FAILED_COMMITS, self.max_commits
        )
        self.use_starting_sequence_number = opts.flag(USE_STARTING_SEQUENCE_NUMBER, True)
        self.remove_dangling = opts.flag(REMOVE_DANGLING_DELETES, False)
        self.metadata: TableMetadata = table.metadata
        head = self.metadata.snapshot_by_name(branch)
        self.start_id = head.snapshot_id if head is not None else None
        self.start_sequence = head.sequence_number if head is not None else 0
        self._cache = DeleteCache()
        self._removed_paths: set[str] = set()
        self._removed_deletes: set[DeleteKey] = set()
        self._committed_groups: list[RewriteFileGroup] = []
        self._live_data: list[tuple[DataFile, int]] | None = None
        self._delete_sequences: dict[DeleteKey, int] | None = None

    # -- planning ------------------------------------------------------------------------------

    def plan(self) -> FileRewritePlan:
        head = self.metadata.snapshot_by_name(self.branch)
        if head is None:
            return FileRewritePlan([], {})
        factor = None
        if self.shuffling:
            factor = self.options.number("compression-factor", 1.0)
        return plan_data_file_groups(
            self.table.io,
            self.metadata,
            head,
            self.options,
            self.where,
            case_sensitive=self.case_sensitive,
            compression_factor=factor,
        )

    # -- running -------------------------------------------------------------------------------

    def execute(self) -> RewriteDataFilesResult:
        plan = self.plan()
        if plan.total_group_count == 0 or not plan.groups:
            result = RewriteDataFilesResult()
        elif self.partial_progress:
            result = self._execute_with_partial_progress(plan)
        else:
            result = self._execute(plan)
        if self.remove_dangling:
            from icepark.table.maintenance.remove_dangling_deletes import remove_dangling_deletes

            removed = remove_dangling_deletes(self.table.refresh(), branch=self.branch)
            result = RewriteDataFilesResult(
                **{
                    **result.to_dict(),
                    "removed_delete_files_count": result.removed_delete_files_count + len(removed),
                }
            )
        return result

    def _notify(self, event: str, group: RewriteFileGroup, plan: FileRewritePlan) -> None:
        if self.progress is not None:
            self.progress(event, group, plan)

    def _rewrite(self, group: RewriteFileGroup, plan: FileRewritePlan) -> RewriteFileGroup:
        self._notify("started", group, plan)
        group.added_files = list(self.runner(group))
        self._notify("written", group, plan)
        return group

    def _abort(self, group: RewriteFileGroup) -> None:
        for f in group.added_files:
            try:
                self.table.io.delete(f.file_path)
            except Exception:
                pass
        group.added_files = []

    def _execute(self, plan: FileRewritePlan) -> RewriteDataFilesResult:
        done: list[RewriteFileGroup] = []
        error: BaseException | None = None
        with cf.ThreadPoolExecutor(max_workers=self.max_concurrent) as pool:
            futures = [pool.submit(self._rewrite, g, plan) for g in plan.groups]
            for future in cf.as_completed(futures):
                try:
                    done.append(future.result())
                except BaseException as exc:  # stop the others and clean up
                    error = error or exc
                    for f in futures:
                        f.cancel()
        if error is not None:
            for group in done:
                self._abort(group)
            for group in plan.groups:
                self._notify("failed", group, plan)
            raise error
        finished = {id(g) for g in done}
        ordered = [g for g in plan.groups if id(g) in finished]
        try:
            removed = self._commit(ordered)
        except (ValidationError, CommitFailedError) as exc:
            for group in ordered:
                self._notify("failed", group, plan)
            raise type(exc)(
                f"Cannot commit rewrite of table {self.table.name}: {exc}. This usually means "
                f"that a concurrent operation conflicted with it; set "
                f"{PARTIAL_PROGRESS_ENABLED}=true to commit file groups separately, so that "
                f"those that do not conflict succeed"
            ) from exc
        for group in ordered:
            self._notify("committed", group, plan)
        return self._result(ordered, 0, removed)

    def _execute_with_partial_progress(self, plan: FileRewritePlan) -> RewriteDataFilesResult:
        per_commit = -(-plan.total_group_count // self.max_commits)
        failures = _Failures()
        committed: list[RewriteFileGroup] = []
        removed = 0
        pending: list[RewriteFileGroup] = []

        def flush() -> None:
            nonlocal removed
            if pending:
                ok, count = self._commit_or_split(list(pending), plan, failures)
                committed.extend(ok)
                removed += count
                pending.clear()

        with cf.ThreadPoolExecutor(max_workers=self.max_concurrent) as pool:
            futures = {pool.submit(self._rewrite, g, plan): g for g in plan.groups}
            for future in cf.as_completed(futures):
                group = futures[future]
                try:
                    future.result()
                except BaseException as exc:
                    if not isinstance(exc, Exception):
                        raise
                    log.error("Failure during rewrite of %s: %s", group.info, exc)
                    failures.files += group.input_file_count
                    self._notify("failed", group, plan)
                    continue
                pending.append(group)
                if len(pending) >= per_commit:
                    flush()
        flush()
        if failures.commits > self.max_failed_commits:
            raise ValidationError(
                f"{PARTIAL_PROGRESS_ENABLED} is true but {failures.commits} rewrite commits of "
                f"table {self.table.name} failed, more than the maximum allowed failures of "
                f"{self.max_failed_commits} ({PARTIAL_PROGRESS_MAX_FAILED_COMMITS}); the "
                f"{len(committed)} file groups that committed are kept"
            )
        return self._result(committed, failures.files, removed)

    def _commit_or_split(
        self, groups: list[RewriteFileGroup], plan: FileRewritePlan, failures: _Failures
    ) -> tuple[list[RewriteFileGroup], int]:
        """Commit ``groups`` at once; if a concurrent change conflicts, one by one."""
        try:
            removed = self._commit(groups, abort=len(groups) == 1)
        except CommitStateUnknownError:
            raise
        except (ValidationError, CommitFailedError) as exc:
            if len(groups) > 1:
                log.warning(
                    "Commit of %d file groups failed (%s), committing them one by one",
                    len(groups),
                    exc,
                )
                ok: list[RewriteFileGroup] = []
                total = 0
                for group in groups:
                    done, count = self._commit_or_split([group], plan, failures)
                    ok.extend(done)
                    total += count
                return ok, total
            log.error("Cannot commit file group %s: %s", groups[0].info, exc)
            failures.commits += 1
            failures.files += groups[0].input_file_count
            self._notify("failed", groups[0], plan)
            return [], 0
        for group in groups:
            self._notify("committed", group, plan)
        return groups, removed

    # -- committing ----------------------------------------------------------------------------

    def _commit(self, groups: Sequence[RewriteFileGroup], abort: bool = True) -> int:
        """One ``replace`` commit of ``groups``; returns the delete files it removed. With
        ``abort`` a definite failure deletes the groups' files (else the caller retries)."""
        rewritten = [f for g in groups for f in g.rewritten_files]
        added = [f for g in groups for f in g.added_files]
        dvs: dict[DeleteKey, DataFile] = {}
        for g in groups:
            for d in g.dangling_dvs:
                dvs.setdefault(delete_key(d), d)
        paths = {f.file_path for f in rewritten}
        dangling = self._dangling(groups, self._removed_paths | paths)
        action = RewriteFilesAction(
            self.table.io,
            rewritten_data_files=rewritten,
            added_data_files=added,
            replaced_delete_files=list(dvs.values()),
            starting_snapshot_id=self.start_id,
            data_sequence_number=self.start_sequence if self.use_starting_sequence_number else None,
            dangling_delete_files=dangling,
            branch=self.branch,
        )
        action.delete_on_abort = abort
        tx = Transaction(self.table)
        tx.add_action(action)
        tx.commit_transaction()
        removed = [f for f in action.removed_files if f.content != FileContent.DATA]
        self._removed_paths |= paths
        self._removed_deletes |= {delete_key(f) for f in removed}
        self._committed_groups.extend(groups)
        return len(removed)

    def _dangling(
        self, groups: Sequence[RewriteFileGroup], removed_paths: set[str]
    ) -> list[tuple[DataFile, int]]:
        """Position and equality delete files of the run's groups that apply to no data file
        once ``removed_paths`` are gone (DVs go with their data files separately)."""
        candidates: dict[DeleteKey, DataFile] = {}
        for g in [*self._committed_groups, *groups]:
            for t in g.tasks:
                for d in t.delete_files:
                    key = delete_key(d)
                    if d.referenced_data_file is not None or key in self._removed_deletes:
                        continue
                    candidates.setdefault(key, d)
        out: list[tuple[DataFile, int]] = []
        for key, d in candidates.items():
            if d.content == FileContent.POSITION_DELETES:
                if self._cache.referenced_data_files(self.table.io, d) <= removed_paths:
                    out.append((d, self._delete_sequence(key)))
            elif d.content == FileContent.EQUALITY_DELETES:
                seq = self._delete_sequence(key)
                if self._equality_dangles(d, seq, removed_paths):
                    out.append((d, seq))
        return out

    def _delete_sequence(self, key: DeleteKey) -> int:
        if self._delete_sequences is None:
            head = self.metadata.snapshot_by_id(self.start_id) if self.start_id else None
            self._delete_sequences = {
                delete_key(e.data_file): e.sequence_number or 0
                for _, entries in live_entries(
                    self.table.io, self.metadata, head, None, ManifestContent.DELETES
                )
                for e in entries
            }
        return self._delete_sequences.get(key, 0)

    def _equality_dangles(self, d: DataFile, seq: int, removed_paths: set[str]) -> bool:
        if self._live_data is None:
            head = self.metadata.snapshot_by_id(self.start_id) if self.start_id else None
            self._live_data = [
                (e.data_file, e.sequence_number or 0)
                for _, entries in live_entries(
                    self.table.io, self.metadata, head, None, ManifestContent.DATA
                )
                for e in entries
            ]
        spec = self.metadata.spec_by_id(d.spec_id or 0)
        everywhere = spec is None or spec.is_unpartitioned
        for f, data_seq in self._live_data:
            if data_seq >= seq or f.file_path in removed_paths:
                continue
            if everywhere or (
                (f.spec_id or 0) == (d.spec_id or 0) and tuple(f.partition) == tuple(d.partition)
            ):
                return False
        return True

    def _result(
        self, groups: Sequence[RewriteFileGroup], failed_files: int, removed_deletes: int
    ) -> RewriteDataFilesResult:
        return RewriteDataFilesResult(
            rewritten_data_files_count=sum(g.input_file_count for g in groups),
            added_data_files_count=sum(len(g.added_files) for g in groups),
            rewritten_bytes_count=sum(g.input_size for g in groups),
            failed_data_files_count=failed_files,
            removed_delete_files_count=removed_deletes,
        )
