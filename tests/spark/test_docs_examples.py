"""Every Python and SQL example of the site's Spark pages (``examples: spark`` in their front
matter), run page by page against a fresh warehouse on the test run's one Spark session
(``ispark.session()`` in an example returns it: no second JVM). See ``tests/docs_examples.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docs_examples as D
import pytest

from icepark import spark as ispark
from icepark.spark.sql.context import NAMESPACE_CONF

pytestmark = pytest.mark.spark

PAGES = [p for p in D.pages() if D.needs_spark(p)]


@pytest.mark.parametrize("page", PAGES, ids=D.page_id)
def test_page_examples_run(
    page: Path, tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ispark, "session", lambda *args, **kwargs: spark)
    views = {t.name for t in spark.catalog.listTables() if t.isTemporary}
    try:
        with D.fresh_folder(tmp_path):
            assert D.run_page(page, {"__name__": "__docs__"}) > 0
    finally:
        for stream in spark.streams.active:
            stream.stop()
        for key in ("spark.wap.id", f"{NAMESPACE_CONF}.default"):
            spark.conf.unset(key)
        for table in spark.catalog.listTables():
            if table.isTemporary and table.name not in views:
                spark.catalog.dropTempView(table.name)
