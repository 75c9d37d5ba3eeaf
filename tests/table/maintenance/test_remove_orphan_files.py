"""remove_orphan_files on one machine, and the property that upkeep never deletes a file the
table references: expiry and orphan removal over random histories (appends, overwrites,
deletes, branches, tags, expiries), with deletes that fail midway."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.catalog import Catalog, SqlCatalog
from icepark.errors import CommitStateUnknownError, ValidationError
from icepark.io import PyArrowFileIO
from icepark.planning.reachable import referenced_files
from icepark.table import Table
from icepark.table.maintenance.remove_orphan_files import (
    PrefixMismatchError,
    find_orphans,
    orphan_options,
    to_file_uri,
)

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
    return catalog.create_table("db.t", SCHEMA, partition_by=["p"])


def _now() -> int:
    return int(time.time() * 1000)


def _age(root: Path, days: float) -> None:
    moment = time.time() - days * 86400
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (moment, moment))


def _all_referenced(table: Table) -> set[str]:
    """What the table references (a SQL catalog's table has no version hint)."""
    found = referenced_files(table.io, table.metadata, metadata_location=table.metadata_location)
    return {p for p in found.paths() if not p.endswith("version-hint.text")}


def test_strays_and_failed_writes_are_removed(
    catalog: Catalog, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    table.append(_rows(range(5)))
    table.append(_rows(range(5, 9), "b"))
    root = Path(table.location)
    (root / "data" / "p=a" / "stray.parquet").write_bytes(b"x")
    (root / "metadata" / "stray-m0.avro").write_bytes(b"x")
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "note.txt").write_bytes(b"x")
    (root / "data" / ".hidden").write_bytes(b"x")
    (root / "data" / "_SUCCESS").write_bytes(b"x")
    # what a writer killed mid-write leaves: its temporary file (hidden, yet an orphan)
    partial = root / "data" / "p=a" / f".00000-0-x.parquet.{'ab' * 16}.tmp"
    partial.write_bytes(b"x")
    before = {str(p) for p in root.rglob("*") if p.is_file()}

    real = catalog._swap_metadata_location  # type: ignore[attr-defined]

    def unknown(*_: object) -> None:
        raise CommitStateUnknownError("simulated lost response")

    monkeypatch.setattr(catalog, "_swap_metadata_location", unknown)
    with pytest.raises(CommitStateUnknownError):
        table.append(_rows(range(100, 110), "c"))  # its files stay: the outcome is unknown
    monkeypatch.setattr(catalog, "_swap_metadata_location", real)
    failed_write = {str(p) for p in root.rglob("*") if p.is_file()} - before
    assert any(p.endswith(".parquet") for p in failed_write)
    assert any(p.endswith(".avro") for p in failed_write)
    _age(root, 4)

    dry = table.remove_orphan_files(dry_run=True)
    expected = {
        str(root / "data" / "p=a" / "stray.parquet"),
        str(root / "metadata" / "stray-m0.avro"),
        str(root / "elsewhere" / "note.txt"),
        str(partial),
        *failed_write,
    }
    assert set(dry) == expected == set(dry.orphan_file_locations)
    assert dry.orphan_bytes == sum(Path(p).stat().st_size for p in expected)
    assert all(Path(p).exists() for p in expected)

    # only a part of the location
    part = table.remove_orphan_files(location=str(root / "elsewhere"))
    assert list(part) == [str(root / "elsewhere" / "note.txt")]
    result = table.remove_orphan_files()
    assert set(result) == expected - set(part) and result.failed == {}
    left = {str(p) for p in root.rglob("*") if p.is_file()}
    assert left == (before | failed_write) - expected
    assert _all_referenced(table) <= left
    assert table.scan().to_arrow().num_rows == 9


def test_recent_files_are_kept(table: Table) -> None:
    table.append(_rows(range(3)))
    stray = Path(table.location) / "data" / "fresh.parquet"
    stray.write_bytes(b"x")
    assert list(table.remove_orphan_files()) == []  # younger than 3 days
    assert stray.exists()
    time.sleep(0.01)
    assert list(table.remove_orphan_files(older_than=_now(), allow_recent=True)) == [str(stray)]


def test_bad_arguments(catalog: Catalog, table: Table, tmp_path: Path) -> None:
    table.append(_rows(range(3)))
    stray = Path(table.location) / "data" / "x.parquet"
    stray.write_bytes(b"x")
    _age(Path(table.location), 4)
    location = table.metadata_location
    with pytest.raises(ValidationError, match="in the future"):
        table.remove_orphan_files(older_than=_now() + DAY_MS)
    with pytest.raises(ValidationError, match="less than 24 hours ago"):
        table.remove_orphan_files(older_than=_now() - 3_600_000)
    outside = str(tmp_path / "wh" / "db")
    with pytest.raises(ValidationError, match=f"{outside}: it is outside the location"):
        table.remove_orphan_files(location=outside)
    with pytest.raises(ValidationError, match="outside"):
        table.remove_orphan_files(location=table.location + "-other")
    with pytest.raises(ValidationError, match="prefix_mismatch_mode"):
        table.remove_orphan_files(prefix_mismatch_mode="maybe")
    table.set_properties({"gc.enabled": "false"})
    with pytest.raises(ValidationError, match="GC is disabled"):
        table.remove_orphan_files()
    assert stray.exists()
    assert table.metadata_location != location  # only the property was committed


def test_a_file_another_table_wrote_is_kept_when_referenced(catalog: Catalog) -> None:
    """Table ``other`` writes its data files into table ``t``'s location (write.data.path);
    ``t`` commits one of them: orphan removal on ``t`` keeps that one, deletes the other."""
    t = catalog.create_table("db.t", SCHEMA)
    t.append(_rows(range(2)))
    shared = f"{t.location}/data/from-other"
    other = catalog.create_table("db.other", SCHEMA, properties={"write.data.path": shared})
    other.append(_rows(range(10, 12)))
    other.append(_rows(range(20, 22)))
    files = [task.file for task in other.scan().plan_files()]
    assert all(f.file_path.startswith(shared) for f in files)
    with t.transaction() as tx:
        tx.append_files([files[0]])
    _age(Path(t.location), 4)
    removed = t.remove_orphan_files()
    assert list(removed) == [files[1].file_path]
    assert Path(files[0].file_path).exists()
    ids = sorted(t.scan().to_arrow().column("id").to_pylist())
    assert ids in ([0, 1, 10, 11], [0, 1, 20, 21])


def test_file_uris_and_prefix_mismatch(table: Table) -> None:
    s3a = to_file_uri("s3a://bucket/a/b.parquet")
    assert (s3a.scheme, s3a.authority, s3a.path) == ("s3", "bucket", "/a/b.parquet")
    local = to_file_uri("/tmp/x/y")
    assert (local.scheme, local.authority, local.path) == ("file", None, "/tmp/x/y")
    assert to_file_uri("file:///tmp/x//y").path == "/tmp/x/y"
    assert to_file_uri("file:/tmp/x/y").authority is None

    options = orphan_options(table, older_than=_now() - 2 * DAY_MS)
    valid = {"/t/data/f.parquet": [to_file_uri("s3://bucket/t/data/f.parquet")]}
    listed = [
        "s3a://bucket/t/data/f.parquet",  # s3a equals s3 by default
        "s3://other/t/data/f.parquet",  # another authority
        "s3://bucket/t/data/g.parquet",  # not referenced
    ]
    with pytest.raises(PrefixMismatchError, match=r"\(bucket, other\)"):
        find_orphans(listed, valid, options)
    ignore = orphan_options(table, _now() - 2 * DAY_MS, prefix_mismatch_mode="ignore")
    assert find_orphans(listed, valid, ignore) == ["s3://bucket/t/data/g.parquet"]
    delete = orphan_options(table, _now() - 2 * DAY_MS, prefix_mismatch_mode="DELETE")
    assert find_orphans(listed, valid, delete) == sorted(listed[1:])
    equal = orphan_options(table, _now() - 2 * DAY_MS, equal_authorities={"other,third": "bucket"})
    assert find_orphans(listed, valid, equal) == ["s3://bucket/t/data/g.parquet"]
    schemes = orphan_options(table, _now() - 2 * DAY_MS, equal_schemes={"s3a": "s3x"})
    with pytest.raises(PrefixMismatchError, match=r"\(s3, s3x\)"):
        find_orphans(listed[:1], valid, schemes)


# -- the property ------------------------------------------------------------------------------


class _FlakyIO(PyArrowFileIO):
    """Deletes fail at random (seeded): upkeep must carry on and stay safe."""

    def __init__(self, seed: int, rate: float) -> None:
        super().__init__({})
        self.random = random.Random(seed)
        self.rate = rate

    def delete(self, location: str) -> None:
        if self.random.random() < self.rate:
            raise OSError(f"simulated failure deleting {location}")
        super().delete(location)


_OPS = st.sampled_from(
    ["append", "append_b", "overwrite", "delete", "branch", "tag", "branch_append", "expire"]
)


def _apply(table: Table, op: str, i: int, draw: random.Random) -> None:
    p = "abc"[i % 3]
    if op == "append":
        table.append(_rows(range(i * 10, i * 10 + 3), p))
    elif op == "append_b" and "b" in table.refs():
        table.append(_rows(range(i * 10, i * 10 + 2), p), branch="b")
    elif op == "overwrite":
        table.overwrite_partitions(_rows(range(i * 10, i * 10 + 2), p))
    elif op == "delete" and table.current_snapshot() is not None:
        table.delete(f"id < {draw.randint(0, i * 10 + 1)}")
    elif op == "branch" and table.current_snapshot() is not None and "b" not in table.refs():
        table.create_branch("b", min_snapshots_to_keep=draw.randint(1, 3), max_snapshot_age_ms=1)
    elif op == "tag" and table.current_snapshot() is not None:
        name = f"t{i}"
        table.create_tag(name, max_ref_age_ms=draw.choice([1, 10 * DAY_MS]))
    elif op == "branch_append" and "b" in table.refs():
        table.append(_rows(range(i * 10 + 5, i * 10 + 6), p), branch="b")
    elif op == "expire":
        table.expire_snapshots(older_than=_now() + 1000, retain_last=draw.randint(1, 3))


def _check_safe(table: Table) -> None:
    """Every file the table references exists, and every snapshot and ref reads."""
    found = referenced_files(table.io, table.metadata, metadata_location=table.metadata_location)
    missing = [
        p for p in found.paths() if not Path(p).exists() and not p.endswith("version-hint.text")
    ]
    assert missing == []
    for snapshot in table.snapshots():
        table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()


@settings(max_examples=12)
@given(
    ops=st.lists(_OPS, min_size=3, max_size=12),
    seed=st.integers(0, 2**16),
    rate=st.sampled_from([0.0, 0.3, 0.7]),
)
def test_upkeep_never_deletes_a_referenced_file(ops: list[str], seed: int, rate: float) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="icepark-upkeep-"))
    try:
        catalog = SqlCatalog("h", uri=f"sqlite:///{tmp}/c.db", warehouse=str(tmp / "wh"))
        catalog.create_namespace("db")
        table = catalog.create_table("db.t", SCHEMA, partition_by=["p"])
        draw = random.Random(seed)
        table.append(_rows(range(3)))
        (Path(table.location) / "data" / "stray.parquet").write_bytes(b"x")
        table.io = _FlakyIO(seed, rate)
        for i, op in enumerate(ops, start=1):
            _apply(table, op, i, draw)
            _check_safe(table)
        time.sleep(0.002)
        table.expire_snapshots(older_than=_now() + 1000, retain_last=1)
        _check_safe(table)
        table.remove_orphan_files(older_than=_now(), allow_recent=True)
        _check_safe(table)
        # once deletes stop failing, upkeep leaves exactly the referenced files
        table.io = PyArrowFileIO({})
        table.expire_snapshots(older_than=_now() + 1000, retain_last=1)
        time.sleep(0.002)
        table.remove_orphan_files(older_than=_now(), allow_recent=True)
        _check_safe(table)
        on_disk = {
            str(p)
            for p in Path(table.location).rglob("*")
            if p.is_file() and not p.name.startswith(".")
        }
        found = referenced_files(
            table.io, table.metadata, metadata_location=table.metadata_location
        )
        assert on_disk == {p for p in found.paths() if not p.endswith("version-hint.text")}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_manifests_listed_in_metadata_are_refused(catalog: Catalog) -> None:
    """A v1 snapshot from before manifest lists names its manifests in the metadata; the walk
    does not read those, so upkeep refuses rather than take them for orphans."""
    from icepark.errors import UnsupportedOperationError
    from icepark.spec.snapshots import Operation, Snapshot, Summary
    from icepark.spec.updates import AddSnapshotUpdate, SetSnapshotRefUpdate

    table = catalog.create_table("db.v1", SCHEMA, properties={"format-version": "1"})
    manifest = Path(table.location) / "metadata" / "old-manifest.avro"
    manifest.write_bytes(b"x")
    old = Snapshot(
        7, None, 0, _now(), summary=Summary(Operation.APPEND), manifests=(str(manifest),)
    )
    table.commit([], [AddSnapshotUpdate(old), SetSnapshotRefUpdate("main", 7)])
    _age(Path(table.location), 4)
    with pytest.raises(UnsupportedOperationError, match=r"Snapshot 7 .* lists its manifests"):
        table.remove_orphan_files()
    assert manifest.exists()


