"""The code blocks of the documentation site (``docs/``) and of README.md, as examples the
test suite runs: ``tests/docs/test_examples.py`` runs the pages that need no Spark,
``tests/spark/test_docs_examples.py`` those with ``examples: spark`` in their front matter.

Every fenced block whose language is ``python`` or ``sql`` is an example, and so is every
shell block (``sh``, ``bash``, ``shell``, ``console``) that runs ``icepark`` verbs. The
examples of a page run in order, as one program, in a folder of their own with no catalog
configured (``icepark.load_catalog()`` is the embedded default in ``./warehouse``): a page
reads as a session a user could type. ``sql`` blocks run statement by statement through
``icepark.spark.sql`` on the page's ``spark``, each result collected. A shell block's commands
run one by one through the ``icepark`` command in this process (click's ``CliRunner``, in the
page's folder and environment) and must exit with status 0; a ``#`` starts a comment, a line
ending in ``\\`` goes on on the next. In a ``console`` block the commands follow ``$ `` and
the lines after a command are its output: each must be a line of what it prints. A shell block
of other commands only (``make``, ``pip``) is not an example; one that mixes them with
``icepark`` verbs must be marked.

A block that cannot run in a test (it needs a remote host, a server left running, a cluster)
is marked in the Markdown by an HTML comment on the line before its fence, which the site does
not show::

    <!-- example: not run (needs a Spark cluster) -->

The reason in brackets is required; keep such blocks few.
"""

from __future__ import annotations

import os
import re
import shlex
import textwrap
from collections.abc import Iterator, Sequence
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
_LANGUAGES = {
    "python": "python",
    "py": "python",
    "sql": "sql",
    "sh": "shell",
    "bash": "shell",
    "shell": "shell",
    "console": "shell",
}
# verbs that run until stopped (a server, a follower): their blocks must be marked not run
_LONG_RUNNING = ("serve", "ui", "follow")
# verbs that start a Spark session: only on pages with `examples: spark`
SPARK_VERBS = ("sql", "compact")


@dataclass(frozen=True)
class Command:
    """One command of a shell block: its line in the page, its words and, in a ``console``
    block, the lines it must print."""

    line: int
    argv: tuple[str, ...]
    output: tuple[str, ...] = ()


@dataclass(frozen=True)
class Example:
    """One code block: where it is, its language (``python``, ``sql`` or ``shell``), its
    code, why it is not run (empty when it is) and, for a shell block, its commands."""

    page: str
    line: int
    language: str
    code: str
    not_run: str = ""
    commands: tuple[Command, ...] = ()

    @property
    def verbs(self) -> set[str]:
        """The ``icepark`` verbs a shell block runs (after the global options)."""
        return {_verb(c.argv) for c in self.commands if c.argv[:1] == ("icepark",)}


def _verb(argv: Sequence[str]) -> str:
    from icepark.cli.main import cli

    words = list(argv[1:])
    while words and words[0].startswith("-"):
        option = words.pop(0)
        param = next((p for p in cli.params if option.split("=", 1)[0] in p.opts), None)
        if param is not None and not getattr(param, "is_flag", False) and "=" not in option:
            words = words[1:]  # the option's value
    return words[0] if words else ""


def shell_commands(code: str, first_line: int, console: bool = False) -> list[Command]:
    """The commands of a shell block (``console``: after ``$ ``, with their output)."""
    commands: list[Command] = []
    pending = ""
    start = first_line
    lines = code.splitlines()
    for offset, raw in enumerate(lines):
        text = raw.rstrip()
        if console and not pending:
            if not text.startswith("$ "):
                if commands and text.strip():
                    last = commands[-1]
                    commands[-1] = Command(last.line, last.argv, (*last.output, text.strip()))
                continue
            text = text[2:]
        if not pending:
            start = first_line + offset
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        words = shlex.split(pending + text, comments=True)
        pending = ""
        if words:
            commands.append(Command(start, tuple(words)))
    return commands


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
        fence = info.split(" ", 1)[0].lstrip("{.").rstrip("}").lower()
        language = _LANGUAGES.get(fence)
        if language is None:
            continue
        start = match.start()
        line = text.count("\n", 0, start) + 2  # the first line of code
        before = text[:start].rstrip("\n").rsplit("\n", 1)[-1]
        marked = _NOT_RUN.search(before)
        code = textwrap.dedent(match.group("body"))
        commands: tuple[Command, ...] = ()
        if language == "shell":
            commands = tuple(shell_commands(code, line, console=fence == "console"))
            if not any(c.argv[0] == "icepark" for c in commands):
                continue  # make, pip...: not an example of icepark
        found.append(
            Example(
                page_id(path), line, language, code, marked.group(1) if marked else "", commands
            )
        )
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
    if example.language == "shell":
        for command in example.commands:
            run_command(example.page, command)
        return
    from icepark.spark import sql
    from icepark.spark.sql.script import split_statements

    spark = namespace.get("spark")
    assert spark is not None, f"{example.page}:{example.line}: a sql block needs `spark`"
    for statement in split_statements(example.code):
        sql(spark, statement.text).collect()


def run_command(page: str, command: Command) -> str:
    """Run one ``icepark`` command of a shell block in this process; its output."""
    from click.testing import CliRunner

    from icepark.cli.main import cli

    where = f"{page}:{command.line}"
    if command.argv[0] != "icepark":
        raise AssertionError(f"{where}: only icepark commands run here: {command.argv[0]}")
    verb = _verb(command.argv)
    if verb in _LONG_RUNNING and "hash-secret" not in command.argv:
        raise AssertionError(f"{where}: `icepark {verb}` runs until stopped: mark its block")
    result = CliRunner().invoke(cli, list(command.argv[1:]), prog_name="icepark")
    if result.exit_code != 0:
        cause = result.exception if not isinstance(result.exception, SystemExit) else None
        raise AssertionError(
            f"{where}: {shlex.join(command.argv)} exited with {result.exit_code}"
            f"{f' ({type(cause).__name__}: {cause})' if cause else ''}:\n{result.output}"
        ) from cause
    printed = {line.strip() for line in result.output.splitlines()}
    missing = [line for line in command.output if line not in printed]
    if missing:
        raise AssertionError(
            f"{where}: {shlex.join(command.argv)} did not print {missing}:\n{result.output}"
        )
    return result.output


def parse_command(command: Command, folder: Path) -> str:
    """Parse an ``icepark`` command as click would, without running it (for blocks marked not
    run): every verb, option and choice must exist. The files it names are made empty in
    ``folder`` first, as click checks that they exist. The verb, as ``serve hash-secret``."""
    import click

    from icepark.cli.main import cli

    for word in command.argv[1:]:
        if not word.startswith("-") and re.search(r"\.(ya?ml|json|sql|txt|parquet)$", word):
            (folder / word).parent.mkdir(parents=True, exist_ok=True)
            (folder / word).touch()
    saved = Path.cwd()
    os.chdir(folder)
    try:
        ctx = cli.make_context("icepark", list(command.argv[1:]))
        group: click.Command = cli
        names = []
        while isinstance(group, click.Group):
            rest = [*ctx._protected_args, *ctx.args]
            if not rest:
                break
            name, sub, rest = group.resolve_command(ctx, rest)
            assert name is not None and sub is not None
            ctx = sub.make_context(name, rest, parent=ctx)
            group = sub
            names.append(name)
        return " ".join(names)
    finally:
        os.chdir(saved)


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
