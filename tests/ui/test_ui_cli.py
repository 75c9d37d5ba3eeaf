"""``icepark ui``: the command's checks and what it serves, and the page over each kind of
catalog (SQL, file system through ``--catalog`` and ``~/.icepark.yaml``, REST through an
``icepark serve`` app)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from ui_support import DEMO_TABLE, LOCAL, serving

import icepark
from icepark.catalog.base import Catalog
from icepark.cli.main import cli
from icepark.ui import create_ui_app
from icepark.ui.urls import table_path


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``uvicorn.run`` replaced: the app, host and port the command would serve."""
    import uvicorn

    seen: dict[str, Any] = {}

    def run(app: Any, host: str, port: int, **_: Any) -> None:
        seen.update(app=app, host=host, port=port)

    monkeypatch.setattr(uvicorn, "run", run)
    return seen


def _args(catalog: Catalog) -> list[str]:
    props = catalog.properties
    return ["--uri", props["uri"], "--warehouse", props["warehouse"]]


def test_ui_table_prints_its_page_and_serves_the_catalog(
    demo_catalog: Catalog, captured: dict[str, Any]
) -> None:
    result = CliRunner().invoke(cli, [*_args(demo_catalog), "ui", DEMO_TABLE, "--port", "9911"])
    assert result.exit_code == 0, result.output
    assert f"http://127.0.0.1:9911{table_path(DEMO_TABLE)}" in result.output
    assert captured["host"] == "127.0.0.1" and captured["port"] == 9911
    client = TestClient(captured["app"], base_url=LOCAL)
    assert DEMO_TABLE in client.get(table_path(DEMO_TABLE)).text
    assert "other.empty" in client.get("/").text


def test_ui_refuses_a_missing_table_and_a_remote_host(
    demo_catalog: Catalog, captured: dict[str, Any]
) -> None:
    missing = CliRunner().invoke(cli, [*_args(demo_catalog), "ui", "demo.nope"])
    assert missing.exit_code == 1 and "demo.nope" in missing.output
    remote = CliRunner().invoke(cli, [*_args(demo_catalog), "ui", "--host", "0.0.0.0"])
    assert remote.exit_code == 2 and "--allow-remote" in remote.output
    assert not captured
    allowed = CliRunner().invoke(
        cli, [*_args(demo_catalog), "ui", "--host", "0.0.0.0", "--allow-remote"]
    )
    assert allowed.exit_code == 0 and captured["host"] == "0.0.0.0"


def test_ui_answers_the_host_it_is_bound_to(
    demo_catalog: Catalog, captured: dict[str, Any]
) -> None:
    args = [*_args(demo_catalog), "ui", "--host", "10.1.2.3", "--allow-remote"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    for base, status in (
        ("http://10.1.2.3:8765", 200),
        ("http://127.0.0.1", 200),
        ("http://evil.example", 400),
    ):
        assert TestClient(captured["app"], base_url=base).get("/").status_code == status, base
    wildcard = [*_args(demo_catalog), "ui", "--host", "0.0.0.0", "--allow-remote"]
    assert CliRunner().invoke(cli, wildcard).exit_code == 0  # any name reaches every interface
    assert TestClient(captured["app"], base_url="http://box.lan").get("/").status_code == 200


def test_ui_on_a_file_system_catalog_named_in_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, captured: dict[str, Any]
) -> None:
    warehouse = tmp_path / "fs"
    config = tmp_path / "icepark.yaml"
    config.write_text(f"catalogs:\n  lake:\n    type: filesystem\n    warehouse: {warehouse}\n")
    monkeypatch.setenv("ICEPARK_CONFIG", str(config))
    catalog = icepark.load_catalog("lake")
    catalog.create_namespace("fs")
    table = catalog.create_table("fs.t", icepark.schema(("id", "long", True)))
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    result = CliRunner().invoke(cli, ["ui", "--catalog", "lake", "fs.t"])
    assert result.exit_code == 0, result.output
    client = TestClient(captured["app"], base_url=LOCAL)
    for page in ("", "history", "files", "health"):
        assert client.get(table_path("fs.t", page)).status_code == 200, page
    query = client.get(table_path("fs.t", "query") + "?filter=id+%3E+1")
    assert query.status_code == 200 and "3 records" in query.text
    captured.clear()
    global_option = CliRunner().invoke(cli, ["--catalog", "lake", "ui", "fs.t"])
    assert global_option.exit_code == 0, global_option.output
    assert TestClient(captured["app"], base_url=LOCAL).get(table_path("fs.t")).status_code == 200
    captured.clear()
    path = CliRunner().invoke(cli, ["ui", "--catalog", "lake", table.metadata_location])
    assert path.exit_code == 2 and "metadata file" in path.output and not captured


def test_ui_over_a_rest_catalog(demo_catalog: Catalog) -> None:
    from icepark.rest import create_app
    from icepark.rest.catalog import RestCatalog

    with serving(create_app(demo_catalog)) as url:
        rest = RestCatalog("rest", {"uri": url})
        client = TestClient(create_ui_app(rest), base_url=LOCAL)
        catalog_page = client.get("/").text
        assert DEMO_TABLE in catalog_page and "other.empty" in catalog_page
        local = demo_catalog.load_table(DEMO_TABLE)
        history = client.get(table_path(DEMO_TABLE, "history")).text
        for s in local.snapshots():
            assert f'data-snapshot="{s.snapshot_id}"' in history
        for page in ("", "files", "health"):
            assert client.get(table_path(DEMO_TABLE, page)).status_code == 200, page


def test_the_demo_ends_with_the_ui_command(demo_catalog: Catalog) -> None:
    from rich.console import Console

    from icepark.spark.demo import _ui_hint

    console = Console(record=True, width=200)
    _ui_hint(demo_catalog, console)
    text = console.export_text()
    assert "icepark ui demo.events" in text
    assert f"demo.events: http://127.0.0.1:8765{table_path(DEMO_TABLE)}" in text
