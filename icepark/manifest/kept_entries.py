"""Some entries of a manifest decoded into arrays, carried to another process.

Planning on Spark reads and judges manifests in Spark tasks and sends the driver only the
entries kept. :func:`keep` takes them from a manifest's
:class:`~icepark.manifest.entry_columns.EntryColumns`: their Avro records as they were in the
file (uncompressed, one after another), what decodes them
(:class:`~icepark.manifest.entry_columns.EntryOrigin`) and their values after inheritance
(a v3 entry's first row id counts the rows of the entries before it, which do not travel).
:meth:`KeptEntries.columns` decodes them again where they arrive, by the same compiled
reader (:func:`~icepark.manifest.entry_columns.decode_entry_columns`): the arrays, data files
and tasks made of them are those of the manifest's own decode, row for row.

Small and picklable: the records take what they took in the manifest (some 300 bytes an
entry with metrics for five columns), plus four integers an entry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icepark.manifest.entry_columns import EntryColumns, EntryOrigin, decode_entry_columns

__all__ = ["KeptEntries", "keep"]


@dataclass(frozen=True)
class KeptEntries:
    """Entries of one manifest: their records, how to decode them and their inherited
    values (see the module docstring)."""

    origin: EntryOrigin
    records: bytes
    count: int
    inherited: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

    def columns(self) -> EntryColumns:
        """The entries decoded into arrays, row ``i`` the ``i``-th entry kept."""
        return decode_entry_columns(self.origin, self.records, self.count, inherited=self.inherited)


def keep(columns: EntryColumns, rows: np.ndarray) -> KeptEntries:
    """Entries ``rows`` (indexes in file order) of ``columns``, to decode elsewhere."""
    if columns.origin is None:
        raise ValueError(f"entries of {columns.location} decoded without their origin")
    rows = np.asarray(rows, dtype=np.int64)
    starts = columns.slots.starts
    raw = columns.raw
    inherited = tuple(a[rows] for a in columns.inherited)
    n = len(rows)
    if n == columns.count:  # every entry (rows are in file order, each once)
        records = bytes(raw[int(starts[0]) : int(starts[n])])
    elif n:
        begin, end = starts[rows], starts[rows + 1]
        sizes = end - begin
        # each kept record's bytes, one after another: byte k of the output comes from
        # its record's start plus its place in the record
        offsets = np.cumsum(sizes) - sizes
        index = np.repeat(begin - offsets, sizes) + np.arange(int(sizes.sum()))
        records = np.frombuffer(raw, dtype=np.uint8)[index].tobytes()
    else:
        records = b""
    return KeptEntries(columns.origin, records, n, inherited)
