"""icepark.io.threads: the shared pool behind every concurrent read."""

from __future__ import annotations

import multiprocessing
import threading
import time

from hypothesis import given
from hypothesis import strategies as st

from icepark.io.threads import POOL_THREADS, io_map


@given(st.lists(st.integers(), max_size=60), st.integers(1, 20))
def test_results_in_order(items: list[int], workers: int) -> None:
    assert list(io_map(lambda x: x * 2, items, workers)) == [x * 2 for x in items]


def test_at_most_workers_items_at_a_time() -> None:
    running, most = 0, 0
    lock = threading.Lock()

    def work(x: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.005)
        with lock:
            running -= 1
        return x

    assert list(io_map(work, list(range(40)), 3)) == list(range(40))
    assert 1 < most <= 3


def test_nested_calls_do_not_wait_on_a_full_pool() -> None:
    def outer(x: int) -> int:
        return sum(io_map(lambda y: x * y, list(range(10)), 8))

    items = list(range(POOL_THREADS * 3))  # every pool thread busy with an outer item
    assert list(io_map(outer, items, POOL_THREADS)) == [45 * x for x in items]


def test_an_early_stop_cancels_what_has_not_started() -> None:
    started: list[int] = []

    def work(x: int) -> int:
        started.append(x)
        time.sleep(0.01)
        return x

    results = io_map(work, list(range(100)), 4)
    assert next(results) == 0
    results.close()
    count = len(started)
    time.sleep(0.05)
    assert len(started) == count <= 6  # the window, plus the one submitted after the first


def _in_child(queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    queue.put(list(io_map(lambda x: x + 1, [1, 2, 3, 4], 4)))


def test_a_forked_child_gets_its_own_pool() -> None:
    assert list(io_map(lambda x: x, [1, 2, 3], 3)) == [1, 2, 3]  # the parent's pool exists
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_in_child, args=(queue,))
    child.start()
    assert queue.get(timeout=30) == [2, 3, 4, 5]
    child.join(timeout=30)
    assert child.exitcode == 0