def test_listing_matched_as_references_stream_by(table: Table) -> None:
    """The listing is indexed by path and the referenced files stream by it: a local
    listing matches Java's ``file:`` references; the referenced locations are the ones
    ``referenced_files`` gives, each at least once."""
    from icepark.planning.reachable import referenced_locations
    from icepark.table.maintenance.remove_orphan_files import ListedFiles

    options = orphan_options(table, older_than=_now() - 2 * DAY_MS)
    listed = ListedFiles(options)
    for i, location in enumerate(["/w/t/a.parquet", "/w/t/b.parquet", "file:/w/t/c.parquet"]):
        listed.add(location, size=i + 10)
    for location in ["file:/w/t/a.parquet", "file:///w/t/c.parquet", "/w/t/x.parquet"]:
        listed.reference(location)
    assert listed.orphans() == ["/w/t/b.parquet"]
    assert listed.sizes_of(["/w/t/b.parquet"]) == {"/w/t/b.parquet": 11}

    table.append(_rows(range(5)))
    table.append(_rows(range(5, 9), "b"))
    table.delete("id = 2")
    table.overwrite(_rows(range(3), "b"), "p = 'b'")
    md, where = table.metadata, table.metadata_location
    streamed = list(referenced_locations(table.io, md, metadata_location=where))
    found = referenced_files(table.io, md, metadata_location=where)
    assert set(streamed) == found.paths() and len(found.paths()) > 10
