"""The Avro schemas of manifests and manifest lists, per format version, as Java writes them.

They are built as Iceberg structs (field ids, names and docs from Java's ``DataFile``,
``ManifestEntry`` and ``ManifestFile``) and converted with :mod:`icepark.avro.schema`, which
names the records as Java does: ``manifest_entry`` / ``manifest_file`` at the top, ``r2`` for
``data_file``, ``r102`` for the partition, ``r508`` for partition summaries and
``k117_v118``-style records for the metric maps.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, cast

import fastavro

from icepark.avro.schema import schema_to_avro
from icepark.errors import IceparkError, UnsupportedFormatVersionError
from icepark.spec.schema import Schema, schema_to_json
from icepark.spec.types import (
    BinaryType,
    BooleanType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)

__all__ = [
    "DATA_FILE_FIELDS",
    "DEFAULT_BLOCK_SIZE",
    "MANIFEST_LIST_FIELDS",
    "PARTITION_FIELD_ID",
    "check_format_version",
    "iceberg_schema_json",
    "data_file_field_names",
    "data_file_type",
    "manifest_entry_avro_schema",
    "manifest_entry_schema",
    "manifest_list_avro_schema",
    "manifest_list_field_names",
    "manifest_list_schema",
]


def check_format_version(format_version: int, what: str) -> None:
    """Raise unless ``format_version`` is one manifests can be written for (1 to 3)."""
    if format_version not in (1, 2, 3):
        raise UnsupportedFormatVersionError(
            f"Cannot write {what} for format version {format_version}: supported are 1, 2, 3"
        )


@lru_cache(maxsize=256)
def iceberg_schema_json(struct: StructType) -> str | None:
    """The ``iceberg.schema`` value Java's Avro writer puts in every file: the Iceberg schema
    of the records as compact JSON (None if the struct is not a valid schema)."""
    try:
        return json.dumps(schema_to_json(Schema(*struct.fields)), separators=(",", ":"))
    except IceparkError:
        return None


# -- manifests -------------------------------------------------------------------------------

DEFAULT_BLOCK_SIZE = 64 * 1024 * 1024
"""What v1 manifests store in the deprecated ``block_size_in_bytes`` field, as Java does."""


def _map(key_id: int, value_id: int, value_type: IcebergType) -> MapType:
    return MapType(key_id, IntegerType(), value_id, value_type, True)


DATA_FILE_FIELDS: dict[str, NestedField] = {
    f.name: f
    for f in (
        NestedField(
            134,
            "content",
            IntegerType(),
            False,
            "Contents of the file: 0=data, 1=position deletes, 2=equality deletes",
        ),
        NestedField(100, "file_path", StringType(), True, "Location URI with FS scheme"),
        NestedField(
            101, "file_format", StringType(), True, "File format name: avro, orc, or parquet"
        ),
        NestedField(103, "record_count", LongType(), True, "Number of records in the file"),
        NestedField(104, "file_size_in_bytes", LongType(), True, "Total file size in bytes"),
        NestedField(105, "block_size_in_bytes", LongType(), True),
        NestedField(
            108,
            "column_sizes",
            _map(117, 118, LongType()),
            False,
            "Map of column id to total size on disk",
        ),
        NestedField(
            109,
            "value_counts",
            _map(119, 120, LongType()),
            False,
            "Map of column id to total count, including null and NaN",
        ),
        NestedField(
            110,
            "null_value_counts",
            _map(121, 122, LongType()),
            False,
            "Map of column id to null value count",
        ),
        NestedField(
            137,
            "nan_value_counts",
            _map(138, 139, LongType()),
            False,
            "Map of column id to number of NaN values in the column",
        ),
        NestedField(
            125,
            "lower_bounds",
            _map(126, 127, BinaryType()),
            False,
            "Map of column id to lower bound",
        ),
        NestedField(
            128,
            "upper_bounds",
            _map(129, 130, BinaryType()),
            False,
            "Map of column id to upper bound",
        ),
        NestedField(131, "key_metadata", BinaryType(), False, "Encryption key metadata blob"),
        NestedField(
            132, "split_offsets", ListType(133, LongType(), True), False, "Splittable offsets"
        ),
        NestedField(
            135,
            "equality_ids",
            ListType(136, IntegerType(), True),
            False,
            "Equality comparison field IDs",
        ),
        NestedField(140, "sort_order_id", IntegerType(), False, "Sort order ID"),
        NestedField(
            142,
            "first_row_id",
            LongType(),
            False,
            "The first row ID assigned to the first row in the data file",
        ),
        NestedField(
            143,
            "referenced_data_file",
            StringType(),
            False,
            "Fully qualified location (URI with FS scheme) of a data file that all deletes "
            "reference",
        ),
        NestedField(
            144,
            "content_offset",
            LongType(),
            False,
            "The offset in the file where the content starts",
        ),
        NestedField(
            145,
            "content_size_in_bytes",
            LongType(),
            False,
            "The length of referenced content stored in the file",
        ),
    )
}
"""The ``data_file`` fields by name, as Java's ``DataFile`` declares them."""

