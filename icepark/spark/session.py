"""Spark sessions for icepark: a correctly configured builder, and the checks icepark makes the
first time it uses a session.

Spark runs Python code (icepark's readers and writers in tasks, the data source) in Python
workers started with ``spark.pyspark.python`` / ``PYSPARK_PYTHON``, by default the ``python3``
on ``PATH``, not the interpreter of the driver. A job started as ``.venv/bin/python job.py``
without an activated venv therefore gets workers without icepark, and every Python task fails
deep inside Spark with ``ModuleNotFoundError: No module named 'icepark'``.
:func:`prepare_session` detects this on local masters before any job runs and says exactly
what to set; :func:`session` builds a session where it cannot happen.

::

    from icepark import spark as ispark
    spark = ispark.session()                       # local[*], workers on this interpreter
    spark = ispark.session("spark://host:7077", config={"spark.executor.memory": "4g"})
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql import SparkSession

from icepark.errors import IceparkError

__all__ = ["SparkSetupError", "check_python_workers", "prepare_session", "session", "spark_session"]

_LOG = logging.getLogger(__name__)

# match Parquet columns to StructFields by field id (``parquet.field.id`` metadata); schemas
# without ids are still matched by name
_SESSION_CONF = {
    "spark.sql.parquet.fieldId.read.enabled": "true",
    "spark.sql.parquet.fieldId.write.enabled": "true",
}


class SparkSetupError(IceparkError):
    """The Spark session cannot run icepark's Python code (see :func:`prepare_session`)."""


_checked: set[int] = set()
_lock = threading.Lock()


def _resolve(executable: str) -> str | None:
    found = shutil.which(executable) if os.sep not in executable else executable
    return os.path.realpath(found) if found else None


def check_python_workers(spark: SparkSession) -> None:
    """On a local master, make sure the Python workers can import icepark; raise
    :class:`SparkSetupError` naming the interpreter and what to set when they cannot.

    Checked once per Spark context. A cluster's executors cannot be checked from here: they
    need icepark installed in the interpreter ``spark.pyspark.python`` names."""
    sc = spark.sparkContext
    with _lock:
        if id(sc) in _checked:
            return
    master = sc.master or ""
    if master.startswith("local"):
        worker = getattr(sc, "pythonExec", None) or os.environ.get("PYSPARK_PYTHON", "python3")
        resolved = _resolve(worker)
        here = os.path.realpath(sys.executable)
        if resolved != here and not _imports_icepark(resolved or worker):
            raise SparkSetupError(
                f"Spark's Python workers run {worker!r} ({resolved or 'not found'}), which "
                f"cannot import icepark; this program runs {sys.executable}. Set "
                f"PYSPARK_PYTHON={sys.executable} in the environment before the session "
                f"starts, or build it with .config('spark.pyspark.python', "
                f"{sys.executable!r}), or use icepark.spark.session()."
            )
    with _lock:
        _checked.add(id(sc))


def _imports_icepark(python: str) -> bool:
    try:
        done = subprocess.run(
            [python, "-c", "import icepark"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def prepare_session(spark: SparkSession) -> None:
    """What icepark does before it first uses a session: check that the Python workers can
    run icepark (:func:`check_python_workers`) and set what native reads need (idempotent;
    harmless for other reads)."""
    check_python_workers(spark)
    for key, value in _SESSION_CONF.items():
        if spark.conf.get(key, None) != value:
            spark.conf.set(key, value)


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
        **_SESSION_CONF,
    }
    settings.update(config or {})
    os.environ.setdefault("PYSPARK_PYTHON", str(settings["spark.pyspark.python"]))
    builder = SparkSession.builder.appName(app_name).master(master or "local[*]")
    for key, value in settings.items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    prepare_session(spark)
    if register:
        from icepark.spark.source import register as register_source

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
