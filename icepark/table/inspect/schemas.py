"""The schemas of the metadata tables, with Java's field ids, names, types, nullability and docs.

Static schemas are Java's constants (``SnapshotsTable``, ``HistoryTable``, ``RefsTable``,
``MetadataLogEntriesTable``, ``ManifestsTable``, ``AllManifestsTable``); the others depend on
the table:

* :func:`table_partition_type` is Java's ``Partitioning.partitionType(table)``: the partition
  fields of every spec whose source column is still in the current schema, by field id
  (ascending), named as in the newest spec that has them, all optional. It is the
  ``partition`` of the files, entries, partitions and position_deletes tables; a table
  partitioned by no such field gets no ``partition`` column at all.
* the files family is ``DataFile.getType(partitionType)`` plus ``readable_metrics``
  (:func:`readable_metrics_columns`: a struct per primitive column of the current schema,
  nested ones included under their dotted names, sorted by name, with the column's size, value,
  null and NaN counts and its bounds in the column's type); the entries tables wrap that
  ``data_file`` struct in ``status``, ``snapshot_id`` and the sequence numbers.
* ``partitions`` and ``position_deletes`` follow ``PartitionsTable`` and
  ``PositionDeletesTable`` (the latter gives partition fields fresh ids that do not clash with
  the table's columns, as Java does).
"""

from __future__ import annotations

from dataclasses import dataclass

from icepark.manifest.schemas import DATA_FILE_FIELDS, PARTITION_FIELD_ID
from icepark.spec.metadata import TableMetadata
from icepark.spec.metadata_columns import (
    DELETE_FILE_PATH_FIELD_ID,
    DELETE_FILE_POS_FIELD_ID,
    DELETE_FILE_ROW_FIELD_ID,
    FILE_PATH_FIELD_ID,
    SPEC_ID_FIELD_ID,
)
from icepark.spec.metadata_columns import PARTITION_FIELD_ID as PARTITION_COLUMN_ID
from icepark.spec.schema import Schema, index_by_id, walk_fields
from icepark.spec.types import (
    BooleanType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestamptzType,
)

__all__ = [
    "ALL_MANIFESTS_SCHEMA",
    "HISTORY_SCHEMA",
    "MANIFESTS_SCHEMA",
    "METADATA_LOG_ENTRIES_SCHEMA",
    "READABLE_METRICS",
    "REFS_SCHEMA",
    "SNAPSHOTS_SCHEMA",
    "MetricColumn",
    "data_file_struct",
    "entries_schema",
    "files_schema",
    "partitions_schema",
    "position_deletes_schema",
    "readable_metrics_columns",
    "table_partition_type",
]

READABLE_METRICS = "readable_metrics"

SNAPSHOTS_SCHEMA = Schema(
    NestedField(1, "committed_at", TimestamptzType(), True),
    NestedField(2, "snapshot_id", LongType(), True),
    NestedField(3, "parent_id", LongType(), False),
    NestedField(4, "operation", StringType(), False),
    NestedField(5, "manifest_list", StringType(), False),
    NestedField(6, "summary", MapType(7, StringType(), 8, StringType(), True), False),
)

HISTORY_SCHEMA = Schema(
    NestedField(1, "made_current_at", TimestamptzType(), True),
    NestedField(2, "snapshot_id", LongType(), True),
    NestedField(3, "parent_id", LongType(), False),
    NestedField(4, "is_current_ancestor", BooleanType(), True),
)

REFS_SCHEMA = Schema(
    NestedField(1, "name", StringType(), True),
    NestedField(2, "type", StringType(), True),
    NestedField(3, "snapshot_id", LongType(), True),
    NestedField(4, "max_reference_age_in_ms", LongType(), False),
    NestedField(5, "min_snapshots_to_keep", IntegerType(), False),
    NestedField(6, "max_snapshot_age_in_ms", LongType(), False),
)

METADATA_LOG_ENTRIES_SCHEMA = Schema(
    NestedField(1, "timestamp", TimestamptzType(), True),
    NestedField(2, "file", StringType(), True),
    NestedField(3, "latest_snapshot_id", LongType(), False),
    NestedField(4, "latest_schema_id", IntegerType(), False),
    NestedField(5, "latest_sequence_number", LongType(), False),
)


