"""Iceberg schemas as Spark schemas (and back), and Arrow batches cast to Spark's Arrow types.

=====================  ===================================================================
Iceberg                Spark
=====================  ===================================================================
boolean                BooleanType
int / long             IntegerType / LongType
float / double         FloatType / DoubleType
decimal(P,S)           DecimalType(P, S)
date                   DateType
timestamp              TimestampNTZType
timestamptz            TimestampType
string, uuid           StringType (uuids in their canonical text form, as Java's Spark does)
fixed(L), binary       BinaryType
unknown                NullType
struct / list / map    StructType / ArrayType / MapType
=====================  ===================================================================

time and the nanosecond timestamps have no Spark type and are refused.

Every ``StructField`` made from an Iceberg field carries the field's id in its metadata under
``parquet.field.id``: with ``spark.sql.parquet.fieldId.read.enabled`` Spark's own Parquet
reader then matches file columns by id (renamed and reordered columns read right; a column a
file lacks reads as null), and Spark's Parquet writer writes the ids into the files.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

from icepark.errors import UnsupportedOperationError
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    UnknownType,
    UUIDType,
)

__all__ = [
    "FIELD_ID_KEY",
    "to_spark_type",
    "to_spark_schema",
    "spark_arrow_schema",
    "cast_to_spark_arrow",
    "spark_schema_to_arrow",
    "iceberg_schema_from_spark",
]

#: the StructField metadata key Spark reads and writes Parquet field ids under
FIELD_ID_KEY = "parquet.field.id"

_SIMPLE: dict[type[IcebergType], T.DataType] = {
    BooleanType: T.BooleanType(),
    IntegerType: T.IntegerType(),
    LongType: T.LongType(),
    FloatType: T.FloatType(),
    DoubleType: T.DoubleType(),
    DateType: T.DateType(),
    TimestampType: T.TimestampNTZType(),
    TimestamptzType: T.TimestampType(),
    StringType: T.StringType(),
    UUIDType: T.StringType(),
    FixedType: T.BinaryType(),
    BinaryType: T.BinaryType(),
    UnknownType: T.NullType(),
}


def to_spark_type(t: IcebergType, *, with_ids: bool = True) -> T.DataType:
    """The Spark type of an Iceberg type (nested fields carry their ids when ``with_ids``)."""
    if isinstance(t, StructType):
        return T.StructType([_to_spark_field(f, with_ids) for f in t.fields])
    if isinstance(t, ListType):
        return T.ArrayType(to_spark_type(t.element_type, with_ids=with_ids), not t.element_required)
    if isinstance(t, MapType):
        return T.MapType(
            to_spark_type(t.key_type, with_ids=with_ids),
            to_spark_type(t.value_type, with_ids=with_ids),
            not t.value_required,
        )
    if isinstance(t, DecimalType):
        return T.DecimalType(t.precision, t.scale)
    simple = _SIMPLE.get(type(t))
    if simple is None:
        raise UnsupportedOperationError(f"Spark has no type for Iceberg type {t}")
    return simple


def _to_spark_field(f: NestedField, with_ids: bool) -> T.StructField:
    metadata: dict[str, Any] = {FIELD_ID_KEY: f.field_id} if with_ids else {}
    if f.doc:
        metadata["comment"] = f.doc
    return T.StructField(
        f.name, to_spark_type(f.field_type, with_ids=with_ids), not f.required, metadata
    )


def to_spark_schema(schema: Schema | StructType, *, with_ids: bool = True) -> T.StructType:
    """The Spark schema of an Iceberg schema, type by type as the module docstring's table
    says (``timestamp`` is ``TimestampNTZType``, ``timestamptz`` is ``TimestampType``,
    ``uuid`` is ``StringType``); optional fields are nullable, docs become comments.

    Args:
        schema: an Iceberg :class:`~icepark.types.Schema` or struct type.
        with_ids: put each field's id in its metadata under ``parquet.field.id``, so that
            Spark's Parquet reader and writer match columns by id.

    Returns:
        A ``pyspark.sql.types.StructType``.

    Raises:
        UnsupportedOperationError: a field's type has no Spark type (time, the nanosecond
            timestamps), naming the type.
    """
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    result = to_spark_type(struct, with_ids=with_ids)
    assert isinstance(result, T.StructType)
    return result


def spark_arrow_schema(schema: T.StructType, timezone: str = "UTC") -> pa.Schema:
    """The Arrow schema Spark expects batches of ``schema`` in (Python data sources and
    ``mapInArrow`` results): microsecond timestamps (UTC for TimestampType), 32-bit offsets."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(
        schema, error_on_duplicated_field_names_in_struct=True, timezone=timezone
    )


