"""Metadata columns: the reserved field ids of spec "Reserved Field IDs" and their fields.

Field ids from :data:`~icepark.spec.types.RESERVED_FIELD_ID_START` (``Integer.MAX_VALUE -
200``) up are reserved. A projected schema asks a reader for a metadata column by putting the
column's field (by its reserved id) among its fields:

===============  ============  =====================================================
``_file``        2147483646    string: path of the data file holding the row
``_pos``         2147483645    long: the row's position in that file, from 0
``_deleted``     2147483644    boolean: whether the row is deleted
``_spec_id``     2147483643    int: id of the partition spec of the row's file
``_partition``   2147483642    struct: the partition tuple of the row's file
``file_path``    2147483546    string: position delete files' data file path
``pos``          2147483545    long: position delete files' row position
``row``          2147483544    struct: position delete files' deleted row
===============  ============  =====================================================

plus the changelog columns (``_change_type``, ``_change_ordinal``, ``_commit_snapshot_id``)
and the v3 row lineage columns (``_row_id``, ``_last_updated_sequence_number``).
``_partition``'s type depends on the table, see :func:`partition_field`.
"""

from __future__ import annotations

from icepark.spec.types import (
    RESERVED_FIELD_ID_START,
    BooleanType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
)

__all__ = [
    "FILE_PATH_FIELD_ID",
    "POS_FIELD_ID",
    "IS_DELETED_FIELD_ID",
    "SPEC_ID_FIELD_ID",
    "PARTITION_FIELD_ID",
    "DELETE_FILE_PATH_FIELD_ID",
    "DELETE_FILE_POS_FIELD_ID",
    "DELETE_FILE_ROW_FIELD_ID",
    "CHANGE_TYPE_FIELD_ID",
    "CHANGE_ORDINAL_FIELD_ID",
    "COMMIT_SNAPSHOT_ID_FIELD_ID",
    "ROW_ID_FIELD_ID",
    "LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID",
    "FILE_PATH_FIELD",
    "POS_FIELD",
    "IS_DELETED_FIELD",
    "SPEC_ID_FIELD",
    "PARTITION_FIELD_NAME",
    "PARTITION_FIELD_DOC",
    "DELETE_FILE_PATH_FIELD",
    "DELETE_FILE_POS_FIELD",
    "CHANGE_TYPE_FIELD",
    "CHANGE_ORDINAL_FIELD",
    "COMMIT_SNAPSHOT_ID_FIELD",
    "ROW_ID_FIELD",
    "LAST_UPDATED_SEQUENCE_NUMBER_FIELD",
    "partition_field",
    "delete_file_row_field",
    "is_metadata_field_id",
    "metadata_field",
    "metadata_column",
    "ROW_METADATA_FIELDS",
]

_MAX_INT = 2**31 - 1

FILE_PATH_FIELD_ID = _MAX_INT - 1  # 2147483646
POS_FIELD_ID = _MAX_INT - 2  # 2147483645
IS_DELETED_FIELD_ID = _MAX_INT - 3  # 2147483644
SPEC_ID_FIELD_ID = _MAX_INT - 4  # 2147483643
PARTITION_FIELD_ID = _MAX_INT - 5  # 2147483642
DELETE_FILE_PATH_FIELD_ID = _MAX_INT - 101  # 2147483546
DELETE_FILE_POS_FIELD_ID = _MAX_INT - 102  # 2147483545
DELETE_FILE_ROW_FIELD_ID = _MAX_INT - 103  # 2147483544
CHANGE_TYPE_FIELD_ID = _MAX_INT - 104  # 2147483543
CHANGE_ORDINAL_FIELD_ID = _MAX_INT - 105  # 2147483542
COMMIT_SNAPSHOT_ID_FIELD_ID = _MAX_INT - 106  # 2147483541
ROW_ID_FIELD_ID = _MAX_INT - 107  # 2147483540
LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID = _MAX_INT - 108  # 2147483539

