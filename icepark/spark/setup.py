"""Spark sessions for icepark: a correctly configured builder, and the checks icepark makes the
first time it uses a session.

Spark runs Python code (icepark's readers and writers in tasks, the data source) in Python
workers started with ``spark.pyspark.python`` / ``PYSPARK_PYTHON``, by default the ``python3``
on ``PATH``, not the interpreter of the driver. A job started as ``.venv/bin/python job.py``
without an activated venv therefore gets workers without icepark, and every Python task fails
deep inside Spark with ``ModuleNotFoundError: No module named 'icepark'``.
:func:`prepare_session` detects this on local masters before any job runs and says exactly
what to set; :func:`session` builds a session where it cannot happen.

On a Spark Connect session the Python workers are the server's: the first use of a session
runs one tiny Python task on the server (``mapInArrow`` over one row, with a function
pickled by value, so that it runs even where icepark is missing) that reports the worker's
interpreter and whether it imports icepark; when it cannot, :class:`SparkSetupError` names
that interpreter and how to deploy icepark on the server. Checked once per server.

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
from icepark.spark.runtime import is_connect, server_key, session_settings

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


_checked: set[Any] = set()
_lock = threading.Lock()


def _resolve(executable: str) -> str | None:
    found = shutil.which(executable) if os.sep not in executable else executable
    return os.path.realpath(found) if found else None


def check_python_workers(spark: SparkSession) -> None:
    """Make sure the Python workers can import icepark; raise :class:`SparkSetupError`
    naming the interpreter and what to set when they cannot.

    Checked once per Spark application: on a local master, by running the workers'
    interpreter; on a Connect server, by a Python task on it (see the module docstring). A
    classic session's cluster executors cannot be checked from here: they need icepark
    installed in the interpreter ``spark.pyspark.python`` names."""
    key = server_key(spark)
    with _lock:
        if key in _checked:
            return
    if is_connect(spark):
        _check_connect_workers(spark)
    else:
        _check_local_workers(spark)
    with _lock:
        _checked.add(key)


def mark_workers_checked(spark: SparkSession) -> None:
    """Record that ``spark``'s Python workers run icepark without probing them: for code
    that runs in a Python process the server itself started with its workers' interpreter
    and that imported icepark already (a Connect ``foreachBatch`` function: the server
    starts that process with the interpreter of its Python workers, ``PYSPARK_PYTHON``).
    Spares such a process the probe's Spark job (about 1 s) on its first batch."""
    with _lock:
        _checked.add(server_key(spark))


def _check_local_workers(spark: SparkSession) -> None:
    sc = spark.sparkContext
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


# The worker probe's source: compiled into a function of a module that does not exist, so
# that cloudpickle sends it by value and the worker runs it without importing icepark.
_PROBE = """
def probe(batches):
    import importlib
    import sys
    import pyarrow as pa
    for _ in batches:
        pass
    try:
        module = importlib.import_module(MODULE)
        ok, error, version = True, "", str(getattr(module, "__version__", ""))
    except Exception as exc:
        ok, error, version = False, f"{type(exc).__name__}: {exc}", ""
    yield pa.RecordBatch.from_pydict(
        {"python": [sys.executable], "ok": [ok], "error": [error], "version": [version]}
    )
"""
_PROBE_SCHEMA = "python string, ok boolean, error string, version string"


def _worker_probe(module: str) -> Any:
    namespace: dict[str, Any] = {"__name__": "__icepark_worker_probe__", "MODULE": module}
    exec(compile(_PROBE, "<icepark worker probe>", "exec"), namespace)
    return namespace["probe"]


def _check_connect_workers(spark: SparkSession, module: str = "icepark") -> None:
    """Run the probe on the server (``module``: what it imports; the tests name one that
    no interpreter has to see the error)."""
    # the package this module belongs to is loaded already (importing it would reach above)
    version = str(getattr(sys.modules.get("icepark"), "__version__", ""))
    row = spark.range(0, 1, 1, 1).mapInArrow(_worker_probe(module), _PROBE_SCHEMA).first()
    if row is None:  # pragma: no cover - one row in, one row out
        return
    if not row["ok"]:
        raise SparkSetupError(
            f"The Spark Connect server's Python workers run {row['python']}, which cannot "
            f"import {module} ({row['error']}). icepark's readers, writers and data source "
            "run in those workers: install icepark with its spark extra into that "
            "interpreter on the server (and on every executor host), or start the server "
            "with PYSPARK_PYTHON naming an interpreter that has it (a Connect server takes "
            "its Python workers' interpreter from that variable), e.g. "
            "PYSPARK_PYTHON=/opt/venv/bin/python start-connect-server.sh."
        )
    if row["version"] and version and row["version"] != version:
        _LOG.warning(
            "The Spark Connect server's Python workers (%s) have icepark %s, this client %s",
            row["python"],
            row["version"],
            version,
        )


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
    harmless for other reads). A session built by :func:`icepark.spark.session` is prepared
    already; call this on a session built another way before icepark uses it.

    Args:
        spark: the session (classic or Spark Connect); its settings change in place.

    Raises:
        SparkSetupError: the session's Python workers cannot import icepark (naming the
            interpreter they run and what to set).
    """
    check_python_workers(spark)
    current = session_settings(spark, list(SESSION_CONF))
    for key, value in SESSION_CONF.items():
        if current[key] != value:
            spark.conf.set(key, value)


@contextlib.contextmanager
def temporary_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Session settings changed for the duration of a block (for eager actions only)."""
    previous = session_settings(spark, list(settings))
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
