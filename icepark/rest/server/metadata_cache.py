"""Table metadata the server has read or written, by metadata file location.

A metadata file is never changed once written (each commit writes a new one and swaps the
catalog's pointer to it), so what a location holds can be kept: a load answers from the
rendered JSON of the current file (one catalog lookup, no file read, no serialization), and
a commit checks its requirements against the parsed metadata of the current file without
reading it again. The catalog's pointer is still looked up on every request, so several
server processes on one database stay consistent: a location another process wrote is
simply a miss, read once.

Bounded: the most recently used ``size`` locations (a 1,000-snapshot table renders to about
0.5 MB), shared by the server's worker threads (:class:`~icepark.lru.LruCache`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from icepark.lru import LruCache
from icepark.spec.metadata import TableMetadata

__all__ = ["MetadataCache"]


class MetadataCache:
    def __init__(self, size: int = 32) -> None:
        self._parsed: LruCache[str, TableMetadata] = LruCache(size)
        self._rendered: LruCache[tuple[str, str], str] = LruCache(size)

    def parsed(self, location: str) -> TableMetadata | None:
        return self._parsed.get(location)

    def remember(self, location: str, metadata: TableMetadata) -> None:
        self._parsed.put(location, metadata)

    def rendered(
        self,
        location: str,
        snapshots: str,
        metadata: Callable[[], TableMetadata],
        to_json: Callable[[TableMetadata, str], dict[str, Any]],
    ) -> str:
        """The JSON text of the metadata at ``location`` in the answer shape ``snapshots``
        (``all`` or ``refs``); ``metadata`` gives the parsed metadata on a miss."""

        def render() -> str:
            answer = to_json(metadata(), snapshots)
            return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))

        return self._rendered.get_or_compute((location, snapshots), render)
