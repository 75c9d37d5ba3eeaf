"""Catalogs: where each table's current metadata file is, and atomic swaps of it."""

from icepark.catalog.base import Catalog, Identifier, Properties, to_identifier
from icepark.catalog.config import catalog_properties, load_catalog
from icepark.catalog.filesystem import FileSystemCatalog
from icepark.catalog.sql import SqlCatalog

__all__ = [
    "Catalog",
    "FileSystemCatalog",
    "Identifier",
    "Properties",
    "SqlCatalog",
    "catalog_properties",
    "load_catalog",
    "to_identifier",
]
