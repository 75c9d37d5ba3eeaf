"""Finding icepark tables from Spark code: a table or its name, and the catalog named by data
source options (``catalog``, ``uri``, ``warehouse``, ``type``, ``catalog.<property>``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icepark.table import Table

__all__ = ["CATALOG_OPTION_KEYS", "catalog_from_options", "resolve_catalog", "resolve_table"]

#: data source options that are catalog properties (``catalog`` names the catalog itself)
CATALOG_OPTION_KEYS = ("uri", "warehouse", "type")
_CATALOG_PREFIX = "catalog."


def catalog_from_options(options: Mapping[str, str]) -> Any:
    """``load_catalog`` with the catalog given by options: ``catalog`` (a name), ``uri``,
    ``warehouse``, ``type`` and any ``catalog.<property>``."""
    from icepark.catalog import load_catalog

    props: dict[str, str] = {}
    lowered = {k.lower(): v for k, v in options.items()}
    for key in CATALOG_OPTION_KEYS:
        if key in lowered:
            props[key] = lowered[key]
    for key, value in options.items():
        if key.lower().startswith(_CATALOG_PREFIX):
            props[key[len(_CATALOG_PREFIX) :]] = value
    return load_catalog(lowered.get("catalog"), properties=props)


def resolve_table(table: Table | str, catalog: Any = None) -> Table:
    """The icepark Table a table argument stands for: a Table as it is, or a name loaded from
    a catalog (how :func:`icepark.spark.read`, :func:`~icepark.spark.write` and the
    procedures take their ``table`` and ``catalog`` arguments).

    Args:
        table: a Table, or a name such as ``"db.events"``.
        catalog: where a name is looked up: a Catalog, a configured catalog name or a
            mapping of catalog properties (default: ``icepark.load_catalog()``).

    Returns:
        The table, with its current metadata when it was loaded here.

    Raises:
        NoSuchTableError: no table of that name.
        CatalogConfigError: ``catalog`` names no configured catalog, or its properties do
            not make one.
    """
    if isinstance(table, Table):
        return table
    loaded: Table = resolve_catalog(catalog).load_table(table)
    return loaded


def resolve_catalog(catalog: Any = None) -> Any:
    """The Catalog a ``catalog`` argument stands for: a Catalog as it is, a configured
    catalog's name (None: the default), or a mapping of catalog properties.

    Raises:
        CatalogConfigError: no catalog of that name, or properties that do not make one.
    """
    from icepark.catalog import Catalog, load_catalog

    if isinstance(catalog, Catalog):
        return catalog
    if isinstance(catalog, Mapping):
        return catalog_from_options({f"{_CATALOG_PREFIX}{k}": str(v) for k, v in catalog.items()})
    return load_catalog(catalog)
