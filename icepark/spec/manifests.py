"""What manifests and manifest lists hold: data files, manifest entries and manifest files.

Small immutable values. Partition tuples hold values in icepark's internal representation
(see :mod:`icepark.spec.types`), in the order of the partition spec's fields; column bounds
hold binary single values (:func:`icepark.spec.conversions.to_bytes`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any

from icepark.errors import ValidationError

__all__ = [
    "FileContent",
    "FileFormat",
    "ManifestContent",
    "ManifestEntryStatus",
    "DataFile",
    "ManifestEntry",
    "PartitionFieldSummary",
    "ManifestFile",
    "UNASSIGNED_SEQUENCE_NUMBER",
]

UNASSIGNED_SEQUENCE_NUMBER = -1
"""Java's marker for a sequence number not assigned yet; ``None`` means the same here."""


class FileContent(IntEnum):
    """What a file tracked by a manifest holds."""

    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


class FileFormat(StrEnum):
    """A data or delete file's format, written in manifests as Java does (upper case)."""

    PARQUET = "PARQUET"
    AVRO = "AVRO"
    ORC = "ORC"
    PUFFIN = "PUFFIN"

    @classmethod
    def parse(cls, text: str) -> FileFormat:
        """The format named ``text``, in any case (``parquet``, ``PARQUET``)."""
        try:
            return cls(text.strip().upper())
        except ValueError:
            raise ValidationError(f"Unknown file format: {text!r}") from None

    def __str__(self) -> str:
        return self.value


class ManifestContent(IntEnum):
    """Whether a manifest tracks data files or delete files."""

    DATA = 0
    DELETES = 1


class ManifestEntryStatus(IntEnum):
    """An entry's status in a manifest."""

    EXISTING = 0
    ADDED = 1
    DELETED = 2


def _tuple_or_none(value: Sequence[Any] | None) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _dict_or_none(value: Mapping[int, Any] | None) -> dict[int, Any] | None:
    return None if value is None else dict(value)


@dataclass(frozen=True)
class DataFile:
    """A data or delete file as a manifest entry describes it (the ``data_file`` struct).

    ``spec_id`` is the id of the partition spec of ``partition``; it is not stored in the
    entry (the manifest's spec is) but kept alongside. Lists given for ``partition``,
    ``split_offsets`` and ``equality_ids`` are stored as tuples.
    """

    content: FileContent
    file_path: str
    file_format: FileFormat
    partition: tuple[Any, ...]
    record_count: int
    file_size_in_bytes: int
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    spec_id: int = 0

    def __post_init__(self) -> None:
        setter = object.__setattr__
        setter(self, "content", FileContent(self.content))
        fmt = self.file_format
        setter(self, "file_format", fmt if isinstance(fmt, FileFormat) else FileFormat.parse(fmt))
        setter(self, "partition", tuple(self.partition))
        setter(self, "split_offsets", _tuple_or_none(self.split_offsets))
        setter(self, "equality_ids", _tuple_or_none(self.equality_ids))
        for name in (
            "column_sizes",
            "value_counts",
            "null_value_counts",
            "nan_value_counts",
            "lower_bounds",
            "upper_bounds",
        ):
            setter(self, name, _dict_or_none(getattr(self, name)))

    def __hash__(self) -> int:
        return hash((self.content, self.file_path))

    @classmethod
    def from_normalized(cls, values: dict[str, Any]) -> DataFile:
        """A data file from a value for every field, each already in the form the constructor
        normalizes to (enums, tuples, fresh dicts): skips the conversions, for readers
        building many files."""
        if values.keys() != _DATA_FILE_FIELDS:
            wrong = sorted(_DATA_FILE_FIELDS.symmetric_difference(values))
            raise ValidationError(f"DataFile fields missing or unknown: {wrong}")
        data_file = object.__new__(cls)
        data_file.__dict__.update(values)
        return data_file

    def replace(self, **changes: Any) -> DataFile:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def without_stats(self) -> DataFile:
        """A copy without column metrics (sizes, counts and bounds)."""
        return dataclasses.replace(
            self,
            column_sizes=None,
            value_counts=None,
            null_value_counts=None,
            nan_value_counts=None,
            lower_bounds=None,
            upper_bounds=None,
        )


_DATA_FILE_FIELDS = frozenset(f.name for f in dataclasses.fields(DataFile))


@dataclass(frozen=True)
class ManifestEntry:
    """One entry of a manifest: a file, its status and the snapshot and sequence numbers.

    ``snapshot_id``, ``sequence_number`` (the data sequence number) and
    ``file_sequence_number`` are ``None`` when written for inheritance; the reader fills them
    in from the manifest's metadata in the manifest list.
    """

    status: ManifestEntryStatus
    snapshot_id: int | None
    sequence_number: int | None
    file_sequence_number: int | None
    data_file: DataFile

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", ManifestEntryStatus(self.status))

    @property
    def is_live(self) -> bool:
        """Added or existing (not deleted)."""
        return self.status != ManifestEntryStatus.DELETED

    def replace(self, **changes: Any) -> ManifestEntry:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class PartitionFieldSummary:
    """What a manifest's files hold for one partition field (bounds as binary single values)."""

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True)
class ManifestFile:
    """A manifest as a manifest list describes it (the ``manifest_file`` struct).

    ``sequence_number`` and ``min_sequence_number`` are ``None`` (or -1, as Java writes it)
    until the manifest list of the committing snapshot assigns them; ``added_snapshot_id`` is
    ``None`` for a manifest written without a snapshot id. The file and row counts are ``None``
    when unknown (old v1 manifest lists). ``first_row_id`` (v3) is the first row id for the
    rows of the manifest's data files that have none yet. A list given for ``partitions`` is
    stored as a tuple.
    """

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent = ManifestContent.DATA
    sequence_number: int | None = None
    min_sequence_number: int | None = None
    added_snapshot_id: int | None = None
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: tuple[PartitionFieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "content", ManifestContent(self.content))
        object.__setattr__(self, "partitions", _tuple_or_none(self.partitions))

    @property
    def has_added_files(self) -> bool:
        """True when the manifest has ADDED entries, or when that is unknown."""
        return self.added_files_count is None or self.added_files_count > 0

    @property
    def has_existing_files(self) -> bool:
        """True when the manifest has EXISTING entries, or when that is unknown."""
        return self.existing_files_count is None or self.existing_files_count > 0

    @property
    def has_deleted_files(self) -> bool:
        """True when the manifest has DELETED entries, or when that is unknown."""
        return self.deleted_files_count is None or self.deleted_files_count > 0

    @property
    def sequence_number_assigned(self) -> bool:
        return (
            self.sequence_number is not None and self.sequence_number != UNASSIGNED_SEQUENCE_NUMBER
        )

    def replace(self, **changes: Any) -> ManifestFile:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)