PARTITION_FIELD_ID = 102
_PARTITION_DOC = "Partition data tuple, schema based on the partition spec"
_V1_FILE = ("file_path", "file_format", "partition", "record_count", "file_size_in_bytes",
            "block_size_in_bytes", "column_sizes", "value_counts", "null_value_counts",
            "nan_value_counts", "lower_bounds", "upper_bounds", "key_metadata", "split_offsets",
            "sort_order_id")  # fmt: skip
_V2_FILE = ("content", "file_path", "file_format", "partition", "record_count",
            "file_size_in_bytes", "column_sizes", "value_counts", "null_value_counts",
            "nan_value_counts", "lower_bounds", "upper_bounds", "key_metadata", "split_offsets",
            "equality_ids", "sort_order_id", "referenced_data_file")  # fmt: skip
_V3_FILE = (*_V2_FILE[:-1], "first_row_id", "referenced_data_file", "content_offset",
            "content_size_in_bytes")  # fmt: skip
_FILE_FIELDS = {1: _V1_FILE, 2: _V2_FILE, 3: _V3_FILE}


def data_file_type(format_version: int, partition_type: StructType) -> StructType:
    """The ``data_file`` struct written in ``format_version`` for a partition struct."""
    check_format_version(format_version, "manifest")
    fields = []
    for name in _FILE_FIELDS[format_version]:
        if name == "partition":
            doc = None if format_version == 1 else _PARTITION_DOC
            fields.append(NestedField(PARTITION_FIELD_ID, "partition", partition_type, True, doc))
        elif name == "content":
            f = DATA_FILE_FIELDS[name]
            fields.append(NestedField(f.field_id, f.name, f.field_type, True, f.doc))
        else:
            fields.append(DATA_FILE_FIELDS[name])
    return StructType(*fields)


def manifest_entry_schema(format_version: int, partition_type: StructType) -> StructType:
    """The ``manifest_entry`` struct written in ``format_version``."""
    file_field = NestedField(2, "data_file", data_file_type(format_version, partition_type), True)
    status = NestedField(0, "status", IntegerType(), True)
    snapshot_id = NestedField(1, "snapshot_id", LongType(), False)
    if format_version == 1:
        return StructType(status, snapshot_id, file_field)
    return StructType(
        status,
        snapshot_id,
        NestedField(3, "sequence_number", LongType(), False),
        NestedField(4, "file_sequence_number", LongType(), False),
        file_field,
    )


def manifest_entry_avro_schema(format_version: int, partition_type: StructType) -> dict[str, Any]:
    """The Avro schema of a manifest written in ``format_version`` (as Java writes it)."""
    return schema_to_avro(manifest_entry_schema(format_version, partition_type), "manifest_entry")


# -- manifest lists --------------------------------------------------------------------------

_SUMMARY = StructType(
    NestedField(
        509, "contains_null", BooleanType(), True, "True if any file has a null partition value"
    ),
    NestedField(
        518, "contains_nan", BooleanType(), False, "True if any file has a nan partition value"
    ),
    NestedField(510, "lower_bound", BinaryType(), False, "Partition lower bound for all files"),
    NestedField(511, "upper_bound", BinaryType(), False, "Partition upper bound for all files"),
)

