"""Manifests: the Avro files that list data or delete files with their partitions and metrics.

The Avro schemas match Java's ``V1Metadata`` / ``V2Metadata`` / ``V3Metadata`` entry schemas:
record ``manifest_entry`` holding ``data_file`` as record ``r2``, its partition as record
``r102`` (one optional field per partition field, with the partition field ids), the metric
maps as arrays of ``k117_v118``-style records. v1 manifests carry the deprecated required
``block_size_in_bytes`` (always 64 MiB) and no content or sequence numbers.

The file's key/value metadata holds what a manifest needs to be read on its own: ``schema``
(the table schema JSON), ``schema-id``, ``partition-spec`` (the spec's fields JSON array),
``partition-spec-id``, ``format-version`` and, from v2, ``content`` (``data`` / ``deletes``).

Reading goes by field id and applies inheritance from the manifest's entry in the manifest
list: a null snapshot id, null sequence numbers of added entries, and (v3) null first row ids
of live data files, which take the manifest's ``first_row_id`` plus the record counts of the
files before them that had none.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from types import TracebackType
from typing import Any

from icepark.avro.file import AvroContents, AvroFileWriter, read_avro_file, read_avro_metadata
from icepark.avro.schema import (
    FIELD_ID_PROP,
    avro_to_type,
    from_avro_value,
    named_avro_types,
    schema_to_avro,
    to_avro_value,
)
from icepark.errors import IceparkError, InvalidAvroFileError, ValidationError
from icepark.manifest.models import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)
from icepark.manifest.schemas import (
    DATA_FILE_FIELDS,
    DEFAULT_BLOCK_SIZE,
    PARTITION_FIELD_ID,
    check_format_version,
    data_file_field_names,
    iceberg_schema_json,
    manifest_entry_schema,
)
from icepark.spec.conversions import to_bytes
from icepark.spec.partitioning import (
    PartitionSpec,
    partition_field_to_json,
    partition_spec_from_json,
)
from icepark.spec.schema import Schema, schema_to_json
from icepark.spec.types import (
    DoubleType,
    FloatType,
    IcebergType,
    PrimitiveType,
    StringType,
    UUIDType,
)

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
        entry_schema = manifest_entry_schema(format_version, self._partition_type)
        iceberg_schema = iceberg_schema_json(entry_schema)
        if iceberg_schema is not None:
            metadata["iceberg.schema"] = iceberg_schema
        avro_schema = schema_to_avro(entry_schema, "manifest_entry")
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


# -- reading ---------------------------------------------------------------------------------

_DEFAULT_IDS: dict[str, int] = {
    "status": 0,
    "snapshot_id": 1,
    "data_file": 2,
    "sequence_number": 3,
    "file_sequence_number": 4,
    "partition": PARTITION_FIELD_ID,
    **{name: f.field_id for name, f in DATA_FILE_FIELDS.items()},
}


def _fields_by_id(record: dict[str, Any], defaults: dict[str, int]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for f in record.get("fields", []):
        fid = f.get(FIELD_ID_PROP, defaults.get(f.get("name", "")))
        if fid is not None:
            out.setdefault(int(fid), f)
    return out


def _record_type(avro: Any, named: dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(avro, list):
        avro = next((b for b in avro if b != "null"), None)
    if isinstance(avro, str):
        avro = named.get(avro)
    return avro if isinstance(avro, dict) and avro.get("type") == "record" else None


def read_manifest_metadata(input_file: Any) -> dict[str, str]:
    """A manifest's key/value metadata (``schema``, ``partition-spec``, ``format-version``...)."""
    return read_avro_metadata(input_file)


def _spec_from_metadata(metadata: dict[str, str]) -> PartitionSpec | None:
    text = metadata.get("partition-spec")
    if text is None:
        return None
    try:
        parsed = partition_spec_from_json(json.loads(text))
        spec_id = int(metadata.get("partition-spec-id", parsed.spec_id))
        return PartitionSpec(spec_id, parsed.fields)
    except (IceparkError, ValueError, TypeError):
        return None


