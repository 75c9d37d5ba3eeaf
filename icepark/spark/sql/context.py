"""What one ``sql`` call works with: the session, icepark's catalog and its name, the temporary
views registered for the statement running, and its scan report (files planned per table)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from icepark.spark.sql.identifiers import (
    Resolved,
    namespace_identifier,
    resolve_name,
    table_identifier,
)

__all__ = ["SqlContext", "load_sql_catalog", "LOG", "NAMESPACE_CONF"]

#: the session setting (one per catalog name) holding the namespace ``USE`` chose
NAMESPACE_CONF = "spark.icepark.sql.current-namespace"
_SEP = "\x1f"

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
    #: the catalog's name in SQL when it is not the catalog's own ``name``
    name: str = ""
    #: the names this statement resolved (one load per name per statement)
    _resolved: dict[tuple[Any, ...], Resolved] = field(default_factory=dict)

    @property
    def catalog_name(self) -> str:
        return self.name or str(getattr(self.catalog, "name", "") or "")

    @property
    def _namespace_key(self) -> str:
        return f"{NAMESPACE_CONF}.{self.catalog_name or 'default'}"

    @property
    def current_namespace(self) -> tuple[str, ...]:
        """The namespace ``USE`` set for this catalog in this session (single-part names
        resolve there), or ``()``."""
        value = self.spark.conf.get(self._namespace_key, "") or ""
        return tuple(value.split(_SEP)) if value else ()

    def use_namespace(self, namespace: Sequence[str]) -> None:
        if namespace:
            self.spark.conf.set(self._namespace_key, _SEP.join(namespace))
        else:
            self.spark.conf.unset(self._namespace_key)

    def resolve(
        self,
        parts: Sequence[str],
        *,
        namespace: Sequence[str] = (),
        views: bool = True,
    ) -> Resolved:
        """What ``parts`` names (:func:`~icepark.spark.sql.identifiers.resolve_name`), loaded
        once per statement: a second resolve of the same name gives the same answer."""
        ns = tuple(namespace or self.current_namespace)
        key = (tuple(parts), ns, views)
        found = self._resolved.get(key)
        if found is None:
            found = resolve_name(
                self.spark, self.catalog, self.catalog_name, parts, namespace=ns, views=views
            )
            self._resolved[key] = found
        return found

    def identifier(self, parts: Sequence[str]) -> tuple[str, ...] | None:
        """The icepark identifier of a table name whether or not it exists (a single part in
        the current namespace), None for a name of Spark's session catalog."""
        return table_identifier(parts, self.catalog_name, self.current_namespace)

    def namespace(self, parts: Sequence[str]) -> tuple[str, ...]:
        """The namespace a namespace name names (the catalog's name left out)."""
        return namespace_identifier(parts, self.catalog_name)

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

    def start_statement(self, text: str) -> None:
        """A new statement: names resolve afresh (tables load at their newest metadata)."""
        self.statement = text
        self._resolved.clear()

    def end_statement(self) -> None:
        """Forget what this statement resolved and registered."""
        self.drop_views()
        self._resolved.clear()
