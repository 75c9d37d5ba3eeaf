"""The house stays as built: no module imports from a layer above its own, no import circle
forms, and only ``icepark.spark`` imports pyspark.

Imports are read with :mod:`ast` from every module of the package, including imports inside
functions (a lazy import hides a circle, it does not remove it); only imports under
``if TYPE_CHECKING:`` are left out, since they never run. The layers are the map of docs/development.md ("Layout").
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "icepark"

# The layers of docs/development.md, bottom first; a module may import from its own layer and those below.
LAYERS: list[tuple[str, ...]] = [
    ("icepark.errors", "icepark.lru"),
    ("icepark.spec",),
    ("icepark.expressions", "icepark.types"),
    ("icepark.io", "icepark.avro", "icepark.manifest", "icepark.puffin"),
    ("icepark.planning",),
    ("icepark.arrow",),
    ("icepark.table",),
    # the REST client is a catalog like the others; its server sits above every catalog
    (
        "icepark.catalog",
        "icepark.rest.models",
        "icepark.rest.http",
        "icepark.rest.auth",
        "icepark.rest.views",
        "icepark.rest.scan_tasks",
        "icepark.rest.scan_planning",
        "icepark.rest.metrics",
        "icepark.rest.endpoints",
        "icepark.rest.loaded",
        "icepark.rest.vended_io",
        "icepark.rest.catalog",
    ),
    ("icepark.rest.server", "icepark.ui"),  # the web stack's apps over a catalog
    ("icepark.spark",),
    ("icepark.cli",),
    ("icepark", "icepark.rest"),  # the package's front doors
]

# Third-party packages a layer must not import (beyond the layer rule itself).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "icepark.spec": ("pyarrow", "pyspark", "sqlalchemy", "fastavro", "boto3", "icepark.io"),
}


def _layer(module: str) -> int:
    best, rank = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    assert rank >= 0, f"{module} is in no layer of the map in docs/development.md: add it to LAYERS"
    return rank


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def _imports(module: str) -> Iterator[tuple[str, int]]:
    """Every module name ``module`` imports (icepark's resolved to the module, or to the
    package when the name is not a submodule), with its line."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return _imports_in(ast.parse(path.read_text(), str(path)), package)


def _imports_in(tree: ast.AST, package: str) -> Iterator[tuple[str, int]]:
    skipped = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield (sub if sub in MODULES else source), node.lineno


def _graph() -> dict[str, set[str]]:
    return {
        module: {name for name, _ in _imports(module) if name in MODULES and name != module}
        for module in MODULES
    }


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = []
    for module in MODULES:
        mine = _layer(module)
        for name, line in _imports(module):
            if name in MODULES and name != module and _layer(name) > mine:
                upward.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} -> {name}")
    assert not upward, "imports reaching a layer above:\n" + "\n".join(upward)


def test_no_import_circles() -> None:
    circles = _circles(_graph())
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_only_spark_imports_pyspark_and_spec_stays_pure() -> None:
    wrong = []
    for module in MODULES:
        for name, line in _imports(module):
            top = name.split(".")[0]
            where = f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} imports {name}"
            if top == "pyspark" and _layer(module) != _layer("icepark.spark"):
                wrong.append(where)
            for layer, banned in FORBIDDEN.items():
                if module == layer or module.startswith(layer + "."):
                    if any(name == b or name.startswith(b + ".") for b in banned):
                        wrong.append(where)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": {"a"}, "c": {"c"}}, [["a", "b"]]),
    ],
)
def test_the_circle_finder_finds_circles(
    graph: dict[str, set[str]], expected: list[list[str]]
) -> None:
    assert _circles(graph) == expected


def test_lazy_imports_count() -> None:
    """An import inside a function is an edge; one under TYPE_CHECKING is not; relative
    imports resolve against the package."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from icepark.table.table import Table\n"
        "def f():\n    from icepark.table.scan import DataScan\n"
        "    from .write import operations\n"
    )
    names = [name for name, _ in _imports_in(ast.parse(source), "icepark.table")]
    assert names == ["typing", "icepark.table.scan", "icepark.table.write.operations"]