def _summaries(contains_nan_required: bool) -> ListType:
    return ListType(
        9,
        StructType(
            NestedField(10, "contains_null", BooleanType(), True),
            NestedField(11, "contains_nan", BooleanType(), contains_nan_required),
            NestedField(12, "lower_bound", StringType(), False),
            NestedField(13, "upper_bound", StringType(), False),
        ),
        True,
    )


MANIFESTS_SCHEMA = Schema(
    NestedField(14, "content", IntegerType(), True),
    NestedField(1, "path", StringType(), True),
    NestedField(2, "length", LongType(), True),
    NestedField(3, "partition_spec_id", IntegerType(), True),
    NestedField(4, "added_snapshot_id", LongType(), True),
    NestedField(5, "added_data_files_count", IntegerType(), True),
    NestedField(6, "existing_data_files_count", IntegerType(), True),
    NestedField(7, "deleted_data_files_count", IntegerType(), True),
    NestedField(15, "added_delete_files_count", IntegerType(), True),
    NestedField(16, "existing_delete_files_count", IntegerType(), True),
    NestedField(17, "deleted_delete_files_count", IntegerType(), True),
    NestedField(8, "partition_summaries", _summaries(False), True),
)

ALL_MANIFESTS_SCHEMA = Schema(
    NestedField(14, "content", IntegerType(), True),
    NestedField(1, "path", StringType(), True),
    NestedField(2, "length", LongType(), True),
    NestedField(3, "partition_spec_id", IntegerType(), False),
    NestedField(4, "added_snapshot_id", LongType(), False),
    NestedField(5, "added_data_files_count", IntegerType(), False),
    NestedField(6, "existing_data_files_count", IntegerType(), False),
    NestedField(7, "deleted_data_files_count", IntegerType(), False),
    NestedField(15, "added_delete_files_count", IntegerType(), True),
    NestedField(16, "existing_delete_files_count", IntegerType(), True),
    NestedField(17, "deleted_delete_files_count", IntegerType(), True),
    NestedField(8, "partition_summaries", _summaries(True), False),
    NestedField(18, "reference_snapshot_id", LongType(), True),
)


# -- partition type --------------------------------------------------------------------------


def table_partition_type(metadata: TableMetadata) -> StructType:
    """Every spec's partition fields whose source column is in the current schema, by field
    id, named as the newest spec names them (Java's ``Partitioning.partitionType``)."""
    schema = metadata.schema()
    chosen: dict[int, NestedField] = {}
    void: set[int] = set()
    for spec in sorted(metadata.partition_specs, key=lambda s: s.spec_id, reverse=True):
        for pf in spec.fields:
            source = schema.field_or_none(pf.source_id)
            if source is None:
                continue
            result = pf.transform.result_type(source.field_type)
            existing = chosen.get(pf.field_id)
            if existing is None:
                chosen[pf.field_id] = NestedField(pf.field_id, pf.name, result, False)
                if pf.transform.is_void:
                    void.add(pf.field_id)
            elif pf.field_id in void and not pf.transform.is_void:
                # a field dropped in a v1 table is void: take the type of the real transform
                chosen[pf.field_id] = NestedField(pf.field_id, existing.name, result, False)
                void.discard(pf.field_id)
    return StructType(*(chosen[i] for i in sorted(chosen)))


# -- files and entries -----------------------------------------------------------------------

_SPEC_ID = NestedField(141, "spec_id", IntegerType(), False, "Partition spec ID")
_PARTITION_DOC = "Partition data tuple, schema based on the partition spec"
_FILE_FIELD_ORDER = ("content", "file_path", "file_format", "spec_id", "partition",
                     "record_count", "file_size_in_bytes", "column_sizes", "value_counts",
                     "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds",
                     "key_metadata", "split_offsets", "equality_ids", "sort_order_id",
                     "first_row_id", "referenced_data_file", "content_offset",
                     "content_size_in_bytes")  # fmt: skip


