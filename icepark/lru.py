"""A bounded map that drops its least recently used entries first: the one cache behind
icepark's in-process caches (manifest lists, scanned manifests, parsed table metadata,
deleted positions, a stream's file lists, ...).

Everything cached this way is immutable once written (a manifest, a metadata file, a delete
file), so a cache only ever has to bound its size, never to invalidate.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["LruCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """At most ``limit`` in weight (``weigh`` of each value, weighed when it is put; 1 each
    without ``weigh``), the least recently used dropped first. A value heavier than ``limit``
    is not kept, nor is None (it could not be told from a miss). Safe to share between
    threads. :meth:`get_or_compute` computes outside the
    lock, so two threads missing the same key may both compute it; the later is kept."""

    def __init__(self, limit: int, weigh: Callable[[V], int] | None = None) -> None:
        self.limit = limit
        self._weigh = weigh
        self._lock = threading.Lock()
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._total = 0

    def get(self, key: K) -> V | None:
        """The value kept for ``key`` (now the most recently used), or None."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: K, value: V) -> V:
        """Keep ``value`` for ``key`` (replacing what was kept), dropping the least recently
        used entries while over the limit; returns ``value``."""
        if value is None:
            return value
        weight = 1 if self._weigh is None else self._weigh(value)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._total -= old[1]
            if weight <= self.limit:
                self._items[key] = (value, weight)
                self._total += weight
            while self._total > self.limit:
                _, (_, dropped) = self._items.popitem(last=False)
                self._total -= dropped
        return value

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        """The value kept for ``key``; on a miss ``compute()``, kept and returned."""
        found = self.get(key)
        if found is not None:
            return found
        return self.put(key, compute())

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0

    def __contains__(self, key: object) -> bool:
        """Whether a value is kept for ``key`` (not a use of it)."""
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
