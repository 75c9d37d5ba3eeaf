"""A table's health at a glance: what ``icepark doctor`` prints.

:func:`diagnose` looks at one table and reports, with numbers, what a data engineer checks
before a table gets slow or expensive, each finding with the icepark command that fixes it:

* **snapshots**: how many, the oldest and newest age, and how many the table's own retention
  (``history.expire.max-snapshot-age-ms``, ``min-snapshots-to-keep``) would expire
  -> ``icepark expire``;
* **metadata files**: the ``*.metadata.json`` files in the metadata folder against the log's
  ``write.metadata.previous-versions-max``, and whether old ones are deleted on commit;
* **manifests** of the current snapshot: count and sizes against
  ``commit.manifest.target-size-bytes`` -> ``icepark rewrite-manifests``;
* **data files** by size bucket and the share of small ones (under 75% of
  ``write.target-file-size-bytes``, Java's ``min-file-size-bytes``) -> ``icepark compact``;
* **delete files** by kind, and the share of rows that position deletes and deletion vectors
  hide (equality deletes are counted, not resolved) -> ``icepark compact``;
* **orphan candidates**: files under the table's location that nothing references and that
  ``remove_orphan_files`` would delete (a dry run, so nothing is deleted) ->
  ``icepark remove-orphans``.

The live files are read from the manifests
(:func:`~icepark.planning.live_files.live_files`: content, format, rows and size only, a
manifest at a time; a huge table's into arrays, no object per entry), so a 10,000-file
table is diagnosed in well under a second, and a table of a million files within 1 GB.

Fix commands quote the table name for a POSIX shell (names come from storage and may hold
anything), so a fix copied from ``icepark ui`` runs on that table and nothing else.

Nothing here writes: the report is read-only. Two steps list storage: the orphan candidates
(``orphans=False`` skips them) and the metadata folder (``listing=False`` skips it, and with
it every storage listing: the metadata files are then counted from the log alone and their
finding is left out, which is what the web page's health badges use).
"""

from __future__ import annotations

import shlex
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from icepark.manifest import FileContent, FileFormat, ManifestContent, ManifestFile
from icepark.planning.live_files import live_files
from icepark.planning.walk import manifests_of
from icepark.spec import properties as P
from icepark.table.interface import TableLike
from icepark.table.maintenance.remove_orphan_files import remove_orphan_files

__all__ = ["Finding", "HealthReport", "SIZE_BUCKETS", "diagnose", "small_file_limit"]

_MB = 1024 * 1024
SIZE_BUCKETS: tuple[tuple[str, int], ...] = (
    ("< 1 MB", _MB),
    ("1-16 MB", 16 * _MB),
    ("16-128 MB", 128 * _MB),
    ("128-512 MB", 512 * _MB),
    (">= 512 MB", 2**63),
)
"""Data file size buckets: (label, upper bound exclusive)."""


def small_file_limit(target_file_size: int) -> int:
    """A data file under this many bytes is small: 75% of ``write.target-file-size-bytes``,
    the compaction's default ``min-file-size-bytes`` (Java's)."""
    return target_file_size * 3 // 4


@dataclass(frozen=True)
class Finding:
    """One thing worth knowing: ``level`` is ``ok``, ``info`` or ``warn``; ``fix`` the
    command (or setting) that deals with it, if any."""

    area: str
    level: str
    message: str
    fix: str | None = None


@dataclass
class HealthReport:
    """Numbers per area (plain values, for ``--json`` and monitoring) and the findings."""

    table: str
    location: str
    snapshots: dict[str, Any] = field(default_factory=dict)
    metadata_files: dict[str, Any] = field(default_factory=dict)
    manifests: dict[str, Any] = field(default_factory=dict)
    data_files: dict[str, Any] = field(default_factory=dict)
    delete_files: dict[str, Any] = field(default_factory=dict)
    orphans: dict[str, Any] | None = None
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def healthy(self) -> bool:
        return not any(f.level == "warn" for f in self.findings)


def _age(now_ms: int, ms: int | None) -> float | None:
    return None if ms is None else round((now_ms - ms) / 86_400_000, 2)


