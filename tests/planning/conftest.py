"""Shared planning fixtures."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from filter_cases import SCHEMA, rows

from icepark.catalog import SqlCatalog
from icepark.table import Table


@pytest.fixture(scope="session", params=[2, 3])
def evolved_table(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Table:
    """Position deletes (v2) or deletion vectors (v3), equality deletes, two specs."""
    tmp = tmp_path_factory.mktemp("columns")
    rng = random.Random(7)
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp}/c.db", warehouse=str(tmp / "wh"))
    catalog.create_namespace("db")
    t = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["day(tz)", "bucket(3, i)"],
        properties={"format-version": str(request.param), "write.delete.mode": "merge-on-read"},
    )
    for part in range(3):
        t.append(rows(rng, part * 200, 200))
    t.delete("id < 20 or s = 'apple3'")
    with t.update_spec() as u:
        u.add_field("s", "truncate(2)")
    t.append(rows(rng, 600, 200))
    removed = rows(rng, 650, 4)
    t.apply_changes(removed.append_column("_op", pa.array(["D"] * 4)), on=["id"])
    t.delete("id between 640 and 660")
    return t.refresh()
