"""Every public name the site's Python API page (docs/reference/api/index.md) lists imports from
where it says, and every module's ``__all__`` is listed there: moving code inside the package
cannot break a user's import."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

API_PAGE = Path(__file__).resolve().parent.parent / "docs" / "reference" / "api" / "index.md"


def _rows() -> dict[str, list[str]]:
    text = API_PAGE.read_text()
    section = text.split("## Public API", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            rows[cells[0]] = re.findall(r"`([^`]+)`", cells[1])
    return rows


ROWS = _rows()
MODULES = [key.strip("`") for key in ROWS if re.fullmatch(r"`icepark(\.\w+)*`", key)]


def test_the_api_page_lists_the_public_modules() -> None:
    assert {"icepark", "icepark.types", "icepark.errors", "icepark.spark"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_every_listed_name_imports(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [n for n in ROWS[f"`{module}`"] if not hasattr(imported, n)]
    assert not missing, f"{module} lacks {missing}"
    namespace: dict[str, object] = {}
    for name in ROWS[f"`{module}`"]:
        exec(f"from {module} import {name}", namespace)  # the user's spelling
        assert namespace[name] is getattr(imported, name)


@pytest.mark.parametrize("module", MODULES)
def test_every_exported_name_is_listed(module: str) -> None:
    exported = set(importlib.import_module(module).__all__)
    unlisted = exported - set(ROWS[f"`{module}`"])
    assert not unlisted, f"{module}.__all__ has names the API page does not list: {unlisted}"


def test_table_methods() -> None:
    from icepark import Table

    listed = ROWS["`icepark.Table` (methods)"]
    assert [m for m in listed if not hasattr(Table, m)] == []
    public = {n for n in vars(Table) if not n.startswith("_")}
    assert public - set(listed) == set(), "Table methods the API page does not list"


def test_command_line() -> None:
    from icepark.cli.main import cli

    words = ROWS["`icepark` command"]
    options = {w for w in words if w.startswith("--")}
    verbs = set(words) - options
    assert verbs == set(cli.commands)
    assert options == {opt for p in cli.params for opt in p.opts if opt.startswith("--")}
