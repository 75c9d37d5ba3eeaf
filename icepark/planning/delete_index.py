"""The delete-file index: which delete files apply to a data file, by the spec's rules.

- A position delete file applies to data files in the same partition (same spec) whose data
  sequence number is less than or equal to its own; a deletion vector applies to the one data
  file it references.
- An equality delete file applies to data files with a strictly smaller data sequence number
  in the same partition, or to every partition when its spec is unpartitioned.

Built once per scan; lookups are by partition and then by sequence number (bisect).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable

from icepark.manifest import DataFile, FileContent, ManifestEntry
from icepark.spec.partitioning import PartitionSpec

__all__ = ["DeleteFileIndex"]

_Key = tuple[int, tuple[object, ...]]


class _BySequence:
    """Delete files ordered by sequence number, for "seq >= n" / "seq > n" lookups."""

    def __init__(self) -> None:
        self._items: list[tuple[int, int, DataFile]] = []
        self._sorted = True

    def add(self, seq: int, f: DataFile) -> None:
        self._items.append((seq, len(self._items), f))
        self._sorted = False

    def at_least(self, seq: int, strictly: bool) -> list[DataFile]:
        if not self._sorted:
            self._items.sort(key=lambda t: (t[0], t[1]))
            self._sorted = True
        keys = [t[0] for t in self._items]
        start = bisect.bisect_right(keys, seq) if strictly else bisect.bisect_left(keys, seq)
        return [t[2] for t in self._items[start:]]


class DeleteFileIndex:
    def __init__(self, specs: dict[int, PartitionSpec]) -> None:
        self._specs = specs
        self._positions: dict[_Key, _BySequence] = defaultdict(_BySequence)
        self._equality: dict[_Key, _BySequence] = defaultdict(_BySequence)
        self._global_equality = _BySequence()
        self._vectors: dict[str, list[tuple[int, DataFile]]] = defaultdict(list)
        self._empty = True

    @property
    def is_empty(self) -> bool:
        return self._empty

    def add_entries(self, entries: Iterable[ManifestEntry]) -> None:
        for e in entries:
            self.add(e.data_file, e.sequence_number or 0)

    def add(self, f: DataFile, sequence_number: int) -> None:
        self._empty = False
        key = (f.spec_id or 0, tuple(f.partition))
        if f.content == FileContent.POSITION_DELETES:
            if f.referenced_data_file is not None:
                self._vectors[f.referenced_data_file].append((sequence_number, f))
            else:
                self._positions[key].add(sequence_number, f)
        elif f.content == FileContent.EQUALITY_DELETES:
            spec = self._specs.get(f.spec_id or 0)
            if spec is None or spec.is_unpartitioned:
                self._global_equality.add(sequence_number, f)
            else:
                self._equality[key].add(sequence_number, f)

    def for_data_file(self, f: DataFile, sequence_number: int) -> list[DataFile]:
        if self._empty:
            return []
        key = (f.spec_id or 0, tuple(f.partition))
        found: list[DataFile] = []
        vectors = [d for seq, d in self._vectors.get(f.file_path, ()) if seq >= sequence_number]
        if vectors:
            # A deletion vector replaces older position delete files for its data file.
            found.extend(vectors)
        elif key in self._positions:
            found.extend(
                d
                for d in self._positions[key].at_least(sequence_number, strictly=False)
                if _may_reference(d, f.file_path)
            )
        found.extend(self._global_equality.at_least(sequence_number, strictly=True))
        if key in self._equality:
            found.extend(self._equality[key].at_least(sequence_number, strictly=True))
        return found


def _may_reference(delete_file: DataFile, data_path: str) -> bool:
    """A position delete file whose file_path bounds exclude ``data_path`` cannot apply."""
    file_path_id = 2147483546
    lower = (delete_file.lower_bounds or {}).get(file_path_id)
    upper = (delete_file.upper_bounds or {}).get(file_path_id)
    encoded = data_path.encode()
    if lower is not None and encoded < lower:
        return False
    return not (upper is not None and encoded > upper)
