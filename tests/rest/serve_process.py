"""``icepark serve`` in a process of its own, started as a user starts it (the global options
``--uri`` and ``--warehouse``, then ``serve --port``), for the tests that need real server
processes (several on one database behind one address)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.rest.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@contextmanager
def icepark_serve(uri: str, warehouse: Path, log: Path) -> Iterator[str]:
    """``icepark --uri URI --warehouse W serve --port P`` in its own process; yields its URL."""
    with icepark_servers(uri, warehouse, [log]) as urls:
        yield urls[0]


@contextmanager
def icepark_servers(uri: str, warehouse: Path, logs: list[Path]) -> Iterator[list[str]]:
    """One ``icepark serve`` process per log file, on one catalog, all started at once (each
    takes seconds to import its stack); yields their URLs once every one answers."""
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for log in logs:
            port = free_port()
            cmd = [sys.executable, "-c", "from icepark.cli.main import main; main()"]
            cmd += ["--uri", uri, "--warehouse", str(warehouse), "serve", "--port", str(port)]
            urls.append(f"http://127.0.0.1:{port}")
            with open(log, "w") as err:
                procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=ENV))
        deadline = time.monotonic() + 60
        for url, proc, log in zip(urls, procs, logs, strict=True):
            while not _healthy(url):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"icepark serve did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.1)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False
