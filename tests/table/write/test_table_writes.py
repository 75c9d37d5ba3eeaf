"""Writing, scanning, time travel and commits on one machine, through the public API."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icepark.catalog import Catalog, SqlCatalog
from icepark.errors import CommitFailedError, CommitStateUnknownError, ValidationError
from icepark.expressions import col
from icepark.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("category", pa.string()),
        pa.field("amount", pa.decimal128(10, 2)),
    ]
)


def _rows(n: int, start: int = 0, day0: int = 0) -> pa.Table:
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "ts": pa.array(
                [base + dt.timedelta(days=day0 + i % 5, hours=i % 24) for i in range(n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "category": pa.array([["a", "b", "c"][i % 3] for i in range(n)]),
            "amount": pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2)),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


@pytest.fixture
def table(catalog: Catalog) -> Table:
    return catalog.create_table(
        "db.t", SCHEMA, partition_by=["day(ts)", "category"], sort_by=["id"]
    )


def _ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


def test_append_scan_roundtrip(table: Table) -> None:
    data = _rows(100)
    table.append(data)
    snap = table.current_snapshot()
    assert snap is not None and snap.summary is not None
    summary = dict(snap.summary)
    assert summary["operation"] == "append"
    assert summary["added-records"] == "100"
    assert summary["total-records"] == "100"
    assert int(summary["added-data-files"]) == 15  # 5 days x 3 categories
    assert summary["changed-partition-count"] == "15"
    assert int(summary["total-files-size"]) > 0
    out = table.scan().to_arrow()
    assert out.num_rows == 100
    assert out.sort_by("id").equals(data.sort_by("id"))
    assert table.scan().count() == 100


def test_filters_prune_and_filter(table: Table) -> None:
    table.append(_rows(300))
    scan = table.scan(filter="ts >= '2024-01-04' and category in ('a', 'b')")
    tasks = scan.plan_files()
    assert len(tasks) == 4  # 2 days x 2 categories
    out = scan.to_arrow()
    expected = _rows(300).filter(
        (
            pc.field("ts")
            >= pa.scalar(dt.datetime(2024, 1, 4, tzinfo=dt.UTC), pa.timestamp("us", tz="UTC"))
        )
        & pc.field("category").isin(["a", "b"])
    )
    assert _ids(out) == _ids(expected)
    assert table.scan(filter=col("id") == 7).to_arrow().column("id").to_pylist() == [7]


def test_metrics_prune_files(catalog: Catalog) -> None:
    t = catalog.create_table("db.u", SCHEMA)
    for start in (0, 100, 200):
        t.append(_rows(100, start=start))
    by_metrics = t.scan(filter=col("id") == 107)
    assert len(by_metrics.plan_files()) == 1
    assert by_metrics.to_arrow().column("id").to_pylist() == [107]
    table = t
    assert table.scan(filter="id > 1000").to_arrow().num_rows == 0
    assert table.scan(filter="id < 10", columns=["id"]).to_arrow().column_names == ["id"]


def test_overwrite_by_filter_and_partitions(table: Table) -> None:
    table.append(_rows(150))
    # a filter on a partition column drops whole files; one on id rewrites partial files
    with pytest.raises(ValidationError, match="do not all match the filter"):
        table.overwrite(_rows(3, start=1000), filter="category = 'a'")  # b and c rows too
    assert table.scan().count() == 150
    new_a = _rows(9, start=1000).filter(pc.equal(pc.field("category"), "a"))
    table.overwrite(new_a, filter="category = 'a'")
    out = table.scan().to_arrow()
    assert "a" not in pc.unique(out.filter(pc.field("id") < 1000).column("category")).to_pylist()
    assert out.num_rows == 100 + 3
    summary = table.current_snapshot().summary  # type: ignore[union-attr]
    assert summary is not None and summary.operation.value == "overwrite"
    table.overwrite(None, filter="id < 10")
    assert table.scan(filter="id < 10").count() == 0
    assert table.scan().count() == 103 - len([i for i in range(10) if i % 3 != 0])
    before = table.scan().to_arrow()
    new = _rows(5, start=2000)  # partitions (day0,a) (day1,b) (day2,c) (day3,a) (day4,b)

    def key(row: dict[str, object]) -> tuple[object, object]:
        return (row["ts"].date(), row["category"])  # type: ignore[attr-defined]

    touched = {key(r) for r in new.to_pylist()}
    table.overwrite_partitions(new)
    after = table.scan().to_arrow()
    kept = [r["id"] for r in before.to_pylist() if key(r) not in touched]
    assert sorted(after.column("id").to_pylist()) == sorted(kept + list(range(2000, 2005)))
    assert table.current_snapshot().summary["replace-partitions"] == "true"  # type: ignore[union-attr,index]


def test_time_travel_branches_and_tags(table: Table) -> None:
    table.append(_rows(10))
    first = table.current_snapshot()
    assert first is not None
    table.create_tag("v1")
    table.append(_rows(10, start=10))
    assert table.scan().count() == 20
    assert table.scan(snapshot_id=first.snapshot_id).count() == 10
    assert table.scan(ref="v1").count() == 10
    assert table.scan(as_of=first.timestamp_ms).count() == 10
    assert (
        table.scan(as_of=dt.datetime.fromtimestamp(first.timestamp_ms / 1000, dt.UTC)).count() == 10
    )
    table.create_branch("audit", first.snapshot_id)
    table.append(_rows(5, start=100), branch="audit")
    assert table.scan(ref="audit").count() == 15
    assert table.scan().count() == 20
    assert table.snapshots()[0].snapshot_id == first.snapshot_id
    assert len(table.history()) == 2
    with pytest.raises(ValidationError):
        table.scan(snapshot_id=42).count()
    with pytest.raises(ValidationError):
        table.append(_rows(1), branch="v1")


def test_a_write_to_a_new_branch_starts_from_the_current_snapshot(table: Table) -> None:
    """As Java's (``SnapshotUtil.latestSnapshot``): a branch that does not exist yet is
    created by the write, its first snapshot's parent the table's current snapshot; a delete
    on it sees the current snapshot's rows; main stays as it was."""
    table.append(_rows(10))
    head = table.current_snapshot()
    assert head is not None
    table.append(_rows(5, start=100), branch="fresh")
    fresh = table.metadata.snapshot_by_name("fresh")
    assert fresh is not None and fresh.parent_snapshot_id == head.snapshot_id
    assert table.scan(ref="fresh").count() == 15
    table.delete(col("id") < 3, branch="other")
    assert table.scan(ref="other").count() == 7
    assert table.scan().count() == 10 and table.current_snapshot() == head