FILE_PATH_FIELD = NestedField(
    FILE_PATH_FIELD_ID,
    "_file",
    StringType(),
    required=True,
    doc="Path of the file in which a row is stored",
)
POS_FIELD = NestedField(
    POS_FIELD_ID,
    "_pos",
    LongType(),
    required=True,
    doc="Ordinal position of a row in the source data file",
)
IS_DELETED_FIELD = NestedField(
    IS_DELETED_FIELD_ID,
    "_deleted",
    BooleanType(),
    required=True,
    doc="Whether the row has been deleted",
)
SPEC_ID_FIELD = NestedField(
    SPEC_ID_FIELD_ID,
    "_spec_id",
    IntegerType(),
    required=True,
    doc="Spec ID used to track the file containing a row",
)
PARTITION_FIELD_NAME = "_partition"
PARTITION_FIELD_DOC = "Partition to which a row belongs to"
DELETE_FILE_PATH_FIELD = NestedField(
    DELETE_FILE_PATH_FIELD_ID,
    "file_path",
    StringType(),
    required=True,
    doc="Path of a file in which a deleted row is stored",
)
DELETE_FILE_POS_FIELD = NestedField(
    DELETE_FILE_POS_FIELD_ID,
    "pos",
    LongType(),
    required=True,
    doc="Ordinal position of a deleted row in the data file",
)
CHANGE_TYPE_FIELD = NestedField(
    CHANGE_TYPE_FIELD_ID,
    "_change_type",
    StringType(),
    required=True,
    doc="Record type in changelog",
)
CHANGE_ORDINAL_FIELD = NestedField(
    CHANGE_ORDINAL_FIELD_ID,
    "_change_ordinal",
    IntegerType(),
    required=False,
    doc="Change ordinal in changelog",
)
COMMIT_SNAPSHOT_ID_FIELD = NestedField(
    COMMIT_SNAPSHOT_ID_FIELD_ID,
    "_commit_snapshot_id",
    LongType(),
    required=False,
    doc="Commit snapshot ID",
)
ROW_ID_FIELD = NestedField(
    ROW_ID_FIELD_ID,
    "_row_id",
    LongType(),
    required=False,
    doc="Implicit row ID that is automatically assigned",
)
LAST_UPDATED_SEQUENCE_NUMBER_FIELD = NestedField(
    LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID,
    "_last_updated_sequence_number",
    LongType(),
    required=False,
    doc="Sequence number when the row was last updated",
)

#: the metadata columns of rows with a fixed type (``_partition`` depends on the table)
ROW_METADATA_FIELDS: tuple[NestedField, ...] = (
    FILE_PATH_FIELD,
    POS_FIELD,
    IS_DELETED_FIELD,
    SPEC_ID_FIELD,
    ROW_ID_FIELD,
    LAST_UPDATED_SEQUENCE_NUMBER_FIELD,
)

_BY_NAME: dict[str, NestedField] = {f.name: f for f in ROW_METADATA_FIELDS}


def partition_field(partition_type: StructType) -> NestedField:
    """The optional ``_partition`` column holding partition tuples of ``partition_type``
    (a spec's :meth:`~icepark.spec.partitioning.PartitionSpec.partition_type`, or the union
    of all specs' partition fields, as Java uses for tables with evolved partitioning)."""
    return NestedField(
        PARTITION_FIELD_ID,
        PARTITION_FIELD_NAME,
        partition_type,
        required=False,
        doc=PARTITION_FIELD_DOC,
    )


def delete_file_row_field(row_type: StructType) -> NestedField:
    """The optional ``row`` column of position delete files (the deleted rows' values)."""
    return NestedField(
        DELETE_FILE_ROW_FIELD_ID,
        "row",
        row_type,
        required=False,
        doc="Deleted row values",
    )


def is_metadata_field_id(field_id: int) -> bool:
    """True for ids in the reserved range (above ``Integer.MAX_VALUE - 200``)."""
    return field_id > RESERVED_FIELD_ID_START


def metadata_field(name: str) -> NestedField | None:
    """The row metadata column called ``name`` (``_file``, ``_pos``, ``_deleted``,
    ``_spec_id``, ``_row_id``, ``_last_updated_sequence_number``), or None; ``_partition`` is
    not returned since its type depends on the table (see :func:`partition_field`)."""
    return _BY_NAME.get(name)


def metadata_column(name: str, partition_type: StructType | None = None) -> NestedField | None:
    """The row metadata column called ``name`` (``_file``, ``_pos``, ``_spec_id``, ...), or
    None. ``_partition`` is returned only when its ``partition_type`` is given."""
    if name == PARTITION_FIELD_NAME:
        return partition_field(partition_type) if partition_type is not None else None
    return metadata_field(name)
