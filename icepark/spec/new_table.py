"""Metadata for a new table (Java's ``TableMetadata.newTableMetadata``) and the REST updates that
create it. Re-exported by :mod:`icepark.spec.builder`."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence

from icepark.errors import InvalidSchemaError, ValidationError
from icepark.spec import properties as P
from icepark.spec.builder import MetadataBuilder
from icepark.spec.metadata import DEFAULT_FORMAT_VERSION, TableMetadata
from icepark.spec.partitioning import (
    INITIAL_SPEC_ID,
    PARTITION_DATA_ID_START,
    PartitionField,
    PartitionSpec,
    build_partition_spec,
)
from icepark.spec.schema import Schema, assign_fresh_ids
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.spec.sorting import UNSORTED_ORDER, UNSORTED_ORDER_ID, SortField, SortOrder
from icepark.spec.updates import (
    LAST_ADDED,
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSortOrderUpdate,
    AssignUUIDUpdate,
    RemoveSnapshotRefUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    TableUpdate,
    UpgradeFormatVersionUpdate,
)

__all__ = [
    "NEW_TABLE_DEFAULTS",
    "RESERVED_PROPERTIES",
    "new_table_metadata",
    "creation_updates",
    "replacement_updates",
]

RESERVED_PROPERTIES = P.RESERVED

#: Properties Java's ``TableMetadata.newTableMetadata`` stores in every new table unless the
#: creator sets them (its ``persistedProperties``): a Java writer reads an absent Parquet codec
#: as gzip, the default before 1.4, so a table created without it would get gzip files from
#: Java engines where Java's own catalogs give zstd.
NEW_TABLE_DEFAULTS: Mapping[str, str] = {P.PARQUET_COMPRESSION.name: "zstd"}
_INITIAL_SORT_ORDER_ID = 1


def _fresh_source_id(original: Schema, fresh: Schema, source_id: int, what: str) -> int:
    name = original.find_column_name(source_id)
    if name is None:
        raise ValidationError(f"Cannot find source column for {what}: id {source_id}")
    try:
        return fresh.find_field_id(name)
    except InvalidSchemaError as exc:  # pragma: no cover - names survive fresh ids
        raise ValidationError(f"Cannot find source column {name!r} for {what}") from exc


def new_table_metadata(
    schema: Schema,
    partition_spec: PartitionSpec | None,
    sort_order: SortOrder | None,
    location: str,
    properties: Mapping[str, str] | None = None,
    format_version: int = DEFAULT_FORMAT_VERSION,
    table_uuid: str | None = None,
) -> TableMetadata:
    """Metadata for a new table, as Java's ``TableMetadata.newTableMetadata`` makes it.

    The schema gets fresh field ids (1, 2, ... breadth first) and schema id 0; the spec
    (None: unpartitioned) and sort order (None: unsorted), built against ``schema``, are rebound
    to the fresh ids by column name. The spec gets id 0 and field ids from 1000; a sorted order
    gets id 1. A ``format-version`` property overrides ``format_version``; it and the other
    reserved properties are not stored.
    """
    props = dict(properties or {})
    if P.FORMAT_VERSION.raw(props) is not None:
        format_version = P.FORMAT_VERSION.get(props)
    stored = {k: v for k, v in props.items() if k not in RESERVED_PROPERTIES}

    fresh = assign_fresh_ids(schema).with_schema_id(0)
    spec_fields = []
    for i, f in enumerate(partition_spec.fields if partition_spec is not None else ()):
        source = _fresh_source_id(schema, fresh, f.source_id, f"partition field {f.name!r}")
        spec_fields.append(PartitionField(source, PARTITION_DATA_ID_START + i, f.transform, f.name))
    fresh_spec = PartitionSpec(INITIAL_SPEC_ID, tuple(spec_fields))

    fresh_order = UNSORTED_ORDER
    if sort_order is not None and not sort_order.is_unsorted:
        order_fields = tuple(
            SortField(
                _fresh_source_id(schema, fresh, f.source_id, "sort field"),
                f.transform,
                f.direction,
                f.null_order,
            )
            for f in sort_order.fields
        )
        fresh_order = SortOrder(_INITIAL_SORT_ORDER_ID, order_fields)

    builder = MetadataBuilder(None, format_version=format_version)
    if table_uuid is not None:
        builder.assign_uuid(table_uuid)
    return (
        builder.add_schema(fresh, fresh.highest_field_id)
        .set_current_schema(LAST_ADDED)
        .add_partition_spec(fresh_spec)
        .set_default_spec(LAST_ADDED)
        .add_sort_order(fresh_order)
        .set_default_sort_order(LAST_ADDED)
        .set_location(location)
        .set_properties(stored)
        .build()
    )


def creation_updates(md: TableMetadata) -> list[TableUpdate]:
    """The REST updates that create ``md``'s table (Java's ``RESTSessionCatalog`` createChanges).

    Used for create and replace transactions: uuid, format version, current schema, default
    spec and sort order, location and properties.
    """
    updates: list[TableUpdate] = [
        AssignUUIDUpdate(md.table_uuid),
        UpgradeFormatVersionUpdate(md.format_version),
        AddSchemaUpdate(md.schema(), md.last_column_id),
        SetCurrentSchemaUpdate(LAST_ADDED),
        AddPartitionSpecUpdate(md.spec()),
        SetDefaultSpecUpdate(LAST_ADDED),
        AddSortOrderUpdate(md.sort_order()),
        SetDefaultSortOrderUpdate(LAST_ADDED),
        SetLocationUpdate(md.location),
    ]
    if md.properties:
        updates.append(SetPropertiesUpdate(dict(md.properties)))
    return updates


def replacement_updates(
    md: TableMetadata,
    schema: Schema,
    partition_by: Sequence[str | tuple[str, str]],
    location: str | None,
    properties: Mapping[str, str],
) -> list[TableUpdate]:
    """The updates that replace ``md``'s table in one commit (Java's
    ``TableMetadata.buildReplacement``; Spark's ``REPLACE TABLE``).

    The table keeps its history and gets: ``schema``, its columns keeping the ids of same-named
    columns of the current schema (new ones numbered after ``last-column-id``); a spec from the
    ``partition_by`` terms, its fields keeping the ids of fields with the same source and
    transform in any earlier spec; no sort order; ``properties`` added to the old ones, the
    reserved ones left out and ``format-version`` an upgrade (as at creation); ``location``
    when it differs; branch ``main`` removed, so the table has no current snapshot.
    """
    counter = itertools.count(md.last_column_id + 1)
    fresh = assign_fresh_ids(schema, lambda: next(counter), md.schema())
    last_column_id = max(md.last_column_id, fresh.highest_field_id)
    spec = build_partition_spec(fresh, partition_by)
    known = {
        (f.source_id, str(f.transform)): f.field_id for s in md.partition_specs for f in s.fields
    }
    next_partition_id = itertools.count(md.last_partition_id + 1)
    fields = [
        dataclasses.replace(
            f, field_id=known.get((f.source_id, str(f.transform))) or next(next_partition_id)
        )
        for f in spec.fields
    ]
    spec = dataclasses.replace(spec, fields=tuple(fields))
    updates: list[TableUpdate] = []
    if P.FORMAT_VERSION.raw(properties) is not None:
        version = P.FORMAT_VERSION.get(properties)
        if version != md.format_version:
            updates.append(UpgradeFormatVersionUpdate(version))
    updates += [
        AddSchemaUpdate(fresh, last_column_id),
        SetCurrentSchemaUpdate(LAST_ADDED),
        AddPartitionSpecUpdate(spec),
        SetDefaultSpecUpdate(LAST_ADDED),
        AddSortOrderUpdate(UNSORTED_ORDER),
        SetDefaultSortOrderUpdate(UNSORTED_ORDER_ID),
    ]
    stored = {k: v for k, v in properties.items() if k not in RESERVED_PROPERTIES}
    if stored:
        updates.append(SetPropertiesUpdate(stored))
    if location and location.rstrip("/") != md.location.rstrip("/"):
        updates.append(SetLocationUpdate(location.rstrip("/")))
    if MAIN_BRANCH in md.refs:
        updates.append(RemoveSnapshotRefUpdate(MAIN_BRANCH))
    return updates
