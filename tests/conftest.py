"""Shared fixtures: conformance files, the reference engine, catalogs and services."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import refengine
from hypothesis import HealthCheck, settings
from services import postgres_url, s3_endpoint, s3_with_auth  # noqa: F401  (fixtures)

CONFORMANCE = refengine.SHARED / "conformance"

# Two cores run the suite in parallel with Spark: time limits per example only add noise.
settings.register_profile(
    "icepark", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("icepark")

# The suite's JVMs (Spark sessions, Connect servers, the reference engine, the jobs tests
# start) run small queries for seconds to minutes: without C2's compiles and G1's threads
# they took 17-30% less CPU here (tests/spark/write/test_spark_row_level.py: 227 -> 158
# core-seconds), which on two busy cores is wall time. Set in the environment, so that
# every JVM started below inherits it; a value given from outside wins.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


ROOT = Path(__file__).resolve().parents[1]
# what Spark itself may leave in the working directory
_SPARK_LEFTOVERS = {"spark-warehouse", "metastore_db", "derby.log"}
_ROOT_AT_START = set(p.name for p in ROOT.iterdir()) | _SPARK_LEFTOVERS


def _root_entries() -> set[str]:
    """The project root's entries, without hidden ones (the suite's own caches and service
    logs: .hypothesis, .services, ...)."""
    return {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}


@pytest.fixture(autouse=True)
def _nothing_written_to_the_project_root() -> Iterator[None]:
    """A test (or the server, catalog or engine it drives) that writes into the working
    directory fails: a relative path slipped through somewhere. With two workers sharing the
    folder, the test blamed may be the neighbour of the one that wrote; the names tell."""
    yield
    new = _root_entries() - _ROOT_AT_START
    if new:
        _ROOT_AT_START.update(new)  # reported once
        pytest.fail(f"new entries in {ROOT}: {sorted(map(repr, new))}")


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.skip("../shared/conformance is absent")
    return CONFORMANCE


@pytest.fixture(scope="session")
def refspark() -> Iterator[refengine.RefEngine]:
    """The Java reference engine, one Spark session for the whole test run."""
    if not refengine.available():
        pytest.skip("reference engine not installed (make reference)")
    engine = refengine.RefEngine()
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """Sets print in hash order, which differs between pytest-xdist workers: sort them."""
    if isinstance(val, set | frozenset):
        return "{" + ",".join(sorted(map(repr, val))) + "}"
    return None


JAVA_EQUALITY_FORMATS = ("parquet", "avro", "orc")


@pytest.fixture(scope="session")
def java_equality_deletes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``{format: (warehouse, rows Java reads)}``: the table ``db.eq`` with equality deletes
    written through the reference engine's Java API (tests/java_equality_deletes.py), one per
    data/delete file format. Made once for the whole run, by whichever xdist worker asks
    first (one JVM instead of one per test); the tables are only read."""
    if not refengine.available():
        pytest.skip("the reference engine is not installed")
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if base.name.startswith("popen-gw") else base  # xdist: every worker
    root = shared / "java-equality-deletes"
    done = shared / "java-equality-deletes.json"
    with open(shared / "java-equality-deletes.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            out = subprocess.run(
                [
                    str(refengine.REF_VENV / "bin" / "python"),
                    str(Path(__file__).with_name("java_equality_deletes.py")),
                    str(refengine.SHARED / "reference-iceberg"),
                    str(root),
                    *JAVA_EQUALITY_FORMATS,
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            done.write_text(out.stdout.strip().splitlines()[-1])
    rows = json.loads(done.read_text())
    return {f: (root / f, [tuple(r) for r in rows[f]]) for f in JAVA_EQUALITY_FORMATS}
