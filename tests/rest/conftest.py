from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rest_fault_server import FaultServer


@pytest.fixture
def fault(tmp_path: Path) -> Iterator[FaultServer]:
    server = FaultServer(tmp_path / "server")
    server.backend.create_namespace("db")
    try:
        yield server
    finally:
        server.close()