def test_transaction_commits_only_on_clean_exit(table: Table) -> None:
    data_dir = Path(table.location) / "data"
    with pytest.raises(RuntimeError):
        with table.transaction() as tx:
            tx.append(_rows(10))
            tx.set_properties(k="v")
            raise RuntimeError("boom")
    assert table.current_snapshot() is None
    assert "k" not in table.refresh().properties
    assert not any(p.is_file() for p in data_dir.rglob("*.parquet"))
    with table.transaction() as tx:
        tx.append(_rows(10))
        tx.append(_rows(10, start=10))
        tx.set_properties(k="v")
    assert table.scan().count() == 20
    assert len(table.snapshots()) == 2
    assert table.properties["k"] == "v"


def test_merge_append(catalog: Catalog) -> None:
    t = catalog.create_table("db.m", SCHEMA, properties={"commit.manifest.min-count-to-merge": "3"})
    from icepark.manifest import read_manifest_list

    for i in range(5):
        t.append(_rows(2, start=i * 2))
    snap = t.current_snapshot()
    assert snap is not None and snap.manifest_list
    manifests = read_manifest_list(t.io.new_input(snap.manifest_list))
    assert len(manifests) < 5
    assert t.scan().count() == 10
    fast = catalog.create_table("db.f", SCHEMA)
    for i in range(3):
        with fast.transaction() as tx:
            tx.append(_rows(2, start=i * 2), merge=False)
    snap = fast.current_snapshot()
    assert snap is not None and len(read_manifest_list(fast.io.new_input(snap.manifest_list))) == 3


