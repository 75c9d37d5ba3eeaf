"""Every public name of the site's Python API page (docs/reference/api/index.md) has a
docstring, which the API reference shows, written in the Google style mkdocs.yml renders
(``docstring_style: google``), as griffe parses it:

* a function or method that takes parameters documents each of them, and only them, in its
  ``Args:`` section (rendered as the parameter table), and what it returns in ``Returns:``
  unless it returns None;
* a class documents its constructor's parameters in ``Args:`` (or, for a dataclass, its
  fields in ``Attributes:``);
* every exception a ``Raises:`` section names is a class that exists (a typed icepark error
  or a builtin), so a misspelt or removed error cannot stay in the docs;
* the methods and properties the API pages render under a class (mkdocstrings leaves out a
  member without a docstring) are documented by the same rules."""

from __future__ import annotations

import builtins
import functools
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import griffe
import pytest
from test_public_api import ROWS

ROOT = Path(__file__).resolve().parent.parent

# as mkdocs.yml's handler options
_PARSER_OPTIONS = {
    "returns_multiple_items": False,
    "warn_unknown_params": False,
    "warn_missing_types": False,
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

API_PAGES = ROOT / "docs" / "reference" / "api"
_DIRECTIVE = re.compile(r"^::: ([\w.]+)\n((?:[ \t]+.*\n)*)", re.M)


def _rendered_classes() -> dict[str, type]:
    """The classes whose members the API pages render: each ``::: name`` directive on a
    class, and each class a ``::: module`` directive exports, unless ``members: false``."""
    found: dict[str, type] = {}
    for page in sorted(API_PAGES.glob("*.md")):
        for name, options in _DIRECTIVE.findall(page.read_text()):
            if re.search(r"members:\s*false", options):
                continue
            try:
                module = importlib.import_module(name)
            except ImportError:
                module_name, _, attribute = name.rpartition(".")
                objects = {name: getattr(importlib.import_module(module_name), attribute)}
            else:
                objects = {f"{name}.{n}": getattr(module, n) for n in module.__all__}
            for key, obj in objects.items():
                if inspect.isclass(obj) and not _is_exception(obj):
                    found[key] = obj
    return found


def _members() -> dict[str, object]:
    """The public methods and properties the API pages render under their classes (those
    defined in icepark, not inherited from other packages), by ``class.member``."""
    members: dict[str, object] = {}
    seen: set[type] = set()
    for key, cls in sorted(_rendered_classes().items()):
        if cls in seen or key.startswith("icepark.Table"):
            continue  # one name per class; Table's methods are the page's own rows
        seen.add(cls)
        for name, value in vars(cls).items():
            func = value.func if isinstance(value, functools.cached_property) else _function(value)
            if name.startswith("_") or not callable(func):
                continue
            if getattr(func, "__module__", "").startswith("icepark"):
                members[f"{key}.{name}"] = value
    return members


def _function(obj: object) -> Any:
    if isinstance(obj, staticmethod | classmethod):
        return obj.__func__
    if isinstance(obj, property):
        return obj.fget
    return obj


def _sections(doc: str) -> dict[str, list[Any]]:
    parsed = griffe.Docstring(doc, parser="google", parser_options=_PARSER_OPTIONS).parse()
    found: dict[str, list[Any]] = {}
    for section in parsed:
        value = section.value if isinstance(section.value, list) else [section.value]
        found.setdefault(section.kind.value, []).extend(value)
    return found


def _parameters(signature: inspect.Signature) -> list[str]:
    stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return [
        stars.get(p.kind, "") + p.name
        for p in signature.parameters.values()
        if p.name not in ("self", "cls")
    ]


def _returns_none(func: Any) -> bool:
    annotation = inspect.signature(func).return_annotation
    return annotation in (None, "None")


_CLASS = re.compile(r"^class (\w+)\(([^)]*)\):", re.M)


def _exception_names() -> set[str]:
    """Every exception class the package defines (by its source: some live in modules
    imported only when used), and the builtin ones."""
    defined: dict[str, str] = {}
    for path in (ROOT / "icepark").rglob("*.py"):
        defined.update(_CLASS.findall(path.read_text()))
    names = {n for n in dir(builtins) if _is_exception(getattr(builtins, n))}
    grew = True
    while grew:  # subclasses of the errors found so far
        grew = False
        for name, bases in defined.items():
            if name not in names and any(
                b.strip().split(".")[-1] in names for b in bases.split(",")
            ):
                names.add(name)
                grew = True
    return names


def _is_exception(obj: object) -> bool:
    return inspect.isclass(obj) and issubclass(obj, BaseException)


EXCEPTIONS = _exception_names()


def test_every_public_name_has_a_docstring() -> None:
    assert len(PUBLIC) > 170  # the functions, classes and Table methods the page lists
    missing = [name for name, obj in PUBLIC.items() if not inspect.getdoc(_function(obj))]
    assert missing == []


def _unstarred(names: list[str]) -> set[str]:
    return {n.lstrip("*") for n in names}


def _problems(obj: object) -> list[str]:
    func = _function(obj)
    if _is_exception(func):
        return []  # its one argument is the message
    sections = _sections(inspect.getdoc(func) or "")
    wanted = _parameters(inspect.signature(func))
    documented = [p.name for p in sections.get("parameters", [])]
    problems = []
    if inspect.isclass(func):
        documented += [a.name for a in sections.get("attributes", [])]
        missing = sorted(_unstarred(wanted) - _unstarred(documented))
        if missing:
            problems.append(f"Args: (or Attributes:) lacks {missing}")
        return problems
    missing = sorted(_unstarred(wanted) - _unstarred(documented))
    if missing:
        problems.append(f"Args: lacks {missing}")
    extra = sorted(_unstarred(documented) - _unstarred(wanted))
    if extra:
        problems.append(f"Args: names {extra}, which the signature does not have")
    if wanted and not isinstance(obj, property) and not _returns_none(func):
        if not sections.get("returns"):
            problems.append("no Returns: section")
    for raised in sections.get("raises", []):
        if str(raised.annotation).rsplit(".", 1)[-1] not in EXCEPTIONS:
            problems.append(f"Raises: names {raised.annotation}, which is no exception class")
    return problems


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_docstring_documents_parameters_returns_and_raises(name: str) -> None:
    assert _problems(PUBLIC[name]) == []


def test_the_members_the_reference_renders_are_documented() -> None:
    """mkdocstrings hides a member without a docstring, so an undocumented method of a public
    class is missing from the reference: each must have one, by the same rules."""
    members = _members()
    assert {"icepark.catalog.Catalog.create_table", "icepark.table.DataScan.to_arrow"} <= set(
        members
    )
    assert len(members) > 100
    problems = {}
    for name, member in sorted(members.items()):
        value = member.func if isinstance(member, functools.cached_property) else member
        if not inspect.getdoc(_function(value)):
            problems[name] = ["no docstring"]
        elif found := _problems(member if callable(_function(member)) else value):
            problems[name] = found
    assert problems == {}


def test_the_check_fails_where_it_should() -> None:
    def documented(table: str, *, limit: int = 1) -> int:
        """Count.

        Args:
            table: the table.
            limit: at most this.

        Returns:
            The count.

        Raises:
            NoSuchTableError: no table.
        """
        return limit

    def sloppy(table: str, limit: int = 1) -> int:
        """Count ``table`` up to ``limit``.

        Args:
            table: the table.
            limt: a typo.

        Raises:
            NoSuchTabelError: a misspelt error.
        """
        return limit

    assert _problems(documented) == []
    assert _problems(sloppy) == [
        "Args: lacks ['limit']",
        "Args: names ['limt'], which the signature does not have",
        "no Returns: section",
        "Raises: names NoSuchTabelError, which is no exception class",
    ]
