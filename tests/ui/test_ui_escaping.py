"""Everything a page shows from storage is escaped: a table whose column name, property key
and value, partition values, snapshot summary and namespace property hold markup shows it as
text on every page and in every chart, and never as a tag."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient
from ui_support import LOCAL

import icepark
from icepark.catalog.base import Catalog
from icepark.ui import create_ui_app
from icepark.ui.urls import table_path

COLUMN = "<script>alert('column')</script>"
VALUE = "<script>alert('property')</script>"
KEY = '<img src=x onerror="alert(1)">'
PARTITION = "</text><script>alert('partition')</script><text>"
SUMMARY = "<svg onload=alert('summary')>"
PAYLOADS = (COLUMN, VALUE, KEY, PARTITION, SUMMARY)
TABLE = "xss.t"


@pytest.fixture(scope="module")
def evil(tmp_path_factory: pytest.TempPathFactory) -> tuple[Catalog, TestClient]:
    folder = tmp_path_factory.mktemp("ui-xss")
    catalog = icepark.load_catalog("xss", uri=f"sqlite:///{folder}/c.db", warehouse=str(folder))
    catalog.create_namespace("xss")
    table = catalog.create_table(
        TABLE,
        icepark.schema(("id", "long", True), (COLUMN, "string"), ("label", "string")),
        partition_by=["label"],
        properties={"format-version": "2", KEY: VALUE, "write.delete.mode": "merge-on-read"},
    )
    rows = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            COLUMN: ["a", "b", "c"],
            "label": [PARTITION, "b", PARTITION],
        }
    )
    table.append(rows, snapshot_properties={"note": SUMMARY})
    table.delete("id = 1")
    return catalog, TestClient(create_ui_app(catalog), base_url=LOCAL)


def _pages(catalog: Catalog) -> list[str]:
    table = catalog.load_table(TABLE)
    snaps = [s.snapshot_id for s in table.snapshots()]
    history = table_path(TABLE, "history")
    query = table_path(TABLE, "query")
    return [
        "/",
        table_path(TABLE),
        history,
        *(f"{history}?snapshot={sid}" for sid in snaps),
        table_path(TABLE, "files"),
        f"{query}?filter=id+%3E+0",
        f"{query}?filter=%22{COLUMN}%22+%3D+%27x%27",
        f"{query}?filter={VALUE}",  # a filter that does not parse: an error page
        table_path(TABLE, "health"),
        table_path(TABLE, "badge.svg"),
        table_path("xss.<script>nope</script>"),  # an unknown table named with markup
    ]


def test_markup_from_storage_is_escaped_on_every_page(evil: tuple[Catalog, TestClient]) -> None:
    catalog, client = evil
    seen = {p: 0 for p in PAYLOADS}
    for url in _pages(catalog):
        response = client.get(url)
        assert response.status_code in (200, 400, 404), (url, response.status_code)
        body = response.text
        for payload in PAYLOADS:
            assert payload not in body, f"{payload!r} unescaped on {url}"
            seen[payload] += body.count(_escaped(payload))
        # the only script element is the page's own; no event handler attribute was injected
        assert re.findall(r"<script[^>]*>", body) in ([], ['<script src="/ui.js">']), url
        assert not re.search(r"<[a-z]+[^>]*\son\w+=", body, re.I), url
    assert all(seen.values()), f"payloads never shown: {[p for p, n in seen.items() if not n]}"


def _escaped(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


def test_fix_commands_quote_the_table_name_for_the_shell(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A fix command copied from the health page must not run what a table name holds."""
    import shlex

    from icepark.table.maintenance.doctor import diagnose

    folder = tmp_path_factory.mktemp("ui-shell")
    catalog = icepark.load_catalog("sh", uri=f"sqlite:///{folder}/c.db", warehouse=str(folder))
    catalog.create_namespace("db")
    name = "db.x;touch pwned"
    table = catalog.create_table(name, icepark.schema(("id", "long", True)))
    for i in range(6):  # small files: a compact finding
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    fixes = [f.fix for f in diagnose(table, orphans=False).findings if f.fix]
    commands = [fix for fix in fixes if fix.startswith("icepark ")]
    assert commands
    for command in commands:  # what a shell would run: icepark VERB TABLE, nothing more
        words = shlex.split(command)
        assert len(words) == 3 and words[2] == name, command
    html = TestClient(create_ui_app(catalog), base_url=LOCAL).get(table_path(name, "health")).text
    assert "icepark compact &#39;db.x;touch pwned&#39;" in html


def test_the_policy_would_block_an_injected_script(evil: tuple[Catalog, TestClient]) -> None:
    _, client = evil
    csp = client.get(table_path(TABLE)).headers["content-security-policy"]
    directives = dict(part.strip().split(" ", 1) for part in csp.split(";") if part.strip())
    assert directives["script-src"] == "'self'"
    assert directives["default-src"] == "'none'"
