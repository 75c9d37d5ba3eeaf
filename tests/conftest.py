"""Shared fixtures: conformance files, the reference engine, catalogs and services."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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