class _PartitionReader:
    """Decodes the ``partition`` record into a tuple in spec order, reading by field id."""

    def __init__(
        self, record: dict[str, Any] | None, spec: PartitionSpec | None, named: dict[str, Any]
    ) -> None:
        avro_fields: list[dict[str, Any]] = [] if record is None else list(record.get("fields", []))
        by_id = {int(f[FIELD_ID_PROP]): f for f in avro_fields if FIELD_ID_PROP in f}
        by_name = {f.get("name"): f for f in avro_fields}
        chosen: list[dict[str, Any] | None] = []
        if spec is not None and (spec.fields or not avro_fields):
            for pos, pf in enumerate(spec.fields):
                f = by_id.get(pf.field_id) or by_name.get(pf.name)
                if f is None and not by_id and pos < len(avro_fields):
                    f = avro_fields[pos]  # an old writer without partition field ids
                chosen.append(f)
        else:
            chosen = list(avro_fields)
        self._fields: list[tuple[str, IcebergType] | None] = [
            None if f is None else (f["name"], avro_to_type(f["type"], named)) for f in chosen
        ]

    def read(self, value: dict[str, Any] | None) -> tuple[Any, ...]:
        if value is None:
            return tuple(None for _ in self._fields)
        return tuple(
            None if f is None else from_avro_value(f[1], value.get(f[0])) for f in self._fields
        )


def _int_map(value: Any) -> dict[int, Any] | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return {int(k): v for k, v in value.items()}
    return {int(kv["key"]): kv["value"] for kv in value}


def _bytes_map(value: Any) -> dict[int, bytes] | None:
    m = _int_map(value)
    return None if m is None else {k: bytes(v) for k, v in m.items()}


