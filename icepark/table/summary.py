"""Snapshot summaries with the keys Java writes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from icepark.manifest import DataFile, FileContent
from icepark.spec.snapshots import Operation, Summary

__all__ = ["SummaryBuilder", "TOTAL_KEYS"]

TOTAL_KEYS = {
    "total-records": ("added-records", "deleted-records"),
    "total-files-size": ("added-files-size", "removed-files-size"),
    "total-data-files": ("added-data-files", "deleted-data-files"),
    "total-delete-files": ("added-delete-files", "removed-delete-files"),
    "total-position-deletes": ("added-position-deletes", "removed-position-deletes"),
    "total-equality-deletes": ("added-equality-deletes", "removed-equality-deletes"),
}


@dataclass
class SummaryBuilder:
    """Counts what a snapshot adds and removes, then derives totals from its parent's."""

    counts: dict[str, int] = field(default_factory=dict)
    partitions: set[tuple[int, tuple[object, ...]]] = field(default_factory=set)

    def _bump(self, key: str, amount: int) -> None:
        self.counts[key] = self.counts.get(key, 0) + amount

    def added_file(self, f: DataFile) -> None:
        self._count(f, "added", "added")

    def removed_file(self, f: DataFile) -> None:
        self._count(f, "deleted", "removed")

    def _count(self, f: DataFile, data_word: str, delete_word: str) -> None:
        self.partitions.add((f.spec_id or 0, tuple(f.partition)))
        size_key = "added-files-size" if data_word == "added" else "removed-files-size"
        self._bump(size_key, f.file_size_in_bytes)
        if f.content == FileContent.DATA:
            self._bump(f"{data_word}-data-files", 1)
            self._bump(f"{data_word}-records", f.record_count)
            return
        self._bump(f"{delete_word}-delete-files", 1)
        if f.content == FileContent.POSITION_DELETES:
            kind = "position"
            if f.referenced_data_file is not None and f.content_offset is not None:
                self._bump(f"{'added' if data_word == 'added' else 'removed'}-dvs", 1)
        else:
            kind = "equality"
            self._bump(f"{delete_word}-equality-delete-files", 1)
        if kind == "position" and f.referenced_data_file is None:
            self._bump(f"{delete_word}-position-delete-files", 1)
        self._bump(f"{delete_word}-{kind}-deletes", f.record_count)

    def added_files(self, files: Iterable[DataFile]) -> None:
        for f in files:
            self.added_file(f)

    def removed_files(self, files: Iterable[DataFile]) -> None:
        for f in files:
            self.removed_file(f)

    def build(
        self,
        operation: Operation,
        previous: Mapping[str, str] | None,
        extra: Mapping[str, str] | None = None,
    ) -> Summary:
        props = {k: str(v) for k, v in self.counts.items() if v}
        props["changed-partition-count"] = str(len(self.partitions))
        for total, (plus, minus) in TOTAL_KEYS.items():
            if previous is None:
                before = 0
            elif total in previous:
                before = int(previous[total])
            else:
                continue  # Java leaves a total out when the parent's summary lacks it
            props[total] = str(before + self.counts.get(plus, 0) - self.counts.get(minus, 0))
        props.update(extra or {})
        return Summary(operation, props)
