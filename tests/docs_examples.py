"""The code blocks of the documentation site (``docs/``) and of README.md, as examples the
test suite runs: ``tests/docs/test_examples.py`` runs the pages that need no Spark,
``tests/spark/test_docs_examples.py`` those with ``examples: spark`` in their front matter.

Every fenced block whose language is ``python`` or ``sql`` is an example. The examples of a
page run in order, as one program, in a folder of their own with no catalog configured
(``icepark.load_catalog()`` is the embedded default in ``./warehouse``): a page reads as a
session a user could type. ``sql`` blocks run statement by statement through
``icepark.spark.sql`` on the page's ``spark``, each result collected.

A block that cannot run in a test (it needs a remote host, a server left running, a cluster)
is marked in the Markdown by an HTML comment on the line before its fence, which the site does
not show::

    <!-- example: not run (needs a Spark cluster) -->

The reason in brackets is required; keep such blocks few.
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)"
    r"^(?P=indent)(?P=fence)[ \t]*$",
    re.M | re.S,
)
_NOT_RUN = re.compile(r"<!-- example: not run \(([^)]+)\) -->\s*$")
_LANGUAGES = {"python": "python", "py": "python", "sql": "sql"}


@dataclass(frozen=True)
class Example:
    """One code block: where it is, its language (``python`` or ``sql``), its code, and why
    it is not run (empty when it is)."""

    page: str
    line: int
    language: str
    code: str
    not_run: str = ""


def pages() -> list[Path]:
    """Every Markdown page of the site, then README.md."""
    return [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def front_matter(path: Path) -> dict[str, Any]:
    text = path.read_text()
    if not text.startswith("---\n"):
        return {}
    meta = yaml.safe_load(text[4:].split("\n---\n", 1)[0]) or {}
    assert isinstance(meta, dict), f"{page_id(path)}: front matter is not a mapping"
    return meta


def needs_spark(path: Path) -> bool:
    return front_matter(path).get("examples") == "spark"


def examples(path: Path) -> list[Example]:
    """The page's examples, in order."""
    text = path.read_text()
    found = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip()
        language = _LANGUAGES.get(info.split(" ", 1)[0].lstrip("{.").rstrip("}").lower())
        if language is None:
            continue
        start = match.start()
        line = text.count("\n", 0, start) + 2  # the first line of code
        before = text[:start].rstrip("\n").rsplit("\n", 1)[-1]
        marked = _NOT_RUN.search(before)
        code = textwrap.dedent(match.group("body"))
        found.append(Example(page_id(path), line, language, code, marked.group(1) if marked else ""))
    return found


@contextmanager
def fresh_folder(folder: Path) -> Iterator[Path]:
    """Run in ``folder`` with no catalog configured: no ``~/.icepark.yaml``, no ICEPARK_*
    variables; the working directory and environment come back afterwards."""
    saved_env = dict(os.environ)
    saved_cwd = Path.cwd()
    for key in [k for k in os.environ if k.startswith("ICEPARK_") and k != "ICEPARK_TEST_CONNECT"]:
        del os.environ[key]
    os.environ["ICEPARK_CONFIG"] = str(folder / "no-such-icepark.yaml")
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_example(example: Example, namespace: dict[str, Any]) -> None:
    """Run one example in ``namespace`` (a page's shared globals). Line numbers in a
    traceback are the Markdown file's."""
    if example.language == "python":
        code = compile("\n" * (example.line - 1) + example.code, example.page, "exec")
        exec(code, namespace)
        return
    from icepark.spark import sql
    from icepark.spark.sql.script import split_statements

    spark = namespace.get("spark")
    assert spark is not None, f"{example.page}:{example.line}: a sql block needs `spark`"
    for statement in split_statements(example.code):
        sql(spark, statement.text).collect()


def run_page(path: Path, namespace: dict[str, Any]) -> int:
    """Run every example of the page that is not marked; the number run."""
    ran = 0
    for example in examples(path):
        if example.not_run:
            continue
        try:
            run_example(example, namespace)
        except Exception as exc:
            raise AssertionError(
                f"the example at {example.page}:{example.line} failed: "
                f"{type(exc).__name__}: {exc}\n{example.code}"
            ) from exc
        ran += 1
    return ran
