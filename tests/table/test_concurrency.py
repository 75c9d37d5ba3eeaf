"""Several processes appending to one table at once: every commit lands, with the table's
default commit properties; a conflicting overwrite still fails at once."""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import Catalog, SqlCatalog, load_catalog
from icepark.errors import ValidationError
from icepark.spec.metadata import table_metadata_from_json

WORKERS = 8
APPENDS = 50
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("worker", pa.int32())])


def _catalog(kind: str, uri: str, warehouse: str) -> Catalog:
    if kind == "filesystem":
        return load_catalog("conc", type="filesystem", warehouse=warehouse)
    return SqlCatalog("conc", uri=uri, warehouse=warehouse)


def _append(kind: str, uri: str, warehouse: str, worker: int, start: float) -> list[str]:
    """Load the table once, then append single-row batches in a loop, as a pipeline would."""
    table = _catalog(kind, uri, warehouse).load_table("db.t")
    while time.time() < start:
        time.sleep(0.001)
    errors = []
    for i in range(APPENDS):
        ident = worker * APPENDS + i
        batch = pa.table(
            {"id": pa.array([ident], pa.int64()), "worker": pa.array([worker], pa.int32())},
            schema=SCHEMA,
        )
        try:
            table.append(batch)
        except Exception as exc:  # reported below: every append must land
            errors.append(f"{type(exc).__name__}: {exc}")
    return errors


def _run(kind: str, uri: str, warehouse: Path) -> None:
    catalog = _catalog(kind, uri, str(warehouse))
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)  # the default commit.retry.* properties
    ctx = mp.get_context("spawn")
    start = time.time() + 3  # every process is loaded and starts at once
    with ctx.Pool(WORKERS) as pool:
        jobs = [
            pool.apply_async(_append, (kind, uri, str(warehouse), w, start)) for w in range(WORKERS)
        ]
        errors = [e for job in jobs for e in job.get(timeout=900)]
    assert errors == []
    table = catalog.load_table("db.t")
    total = WORKERS * APPENDS
    assert len(table.snapshots()) == total
    out = table.scan().to_arrow()
    assert sorted(out.column("id").to_pylist()) == list(range(total))
    snap = table.current_snapshot()
    assert snap is not None and snap.summary is not None
    assert snap.summary["total-records"] == str(total)
    assert snap.summary["total-data-files"] == str(total)
    # one line of history: every snapshot's parent is the one committed before it
    assert len(table.metadata.ancestors_of(snap.snapshot_id)) == total
    for path in (Path(table.location) / "metadata").glob("*.metadata.json"):
        table_metadata_from_json(path.read_bytes())
    # nothing written by a lost attempt is left behind: every manifest list is a snapshot's
    lists = {p.name for p in (Path(table.location) / "metadata").glob("snap-*.avro")}
    assert lists == {Path(s.manifest_list or "").name for s in table.snapshots()}


def test_concurrent_appends_sqlite(tmp_path: Path) -> None:
    _run("sql", f"sqlite:///{tmp_path}/c.db", tmp_path / "wh")


def test_concurrent_appends_filesystem(tmp_path: Path) -> None:
    _run("filesystem", "", tmp_path / "wh")


@pytest.mark.postgres
def test_concurrent_appends_postgres(tmp_path: Path, postgres_url: str) -> None:
    import sqlalchemy

    SqlCatalog("conc", uri=postgres_url)  # creates the catalog tables if they are missing
    engine = sqlalchemy.create_engine(postgres_url)
    with engine.begin() as conn:
        for table in ("iceberg_tables", "iceberg_namespace_properties"):
            conn.execute(sqlalchemy.text(f"DELETE FROM {table} WHERE catalog_name = 'conc'"))
    _run("sql", postgres_url, tmp_path / "wh")


def test_conflicting_overwrite_fails_at_once(tmp_path: Path) -> None:
    catalog = SqlCatalog("conc", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA, partition_by=["worker"])
    stale = catalog.load_table("db.t")
    fresh = catalog.load_table("db.t")
    fresh.append(pa.table({"id": [1], "worker": pa.array([7], pa.int32())}, schema=SCHEMA))
    started = time.monotonic()
    replacement = pa.table({"id": [2], "worker": pa.array([7], pa.int32())}, schema=SCHEMA)
    with pytest.raises(ValidationError, match="conflicting files"):
        stale.overwrite(replacement, "worker = 7")
    assert time.monotonic() - started < 5  # no retry loop: the conflict is final
    after = catalog.load_table("db.t")
    assert after.scan().to_arrow().column("id").to_pylist() == [1]
    assert [p for p in tmp_path.rglob("*.parquet") if "worker=7" in str(p)] == [
        Path(after.scan().plan_files()[0].file.file_path)
    ]
