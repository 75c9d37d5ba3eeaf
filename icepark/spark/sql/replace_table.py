"""``REPLACE TABLE`` / ``CREATE OR REPLACE TABLE`` of an existing table: one commit, as Java's
replace transaction (``TableMetadata.buildReplacement``) makes it.

The table keeps its history (snapshots, other refs, old schemas and specs) and gets: the new
schema, its columns keeping the ids of same-named columns of the current schema (new ones
numbered after ``last-column-id``); the new partition spec, its fields keeping the ids of
fields with the same source and transform in any earlier spec (an equal spec is reused); no
sort order; the new properties added to the old; branch ``main`` removed, so the table has
no current snapshot. With ``AS SELECT`` the rows are written with the new schema and spec
and committed in the same transaction as an overwrite of ``main`` (a snapshot without a
parent, as Java's replace-as-select writes it).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from icepark.catalog.identifiers import schema_from_user
from icepark.expressions import AlwaysTrue
from icepark.spark.write.writer import write_action, write_files
from icepark.spec.builder import MetadataBuilder
from icepark.spec.partitioning import build_partition_spec
from icepark.spec.schema import assign_fresh_ids
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.spec.sorting import UNSORTED_ORDER, UNSORTED_ORDER_ID
from icepark.spec.updates import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSortOrderUpdate,
    RemoveSnapshotRefUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    TableUpdate,
)
from icepark.table import Table

__all__ = ["replace_table"]


def _updates(
    table: Table,
    schema: pa.Schema,
    partition_by: Sequence[str],
    location: str | None,
    properties: Mapping[str, str],
) -> list[TableUpdate]:
    md = table.metadata
    counter = itertools.count(md.last_column_id + 1)
    fresh = assign_fresh_ids(schema_from_user(schema), lambda: next(counter), md.schema())
    last_column_id = max(md.last_column_id, fresh.highest_field_id)
    spec = build_partition_spec(fresh, partition_by)
    known = {
        (f.source_id, str(f.transform)): f.field_id for s in md.partition_specs for f in s.fields
    }
    next_partition_id = itertools.count(md.last_partition_id + 1)
    fields = [
        replace(f, field_id=known.get((f.source_id, str(f.transform))) or next(next_partition_id))
        for f in spec.fields
    ]
    spec = replace(spec, fields=tuple(fields))
    updates: list[TableUpdate] = [
        AddSchemaUpdate(fresh, last_column_id),
        SetCurrentSchemaUpdate(-1),
        AddPartitionSpecUpdate(spec),
        SetDefaultSpecUpdate(-1),
        AddSortOrderUpdate(UNSORTED_ORDER),
        SetDefaultSortOrderUpdate(UNSORTED_ORDER_ID),
    ]
    if properties:
        updates.append(SetPropertiesUpdate(dict(properties)))
    if location and location.rstrip("/") != md.location.rstrip("/"):
        updates.append(SetLocationUpdate(location.rstrip("/")))
    if MAIN_BRANCH in md.refs:
        updates.append(RemoveSnapshotRefUpdate(MAIN_BRANCH))
    return updates


def replace_table(
    table: Table,
    schema: pa.Schema,
    partition_by: Sequence[str],
    location: str | None,
    properties: Mapping[str, str],
    df: DataFrame | None,
) -> Table:
    """Replace ``table`` (see the module docstring); ``df`` holds the rows of ``AS SELECT``."""
    updates = _updates(table, schema, partition_by, location, properties)
    tx = table.transaction()
    tx.update(*updates)
    if df is not None:
        staged = MetadataBuilder(table.metadata).apply_all(updates).build()
        files = write_files(df, table, metadata=staged)
        target: Any = table
        action = write_action(target, files, "overwrite", AlwaysTrue(), MAIN_BRANCH, {}, True)
        try:
            tx.add_action(action)
        except BaseException:
            action.abort(table.io)
            raise
    tx.commit_transaction()
    return table
