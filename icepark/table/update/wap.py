"""Write-audit-publish (WAP): staging a write's snapshot without making it current.

With ``write.wap.enabled=true`` a write given a WAP id (``table.append(data, wap_id="w1")``,
``icepark.spark.write(df, t, wap_id="w1")``) commits its snapshot to the table with
``wap.id`` in its summary, but moves no branch: readers keep seeing the current state until
the snapshot is published with ``table.publish_changes("w1")`` or
``table.cherrypick_snapshot(id)`` (see :mod:`icepark.table.update.manage_snapshots`), which
records ``published-wap-id`` in the snapshot it makes current.

As Java's ``SnapshotProducer.stageOnly()``: :class:`StageOnlyAction` wraps any snapshot
action and drops the ref update (and the requirement on the ref) from what it commits; the
snapshot itself (its parent is the branch head it was written on) is added as usual.
``validate_wap_publish`` is Java's ``WapUtil.validateWapPublish``: a WAP id is published at
most once in the current snapshot's history.
"""

from __future__ import annotations

from collections.abc import Mapping

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import Snapshot
from icepark.spec.updates import AssertRefSnapshotId, SetSnapshotRefUpdate
from icepark.table.write.operations import Action, Staged

__all__ = [
    "PUBLISHED_WAP_ID_PROP",
    "SOURCE_SNAPSHOT_ID_PROP",
    "STAGED_WAP_ID_PROP",
    "DuplicateWAPCommitError",
    "StageOnlyAction",
    "published_wap_id",
    "staged",
    "staged_wap_id",
    "validate_wap_publish",
    "wap_properties",
    "with_wap_id",
]

STAGED_WAP_ID_PROP = "wap.id"
PUBLISHED_WAP_ID_PROP = "published-wap-id"
SOURCE_SNAPSHOT_ID_PROP = "source-snapshot-id"


class DuplicateWAPCommitError(ValidationError):
    """A WAP id that the current snapshot's history has published already."""


def staged_wap_id(snapshot: Snapshot) -> str | None:
    return None if snapshot.summary is None else snapshot.summary.get(STAGED_WAP_ID_PROP)


def published_wap_id(snapshot: Snapshot) -> str | None:
    return None if snapshot.summary is None else snapshot.summary.get(PUBLISHED_WAP_ID_PROP)


def wap_properties(metadata: TableMetadata, wap_id: str, name: str) -> dict[str, str]:
    """The summary properties of a write staged under ``wap_id`` on table ``name``.

    Java ignores a session's WAP id when the table does not enable WAP, and so publishes the
    write at once; here the id is an argument of the write, so that case is refused."""
    if not isinstance(wap_id, str) or not wap_id:
        raise ValidationError(f"Invalid WAP id {wap_id!r} for table {name}: a non-empty string")
    if not P.WRITE_AUDIT_PUBLISH_ENABLED.get(metadata.properties):
        raise ValidationError(
            f"Cannot stage a write with WAP id {wap_id!r}: table {name} does not enable "
            f"write-audit-publish (set {P.WRITE_AUDIT_PUBLISH_ENABLED.name}=true)"
        )
    return {STAGED_WAP_ID_PROP: wap_id}


def validate_wap_publish(metadata: TableMetadata, snapshot_id: int) -> str | None:
    """The WAP id of snapshot ``snapshot_id`` (None when it has none), after checking that no
    ancestor of the current snapshot staged or published it already."""
    snapshot = metadata.snapshot_by_id(snapshot_id)
    wap_id = None if snapshot is None else staged_wap_id(snapshot)
    if wap_id:
        for ancestor in metadata.ancestors_of(metadata.current_snapshot_id):
            if wap_id in (staged_wap_id(ancestor), published_wap_id(ancestor)):
                raise DuplicateWAPCommitError(
                    f"Duplicate request to cherry pick wap id that was published already: "
                    f"{wap_id} (snapshot {snapshot_id}, published by {ancestor.snapshot_id} "
                    f"in table {metadata.location})"
                )
    return wap_id


class StageOnlyAction(Action):
    """Commits the snapshot ``inner`` produces without moving its branch."""

    def __init__(self, inner: Action) -> None:
        self.inner = inner
        self.revalidates = inner.revalidates

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        staged = self.inner.stage(base, start)
        return Staged(
            [u for u in staged.updates if not isinstance(u, SetSnapshotRefUpdate)],
            [r for r in staged.requirements if not isinstance(r, AssertRefSnapshotId)],
            staged.written,
        )

    def committed(self, io: FileIO) -> None:
        self.inner.committed(io)

    def abort(self, io: FileIO) -> None:
        self.inner.abort(io)


def staged(action: Action, wap_id: str | None) -> Action:
    """``action`` itself, or staged only when a WAP id is given."""
    return action if wap_id is None else StageOnlyAction(action)


def with_wap_id(
    metadata: TableMetadata, props: Mapping[str, str] | None, wap_id: str | None, name: str
) -> dict[str, str]:
    """Snapshot properties plus the WAP id's (checked against the table) when one is given."""
    out = dict(props or {})
    if wap_id is not None:
        out.update(wap_properties(metadata, wap_id, name))
    return out
