"""A Spark session for icepark's command line: the active one, or a new local one whose
Python workers run this interpreter (so they import the same icepark)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from pyspark.sql import SparkSession

__all__ = ["spark_session"]


@contextlib.contextmanager
def spark_session(master: str | None = None, app: str = "icepark") -> Iterator[SparkSession]:
    """The active session when there is one and no ``master`` is asked for; otherwise a new
    session on ``master`` (default ``local[*]``, with this interpreter for Python workers),
    stopped when the block ends."""
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        yield active
        return
    builder = (
        SparkSession.builder.master(master or "local[*]")
        .appName(app)
        .config("spark.ui.showConsoleProgress", "false")
    )
    if master is None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.pyspark.python", sys.executable)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
