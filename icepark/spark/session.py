"""Spark sessions for icepark: a session built so that icepark's Python code runs in its
workers, with the ``icepark`` data source registered (the checks themselves are
:mod:`icepark.spark.setup`'s).

::

    from icepark import spark as ispark
    spark = ispark.session()                       # local[*], workers on this interpreter
    spark = ispark.session("spark://host:7077", config={"spark.executor.memory": "4g"})
    spark = ispark.session(remote="sc://host:15002")   # Spark Connect (pyspark-client too)
    spark = ispark.session(remote="local[2]")          # a local Connect server, started here

On Spark Connect the session's Python workers are the server's: the server must have
icepark installed in the interpreter its ``PYSPARK_PYTHON`` / ``spark.pyspark.python``
names (a local server started by ``remote("local[*]")`` gets this interpreter).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote

from icepark.errors import ValidationError
from icepark.spark.datasource import register as register_source
from icepark.spark.runtime import set_log_level
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
    remote: str | None = None,
) -> SparkSession:
    """A Spark session ready for icepark: Python workers (and the driver) on this
    interpreter, the settings icepark's native reads need, UTC session time zone, and the
    ``icepark`` data source registered (unless ``register=False``).

    ``master`` defaults to ``local[*]``; for a cluster (``spark://host:7077``, ``yarn``)
    the executors need icepark installed in the same interpreter path, or set
    ``spark.pyspark.python`` in ``config`` to theirs. ``config`` entries win over the
    defaults. If a session is already running, its settings stay (Spark's rule) and it is
    checked and prepared instead.

    ``remote`` makes a Spark Connect session instead: ``sc://host:15002`` (a running
    server; only runtime settings of ``config`` apply, the server's Python workers must have
    icepark, which is checked) or ``local[N]`` (a Connect server started in this process,
    its workers on this interpreter).

    Args:
        master: the Spark master (default ``local[*]``); not with ``remote``.
        app_name: the Spark application's name.
        config: Spark settings applied when the session is built; they win over icepark's
            defaults (``spark.pyspark.python``, the session time zone...).
        register: whether to register the ``icepark`` data source on the session.
        remote: a Spark Connect address (``sc://host:port``) or ``local[N]``; not with
            ``master``.

    Returns:
        The session (the already running one when there is one), checked and prepared.

    Raises:
        ValidationError: both ``master`` and ``remote`` are given.
        SparkSetupError: the session's Python workers cannot import icepark (naming the
            interpreter and what to set).
    """
    if remote is not None:
        if master is not None:
            raise ValidationError(
                f"Give a master ({master!r}) or a Spark Connect remote ({remote!r}), not both"
            )
        return _connect_session(remote, app_name, config, register)
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
    # (SPARK_REMOTE in the environment makes even this builder's session a Connect one)
    _LOG.info(
        "icepark Spark session %s (workers: %s)",
        spark.conf.get("spark.master", None),
        sys.executable,
    )
    return spark


def _connect_session(
    remote: str, app_name: str, config: Mapping[str, Any] | None, register: bool
) -> SparkSession:
    settings: dict[str, Any] = {"spark.sql.session.timeZone": "UTC", **SESSION_CONF}
    if remote.startswith("local"):
        # the server starts in this process: its workers run this interpreter
        settings["spark.pyspark.python"] = sys.executable
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings.update(config or {})
    builder: Any
    if remote.startswith("sc://") and is_remote():
        # this process already works in Connect mode (pyspark-client always does): a session
        # of the server even where a classic one also runs, which pyspark's builder refuses
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        builder = ConnectSession.builder.remote(remote).appName(app_name)
    else:
        builder = SparkSession.builder.remote(remote).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    prepare_session(spark)
    if register:
        register_source(spark)
    _LOG.info("icepark Spark Connect session %s", remote)
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
    set_log_level(spark, "ERROR")
    try:
        yield spark
    finally:
        spark.stop()
