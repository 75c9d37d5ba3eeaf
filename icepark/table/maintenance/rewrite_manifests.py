"""``table.rewrite_manifests()``: regroup manifest entries by partition, data unchanged.

Java's ``RewriteManifests`` (``BaseRewriteManifests``, as the Spark action uses it): one
``replace`` snapshot whose manifests of a partition spec (the table's default, or
``spec_id``) are rewritten, data manifests and delete manifests separately:

1. the live entries of the spec's manifests are read (:func:`~icepark.planning.walk.read_entries`);
2. they are sorted by partition (or by the partition fields named in ``cluster_by``, Java's
   ``sortBy``) and cut, at changes of that key, into ``ceil(total manifest bytes /
   commit.manifest.target-size-bytes)`` manifests of about equal entries (Java's range
   partitioning);
3. each entry is written as ``EXISTING`` with its snapshot id, data and file sequence numbers
   (and, on v3, first row id) kept; the new manifests come first in the manifest list, the
   manifests of other specs are kept as they are.

Nothing is committed when a content has a single manifest that already fits the target. The
rewrite is redone on the fresh parent when a concurrent commit wins the race (manifests
written for an earlier attempt are reused while their inputs are unchanged); no conflict can
fail it, since it changes no file. The snapshot summary has Java's ``manifests-created``,
``manifests-kept``, ``manifests-replaced`` and ``entries-processed``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.manifest import ManifestContent, ManifestEntry, ManifestFile, ManifestWriter
from icepark.planning.walk import manifests_of, read_entries, scan_columns, use_columns
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.table.transaction import Transaction
from icepark.table.write.operations import Action, Staged
from icepark.table.write.producers import SnapshotProducer

if TYPE_CHECKING:
    from icepark.manifest.entry_columns import EntryColumns
    from icepark.table.interface import TableLike

__all__ = ["RewriteManifestsAction", "RewriteManifestsResult", "rewrite_manifests"]


@dataclass(frozen=True)
class RewriteManifestsResult:
    """Java's ``rewrite_manifests`` procedure columns."""

    rewritten_manifests_count: int = 0
    added_manifests_count: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def _sort_key(values: Sequence[Any]) -> tuple[Any, ...]:
    """Nulls first, then by value (a partition field holds one type)."""
    return tuple((v is not None, v if v is not None else 0) for v in values)


