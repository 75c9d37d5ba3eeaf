"""Several processes appending to one table at once: every commit lands."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import SqlCatalog
from icepark.spec.metadata import table_metadata_from_json

WORKERS = 4
APPENDS = 5
ROWS = 10


def _append(uri: str, warehouse: str, worker: int) -> None:
    catalog = SqlCatalog("conc", uri=uri, warehouse=warehouse)
    for i in range(APPENDS):
        table = catalog.load_table("db.t")
        start = (worker * APPENDS + i) * ROWS
        table.append(
            pa.table(
                {
                    "id": pa.array(range(start, start + ROWS), pa.int64()),
                    "worker": pa.array([worker] * ROWS, pa.int32()),
                }
            )
        )


def _run(uri: str, warehouse: Path) -> None:
    catalog = SqlCatalog("conc", uri=uri, warehouse=str(warehouse))
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("worker", pa.int32())])
    catalog.create_table(
        "db.t",
        schema,
        partition_by=["worker"],
        properties={
            "commit.retry.num-retries": "100",
            "commit.retry.min-wait-ms": "10",
            "commit.retry.max-wait-ms": "500",
        },
    )
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append, args=(uri, str(warehouse), w)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    table = catalog.load_table("db.t")
    assert len(table.snapshots()) == WORKERS * APPENDS
    out = table.scan().to_arrow()
    assert sorted(out.column("id").to_pylist()) == list(range(WORKERS * APPENDS * ROWS))
    snap = table.current_snapshot()
    assert snap is not None and snap.summary is not None
    assert snap.summary["total-records"] == str(WORKERS * APPENDS * ROWS)
    for path in (Path(table.location) / "metadata").glob("*.metadata.json"):
        table_metadata_from_json(path.read_bytes())
    # every snapshot's parent is the one before it: a single line of history
    chain = table.metadata.ancestors_of(snap.snapshot_id)
    assert len(chain) == WORKERS * APPENDS


def test_concurrent_appends_sqlite(tmp_path: Path) -> None:
    _run(f"sqlite:///{tmp_path}/c.db", tmp_path / "wh")


@pytest.mark.postgres
def test_concurrent_appends_postgres(tmp_path: Path, postgres_url: str) -> None:
    import sqlalchemy

    engine = sqlalchemy.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(
            sqlalchemy.text(
                "CREATE TABLE IF NOT EXISTS iceberg_tables (catalog_name varchar(255) NOT NULL,"
                " table_namespace varchar(255) NOT NULL, table_name varchar(255) NOT NULL,"
                " metadata_location varchar(1000), previous_metadata_location varchar(1000),"
                " iceberg_type varchar(5), PRIMARY KEY (catalog_name, table_namespace, table_name))"
            )
        )
        conn.execute(sqlalchemy.text("DELETE FROM iceberg_tables WHERE catalog_name = 'conc'"))
        conn.execute(
            sqlalchemy.text(
                "CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (catalog_name varchar(255) NOT NULL,"
                " namespace varchar(255) NOT NULL, property_key varchar(255), property_value varchar(1000),"
                " PRIMARY KEY (catalog_name, namespace, property_key))"
            )
        )
        conn.execute(
            sqlalchemy.text("DELETE FROM iceberg_namespace_properties WHERE catalog_name = 'conc'")
        )
    _run(postgres_url, tmp_path / "wh")
