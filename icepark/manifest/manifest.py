"""Manifests: the Avro files that list data or delete files with their partitions and metrics.

The Avro schemas match Java's ``V1Metadata`` / ``V2Metadata`` / ``V3Metadata`` entry schemas:
record ``manifest_entry`` holding ``data_file`` as record ``r2``, its partition as record
``r102`` (one optional field per partition field, with the partition field ids), the metric
maps as arrays of ``k117_v118``-style records. v1 manifests carry the deprecated required
``block_size_in_bytes`` (always 64 MiB) and no content or sequence numbers.

The file's key/value metadata holds what a manifest needs to be read on its own: ``schema``
(the table schema JSON), ``schema-id``, ``partition-spec`` (the spec's fields JSON array),
``partition-spec-id``, ``format-version`` and, from v2, ``content`` (``data`` / ``deletes``).

Reading (by field id, with inheritance) lives in :mod:`icepark.manifest.reader`; its
functions are re-exported here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import fastavro
import numpy as np

from icepark.avro.file import AvroFileWriter, write_long
from icepark.avro.schema import (
    expanded_avro,
    schema_to_avro,
    to_avro_value,
)
from icepark.errors import ValidationError
from icepark.manifest.reader import read_manifest, read_manifest_metadata
from icepark.manifest.schemas import (
    DEFAULT_BLOCK_SIZE,
    check_format_version,
    data_file_field_names,
    iceberg_schema_json,
    manifest_entry_schema,
)
from icepark.spec.conversions import to_bytes
from icepark.spec.manifests import (
    DataFile,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)
from icepark.spec.partitioning import (
    PartitionSpec,
    partition_field_to_json,
)
from icepark.spec.schema import Schema, schema_to_json
from icepark.spec.types import (
    DoubleType,
    FloatType,
    IcebergType,
    PrimitiveType,
    StringType,
    StructType,
    UUIDType,
)

if TYPE_CHECKING:
    from icepark.manifest.entry_columns import EntryColumns

__all__ = [
    "ManifestWriter",
    "write_manifest",
    "read_manifest",
    "read_manifest_metadata",
]


# -- partition summaries ---------------------------------------------------------------------


def _order_key(t: IcebergType) -> Callable[[Any], Any]:
    """Sort key matching Java's comparators for values of ``t``."""
    if isinstance(t, StringType):
        return lambda v: v.encode("utf-16-be", "surrogatepass")  # Java compares UTF-16 units
    if isinstance(t, FloatType | DoubleType):
        return lambda v: (v, math.copysign(1.0, v) > 0)  # -0.0 before 0.0
    if isinstance(t, UUIDType):
        return lambda v: v.bytes
    return lambda v: v


class _FieldSummary:
    def __init__(self, t: IcebergType) -> None:
        self.type = t
        self.is_float = isinstance(t, FloatType | DoubleType)
        self.key = _order_key(t)
        self.contains_null = False
        self.contains_nan = False
        self.lower: Any = None
        self.upper: Any = None

    def update(self, value: Any) -> None:
        if value is None:
            self.contains_null = True
            return
        if self.is_float and math.isnan(value):
            self.contains_nan = True
            return
        if self.lower is None or self.key(value) < self.key(self.lower):
            self.lower = value
        if self.upper is None or self.key(value) > self.key(self.upper):
            self.upper = value

    def summary(self) -> PartitionFieldSummary:
        t = self.type
        lower = upper = None
        if self.lower is not None and isinstance(t, PrimitiveType):
            lower, upper = to_bytes(t, self.lower), to_bytes(t, self.upper)
        return PartitionFieldSummary(self.contains_null, self.contains_nan, lower, upper)


# -- writing ---------------------------------------------------------------------------------

_COPY_BLOCK = 64_000
"""About the bytes of copied records handed to the Avro writer at once."""


