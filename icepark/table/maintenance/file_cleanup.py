"""Deleting many files in parallel, where a failure is reported and never fatal.

What expiry and orphan removal use once they know which files no metadata references (as
Java's ``FileCleanupStrategy.deleteFiles`` and ``BaseSparkAction.deleteFiles``): each path is
deleted on a thread pool, retried up to ``retries`` times unless it is already gone, and a
path that could not be deleted is logged and returned in :attr:`DeleteOutcome.failed` with
the reason. ``on_done(path, ok)`` is called after each path (e.g. to advance a progress bar).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from icepark.errors import NoSuchFileError
from icepark.io import FileIO
from icepark.planning.walk import parallel_map

__all__ = ["DELETE_WORKERS", "DeleteOutcome", "delete_files"]

_LOG = logging.getLogger(__name__)

DELETE_WORKERS = 16
"""Threads deleting files (deletes wait on the file system, not on the CPU)."""


@dataclass
class DeleteOutcome:
    """The paths deleted, and those that were not, with why."""

    deleted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def delete_files(
    io: FileIO,
    paths: Sequence[str],
    *,
    kind: str = "file",
    workers: int = DELETE_WORKERS,
    retries: int = 3,
    on_done: Callable[[str, bool], None] | None = None,
) -> DeleteOutcome:
    """Delete ``paths`` (``kind`` names them in log messages) in parallel; never raises for a
    path that cannot be deleted."""
    lock = threading.Lock()
    outcome = DeleteOutcome()

    def delete(path: str) -> None:
        error: Exception | None = None
        for _ in range(max(retries, 0) + 1):
            try:
                io.delete(path)
                error = None
                break
            except NoSuchFileError as exc:  # gone already: retrying will not help
                error = exc
                break
            except Exception as exc:
                error = exc
        with lock:
            if error is None:
                outcome.deleted.append(path)
            else:
                _LOG.warning("Delete failed for %s %s: %s", kind, path, error)
                outcome.failed[path] = f"{type(error).__name__}: {error}"
        if on_done is not None:
            on_done(path, error is None)

    for _ in parallel_map(delete, list(paths), workers):
        pass
    return outcome
