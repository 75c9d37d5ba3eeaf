"""Manifest lists: the Avro file of a snapshot that lists its manifests with their summaries.

The Avro schemas match Java's ``V1Metadata`` / ``V2Metadata`` / ``V3Metadata`` manifest list
schemas (record ``manifest_file``, partition summaries as records ``r508``), and the file
metadata matches Java's ``ManifestListWriter``: ``snapshot-id``, ``parent-snapshot-id``
(``"null"`` without a parent, as Java writes it), ``sequence-number`` (v2+), ``first-row-id``
(v3) and ``format-version``.

Reading goes by field id, not name: Java 1.4 wrote ``added_data_files_count`` where later
versions write ``added_files_count`` (both field 504). A v1 list (no content or sequence
numbers) reads as data manifests with sequence numbers 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from icepark.avro.file import AvroContents, AvroFileWriter, read_avro_file
from icepark.avro.schema import FIELD_ID_PROP, named_avro_types
from icepark.errors import InvalidAvroFileError, ValidationError
from icepark.manifest.reader import _INTEGER, MALFORMED, as_bytes, check_field_kinds
from icepark.manifest.schemas import (
    MANIFEST_LIST_FIELDS,
    iceberg_schema_json,
    manifest_list_field_names,
    manifest_list_schema,
    parsed_manifest_list_schema,
)
from icepark.spec.manifests import (
    UNASSIGNED_SEQUENCE_NUMBER,
    ManifestContent,
    ManifestFile,
    PartitionFieldSummary,
)

__all__ = [
    "WrittenManifestList",
    "write_manifest_list",
    "read_manifest_list",
]


_REQUIRED_COUNTS = (
    "added_files_count",
    "existing_files_count",
    "deleted_files_count",
    "added_rows_count",
    "existing_rows_count",
    "deleted_rows_count",
)


def _unassigned(seq: int | None) -> bool:
    return seq is None or seq == UNASSIGNED_SEQUENCE_NUMBER


@dataclass(frozen=True)
class WrittenManifestList:
    """What :func:`write_manifest_list` wrote.

    ``manifests`` are the manifests as written, with sequence numbers, snapshot ids and (v3)
    first row ids assigned. ``next_row_id`` (v3) is the snapshot's ``first-row-id`` plus the
    rows given ids here; ``added_rows`` is that difference, the snapshot's ``added-rows``.
    """

    location: str
    length: int
    manifests: tuple[ManifestFile, ...]
    first_row_id: int | None = None
    next_row_id: int | None = None

    @property
    def added_rows(self) -> int | None:
        if self.first_row_id is None or self.next_row_id is None:
            return None
        return self.next_row_id - self.first_row_id


def _prepare(
    m: ManifestFile, format_version: int, snapshot_id: int, sequence_number: int
) -> ManifestFile:
    """Fill in what the committing snapshot assigns; check what the version requires."""
    changes: dict[str, Any] = {}
    if m.added_snapshot_id is None:
        changes["added_snapshot_id"] = snapshot_id
    if format_version == 1:
        if m.content != ManifestContent.DATA:
            raise ValidationError(f"Cannot store delete manifest in a v1 table: {m.manifest_path}")
        return m.replace(**changes) if changes else m
    added_by = changes.get("added_snapshot_id", m.added_snapshot_id)
    if _unassigned(m.sequence_number):
        if added_by != snapshot_id:
            raise ValidationError(
                f"Found unassigned sequence number for a manifest from snapshot {added_by}: "
                f"{m.manifest_path}"
            )
        changes["sequence_number"] = sequence_number
    if _unassigned(m.min_sequence_number):
        if added_by != snapshot_id:
            raise ValidationError(
                f"Found unassigned min sequence number for a manifest from snapshot {added_by}: "
                f"{m.manifest_path}"
            )
        changes["min_sequence_number"] = sequence_number
    for name in _REQUIRED_COUNTS:
        if changes.get(name, getattr(m, name)) is None:
            raise ValidationError(f"Manifest {m.manifest_path} has no {name}, required in v2+")
    return m.replace(**changes) if changes else m


def _summary_record(s: PartitionFieldSummary) -> dict[str, Any]:
    return {
        "contains_null": bool(s.contains_null),
        "contains_nan": s.contains_nan,
        "lower_bound": s.lower_bound,
        "upper_bound": s.upper_bound,
    }


def _record(m: ManifestFile, names: tuple[str, ...]) -> dict[str, Any]:
    values: dict[str, Any] = {
        "manifest_path": m.manifest_path,
        "manifest_length": m.manifest_length,
        "partition_spec_id": m.partition_spec_id,
        "content": int(m.content),
        "sequence_number": m.sequence_number,
        "min_sequence_number": m.min_sequence_number,
        "added_snapshot_id": m.added_snapshot_id,
        "added_files_count": m.added_files_count,
        "existing_files_count": m.existing_files_count,
        "deleted_files_count": m.deleted_files_count,
        "added_rows_count": m.added_rows_count,
        "existing_rows_count": m.existing_rows_count,
        "deleted_rows_count": m.deleted_rows_count,
        "partitions": None if m.partitions is None else [_summary_record(s) for s in m.partitions],
        "key_metadata": m.key_metadata,
        "first_row_id": m.first_row_id,
    }
    return {n: values[n] for n in names}


def write_manifest_list(
    output_file: Any,
    manifests: Iterable[ManifestFile],
    *,
    format_version: int,
    snapshot_id: int,
    parent_snapshot_id: int | None,
    sequence_number: int,
    first_row_id: int | None = None,
    codec: str = "deflate",
    overwrite: bool = False,
) -> WrittenManifestList:
    """Write the manifest list of snapshot ``snapshot_id`` to ``output_file``.

    In v2+ manifests with unassigned sequence numbers (``None`` or -1) get
    ``sequence_number``; they must have been added by this snapshot. In v3 data manifests
    without a ``first_row_id`` get consecutive ones from ``first_row_id`` (the snapshot's
    ``first-row-id``, required in v3), each advancing by the manifest's added and existing
    row counts.
    """
    names = manifest_list_field_names(format_version)
    if format_version >= 3 and first_row_id is None:
        raise ValidationError("A v3 manifest list needs the snapshot's first_row_id")
    metadata = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
    }
    if format_version >= 2:
        metadata["sequence-number"] = str(sequence_number)
    if format_version >= 3:
        metadata["first-row-id"] = str(first_row_id)
    metadata["format-version"] = str(format_version)
    iceberg_schema = iceberg_schema_json(manifest_list_schema(format_version))
    if iceberg_schema is not None:
        metadata["iceberg.schema"] = iceberg_schema

    next_row_id = first_row_id
    written: list[ManifestFile] = []
    with AvroFileWriter(
        output_file, parsed_manifest_list_schema(format_version), metadata, codec, overwrite
    ) as writer:
        for m in manifests:
            m = _prepare(m, format_version, snapshot_id, sequence_number)
            if format_version >= 3:
                if m.content == ManifestContent.DELETES:
                    if m.first_row_id is not None:
                        m = m.replace(first_row_id=None)
                elif m.first_row_id is None:
                    assert next_row_id is not None
                    m = m.replace(first_row_id=next_row_id)
                    next_row_id += (m.added_rows_count or 0) + (m.existing_rows_count or 0)
            writer.write(_record(m, names))
            written.append(m)
    assert writer.length is not None
    return WrittenManifestList(
        location=writer.location,
        length=writer.length,
        manifests=tuple(written),
        first_row_id=first_row_id if format_version >= 3 else None,
        next_row_id=next_row_id if format_version >= 3 else None,
    )


# -- reading ---------------------------------------------------------------------------------

_DEFAULT_NAMES: dict[str, int] = {
    **{name: f.field_id for name, f in MANIFEST_LIST_FIELDS.items()},
    "added_data_files_count": 504,
    "existing_data_files_count": 505,
    "deleted_data_files_count": 506,
    "contains_null": 509,
    "contains_nan": 518,
    "lower_bound": 510,
    "upper_bound": 511,
}


def _field_ids(record_schema: dict[str, Any]) -> dict[int, str]:
    """Avro field name by field id (``field-id``, or the standard name when absent)."""
    out: dict[int, str] = {}
    for f in record_schema.get("fields", []):
        fid = f.get(FIELD_ID_PROP)
        if fid is None:
            fid = _DEFAULT_NAMES.get(f["name"])
        if fid is not None:
            out.setdefault(int(fid), f["name"])
    return out


def _element_record(field_type: Any, named: dict[str, Any]) -> dict[str, Any] | None:
    """The record schema inside an optional list field, if any."""
    t = field_type
    if isinstance(t, list):
        t = next((b for b in t if b != "null"), None)
    if isinstance(t, str):
        t = named.get(t)
    if not isinstance(t, dict) or t.get("type") != "array":
        return None
    items = t.get("items")
    if isinstance(items, list):
        items = next((b for b in items if b != "null"), None)
    if isinstance(items, str):
        items = named.get(items)
    return items if isinstance(items, dict) and items.get("type") == "record" else None


_LIST_KINDS = {
    500: ("string",),
    **{fid: _INTEGER for fid in (501, 502, 503, 504, 505, 506, 512, 513, 514, 515, 516, 517, 520)},
    519: ("bytes",),
}


def _opt_bytes(value: Any) -> bytes | None:
    return None if value is None else as_bytes(value)


def read_manifest_list(input_file: Any) -> list[ManifestFile]:
    """The manifests listed in a manifest list file (any format version)."""
    contents = read_avro_file(input_file)
    try:
        return _read_manifests(contents)
    except InvalidAvroFileError:
        raise
    except MALFORMED as exc:
        raise InvalidAvroFileError(f"Invalid manifest list {contents.location}: {exc}") from exc


def _read_manifests(contents: AvroContents) -> list[ManifestFile]:
    location = contents.location
    schema = contents.writer_schema
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise InvalidAvroFileError(f"Not a manifest list (no record schema): {location}")
    names = _field_ids(schema)
    missing = [fid for fid in (500, 501, 502, 503) if fid not in names]
    if missing:
        raise InvalidAvroFileError(
            f"Not a manifest list: {location} has no field with id(s) {missing}"
        )
    by_name = {f.get("name"): f for f in schema["fields"]}
    check_field_kinds(location, {fid: by_name[name] for fid, name in names.items()}, _LIST_KINDS)
    named = named_avro_types(schema)
    summary_names: dict[int, str] = {}
    if 507 in names:
        partitions_field = next(f for f in schema["fields"] if f["name"] == names[507])
        element = _element_record(partitions_field["type"], named)
        if element is not None:
            summary_names = _field_ids(element)

    def get(rec: dict[str, Any], fid: int) -> Any:
        name = names.get(fid)
        return None if name is None else rec.get(name)

    def summary(rec: dict[str, Any]) -> PartitionFieldSummary:
        def sget(fid: int) -> Any:
            name = summary_names.get(fid)
            return None if name is None else rec.get(name)

        return PartitionFieldSummary(
            contains_null=bool(sget(509)),
            contains_nan=sget(518),
            lower_bound=_opt_bytes(sget(510)),
            upper_bound=_opt_bytes(sget(511)),
        )

    out = []
    for rec in contents.records:
        nulls = [names[fid] for fid in (500, 501, 502, 503) if get(rec, fid) is None]
        if nulls:  # required fields (a writer schema may still make them optional)
            raise InvalidAvroFileError(
                f"Invalid manifest list entry in {location}: {nulls[0]} is null"
            )
        try:
            partitions = get(rec, 507)
            content = get(rec, 517)
            seq = get(rec, 515)
            min_seq = get(rec, 516)
            out.append(
                ManifestFile(
                    manifest_path=get(rec, 500),
                    manifest_length=get(rec, 501),
                    partition_spec_id=get(rec, 502),
                    content=ManifestContent(0 if content is None else content),
                    sequence_number=0 if seq is None else seq,
                    min_sequence_number=0 if min_seq is None else min_seq,
                    added_snapshot_id=get(rec, 503),
                    added_files_count=get(rec, 504),
                    existing_files_count=get(rec, 505),
                    deleted_files_count=get(rec, 506),
                    added_rows_count=get(rec, 512),
                    existing_rows_count=get(rec, 513),
                    deleted_rows_count=get(rec, 514),
                    partitions=None
                    if partitions is None
                    else tuple(summary(p) for p in partitions),
                    key_metadata=_opt_bytes(get(rec, 519)),
                    first_row_id=get(rec, 520),
                )
            )
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidAvroFileError(f"Invalid manifest list entry in {location}: {exc}") from exc
    return out