def spark_schema_to_arrow(schema: T.StructType) -> pa.Schema:
    """Spark schema to Arrow (for creating an Iceberg table from a DataFrame's schema)."""
    out = spark_arrow_schema(schema)
    # drop Spark's JSON metadata: ids are assigned afresh by the table
    return pa.schema([f.remove_metadata() for f in out])


def iceberg_schema_from_spark(schema: T.StructType, *, optional: bool = False) -> Schema:
    """The Iceberg schema of a Spark schema with fresh ids, as Java's ``SparkSchemaUtil``
    converts one for a new table, view or column: ``char``/``varchar`` are strings, every
    struct field's ``comment`` (nested ones too) is its doc, ``NOT NULL`` is required.
    ``optional`` makes the top-level columns optional (Spark's CREATE TABLE AS SELECT). A type
    Iceberg cannot hold is :class:`UnsupportedOperationError`."""
    from pyspark.errors import PySparkException

    from icepark.arrow.schema import assign_fresh_ids_from_arrow

    if optional:
        schema = T.StructType([T.StructField(f.name, f.dataType, True, f.metadata) for f in schema])
    plain = _strings(schema)
    try:
        arrow = spark_schema_to_arrow(plain)
    except (PySparkException, TypeError, ValueError) as exc:  # messages vary by release
        raise UnsupportedOperationError(
            f"Cannot convert Spark schema {schema.simpleString()} to an Iceberg schema: {exc}"
        ) from exc
    converted = assign_fresh_ids_from_arrow(arrow)
    struct = _with_docs(plain, converted.as_struct())
    assert isinstance(struct, StructType)
    return Schema(*struct.fields, schema_id=converted.schema_id)


def _strings(t: Any) -> Any:
    """``t`` with Spark's char/varchar replaced by string (Java's conversion does that)."""
    if isinstance(t, T.CharType | T.VarcharType):
        return T.StringType()
    if isinstance(t, T.StructType):
        return T.StructType(
            [T.StructField(f.name, _strings(f.dataType), f.nullable, f.metadata) for f in t]
        )
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_strings(t.elementType), t.containsNull)
    if isinstance(t, T.MapType):
        return T.MapType(_strings(t.keyType), _strings(t.valueType), t.valueContainsNull)
    return t


def _with_docs(spark_type: Any, t: IcebergType) -> IcebergType:
    """``t`` with the comments of ``spark_type``'s struct fields as the fields' docs."""
    if isinstance(spark_type, T.StructType) and isinstance(t, StructType):
        return StructType(
            *[
                dataclasses.replace(
                    f,
                    field_type=_with_docs(sf.dataType, f.field_type),
                    doc=(sf.metadata or {}).get("comment", f.doc),
                )
                for sf, f in zip(spark_type.fields, t.fields, strict=True)
            ]
        )
    if isinstance(spark_type, T.ArrayType) and isinstance(t, ListType):
        return dataclasses.replace(
            t, element_type=_with_docs(spark_type.elementType, t.element_type)
        )
    if isinstance(spark_type, T.MapType) and isinstance(t, MapType):
        return dataclasses.replace(
            t,
            key_type=_with_docs(spark_type.keyType, t.key_type),
            value_type=_with_docs(spark_type.valueType, t.value_type),
        )
    return t


def cast_to_spark_arrow(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` (columns in ``target``'s order) cast to exactly ``target``'s types: what
    Spark requires of the batches a Python data source or ``mapInArrow`` gives it."""
    if batch.schema.equals(target, check_metadata=False):
        return batch.replace_schema_metadata(None) if batch.schema.metadata else batch
    columns = [_cast(batch.column(i), f.type) for i, f in enumerate(target)]
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _cast(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if arr.type.equals(target):
        return arr
    if isinstance(arr.type, pa.BaseExtensionType):
        if isinstance(arr.type, pa.UuidType) and pa.types.is_string(target):
            return _uuid_strings(arr)
        arr = arr.storage
    if (
        pa.types.is_struct(target)
        and pa.types.is_struct(arr.type)
        and (_has_uuid(arr.type) or arr.null_count)
    ):
        # rebuilt from its children: Arrow's cast refuses a null struct whose required
        # fields hold nulls there (a deleted row a position delete file did not store)
        children = [_cast(arr.field(i), target.field(i).type) for i in range(target.num_fields)]
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    # nullability, field names and metadata, time zones, large offsets: Arrow casts these
    return arr.cast(target, safe=False)


def _has_uuid(t: pa.DataType) -> bool:
    if isinstance(t, pa.UuidType):
        return True
    return any(_has_uuid(t.field(i).type) for i in range(t.num_fields))


def _uuid_strings(arr: pa.Array) -> pa.Array:
    storage = arr.storage
    return pa.array(
        [None if b is None else str(uuid.UUID(bytes=b)) for b in storage.to_pylist()],
        pa.string(),
    )
