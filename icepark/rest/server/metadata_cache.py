"""Table metadata the server has read or written, by metadata file location.

A metadata file is never changed once written (each commit writes a new one and swaps the
catalog's pointer to it), so what a location holds can be kept: a load answers from the
rendered JSON of the current file (one catalog lookup, no file read, no serialization), and
a commit checks its requirements against the parsed metadata of the current file without
reading it again. The catalog's pointer is still looked up on every request, so several
server processes on one database stay consistent: a location another process wrote is
simply a miss, read once.

Bounded: the most recently used ``size`` locations (a 1,000-snapshot table renders to about
0.5 MB), under one lock shared by the server's worker threads.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from icepark.spec.metadata import TableMetadata

__all__ = ["MetadataCache"]


class MetadataCache:
    def __init__(self, size: int = 32) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._parsed: OrderedDict[str, TableMetadata] = OrderedDict()
        self._rendered: OrderedDict[tuple[str, str], str] = OrderedDict()

    def parsed(self, location: str) -> TableMetadata | None:
        with self._lock:
            found = self._parsed.get(location)
            if found is not None:
                self._parsed.move_to_end(location)
            return found

    def remember(self, location: str, metadata: TableMetadata) -> None:
        with self._lock:
            self._parsed[location] = metadata
            self._parsed.move_to_end(location)
            while len(self._parsed) > self._size:
                self._parsed.popitem(last=False)

    def rendered(
        self,
        location: str,
        snapshots: str,
        metadata: Callable[[], TableMetadata],
        to_json: Callable[[TableMetadata, str], dict[str, Any]],
    ) -> str:
        """The JSON text of the metadata at ``location`` in the answer shape ``snapshots``
        (``all`` or ``refs``); ``metadata`` gives the parsed metadata on a miss."""
        key = (location, snapshots)
        with self._lock:
            text = self._rendered.get(key)
            if text is not None:
                self._rendered.move_to_end(key)
                return text
        text = json.dumps(to_json(metadata(), snapshots), ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._rendered[key] = text
            while len(self._rendered) > self._size:
                self._rendered.popitem(last=False)
        return text
