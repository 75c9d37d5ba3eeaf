"""The REST server under test: an icepark SQL catalog in a temporary folder, served by uvicorn
on a free loopback port in a thread (:func:`serving`)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from rest_fault_server import FaultServer  # noqa: E402

import icepark  # noqa: E402
from icepark.catalog.base import Catalog  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """Runs ``app`` on 127.0.0.1 in a thread; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def catalog(tmp_path: Path, warehouse: Path) -> Catalog:
    return icepark.load_catalog(uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(warehouse))


@pytest.fixture
def fault(tmp_path: Path) -> Iterator[FaultServer]:
    server = FaultServer(tmp_path / "server")
    server.backend.create_namespace("db")
    try:
        yield server
    finally:
        server.close()