@dataclass
class _ManifestRewriter(SnapshotProducer):
    """A producer that keeps the parent's files and regroups one spec's manifests."""

    spec_id: int = 0
    cluster_positions: tuple[int, ...] | None = None
    _regrouped: dict[tuple[str, ...], list[ManifestFile]] = field(default_factory=dict)
    created: int = 0
    replaced: int = 0

    def _transform_manifests(
        self, base: TableMetadata, manifests: list[ManifestFile], snapshot_id: int
    ) -> list[ManifestFile]:
        target = P.MANIFEST_TARGET_SIZE_BYTES.get(base.properties)
        created: list[ManifestFile] = []
        kept: list[ManifestFile] = []
        self.replaced = 0
        entries_processed = 0
        # Java decides on, and counts as replaced, every manifest of the spec in the parent's
        # list, those left with deleted entries only too (dropped from ``manifests`` already)
        parent = manifests_of(self.io, self._parent(base))
        for content in (ManifestContent.DATA, ManifestContent.DELETES):
            matching = [
                m for m in manifests if m.content == content and m.partition_spec_id == self.spec_id
            ]
            every = [
                m for m in parent if m.content == content and m.partition_spec_id == self.spec_id
            ]
            listed = {m.manifest_path for m in every}
            every += [m for m in matching if m.manifest_path not in listed]
            kept.extend(
                m for m in manifests if m.content == content and m.partition_spec_id != self.spec_id
            )
            count = max(1, -(-sum(m.manifest_length for m in every) // target))
            if not every or (count == 1 and len(every) == 1):
                kept.extend(matching)
                continue
            key = tuple(m.manifest_path for m in matching)
            if matching and key not in self._regrouped:
                self._regrouped[key] = self._regroup(base, matching, count, content, snapshot_id)
            created.extend(self._regrouped.get(key, []))
            self.replaced += len(every)
            entries_processed += sum(
                (m.added_files_count or 0) + (m.existing_files_count or 0) for m in matching
            )
        self.created = len(created)
        self.snapshot_properties = {
            **self.snapshot_properties,
            "manifests-created": str(len(created)),
            "manifests-kept": str(len(kept)),
            "manifests-replaced": str(self.replaced),
            "entries-processed": str(entries_processed),
        }
        return [*created, *kept]

    def _regroup(
        self,
        base: TableMetadata,
        manifests: list[ManifestFile],
        count: int,
        content: ManifestContent,
        snapshot_id: int,
    ) -> list[ManifestFile]:
        if use_columns(manifests):
            by_columns = self._regroup_columns(base, manifests, count, content, snapshot_id)
            if by_columns is not None:
                return by_columns
        live: list[ManifestEntry] = [e for _, es in read_entries(self.io, manifests) for e in es]
        positions = self.cluster_positions

        def key(e: ManifestEntry) -> tuple[Any, ...]:
            values = tuple(e.data_file.partition)
            if positions is not None:
                values = tuple(values[i] for i in positions)
            return _sort_key(values)

        live.sort(key=key)
        per_manifest = -(-len(live) // count) if live else 0
        chunks: list[list[ManifestEntry]] = [[]]
        for e in live:
            current = chunks[-1]
            if len(current) >= per_manifest and current and key(current[-1]) != key(e):
                chunks.append([])
            chunks[-1].append(e)
        out = []
        for chunk in chunks:
            if not chunk:
                continue

            def fill(writer: ManifestWriter, chunk: list[ManifestEntry] = chunk) -> None:
                for e in chunk:
                    writer.existing(e)

            out.append(self._new_manifest(base, self.spec_id, snapshot_id, content, fill))
        return _checked(out, len(live))

    def _regroup_columns(
        self,
        base: TableMetadata,
        manifests: list[ManifestFile],
        count: int,
        content: ManifestContent,
        snapshot_id: int,
    ) -> list[ManifestFile] | None:
        """:meth:`_regroup` for a huge table: the manifests decoded into arrays
        (:func:`~icepark.planning.walk.scan_columns`), sorted and cut by partition keys held
        as integers, each entry's data file record copied as it is stored where the
        manifests' schemas allow (:meth:`~icepark.manifest.ManifestWriter.existing_rows`;
        None when a manifest cannot be read so: the caller reads them entry by entry)."""
        scanned = list(scan_columns(self.io, manifests))
        if any(len(found) == 2 for found in scanned):
            return None
        positions = self.cluster_positions
        keys: dict[tuple[Any, ...], int] = {}
        held: list[tuple[EntryColumns, np.ndarray, np.ndarray]] = []
        for found in scanned:
            _, columns, rows = found  # type: ignore[misc]
            distinct, which = columns.partitions()
            codes = []
            for values in distinct:
                if positions is not None:
                    values = tuple(values[i] for i in positions)
                codes.append(keys.setdefault(_sort_key(values), len(keys)))
            held.append((columns, rows, np.array(codes, dtype=np.int64)[which[rows]]))
        ranks = np.empty(len(keys), dtype=np.int64)
        ranks[[keys[k] for k in sorted(keys)]] = np.arange(len(keys))
        source = np.concatenate([np.full(len(r), i) for i, (_, r, _) in enumerate(held)])
        rows = np.concatenate([r for _, r, _ in held])
        rank = ranks[np.concatenate([c for _, _, c in held])]
        order = np.argsort(rank, kind="stable")  # as list.sort: equal keys keep their order
        total = len(order)
        per_manifest = -(-total // count) if total else 0
        starts = np.flatnonzero(np.diff(rank[order])) + 1  # where the key changes
        cuts = [0]
        for start in starts.tolist():
            if start - cuts[-1] >= per_manifest:
                cuts.append(start)
        cuts.append(total)
        out = []
        sources = [columns for columns, _, _ in held]
        for lo, hi in itertools.pairwise(cuts):
            if lo == hi:
                continue

            def fill(writer: ManifestWriter, part: np.ndarray = order[lo:hi]) -> None:
                writer.existing_rows(sources, source[part], rows[part])

            out.append(self._new_manifest(base, self.spec_id, snapshot_id, content, fill))
        return _checked(out, total)


def _checked(out: list[ManifestFile], live: int) -> list[ManifestFile]:
    written = sum(m.existing_files_count or 0 for m in out)
    if written != live:  # Java's validateFilesCounts
        raise ValidationError(
            f"Replaced and created manifests must have the same number of active files: "
            f"{written} (new), {live} (old)"
        )
    return out


@dataclass
class RewriteManifestsAction(Action):
    """Regroup the manifests of ``spec_id`` on ``branch`` (see the module docstring)."""

    io: FileIO
    spec_id: int | None = None
    cluster_by: Sequence[str] | None = None
    branch: str = MAIN_BRANCH

    def _positions(self, base: TableMetadata, spec_id: int) -> tuple[int, ...] | None:
        if self.cluster_by is None:
            return None
        spec = base.spec_by_id(spec_id)
        assert spec is not None
        names = [pf.name for pf in spec.fields]
        missing = [n for n in self.cluster_by if n not in names]
        if missing:
            raise ValidationError(
                f"Cannot cluster manifests by {missing}: not fields of partition spec "
                f"{spec_id} ({', '.join(names) or 'unpartitioned'}) of table {base.location}"
            )
        return tuple(names.index(n) for n in self.cluster_by)

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        spec_id = base.default_spec_id if self.spec_id is None else self.spec_id
        if base.spec_by_id(spec_id) is None:
            raise ValidationError(f"Invalid spec id {spec_id} for table {base.location}")
        positions = self._positions(base, spec_id)
        return self._stage_snapshot(
            base,
            lambda: _ManifestRewriter(
                self.io,
                Operation.REPLACE,
                branch=self.branch,
                spec_id=spec_id,
                cluster_positions=positions,
            ),
        )

    @property
    def result(self) -> RewriteManifestsResult:
        producer = self._producer
        if not isinstance(producer, _ManifestRewriter):
            return RewriteManifestsResult()
        return RewriteManifestsResult(producer.replaced, producer.created)


def _needs_rewrite(table: TableLike, metadata: TableMetadata, spec_id: int, branch: str) -> bool:
    target = P.MANIFEST_TARGET_SIZE_BYTES.get(metadata.properties)
    head = metadata.snapshot_by_name(branch)
    for content in (ManifestContent.DATA, ManifestContent.DELETES):
        matching = [
            m for m in manifests_of(table.io, head, content) if m.partition_spec_id == spec_id
        ]
        count = max(1, -(-sum(m.manifest_length for m in matching) // target))
        if matching and not (count == 1 and len(matching) == 1):
            return True
    return False


def rewrite_manifests(
    table: TableLike,
    spec_id: int | None = None,
    cluster_by: Sequence[str] | None = None,
    *,
    branch: str = MAIN_BRANCH,
) -> RewriteManifestsResult:
    """Rewrite the manifests of ``spec_id`` (default: the table's spec) on ``branch`` as one
    ``replace`` snapshot; returns Java's columns (zero, and no commit, when nothing needs
    rewriting)."""
    metadata = table.metadata
    chosen = metadata.default_spec_id if spec_id is None else spec_id
    if metadata.spec_by_id(chosen) is None:
        raise ValidationError(f"Invalid spec id {chosen} for table {table.name}")
    if metadata.snapshot_by_name(branch) is None:
        return RewriteManifestsResult()
    action = RewriteManifestsAction(table.io, chosen, cluster_by, branch)
    action._positions(metadata, chosen)  # a bad cluster_by fails before any work
    if not _needs_rewrite(table, metadata, chosen, branch):
        return RewriteManifestsResult()
    with Transaction(table) as tx:
        tx.add_action(action)
    return action.result