@lru_cache(maxsize=256)
def _entry_schemas(
    format_version: int, partition_type: StructType
) -> tuple[str | None, dict[str, Any]]:
    """The manifest entry schema as Iceberg JSON and as a parsed Avro schema (built once per
    version and partition type: every commit writes manifests with the same few)."""
    entry_schema = manifest_entry_schema(format_version, partition_type)
    avro = fastavro.parse_schema(schema_to_avro(entry_schema, "manifest_entry"))
    return iceberg_schema_json(entry_schema), cast(dict[str, Any], avro)


@lru_cache(maxsize=256)
def _data_file_avro(format_version: int, partition_type: StructType) -> Any:
    """The ``data_file`` record of the manifest entry schema, expanded
    (:func:`~icepark.avro.schema.expanded_avro`): what a copied record must be stored in."""
    entry = schema_to_avro(manifest_entry_schema(format_version, partition_type), "manifest_entry")
    field = next(f for f in entry["fields"] if f.get("field-id") == 2)
    return expanded_avro(field["type"])


def _optional_long(value: int) -> bytes:
    """A ``["null", "long"]`` union's encoding of ``value`` (-1: null)."""
    return b"\x00" if value == -1 else b"\x02" + write_long(value)


@dataclass
class _Copies:
    """How some entries of one manifest decoded into arrays are copied: where each one's
    data file record is in the manifest's bytes, which of the distinct encoded ``heads``
    (status EXISTING, snapshot id, sequence numbers) each new record starts with, and the
    records of entries whose inherited first row id is written in (by their index among
    the entries)."""

    raw: bytes
    starts: np.ndarray
    ends: np.ndarray
    head_of: np.ndarray
    heads: list[bytes]
    patched: dict[int, bytes]


def _json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def _sorted_map(values: dict[int, Any] | None) -> list[dict[str, Any]] | None:
    if values is None:
        return None
    return [{"key": k, "value": values[k]} for k in sorted(values)]


