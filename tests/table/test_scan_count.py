"""``DataScan.count()``: files it must read (a residual, deletes) are read for no column, in
every data file format; the count equals the rows a full read returns and the reference
engine's ``count(*)``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from refengine import RefEngine

import icepark.arrow.deletes as deletes_module
from icepark.catalog import SqlCatalog
from icepark.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("value", pa.int64()),
        pa.field("note", pa.string()),
    ]
)


def _rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": list(ids),
            "category": [["a", "b", None][i % 3] for i in ids],
            "value": [i * 10 for i in ids],
            "note": [f"n{i}" * 20 for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture(params=["parquet", "avro", "orc"])
def table(tmp_path: Path, request: pytest.FixtureRequest) -> Table:
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    properties = {
        "format-version": "2",
        "write.delete.mode": "merge-on-read",
        "write.format.default": request.param,
    }
    table = catalog.create_table("db.t", SCHEMA, partition_by=["category"], properties=properties)
    table.append(_rows(range(0, 300)))
    table.append(_rows(range(300, 600)))
    sevens = ", ".join(str(i) for i in range(0, 600, 7))
    table.delete(f"id in ({sevens})")  # position deletes
    # equality deletes on id (and a new version of each of these rows)
    return table.upsert(_rows(range(590, 620)), on=["id"])


FILTERS = [None, "value > 1234", "note like 'n5%'", "category = 'a' and value < 3000"]


def test_count_reads_no_column_and_equals_a_full_read(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    projected: list[int] = []
    real = deletes_module.read_task

    def spy(*args: Any, **kw: Any) -> Any:
        projected.append(len(kw["projected_schema"].fields))
        return real(*args, **kw)

    assert any(t.delete_files for t in table.scan().plan_files())
    expected = [
        (table.scan(filter=f) if f else table.scan()).to_arrow().num_rows for f in FILTERS
    ]
    monkeypatch.setattr(deletes_module, "read_task", spy)
    counts = [(table.scan(filter=f) if f else table.scan()).count() for f in FILTERS]
    assert counts == expected
    assert expected[0] == len((set(range(600)) - set(range(0, 600, 7))) | set(range(590, 620)))
    assert projected and set(projected) == {0}


@pytest.mark.interop
def test_counts_equal_the_reference_engine(table: Table, refspark: RefEngine) -> None:
    """Java's ``count(*)`` of each filter (its own pruning and delete application, one
    query) against icepark's ``count()``, on every data file format."""
    union = " UNION ALL ".join(
        f"SELECT {i} AS k, count(*) AS n FROM t" + (f" WHERE {f}" if f else "")
        for i, f in enumerate(FILTERS)
    )
    java = refspark.rows(
        f"SELECT n FROM ({union}) ORDER BY k", views={"t": table.metadata_location}
    )
    ours = [(table.scan(filter=f) if f else table.scan()).count() for f in FILTERS]
    assert [r[0] for r in java] == ours
