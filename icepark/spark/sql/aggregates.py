"""Aggregates answered from metadata, as Java's aggregate push-down answers them
(``spark.sql.iceberg.aggregate-push-down.enabled``, default true).

``SELECT count(*), count(col), min(col), max(col) FROM t [WHERE ...]``, every item one of those
(aliases allowed), over one icepark table (time travel allowed), is answered from the planned
files' record counts and column metrics without reading a data file when:

* every ``WHERE`` conjunct translates to icepark's filter (:mod:`.pushdown`) and every planned
  file's residual is true (its partition or its metrics show that all its rows match);
* no delete file applies to a planned file;
* the metrics each aggregate needs are there and exact: value and null counts for
  ``count(col)``; lower and upper bounds for ``min``/``max`` of a column of a kind whose bounds
  are its values (numbers without NaN, dates, timestamps, decimals, booleans; strings only
  where the column's metrics mode is ``full``, as Java decides: a truncated bound is no value).

Anything else (a ``GROUP BY``, a join, a delete file, a missing or truncated metric) runs as
an ordinary query, with the same answer. The output columns are those Spark gives the
query (names and types), found by analyzing it over an empty copy of the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from sqlglot import exp

from icepark.arrow.metrics_config import MetricsConfig
from icepark.arrow.schema import schema_to_arrow
from icepark.expressions import AlwaysTrue
from icepark.planning.planner import FileScanTask
from icepark.spark.read.planning import plan_scan
from icepark.spark.sql.context import SqlContext
from icepark.spark.sql.pushdown import from_clause, split_and, to_filter
from icepark.spark.sql.query import owned_columns, session_is_utc, table_parts, time_travel
from icepark.spark.types import to_spark_schema
from icepark.spec.conversions import from_bytes
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BinaryType,
    DoubleType,
    FixedType,
    FloatType,
    NestedField,
    PrimitiveType,
    StringType,
    TimeType,
    UUIDType,
)

__all__ = ["PUSH_DOWN_CONF", "answer_from_metadata"]

#: Java's session setting (true unless set to false)
PUSH_DOWN_CONF = "spark.sql.iceberg.aggregate-push-down.enabled"


class _Fallback(Exception):
    """The query cannot be answered from metadata: run it."""


@dataclass(frozen=True)
class _Aggregate:
    kind: str  # count_star, count, min, max
    field: NestedField | None


def _aggregate(node: exp.Expr, schema: Schema) -> _Aggregate:
    if isinstance(node, exp.Alias):
        node = node.this
    if isinstance(node, exp.Count):
        arg = node.this
        if isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not arg.is_string):
            return _Aggregate("count_star", None)
        if node.args.get("distinct") is not None or isinstance(arg, exp.Distinct):
            raise _Fallback
        return _Aggregate("count", _column(arg, schema))
    if isinstance(node, exp.Min | exp.Max):
        if node.expressions:  # min(a, b): not the aggregate
            raise _Fallback
        field = _column(node.this, schema)
        if isinstance(field.field_type, BinaryType | FixedType | UUIDType | TimeType):
            raise _Fallback
        return _Aggregate("min" if isinstance(node, exp.Min) else "max", field)
    raise _Fallback


def _column(node: Any, schema: Schema) -> NestedField:
    if not isinstance(node, exp.Column) or node.args.get("db") is not None:
        raise _Fallback
    fields = {f.name.lower(): f for f in schema.fields}
    field = fields.get(node.name.lower())
    if field is None or not isinstance(field.field_type, PrimitiveType):
        raise _Fallback
    return field


def _count(tasks: list[FileScanTask], field: NestedField) -> int:
    total = 0
    for t in tasks:
        values = (t.file.value_counts or {}).get(field.field_id)
        nulls = (t.file.null_value_counts or {}).get(field.field_id)
        if values is None or nulls is None:
            raise _Fallback
        total += values - nulls
    return total


def _bound(tasks: list[FileScanTask], field: NestedField, smallest: bool) -> Any:
    t_type = field.field_type
    assert isinstance(t_type, PrimitiveType)
    best: Any = None
    for t in tasks:
        f = t.file
        values = (f.value_counts or {}).get(field.field_id)
        nulls = (f.null_value_counts or {}).get(field.field_id)
        if values is not None and nulls is not None and values == nulls:
            continue  # no value in this file
        if isinstance(t_type, FloatType | DoubleType):
            nans = (f.nan_value_counts or {}).get(field.field_id)
            if nans is None or nans > 0:
                raise _Fallback  # Spark orders NaN above every number
        bounds = f.lower_bounds if smallest else f.upper_bounds
        raw = (bounds or {}).get(field.field_id)
        if raw is None:
            raise _Fallback
        value = from_bytes(t_type, raw)
        if best is None or (value < best if smallest else value > best):
            best = value
    return best


def _exact_bounds(aggregates: list[_Aggregate], metadata: TableMetadata, schema: Schema) -> None:
    """Java's rule: min/max of a string column only when its metrics mode keeps whole values."""
    config = MetricsConfig.from_properties(metadata.properties, schema, metadata.sort_order())
    for a in aggregates:
        if a.kind in ("min", "max") and a.field is not None:
            if isinstance(a.field.field_type, StringType):
                if config.mode_for(a.field.field_id, schema).kind != "full":
                    raise _Fallback


