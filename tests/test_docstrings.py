"""Every public name of the site's Python API page (docs/reference/api/index.md) has a
docstring, which the API reference shows; a function's docstring names each of its
parameters. The functions listed in ``NOT_YET`` do not name them all yet: the list may only
shrink (a name that now documents every parameter fails until it is taken off)."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest
from test_public_api import ROWS

NOT_YET = {
    "icepark.catalog.catalog_properties",
    "icepark.catalog.to_identifier",
    "icepark.parse_filter",
    "icepark.rest.create_app",
    "icepark.types.map_of",
    "icepark.ui.create_ui_app",
}


def _public() -> dict[str, object]:
    found: dict[str, object] = {}
    for key, names in ROWS.items():
        module = key.replace("`", "")
        if module == "icepark.Table (methods)":
            from icepark import Table

            for name in names:
                found[f"icepark.Table.{name}"] = inspect.getattr_static(Table, name)
        elif re.fullmatch(r"icepark(\.\w+)*", module):
            imported = importlib.import_module(module)
            for name in names:
                obj = getattr(imported, name)
                if inspect.isclass(obj) or inspect.isfunction(obj):
                    found[f"{module}.{name}"] = obj
    return found


PUBLIC = _public()


def _function(obj: object) -> object:
    if isinstance(obj, staticmethod | classmethod):
        return obj.__func__
    if isinstance(obj, property):
        return obj.fget
    return obj


def _undocumented_parameters(obj: object) -> list[str]:
    func = _function(obj)
    if inspect.isclass(func) or not callable(func):
        return []
    doc = inspect.getdoc(func) or ""
    names = [p for p in inspect.signature(func).parameters if p not in ("self", "cls")]
    return [n for n in names if not re.search(rf"\b{re.escape(n)}\b", doc)]


def test_every_public_name_has_a_docstring() -> None:
    assert len(PUBLIC) > 120
    missing = [name for name, obj in PUBLIC.items() if not inspect.getdoc(_function(obj))]
    assert missing == []


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_docstring_names_the_parameters(name: str) -> None:
    undocumented = _undocumented_parameters(PUBLIC[name])
    if name in NOT_YET:
        assert undocumented, f"{name} documents every parameter now: take it off NOT_YET"
    else:
        assert undocumented == [], f"{name}'s docstring does not name {undocumented}"
