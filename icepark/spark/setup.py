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

from pyspark.sql import SparkSession

from icepark.errors import IceparkError

__all__ = ["SparkSetupError", "check_python_workers", "prepare_session", "temporary_conf"]

_LOG = logging.getLogger(__name__)

# match Parquet columns to StructFields by field id (``parquet.field.id`` metadata); schemas
# without ids are still matched by name
SESSION_CONF = {
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
    for key, value in SESSION_CONF.items():
        if spark.conf.get(key, None) != value:
            spark.conf.set(key, value)


@contextlib.contextmanager
def temporary_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Session settings changed for the duration of a block (for eager actions only)."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in previous.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
