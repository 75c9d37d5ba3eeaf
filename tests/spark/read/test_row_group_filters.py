"""When parquet-mr may skip row groups on a native read: not when a float or double column
read may hold NaN or zero (its filters drop rows Spark's predicates keep), judged by the
files' own metrics."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import SqlCatalog
from icepark.spark.read.reader import _row_group_filters_agree


@pytest.mark.parametrize(
    ("values", "agree"),
    [
        ([1.5, 2.0, None], True),  # no NaN, zero outside the bounds
        ([-3.0, -0.5], True),
        ([None, None], True),  # nulls only
        ([1.0, math.nan], False),  # a NaN: Spark orders it above everything
        ([-1.0, 2.0], False),  # zero inside the bounds: -0.0 and 0.0 may both be there
        ([0.0, 5.0], False),
    ],
)
def test_judged_by_each_files_metrics(tmp_path: Path, values: list[float], agree: bool) -> None:
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    catalog.create_namespace("db")
    data = pa.table(
        {"id": pa.array([1] * len(values), pa.int64()), "d": pa.array(values, pa.float64())}
    )
    table = catalog.create_table("db.t", data.schema)
    table.append(pa.table({"id": pa.array([7], pa.int64()), "d": pa.array([9.0])}))
    table.append(data)
    tasks = table.scan().plan_files()
    assert len(tasks) == 2
    assert _row_group_filters_agree(table.schema(), tasks) is agree
    # a read without the floating column lets parquet-mr filter whatever the values
    ids_only = table.scan(columns=["id"])
    assert _row_group_filters_agree(ids_only.projected_schema, tasks)
    # without bounds (metrics mode counts) nothing rules NaN or zero out
    table.set_properties({"write.metadata.metrics.default": "counts"})
    table.append(pa.table({"id": pa.array([8], pa.int64()), "d": pa.array([4.0])}))
    assert not _row_group_filters_agree(table.schema(), table.scan().plan_files())