def _values(aggregates: list[_Aggregate], tasks: list[FileScanTask]) -> list[Any]:
    out: list[Any] = []
    for a in aggregates:
        if a.kind == "count_star":
            out.append(sum(t.file.record_count for t in tasks))
        elif a.kind == "count":
            assert a.field is not None
            out.append(_count(tasks, a.field))
        else:
            assert a.field is not None
            out.append(_bound(tasks, a.field, a.kind == "min"))
    return out


def _simple_select(tree: exp.Expr) -> exp.Table:
    """The one table of ``SELECT <count/min/max, ...> FROM t [WHERE ...]``: its shape alone,
    checked before anything is loaded."""
    if not isinstance(tree, exp.Select):
        raise _Fallback
    for key in (
        "with",
        "with_",  # (sqlglot 30 names it so)
        "joins",
        "group",
        "having",
        "qualify",
        "windows",
        "distinct",
        "laterals",
        "limit",
        "offset",
    ):
        if tree.args.get(key):
            raise _Fallback
    source = from_clause(tree)
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier | exp.Dot):
        raise _Fallback
    if not tree.expressions or not all(
        isinstance(e.this if isinstance(e, exp.Alias) else e, exp.Count | exp.Min | exp.Max)
        for e in tree.expressions
    ):
        raise _Fallback  # an item other than count/min/max: no table needs loading
    return table


def answer_from_metadata(ctx: SqlContext, tree: exp.Expr) -> DataFrame | None:
    """The answer of an aggregate query from metadata, or None to run it (see above)."""
    if (ctx.spark.conf.get(PUSH_DOWN_CONF, "true") or "true").strip().lower() == "false":
        return None
    try:
        node = _simple_select(tree)
        resolved = ctx.resolve(table_parts(node))
        if resolved.kind != "table" or resolved.table is None:
            return None
        snapshot_id, as_of, ref = time_travel(ctx, node.args.get("version"), resolved)
        scan = resolved.table.scan(None, None, snapshot_id, as_of, ref)
        aggregates = [_aggregate(e, scan.schema) for e in tree.expressions]
        _exact_bounds(aggregates, scan.metadata, scan.schema)
        where = tree.args.get("where")
        conjuncts = split_and(where.this if isinstance(where, exp.Where) else None)
        owns = owned_columns(node.alias_or_name.lower(), True)
        filt, texts = to_filter(conjuncts, scan.schema, owns, session_is_utc(ctx))
        if len(texts) != len(conjuncts):
            return None
        if filt is not None:
            scan = scan.filter(filt)
        tasks = list(plan_scan(ctx.spark, scan))
        if any(t.delete_files or not isinstance(t.residual, AlwaysTrue) for t in tasks):
            return None
        values = _values(aggregates, tasks)
    except _Fallback:
        return None
    # the output Spark gives the query: analyzed over an empty copy of the table
    empty = ctx.spark.createDataFrame([], to_spark_schema(scan.schema))
    name = ctx.register(empty, resolved.parts[-1])
    alias = node.alias_or_name
    node.replace(
        exp.Table(
            this=exp.to_identifier(name, quoted=True),
            alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)),
        )
    )
    try:
        output = ctx.sql(tree.sql(dialect="spark")).schema
    finally:
        ctx.drop_views()
    arrow_types = schema_to_arrow(scan.schema)
    arrays = []
    for a, v in zip(aggregates, values, strict=True):
        if a.field is None or a.kind == "count":
            arrays.append(pa.array([v], pa.int64()))
        else:
            arrays.append(pa.array([v], arrow_types.field(a.field.name).type))
    frame = ctx.spark.createDataFrame(pa.table(arrays, names=[f"_{i}" for i in range(len(arrays))]))
    ctx.note(
        f"icepark aggregates of {resolved.name} answered from metadata: {len(tasks)} files' "
        "counts and bounds, no data file read"
    )
    return frame.select(
        *[frame[f"_{i}"].cast(f.dataType).alias(f.name) for i, f in enumerate(output.fields)]
    )