def _snapshots(table: TableLike, report: HealthReport, now_ms: int, shell_name: str) -> None:
    md = table.metadata
    props = md.properties
    snaps = sorted(md.snapshots, key=lambda s: s.timestamp_ms)
    max_age = P.MAX_SNAPSHOT_AGE_MS.get(props)
    keep = P.MIN_SNAPSHOTS_TO_KEEP.get(props)
    protected: set[int] = set()
    for ref in md.refs.values():
        protected.add(ref.snapshot_id)
        if ref.is_branch:
            ancestors = md.ancestors_of(ref.snapshot_id)
            protected.update(s.snapshot_id for s in ancestors[: ref.min_snapshots_to_keep or keep])
    expirable = [
        s for s in snaps if s.snapshot_id not in protected and now_ms - s.timestamp_ms > max_age
    ]
    report.snapshots = {
        "count": len(snaps),
        "refs": len(md.refs),
        "oldest_age_days": _age(now_ms, snaps[0].timestamp_ms) if snaps else None,
        "newest_age_days": _age(now_ms, snaps[-1].timestamp_ms) if snaps else None,
        "expirable_by_retention": len(expirable),
        "max_snapshot_age_days": round(max_age / 86_400_000, 2),
    }
    if expirable:
        report.findings.append(
            Finding(
                "snapshots",
                "warn" if len(expirable) >= 10 else "info",
                f"{len(expirable)} of {len(snaps)} snapshots are older than the table's "
                f"retention ({report.snapshots['max_snapshot_age_days']} days) and not kept by "
                f"a ref: their files still take space",
                f"icepark expire {shell_name}",
            )
        )


def _metadata_files(table: TableLike, report: HealthReport, listing: bool, shell_name: str) -> None:
    md = table.metadata
    folder = P.metadata_folder(md.location, md.properties)
    keep = P.METADATA_PREVIOUS_VERSIONS_MAX.get(md.properties)
    cleans = P.METADATA_DELETE_AFTER_COMMIT_ENABLED.get(md.properties)
    if not listing:
        report.metadata_files = {
            "in_folder": None,
            "bytes": None,
            "in_log": len(md.metadata_log),
            "previous_versions_max": keep,
            "delete_after_commit": cleans,
        }
        return
    try:
        listed = [e for e in table.io.list_prefix(folder) if e.location.endswith(".metadata.json")]
    except Exception:  # storage that cannot be listed: the log alone
        listed = []
    report.metadata_files = {
        "in_folder": len(listed),
        "bytes": sum(e.size for e in listed),
        "in_log": len(md.metadata_log),
        "previous_versions_max": keep,
        "delete_after_commit": cleans,
    }
    if len(listed) > keep + 1 and not cleans:
        report.findings.append(
            Finding(
                "metadata files",
                "info",
                f"{len(listed)} metadata files in {folder}: old versions are kept because "
                f"{P.METADATA_DELETE_AFTER_COMMIT_ENABLED.name} is false",
                f"set {P.METADATA_DELETE_AFTER_COMMIT_ENABLED.name}=true "
                f"(then icepark remove-orphans {shell_name} for the ones "
                "already there)",
            )
        )


