"""Headless Chromium for the browser tests (the web page's, tests/ui/; the documentation
site's, tests/docs/): Debian's ``chromium`` and ``chromium-driver``, installed by
``scripts/chromium.sh``, driven by Selenium. A test skips, naming why, only when Chromium
cannot be installed (no root, no package source) or Selenium is missing."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def chromium() -> tuple[str, str]:
    """The browser's and its driver's paths, installing them first if need be."""
    script = ROOT / "scripts" / "chromium.sh"
    install = subprocess.run(
        ["bash", str(script), "install"], capture_output=True, text=True, timeout=900
    )
    if install.returncode != 0:
        pytest.skip(f"headless Chromium could not be installed: {install.stderr.strip()[-300:]}")
    paths = subprocess.run(
        ["bash", str(script), "paths"], capture_output=True, text=True, check=True
    ).stdout.split()
    return paths[0], paths[1]


@contextmanager
def headless_chrome(width: int = 1280, height: int = 1000) -> Iterator[Any]:
    """A Selenium driver of headless Chromium, quit afterwards."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    binary, driver_path = chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace sandbox
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    service = webdriver.ChromeService(executable_path=driver_path)  # no Selenium Manager
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def visible(driver: Any, css: str, timeout: float = 15.0) -> Any:
    """The elements ``css`` finds once one of them is displayed (a click that submits a form
    or follows a link loads the next page while this looks: it waits for it)."""
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + timeout
    while True:
        try:
            found = driver.find_elements(By.CSS_SELECTOR, css)
            if found and any(e.is_displayed() for e in found):
                return found
        except Exception:  # the page changed under the lookup (stale element): look again
            found = []
        if time.monotonic() > deadline:
            assert found, f"no {css} on {driver.current_url}"
            raise AssertionError(f"{css} not displayed on {driver.current_url}")
        time.sleep(0.1)
