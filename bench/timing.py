"""Timing variants side by side in one process."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def alternate(fns: dict[str, Callable[[], Any]], runs: int) -> dict[str, list[float]]:
    """Each function once to warm up, then ``runs`` rounds running them in turn (the order
    rotating each round), so that no variant always runs first or last: the seconds of each
    run, by variant."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(runs):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
    return times
