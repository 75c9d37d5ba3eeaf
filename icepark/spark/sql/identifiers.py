"""Table names in SQL, resolved as Java's Spark catalog resolves them.

A name is a list of parts (back quotes removed). With icepark's catalog ``cat`` (its ``name``):

- ``db.t`` and ``cat.db.t`` are table ``db.t`` of the catalog (the catalog's name as the first
  of three or more parts is the catalog itself, as in Java where catalog names come first);
- ``db.t.<metadata table>`` (one of the sixteen, :data:`icepark.table.inspect.METADATA_TABLES`)
  is that metadata table of ``db.t``, ``db.t.branch_<b>`` and ``db.t.tag_<t>`` the table at that
  branch or tag, each only when no table ``db.t.<last>`` exists (Java tries the whole name as a
  table first);
- a name that is no table but a view of the catalog is that view;
- ``spark_catalog.*``, Spark's temporary views and the tables of Spark's session catalog are
  Spark's own, left in the statement for Spark;
- anything else is :class:`~icepark.errors.NoSuchTableError` naming it.

A view's query resolves single-part names in the view's default namespace (``namespace``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pyspark.sql import SparkSession

from icepark.errors import NoSuchTableError, NoSuchViewError, ValidationError
from icepark.spec.schema import Schema
from icepark.table import Table
from icepark.table.inspect import METADATA_TABLES

__all__ = [
    "Resolved",
    "SPARK_CATALOG",
    "display_name",
    "namespace_identifier",
    "resolve_name",
    "split_ref",
    "table_identifier",
]

SPARK_CATALOG = "spark_catalog"

Kind = Literal["table", "metadata", "view", "spark"]


@dataclass(frozen=True)
class Resolved:
    """What a name means: an icepark table (``ref`` set for ``branch_``/``tag_`` names), one
    of its metadata tables, an icepark view, or a name Spark resolves itself."""

    kind: Kind
    parts: tuple[str, ...]  # the icepark identifier (catalog name left out)
    table: Table | None = None
    metadata: str | None = None
    ref: str | None = None
    ref_kind: Literal["branch", "tag"] | None = None
    view: Any = None

    @property
    def name(self) -> str:
        return ".".join(self.parts)

    def schema(self) -> Schema:
        """The columns a table name reads, as Java's ``SparkTable`` gives them: a tag's
        snapshot's schema, else (a branch too) the table's current one."""
        assert self.table is not None, f"{self.name} is not an icepark table"
        if self.ref is not None:
            return self.table.scan(ref=self.ref).schema
        return self.table.schema()


def display_name(parts: Sequence[str]) -> str:
    return ".".join(parts)


def split_ref(last: str) -> tuple[Literal["branch", "tag"], str] | None:
    """``("branch", "b")`` for ``branch_b``, ``("tag", "t")`` for ``tag_t``, else None."""
    low = last.lower()
    if low.startswith("branch_") and len(last) > 7:
        return "branch", last[7:]
    if low.startswith("tag_") and len(last) > 4:
        return "tag", last[4:]
    return None


def _spark_has(spark: SparkSession, parts: Sequence[str]) -> bool:
    name = ".".join("`" + p.replace("`", "``") + "`" for p in parts)
    try:
        return bool(spark.catalog.tableExists(name))
    except Exception:  # a name Spark's catalog cannot even parse as its own
        return False


def _strip_catalog(parts: Sequence[str], catalog_name: str) -> tuple[str, ...] | None:
    """The icepark identifier, or None when the name is Spark's (``spark_catalog.*``)."""
    if len(parts) >= 2 and parts[0].lower() == SPARK_CATALOG:
        return None
    if len(parts) >= 3 and catalog_name and parts[0] == catalog_name:
        return tuple(parts[1:])
    return tuple(parts)


def table_identifier(
    parts: Sequence[str], catalog_name: str, namespace: Sequence[str] = ()
) -> tuple[str, ...] | None:
    """The icepark identifier ``parts`` names, whether or not the table exists (the catalog's
    name left out, a single part placed in ``namespace``), or None for a name of Spark's
    session catalog; a single part with no ``namespace`` is a :class:`ValidationError`."""
    ident = _strip_catalog(parts, catalog_name)
    if ident is None:
        return None
    if len(ident) == 1:
        if not namespace:
            raise ValidationError(
                f"Table name {display_name(parts)!r} needs a namespace (<namespace>.<table>)"
            )
        return (*namespace, *ident)
    return ident


def namespace_identifier(parts: Sequence[str], catalog_name: str) -> tuple[str, ...]:
    """The namespace ``parts`` names (``cat.db`` is namespace ``db`` of catalog ``cat``)."""
    if len(parts) >= 2 and catalog_name and parts[0] == catalog_name:
        return tuple(parts[1:])
    return tuple(parts)


def resolve_name(
    spark: SparkSession,
    catalog: Any,
    catalog_name: str,
    parts: Sequence[str],
    *,
    namespace: Sequence[str] = (),
    views: bool = True,
) -> Resolved:
    """What ``parts`` names (see the module docstring); ``namespace`` is the default for a
    single-part name (a view's default namespace), ``views`` whether a view may answer. A
    ``branch_<b>`` name must name an existing branch, for reads and writes alike (as Java)."""
    given = display_name(parts)
    ident = _strip_catalog(parts, catalog_name)
    if ident is None:
        return Resolved("spark", tuple(parts))
    if len(ident) == 1:
        if _spark_has(spark, ident):
            return Resolved("spark", tuple(parts))
        if not namespace:
            raise NoSuchTableError(
                f"Table or view not found: {given} (icepark tables are named <namespace>.<table>)"
            )
        ident = (*namespace, *ident)
    try:
        return Resolved("table", ident, table=catalog.load_table(ident))
    except NoSuchTableError:
        pass
    if len(ident) >= 3:
        base, last = ident[:-1], ident[-1]
        ref = split_ref(last)
        meta = last.lower() if last.lower() in METADATA_TABLES else None
        if ref is not None or meta is not None:
            try:
                table = catalog.load_table(base)
            except NoSuchTableError:
                table = None
            if table is not None:
                if meta is not None:
                    return Resolved("metadata", base, table=table, metadata=meta)
                assert ref is not None
                kind, ref_name = ref
                found = table.metadata.refs.get(ref_name)
                if found is None or found.type.value != kind:
                    raise ValidationError(
                        f"Table {display_name(base)} has no {kind} {ref_name!r} (named by {given})"
                    )
                return Resolved("table", base, table=table, ref=ref_name, ref_kind=kind)
    if views and getattr(catalog, "supports_views", False):
        try:
            return Resolved("view", ident, view=catalog.load_view(ident))
        except NoSuchViewError:
            pass
    if _spark_has(spark, parts):
        return Resolved("spark", tuple(parts))
    raise NoSuchTableError(f"Table or view not found: {given}")
