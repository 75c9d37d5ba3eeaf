"""What one ``sql`` call works with: the session, icepark's catalog and its name, the
DataFrames standing for icepark tables in the statement running, and its scan report (files
planned per table).

Spark runs a rewritten statement with each icepark table in it read as a DataFrame
(:meth:`SqlContext.register` names it, :meth:`SqlContext.sql` runs the text): the DataFrames
go to ``spark.sql`` as its DataFrame arguments (``spark.sql("... {t} ...", t=df)``), not as
temporary views. On a classic session pyspark registers them as temporary views while Spark
analyses the statement (which it does at once) and drops them after; on Spark Connect they
travel inside the plan, which the server analyses again whenever the DataFrame runs, so a
DataFrame ``sql`` returns stays valid after the statement ends (a temporary view dropped at
its end would be looked up, and missed, when the DataFrame runs later)."""

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

__all__ = ["SqlContext", "LOG", "NAMESPACE_CONF"]

#: the session setting (one per catalog name) holding the namespace ``USE`` chose
NAMESPACE_CONF = "spark.icepark.sql.current-namespace"
_SEP = "\x1f"

LOG = logging.getLogger("icepark.spark.sql")


@dataclass
class SqlContext:
    spark: SparkSession
    catalog: Any
    statement: str = ""
    frames: dict[str, DataFrame] = field(default_factory=dict)
    report: list[str] = field(default_factory=list)
    _prefix: str = field(default_factory=lambda: f"__icepark_{uuid.uuid4().hex[:8]}")
    #: the catalog's name in SQL when it is not the catalog's own ``name``
    name: str = ""
    #: the names this statement resolved (one load per name per statement)
    _resolved: dict[tuple[Any, ...], Resolved] = field(default_factory=dict)
    _registered: int = 0

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
        """A name no other statement uses for ``df``, to put in the statement's text as a
        quoted table name; :meth:`sql` gives Spark ``df`` for it."""
        clean = "".join(c if c.isalnum() else "_" for c in hint)[:40]
        self._registered += 1
        name = f"{self._prefix}_{self._registered}_{clean}"
        self.frames[name] = df
        return name

    def sql(self, text: str) -> DataFrame:
        """``spark.sql(text)`` where each name :meth:`register` gave (quoted in ``text``)
        stands for its DataFrame (see the module docstring), and Iceberg's functions
        (``system.bucket(16, id)``, ...) are computed as
        :func:`~icepark.spark.sql.functions.with_iceberg_functions` says; the names are
        forgotten."""
        from icepark.spark.sql.functions import with_iceberg_functions

        try:
            text = with_iceberg_functions(self, text)
            return self._spark_sql(text)
        finally:
            self.frames.clear()

    def analyse(self, text: str) -> Any:
        """The schema of the query ``text`` as Spark analyses it (nothing runs), the names
        :meth:`register` gave standing for their DataFrames, which stay registered."""
        return self._spark_sql(text).schema

    def _spark_sql(self, text: str) -> DataFrame:
        used = {name: df for name, df in self.frames.items() if f"`{name}`" in text}
        if not used:
            return self.spark.sql(text)
        # every other brace is the text's own (in a string literal): doubled for the formatter
        text = text.replace("{", "{{").replace("}", "}}")
        for name in used:
            text = text.replace(f"`{name}`", "{" + name + "}")
        return self.spark.sql(text, None, **used)

    def note(self, line: str) -> None:
        self.report.append(line)
        LOG.info("%s", line)

    def empty(self) -> DataFrame:
        """What DDL returns: no columns, no rows."""
        from pyspark.sql.types import StructType

        return self.spark.createDataFrame([], StructType([]))

    def drop_views(self) -> None:
        """Forget the DataFrames registered and not run (a statement that failed midway)."""
        self.frames.clear()

    def start_statement(self, text: str) -> None:
        """A new statement: names resolve afresh (tables load at their newest metadata)."""
        self.statement = text
        self._resolved.clear()

    def end_statement(self) -> None:
        """Forget what this statement resolved and registered."""
        self.drop_views()
        self._resolved.clear()
