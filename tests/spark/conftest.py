"""One SparkSession for the whole test run (local[2], no UI, 4 shuffle partitions)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime for Spark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

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
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    from icepark.spark import register

    register(session)
    yield session
    session.stop()


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    from icepark.catalog import load_catalog

    cat = load_catalog("spark_tests", type="filesystem", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


@pytest.fixture
def catalog_options(catalog: Any) -> dict[str, str]:
    return {"type": "filesystem", "warehouse": catalog.properties["warehouse"]}
