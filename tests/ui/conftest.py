"""Tables for the web page's tests, built once per session with icepark's own fast paths.

* ``big_catalog``: ``bench.many``, 10,000 data files in 10 manifests of 1,000 entries, as the
  benchmarks' many-files table has (tiny real Parquet files written once, then their entries
  appended again under new paths by ``Transaction.append_files``: metadata only, which is all
  the pages read), partitions skewed, one position delete file, 12 snapshots;
* ``demo_catalog``: ``demo.events``, a small table with every kind of history the pages
  draw: schema and partition spec evolution, a sort order, a tag and a branch with its own
  commit, a write-audit-publish snapshot staged then cherry-picked, a row-level delete.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("jinja2")

from ui_support import BIG_FILES, BIG_TABLE, DEMO_TABLE

import icepark
from icepark.catalog.base import Catalog


def _catalog(folder: Path) -> Catalog:
    return icepark.load_catalog(uri=f"sqlite:///{folder}/catalog.db", warehouse=str(folder))


@pytest.fixture(scope="session")
def big_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    catalog = _catalog(tmp_path_factory.mktemp("ui-big"))
    catalog.create_namespace("bench")
    table = catalog.create_table(
        BIG_TABLE,
        icepark.schema(("id", "long", True), ("part", "int"), ("name", "string")),
        partition_by=["part"],
        properties={
            "format-version": "2",
            "write.delete.mode": "merge-on-read",
            "commit.manifest-merge.enabled": "false",
        },
    )
    ids = pa.array(range(200), pa.int64())
    table.append(
        pa.table(
            {
                "id": ids,
                "part": pa.array([i % 2 for i in range(200)], pa.int32()),
                "name": [f"n{i}" for i in range(200)],
            }
        )
    )
    table.delete("id = 3")  # a position delete file, in partition part=1
    base = next(t.file for t in table.scan().plan_files())
    made = 0
    for chunk in range(10):  # one commit, hence one manifest, per 1,000 files
        batch = []
        for i in range(BIG_FILES // 10):
            part = chunk * 5 + (i % 5 if i % 4 else 0)  # skewed: every 4th file in one partition
            batch.append(
                base.replace(
                    file_path=base.file_path.replace(".parquet", f"-copy{made}.parquet"),
                    partition=(part,),
                    file_size_in_bytes=2_000 + (made * 7919) % 900_000,
                    record_count=10 + made % 90,
                )
            )
            made += 1
        with table.transaction() as tx:
            tx.append_files(batch)
    return catalog


def _events(first: int, n: int, **extra: Any) -> pa.Table:
    columns: dict[str, Any] = {
        "id": pa.array(range(first, first + n), pa.int64()),
        "category": [["a", "b", "c"][i % 3] for i in range(n)],
        "amount": pa.array([float(i) for i in range(n)], pa.float64()),
    }
    columns.update(extra)
    return pa.table(columns)


@pytest.fixture(scope="session")
def demo_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    catalog = _catalog(tmp_path_factory.mktemp("ui-demo"))
    catalog.create_namespace("demo")
    table = catalog.create_table(
        DEMO_TABLE,
        icepark.schema(("id", "long", True), ("category", "string"), ("amount", "double")),
        partition_by=["category"],
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    table.append(_events(0, 300))
    table.append(_events(300, 300))
    table.create_tag("v1")
    with table.update_schema() as u:
        u.add_column("country", "string")
        u.rename_column("amount", "price")
    with table.update_spec() as u:
        u.add_field("bucket(4, id)")
    table.replace_sort_order("id")
    table.append(
        pa.table(
            {
                "id": pa.array(range(600, 700), pa.int64()),
                "category": ["a"] * 100,
                "price": pa.array([1.0] * 100, pa.float64()),
                "country": ["fr"] * 100,
            }
        )
    )
    table.create_branch("audit")
    table.append(_events(700, 50).rename_columns(["id", "category", "price"]), branch="audit")
    table.set_properties({"write.wap.enabled": "true", "owner": "etl"})
    table.append(_events(800, 40).rename_columns(["id", "category", "price"]), wap_id="job-7")
    table.append(_events(900, 40).rename_columns(["id", "category", "price"]), wap_id="job-8")
    table.append(_events(1000, 30).rename_columns(["id", "category", "price"]))
    table.publish_changes("job-7")  # main moved since: a cherry-pick; job-8 stays staged
    table.delete("id < 20")
    catalog.create_namespace("other")
    other = catalog.create_table("other.empty", icepark.schema(("x", "int")))
    assert other.current_snapshot() is None
    return catalog
