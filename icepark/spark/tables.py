"""Finding icepark tables from Spark code: a table or its name, and the catalog named by data
source options (``catalog``, ``uri``, ``warehouse``, ``type``, ``catalog.<property>``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icepark.table import Table

__all__ = ["CATALOG_OPTION_KEYS", "catalog_from_options", "resolve_table"]

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
    if catalog is None or isinstance(catalog, str):
        from icepark.catalog import load_catalog

        catalog = load_catalog(catalog)
    elif isinstance(catalog, Mapping):
        catalog = catalog_from_options(
            {f"{_CATALOG_PREFIX}{k}": str(v) for k, v in catalog.items()}
        )
    loaded: Table = catalog.load_table(table)
    return loaded