def data_file_struct(partition_type: StructType) -> StructType:
    """Java's ``DataFile.getType(partitionType)``, without ``partition`` when it is empty."""
    fields: list[NestedField] = []
    for name in _FILE_FIELD_ORDER:
        if name == "spec_id":
            fields.append(_SPEC_ID)
        elif name == "partition":
            if partition_type.fields:
                fields.append(
                    NestedField(
                        PARTITION_FIELD_ID, "partition", partition_type, True, _PARTITION_DOC
                    )
                )
        elif name == "content":
            f = DATA_FILE_FIELDS[name]
            fields.append(NestedField(f.field_id, f.name, f.field_type, False, f.doc))
        else:
            fields.append(DATA_FILE_FIELDS[name])
    return StructType(*fields)


@dataclass(frozen=True)
class MetricColumn:
    """A primitive column of the table schema that ``readable_metrics`` reports on."""

    name: str  # the dotted name, e.g. "info.city" or "tags.element"
    field: NestedField


_METRIC_DOCS = (
    ("column_size", "Total size on disk"),
    ("value_count", "Total count, including null and NaN"),
    ("null_value_count", "Null value count"),
    ("nan_value_count", "NaN value count"),
    ("lower_bound", "Lower bound"),
    ("upper_bound", "Upper bound"),
)


def readable_metrics_columns(schema: Schema) -> list[MetricColumn]:
    """The primitive columns of ``schema`` (nested ones too), sorted by dotted name."""
    columns = [
        MetricColumn(name, f)
        for name, f in walk_fields(schema.as_struct())
        if isinstance(f.field_type, PrimitiveType)
    ]
    return sorted(columns, key=lambda c: c.name)


def _readable_metrics(schema: Schema, highest_id: int) -> NestedField:
    next_id = highest_id
    by_id = sorted(
        (f.field_id, name)
        for name, f in walk_fields(schema.as_struct())
        if isinstance(f.field_type, PrimitiveType)
    )
    types = {f.field_id: f.field_type for _, f in walk_fields(schema.as_struct())}
    columns: list[NestedField] = []
    for field_id, name in by_id:  # ids handed out in id order, as Java's hash map iterates
        next_id += 1
        column_id = next_id
        metrics = []
        for metric, doc in _METRIC_DOCS:
            next_id += 1
            t: IcebergType = types[field_id] if metric.endswith("bound") else LongType()
            metrics.append(NestedField(next_id, metric, t, False, doc))
        columns.append(
            NestedField(column_id, name, StructType(*metrics), False, f"Metrics for column {name}")
        )
    columns.sort(key=lambda f: f.name)
    return NestedField(
        next_id + 1,
        READABLE_METRICS,
        StructType(*columns),
        False,
        "Column metrics in readable form",
    )


def _highest_id(struct: StructType) -> int:
    return max(index_by_id(struct), default=0)


def files_schema(metadata: TableMetadata) -> Schema:
    """The schema of ``files``, ``data_files``, ``delete_files`` and their ``all_`` forms."""
    struct = data_file_struct(table_partition_type(metadata))
    metrics = _readable_metrics(metadata.schema(), _highest_id(struct))
    return Schema(*struct.fields, metrics)


_STATUS = NestedField(0, "status", IntegerType(), True)
_SNAPSHOT_ID = NestedField(1, "snapshot_id", LongType(), False)
_SEQUENCE_NUMBER = NestedField(3, "sequence_number", LongType(), False)
_FILE_SEQUENCE_NUMBER = NestedField(4, "file_sequence_number", LongType(), False)


def entries_schema(metadata: TableMetadata) -> Schema:
    """The schema of ``entries`` and ``all_entries`` (Java's ``ManifestEntry.getSchema``)."""
    file_struct = data_file_struct(table_partition_type(metadata))
    entry = StructType(
        _STATUS,
        _SNAPSHOT_ID,
        _SEQUENCE_NUMBER,
        _FILE_SEQUENCE_NUMBER,
        NestedField(2, "data_file", file_struct, True),
    )
    metrics = _readable_metrics(metadata.schema(), _highest_id(entry))
    return Schema(*entry.fields, metrics)


# -- partitions ------------------------------------------------------------------------------