def test_concurrent_append_is_retried_and_conflicting_overwrite_fails(catalog: Catalog) -> None:
    a = catalog.create_table("db.c", SCHEMA, partition_by=["category"])
    a.append(_rows(9))
    b = catalog.load_table("db.c")
    a.append(_rows(3, start=100))  # b is now stale
    b.append(_rows(3, start=200))  # retried on fresh metadata
    assert catalog.load_table("db.c").scan().count() == 15
    c = catalog.load_table("db.c")
    a.append(_rows(1, start=300))  # category 'a'
    with pytest.raises(ValidationError, match="conflicting"):
        c.overwrite(_rows(1, start=400), filter="category = 'a'")
    d = catalog.load_table("db.c")
    a.append(_rows(1, start=500))  # category 'a' again
    d.overwrite(_rows(2, start=600).filter(pc.field("category") == "b"), filter="category = 'b'")
    assert catalog.load_table("db.c").scan(filter="category = 'b'").count() == 1


def test_failed_commit_deletes_files_unknown_state_keeps_them(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an append cannot conflict: it retries until the total timeout, whatever num-retries says
    table.set_properties(
        {
            "commit.retry.num-retries": "1",
            "commit.retry.min-wait-ms": "1",
            "commit.retry.max-wait-ms": "5",
            "commit.retry.total-timeout-ms": "300",
        }
    )
    catalog = table.catalog
    assert catalog is not None
    calls = []

    def conflict(*_: object, **__: object) -> None:
        calls.append(1)
        raise CommitFailedError("simulated conflict")

    monkeypatch.setattr(catalog, "_swap_metadata_location", conflict)
    with pytest.raises(CommitFailedError):
        table.append(_rows(10))
    assert len(calls) > 2
    files = [
        p for p in Path(table.location).rglob("*") if p.is_file() and "metadata.json" not in p.name
    ]
    assert files == []

    def unknown(*_: object, **__: object) -> None:
        raise CommitStateUnknownError("simulated network failure")

    monkeypatch.setattr(catalog, "_swap_metadata_location", unknown)
    with pytest.raises(CommitStateUnknownError):
        table.append(_rows(10))
    assert any(p.suffix == ".parquet" for p in Path(table.location).rglob("*"))


def test_append_outlasts_num_retries_and_reuses_its_manifests(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    table.set_properties({"commit.retry.num-retries": "1", "commit.retry.min-wait-ms": "1"})
    catalog = table.catalog
    assert catalog is not None
    real = catalog._swap_metadata_location  # type: ignore[attr-defined]
    lists: list[set[str]] = []

    def flaky(*args: object, **kw: object) -> None:
        folder = Path(table.location) / "metadata"
        lists.append({p.name for p in folder.glob("*.avro")})
        if len(lists) <= 5:
            raise CommitFailedError("simulated conflict")
        real(*args, **kw)

    monkeypatch.setattr(catalog, "_swap_metadata_location", flaky)
    table.append(_rows(10))
    assert len(lists) == 6
    # each attempt wrote one manifest list; the data manifest was written once and reused
    manifests = [{n for n in names if not n.startswith("snap-")} for names in lists]
    assert all(m == manifests[0] and len(m) == 1 for m in manifests)
    assert all(len([n for n in names if n.startswith("snap-")]) == 1 for names in lists)
    assert table.scan().count() == 10
    left = {p.name for p in (Path(table.location) / "metadata").glob("*.avro")}
    assert left == manifests[0] | {Path(table.current_snapshot().manifest_list).name}


def test_bad_data_is_refused_and_leaves_nothing(table: Table) -> None:
    bad = pa.table({"id": pa.array([1, None], pa.int64())})
    with pytest.raises(ValidationError):
        table.append(bad)
    extra = _rows(2).append_column("nope", pa.array([1, 2]))
    with pytest.raises(ValidationError, match="nope"):
        table.append(extra)
    assert table.current_snapshot() is None
    assert not any(p.suffix == ".parquet" for p in Path(table.location).rglob("*"))


def test_streamed_append(table: Table) -> None:
    data = _rows(1000)
    reader = pa.RecordBatchReader.from_batches(SCHEMA, data.to_batches(max_chunksize=100))
    table.append(reader)
    assert table.scan().count() == 1000
    batches = list(table.scan().to_batches())
    assert sum(b.num_rows for b in batches) == 1000


def test_static_table_reads(table: Table) -> None:
    table.append(_rows(20))
    static = Table.from_metadata(table.metadata_location)
    assert static.scan().count() == 20
