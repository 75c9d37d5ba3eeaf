"""Reading several files at once: the same rows in the same order as one after another, with
deletes and filters; memory bounded by the read-ahead; errors and early stops handled."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.arrow.readahead import read_ahead
from icepark.catalog import SqlCatalog
from icepark.table import Table


def _batches(task: int, n: int = 3) -> Iterator[pa.RecordBatch]:
    for i in range(n):
        time.sleep(0.002 * ((task * 7 + i) % 3))  # tasks finish out of order
        yield pa.record_batch({"task": [task], "i": [i]})


def _pairs(batches: Iterator[pa.RecordBatch]) -> list[tuple[int, int]]:
    return [(b.column(0)[0].as_py(), b.column(1)[0].as_py()) for b in batches]


@pytest.mark.parametrize("files", [1, 2, 3, 8])
def test_order_is_the_sequential_order(files: int) -> None:
    expected = [(t, i) for t in range(10) for i in range(3)]
    assert _pairs(read_ahead(range(10), _batches, files=files)) == expected


def test_memory_is_bounded_by_the_read_ahead() -> None:
    """Producers never get more than ``batches`` ahead of the consumer, per file."""
    produced = 0
    lock = threading.Lock()

    def read(task: int) -> Iterator[pa.RecordBatch]:
        nonlocal produced
        for i in range(50):
            with lock:
                produced += 1
            yield pa.record_batch({"task": [task], "i": [i]})

    consumed = 0
    for _ in read_ahead(range(20), read, files=3, batches=2):
        consumed += 1
        time.sleep(0.0005)
        with lock:
            ahead = produced - consumed
        # the file being consumed and two more, each at most 2 queued + 1 in hand
        assert ahead <= 3 * (2 + 1) + 1


def test_an_error_is_raised_where_its_batches_would_come() -> None:
    def read(task: int) -> Iterator[pa.RecordBatch]:
        if task == 3:
            raise OSError("disk on fire")
        yield from _batches(task)

    seen: list[tuple[int, int]] = []
    with pytest.raises(OSError, match="disk on fire"):
        for b in read_ahead(range(6), read, files=3):
            seen.extend(_pairs(iter([b])))
    assert seen == [(t, i) for t in range(3) for i in range(3)]


def test_stopping_early_stops_the_readers() -> None:
    started: list[int] = []

    def read(task: int) -> Iterator[pa.RecordBatch]:
        started.append(task)
        for i in range(1000):
            yield pa.record_batch({"task": [task], "i": [i]})

    gen = read_ahead(range(100), read, files=4)
    assert _pairs(iter([next(gen), next(gen)])) == [(0, 0), (0, 1)]
    gen.close()  # waits for the running readers, which give up
    assert len(started) <= 4
    # its reader threads are gone (the process's shared I/O pool, icepark-io, stays)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("icepark-read")]


@pytest.fixture
def table(tmp_path: Path) -> Table:
    catalog = SqlCatalog("r", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string())])
    table = catalog.create_table(
        "db.t",
        schema,
        partition_by=["g"],
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    for start in range(0, 6000, 1000):  # six appends, three partitions each
        ids = list(range(start, start + 1000))
        table.append(pa.table({"id": ids, "g": [f"g{i % 3}" for i in ids]}, schema=schema))
    table.delete("id < 250 or (id > 3000 and id < 3100)")
    return table


@pytest.mark.parametrize("flt", [None, "id > 1500 and g != 'g1'", "g = 'g2'"])
def test_parallel_scan_equals_sequential_scan(table: Table, flt: str | None) -> None:
    scan = table.scan(filter=flt)
    assert any(t.delete_files for t in scan.plan_files()) or flt == "g = 'g2'"
    sequential = scan.to_arrow(read_ahead=1)
    for files in (2, 4, 16):
        parallel = scan.to_arrow(read_ahead=files)
        assert parallel.equals(sequential)  # same rows, same order
        assert scan.count(read_ahead=files) == sequential.num_rows
    batches = list(scan.to_batches(read_ahead=3))
    assert pa.Table.from_batches(batches, schema=scan.arrow_schema).equals(sequential)
