"""The REST server under test: an icepark SQL catalog in a temporary folder, served by uvicorn
on a free loopback port in a thread (:func:`serving`)."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from rest_fault_server import FaultServer  # noqa: E402
from services import free_port, serving  # noqa: E402,F401  (the tests import them from here)

import icepark  # noqa: E402
from icepark.catalog.base import Catalog  # noqa: E402
from icepark.rest.catalog import RestCatalog  # noqa: E402

# Java's JDBC catalog needs a JDBC driver the reference engine lacks: H2's, from the local
# Maven repository (Derby, which Spark ships, does not speak the catalog's LIMIT queries)
H2_JARS = sorted(Path.home().glob(".m2/repository/com/h2database/h2/*/h2-*.jar"))


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


SERVER = Path(__file__).resolve().parents[1] / "java_rest_server.py"


@dataclass
class JavaServer:
    uri: str
    warehouse: Path

    def catalog(self, **props: str) -> RestCatalog:
        return RestCatalog("java", {"uri": self.uri, "rest-page-size": "2", **props})

    def view(self, namespace: str, table: str) -> dict[str, Any]:
        """Java's own reading of a table (404 raises)."""
        try:
            with urllib.request.urlopen(f"{self.uri}/_test/table/{namespace}/{table}") as answer:
                view: dict[str, Any] = json.loads(answer.read())
                return view
        except urllib.error.HTTPError as exc:
            raise AssertionError(
                f"Java could not read {namespace}.{table}: {exc.read()!r}"
            ) from None

    def java_view(self, namespace: str, view: str) -> dict[str, Any]:
        """Java's own reading of a view through its catalog (404 raises)."""
        return self._get(f"_test/view/{namespace}/{view}")

    def create_java_view(self, namespace: str, view: str, spec: dict[str, Any]) -> None:
        """Java's catalog creates the view (``sql``, ``schema`` as Iceberg schema JSON)."""
        request = urllib.request.Request(
            f"{self.uri}/_test/view/{namespace}/{view}",
            data=json.dumps(spec).encode(),
            method="POST",
        )
        try:
            with urllib.request.urlopen(request) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:
            raise AssertionError(
                f"Java could not create {namespace}.{view}: {exc.read()!r}"
            ) from None

    def metrics_reports(self) -> list[dict[str, Any]]:
        """The metrics reports Java's parser accepted, as Java writes them back."""
        reports: list[dict[str, Any]] = self._get("_test/metrics")["reports"]
        return reports

    def _get(self, path: str) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(f"{self.uri}/{path}") as answer:
                found: dict[str, Any] = json.loads(answer.read())
                return found
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"Java could not read {path}: {exc.read()!r}") from None


@pytest.fixture(scope="session")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaServer]:
    """Java's CatalogHandlers over a JdbcCatalog, one server for the session's tests."""
    import refengine

    if not refengine.available() or not H2_JARS:
        pytest.skip("no reference engine or no H2 JDBC driver in ~/.m2")
    warehouse = tmp_path_factory.mktemp("java-rest")
    log = open(warehouse.parent / "java-rest-server.log", "w")
    proc = subprocess.Popen(
        [
            str(refengine.REF_VENV / "bin" / "python"),
            str(SERVER),
            str(refengine.REF_SCRIPT.parent),
            str(warehouse / "wh"),
            "--prefix",
            "ws",
            "--page-size",
            "2",
            "--jdbc-jar",
            str(H2_JARS[-1]),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=warehouse,  # the JVM leaves files such as derby.log in its working folder
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        log.close()
        pytest.fail(
            f"the Java REST server did not start: {(warehouse.parent / 'java-rest-server.log').read_text()[-2000:]}"
        )
    try:
        yield JavaServer(f"http://127.0.0.1:{line.split()[1]}", warehouse / "wh")
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
