"""Micro-batch planning (the streaming source's offsets and admission control) on one
machine: every appended file exactly once, in commit order, whatever the read limits."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.catalog import Catalog, SqlCatalog
from icepark.errors import NoSuchTableError, ValidationError
from icepark.table import Table
from icepark.table.incremental.micro_batches import (
    START,
    MicroBatchPlanner,
    ReadLimits,
    StreamingOffset,
    StreamSettings,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int32())])


NO_LIMITS = ReadLimits()


def _rows(ids: list[int], parts: int = 1) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "p": pa.array([i % parts for i in ids], pa.int32())},
        schema=SCHEMA,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _table(catalog: Catalog, name: str = "db.t") -> Table:
    return catalog.create_table(name, SCHEMA, partition_by=["p"])


def _drain(
    planner: MicroBatchPlanner, start: StreamingOffset, limits: ReadLimits = NO_LIMITS
) -> tuple[StreamingOffset, list[list[str]]]:
    """Run micro-batches until nothing is new; the file paths of each batch."""
    batches = []
    for _ in range(1000):
        end = planner.latest_offset(start, limits)
        if end == start:
            return start, batches
        batches.append([t.file.file_path for t in planner.plan(start, end)])
        # offsets survive a JSON round trip (Spark checkpoints them)
        start = StreamingOffset.from_json(end.to_json())
    raise AssertionError("the stream never caught up")


def _appended(t: Table) -> list[str]:
    return [task.file.file_path for task in t.incremental_append_scan().plan_files()]


def test_offsets_json() -> None:
    offset = StreamingOffset(5, 3, True)
    assert offset.to_json() == {
        "version": 1,
        "snapshot_id": 5,
        "position": 3,
        "scan_all_files": True,
    }
    assert StreamingOffset.from_json(offset.to_json()) == offset
    with pytest.raises(ValidationError, match="Invalid streaming offset"):
        StreamingOffset.from_json({"snapshot_id": "x"})
    with pytest.raises(ValidationError, match="version 7"):
        StreamingOffset.from_json({**offset.to_json(), "version": 7})


def test_without_a_start_the_current_snapshot_is_read_in_full(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1, 2], parts=2))
    t.delete("id = 1")  # an overwrite before the stream starts does not matter
    t.append(_rows([3]))
    planner = MicroBatchPlanner(catalog.load_table("db.t"), StreamSettings())
    start = planner.initial_offset()
    assert start == START
    end, batches = _drain(planner, start)
    assert end == StreamingOffset(t.current_snapshot().snapshot_id, 2, True)
    assert len(batches) == 1
    # the first batch replayed from its logged end reads the same files, whatever came since
    t.append(_rows([7]))
    assert planner.plan(START, end) == planner.plan(START, StreamingOffset.from_json(end.to_json()))
    assert sorted(x.file.file_path for x in planner.plan(START, end)) == sorted(batches[0])
    full = planner.table.scan()
    assert sorted(batches[0]) == sorted(task.file.file_path for task in full.plan_files())
    t.append(_rows([4]))
    _, later = _drain(planner, end)
    assert later == [_appended(t)[-2:]]


def test_empty_table_then_everything_that_appears(catalog: Catalog) -> None:
    t = _table(catalog)
    planner = MicroBatchPlanner(catalog.load_table("db.t"), StreamSettings())
    start = planner.initial_offset()
    assert start == START
    assert planner.latest_offset(start) == START
    t.append(_rows([1]))
    t.append(_rows([2]))
    _, batches = _drain(planner, start)
    assert sorted(f for b in batches for f in b) == sorted(_appended(t))


def test_read_limits(catalog: Catalog) -> None:
    t = _table(catalog)
    for i in range(3):
        t.append(_rows([10 * i + j for j in range(4)], parts=4))  # 4 files of 1 row
    first = t.snapshots()[0].snapshot_id
    planner = MicroBatchPlanner(t, StreamSettings(start_snapshot_id=first))
    start = planner.initial_offset()
    assert start == StreamingOffset(first, 0, False)
    _, batches = _drain(planner, start, ReadLimits(max_files=5))
    assert [len(b) for b in batches] == [5, 5, 2]
    assert [f for b in batches for f in b] == _appended(t)
    # rows: soft, the file that reaches the limit is taken whole
    _, batches = _drain(planner, start, ReadLimits(max_rows=3))
    assert [len(b) for b in batches] == [3, 3, 3, 3]
    _, batches = _drain(planner, start, ReadLimits(max_files=2, max_rows=3))
    assert [len(b) for b in batches] == [2] * 6
    _, batches = _drain(planner, start, ReadLimits(min_rows=100))
    assert batches == []


def test_delete_and_overwrite_snapshots_stop_unless_skipped(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1, 2], parts=2))
    first = t.current_snapshot().snapshot_id
    t.delete("p = 1")
    deleted = t.current_snapshot().snapshot_id
    t.append(_rows([3]))
    planner = MicroBatchPlanner(t, StreamSettings(start_snapshot_id=first))
    start = planner.initial_offset()
    with pytest.raises(
        ValidationError,
        match=rf"delete snapshot: {deleted}.*streaming-skip-delete-snapshots=true",
    ):
        _drain(planner, start)
    skipping = MicroBatchPlanner(t, StreamSettings(start_snapshot_id=first, skip_delete=True))
    _, batches = _drain(skipping, start)
    assert [f for b in batches for f in b] == _appended(t)
    t.overwrite(_rows([0]), "p = 0")
    over = t.current_snapshot().snapshot_id
    with pytest.raises(ValidationError, match=rf"overwrite snapshot: {over}.*skip-overwrite"):
        _drain(skipping, start)
    both = StreamSettings(start_snapshot_id=first, skip_delete=True, skip_overwrite=True)
    _, batches = _drain(MicroBatchPlanner(t, both), start)
    assert [f for b in batches for f in b] == _appended(t)


def test_start_timestamp_waits_for_a_snapshot(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1]))
    later = t.current_snapshot().timestamp_ms + 60_000
    planner = MicroBatchPlanner(t, StreamSettings(from_timestamp_ms=later))
    start = planner.initial_offset()
    assert start == START
    assert planner.latest_offset(start) == START  # waits, no error
    early = MicroBatchPlanner(t, StreamSettings(from_timestamp_ms=0))
    assert early.initial_offset() == START
    _, batches = _drain(early, START)
    assert batches == [_appended(t)]


def test_bad_starts_and_dropped_tables(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1]))
    with pytest.raises(ValidationError, match=r"snapshot 99 \(start-snapshot-id\)"):
        MicroBatchPlanner(t, StreamSettings(start_snapshot_id=99)).initial_offset()
    with pytest.raises(ValidationError, match="at most one"):
        StreamSettings(start_snapshot_id=1, from_timestamp_ms=1)
    planner = MicroBatchPlanner(catalog.load_table("db.t"), StreamSettings())
    start = planner.initial_offset()
    catalog.drop_table("db.t")
    with pytest.raises(NoSuchTableError, match=r"db\.t.*dropped"):
        planner.latest_offset(start)


def test_available_now_caps_at_the_head(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1]))
    first = t.current_snapshot().snapshot_id
    t.append(_rows([2]))
    planner = MicroBatchPlanner(catalog.load_table("db.t"), StreamSettings(start_snapshot_id=first))
    planner.cap_at_head()
    t.append(_rows([3]))
    _, batches = _drain(planner, planner.initial_offset(), ReadLimits(max_files=1))
    assert [f for b in batches for f in b] == _appended(t)[:2]


def test_branch_and_filter(catalog: Catalog) -> None:
    t = _table(catalog)
    t.append(_rows([1]))
    t.create_branch("audit")
    t.append(_rows([2, 3], parts=2), branch="audit")
    settings_ = StreamSettings(branch="audit", start_snapshot_id=t.snapshots()[0].snapshot_id)
    planner = MicroBatchPlanner(t, settings_)
    _, batches = _drain(planner, planner.initial_offset())
    assert len([f for b in batches for f in b]) == 3
    from icepark.expressions import parse_filter

    filtered = MicroBatchPlanner(
        t,
        StreamSettings(
            branch="audit",
            start_snapshot_id=t.snapshots()[0].snapshot_id,
            row_filter=parse_filter("p = 1"),
        ),
    )
    _, batches = _drain(filtered, filtered.initial_offset())
    assert len([f for b in batches for f in b]) == 1  # pruned by partition


@settings(max_examples=60)
@given(
    commits=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    max_files=st.one_of(st.just(math.inf), st.integers(1, 4)),
    max_rows=st.one_of(st.just(math.inf), st.integers(1, 6)),
    poll_every=st.integers(1, 3),
)
def test_every_file_exactly_once(
    tmp_path_factory: pytest.TempPathFactory,
    commits: list[int],
    max_files: float,
    max_rows: float,
    poll_every: int,
) -> None:
    """Appends interleaved with micro-batches: the batches hold every appended file once
    (the first reads the table in full, the later ones in commit order), and none breaks
    the files limit."""
    base = tmp_path_factory.mktemp("mb")
    cat = SqlCatalog("t", uri=f"sqlite:///{base}/c.db", warehouse=str(base / "wh"))
    cat.create_namespace("db")
    t = _table(cat)
    planner = MicroBatchPlanner(cat.load_table("db.t"), StreamSettings())
    start = planner.initial_offset()
    limits = ReadLimits(max_files=max_files, max_rows=max_rows)
    seen: list[str] = []
    read_in_full: list[int] = []  # the head the first batches read in full
    next_id = 0

    def run(start: StreamingOffset, end: StreamingOffset) -> None:
        batch = [x.file.file_path for x in planner.plan(start, end)]
        assert len(batch) <= max_files
        if end.scan_all_files and not read_in_full:
            read_in_full.append(end.snapshot_id)
        seen.extend(batch)

    for i, files in enumerate(commits):
        ids = list(range(next_id, next_id + files))
        next_id += files
        t.append(_rows(ids, parts=max(files, 1)))
        if i % poll_every == 0:
            end = planner.latest_offset(start, limits)
            if end != start:
                run(start, end)
                start = end
    while (end := planner.latest_offset(start, limits)) != start:
        run(start, end)
        start = end
    appended = _appended(t)
    assert sorted(seen) == sorted(appended) and len(set(seen)) == len(seen)
    # after the table read in full (in manifest order; a soft row limit may split that read
    # over several batches), the files come in commit order
    in_full = len(t.scan(snapshot_id=read_in_full[0]).plan_files()) if read_in_full else 0
    later = len(seen) - in_full
    assert seen[in_full:] == appended[len(appended) - later :]


def _batches(
    planner: MicroBatchPlanner, limits: ReadLimits, in_tasks: bool
) -> list[tuple[StreamingOffset, list[Any]]]:
    """Each micro-batch's end and tasks until the stream catches up; with ``in_tasks`` the
    read tasks plan a snapshot read in full (in this process, pickled as Spark sends them)."""
    import pickle

    out = []
    start = START
    for _ in range(100):
        end = planner.latest_offset(start, limits)
        if end == start:
            return out
        if in_tasks:
            tasks, remote = planner.plan_parts(start, end)
            shares = remote.split(3) if remote is not None else []
            planned = [
                t
                for share in shares
                for t in pickle.loads(pickle.dumps(share)).tasks(
                    planner.table.io, planner.table.metadata
                )
            ]
            out.append((end, planned + tasks))
        else:
            out.append((end, planner.plan(start, end)))
        start = end
    raise AssertionError("the stream never caught up")


@pytest.mark.parametrize(
    "limits",
    [NO_LIMITS, ReadLimits(max_files=7), ReadLimits(max_rows=40)],
    ids=["no-limits", "7-files", "40-rows"],
)
def test_a_snapshot_read_in_full_planned_by_the_read_tasks(
    catalog: Catalog, limits: ReadLimits
) -> None:
    """The first micro-batch's snapshot read in full, planned by its read tasks (the
    streaming source's ``read.data-planning-mode``), gives the offsets and tasks of the
    driver's plan: residuals, delete files, the filter's pruning."""
    from icepark.expressions import parse_filter

    t = catalog.create_table(
        "db.full",
        SCHEMA,
        partition_by=["p"],
        properties={"write.delete.mode": "merge-on-read", "commit.manifest-merge.enabled": "false"},
    )
    for k in range(4):
        t.append(_rows(list(range(k * 20, k * 20 + 20)), parts=4))  # 4 files a commit
    t.delete("id = 3 or id = 45")  # position deletes
    settings = StreamSettings(row_filter=parse_filter("id >= 10 and p < 3"))
    local = _batches(MicroBatchPlanner(t.refresh(), settings), limits, False)
    in_tasks: list[Any] = []
    planner = MicroBatchPlanner(t, settings, remote=lambda manifests: in_tasks.append(1) or True)
    remote = _batches(planner, limits, True)
    assert in_tasks
    assert [end for end, _ in remote] == [end for end, _ in local]
    assert [tasks for _, tasks in remote] == [tasks for _, tasks in local]
    flat = [task for _, tasks in local for task in tasks]
    assert any(task.delete_files for task in flat) and len(flat) == 12
    if limits.max_files == 7:
        assert len(local) == 3
    t.append(_rows([100, 101], parts=4))  # then appends, listed on the driver
    more = planner.latest_offset(remote[-1][0], limits)
    assert [x.file.record_count for x in planner.plan_parts(remote[-1][0], more)[0]] == [1, 1]
