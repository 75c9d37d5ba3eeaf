"""Reading several scan tasks at once, in order, with bounded memory.

:func:`read_ahead` runs ``read(task)`` for up to ``files`` tasks at a time on a small thread
pool and yields their batches in task order, exactly as reading them one after another would.
Each running task hands its batches over through a queue of at most ``batches`` batches, so
memory is bounded by about ``files x (batches + 1)`` batches (plus what the Parquet reader
holds for the row group it decodes), whatever the size of the table.

The threads only wait on IO and hand batches over: decoding runs in pyarrow's own CPU pool
(sized to the machine's cores), which pyarrow releases the GIL for, so reading two files at
once on two cores keeps both busy without oversubscribing them.

If the consumer stops early (a ``limit``), the tasks still running are told to stop and are
waited for before the generator closes; an error in any task is raised in the consumer, at the
point where that task's batches would have come.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa

__all__ = ["DEFAULT_BATCHES", "DEFAULT_FILES", "read_ahead"]

T = TypeVar("T")

DEFAULT_FILES = 2
"""Tasks read at once by default (``read.read-ahead.files``)."""
DEFAULT_BATCHES = 2
"""Batches a task may have ready before it waits for the consumer."""

_END = object()


class _Stopped(Exception):
    """The consumer went away."""


class _Pipe:
    """One task's batches on their way to the consumer."""

    def __init__(self, depth: int, stop: threading.Event) -> None:
        self.queue: queue.Queue[object] = queue.Queue(maxsize=max(depth, 1))
        self.stop = stop

    def put(self, item: object) -> None:
        while True:
            if self.stop.is_set():
                raise _Stopped
            try:
                self.queue.put(item, timeout=0.05)
                return
            except queue.Full:
                continue


def _run(read: Callable[[T], Iterable[pa.RecordBatch]], task: T, pipe: _Pipe) -> None:
    try:
        for batch in read(task):
            pipe.put(batch)
        pipe.put(_END)
    except _Stopped:
        return
    except BaseException as exc:  # handed to the consumer, raised there
        try:
            pipe.put(exc)
        except _Stopped:
            return


def read_ahead(
    tasks: Iterable[T],
    read: Callable[[T], Iterable[pa.RecordBatch]],
    files: int = DEFAULT_FILES,
    batches: int = DEFAULT_BATCHES,
) -> Generator[pa.RecordBatch, None, None]:
    """The batches of ``read(task)`` for each task, in task order, up to ``files`` tasks read
    at once (1: one after the other, in the calling thread)."""
    if files <= 1:
        for task in tasks:
            yield from read(task)
        return
    pending = iter(tasks)
    stop = threading.Event()
    running: deque[tuple[_Pipe, Future[None]]] = deque()
    with ThreadPoolExecutor(max_workers=files, thread_name_prefix="icepark-read") as pool:

        def submit() -> bool:
            for task in pending:
                pipe = _Pipe(batches, stop)
                running.append((pipe, pool.submit(_run, read, task, pipe)))
                return True
            return False

        try:
            while len(running) < files and submit():
                pass
            while running:
                pipe, _ = running[0]
                while True:
                    item = pipe.queue.get()
                    if item is _END:
                        break
                    if isinstance(item, BaseException):
                        raise item
                    assert isinstance(item, pa.RecordBatch)
                    yield item
                running.popleft()
                submit()
        finally:
            stop.set()  # tasks still running give up at their next batch
            close = getattr(pending, "close", None)
            if close is not None:  # a planning generator stops planning
                close()