def _files(table: TableLike, report: HealthReport, shell_name: str) -> None:
    md = table.metadata
    snapshot = md.current_snapshot()
    manifests = manifests_of(table.io, snapshot)
    target_manifest = P.MANIFEST_TARGET_SIZE_BYTES.get(md.properties)
    sizes = [m.manifest_length for m in manifests]
    small_manifests = sum(1 for s in sizes if s < target_manifest // 10)
    report.manifests = {
        "count": len(manifests),
        "data": sum(1 for m in manifests if m.content == ManifestContent.DATA),
        "delete": sum(1 for m in manifests if m.content == ManifestContent.DELETES),
        "total_bytes": sum(sizes),
        "mean_bytes": round(sum(sizes) / len(sizes)) if sizes else 0,
        "small": small_manifests,
    }
    if len(manifests) > 100 and small_manifests > len(manifests) // 2:
        report.findings.append(
            Finding(
                "manifests",
                "warn",
                f"{len(manifests)} manifests, {small_manifests} of them under a tenth of "
                f"{P.MANIFEST_TARGET_SIZE_BYTES.name}: planning reads them all",
                f"icepark rewrite-manifests {shell_name}",
            )
        )
    target = P.WRITE_TARGET_FILE_SIZE_BYTES.get(md.properties)
    facts = _file_facts(table, manifests)
    content = facts["content"]
    file_sizes, rows = facts["file_size_in_bytes"], facts["record_count"]
    data = content == int(FileContent.DATA)
    equality = content == int(FileContent.EQUALITY_DELETES)
    vector = ~data & ~equality & (facts["file_format"] == FileFormat.PUFFIN.value)
    position = ~data & ~equality & ~vector
    data_sizes = file_sizes[data]
    uppers = np.array([upper for _, upper in SIZE_BUCKETS[:-1]], dtype=np.int64)  # last: rest
    per_bucket = np.bincount(
        np.searchsorted(uppers, data_sizes, side="right"), minlength=len(SIZE_BUCKETS)
    )
    buckets = {label: int(per_bucket[i]) for i, (label, _) in enumerate(SIZE_BUCKETS)}
    data_count = int(data.sum())
    data_bytes = int(data_sizes.sum())
    records = int(rows[data].sum())
    small = int((data_sizes < small_file_limit(target)).sum())
    kinds = {
        "position": int(position.sum()),
        "equality": int(equality.sum()),
        "deletion vector": int(vector.sum()),
    }
    hidden = int(rows[position | vector].sum())
    equality_rows = int(rows[equality].sum())
    report.data_files = {
        "count": data_count,
        "bytes": data_bytes,
        "records": records,
        "by_size": buckets,
        "target_file_size_bytes": target,
        "small": small,
        "small_ratio": round(small / data_count, 4) if data_count else 0.0,
    }
    share = hidden / records if records else 0.0
    report.delete_files = {
        **{k.replace(" ", "_"): v for k, v in kinds.items()},
        "rows_hidden_by_position_deletes": hidden,
        "hidden_share": round(share, 4),
        "equality_delete_rows": equality_rows,
    }
    if data_count >= 5 and small / data_count > 0.5:
        report.findings.append(
            Finding(
                "data files",
                "warn",
                f"{small} of {data_count} data files are under 75% of the target size "
                f"({target // _MB} MB): every scan opens them all",
                f"icepark compact {shell_name}",
            )
        )
    if sum(kinds.values()):
        level = "warn" if share > 0.1 or kinds["equality"] else "info"
        report.findings.append(
            Finding(
                "delete files",
                level,
                f"{sum(kinds.values())} delete files hide {share:.1%} of the rows"
                + (f", plus {kinds['equality']} equality delete files" if kinds["equality"] else "")
                + ": every scan applies them",
                f"icepark compact {shell_name}",
            )
        )


_FACTS = ("content", "file_format", "record_count", "file_size_in_bytes")


def _file_facts(table: TableLike, manifests: list[ManifestFile]) -> dict[str, np.ndarray]:
    """Content, format, rows and size of every live file of ``manifests``, as arrays, read
    a manifest at a time (:func:`~icepark.planning.live_files.live_files`: a huge table's
    without an object per file; the partition is not decoded)."""
    parts: list[dict[str, np.ndarray]] = []
    for files in live_files(table.io, manifests):
        formats = np.array([f.value for f in files.listed("file_format")], dtype=object)
        parts.append(
            {
                "content": files.content,
                "file_format": formats,
                "record_count": files.record_count,
                "file_size_in_bytes": files.file_size_in_bytes,
            }
        )
    return {
        n: np.concatenate([p[n] for p in parts]) if parts else np.zeros(0, np.int64) for n in _FACTS
    }


def _orphans(
    table: TableLike, report: HealthReport, older_than: int | None, shell_name: str
) -> None:
    # a dry run: listing files younger than a day (older_than given) deletes nothing
    found = remove_orphan_files(
        table, older_than, dry_run=True, allow_recent=older_than is not None
    )
    report.orphans = {
        "count": len(found.orphan_file_locations),
        "bytes": found.orphan_bytes,
        "sample": list(found.orphan_file_locations[:5]),
    }
    if found.orphan_file_locations:
        report.findings.append(
            Finding(
                "orphans",
                "warn",
                f"{len(found.orphan_file_locations)} files ({found.orphan_bytes:,} bytes) under "
                "the table's location are referenced by nothing and older than "
                + ("3 days" if older_than is None else "the cut-off"),
                f"icepark remove-orphans {shell_name}"
                + ("" if older_than is None else f" --older-than {older_than} --allow-recent"),
            )
        )


def diagnose(
    table: TableLike,
    *,
    orphans: bool = True,
    listing: bool = True,
    now_ms: int | None = None,
    orphans_older_than: int | None = None,
) -> HealthReport:
    """The health report of ``table`` (see the module docstring); read-only.
    ``orphans_older_than`` (epoch ms) lists orphan candidates younger than the 3 days
    ``remove_orphan_files`` waits by default, e.g. what a crashed write left a minute ago.
    ``listing=False`` lists nothing in storage (no orphans, no metadata folder): the report
    then depends on the table's metadata and manifests alone."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    report = HealthReport(table.name, table.metadata.location)
    shell_name = shlex.quote(table.name)  # fixes name the table for a POSIX shell
    _snapshots(table, report, now, shell_name)
    _metadata_files(table, report, listing, shell_name)
    _files(table, report, shell_name)
    if orphans and listing:
        _orphans(table, report, orphans_older_than, shell_name)
    if not report.findings:
        report.findings.append(Finding("table", "ok", "nothing to fix"))
    return report
