"""Snapshot management and write-audit-publish on one machine, through the public API:
rollback, set current, cherry-pick (appends, dynamic overwrites, fast-forward, conflicts),
WAP staging and publishing, fast-forward, replacing refs and their retention."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import Catalog, SqlCatalog
from icepark.errors import ValidationError
from icepark.planning.reachable import referenced_files
from icepark.table import Table
from icepark.table.update.manage_snapshots import CherrypickAncestorCommitError
from icepark.table.update.wap import DuplicateWAPCommitError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string())])


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
        "db.t", SCHEMA, partition_by=["p"], properties={"write.wap.enabled": "true"}
    )


def _ids(table: Table, **scan: object) -> list[int]:
    return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())  # type: ignore[arg-type]


def _current(table: Table) -> int:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return snapshot.snapshot_id


def _unchanged(table: Table, location: str) -> None:
    assert table.metadata_location == location
    assert table.refresh().metadata_location == location


def test_rollback_and_set_current(table: Table) -> None:
    table.append(_rows(range(3)))
    s1 = _current(table)
    time.sleep(0.005)
    table.append(_rows(range(3, 6)))
    s2 = _current(table)
    time.sleep(0.005)
    table.append(_rows(range(6, 9)))
    s3 = _current(table)

    table.rollback_to_snapshot(s2)
    assert _current(table) == s2 and _ids(table) == list(range(6))
    assert [e.snapshot_id for e in table.history()][-1] == s2
    # s3 is no longer an ancestor: rolling back to it is refused, setting it is allowed
    location = table.metadata_location
    with pytest.raises(ValidationError, match=f"{s3}.*not an ancestor"):
        table.rollback_to_snapshot(s3)
    _unchanged(table, location)
    table.set_current_snapshot(s3)
    assert _ids(table) == list(range(9))

    snap2 = table.snapshot(s2)
    assert snap2 is not None
    table.rollback_to_timestamp(snap2.timestamp_ms)  # strictly older: s1
    assert _current(table) == s1
    table.create_tag("t3", s3)
    table.set_current_snapshot(ref="t3")
    assert _current(table) == s3

    location = table.metadata_location
    for bad in (
        lambda: table.rollback_to_snapshot(424242),
        lambda: table.set_current_snapshot(424242),
        lambda: table.set_current_snapshot(ref="nope"),
        lambda: table.set_current_snapshot(s1, ref="t3"),
        lambda: table.set_current_snapshot(),
        lambda: table.rollback_to_timestamp(0),
    ):
        with pytest.raises(ValidationError):
            bad()
    with pytest.raises(ValidationError, match="424242"):
        table.rollback_to_snapshot(424242)
    with pytest.raises(ValidationError, match="'nope'"):
        table.set_current_snapshot(ref="nope")
    _unchanged(table, location)


def test_wap_stages_and_publishes(table: Table) -> None:
    table.append(_rows(range(3)))
    base = _current(table)
    table.append(_rows(range(10, 13), "b"), wap_id="audit-1")
    staged = [s for s in table.snapshots() if (s.summary or {}).get("wap.id") == "audit-1"]
    assert len(staged) == 1 and staged[0].parent_snapshot_id == base
    assert _current(table) == base and _ids(table) == [0, 1, 2]
    assert _ids(table, snapshot_id=staged[0].snapshot_id) == [0, 1, 2, 10, 11, 12]

    # main moved on: publishing cherry-picks the staged append as a new snapshot
    table.append(_rows(range(20, 22)))
    table.publish_changes("audit-1")
    current = table.current_snapshot()
    assert current is not None and current.summary is not None
    assert current.summary["published-wap-id"] == "audit-1"
    assert current.summary["source-snapshot-id"] == str(staged[0].snapshot_id)
    assert current.summary["added-data-files"] == "1"
    assert _ids(table) == [0, 1, 2, 10, 11, 12, 20, 21]

    location = table.metadata_location
    with pytest.raises(DuplicateWAPCommitError, match="audit-1"):
        table.publish_changes("audit-1")
    with pytest.raises(DuplicateWAPCommitError):
        table.cherrypick_snapshot(staged[0].snapshot_id)
    with pytest.raises(ValidationError, match="'nope'"):
        table.publish_changes("nope")
    _unchanged(table, location)


def test_wap_fast_forward_and_refusals(catalog: Catalog, table: Table) -> None:
    table.append(_rows(range(2)))
    table.append(_rows(range(2, 4)), wap_id="w")
    staged = max(table.snapshots(), key=lambda s: s.sequence_number)
    table.publish_changes("w")  # its parent is current: fast-forward, no new snapshot
    assert _current(table) == staged.snapshot_id
    assert len(table.snapshots()) == 2

    plain = catalog.create_table("db.plain", SCHEMA)
    with pytest.raises(ValidationError, match=r"write\.wap\.enabled"):
        plain.append(_rows(range(2)), wap_id="w")
    assert plain.snapshots() == []


def test_cherrypick_append_and_ancestors(table: Table) -> None:
    table.append(_rows(range(2)))
    s1 = _current(table)
    table.create_branch("dev")
    table.append(_rows(range(100, 102), "b"), branch="dev")
    dev = table.refs()["dev"].snapshot_id
    table.append(_rows(range(2, 4)))
    table.cherrypick_snapshot(dev)
    picked = _current(table)
    assert picked != dev
    assert _ids(table) == [0, 1, 2, 3, 100, 101]
    location = table.metadata_location
    with pytest.raises(CherrypickAncestorCommitError, match=f"{dev}.*{picked}"):
        table.cherrypick_snapshot(dev)
    with pytest.raises(CherrypickAncestorCommitError, match=str(s1)):
        table.cherrypick_snapshot(s1)
    with pytest.raises(ValidationError, match="424242"):
        table.cherrypick_snapshot(424242)
    _unchanged(table, location)


def test_cherrypick_dynamic_overwrite_and_conflicts(table: Table) -> None:
    table.append(_rows(range(3), "a"))
    table.append(_rows(range(3, 6), "b"))
    table.overwrite_partitions(_rows(range(50, 52), "a"), wap_id="ow")
    staged = next(s for s in table.snapshots() if (s.summary or {}).get("wap.id") == "ow")
    table.append(_rows(range(6, 8), "c"))  # another partition: no conflict
    table.publish_changes("ow")
    current = table.current_snapshot()
    assert current is not None and current.summary is not None
    assert current.summary["operation"] == "overwrite"
    assert current.summary["source-snapshot-id"] == str(staged.snapshot_id)
    assert _ids(table) == [3, 4, 5, 6, 7, 50, 51]

    # a commit that added files to the partition the overwrite replaces: refused
    table.overwrite_partitions(_rows(range(60, 61), "b"), wap_id="ow2")
    table.append(_rows(range(8, 9), "b"))
    location = table.metadata_location
    with pytest.raises(ValidationError, match="changed partition"):
        table.publish_changes("ow2")
    _unchanged(table, location)

    # a file the overwrite removes is gone from the table: refused
    table.overwrite_partitions(_rows(range(70, 71), "c"), wap_id="ow3")
    table.delete("p = 'c'")  # drops the files of partition c, adds none
    location = table.metadata_location
    with pytest.raises(ValidationError, match="missing required files to delete"):
        table.publish_changes("ow3")
    _unchanged(table, location)
    # the refused attempts left no manifest or manifest list behind
    found = referenced_files(table.io, table.metadata)
    written = {str(p) for p in (Path(table.location) / "metadata").glob("*.avro")}
    assert written == set(found.manifests) | found.manifest_lists


def test_cherrypick_refuses_other_operations(table: Table) -> None:
    table.append(_rows(range(4)))
    table.create_branch("dev")
    table.delete("id = 1", branch="dev")
    table.append(_rows(range(10, 11)))  # main moved: not a fast-forward any more
    location = table.metadata_location
    with pytest.raises(ValidationError, match="not append, dynamic overwrite, or fast-forward"):
        table.cherrypick_snapshot(table.refs()["dev"].snapshot_id)
    _unchanged(table, location)


def test_fast_forward_replace_and_retention(table: Table) -> None:
    table.append(_rows(range(2)))
    s1 = _current(table)
    table.create_branch("b")
    table.append(_rows(range(2, 4)))
    s2 = _current(table)
    table.fast_forward("b", "main")
    assert table.refs()["b"].snapshot_id == s2
    table.fast_forward("new", "main")  # a missing branch is created (as Java)
    assert table.refs()["new"].snapshot_id == s2

    table.append(_rows(range(4, 6)), branch="b")
    table.create_tag("tag", s1)
    location = table.metadata_location
    with pytest.raises(ValidationError, match="Cannot fast-forward: b is not an ancestor of new"):
        table.fast_forward("b", "new")
    with pytest.raises(ValidationError, match="'nope'"):
        table.fast_forward("b", "nope")
    with pytest.raises(ValidationError, match="'tag' is a tag"):
        table.fast_forward("tag", "main")
    _unchanged(table, location)

    table.set_ref_retention("b", min_snapshots_to_keep=3, max_snapshot_age_ms=1000)
    table.replace_branch("b", s1)
    ref = table.refs()["b"]
    assert (ref.snapshot_id, ref.min_snapshots_to_keep, ref.max_snapshot_age_ms) == (s1, 3, 1000)
    table.replace_branch("b", "main")
    assert table.refs()["b"].snapshot_id == s2
    table.set_ref_retention("tag", max_ref_age_ms=5000)
    table.replace_tag("tag", s2)
    tag = table.refs()["tag"]
    assert (tag.snapshot_id, tag.max_ref_age_ms) == (s2, 5000)

    location = table.metadata_location
    with pytest.raises(ValidationError, match="Tags do not support"):
        table.set_ref_retention("tag", min_snapshots_to_keep=2)
    with pytest.raises(ValidationError, match="'tag' is a tag"):
        table.replace_branch("tag", s1)
    with pytest.raises(ValidationError, match="'b' is a branch"):
        table.replace_tag("b", s1)
    with pytest.raises(ValidationError, match="424242"):
        table.replace_tag("tag", 424242)
    with pytest.raises(ValidationError, match="'ghost'"):
        table.replace_branch("ghost", s1)
    # a retention setting that does not exist is named (it was a TypeError of the update)
    with pytest.raises(ValidationError, match=r"branch 'b2' .*\['max_age'\]"):
        table.create_branch("b2", s1, max_age=5)
    with pytest.raises(ValidationError, match=r"tag 't2' .*\['min_snapshots_to_keep'\]"):
        table.create_tag("t2", s1, min_snapshots_to_keep=2)
    _unchanged(table, location)


def test_rollback_rechecks_on_a_concurrent_commit(
    catalog: Catalog, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    table.append(_rows(range(2)))
    s1 = _current(table)
    table.append(_rows(range(2, 4)))
    table.append(_rows(range(4, 6)))
    s2 = next(s.snapshot_id for s in table.snapshots() if s.parent_snapshot_id == s1)
    real = catalog._swap_metadata_location  # type: ignore[attr-defined]
    raced: list[bool] = []

    def racing(*args: object) -> None:
        if not raced:  # another writer rolls back to s1 and commits on top, just before us
            raced.append(True)
            other = catalog.load_table("db.t")
            other.rollback_to_snapshot(s1)
            other.append(_rows(range(10, 11)))
        real(*args)

    monkeypatch.setattr(catalog, "_swap_metadata_location", racing)
    # checked on the table as loaded (s2 is an ancestor), then again on the retry: refused
    with pytest.raises(ValidationError, match=f"{s2}: not an ancestor"):
        table.rollback_to_snapshot(s2)
    assert raced
    assert _ids(catalog.load_table("db.t")) == [0, 1, 10]
