"""Shared fixtures: conformance files, the reference engine, catalogs and services."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import refengine

from services import postgres_url, s3_endpoint  # noqa: F401  (fixtures)

CONFORMANCE = refengine.SHARED / "conformance"


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
