"""What Java's Spark shows of an Iceberg view: ``SHOW TBLPROPERTIES v [('key')]``, ``SHOW
CREATE TABLE v`` and ``DESCRIBE [EXTENDED] v``, in the shapes of Iceberg's
``ShowV2ViewPropertiesExec``, ``ShowCreateV2ViewExec`` and ``DescribeV2ViewExec``.

A view's Spark properties (Java's ``SparkView.properties()``) are ``provider`` (``iceberg``),
``location`` and ``format-version``, then the view's own properties but
``spark.query-column-names``; Spark's reserved view properties (``comment``, ``owner``,
``create_engine_version``, ``engine_version``) are shown apart, or not at all.
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from icepark.spark.runtime import session_settings
from icepark.spark.sql.context import SqlContext
from icepark.spark.types import to_spark_schema

__all__ = [
    "QUERY_COLUMN_NAMES",
    "describe_view",
    "show_create_view",
    "show_view_properties",
    "spark_view_properties",
]

QUERY_COLUMN_NAMES = "spark.query-column-names"
"""The view property Java's Spark keeps the query's own column names in (before the view's
column list renames them)."""

_ICEBERG_RESERVED = frozenset({"provider", "location", "format-version", QUERY_COLUMN_NAMES})
_SPARK_RESERVED = frozenset({"comment", "owner", "create_engine_version", "engine_version"})
_REDACTED = "*********(redacted)"
_DEFAULT_REDACTION = (r"(?i)url", r"(?i)secret|password|token|access[.]key")


def spark_view_properties(view: Any) -> dict[str, str]:
    """The properties Java's Spark sees on ``view`` (``SparkView.properties()``)."""
    out = {
        "provider": "iceberg",
        "location": view.metadata.location,
        "format-version": str(view.metadata.format_version),
    }
    out.update({k: v for k, v in view.properties.items() if k not in _ICEBERG_RESERVED})
    return out


def _shown(view: Any) -> dict[str, str]:
    return {k: v for k, v in spark_view_properties(view).items() if k not in _SPARK_RESERVED}


def _full_name(ctx: SqlContext, view: Any) -> str:
    return ".".join((*([ctx.catalog_name] if ctx.catalog_name else []), *view.identifier))


def _escaped(text: str) -> str:
    """Spark's ``escapeSingleQuotedString``."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


def show_view_properties(ctx: SqlContext, view: Any, key: str | None) -> DataFrame:
    """``SHOW TBLPROPERTIES v [('key')]``: a missing key's row says so, as Java's does."""
    props = _shown(view)
    schema = "key string, value string"
    if key is not None:
        missing = f"View {_full_name(ctx, view)} does not have property: {key}"
        return ctx.spark.createDataFrame([(key, props.get(key, missing))], schema)
    return ctx.spark.createDataFrame(sorted(props.items()), schema)


def _redact(ctx: SqlContext, props: dict[str, str]) -> dict[str, str]:
    """Spark's ``redactOptions``: a value whose key or value matches the session's redaction
    patterns is replaced."""
    keys = ["spark.sql.redaction.options.regex", "spark.redaction.regex"]
    conf = session_settings(ctx.spark, keys)
    patterns = [conf[key] or default for key, default in zip(keys, _DEFAULT_REDACTION, strict=True)]
    out = dict(props)
    for pattern in patterns:
        rx = re.compile(pattern)
        out = {k: _REDACTED if rx.search(k) or rx.search(v) else v for k, v in out.items()}
    return out


def show_create_view(ctx: SqlContext, view: Any) -> DataFrame:
    """``SHOW CREATE TABLE v``: Java's text (column comments as stored, the view's comment
    and properties escaped, properties sorted and redacted)."""
    columns = [
        f.name + (f" COMMENT '{f.doc}'" if f.doc else "") for f in view.schema.fields
    ]  # fmt: skip
    text = f"CREATE VIEW {_full_name(ctx, view)} " + "(\n  " + ",\n  ".join(columns) + ")\n"
    comment = view.properties.get("comment")
    if comment is not None:
        text += f"COMMENT '{_escaped(comment)}'\n"
    props = _redact(ctx, _shown(view))
    if props:
        items = [f"'{_escaped(k)}' = '{_escaped(v)}'" for k, v in sorted(props.items())]
        text += "TBLPROPERTIES (\n  " + ",\n  ".join(items) + ")\n"
    text += f"AS\n{view.sql('spark')}\n"
    return ctx.spark.createDataFrame([(text,)], "createtab_stmt string")


def _quoted(part: str) -> str:
    return part if re.fullmatch(r"[A-Za-z0-9_]+", part) else "`" + part.replace("`", "``") + "`"


def describe_view(ctx: SqlContext, view: Any, extended: bool) -> DataFrame:
    """``DESCRIBE [EXTENDED] v``: its columns (an empty comment when none, as Java's), and
    with ``EXTENDED`` Java's detailed view information."""
    schema = to_spark_schema(view.schema, with_ids=False)
    rows = [
        (f.name, f.dataType.simpleString(), ice.doc or "")
        for f, ice in zip(schema.fields, view.schema.fields, strict=True)
    ]
    if extended:
        props = spark_view_properties(view)
        listed = ", ".join(
            f"'{_escaped(k)}' = '{_escaped(v)}'"
            for k, v in sorted(props.items())
            if k not in _SPARK_RESERVED
        )
        query_columns = view.properties.get(QUERY_COLUMN_NAMES)
        names = query_columns.split(",") if query_columns else []
        where = ".".join(_quoted(p) for p in _full_name(ctx, view).split(".")[:2])
        rows += [
            ("", "", ""),
            ("# Detailed View Information", "", ""),
            ("Comment", view.properties.get("comment", ""), ""),
            ("View Catalog and Namespace", where, ""),
            ("View Query Output Columns", "[" + ", ".join(names) + "]", ""),
            ("View Properties", f"[{listed}]", ""),
            ("Created By", view.properties.get("create_engine_version", ""), ""),
        ]
    return ctx.spark.createDataFrame(
        rows,
        T.StructType(
            [T.StructField(n, T.StringType()) for n in ("col_name", "data_type", "comment")]
        ),
    )
