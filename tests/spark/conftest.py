"""One Spark application for the whole test run (local[2], no UI, 4 shuffle partitions),
reached two ways: the classic session ``spark`` (Py4J), and ``connect_spark``, a Spark
Connect session of the Connect server that runs inside the same application (Spark's
``SparkConnectPlugin``, bound to a free port on 127.0.0.1), as ``remote("local[2]")`` starts
one; ``any_spark`` runs a test on each.

pyspark decides per call whether its functions (``F.col``, ``Column``...) build classic or
Connect objects, by the environment variable ``SPARK_CONNECT_MODE_ENABLED``: the Connect
fixtures set it for the test that uses them and remove it after, so classic and Connect
tests share one worker process and one JVM (a second Spark start would cost ~20 s a worker).

``ICEPARK_TEST_CONNECT=1`` runs every test that asks for ``spark`` on the Connect session
instead (the whole Spark suite over Spark Connect; too long for ``make test``, which runs
the Connect tests of ``tests/spark/connect/``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_MODE = "SPARK_CONNECT_MODE_ENABLED"
_ports: list[int] = []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def connect_mode(on: bool = True) -> Iterator[None]:
    """pyspark's functions build Connect objects (``on``) or classic ones in the block."""
    before = os.environ.get(_MODE)
    if on:
        os.environ[_MODE] = "1"
    else:
        os.environ.pop(_MODE, None)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(_MODE, None)
        else:
            os.environ[_MODE] = before


@pytest.fixture(scope="session")
def spark(_classic_spark: Any) -> Iterator[Any]:
    if os.environ.get("ICEPARK_TEST_CONNECT") != "1":
        yield _classic_spark
        return
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    os.environ[_MODE] = "1"  # for the whole run
    session = ConnectSession.builder.remote(f"sc://127.0.0.1:{_ports[-1]}").getOrCreate()
    _configure(session)
    yield session


def _configure(session: Any) -> None:
    """The classic session's runtime settings (for the same results) and icepark."""
    for key, value in {
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.session.timeZone": "America/New_York",
    }.items():
        session.conf.set(key, value)
    from icepark.spark import register

    register(session)


@pytest.fixture(scope="session")
def _classic_spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime for Spark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.pop(_MODE, None)
    from pyspark.sql import SparkSession

    port = _free_port()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("icepark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.adaptive.enabled", "false")
        # a zone other than UTC: time transforms and filters must not depend on it
        .config("spark.sql.session.timeZone", "America/New_York")
        # the Spark Connect server of connect_spark, in this application
        .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
        .config("spark.connect.grpc.binding.address", "127.0.0.1")
        .config("spark.connect.grpc.binding.port", str(port))
        .getOrCreate()
    )
    _ports.append(port)
    session.sparkContext.setLogLevel("ERROR")
    from icepark.spark import register

    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_url(_classic_spark: Any) -> str:
    """The address of the test run's Spark Connect server."""
    pytest.importorskip("grpc")
    return f"sc://127.0.0.1:{_ports[-1]}"


@pytest.fixture(scope="session")
def _connect_session(connect_url: str) -> Iterator[Any]:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    with connect_mode():
        session = ConnectSession.builder.remote(connect_url).getOrCreate()
        _configure(session)
    yield session
    with connect_mode():
        session.stop()


@pytest.fixture
def connect_spark(_connect_session: Any) -> Iterator[Any]:
    """A Spark Connect session (the test runs in pyspark's Connect mode)."""
    with connect_mode():
        yield _connect_session


@pytest.fixture(params=["classic", "connect"])
def any_spark(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The classic session, then the Connect one."""
    if request.param == "classic":
        with connect_mode(False):
            yield request.getfixturevalue("_classic_spark")
    else:
        session = request.getfixturevalue("_connect_session")
        with connect_mode():
            yield session


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    from icepark.catalog import load_catalog

    cat = load_catalog("spark_tests", type="filesystem", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


@pytest.fixture
def catalog_options(catalog: Any) -> dict[str, str]:
    return {"type": "filesystem", "warehouse": catalog.properties["warehouse"]}
