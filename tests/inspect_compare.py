"""Comparing metadata tables with the reference engine's: every value in one JSON form.

The reference client (``refspark.py``) gives structs as lists, maps as dicts with string keys,
timestamps as naive local time (pyspark's conversion), dates as ISO text, decimals as text and
binary as hex; :func:`ours` puts an Arrow value (``to_pylist`` form) in that form, guided by
its Arrow type, and :func:`theirs` normalises the reference's (local time to UTC). Paths are
compared without ``file:``, which catalogs spell differently. :func:`spark_json` gives a
pyspark value in the reference client's form, so DataFrames compare the same way.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import pyarrow as pa

__all__ = ["assert_same", "ours", "spark_json", "theirs"]


def _timestamp_text(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.isoformat()


def ours(value: Any, t: pa.DataType) -> Any:
    """An Arrow value (``to_pylist`` form) in the reference client's JSON form."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return [ours(value[f.name], f.type) for f in t]
    if pa.types.is_map(t):
        return {str(k): ours(v, t.item_type) for k, v in value}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [ours(v, t.value_type) for v in value]
    if pa.types.is_timestamp(t):
        return _timestamp_text(value)
    if pa.types.is_date(t):
        return value.isoformat()
    if pa.types.is_decimal(t):
        return str(value)
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return bytes(value).hex()
    if isinstance(t, pa.UuidType):
        return str(value)
    return _path(value)


def _path(value: Any) -> Any:
    """A location with or without ``file:``: the current metadata file is spelled as the
    catalog spells it (the reference's Hadoop catalog qualifies it, icepark's does not)."""
    if isinstance(value, str) and value.startswith("file:/"):
        return value[len("file:") :]
    return value


def theirs(value: Any, t: pa.DataType) -> Any:
    """A value of the reference client's JSON (structs as lists, timestamps as local time)."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return [theirs(v, f.type) for v, f in zip(value, t)]
    if pa.types.is_map(t):
        return {str(k): theirs(v, t.item_type) for k, v in value.items()}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [theirs(v, t.value_type) for v in value]
    if pa.types.is_timestamp(t):
        # pyspark turns TimestampType into naive local time of the reference's process
        local = dt.datetime.fromisoformat(value)
        return _timestamp_text(local.astimezone(dt.UTC))
    return _path(value)


def _key(row: list[Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def assert_same(table: pa.Table, reference: dict[str, Any], what: str) -> None:
    assert reference["columns"] == table.column_names, what
    types = [f.type for f in table.schema]
    mine = sorted(
        _key([ours(v, t) for v, t in zip(row.values(), types)]) for row in table.to_pylist()
    )
    refs = sorted(_key([theirs(v, t) for v, t in zip(row, types)]) for row in reference["rows"])
    assert mine == refs, what


def spark_json(value: Any) -> Any:
    """A value pyspark collected, in the reference client's JSON form."""
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): spark_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [spark_json(v) for v in value]
    return value