MANIFEST_LIST_FIELDS: dict[str, NestedField] = {
    f.name: f
    for f in (
        NestedField(500, "manifest_path", StringType(), True, "Location URI with FS scheme"),
        NestedField(501, "manifest_length", LongType(), True, "Total file size in bytes"),
        NestedField(502, "partition_spec_id", IntegerType(), True, "Spec ID used to write"),
        NestedField(
            517, "content", IntegerType(), False, "Contents of the manifest: 0=data, 1=deletes"
        ),
        NestedField(
            515, "sequence_number", LongType(), False, "Sequence number when the manifest was added"
        ),
        NestedField(
            516, "min_sequence_number", LongType(), False, "Lowest sequence number in the manifest"
        ),
        NestedField(
            503, "added_snapshot_id", LongType(), True, "Snapshot ID that added the manifest"
        ),
        NestedField(504, "added_files_count", IntegerType(), False, "Added entry count"),
        NestedField(505, "existing_files_count", IntegerType(), False, "Existing entry count"),
        NestedField(506, "deleted_files_count", IntegerType(), False, "Deleted entry count"),
        NestedField(512, "added_rows_count", LongType(), False, "Added rows count"),
        NestedField(513, "existing_rows_count", LongType(), False, "Existing rows count"),
        NestedField(514, "deleted_rows_count", LongType(), False, "Deleted rows count"),
        NestedField(
            507, "partitions", ListType(508, _SUMMARY, True), False, "Summary for each partition"
        ),
        NestedField(519, "key_metadata", BinaryType(), False, "Encryption key metadata blob"),
        NestedField(
            520,
            "first_row_id",
            LongType(),
            False,
            "Starting row ID to assign to new rows in ADDED data files",
        ),
    )
}
"""The ``manifest_file`` fields by name, as Java's ``ManifestFile`` declares them."""

_V1 = ("manifest_path", "manifest_length", "partition_spec_id", "added_snapshot_id",
       "added_files_count", "existing_files_count", "deleted_files_count", "partitions",
       "added_rows_count", "existing_rows_count", "deleted_rows_count", "key_metadata")  # fmt: skip
_V2 = ("manifest_path", "manifest_length", "partition_spec_id", "content", "sequence_number",
       "min_sequence_number", "added_snapshot_id", "added_files_count", "existing_files_count",
       "deleted_files_count", "added_rows_count", "existing_rows_count", "deleted_rows_count",
       "partitions", "key_metadata")  # fmt: skip
_V3 = (*_V2, "first_row_id")
_LIST_FIELDS = {1: _V1, 2: _V2, 3: _V3}
_REQUIRED_V2 = {"content", "sequence_number", "min_sequence_number", "added_snapshot_id",
                "added_files_count", "existing_files_count", "deleted_files_count",
                "added_rows_count", "existing_rows_count", "deleted_rows_count"}  # fmt: skip


def _as_required(f: NestedField) -> NestedField:
    return NestedField(f.field_id, f.name, f.field_type, True, f.doc)


def manifest_list_schema(format_version: int) -> StructType:
    """The Iceberg struct of a ``manifest_file`` record as written in ``format_version``."""
    check_format_version(format_version, "manifest list")
    if format_version == 1:
        return StructType(*(MANIFEST_LIST_FIELDS[n] for n in _V1))
    names = _V2 if format_version == 2 else _V3
    return StructType(
        *(
            _as_required(MANIFEST_LIST_FIELDS[n]) if n in _REQUIRED_V2 else MANIFEST_LIST_FIELDS[n]
            for n in names
        )
    )


def manifest_list_avro_schema(format_version: int) -> dict[str, Any]:
    """The Avro schema of a manifest list written in ``format_version`` (as Java writes it)."""
    return schema_to_avro(manifest_list_schema(format_version), "manifest_file")


@lru_cache(maxsize=8)
def parsed_manifest_list_schema(format_version: int) -> dict[str, Any]:
    """:func:`manifest_list_avro_schema` parsed by fastavro, once per version (for writers;
    do not modify it)."""
    return cast(dict[str, Any], fastavro.parse_schema(manifest_list_avro_schema(format_version)))


def data_file_field_names(format_version: int) -> tuple[str, ...]:
    """The ``data_file`` field names written in ``format_version``, in order."""
    check_format_version(format_version, "manifest")
    return _FILE_FIELDS[format_version]


def manifest_list_field_names(format_version: int) -> tuple[str, ...]:
    """The ``manifest_file`` field names written in ``format_version``, in order."""
    check_format_version(format_version, "manifest list")
    return _LIST_FIELDS[format_version]
