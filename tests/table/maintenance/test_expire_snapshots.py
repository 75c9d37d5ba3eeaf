"""expire_snapshots on one machine: which snapshots and refs go (Java's rules and defaults),
which files are deleted (exactly those no retained snapshot reaches), dry runs, failures,
gc.enabled, clean_expired_metadata, and the metadata-file hygiene of every commit."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import Catalog, FileSystemCatalog, SqlCatalog
from icepark.errors import CommitStateUnknownError, ValidationError
from icepark.io import PyArrowFileIO
from icepark.planning.reachable import referenced_files
from icepark.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string())])
DAY_MS = 86_400_000


def _rows(ids: range, p: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "p": [p] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


@pytest.fixture
def table(catalog: Catalog) -> Table:
    return catalog.create_table(
        "db.t", SCHEMA, partition_by=["p"], properties={"format-version": "2"}
    )


def _now() -> int:
    return int(time.time() * 1000)


def _files(table: Table) -> set[str]:
    return {str(p) for p in Path(table.location).rglob("*") if p.is_file()}


def _referenced(table: Table) -> set[str]:
    return referenced_files(table.io, table.metadata).paths()


def _history(table: Table, n: int) -> list[int]:
    """``n`` snapshots: appends and overwrites of partition a, appends to b."""
    ids = []
    for i in range(n):
        if i % 3 == 2:
            table.overwrite_partitions(_rows(range(i * 10, i * 10 + 5), "a"))
        else:
            table.append(_rows(range(i * 10, i * 10 + 5), "ab"[i % 2]))
        snapshot = table.current_snapshot()
        assert snapshot is not None
        ids.append(snapshot.snapshot_id)
        time.sleep(0.002)
    return ids


def _check_consistent(table: Table) -> None:
    """Every file that a snapshot of the table reaches exists, and every snapshot reads."""
    missing = [p for p in _referenced(table) if not Path(p).exists()]
    assert missing == []
    for snapshot in table.snapshots():
        table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()


def test_defaults_keep_recent_snapshots(table: Table) -> None:
    _history(table, 4)
    location = table.metadata_location
    result = table.expire_snapshots()  # 5 days by default: nothing is old enough
    assert result.expired_snapshot_ids == () and result.deleted_files == ()
    assert len(table.snapshots()) == 4
    assert table.metadata_location == location


def test_retain_last_and_exact_files(table: Table) -> None:
    ids = _history(table, 8)
    before_files = _files(table)
    sizes = {p: Path(p).stat().st_size for p in before_files}
    referenced_before = _referenced(table)
    expected = table.expire_snapshots(older_than=_now() + 1000, retain_last=3, dry_run=True)
    assert table.metadata_location.endswith(".metadata.json")
    assert len(table.snapshots()) == 8 and _files(table) == before_files
    result = table.expire_snapshots(older_than=_now() + 1000, retain_last=3)
    assert [s.snapshot_id for s in table.snapshots()] == ids[-3:]
    assert set(result.expired_snapshot_ids) == set(ids[:-3])
    assert result.to_dict() | {"dry_run": True} == expected.to_dict()
    deleted = before_files - _files(table)
    # exactly what was referenced before and is not any more, as reported
    assert deleted == referenced_before - _referenced(table)
    assert deleted == set(result.deleted_files)
    assert result.deleted_data_files_count > 0  # the overwritten files of partition a
    assert result.deleted_manifest_lists_count == 5
    assert result.deleted_bytes == sum(sizes[p] for p in deleted)
    assert sum(result.counts().values()) == len(result.deleted_files)
    _check_consistent(table)
    assert table.history()[-1].snapshot_id == ids[-1]


def test_older_than_respects_min_snapshots_property(table: Table) -> None:
    ids = _history(table, 6)
    table.set_properties({"history.expire.min-snapshots-to-keep": "4"})
    table.expire_snapshots(older_than=_now() + 1000)
    assert [s.snapshot_id for s in table.snapshots()] == ids[-4:]
    snap = table.snapshot(ids[-3])
    assert snap is not None
    table.set_properties({"history.expire.min-snapshots-to-keep": "1"})
    table.expire_snapshots(older_than=snap.timestamp_ms)  # keeps ids[-3:] (not older)
    assert [s.snapshot_id for s in table.snapshots()] == ids[-3:]
    table.set_properties({"history.expire.max-snapshot-age-ms": "1"})
    time.sleep(0.01)
    table.expire_snapshots()  # the table's own max age
    assert [s.snapshot_id for s in table.snapshots()] == ids[-1:]
    _check_consistent(table)


def test_branches_and_tags(table: Table) -> None:
    ids = _history(table, 4)
    table.create_branch("keep3", ids[1], min_snapshots_to_keep=3, max_snapshot_age_ms=1)
    table.create_tag("tag", ids[0])
    table.create_tag("old", ids[1], max_ref_age_ms=1)
    table.create_branch("gone", ids[2], max_ref_age_ms=1)
    for i in range(3):
        table.append(_rows(range(100 + i, 101 + i), "b"), branch="keep3")
        time.sleep(0.002)
    keep3 = [s.snapshot_id for s in table.metadata.ancestors_of(table.refs()["keep3"].snapshot_id)]
    time.sleep(0.01)
    result = table.expire_snapshots(older_than=_now() + 1000, retain_last=1)
    assert set(table.refs()) == {"main", "keep3", "tag"}
    assert set(result.removed_refs) == {"old", "gone"}
    remaining = {s.snapshot_id for s in table.snapshots()}
    assert remaining == {ids[-1], ids[0], *keep3[:3]}
    _check_consistent(table)
    assert table.scan(ref="tag").to_arrow().num_rows == 5


def test_snapshot_ids_and_bad_input(table: Table) -> None:
    ids = _history(table, 5)
    table.create_tag("t", ids[1])
    location = table.metadata_location
    files = _files(table)
    with pytest.raises(ValidationError, match=r"Cannot expire .*424242"):
        table.expire_snapshots(snapshot_ids=[ids[0], 424242])
    with pytest.raises(
        ValidationError, match=rf"Cannot expire {ids[1]}\. Still referenced by refs: \['t'\]"
    ):
        table.expire_snapshots(snapshot_ids=[ids[1]])
    with pytest.raises(ValidationError, match="at least 1"):
        table.expire_snapshots(retain_last=0)
    assert table.metadata_location == location and _files(table) == files
    table.expire_snapshots(snapshot_ids=[ids[2]])  # ancestors kept by age stay
    assert [s.snapshot_id for s in table.snapshots()] == [ids[0], ids[1], ids[3], ids[4]]
    _check_consistent(table)


def test_gc_disabled_refuses(table: Table) -> None:
    _history(table, 3)
    table.set_properties({"gc.enabled": "false"})
    location = table.metadata_location
    with pytest.raises(ValidationError, match=r"GC is disabled.*gc\.enabled=false"):
        table.expire_snapshots(older_than=_now() + 1000, retain_last=1)
    assert table.metadata_location == location and len(table.snapshots()) == 3


def test_unknown_commit_outcome_deletes_nothing(
    catalog: Catalog, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history(table, 4)
    files = _files(table)

    def unknown(*_: object) -> None:
        raise CommitStateUnknownError("simulated lost response")

    monkeypatch.setattr(catalog, "_swap_metadata_location", unknown)
    with pytest.raises(CommitStateUnknownError):
        table.expire_snapshots(older_than=_now() + 1000, retain_last=1)
    metadata = {p for p in _files(table) - files if p.endswith(".metadata.json")}
    assert _files(table) - metadata == files  # only the unsent metadata file is new


class _FlakyIO(PyArrowFileIO):
    """Fails to delete every path containing one of ``doomed``."""

    def __init__(self, doomed: tuple[str, ...]) -> None:
        super().__init__({})
        self.doomed = doomed
        self.attempts: dict[str, int] = {}

    def delete(self, location: str) -> None:
        if any(d in location for d in self.doomed):
            self.attempts[location] = self.attempts.get(location, 0) + 1
            raise OSError(f"simulated failure deleting {location}")
        super().delete(location)


def test_failed_deletes_are_reported_not_fatal(table: Table) -> None:
    _history(table, 6)
    flaky = _FlakyIO(("snap-",))
    table.io = flaky
    result = table.expire_snapshots(older_than=_now() + 1000, retain_last=2)
    assert len(table.snapshots()) == 2
    lists = [p for p in result.failed if "snap-" in p]
    assert len(lists) == 4 and result.deleted_manifest_lists_count == 0
    assert all(flaky.attempts[p] == 4 for p in lists)  # tried, then retried 3 times
    assert all("simulated failure" in why for why in result.failed.values())
    assert result.deleted_data_files_count > 0  # the rest went on
    _check_consistent(table)


def test_clean_expired_metadata(table: Table) -> None:
    table.append(_rows(range(3)))
    with table.update_schema() as update:
        update.add_column("extra", "string")
    with table.update_spec() as spec:
        spec.add_field("bucket(4, id)")
    table.overwrite(pa.table({"id": pa.array([9], pa.int64()), "p": ["z"], "extra": ["e"]}))
    # the next commit drops the manifest of spec 0 (only deleted entries left), as Java
    table.append(pa.table({"id": pa.array([10], pa.int64()), "p": ["z"], "extra": ["f"]}))
    assert len(table.schemas()) == 2 and len(table.specs()) == 2
    result = table.expire_snapshots(older_than=_now() + 1000, retain_last=1)
    assert len(table.schemas()) == 2  # kept without clean_expired_metadata
    assert result.expired_snapshot_ids
    table.expire_snapshots(older_than=_now() + 1000, retain_last=1, clean_expired_metadata=True)
    assert list(table.schemas()) == [table.schema().schema_id]
    assert list(table.specs()) == [table.spec().spec_id]
    assert table.scan().to_arrow().num_rows == 2


@pytest.mark.parametrize("kind", ["sql", "filesystem"])
def test_metadata_files_deleted_after_commit(tmp_path: Path, kind: str) -> None:
    """write.metadata.delete-after-commit.enabled and previous-versions-max, as Java: the log
    keeps at most N previous files (read from the new metadata), the rest are deleted."""
    if kind == "sql":
        cat: Catalog = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    else:
        cat = FileSystemCatalog("f", warehouse=str(tmp_path))
    cat.create_namespace("db")
    table = cat.create_table("db.t", SCHEMA)
    for i in range(3):
        table.append(_rows(range(i, i + 1)))
    folder = Path(table.location) / "metadata"

    def metadata_files() -> set[str]:
        return {str(p) for p in folder.glob("*.metadata.json")}

    assert len(metadata_files()) == 4
    # both set in one commit: applied by that commit already
    table.set_properties(
        {
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": "2",
        }
    )
    logged = [e.metadata_file for e in table.metadata.metadata_log]
    assert len(logged) == 2
    assert metadata_files() == {*logged, table.metadata_location}
    table.append(_rows(range(10, 11)))
    logged = [e.metadata_file for e in table.metadata.metadata_log]
    assert len(logged) == 2 and metadata_files() == {*logged, table.metadata_location}
    table.set_properties({"write.metadata.delete-after-commit.enabled": "false"})
    table.append(_rows(range(11, 12)))
    assert len(metadata_files()) == 5  # kept again, log still capped
    assert len(table.metadata.metadata_log) == 2
    assert cat.load_table("db.t").scan().to_arrow().num_rows == 5
