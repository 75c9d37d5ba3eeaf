"""One process-wide pool of threads for concurrent file reads and requests.

Starting threads is not free (about a millisecond each on a loaded machine), and a scan used
to start a pool of its own for every parallel step: the manifests, the delete files, the data
files' sizes. :func:`io_map` runs them all on one pool that lives as long as the process (a
forked child makes its own), at most ``workers`` items of one call at a time. Called from one
of the pool's own threads it runs in the calling thread, so nested calls never wait on a pool
that their callers fill.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

__all__ = ["POOL_THREADS", "io_map"]

POOL_THREADS = 16
"""Threads of the shared pool: the most items all concurrent calls together run at once."""

_PREFIX = "icepark-io"
T = TypeVar("T")
R = TypeVar("R")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_pid = -1


def _shared_pool() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _lock:
        if _pool is None or _pool_pid != os.getpid():  # a forked child has no threads
            _pool = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix=_PREFIX)
            _pool_pid = os.getpid()
        return _pool


def io_map(fn: Callable[[T], R], items: Sequence[T], workers: int = 8) -> Iterator[R]:
    """``map(fn, items)`` with up to ``workers`` items in flight on the shared pool, results
    in the order of ``items``. A consumer that stops early cancels what has not started and
    waits for what has."""
    if len(items) <= 1 or workers <= 1 or threading.current_thread().name.startswith(_PREFIX):
        yield from map(fn, items)
        return
    pool = _shared_pool()
    window = min(workers, len(items))
    pending: deque[Future[R]] = deque(pool.submit(fn, item) for item in items[:window])
    following = iter(items[window:])
    try:
        while pending:
            result = pending.popleft().result()
            for item in following:
                pending.append(pool.submit(fn, item))
                break
            yield result
    finally:
        for future in pending:
            future.cancel()
        wait(pending)