class ManifestWriter:
    """Writes one manifest; made by :func:`write_manifest`.

    Use as a context manager (or call :meth:`close`); :meth:`to_manifest_file` then gives the
    manifest's entry for a manifest list, with counts and partition summaries. If the block
    raises, nothing is written.
    """

    def __init__(
        self,
        output_file: Any,
        spec: PartitionSpec,
        schema: Schema,
        *,
        format_version: int,
        snapshot_id: int | None,
        content: ManifestContent = ManifestContent.DATA,
        codec: str = "deflate",
        overwrite: bool = False,
    ) -> None:
        check_format_version(format_version, "manifest")
        content = ManifestContent(content)
        if format_version == 1 and content != ManifestContent.DATA:
            raise ValidationError("Cannot write a delete manifest for a v1 table")
        self.spec = spec
        self.schema = schema
        self.format_version = format_version
        self.snapshot_id = snapshot_id
        self.content = content
        self._partition_type = spec.partition_type(schema)
        metadata = {
            "schema": _json(schema_to_json(schema)),
            "schema-id": str(schema.schema_id),
            "partition-spec": _json([partition_field_to_json(f) for f in spec.fields]),
            "partition-spec-id": str(spec.spec_id),
            "format-version": str(format_version),
        }
        if format_version >= 2:
            metadata["content"] = "data" if content == ManifestContent.DATA else "deletes"
        iceberg_schema, avro_schema = _entry_schemas(format_version, self._partition_type)
        if iceberg_schema is not None:
            metadata["iceberg.schema"] = iceberg_schema
        self._file_fields = data_file_field_names(format_version)
        self._writer = AvroFileWriter(output_file, avro_schema, metadata, codec, overwrite)
        self.location = self._writer.location
        self._summaries = [_FieldSummary(f.field_type) for f in self._partition_type.fields]
        self._files = {s: 0 for s in ManifestEntryStatus}
        self._rows = {s: 0 for s in ManifestEntryStatus}
        self._min_sequence_number: int | None = None
        self._manifest_file: ManifestFile | None = None

    # -- entries -------------------------------------------------------------------------

    def add(self, data_file: DataFile, sequence_number: int | None = None) -> None:
        """Add a new file; its snapshot id is the writer's, its sequence numbers inherited
        unless a data ``sequence_number`` is given."""
        self.write_entry(
            ManifestEntry(
                ManifestEntryStatus.ADDED, self.snapshot_id, sequence_number, None, data_file
            )
        )

    def existing(self, entry: ManifestEntry) -> None:
        """Carry over a live file from another manifest, keeping its ids and sequence numbers."""
        self.write_entry(entry.replace(status=ManifestEntryStatus.EXISTING))

    def delete(self, entry: ManifestEntry) -> None:
        """Mark a file deleted in the writer's snapshot, keeping its sequence numbers."""
        self.write_entry(
            entry.replace(status=ManifestEntryStatus.DELETED, snapshot_id=self.snapshot_id)
        )

    def existing_rows(
        self, sources: Sequence[EntryColumns], which: np.ndarray, rows: np.ndarray
    ) -> None:
        """Carry over entry ``rows[i]`` of the manifest ``sources[which[i]]`` (decoded into
        arrays) for each ``i`` in order, as :meth:`existing` carries an entry: status
        EXISTING, its snapshot id, sequence numbers and (v3) first row id kept.

        A manifest whose ``data_file`` schema is the one this writer writes (the same format
        version and partition type, which Java's manifests share with icepark's) has each
        entry's data file record copied as it is stored: only the entry's status, snapshot
        id and sequence numbers are encoded here, and a first row id the file inherits is
        written into its record. The entries of other manifests are made objects and
        written one at a time."""
        if self._manifest_file is not None:
            raise ValidationError(f"Cannot add to a closed manifest writer: {self.location}")
        n = len(rows)
        starts = np.zeros(n, dtype=np.int64)
        ends = np.zeros(n, dtype=np.int64)
        head_of = np.full(n, -1, dtype=np.int64)  # -1: written as an object
        heads: list[bytes] = []
        raws: dict[int, bytes] = {}
        patched: dict[int, bytes] = {}
        for w in np.unique(which).tolist():
            at = np.flatnonzero(which == w)
            c = self._copies(sources[w], rows[at])
            if c is None:
                continue
            raws[w] = c.raw
            starts[at], ends[at] = c.starts, c.ends
            head_of[at] = c.head_of + len(heads)
            heads += c.heads
            patched.update((int(at[k]), body) for k, body in c.patched.items())
        parts: list[bytes] = []
        size = count = 0
        entries = zip(which.tolist(), starts.tolist(), ends.tolist(), head_of.tolist(), strict=True)
        for i, (w, start, end, h) in enumerate(entries):
            if h < 0:
                if count:
                    self._writer.write_encoded(count, b"".join(parts))
                    parts, size, count = [], 0, 0
                self.existing(sources[w].entry(int(rows[i])))
                continue
            body = patched.get(i) if patched else None
            if body is None:
                body = raws[w][start:end]
            parts.append(heads[h])
            parts.append(body)
            size += len(body)
            count += 1
            if size >= _COPY_BLOCK:
                self._writer.write_encoded(count, b"".join(parts))
                parts, size, count = [], 0, 0
        if count:
            self._writer.write_encoded(count, b"".join(parts))

    def can_copy(self, columns: EntryColumns) -> bool:
        """Does :meth:`existing_rows` copy the data file records of ``columns`` as they are
        stored? When the manifest's ``data_file`` schema is the one this writer writes
        (compared expanded: :func:`~icepark.avro.schema.expanded_avro`)."""
        return bool(
            columns.data_file_avro == _data_file_avro(self.format_version, self._partition_type)
        )

    def _copies(self, columns: EntryColumns, rows: np.ndarray) -> _Copies | None:
        """How entries ``rows`` of ``columns`` are copied (None when their records cannot
        be), after the checks :meth:`write_entry` makes, with the counts, partition
        summaries and lowest sequence number it keeps updated for all of them at once."""
        if not self.can_copy(columns):
            return None
        snapshot, seq, file_seq, row_ids = (a[rows] for a in columns.inherited)
        content = columns.content[rows]
        is_data = content == int(FileContent.DATA)
        wrong = np.flatnonzero(is_data != (self.content == ManifestContent.DATA))
        if len(wrong):
            kind = "data" if self.content == ManifestContent.DATA else "delete"
            raise ValidationError(
                f"Cannot add {FileContent(int(content[wrong[0]])).name} file to a {kind} "
                f"manifest: {columns.file_field('file_path', int(rows[wrong[0]]))}"
            )
        if self.format_version >= 2 and (seq == -1).any():
            r = int(rows[np.flatnonzero(seq == -1)[0]])
            raise ValidationError(
                f"Only entries with status ADDED can have null sequence number: "
                f"{columns.file_field('file_path', r)}"
            )
        raw = columns.raw
        all_starts, all_ends = columns.data_file_records()
        starts, ends = all_starts[rows], all_ends[rows]
        patched: dict[int, bytes] = {}
        stored = columns.stored_first_row_ids() if self.format_version >= 3 else None
        if stored is not None:  # v3: a first row id the file inherits is written in
            at, stored_null = stored
            inherits = np.flatnonzero(stored_null[rows] & is_data & (row_ids != -1))
            for k, p in zip(inherits.tolist(), at[rows[inherits]].tolist(), strict=True):
                if raw[p] != 0:  # not the one-byte null branch this schema writes
                    return None
                row_id = _optional_long(int(row_ids[k]))
                patched[k] = raw[int(starts[k]) : p] + row_id + raw[p + 1 : int(ends[k])]
        keys = np.stack([snapshot, seq, file_seq], axis=1)
        distinct, head_of = np.unique(keys, axis=0, return_inverse=True)
        heads = []
        for snap, data_seq, file_seq_number in distinct.tolist():
            head = b"\x00" + _optional_long(snap)  # status EXISTING
            if self.format_version >= 2:
                head += _optional_long(data_seq) + _optional_long(file_seq_number)
            heads.append(head)
        # what write_entry keeps, for all the rows at once
        existing = ManifestEntryStatus.EXISTING
        self._files[existing] += len(rows)
        self._rows[existing] += int(columns.record_count[rows].sum())
        tuples, partition_of = columns.partitions()
        for k in np.unique(partition_of[rows]).tolist():
            for summary, value in zip(self._summaries, tuples[k], strict=True):
                summary.update(value)
        known = seq[seq != -1]
        if len(known):
            low = int(known.min())
            if self._min_sequence_number is None or low < self._min_sequence_number:
                self._min_sequence_number = low
        return _Copies(raw, starts, ends, head_of.reshape(-1), heads, patched)

    def write_entry(self, entry: ManifestEntry) -> None:
        """Write an entry as it is (status, snapshot id and sequence numbers unchanged)."""
        if self._manifest_file is not None:
            raise ValidationError(f"Cannot add to a closed manifest writer: {self.location}")
        self._check_entry(entry)
        self._writer.write(self._record(entry))
        data_file = entry.data_file
        self._files[entry.status] += 1
        self._rows[entry.status] += data_file.record_count
        for summary, value in zip(self._summaries, data_file.partition):
            summary.update(value)
        seq = entry.sequence_number
        if entry.is_live and seq is not None:
            if self._min_sequence_number is None or seq < self._min_sequence_number:
                self._min_sequence_number = seq

    def _check_entry(self, entry: ManifestEntry) -> None:
        f = entry.data_file
        is_data = f.content == FileContent.DATA
        if is_data != (self.content == ManifestContent.DATA):
            kind = "data" if self.content == ManifestContent.DATA else "delete"
            raise ValidationError(
                f"Cannot add {f.content.name} file to a {kind} manifest: {f.file_path}"
            )
        if len(f.partition) != len(self._partition_type.fields):
            raise ValidationError(
                f"Partition {f.partition!r} of {f.file_path} does not match spec {self.spec}"
            )
        if self.format_version >= 2 and entry.sequence_number is None:
            if entry.status != ManifestEntryStatus.ADDED:
                raise ValidationError(
                    f"Only entries with status ADDED can have null sequence number: {f.file_path}"
                )
            if entry.snapshot_id is not None and entry.snapshot_id != self.snapshot_id:
                raise ValidationError(
                    f"Found unassigned sequence number for an entry from snapshot "
                    f"{entry.snapshot_id}: {f.file_path}"
                )

    def _record(self, entry: ManifestEntry) -> dict[str, Any]:
        f = entry.data_file
        is_data = f.content == FileContent.DATA
        is_pos = f.content == FileContent.POSITION_DELETES
        values: dict[str, Any] = {
            "content": int(f.content),
            "file_path": f.file_path,
            "file_format": str(f.file_format),
            "partition": to_avro_value(self._partition_type, f.partition),
            "record_count": f.record_count,
            "file_size_in_bytes": f.file_size_in_bytes,
            "block_size_in_bytes": DEFAULT_BLOCK_SIZE,
            "column_sizes": _sorted_map(f.column_sizes),
            "value_counts": _sorted_map(f.value_counts),
            "null_value_counts": _sorted_map(f.null_value_counts),
            "nan_value_counts": _sorted_map(f.nan_value_counts),
            "lower_bounds": _sorted_map(f.lower_bounds),
            "upper_bounds": _sorted_map(f.upper_bounds),
            "key_metadata": f.key_metadata,
            "split_offsets": None if f.split_offsets is None else list(f.split_offsets),
            "equality_ids": None if f.equality_ids is None else list(f.equality_ids),
            "sort_order_id": f.sort_order_id,
            # as Java: row ids only for data files, DV references only for position deletes
            "first_row_id": f.first_row_id if is_data else None,
            "referenced_data_file": f.referenced_data_file if is_pos else None,
            "content_offset": f.content_offset if is_pos else None,
            "content_size_in_bytes": f.content_size_in_bytes if is_pos else None,
        }
        record: dict[str, Any] = {
            "status": int(entry.status),
            "snapshot_id": entry.snapshot_id,
            "data_file": {n: values[n] for n in self._file_fields},
        }
        if self.format_version >= 2:
            record["sequence_number"] = entry.sequence_number
            record["file_sequence_number"] = entry.file_sequence_number
        return record

    # -- finishing -----------------------------------------------------------------------

    def close(self) -> ManifestFile:
        """Publish the manifest and return its :class:`ManifestFile`."""
        if self._manifest_file is None:
            length = self._writer.close()
            self._manifest_file = ManifestFile(
                manifest_path=self.location,
                manifest_length=length,
                partition_spec_id=self.spec.spec_id,
                content=self.content,
                sequence_number=None,
                min_sequence_number=self._min_sequence_number,
                added_snapshot_id=self.snapshot_id,
                added_files_count=self._files[ManifestEntryStatus.ADDED],
                existing_files_count=self._files[ManifestEntryStatus.EXISTING],
                deleted_files_count=self._files[ManifestEntryStatus.DELETED],
                added_rows_count=self._rows[ManifestEntryStatus.ADDED],
                existing_rows_count=self._rows[ManifestEntryStatus.EXISTING],
                deleted_rows_count=self._rows[ManifestEntryStatus.DELETED],
                partitions=tuple(s.summary() for s in self._summaries),
            )
        return self._manifest_file

    def abort(self) -> None:
        """Drop the manifest; nothing is written."""
        if self._manifest_file is None:
            self._writer.abort()

    def to_manifest_file(self) -> ManifestFile:
        """The written manifest's :class:`ManifestFile` (after :meth:`close`)."""
        if self._manifest_file is None:
            raise ValidationError(f"Manifest writer is still open: {self.location}")
        return self._manifest_file

    def __enter__(self) -> ManifestWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_manifest(
    output_file: Any,
    spec: PartitionSpec,
    schema: Schema,
    *,
    format_version: int,
    snapshot_id: int | None,
    content: ManifestContent = ManifestContent.DATA,
    codec: str = "deflate",
    overwrite: bool = False,
) -> ManifestWriter:
    """A :class:`ManifestWriter` for a new manifest at ``output_file``."""
    return ManifestWriter(
        output_file,
        spec,
        schema,
        format_version=format_version,
        snapshot_id=snapshot_id,
        content=content,
        codec=codec,
        overwrite=overwrite,
    )