def read_manifest(
    input_file: Any,
    manifest: ManifestFile | None = None,
    *,
    spec: PartitionSpec | None = None,
) -> list[ManifestEntry]:
    """The entries of a manifest, with inherited values filled in from ``manifest``.

    Partition tuples follow ``spec`` when given, else the spec in the file's metadata; values
    are decoded with the types the file's Avro schema declares, so a manifest reads on its own.
    Without ``manifest`` nothing is inherited, except that v1 manifests have sequence numbers 0.
    """
    contents = read_avro_file(input_file)
    try:
        return _read_entries(contents, manifest, spec)
    except InvalidAvroFileError:
        raise
    except (IceparkError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvalidAvroFileError(f"Invalid manifest {contents.location}: {exc}") from exc


def _read_entries(
    contents: AvroContents, manifest: ManifestFile | None, spec: PartitionSpec | None
) -> list[ManifestEntry]:
    location = contents.location
    schema = contents.writer_schema
    named = named_avro_types(schema)
    top = _record_type(schema, named)
    if top is None:
        raise InvalidAvroFileError(f"Not a manifest (no record schema): {location}")
    top_fields = _fields_by_id(top, _DEFAULT_IDS)
    file_record = _record_type(top_fields[2]["type"], named) if 2 in top_fields else None
    if 0 not in top_fields or file_record is None:
        raise InvalidAvroFileError(f"Not a manifest: {location} has no status or data_file field")
    file_fields = _fields_by_id(file_record, _DEFAULT_IDS)
    missing = [fid for fid in (100, 101, 103, 104) if fid not in file_fields]
    if missing:
        raise InvalidAvroFileError(
            f"Not a manifest: {location} data_file lacks field id(s) {missing}"
        )
    metadata = contents.metadata
    try:
        format_version = int(metadata.get("format-version", "2" if 3 in top_fields else "1"))
    except ValueError:
        raise InvalidAvroFileError(f"Invalid format-version in manifest {location}") from None
    if spec is None:
        spec = _spec_from_metadata(metadata)
    partition_record = (
        _record_type(file_fields[PARTITION_FIELD_ID]["type"], named)
        if PARTITION_FIELD_ID in file_fields
        else None
    )
    partitions = _PartitionReader(partition_record, spec, named)
    if manifest is not None:
        spec_id = manifest.partition_spec_id
    elif spec is not None:
        spec_id = spec.spec_id
    else:
        spec_id = int(metadata.get("partition-spec-id", "0"))

    top_names = {fid: f["name"] for fid, f in top_fields.items()}
    file_names = {fid: f["name"] for fid, f in file_fields.items()}
    v1 = format_version == 1 or 3 not in top_fields
    inherit = _Inheritance(manifest, v1)
    entries = []
    for rec in contents.records:
        try:
            entry = _entry(rec, top_names, file_names, partitions, spec_id)
        except (IceparkError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InvalidAvroFileError(f"Invalid manifest entry in {location}: {exc}") from exc
        entries.append(inherit.apply(entry))
    return entries


def _entry(
    rec: dict[str, Any],
    top: dict[int, str],
    names: dict[int, str],
    partitions: _PartitionReader,
    spec_id: int,
) -> ManifestEntry:
    def get(fid: int) -> Any:
        name = top.get(fid)
        return None if name is None else rec.get(name)

    df = get(2)

    def fget(fid: int) -> Any:
        name = names.get(fid)
        return None if name is None else df.get(name)

    content = fget(134)
    split_offsets = fget(132)
    equality_ids = fget(135)
    key_metadata = fget(131)
    data_file = DataFile(
        content=FileContent(0 if content is None else content),
        file_path=fget(100),
        file_format=FileFormat.parse(fget(101)),
        partition=partitions.read(fget(PARTITION_FIELD_ID)),
        record_count=fget(103),
        file_size_in_bytes=fget(104),
        column_sizes=_int_map(fget(108)),
        value_counts=_int_map(fget(109)),
        null_value_counts=_int_map(fget(110)),
        nan_value_counts=_int_map(fget(137)),
        lower_bounds=_bytes_map(fget(125)),
        upper_bounds=_bytes_map(fget(128)),
        key_metadata=None if key_metadata is None else bytes(key_metadata),
        split_offsets=split_offsets,
        equality_ids=equality_ids,
        sort_order_id=fget(140),
        first_row_id=fget(142),
        referenced_data_file=fget(143),
        content_offset=fget(144),
        content_size_in_bytes=fget(145),
        spec_id=spec_id,
    )
    return ManifestEntry(ManifestEntryStatus(get(0)), get(1), get(3), get(4), data_file)


class _Inheritance:
    """Fills in what entries inherit from their manifest (Java's InheritableMetadataFactory)."""

    def __init__(self, manifest: ManifestFile | None, v1: bool) -> None:
        self.snapshot_id = None if manifest is None else manifest.added_snapshot_id
        seq = None if manifest is None else manifest.sequence_number
        if seq is not None and seq < 0:
            seq = None
        if seq is None and v1:
            seq = 0
        self.sequence_number = seq
        self.next_row_id: int | None = None
        if manifest is not None and manifest.content == ManifestContent.DATA:
            self.next_row_id = manifest.first_row_id

    def apply(self, entry: ManifestEntry) -> ManifestEntry:
        changes: dict[str, Any] = {}
        if entry.snapshot_id is None and self.snapshot_id is not None:
            changes["snapshot_id"] = self.snapshot_id
        seq = self.sequence_number
        if seq is not None and (seq == 0 or entry.status == ManifestEntryStatus.ADDED):
            if entry.sequence_number is None:
                changes["sequence_number"] = seq
            if entry.file_sequence_number is None:
                changes["file_sequence_number"] = seq
        f = entry.data_file
        if (
            self.next_row_id is not None
            and f.first_row_id is None
            and f.content == FileContent.DATA
            and entry.is_live
        ):
            changes["data_file"] = f.replace(first_row_id=self.next_row_id)
            self.next_row_id += f.record_count
        return entry.replace(**changes) if changes else entry
