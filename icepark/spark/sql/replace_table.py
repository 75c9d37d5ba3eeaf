"""``REPLACE TABLE`` / ``CREATE OR REPLACE TABLE`` of an existing table: one commit, as Java's
replace transaction (``TableMetadata.buildReplacement``) makes it. The metadata changes are
:func:`icepark.spec.new_table.replacement_updates`; this module adds the write.

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

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame

from icepark.expressions import AlwaysTrue
from icepark.spark.runtime import spark_summary
from icepark.spark.write.writer import write_action, write_files
from icepark.spec.builder import MetadataBuilder
from icepark.spec.new_table import replacement_updates
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table import Table

__all__ = ["replace_table"]


def replace_table(
    table: Table,
    schema: Schema,
    partition_by: Sequence[str],
    location: str | None,
    properties: Mapping[str, str],
    df: DataFrame | None,
) -> Table:
    """Replace ``table`` (see the module docstring); ``df`` holds the rows of ``AS SELECT``."""
    updates = replacement_updates(table.metadata, schema, partition_by, location, properties)
    tx = table.transaction()
    tx.update(*updates)
    if df is not None:
        staged = MetadataBuilder(table.metadata).apply_all(updates).build()
        files = write_files(df, table, metadata=staged)
        target: Any = table
        props = spark_summary(df.sparkSession, None)
        action = write_action(target, files, "overwrite", AlwaysTrue(), MAIN_BRANCH, props, True)
        try:
            tx.add_action(action)
        except BaseException:
            action.abort(table.io)
            raise
    tx.commit_transaction()
    return table
