"""Reading manifests: entries by field id, with what they inherit from the manifest list.

Reading goes by field id and applies inheritance from the manifest's entry in the manifest
list: a null snapshot id, null sequence numbers of added entries, and (v3) null first row ids
of live data files, which take the manifest's ``first_row_id`` plus the record counts of the
files before them that had none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from icepark.avro.file import AvroContents, read_avro_file, read_avro_metadata
from icepark.avro.schema import (
    FIELD_ID_PROP,
    avro_to_type,
    from_avro_value,
    named_avro_types,
)
from icepark.errors import IceparkError, InvalidAvroFileError
from icepark.manifest.schemas import DATA_FILE_FIELDS, PARTITION_FIELD_ID
from icepark.spec.manifests import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from icepark.spec.partitioning import PartitionSpec, partition_spec_from_json
from icepark.spec.types import IcebergType

__all__ = ["EntryDecoder", "read_manifest", "read_manifest_metadata"]

# What decoding a malformed manifest (a schema of the wrong shape, values of the wrong type,
# JSON nested too deeply) raises; the readers turn these into InvalidAvroFileError naming
# the file.
MALFORMED: tuple[type[Exception], ...] = (
    IceparkError,
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    IndexError,
    OverflowError,
    RecursionError,
)


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


_INTEGER: tuple[str, ...] = ("int", "long")
# the Avro types of the fields read as decoded (by field id): a schema that gives them
# another type is not a manifest (or a manifest list) whatever its field ids say
_TOP_KINDS: dict[int, tuple[str, ...]] = {0: _INTEGER, 1: _INTEGER, 3: _INTEGER, 4: _INTEGER}
_FILE_KINDS: dict[int, tuple[str, ...]] = {
    100: ("string",),
    101: ("string",),
    103: _INTEGER,
    104: _INTEGER,
    134: _INTEGER,
    140: _INTEGER,
    142: _INTEGER,
    143: ("string",),
    144: _INTEGER,
    145: _INTEGER,
    131: ("bytes",),
}
# maps (Avro arrays of key/value records) whose values are read as decoded binary
_BYTES_MAPS = (125, 128)


def _avro_kind(avro: Any) -> str | None:
    """The primitive type of a field's Avro type (a ``["null", t]`` union: of ``t``)."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        avro = branches[0] if len(branches) == 1 else None
    if isinstance(avro, dict):
        avro = avro.get("type")
    return avro if isinstance(avro, str) else None


def check_field_kinds(
    location: str, fields: dict[int, dict[str, Any]], kinds: Mapping[int, tuple[str, ...]]
) -> None:
    """Refuse fields (by id) whose Avro type is not one of ``kinds``; the error names the
    file, the field and its type."""
    for fid, allowed in kinds.items():
        f = fields.get(fid)
        if f is not None and _avro_kind(f.get("type")) not in allowed:
            shown = json.dumps(f.get("type"))[:100]
            raise InvalidAvroFileError(
                f"Invalid manifest metadata in {location}: field {f.get('name')!r} "
                f"(id {fid}) has Avro type {shown}, expected {' or '.join(allowed)}"
            )


