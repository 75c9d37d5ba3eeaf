"""The documentation site: built strictly (a broken link, a missing reference, a procedure or
a page left out of the navigation fails), its generated pages complete, and looked at in
headless Chromium (``tests/browser.py``): the home page, a guide and an API page render with
their navigation, and the search box finds ``MERGE INTO`` and ``expire_snapshots``.
Screenshots go to ``tests/artifacts/docs/`` (ignored by git)."""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import headless_chrome, visible

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts" / "docs"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    site = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return site


def _text(page: Path) -> str:
    return re.sub(r"<[^>]+>", " ", page.read_text())


def test_generated_pages_are_complete(built: Path) -> None:
    from icepark.cli.main import cli
    from icepark.spark.sql.extensions import PROCEDURES
    from icepark.spec.properties import ALL

    cli_page = _text(built / "reference" / "cli" / "index.html")
    for verb in cli.commands:
        assert f"icepark {verb}" in cli_page, verb
    assert "icepark serve hash-secret" in cli_page
    assert "--older-than" in cli_page and "--vend-credentials" in cli_page
    properties = _text(built / "reference" / "properties" / "index.html")
    assert [name for name in ALL if name not in properties] == []
    sql = _text(built / "guides" / "sql" / "index.html")
    for name, procedure in PROCEDURES.items():
        assert name in sql
        assert all(column in sql for column, _, _ in procedure.output), name
    api = (built / "reference" / "api" / "table" / "index.html").read_text()
    assert 'id="icepark.table.Table.scan"' in api and 'id="icepark.table.DataScan"' in api


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def served(built: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _shot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def _search(driver: Any, query: str) -> list[str]:
    """The addresses the site's search box lists for ``query``."""
    from selenium.webdriver.common.by import By

    box = visible(driver, "input.md-search__input")[0]
    box.click()
    box.clear()
    box.send_keys(query)
    links = visible(driver, "li.md-search-result__item a", timeout=30)
    _shot(driver, "search-" + re.sub(r"\W+", "-", query))
    found = [a.get_attribute("href") for a in links]
    driver.find_element(By.CSS_SELECTOR, "input.md-search__input").clear()
    return found


def test_pages_render_with_navigation_and_search(served: str) -> None:
    from selenium.webdriver.common.by import By

    with headless_chrome(1280, 1000) as driver:
        driver.get(served + "/")
        assert driver.title.startswith("icepark")
        nav = visible(driver, "nav.md-nav--primary a.md-nav__link")
        labels = {a.text.strip() for a in nav if a.text.strip()}
        assert {"Getting started", "Concepts", "Command line"} <= labels, labels
        _shot(driver, "home")

        driver.get(served + "/guides/sql/")
        assert visible(driver, "article h1")[0].text == "Iceberg SQL"
        active = driver.find_elements(By.CSS_SELECTOR, "nav.md-nav--primary .md-nav__link--active")
        assert any("Iceberg SQL" in a.get_attribute("textContent") for a in active)
        visible(driver, "nav.md-nav--secondary a[href='#procedures']")
        _shot(driver, "guide-sql")

        driver.get(served + "/reference/api/table/")
        heading = visible(driver, "[id='icepark.table.Table.scan']")[0]
        assert "scan" in heading.text
        visible(driver, "nav.md-nav--primary")
        _shot(driver, "api-table")

        merge = _search(driver, "MERGE INTO")
        assert any("/guides/sql/" in href for href in merge), merge
        expire = _search(driver, "expire_snapshots")
        assert any("/guides/upkeep/" in h or "/guides/sql/" in h for h in expire), expire
        assert any("/reference/api/" in h for h in expire), expire
        logs = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert not logs, f"browser errors: {logs}"
