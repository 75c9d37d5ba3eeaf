"""Every Python and ``icepark`` command-line example of the site's pages that need no Spark
(and of README.md), run page by page against a fresh warehouse (``tests/docs_examples.py``);
the Spark pages run in ``tests/spark/test_docs_examples.py``."""

from __future__ import annotations

from pathlib import Path

import click
import docs_examples as D
import pytest

PAGES = [p for p in D.pages() if not D.needs_spark(p)]


@pytest.mark.parametrize("page", PAGES, ids=D.page_id)
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    examples = [e for e in D.examples(page) if not e.not_run]
    assert all(e.language != "sql" for e in examples), (
        f"{D.page_id(page)} has sql examples: give it `examples: spark` in its front matter"
    )
    assert not any(e.verbs & set(D.SPARK_VERBS) for e in examples), (
        f"{D.page_id(page)} runs `icepark sql` or `compact`: give it `examples: spark`"
    )
    with D.fresh_folder(tmp_path):
        D.run_page(page, {"__name__": "__docs__"})


def test_the_collector_finds_the_examples() -> None:
    """Every page with code is seen, markers are read, and few blocks are left unrun."""
    everything = [e for p in D.pages() for e in D.examples(p)]
    assert len(everything) >= 70
    not_run = [e for e in everything if e.not_run]
    assert len(not_run) <= 6, [f"{e.page}:{e.line}" for e in not_run]
    spark_pages = {D.page_id(p) for p in D.pages() if D.needs_spark(p)}
    assert "docs/guides/sql.md" in spark_pages and "docs/guides/one-machine.md" not in spark_pages
    sql = [e for e in everything if e.language == "sql"]
    assert all(e.page in spark_pages for e in sql)
    assert any("MERGE INTO" in e.code for e in sql)
    shell = [e for e in everything if e.language == "shell"]
    assert {"tables", "describe", "scan", "doctor", "remove-orphans"} <= set().union(
        *(e.verbs for e in shell if not e.not_run)
    )
    assert {"serve", "ui"} <= set().union(*(e.verbs for e in shell if e.not_run))


def test_the_shell_blocks_are_read_as_a_shell_reads_them() -> None:
    commands = D.shell_commands(
        "icepark scan db.t --filter \"name = 'a b'\"  # a comment\n"
        "icepark --json describe \\\n    db.t\n\n",
        10,
    )
    assert [(c.line, c.argv) for c in commands] == [
        (10, ("icepark", "scan", "db.t", "--filter", "name = 'a b'")),
        (11, ("icepark", "--json", "describe", "db.t")),
    ]
    console = D.shell_commands("$ icepark tables\ndb.events\n$ icepark tables db\n", 1, True)
    assert [(c.argv, c.output) for c in console] == [
        (("icepark", "tables"), ("db.events",)),
        (("icepark", "tables", "db"), ()),
    ]
    example = D.Example("p.md", 1, "shell", "", commands=tuple(console))
    assert example.verbs == {"tables"}
    assert D.Example("p.md", 1, "shell", "", commands=tuple(commands)).verbs == {"scan", "describe"}


def test_a_failing_command_fails_its_page(tmp_path: Path) -> None:
    with D.fresh_folder(tmp_path):
        with pytest.raises(AssertionError, match=r"p.md:3: icepark describe db.nope exited with 1"):
            D.run_command("p.md", D.Command(3, ("icepark", "describe", "db.nope")))
        with pytest.raises(AssertionError, match=r"did not print \['db.events'\]"):
            D.run_command("p.md", D.Command(4, ("icepark", "tables"), ("db.events",)))
        with pytest.raises(AssertionError, match="runs until stopped: mark its block"):
            D.run_command("p.md", D.Command(5, ("icepark", "--uri", "x", "ui")))


def test_the_commands_of_unrun_blocks_parse(tmp_path: Path) -> None:
    """A block marked not run (a server) is not run, but its commands must still be ones the
    command line takes: every verb, option and choice exists."""
    marked = [e for p in D.pages() for e in D.examples(p) if e.language == "shell" and e.not_run]
    verbs = {
        D.parse_command(c, tmp_path) for e in marked for c in e.commands if c.argv[0] == "icepark"
    }
    assert {"serve", "serve hash-secret", "ui"} <= verbs
    with pytest.raises(click.UsageError, match="No such option"):
        D.parse_command(D.Command(1, ("icepark", "serve", "--principal", "p.yaml")), tmp_path)
