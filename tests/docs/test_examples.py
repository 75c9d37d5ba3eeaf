"""Every Python example of the site's pages that need no Spark (and of README.md), run page by
page against a fresh warehouse (``tests/docs_examples.py``); the Spark pages run in
``tests/spark/test_docs_examples.py``."""

from __future__ import annotations

from pathlib import Path

import docs_examples as D
import pytest

PAGES = [p for p in D.pages() if not D.needs_spark(p)]


@pytest.mark.parametrize("page", PAGES, ids=D.page_id)
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    examples = D.examples(page)
    assert all(e.language == "python" for e in examples if not e.not_run), (
        f"{D.page_id(page)} has sql examples: give it `examples: spark` in its front matter"
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
