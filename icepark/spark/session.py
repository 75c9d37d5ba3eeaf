"""Spark sessions for icepark: a session built so that icepark's Python code runs in its
workers, with the ``icepark`` data source registered (the checks themselves are
:mod:`icepark.spark.setup`'s).

::

    from icepark import spark as ispark
    spark = ispark.session()                       # local[*], workers on this interpreter
    spark = ispark.session("spark://host:7077", config={"spark.executor.memory": "4g"})
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql import SparkSession

from icepark.spark.datasource import register as register_source
from icepark.spark.setup import (
    SESSION_CONF,
    SparkSetupError,
    check_python_workers,
    prepare_session,
)

__all__ = ["SparkSetupError", "check_python_workers", "prepare_session", "session", "spark_session"]

_LOG = logging.getLogger(__name__)


def session(
    master: str | None = None,
    app_name: str = "icepark",
    config: Mapping[str, Any] | None = None,
    *,
    register: bool = True,
) -> SparkSession:
    """A Spark session ready for icepark: Python workers (and the driver) on this
    interpreter, the settings icepark's native reads need, UTC session time zone, and the
    ``icepark`` data source registered (unless ``register=False``).

    ``master`` defaults to ``local[*]``; for a cluster (``spark://host:7077``, ``yarn``)
    the executors need icepark installed in the same interpreter path, or set
    ``spark.pyspark.python`` in ``config`` to theirs. ``config`` entries win over the
    defaults. If a session is already running, its settings stay (Spark's rule) and it is
    checked and prepared instead.
    """
    settings: dict[str, Any] = {
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.sql.session.timeZone": "UTC",
        **SESSION_CONF,
    }
    settings.update(config or {})
    os.environ.setdefault("PYSPARK_PYTHON", str(settings["spark.pyspark.python"]))
    builder = SparkSession.builder.appName(app_name).master(master or "local[*]")
    for key, value in settings.items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    prepare_session(spark)
    if register:
        register_source(spark)
    _LOG.info("icepark Spark session %s (workers: %s)", spark.sparkContext.master, sys.executable)
    return spark


@contextlib.contextmanager
def spark_session(master: str | None = None, app: str = "icepark") -> Iterator[SparkSession]:
    """For the command line: the active session when there is one and no ``master`` is asked
    for; otherwise a new one from :func:`session` (workers on this interpreter, console
    progress off), stopped when the block ends."""
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        yield active
        return
    spark = session(master, app_name=app, config={"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()