_PARTITION_COUNTS = (
    NestedField(2, "record_count", LongType(), True, "Count of records in data files"),
    NestedField(3, "file_count", IntegerType(), True, "Count of data files"),
    NestedField(
        11, "total_data_file_size_in_bytes", LongType(), True, "Total size in bytes of data files"
    ),
    NestedField(
        5,
        "position_delete_record_count",
        LongType(),
        True,
        "Count of records in position delete files",
    ),
    NestedField(
        6, "position_delete_file_count", IntegerType(), True, "Count of position delete files"
    ),
    NestedField(
        7,
        "equality_delete_record_count",
        LongType(),
        True,
        "Count of records in equality delete files",
    ),
    NestedField(
        8, "equality_delete_file_count", IntegerType(), True, "Count of equality delete files"
    ),
    NestedField(
        9,
        "last_updated_at",
        TimestamptzType(),
        False,
        "Commit time of snapshot that last updated this partition",
    ),
    NestedField(
        10,
        "last_updated_snapshot_id",
        LongType(),
        False,
        "Id of snapshot that last updated this partition",
    ),
)


def partitions_schema(metadata: TableMetadata) -> Schema:
    """``partition`` and ``spec_id`` (only when the table is partitioned), then the counts."""
    ptype = table_partition_type(metadata)
    if not ptype.fields:
        return Schema(*_PARTITION_COUNTS)
    return Schema(
        NestedField(1, "partition", ptype, True),
        NestedField(4, "spec_id", IntegerType(), True),
        *_PARTITION_COUNTS,
    )


# -- position deletes ------------------------------------------------------------------------

_CONTENT_OFFSET_COLUMN_ID = 2_147_483_647 - 6
_CONTENT_SIZE_COLUMN_ID = 2_147_483_647 - 7


def position_deletes_schema(metadata: TableMetadata) -> Schema:
    """Java's ``PositionDeletesTable`` schema: a row per deleted position."""
    schema = metadata.schema()
    ptype = table_partition_type(metadata)
    used = set(index_by_id(schema.as_struct()))
    for s in metadata.schemas:
        used |= set(index_by_id(s.as_struct()))
    used |= {
        DELETE_FILE_PATH_FIELD_ID,
        DELETE_FILE_POS_FIELD_ID,
        DELETE_FILE_ROW_FIELD_ID,
        PARTITION_COLUMN_ID,
        SPEC_ID_FIELD_ID,
        FILE_PATH_FIELD_ID,
    }
    next_id = 0
    renumbered = []
    for f in ptype.fields:  # fresh ids that clash with no column of any schema
        next_id += 1
        while next_id in used:
            next_id += 1
        renumbered.append(NestedField(next_id, f.name, f.field_type, False, f.doc))
    fields = [
        NestedField(
            DELETE_FILE_PATH_FIELD_ID,
            "file_path",
            StringType(),
            True,
            "Path of a file in which a deleted row is stored",
        ),
        NestedField(
            DELETE_FILE_POS_FIELD_ID,
            "pos",
            LongType(),
            True,
            "Ordinal position of a deleted row in the data file",
        ),
        NestedField(
            DELETE_FILE_ROW_FIELD_ID, "row", schema.as_struct(), False, "Deleted row values"
        ),
    ]
    if renumbered:
        fields.append(
            NestedField(
                PARTITION_COLUMN_ID,
                "partition",
                StructType(*renumbered),
                True,
                "Partition that position delete row belongs to",
            )
        )
    fields += [
        NestedField(
            SPEC_ID_FIELD_ID,
            "spec_id",
            IntegerType(),
            True,
            "Spec ID used to track the file containing a row",
        ),
        NestedField(
            FILE_PATH_FIELD_ID,
            "delete_file_path",
            StringType(),
            True,
            "Path of the file in which a row is stored",
        ),
    ]
    if metadata.format_version >= 3:
        fields += [
            NestedField(
                _CONTENT_OFFSET_COLUMN_ID,
                "content_offset",
                LongType(),
                False,
                "The offset in the DV where the content starts",
            ),
            NestedField(
                _CONTENT_SIZE_COLUMN_ID,
                "content_size_in_bytes",
                LongType(),
                False,
                "The length in bytes of the DV blob",
            ),
        ]
    return Schema(*fields)
