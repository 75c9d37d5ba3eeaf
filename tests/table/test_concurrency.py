"""Several processes appending to one table at once: every commit lands, with the table's
default commit properties; a conflicting overwrite still fails at once."""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import Catalog, SqlCatalog, load_catalog
from icepark.errors import NoSuchFileError, ValidationError
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


def _row(ident: int, worker: int) -> pa.Table:
    return pa.table({"id": [ident], "worker": pa.array([worker], pa.int32())}, schema=SCHEMA)


def _append_and_expire(uri: str, warehouse: str, ident: int) -> None:
    """Another process: append a row, then expire every snapshot but the new one."""
    table = SqlCatalog("conc", uri=uri, warehouse=warehouse).load_table("db.t")
    table.append(_row(ident, 2))
    table.expire_snapshots(older_than=int(time.time() * 1000) + 1, retain_last=1)


def test_expiry_between_refresh_and_staging_is_a_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append refreshes, then another process appends and expires the snapshot the append
    was about to read (its manifest list is gone): the append retries on the new metadata and
    lands, as if it had lost the commit race (found by the mixed workload, where it surfaced
    as a raw NoSuchFileError)."""
    from icepark.table.write.operations import AppendAction

    uri, warehouse = f"sqlite:///{tmp_path}/c.db", str(tmp_path)
    catalog = SqlCatalog("conc", uri=uri, warehouse=warehouse)
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    ctx = mp.get_context("spawn")
    # the base snapshot is written by another process: this one has not read its list yet
    with ctx.Pool(1) as pool:
        pool.apply(_append_and_expire, (uri, warehouse, 1))
        writer = catalog.load_table("db.t")
        original = AppendAction.stage
        bases: list[int | None] = []

        def stage_after_a_concurrent_expiry(self, base, start):  # type: ignore[no-untyped-def]
            if not bases:
                pool.apply(_append_and_expire, (uri, warehouse, 2))
            bases.append(base.current_snapshot_id)
            return original(self, base, start)

        monkeypatch.setattr(AppendAction, "stage", stage_after_a_concurrent_expiry)
        writer.append(_row(3, 3))
    assert len(bases) == 2 and bases[0] != bases[1]
    ids = catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist()
    assert sorted(ids) == [1, 2, 3]


def test_a_missing_manifest_of_the_current_snapshot_is_not_retried(tmp_path: Path) -> None:
    """The same error on a table that has not moved on is damage, raised at once."""
    catalog = SqlCatalog("conc", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    table.append(_row(1, 1))
    manifest = next(p for p in tmp_path.rglob("metadata/*.avro") if not p.name.startswith("snap-"))
    manifest.unlink()
    location = table.metadata_location
    started = time.monotonic()
    with pytest.raises(NoSuchFileError, match=manifest.name):
        table.delete("id = 1")
    assert time.monotonic() - started < 5
    assert catalog.load_table("db.t").metadata_location == location


def test_vanished_base_past_the_retry_budget_is_a_typed_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No retry left: the vanished manifest list ends the commit as a CommitFailedError (the
    typed conflict), and the files written for it are deleted."""
    from icepark.errors import CommitFailedError
    from icepark.table.write.operations import AppendAction

    uri, warehouse = f"sqlite:///{tmp_path}/c.db", str(tmp_path)
    catalog = SqlCatalog("conc", uri=uri, warehouse=warehouse)
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA, properties={"commit.retry.total-timeout-ms": "0"})
    ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        pool.apply(_append_and_expire, (uri, warehouse, 1))
        writer = catalog.load_table("db.t")
        original = AppendAction.stage

        def stage_after_a_concurrent_expiry(self, base, start):  # type: ignore[no-untyped-def]
            pool.apply(_append_and_expire, (uri, warehouse, 2))
            return original(self, base, start)

        monkeypatch.setattr(AppendAction, "stage", stage_after_a_concurrent_expiry)
        with pytest.raises(CommitFailedError, match="changed while this commit read it"):
            writer.append(_row(3, 3))
    table = catalog.load_table("db.t")
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    referenced = {t.file.file_path.removeprefix("file://") for t in table.scan().plan_files()}
    assert {str(p) for p in tmp_path.rglob("*.parquet")} == referenced
