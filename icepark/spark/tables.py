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
    """An icepark Table, or a name loaded from ``catalog`` (a Catalog, a catalog name or a
    mapping of catalog properties) or else ``icepark.load_catalog()``."""
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
