"""The web page in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, installed by ``scripts/chromium.sh``) driven by Selenium loads each page
of the demo table from a live uvicorn server, checks that its key elements are displayed,
follows a snapshot link in the ancestry graph and sends the query form, and saves a
screenshot of every page under ``tests/artifacts/ui/`` (ignored by git).

The test skips, naming why, only when Chromium cannot be installed (no root, no package
source) or Selenium is missing (``tests/browser.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import headless_chrome, visible
from ui_support import DEMO_TABLE, serving

from icepark.catalog.base import Catalog
from icepark.ui import create_ui_app
from icepark.ui.urls import table_path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts" / "ui"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chrome() as driver:
        yield driver


@pytest.fixture(scope="module")
def site(demo_catalog: Catalog) -> Iterator[str]:
    with serving(create_ui_app(demo_catalog)) as url:
        yield url


def _shot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1280, min(max(int(height) + 40, 600), 6000))
    assert driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))
    driver.set_window_size(1280, 1000)


PAGES = {
    "catalog": ("/", ["#namespaces", "#tables tr.table-row", "img.health-badge"]),
    "overview": (
        table_path(DEMO_TABLE),
        ["#schema tr.field", "#schema-history", "#specs", "#sort-orders", "#properties"],
    ),
    "history": (
        table_path(DEMO_TABLE, "history"),
        ["#refs", "svg.graph a.node circle", "svg.graph path.picked", "#timeline tr.snapshot"],
    ),
    "files": (
        table_path(DEMO_TABLE, "files"),
        ["svg.histogram g.bin", "svg.histogram g.marker", "#partitions svg.bars", "#deletes svg"],
    ),
    "query": (table_path(DEMO_TABLE, "query"), ["#filter", "#explain"]),
    "health": (table_path(DEMO_TABLE, "health"), ["#health-summary", "#findings .finding"]),
}


def test_each_page_shows_its_key_elements(browser: Any, site: str) -> None:
    for name, (path, selectors) in PAGES.items():
        browser.get(site + path)
        assert "icepark" in browser.title, name
        for css in selectors:
            visible(browser, css)
        if name != "catalog":
            visible(browser, f"#tab-{name}.active")
        _shot(browser, name)
    browser.get(site + "/")
    badges = visible(browser, "img.health-badge")
    loaded = browser.execute_script(
        "return Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
    )
    assert loaded and len(badges) == 2, "a health badge did not load"
    logs = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert not logs, f"browser errors: {logs}"  # e.g. a script the policy refused


def test_snapshot_link_and_query_form(browser: Any, site: str, demo_catalog: Catalog) -> None:
    from selenium.webdriver.common.by import By

    table = demo_catalog.load_table(DEMO_TABLE)
    current = table.current_snapshot()
    assert current is not None
    browser.get(site + table_path(DEMO_TABLE, "history"))
    node = browser.find_element(By.CSS_SELECTOR, f'a.node[data-snapshot="{current.snapshot_id}"]')
    node.click()
    detail = visible(browser, "#detail")[0]
    visible(browser, "svg.graph circle.selected")
    assert f"Snapshot {current.snapshot_id}" in detail.text
    assert "position deletes" in browser.find_element(By.ID, "added-files").text
    _shot(browser, "history-snapshot")

    browser.get(site + table_path(DEMO_TABLE, "query"))
    box = browser.find_element(By.ID, "filter")
    box.send_keys("category = 'a' and id > 650")
    browser.find_element(By.ID, "explain").click()
    visible(browser, "#funnel svg.funnel g.step rect")
    visible(browser, "#residuals")
    ex = table.scan(filter="category = 'a' and id > 650").explain(table.name)
    assert f"{ex.files_to_read:,} files" in browser.find_element(By.ID, "left").text
    _shot(browser, "query-funnel")

    browser.get(site + table_path(DEMO_TABLE, "health"))
    buttons = browser.find_elements(By.CSS_SELECTOR, "button.copy")
    if buttons:  # the script runs under the policy: a click changes the label
        from selenium.webdriver.support.ui import WebDriverWait

        buttons[0].click()
        WebDriverWait(browser, 5).until(lambda _: buttons[0].text != "copy")
        assert buttons[0].text in ("copied", "select and copy")
