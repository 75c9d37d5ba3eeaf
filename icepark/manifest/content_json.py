"""Content files (data and delete files) as the REST spec's JSON (``ContentFile``,
``DataFile``, ``PositionDeleteFile``, ``EqualityDeleteFile``; Java's ``ContentFileParser``).

The form written (the spec's, which Java writes from 1.11)::

    {"spec-id": 0, "content": "data" | "position-deletes" | "equality-deletes",
     "file-path": "...", "file-format": "parquet", "partition": [19723, "a"],
     "file-size-in-bytes": 1024, "record-count": 10,
     "column-sizes": {"keys": [1, 2], "values": [100, 200]},      (and value-counts,
     "lower-bounds": {"keys": [1], "values": ["0A000000"]},        null-value-counts,
     "key-metadata": "00FF", "split-offsets": [4], "equality-ids": [1],  nan-value-counts,
     "sort-order-id": 0, "first-row-id": 0,                        upper-bounds)
     "referenced-data-file": "...", "content-offset": 4, "content-size-in-bytes": 40}

``partition`` holds the single-value JSON of each partition field of the file's spec, in the
spec's order (null for a null value). Bounds and key metadata are the binary single-value
form: upper-case hex of the bytes the manifest holds. Absent optional fields are left out.

``legacy=True`` writes what Java 1.10 and earlier write and read (its ``ContentFileParser``
takes nothing else): ``content`` as the enum name (``DATA``, ``POSITION_DELETES``), the format
in upper case and ``partition`` as an object keyed by partition field id (nulls left out).
Reading accepts both forms, as Java 1.11 does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icepark.errors import ValidationError
from icepark.spec import values
from icepark.spec.manifests import DataFile, FileContent, FileFormat
from icepark.spec.types import StructType

__all__ = ["content_file_to_json", "content_file_from_json"]

_CONTENT = {
    FileContent.DATA: "data",
    FileContent.POSITION_DELETES: "position-deletes",
    FileContent.EQUALITY_DELETES: "equality-deletes",
}
_CONTENT_BY_NAME = {
    **{name: content for content, name in _CONTENT.items()},
    **{content.name: content for content in FileContent},
}
_COUNTS = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts")
_BOUNDS = ("lower_bounds", "upper_bounds")


def _wire(name: str) -> str:
    return name.replace("_", "-")


def _hex(raw: bytes) -> str:
    return raw.hex().upper()


def content_file_to_json(
    f: DataFile, partition_type: StructType, legacy: bool = False
) -> dict[str, Any]:
    """``f`` as content file JSON; ``partition_type`` is the partition type of the file's spec
    (``spec.partition_type(schema)``)."""
    fields = partition_type.fields
    if len(f.partition) != len(fields):
        raise ValidationError(
            f"File {f.file_path} has {len(f.partition)} partition values, its spec "
            f"{f.spec_id} has {len(fields)} fields"
        )
    out: dict[str, Any] = {
        "spec-id": f.spec_id,
        "content": f.content.name if legacy else _CONTENT[f.content],
        "file-path": f.file_path,
        "file-format": f.file_format.value if legacy else f.file_format.value.lower(),
    }
    if legacy:
        out["partition"] = {
            str(field.field_id): values.to_json(v, field.field_type)
            for field, v in zip(fields, f.partition, strict=True)
            if v is not None
        }
    else:
        out["partition"] = [
            None if v is None else values.to_json(v, field.field_type)
            for field, v in zip(fields, f.partition, strict=True)
        ]
    out["file-size-in-bytes"] = f.file_size_in_bytes
    out["record-count"] = f.record_count
    for name in _COUNTS:
        counts: dict[int, int] | None = getattr(f, name)
        if counts is not None:
            out[_wire(name)] = {"keys": list(counts), "values": list(counts.values())}
    for name in _BOUNDS:
        bounds: dict[int, bytes] | None = getattr(f, name)
        if bounds is not None:
            out[_wire(name)] = {"keys": list(bounds), "values": [_hex(b) for b in bounds.values()]}
    if f.key_metadata is not None:
        out["key-metadata"] = _hex(f.key_metadata)
    for name in ("split_offsets", "equality_ids"):
        items = getattr(f, name)
        if items is not None:
            out[_wire(name)] = list(items)
    for name in (
        "sort_order_id",
        "first_row_id",
        "referenced_data_file",
        "content_offset",
        "content_size_in_bytes",
    ):
        value = getattr(f, name)
        if value is not None:
            out[_wire(name)] = value
    return out


def content_file_from_json(obj: Any, partition_types: Mapping[int, StructType]) -> DataFile:
    """The :class:`DataFile` of content file JSON ``obj`` (either form); ``partition_types``
    maps each spec id to its partition type."""
    if not isinstance(obj, Mapping):
        raise ValidationError(f"Cannot read a content file from {obj!r}"[:300])
    spec_id = _int(obj, "spec-id")
    partition_type = partition_types.get(spec_id)
    if partition_type is None:
        raise ValidationError(f"Content file {obj.get('file-path')!r}: unknown spec-id {spec_id}")
    content = _CONTENT_BY_NAME.get(str(obj.get("content")))
    if content is None:
        raise ValidationError(f"Unknown content file content: {obj.get('content')!r}")
    path = obj.get("file-path")
    if not isinstance(path, str) or not path:
        raise ValidationError(f"Content file needs a file-path: {path!r}")
    counts = {name: _map(obj, _wire(name), False) for name in _COUNTS}
    bounds = {name: _map(obj, _wire(name), True) for name in _BOUNDS}
    key_metadata = obj.get("key-metadata")
    return DataFile(
        content=content,
        file_path=path,
        file_format=FileFormat.parse(str(obj.get("file-format"))),
        partition=_partition(obj.get("partition"), partition_type, path),
        record_count=_int(obj, "record-count"),
        file_size_in_bytes=_int(obj, "file-size-in-bytes"),
        key_metadata=None if key_metadata is None else _bytes(key_metadata),
        split_offsets=_ints(obj, "split-offsets"),
        equality_ids=_ints(obj, "equality-ids"),
        sort_order_id=_int(obj, "sort-order-id", required=False),
        first_row_id=_int(obj, "first-row-id", required=False),
        referenced_data_file=_optional_str(obj, "referenced-data-file"),
        content_offset=_int(obj, "content-offset", required=False),
        content_size_in_bytes=_int(obj, "content-size-in-bytes", required=False),
        spec_id=spec_id,
        **counts,
        **bounds,
    )


def _partition(obj: Any, partition_type: StructType, path: str) -> tuple[Any, ...]:
    fields = partition_type.fields
    if obj is None:
        obj = []
    if isinstance(obj, Mapping):  # Java 1.10's form: by field id, nulls left out
        return tuple(
            None
            if (v := obj.get(str(field.field_id))) is None
            else values.from_json(v, field.field_type)
            for field in fields
        )
    if not isinstance(obj, list) or len(obj) != len(fields):
        raise ValidationError(
            f"Content file {path}: partition {obj!r} does not match the spec's {len(fields)} "
            "fields"[:300]
        )
    return tuple(
        None if v is None else values.from_json(v, field.field_type)
        for field, v in zip(fields, obj, strict=True)
    )


def _int(obj: Mapping[str, Any], name: str, required: bool = True) -> Any:
    value = obj.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"Content file field {name!r} must be an integer: {value!r}")
    return value


def _ints(obj: Mapping[str, Any], name: str) -> tuple[int, ...] | None:
    items = obj.get(name)
    if items is None:
        return None
    if not isinstance(items, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in items
    ):
        raise ValidationError(f"Content file field {name!r} must list integers: {items!r}")
    return tuple(items)


def _optional_str(obj: Mapping[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is not None and not isinstance(value, str):
        raise ValidationError(f"Content file field {name!r} must be a string: {value!r}")
    return value


def _map(obj: Mapping[str, Any], name: str, binary: bool) -> dict[int, Any] | None:
    """A ``{"keys": [...], "values": [...]}`` map of field ids to counts (or, ``binary``, to
    hex bytes); checked as whole lists (a table's files carry many of these)."""
    node = obj.get(name)
    if node is None:
        return None
    keys = node.get("keys") if isinstance(node, Mapping) else None
    items = node.get("values") if isinstance(node, Mapping) else None
    if not isinstance(keys, list) or not isinstance(items, list) or len(keys) != len(items):
        raise ValidationError(f"Content file field {name!r} must be keys and values: {node!r}")
    if not all(type(k) is int for k in keys):
        raise ValidationError(f"Content file field {name!r} has keys that are not ids: {keys!r}")
    if not binary:
        if not all(type(v) is int for v in items):
            raise ValidationError(f"Content file field {name!r} must map ids to counts: {items!r}")
        return dict(zip(keys, items, strict=True))
    try:
        return dict(zip(keys, (bytes.fromhex(v) for v in items), strict=True))
    except (TypeError, ValueError):
        raise ValidationError(
            f"Content file field {name!r}: values must be hex: {items!r}"[:300]
        ) from None


def _bytes(value: Any) -> bytes:
    try:
        return bytes.fromhex(value)
    except (TypeError, ValueError):
        raise ValidationError(f"Not a hexadecimal binary value: {value!r}"[:300]) from None
