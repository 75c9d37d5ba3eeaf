"""Managing snapshots and refs: rollback, cherry-pick, fast-forward, branch and tag updates.

Each operation is one commit, made by an :class:`~icepark.table.write.operations.Action` that checks
its rules against the metadata of every attempt (a commit that loses a race is re-checked on
the fresh metadata, not replayed), as Java's ``SetSnapshotOperation``,
``CherryPickOperation`` and ``UpdateSnapshotReferencesOperation`` do:

* **set current snapshot** (``set_current_snapshot``): ``main`` moves to any known snapshot
  (or a ref's snapshot). **Rollback** (``rollback_to_snapshot``, ``rollback_to_timestamp``)
  moves it only to an ancestor of the current snapshot: the given one, or the newest ancestor
  strictly older than the time.
* **cherry-pick** (``cherrypick_snapshot``) applies one snapshot's changes on top of the
  current one: a snapshot whose parent is the current snapshot is fast-forwarded to (it
  becomes current, no new snapshot); an ``append`` is re-applied as a new snapshot adding the
  same data files; a dynamic overwrite (``replace-partitions``) is re-applied if its parent
  is an ancestor of the current snapshot, every file it removed is still in the table and no
  commit since its parent added files to the partitions it replaces; anything else is
  refused. The new snapshot records ``source-snapshot-id`` and, for a staged WAP snapshot,
  ``published-wap-id``; a snapshot already in the history (itself, or picked into it) and a
  WAP id published before are refused. ``publish_changes`` cherry-picks the snapshot staged
  under a WAP id (:mod:`icepark.table.update.wap`).
* **refs**: ``create_branch``/``create_tag`` add a ref (at the current snapshot by
  default), ``remove_ref`` drops one; ``fast_forward(branch, to)`` moves a branch to another
  ref's snapshot when the branch's snapshot is an ancestor of it (and creates the branch if
  it does not exist);
  ``replace_branch``/``replace_tag`` move a ref to any snapshot; ``set_ref_retention`` sets a
  ref's ``min-snapshots-to-keep``, ``max-snapshot-age-ms`` and ``max-ref-age-ms``.

Bad input raises :class:`~icepark.errors.ValidationError` (or a subclass) naming the table,
snapshot or ref, and commits nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.manifest import DataFile, ManifestContent, ManifestEntryStatus
from icepark.planning.walk import changes_in, changes_since
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, Operation, Snapshot, SnapshotRef, SnapshotRefType
from icepark.spec.updates import (
    AssertRefSnapshotId,
    AssertTableUUID,
    RemoveSnapshotRefUpdate,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
)
from icepark.table.interface import TableLike
from icepark.table.scan import to_epoch_ms
from icepark.table.transaction import Transaction
from icepark.table.update.wap import (
    PUBLISHED_WAP_ID_PROP,
    SOURCE_SNAPSHOT_ID_PROP,
    staged_wap_id,
    validate_wap_publish,
)
from icepark.table.write.operations import Action, Staged
from icepark.table.write.producers import SnapshotProducer

_T = TypeVar("_T", bound=TableLike)

__all__ = [
    "CherrypickAncestorCommitError",
    "CherryPickAction",
    "RefUpdateAction",
    "cherrypick_snapshot",
    "create_branch",
    "create_tag",
    "fast_forward",
    "publish_changes",
    "remove_ref",
    "replace_branch",
    "replace_tag",
    "rollback_to_snapshot",
    "rollback_to_timestamp",
    "set_current_snapshot",
    "set_ref_retention",
]

_REPLACE_PARTITIONS_PROP = "replace-partitions"


class CherrypickAncestorCommitError(ValidationError):
    """The snapshot to cherry-pick is already in the current history (itself or picked)."""


# -- ref updates -----------------------------------------------------------------------------

# Given the metadata of an attempt, the refs to set (a SnapshotRef) or remove (None).
RefChanges = Callable[[TableMetadata], Mapping[str, SnapshotRef | None]]


class RefUpdateAction(Action):
    """Sets and removes refs as ``changes`` decides on each attempt's metadata; requires that
    every ref it changes is still where the attempt saw it (as Java's UpdateRequirements)."""

    revalidates = True

    def __init__(self, changes: RefChanges) -> None:
        self.changes = changes

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        updates: list[TableUpdate] = []
        requirements: list[TableRequirement] = [AssertTableUUID(base.table_uuid)]
        for name, ref in self.changes(base).items():
            existing = base.ref(name)
            # required even when unchanged: the decision was made on this ref's snapshot
            requirements.append(
                AssertRefSnapshotId(name, existing.snapshot_id if existing else None)
            )
            if ref == existing:
                continue
            if ref is None:
                updates.append(RemoveSnapshotRefUpdate(name))
            else:
                updates.append(SetSnapshotRefUpdate.of(name, ref))
        return Staged(updates, requirements)


def _commit(table: _T, action: Action) -> _T:
    Transaction(table).add_action(action).commit_transaction()
    return table


def _apply(table: _T, changes: RefChanges) -> _T:
    """Check ``changes`` on the table as it is now (raising before any commit), then commit
    them, checked again on every attempt."""
    table.refresh()
    changes(table.metadata)
    return _commit(table, RefUpdateAction(changes))


def _moved(ref: SnapshotRef | None, snapshot_id: int, kind: SnapshotRefType) -> SnapshotRef:
    """``ref`` pointed at ``snapshot_id``, keeping its retention (a fresh ref of ``kind``
    when None)."""
    if ref is None:
        return SnapshotRef(snapshot_id, kind)
    return SnapshotRef(
        snapshot_id,
        ref.type,
        ref.min_snapshots_to_keep,
        ref.max_snapshot_age_ms,
        ref.max_ref_age_ms,
    )


def _require_snapshot(metadata: TableMetadata, snapshot_id: int, doing: str) -> Snapshot:
    snapshot = metadata.snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise ValidationError(
            f"Cannot {doing} unknown snapshot id {snapshot_id} in table {metadata.location}"
        )
    return snapshot


def _current_ancestor_ids(metadata: TableMetadata) -> set[int]:
    return {s.snapshot_id for s in metadata.ancestors_of(metadata.current_snapshot_id)}


def _main_to(target: int) -> RefChanges:
    def changes(base: TableMetadata) -> Mapping[str, SnapshotRef | None]:
        return {MAIN_BRANCH: _moved(base.ref(MAIN_BRANCH), target, SnapshotRefType.BRANCH)}

    return changes


# -- current snapshot ------------------------------------------------------------------------


def set_current_snapshot(table: _T, snapshot_id: int | None = None, ref: str | None = None) -> _T:
    """Make ``snapshot_id`` (or the snapshot of branch or tag ``ref``) the current snapshot,
    ancestor or not (Java's ``setCurrentSnapshot``; Spark's ``set_current_snapshot``)."""
    if (snapshot_id is None) == (ref is None):
        raise ValidationError(
            f"Give either snapshot_id or ref to set the current snapshot of table {table.name}"
        )
    table.refresh()
    if ref is not None:
        found = table.metadata.ref(ref)
        if found is None:
            raise ValidationError(f"Cannot find ref {ref!r} in table {table.name}")
        snapshot_id = found.snapshot_id
    assert snapshot_id is not None
    target = snapshot_id

    def changes(base: TableMetadata) -> Mapping[str, SnapshotRef | None]:
        _require_snapshot(base, target, "set the current snapshot to")
        return _main_to(target)(base)

    return _apply(table, changes)


def _rollback_changes(target: int) -> RefChanges:
    def changes(base: TableMetadata) -> Mapping[str, SnapshotRef | None]:
        _require_snapshot(base, target, "roll back to")
        if target not in _current_ancestor_ids(base):
            raise ValidationError(
                f"Cannot roll back table {base.location} to snapshot {target}: not an "
                "ancestor of the current snapshot"
            )
        return _main_to(target)(base)

    return changes


def rollback_to_snapshot(table: _T, snapshot_id: int) -> _T:
    """Make ``snapshot_id``, an ancestor of the current snapshot, current again."""
    return _apply(table, _rollback_changes(snapshot_id))


def rollback_to_timestamp(table: _T, timestamp: int | dt.datetime | dt.date) -> _T:
    """Make current the newest ancestor of the current snapshot committed strictly before
    ``timestamp`` (epoch milliseconds or a datetime; naive means UTC)."""
    ms = to_epoch_ms(timestamp)
    table.refresh()
    older = table.metadata.ancestors_of(table.metadata.current_snapshot_id)
    found = max(
        (s for s in older if s.timestamp_ms < ms), key=lambda s: s.timestamp_ms, default=None
    )
    if found is None:
        raise ValidationError(
            f"Cannot roll back table {table.name}: no ancestor of the current snapshot is "
            f"older than {ms} ({dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat()})"
        )
    return rollback_to_snapshot(table, found.snapshot_id)


# -- refs ------------------------------------------------------------------------------------


def _existing_ref(base: TableMetadata, name: str, kind: SnapshotRefType) -> SnapshotRef:
    ref = base.ref(name)
    if ref is None:
        raise ValidationError(
            f"{kind.value.capitalize()} does not exist: {name!r} in table {base.location}"
        )
    if ref.type is not kind:
        other = "tag" if kind is SnapshotRefType.BRANCH else "branch"
        raise ValidationError(
            f"Ref {name!r} is a {other}, not a {kind.value}, in table {base.location}"
        )
    return ref


_RETENTION = ("min_snapshots_to_keep", "max_snapshot_age_ms", "max_ref_age_ms")


def _retained(ref: SnapshotRef, retention: Mapping[str, int | None]) -> SnapshotRef:
    """``ref`` with the retention settings given in ``retention`` (None keeps its own)."""
    if all(v is None for v in retention.values()):
        return ref
    unknown = set(retention) - set(_RETENTION)
    if unknown:
        raise ValidationError(f"Unknown ref retention settings: {sorted(unknown)}")

    def pick(key: str, old: int | None) -> int | None:
        new = retention.get(key)
        return old if new is None else new

    return SnapshotRef(
        ref.snapshot_id,
        ref.type,
        pick("min_snapshots_to_keep", ref.min_snapshots_to_keep),
        pick("max_snapshot_age_ms", ref.max_snapshot_age_ms),
        pick("max_ref_age_ms", ref.max_ref_age_ms),
    )


def replace_branch(table: _T, name: str, to: int | str, **retention: int | None) -> _T:
    """Point branch ``name`` at snapshot ``to`` (an id) or at the snapshot of ref ``to`` (a
    name), keeping its retention unless ``retention`` (``min_snapshots_to_keep``,
    ``max_snapshot_age_ms``, ``max_ref_age_ms``) sets some, in the same commit; with a ref
    name a missing branch is created (as Java)."""

    def changes(base: TableMetadata) -> Mapping[str, SnapshotRef | None]:
        if isinstance(to, str):
            moved = dict(_to_ref(base, name, to, fast_forward=False))
            if name not in moved:
                existing = base.ref(name)
                assert existing is not None
                moved[name] = existing
        else:
            _require_snapshot(base, to, f"point branch {name!r} at")
            existing = _existing_ref(base, name, SnapshotRefType.BRANCH)
            moved = {name: _moved(existing, to, SnapshotRefType.BRANCH)}
        ref = moved[name]
        assert ref is not None
        return {name: _retained(ref, retention)}

    return _apply(table, changes)


def replace_tag(table: _T, name: str, snapshot_id: int, **retention: int | None) -> _T:
    """Point tag ``name`` at ``snapshot_id``, keeping its retention unless ``retention``
    (``max_ref_age_ms``) sets it, in the same commit."""

    def changes(base: TableMetadata) -> Mapping[str, SnapshotRef | None]:
        _require_snapshot(base, snapshot_id, f"point tag {name!r} at")
        existing = _existing_ref(base, name, SnapshotRefType.TAG)
        return {name: _retained(_moved(existing, snapshot_id, SnapshotRefType.TAG), retention)}

    return _apply(table, changes)


def _to_ref(
    base: TableMetadata, name: str, to: str, fast_forward: bool
) -> dict[str, SnapshotRef | None]:
    target = base.ref(to)
    if target is None:
        raise ValidationError(f"Ref does not exist: {to!r} in table {base.location}")
    branch = base.ref(name)
    if branch is None:
        return {name: SnapshotRef(target.snapshot_id, SnapshotRefType.BRANCH)}
    if not branch.is_branch:
        raise ValidationError(f"Ref {name!r} is a tag, not a branch, in table {base.location}")
    if branch.snapshot_id == target.snapshot_id:
        return {}
    if fast_forward:
        ancestors = {s.snapshot_id for s in base.ancestors_of(target.snapshot_id)}
        if branch.snapshot_id not in ancestors:
            raise ValidationError(
                f"Cannot fast-forward: {name} is not an ancestor of {to} (snapshot "
                f"{branch.snapshot_id} is not in the history of {target.snapshot_id}, table "
                f"{base.location})"
            )
    return {name: _moved(branch, target.snapshot_id, SnapshotRefType.BRANCH)}


def fast_forward(table: _T, branch: str, to: str) -> _T:
    """Move ``branch`` to the snapshot of ref ``to``, which must descend from the branch's
    snapshot (Java's ``fastForwardBranch``; a missing branch is created at ``to``)."""

    def changes(base: TableMetadata) -> Mapping[str, SnapshotRef | None]:
        return _to_ref(base, branch, to, fast_forward=True)

    return _apply(table, changes)


def set_ref_retention(
    table: _T,
    name: str,
    *,
    min_snapshots_to_keep: int | None = None,
    max_snapshot_age_ms: int | None = None,
    max_ref_age_ms: int | None = None,
) -> _T:
    """Set the retention of branch or tag ``name`` (only the settings given change; a tag
    takes only ``max_ref_age_ms``). Expiry (:mod:`icepark.table.maintenance.expire_snapshots`) reads
    them."""

    def changes(base: TableMetadata) -> Mapping[str, SnapshotRef | None]:
        ref = base.ref(name)
        if ref is None:
            raise ValidationError(f"Ref does not exist: {name!r} in table {base.location}")

        def pick(new: int | None, old: int | None) -> int | None:
            return old if new is None else new

        try:
            updated = SnapshotRef(
                ref.snapshot_id,
                ref.type,
                pick(min_snapshots_to_keep, ref.min_snapshots_to_keep),
                pick(max_snapshot_age_ms, ref.max_snapshot_age_ms),
                pick(max_ref_age_ms, ref.max_ref_age_ms),
            )
        except ValidationError as exc:
            raise ValidationError(
                f"Cannot set retention of ref {name!r} in table {base.location}: {exc}"
            ) from exc
        return {name: updated}

    return _apply(table, changes)


def _set_ref(
    table: _T, name: str, snapshot_id: int | None, kind: SnapshotRefType, **retention: Any
) -> _T:
    if table.metadata.ref(name) is not None:
        raise ValidationError(f"Ref {name!r} already exists in table {table.name}")
    known = _RETENTION if kind is SnapshotRefType.BRANCH else _RETENTION[2:]
    unknown = sorted(set(retention) - set(known))
    if unknown:
        raise ValidationError(
            f"Cannot create {kind.value} {name!r} in table {table.name}: unknown retention "
            f"settings {unknown} (known: {', '.join(known)})"
        )
    if snapshot_id is None:
        current = table.metadata.current_snapshot()
        if current is None:
            raise ValidationError(f"Table {table.name} has no snapshot to point {name!r} at")
        snapshot_id = current.snapshot_id
    table.commit(
        [AssertRefSnapshotId(name, None)],
        [SetSnapshotRefUpdate(name, snapshot_id, kind, **retention)],
    )
    return table


def create_branch(table: _T, name: str, snapshot_id: int | None = None, **retention: Any) -> _T:
    """Create branch ``name`` at ``snapshot_id`` (the current snapshot by default), with
    optional retention (``min_snapshots_to_keep``, ``max_snapshot_age_ms``,
    ``max_ref_age_ms``); an existing ref of that name is refused."""
    return _set_ref(table, name, snapshot_id, SnapshotRefType.BRANCH, **retention)


def create_tag(table: _T, name: str, snapshot_id: int | None = None, **retention: Any) -> _T:
    """Create tag ``name`` at ``snapshot_id`` (the current snapshot by default), with an
    optional ``max_ref_age_ms``; an existing ref of that name is refused."""
    return _set_ref(table, name, snapshot_id, SnapshotRefType.TAG, **retention)


def remove_ref(table: _T, name: str) -> _T:
    """Remove branch or tag ``name`` (never ``main``); its snapshots stay until expiry."""
    if name == MAIN_BRANCH or table.metadata.ref(name) is None:
        raise ValidationError(f"Cannot remove ref {name!r} from table {table.name}")
    table.commit([], [RemoveSnapshotRefUpdate(name)])
    return table


# -- cherry-pick -----------------------------------------------------------------------------


def _is_fast_forward(base: TableMetadata, picked: Snapshot) -> bool:
    current = base.current_snapshot()
    if current is None:
        return picked.parent_snapshot_id is None
    return picked.parent_snapshot_id == current.snapshot_id


def _is_dynamic_overwrite(snapshot: Snapshot) -> bool:
    summary: Mapping[str, str] = snapshot.summary or {}
    return (
        snapshot.operation == Operation.OVERWRITE
        and str(summary.get(_REPLACE_PARTITIONS_PROP, "false")).lower() == "true"
    )


def _validate_non_ancestor(base: TableMetadata, snapshot_id: int) -> None:
    if snapshot_id in _current_ancestor_ids(base):
        raise CherrypickAncestorCommitError(
            f"Cannot cherry-pick snapshot {snapshot_id}: already an ancestor of the current "
            f"snapshot of table {base.location}"
        )
    for ancestor in base.ancestors_of(base.current_snapshot_id):
        summary: Mapping[str, str] = ancestor.summary or {}
        if summary.get(SOURCE_SNAPSHOT_ID_PROP) == str(snapshot_id):
            raise CherrypickAncestorCommitError(
                f"Cannot cherry-pick snapshot {snapshot_id}: already picked to create "
                f"ancestor {ancestor.snapshot_id} of table {base.location}"
            )


class CherryPickAction(Action):
    """Applies snapshot ``snapshot_id``'s changes to ``main`` (see the module docstring)."""

    revalidates = True

    def __init__(self, io: FileIO, snapshot_id: int) -> None:
        self.io = io
        self.snapshot_id = snapshot_id
        self._added: list[DataFile] | None = None
        self._removed: list[DataFile] | None = None

    def _changes(self, picked: Snapshot) -> tuple[list[DataFile], list[DataFile]]:
        if self._added is None or self._removed is None:
            entries = changes_in(self.io, [picked], content=ManifestContent.DATA)
            self._added = [
                e.entry.data_file.replace(first_row_id=None)
                for e in entries
                if e.entry.status == ManifestEntryStatus.ADDED
            ]
            self._removed = [
                e.entry.data_file for e in entries if e.entry.status == ManifestEntryStatus.DELETED
            ]
        return self._added, self._removed

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        picked = _require_snapshot(base, self.snapshot_id, "cherry-pick")
        dynamic = _is_dynamic_overwrite(picked)
        wap_id = None
        if picked.operation == Operation.APPEND or dynamic:
            wap_id = validate_wap_publish(base, picked.snapshot_id)
        if _is_fast_forward(base, picked):
            self._produced = None  # a snapshot an earlier attempt wrote is not committed
            return RefUpdateAction(_main_to(picked.snapshot_id)).stage(base, start)
        if picked.operation != Operation.APPEND and not dynamic:
            raise ValidationError(
                f"Cannot cherry-pick snapshot {picked.snapshot_id} of table {base.location}: "
                f"not append, dynamic overwrite, or fast-forward (operation {picked.operation})"
            )
        _validate_non_ancestor(base, picked.snapshot_id)
        added, removed = self._changes(picked)
        props = {SOURCE_SNAPSHOT_ID_PROP: str(picked.snapshot_id)}
        if wap_id:
            props[PUBLISHED_WAP_ID_PROP] = wap_id
        doomed: set[str] = set()
        if dynamic:
            self._validate_overwrite(base, picked, added, removed)
            doomed = {f.file_path for f in removed}
        producer = self._producer or SnapshotProducer(
            self.io,
            picked.operation or Operation.APPEND,
            added_files=added,
            branch=MAIN_BRANCH,
            merge=True,
            snapshot_properties=props,
        )
        producer.snapshot_properties = props
        producer.update_removals((lambda e: e.data_file.file_path in doomed) if doomed else None)
        staged = self._stage_snapshot(base, lambda: producer)
        if self._produced is not None and len(self._produced.removed) != len(doomed):
            gone = doomed - {f.file_path for f in self._produced.removed}
            for path in staged.written:  # the transaction deletes the manifests (abort)
                try:
                    self.io.delete(path)
                except Exception:
                    pass
            raise ValidationError(
                f"Cannot cherry-pick snapshot {picked.snapshot_id} of table {base.location}: "
                f"missing required files to delete: {', '.join(sorted(gone))}"
            )
        return staged

    def _validate_overwrite(
        self,
        base: TableMetadata,
        picked: Snapshot,
        added: list[DataFile],
        removed: list[DataFile],
    ) -> None:
        parent = picked.parent_snapshot_id
        if parent is not None and parent not in _current_ancestor_ids(base):
            raise ValidationError(
                f"Cannot cherry-pick overwrite {picked.snapshot_id} of table {base.location}: "
                f"based on {parent}, not an ancestor of the current snapshot"
            )
        current = base.current_snapshot()
        if current is None:
            return
        replaced = {(f.spec_id, tuple(f.partition)) for f in added}
        since = changes_since(
            self.io,
            base,
            current.snapshot_id,
            parent,
            content=ManifestContent.DATA,
            statuses=(ManifestEntryStatus.ADDED,),
            where="cherry-pick",
        )
        for change in since:
            f = change.entry.data_file
            if (f.spec_id, tuple(f.partition)) in replaced:
                raise ValidationError(
                    f"Cannot cherry-pick replace partitions with changed partition: "
                    f"{f.partition} (file {f.file_path}, added by snapshot "
                    f"{change.snapshot_id} after {parent}) in table {base.location}"
                )


def cherrypick_snapshot(table: _T, snapshot_id: int) -> _T:
    """Apply snapshot ``snapshot_id``'s changes to the current state as one commit."""
    table.refresh()
    _require_snapshot(table.metadata, snapshot_id, "cherry-pick")
    action = CherryPickAction(table.io, snapshot_id)
    return _commit(table, action)


def publish_changes(table: _T, wap_id: str) -> _T:
    """Cherry-pick the snapshot staged under ``wap_id`` (Spark's ``publish_changes``)."""
    table.refresh()
    found = next((s for s in table.metadata.snapshots if staged_wap_id(s) == wap_id), None)
    if found is None:
        raise ValidationError(f"Cannot apply unknown WAP ID {wap_id!r} to table {table.name}")
    return cherrypick_snapshot(table, found.snapshot_id)
