"""The live files of manifests, field by field, a manifest at a time: what orphan removal,
the doctor and the partitions table read of every file a table holds.

:func:`live_files` reads a huge table's manifests into arrays
(:func:`~icepark.planning.walk.scan_columns`: no object per file) and a small table's, or a
manifest the compiled path cannot read, entry by entry
(:func:`~icepark.planning.walk.read_entries`); either way each manifest comes as one
:class:`ManifestFiles`, whose fields are numpy arrays (the integers) or lists (paths,
formats), made when first asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from icepark.io import FileIO
from icepark.manifest import ManifestEntry, ManifestFile
from icepark.planning.walk import DEFAULT_WORKERS, read_entries, scan_columns, use_columns

if TYPE_CHECKING:
    from icepark.manifest.entry_columns import EntryColumns

__all__ = ["ManifestFiles", "live_files"]


class ManifestFiles:
    """The live files of one manifest: from its entries decoded into arrays (``columns``
    and the ``rows`` kept) or from its entries as objects (``entries``)."""

    def __init__(
        self,
        manifest: ManifestFile,
        *,
        columns: EntryColumns | None = None,
        rows: np.ndarray | None = None,
        entries: list[ManifestEntry] | None = None,
    ) -> None:
        self.manifest = manifest
        self._columns = columns
        self._rows = rows
        self._entries = entries

    @property
    def spec_id(self) -> int:
        """The id of the partition spec of the manifest's files."""
        return self.manifest.partition_spec_id or 0

    def __len__(self) -> int:
        if self._rows is not None:
            return len(self._rows)
        return len(self._entries or ())

    def _ints(self, name: str) -> np.ndarray:
        if self._columns is not None:
            return np.asarray(getattr(self._columns, name))[self._rows]
        files = [e.data_file for e in self._entries or ()]
        return np.array([int(getattr(f, name)) for f in files], dtype=np.int64)

    @cached_property
    def content(self) -> np.ndarray:
        """Each file's content (0 data, 1 position deletes, 2 equality deletes)."""
        return self._ints("content")

    @cached_property
    def record_count(self) -> np.ndarray:
        return self._ints("record_count")

    @cached_property
    def file_size_in_bytes(self) -> np.ndarray:
        return self._ints("file_size_in_bytes")

    @cached_property
    def snapshot_ids(self) -> np.ndarray:
        """Each file's entry's snapshot id after inheritance (-1: null)."""
        if self._columns is not None:
            return self._columns.snapshot_ids[self._rows]
        ids = [e.snapshot_id for e in self._entries or ()]
        return np.array([-1 if s is None else s for s in ids], dtype=np.int64)

    def listed(self, name: str) -> list[Any]:
        """Data-file field ``name`` (``file_path``, ``file_format``, ``content``...) of each
        file, as :class:`~icepark.spec.manifests.DataFile` holds it."""
        if self._columns is not None:
            values = self._columns.listed(name)
            assert self._rows is not None
            return [values[r] for r in self._rows.tolist()]
        return [getattr(e.data_file, name) for e in self._entries or ()]

    def partitions(self) -> tuple[list[tuple[Any, ...]], np.ndarray]:
        """Partition tuples (in the spec's field order, internal representation) and, for
        each file, the index of its own: each distinct tuple once from arrays; one tuple a
        file from entries (a small manifest's)."""
        if self._columns is not None:
            tuples, which = self._columns.partitions()
            return tuples, which[self._rows]
        found = [tuple(e.data_file.partition) for e in self._entries or ()]
        return found, np.arange(len(found), dtype=np.int64)


def live_files(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    *,
    live_only: bool = True,
    workers: int = DEFAULT_WORKERS,
) -> Iterator[ManifestFiles]:
    """The live files of each of ``manifests`` (with ``live_only=False`` also those only
    ``DELETED`` entries name), in order (see the module docstring)."""
    if not use_columns(manifests):
        for m, entries in read_entries(io, manifests, live_only=live_only, workers=workers):
            yield ManifestFiles(m, entries=entries)
        return
    for found in scan_columns(io, manifests, live_only=live_only, workers=workers):
        if len(found) == 2:  # a manifest the compiled path cannot read: its entries
            yield ManifestFiles(found[0], entries=found[1])
        else:
            m, columns, rows = found
            yield ManifestFiles(m, columns=columns, rows=rows)