def _map_value_kind(avro: Any, named: dict[str, Any]) -> str | None:
    """The primitive type of the values of an Iceberg int-keyed map written as Avro: an array
    of ``{key, value}`` records (or an Avro map)."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        avro = branches[0] if len(branches) == 1 else None
    if isinstance(avro, dict) and avro.get("type") == "map":
        return _avro_kind(avro.get("values"))
    items = avro.get("items") if isinstance(avro, dict) and avro.get("type") == "array" else None
    record = _record_type(items, named)
    if record is None:
        return None
    value = next((f for f in record.get("fields", []) if f.get("name") == "value"), None)
    return None if value is None else _avro_kind(value.get("type"))


def check_bytes_maps(
    location: str, fields: dict[int, dict[str, Any]], named: dict[str, Any]
) -> None:
    """Refuse bounds maps whose values are not Avro bytes (checked once per file, so that
    each value is taken as decoded)."""
    for fid in _BYTES_MAPS:
        f = fields.get(fid)
        if f is not None and _map_value_kind(f.get("type"), named) != "bytes":
            shown = json.dumps(f.get("type"))[:100]
            raise InvalidAvroFileError(
                f"Invalid manifest metadata in {location}: field {f.get('name')!r} "
                f"(id {fid}) has Avro type {shown}, expected a map of bytes"
            )


def as_bytes(value: Any) -> bytes:
    """A binary value as decoded; anything else is a TypeError (``bytes(n)`` of a number
    would allocate n bytes)."""
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(f"expected binary, got {type(value).__name__}")
    return bytes(value)


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
    except (IceparkError, ValueError, TypeError, RecursionError):
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
        # the Avro field name of each partition field id (spec ids, else the file's own)
        self.names_by_id: dict[int, str] = {}
        if spec is not None and (spec.fields or not avro_fields):
            for pf, found in zip(spec.fields, self._fields):
                if found is not None:
                    self.names_by_id[pf.field_id] = found[0]
        else:
            for f in avro_fields:
                if FIELD_ID_PROP in f:
                    self.names_by_id[int(f[FIELD_ID_PROP])] = f["name"]

    @property
    def fields(self) -> list[tuple[str, IcebergType] | None]:
        """The Avro name and Iceberg type of each partition field in spec order (None: the
        file lacks it, read as null)."""
        return self._fields

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
    # (the values are bytes: check_bytes_maps refused any other Avro type for the file)
    return _int_map(value)


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
    except MALFORMED as exc:
        raise InvalidAvroFileError(f"Invalid manifest {contents.location}: {exc}") from exc


def _read_entries(
    contents: AvroContents, manifest: ManifestFile | None, spec: PartitionSpec | None
) -> list[ManifestEntry]:
    decoder = EntryDecoder(
        contents.location, contents.writer_schema, contents.metadata, manifest, spec
    )
    inherit = decoder.inheritance()
    return [inherit.apply(decoder.entry(rec)) for rec in contents.records]


class EntryDecoder:
    """Turns the raw records of one manifest (as fastavro decodes them) into entries.

    Built from the file's writer schema and key/value metadata; finds the fields by id, the
    format version, the partition layout and the spec id. :meth:`entry` does not apply
    inheritance: :meth:`inheritance` gives what does, to apply to the entries in file order.
    """

    def __init__(
        self,
        location: str,
        writer_schema: Any,
        metadata: dict[str, str],
        manifest: ManifestFile | None,
        spec: PartitionSpec | None,
        named: dict[str, Any] | None = None,
    ) -> None:
        self.location = location
        self.manifest = manifest
        named = named_avro_types(writer_schema) if named is None else named
        top = _record_type(writer_schema, named)
        if top is None:
            raise InvalidAvroFileError(f"Not a manifest (no record schema): {location}")
        top_fields = _fields_by_id(top, _DEFAULT_IDS)
        file_record = _record_type(top_fields[2]["type"], named) if 2 in top_fields else None
        if 0 not in top_fields or file_record is None:
            raise InvalidAvroFileError(
                f"Not a manifest: {location} has no status or data_file field"
            )
        file_fields = _fields_by_id(file_record, _DEFAULT_IDS)
        missing = [fid for fid in (100, 101, 103, 104) if fid not in file_fields]
        if missing:
            raise InvalidAvroFileError(
                f"Not a manifest: {location} data_file lacks field id(s) {missing}"
            )
        check_field_kinds(location, top_fields, _TOP_KINDS)
        check_field_kinds(location, file_fields, _FILE_KINDS)
        check_bytes_maps(location, file_fields, named)
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
        self.partitions = _PartitionReader(partition_record, spec, named)
        if manifest is not None:
            self.spec_id = manifest.partition_spec_id
        elif spec is not None:
            self.spec_id = spec.spec_id
        else:
            self.spec_id = int(metadata.get("partition-spec-id", "0"))
        self.top_fields = top_fields
        self.file_fields = file_fields
        self.named = named
        self.top_names = {fid: f["name"] for fid, f in top_fields.items()}
        self.file_names = {fid: f["name"] for fid, f in file_fields.items()}
        self.v1 = format_version == 1 or 3 not in top_fields

    def inheritance(self) -> _Inheritance:
        """A fresh inheritance state, to apply to the entries in file order."""
        return _Inheritance(self.manifest, self.v1)

    def entry(self, rec: dict[str, Any]) -> ManifestEntry:
        """The entry of one raw record, before inheritance."""
        try:
            return _entry(rec, self.top_names, self.file_names, self.partitions, self.spec_id)
        except (IceparkError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InvalidAvroFileError(f"Invalid manifest entry in {self.location}: {exc}") from exc


_PLAIN_FIELDS = {
    "file_path": 100,
    "record_count": 103,
    "file_size_in_bytes": 104,
    "sort_order_id": 140,
    "first_row_id": 142,
    "referenced_data_file": 143,
    "content_offset": 144,
    "content_size_in_bytes": 145,
}
"""DataFile fields taken as decoded, by field id."""


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
    get_field = df.get

    def fget(fid: int) -> Any:
        name = names.get(fid)
        return None if name is None else get_field(name)

    values = {attr: fget(fid) for attr, fid in _PLAIN_FIELDS.items()}
    content = fget(134)
    values["content"] = FileContent(0 if content is None else content)
    values["file_format"] = FileFormat.parse(fget(101))
    values["partition"] = partitions.read(fget(PARTITION_FIELD_ID))
    values["column_sizes"] = _int_map(fget(108))
    values["value_counts"] = _int_map(fget(109))
    values["null_value_counts"] = _int_map(fget(110))
    values["nan_value_counts"] = _int_map(fget(137))
    values["lower_bounds"] = _bytes_map(fget(125))
    values["upper_bounds"] = _bytes_map(fget(128))
    key_metadata = fget(131)
    values["key_metadata"] = key_metadata  # bytes or None (its Avro type is checked)
    split_offsets = fget(132)
    values["split_offsets"] = None if split_offsets is None else tuple(split_offsets)
    equality_ids = fget(135)
    values["equality_ids"] = None if equality_ids is None else tuple(equality_ids)
    values["spec_id"] = spec_id
    # every field is already in the form DataFile.__post_init__ would give it
    data_file = DataFile.from_normalized(values)
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
