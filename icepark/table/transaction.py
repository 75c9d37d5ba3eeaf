"""Transactions: stage actions, commit them at once, retry conflicts by re-running them.

``with table.transaction() as tx:`` commits only when the block exits cleanly. A commit
that conflicts (``CommitFailedError``) is retried on fresh metadata per the table's
``commit.retry.*`` properties; files written for a commit that definitely failed are deleted;
after ``CommitStateUnknownError`` nothing is deleted.

A catalog committing several transactions at once (``Catalog.commit_transaction``) uses the
three-step form instead: :meth:`Transaction.prepare_commit` stages every action on the
table's current metadata and returns what to ask of the catalog (a :class:`PreparedCommit`),
without committing; then exactly one of :meth:`Transaction.finish_commit` (it landed) or
:meth:`Transaction.discard_commit` (it definitely failed: the files written for it are
deleted) follows. That form makes one attempt: a conflict is the caller's to retry.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from icepark.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    NoSuchFileError,
    ValidationError,
)
from icepark.expressions import BooleanExpression, as_filter
from icepark.manifest import DataFile
from icepark.planning.planner import FileScanTask
from icepark.spec import properties as P
from icepark.spec.builder import MetadataBuilder
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.spec.updates import (
    RemovePropertiesUpdate,
    SetPropertiesUpdate,
    TableRequirement,
    TableUpdate,
)
from icepark.table.interface import TableLike
from icepark.table.update.wap import staged, with_wap_id
from icepark.table.write.changes import apply_changes_action, delete_action, upsert_action
from icepark.table.write.data_files import rewrite_without, write_arrow
from icepark.table.write.operations import (
    Action,
    AppendAction,
    MetadataAction,
    OverwriteAction,
    ReplacePartitionsAction,
    Staged,
)

__all__ = ["Transaction", "RetryPolicy", "PreparedCommit"]


_APPEND_GROWTH = 2  # doublings of the wait of a commit that cannot conflict


class RetryPolicy:
    """``commit.retry.num-retries`` (4), ``min-wait-ms`` (100), ``max-wait-ms`` (60000) and
    ``total-timeout-ms`` (1800000), as Java reads them.

    A commit whose actions must re-validate (overwrites, row-level changes) retries at most
    ``num-retries`` times; one that cannot conflict (appends, metadata changes) retries until
    ``total-timeout-ms``: it can always win a race it lost. Waits grow exponentially from
    ``min-wait-ms`` up to ``max-wait-ms``, with full jitter (a uniform draw below the cap), so
    that writers that lost together do not retry together. For a commit that cannot conflict
    the cap stops growing at ``4 * min-wait-ms``: it wins as soon as it gets a turn, and
    longer waits only leave the catalog idle (8 writers x 50 appends: total commits/s from
    0.4-0.8x to 0.87-1.24x of one writer's on SQLite, 0.94x on PostgreSQL).
    """

    def __init__(self, properties: Mapping[str, str]) -> None:
        self.num_retries = P.COMMIT_NUM_RETRIES.get(properties)
        self.min_wait_ms = P.COMMIT_MIN_RETRY_WAIT_MS.get(properties)
        self.max_wait_ms = P.COMMIT_MAX_RETRY_WAIT_MS.get(properties)
        self.total_timeout_ms = P.COMMIT_TOTAL_RETRY_TIME_MS.get(properties)

    def wait_ms(self, attempt: int, revalidates: bool = True) -> float:
        """Exponential backoff with full jitter: uniform below ``min * 2^(attempt-1)``
        (capped at ``max``; without ``revalidates`` at ``min * 2^_APPEND_GROWTH``)."""
        growth = min(max(attempt - 1, 0), 30 if revalidates else _APPEND_GROWTH)
        cap = min(self.max_wait_ms, self.min_wait_ms * (2**growth))
        return float(random.uniform(0, max(cap, 1)))

    def may_retry(self, attempt: int, elapsed_ms: float, revalidates: bool) -> bool:
        """Whether failed attempt number ``attempt`` (1 for the first) may be retried."""
        if elapsed_ms > self.total_timeout_ms:
            return False
        return not revalidates or attempt <= self.num_retries


def _holds(requirement: TableRequirement, base: TableMetadata) -> bool:
    try:
        requirement.validate(base)
    except CommitFailedError:
        return False
    return True


@dataclass(frozen=True)
class PreparedCommit:
    """A transaction staged but not committed: what it asks of its table's catalog."""

    identifier: tuple[str, ...]
    requirements: list[TableRequirement]
    updates: list[TableUpdate]


class Transaction:
    """A group of changes to one table, committed together: ``with table.transaction() as
    tx:`` stages writes and metadata changes (``tx.append(...)``, ``tx.set_properties(...)``,
    ``tx.update_schema()``...) and commits them as one atomic change when the block exits
    cleanly; an exception in the block aborts it and deletes the files written for it.

    Args:
        table: the table changed (a :class:`~icepark.table.Table` or a staged table).
    """

    def __init__(self, table: TableLike) -> None:
        self._table = table
        self._start: TableMetadata = table.metadata
        self._actions: list[Action] = []
        self._done = False
        self._prepared_files: list[str] = []  # written by prepare_commit, until it is settled

    @property
    def table(self) -> TableLike:
        """The table the transaction changes."""
        return self._table

    @property
    def start_metadata(self) -> TableMetadata:
        """The table's metadata when the transaction began (what staged writes are based on)."""
        return self._start

    # -- staging ---------------------------------------------------------------------------

    def add_action(self, action: Action) -> Transaction:
        """Stage a change (an :class:`~icepark.table.write.operations.Action`: what the
        writers, updates and upkeep operations stage); for extensions, not everyday use.

        Args:
            action: the change, staged on each commit attempt's metadata.

        Returns:
            This transaction.

        Raises:
            ValidationError: the transaction is finished.
        """
        if self._done:
            raise ValidationError(f"Transaction on {self._table.name} is already finished")
        self._actions.append(action)
        return self

    def set_properties(self, properties: Mapping[str, str] | None = None, **kw: str) -> Transaction:
        """Stage setting table properties.

        Args:
            properties: the properties to set, as strings.
            **kw: more properties, for names that are identifiers.

        Returns:
            This transaction.

        Raises:
            ValidationError: the transaction is finished.
        """
        updates = {**(properties or {}), **kw}
        return self.add_action(MetadataAction([SetPropertiesUpdate(updates)]))

    def remove_properties(self, *keys: str) -> Transaction:
        """Stage removing table properties.

        Args:
            *keys: the property names.

        Returns:
            This transaction.

        Raises:
            ValidationError: the transaction is finished.
        """
        return self.add_action(MetadataAction([RemovePropertiesUpdate(tuple(keys))]))

    def update(self, *updates: TableUpdate) -> Transaction:
        """Stage REST-shaped metadata updates (:mod:`icepark.spec.updates`) as they are.

        Args:
            *updates: the updates, applied in order.

        Returns:
            This transaction.

        Raises:
            ValidationError: the transaction is finished.
        """
        return self.add_action(MetadataAction(list(updates)))

    # -- data ------------------------------------------------------------------------------

    def _write(self, data: Any, file_format: str | None = None) -> list[DataFile]:
        return write_arrow(self._table.io, self._start, data, file_format=file_format)

    def append(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        merge: bool = True,
        wap_id: str | None = None,
        file_format: str | None = None,
    ) -> Transaction:
        """Stage an append of ``data``: its files are written now, the snapshot is made at
        commit. A merge append (as Java's default) unless ``merge=False`` or the table's
        ``commit.manifest-merge.enabled`` is false.

        Args:
            data: a pyarrow Table, RecordBatch, RecordBatchReader or iterable of batches whose
                columns match the table's by name.
            branch: the branch written (``main`` by default); created when it does not exist.
            snapshot_properties: extra entries for the new snapshot's summary.
            merge: let the commit merge small manifests.
            wap_id: with ``write.wap.enabled=true``, stage the snapshot under this
                write-audit-publish id instead of making it current.
            file_format: ``parquet``, ``avro`` or ``orc`` for this write (default:
                ``write.format.default``).

        Returns:
            This transaction (calls chain).

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), a
                filter does not parse or bind, or the transaction is finished.
        """
        props = with_wap_id(self._start, snapshot_properties, wap_id, self._table.name)
        files = self._write(data, file_format)
        return self.add_action(
            staged(AppendAction(self._table.io, files, branch, props, merge=merge), wap_id)
        )

    def append_files(self, files: list[DataFile], *, branch: str = MAIN_BRANCH) -> Transaction:
        """Stage an append of data files written elsewhere (e.g. by Spark executors); their
        entries must describe files of this table's schema and spec.

        Args:
            files: the data files.
            branch: the branch written (``main`` by default).

        Returns:
            This transaction.

        Raises:
            ValidationError: the transaction is finished.
        """
        return self.add_action(AppendAction(self._table.io, files, branch, merge=True))

    def overwrite(
        self,
        data: Any,
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
        wap_id: str | None = None,
    ) -> Transaction:
        """Stage replacing the rows matching ``filter`` (all rows when None) with ``data``:
        the new files are written now, the rows to replace are found at commit.

        Args:
            data: the new rows (as for :meth:`append`), or None to only delete.
            filter: an icepark filter string or expression.
            branch: the branch written (``main`` by default); created when it does not exist.
            case_sensitive: whether column names in ``filter`` match case-sensitively.
            snapshot_properties: extra entries for the new snapshot's summary.
            wap_id: with ``write.wap.enabled=true``, stage the snapshot under this
                write-audit-publish id instead of making it current.

        Returns:
            This transaction (calls chain).

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), a
                filter does not parse or bind, or the transaction is finished.
        """
        props = with_wap_id(self._start, snapshot_properties, wap_id, self._table.name)
        row_filter = as_filter(filter)
        io = self._table.io
        files = self._write(data) if data is not None else []

        def rewrite(
            task: FileScanTask, base: TableMetadata, expr: BooleanExpression
        ) -> list[DataFile]:
            return rewrite_without(io, base, task, expr, case_sensitive)

        isolation = P.DELETE_ISOLATION_LEVEL.get(self._start.properties)
        action = OverwriteAction(
            io,
            files,
            branch,
            props,
            row_filter=row_filter,
            rewrite=rewrite,
            isolation=isolation,
            case_sensitive=case_sensitive,
        )
        return self.add_action(staged(action, wap_id))

    def overwrite_partitions(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        wap_id: str | None = None,
    ) -> Transaction:
        """Stage a dynamic overwrite: replace the partitions ``data`` touches.

        Args:
            data: the new rows (as for :meth:`append`).
            branch: the branch written (``main`` by default); created when it does not exist.
            snapshot_properties: extra entries for the new snapshot's summary.
            wap_id: with ``write.wap.enabled=true``, stage the snapshot under this
                write-audit-publish id instead of making it current.

        Returns:
            This transaction (calls chain).

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), a
                filter does not parse or bind, or the transaction is finished.
        """
        props = with_wap_id(self._start, snapshot_properties, wap_id, self._table.name)
        files = self._write(data)
        isolation = P.DELETE_ISOLATION_LEVEL.get(self._start.properties)
        action = ReplacePartitionsAction(self._table.io, files, branch, props, isolation=isolation)
        return self.add_action(staged(action, wap_id))

    # -- row-level changes (see icepark.table.write.changes) -----------------------------------

    def delete(
        self,
        filter: str | BooleanExpression,  # the public name
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Stage deleting the rows matching ``filter``, per ``write.delete.mode``
        (copy-on-write or merge-on-read).

        Args:
            filter: an icepark filter string or expression.
            branch: the branch written (``main`` by default); created when it does not exist.
            case_sensitive: whether column names in ``filter`` match case-sensitively.
            snapshot_properties: extra entries for the new snapshot's summary.

        Returns:
            This transaction (calls chain).

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), a
                filter does not parse or bind, or the transaction is finished.
        """
        return self.add_action(
            delete_action(
                self._table.io,
                self._start,
                as_filter(filter),
                branch=branch,
                case_sensitive=case_sensitive,
                snapshot_properties=dict(snapshot_properties or {}),
            )
        )

    def upsert(
        self,
        data: Any,
        on: list[str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Stage an upsert: update the rows whose key matches a row of ``data`` and insert
        the rest, per ``write.merge.mode``.

        Args:
            data: the rows (as for :meth:`append`).
            on: the key columns (default: the schema's identifier fields).
            branch: the branch written (``main`` by default); created when it does not exist.
            snapshot_properties: extra entries for the new snapshot's summary.

        Returns:
            This transaction (calls chain).

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), a
                filter does not parse or bind, or the transaction is finished.
        """
        return self.add_action(
            upsert_action(
                self._table.io,
                self._start,
                data,
                on,
                branch=branch,
                snapshot_properties=dict(snapshot_properties or {}),
            )
        )

    def apply_changes(
        self,
        data: Any,
        on: list[str] | None = None,
        op_column: str = "_op",
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Stage change data capture: ``I``/``U``/``D`` rows as data files plus an equality
        delete file on ``on`` (see :mod:`icepark.table.write.changes`).

        Args:
            data: the change rows, with the operation in ``op_column``.
            on: the key columns (default: the schema's identifier fields).
            op_column: the column holding ``I``, ``U`` or ``D`` (not written).
            branch: the branch written (``main`` by default); created when it does not exist.
            snapshot_properties: extra entries for the new snapshot's summary.

        Returns:
            This transaction (calls chain).

        Raises:
            ValidationError: the data does not fit the table's schema (naming the column), a
                filter does not parse or bind, or the transaction is finished.
        """
        return self.add_action(
            apply_changes_action(
                self._table.io,
                self._start,
                data,
                on,
                op_column,
                branch=branch,
                snapshot_properties=dict(snapshot_properties or {}),
            )
        )

    # -- committing ------------------------------------------------------------------------

    def _stage_all(
        self, base: TableMetadata
    ) -> tuple[list[TableUpdate], list[TableRequirement], list[str]]:
        updates: list[TableUpdate] = []
        requirements: list[TableRequirement] = []
        written: list[str] = []
        current = base
        try:
            for action in self._actions:
                staged: Staged = action.stage(current, self._start)
                written.extend(staged.written)
                updates.extend(staged.updates)
                for r in staged.requirements:
                    # Keep what holds against the base; a requirement on a snapshot staged
                    # earlier in this transaction is covered by the earlier action's own.
                    if r not in requirements and _holds(r, base):
                        requirements.append(r)
                current = MetadataBuilder(current).apply_all(staged.updates).build()
        except BaseException:
            self._delete(written)
            raise
        return updates, requirements, written

    def _delete(self, paths: list[str]) -> None:
        for path in paths:
            try:
                self._table.io.delete(path)
            except Exception:
                pass

    def _abort_actions(self) -> None:
        for action in self._actions:
            action.abort(self._table.io)

    def commit_transaction(self) -> TableLike:
        """Commit every staged change at once, as one new metadata; a conflict is retried on
        fresh metadata (each change checked again) until ``commit.retry.*`` runs out.

        Returns:
            The table, with its new metadata.

        Raises:
            ValidationError: the transaction is finished, or a change no longer applies.
            CommitFailedError: concurrent commits kept it from committing; every file written
                for it is deleted.
            CommitStateUnknownError: the catalog's answer was lost; nothing is deleted.
        """
        if self._done:
            raise ValidationError(f"Transaction on {self._table.name} is already finished")
        self._done = True
        if not self._actions:
            return self._table
        policy = RetryPolicy(self._table.metadata.properties)
        revalidates = any(action.revalidates for action in self._actions)
        started = time.monotonic()
        attempt = 0
        # Each attempt works on the table as it is now (as Java's SnapshotProducer refreshes
        # before it applies): a table loaded a while ago does not lose its first attempt.
        base = self._table.refresh().metadata
        while True:
            base_location = self._table.metadata_location
            try:
                updates, requirements, written = self._stage_all(base)
            except NoSuchFileError as exc:
                # A file of the base vanished while this attempt read it. When the table has
                # moved on meanwhile, a concurrent commit (an expiry) removed it: a conflict,
                # retried on the new metadata. Otherwise the table itself is damaged.
                if self._table.refresh().metadata_location == base_location:
                    self._abort_actions()
                    raise
                failure: Exception = CommitFailedError(
                    f"Table {self._table.name} changed while this commit read it: {exc}"
                )
                failure.__cause__ = exc
            except BaseException:
                self._abort_actions()
                raise
            else:
                try:
                    self._table.commit(requirements, updates)
                except CommitStateUnknownError:
                    raise  # nothing may be deleted: the commit may have landed
                except CommitFailedError as exc:
                    self._delete(written)
                    failure = exc
                except BaseException:
                    self._delete(written)
                    self._abort_actions()
                    raise
                else:
                    for action in self._actions:
                        action.committed(self._table.io)
                    return self._table
            attempt += 1
            elapsed_ms = (time.monotonic() - started) * 1000
            if not policy.may_retry(attempt, elapsed_ms, revalidates):
                self._abort_actions()
                raise failure
            time.sleep(policy.wait_ms(attempt, revalidates) / 1000)
            self._table.refresh()
            base = self._table.metadata

    # -- committing with other transactions (see the module) ---------------------------------

    def prepare_commit(self) -> PreparedCommit:
        """Stage every action on the table's current metadata and return the identifier,
        requirements and updates to commit, without committing (for
        :meth:`~icepark.catalog.Catalog.commit_transaction`); the
        transaction is then finished. Files written to stage it (manifests) are kept until
        :meth:`finish_commit` or :meth:`discard_commit`; a failure while staging deletes them
        and raises.

        Returns:
            The prepared commit.

        Raises:
            ValidationError: the transaction is finished, or a change does not apply.
        """
        if self._done:
            raise ValidationError(f"Transaction on {self._table.name} is already finished")
        self._done = True
        base = self._table.refresh().metadata
        try:
            updates, requirements, written = self._stage_all(base)
        except BaseException:
            self._abort_actions()
            raise
        self._prepared_files = written
        return PreparedCommit(self._table.identifier, requirements, updates)

    def finish_commit(self, metadata: TableMetadata, metadata_location: str) -> TableLike:
        """Record that the prepared commit landed: the table takes the new metadata.

        Args:
            metadata: the metadata the commit made.
            metadata_location: its file.

        Returns:
            The table, with its new metadata.
        """
        self._table.metadata, self._table.metadata_location = metadata, metadata_location
        self._prepared_files = []
        for action in self._actions:
            action.committed(self._table.io)
        return self._table

    def discard_commit(self) -> None:
        """The prepared commit (or the group it belonged to) definitely failed: delete every
        file written for it. Never call this after ``CommitStateUnknownError``."""
        self._delete(self._prepared_files)
        self._prepared_files = []
        self._abort_actions()

    def abort(self) -> None:
        """Drop the staged changes and delete the files written for them."""
        if not self._done:
            self._done = True
            self._abort_actions()

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit_transaction()
        else:
            self.abort()

    def __repr__(self) -> str:
        return f"Transaction({self._table.name!r}, {len(self._actions)} staged)"
