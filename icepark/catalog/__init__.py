"""Catalogs: where each table's current metadata file is, and atomic swaps of it.

:func:`load_catalog` picks one from arguments, the environment or ``~/.icepark.yaml``. Each
catalog class is imported when first used (the SQL catalog needs SQLAlchemy, the file-system
catalog pyarrow's file systems, the REST catalog requests), so a program pays only for the
one it uses.
"""

from typing import TYPE_CHECKING, Any

from icepark.catalog.base import Catalog, Identifier, Properties, to_identifier
from icepark.catalog.config import catalog_properties, load_catalog
from icepark.catalog.views import View

if TYPE_CHECKING:
    from icepark.catalog.filesystem import FileSystemCatalog
    from icepark.catalog.sql import SqlCatalog
    from icepark.rest.catalog import RestCatalog

__all__ = [
    "Catalog",
    "FileSystemCatalog",
    "Identifier",
    "Properties",
    "RestCatalog",
    "SqlCatalog",
    "View",
    "catalog_properties",
    "load_catalog",
    "to_identifier",
]


def __getattr__(name: str) -> Any:
    if name == "SqlCatalog":
        from icepark.catalog.sql import SqlCatalog

        return SqlCatalog
    if name == "FileSystemCatalog":
        from icepark.catalog.filesystem import FileSystemCatalog

        return FileSystemCatalog
    if name == "RestCatalog":
        from icepark.rest.catalog import RestCatalog

        return RestCatalog
    raise AttributeError(f"module 'icepark.catalog' has no attribute {name!r}")
