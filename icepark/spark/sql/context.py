"""What one ``sql`` call works with: the session, icepark's catalog and its name, the temporary
views registered for the statement running, and its scan report (files planned per table)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from icepark.spark.sql.identifiers import Resolved, resolve_name

__all__ = ["SqlContext", "load_sql_catalog", "LOG"]

LOG = logging.getLogger("icepark.spark.sql")


def load_sql_catalog(catalog: Any) -> Any:
    """A Catalog given as itself, a catalog name, or None (``icepark.load_catalog()``)."""
    from icepark.catalog import Catalog, load_catalog

    if isinstance(catalog, Catalog):
        return catalog
    return load_catalog(catalog)


@dataclass
class SqlContext:
    spark: SparkSession
    catalog: Any
    statement: str = ""
    views: list[str] = field(default_factory=list)
    report: list[str] = field(default_factory=list)
    _prefix: str = field(default_factory=lambda: f"__icepark_{uuid.uuid4().hex[:8]}")

    @property
    def catalog_name(self) -> str:
        return str(getattr(self.catalog, "name", "") or "")

    def resolve(
        self,
        parts: Sequence[str],
        *,
        namespace: Sequence[str] = (),
        views: bool = True,
        for_write: bool = False,
    ) -> Resolved:
        return resolve_name(
            self.spark,
            self.catalog,
            self.catalog_name,
            parts,
            namespace=namespace,
            views=views,
            for_write=for_write,
        )

    def register(self, df: DataFrame, hint: str) -> str:
        """A temporary view over ``df`` with a name no other statement uses."""
        clean = "".join(c if c.isalnum() else "_" for c in hint)[:40]
        name = f"{self._prefix}_{len(self.views)}_{clean}"
        df.createOrReplaceTempView(name)
        self.views.append(name)
        return name

    def note(self, line: str) -> None:
        self.report.append(line)
        LOG.info("%s", line)

    def empty(self) -> DataFrame:
        """What DDL returns: no columns, no rows."""
        from pyspark.sql.types import StructType

        return self.spark.createDataFrame([], StructType([]))

    def drop_views(self) -> None:
        """Drop this statement's temporary views (the DataFrames built over them keep their
        analyzed plans, as pyspark's own ``spark.sql(..., df=...)`` does)."""
        for name in self.views:
            self.spark.catalog.dropTempView(name)
        self.views.clear()
