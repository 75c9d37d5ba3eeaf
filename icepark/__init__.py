"""icepark: the Apache Iceberg table format in Python, with its data pipeline on Spark."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Catalog", "Schema", "Table", "load_catalog", "__version__"]

if TYPE_CHECKING:
    from icepark.catalog import Catalog, load_catalog
    from icepark.spec.schema import Schema
    from icepark.table import Table


def __getattr__(name: str) -> Any:
    # Imported lazily so that ``import icepark`` stays cheap (pyarrow, SQLAlchemy load on use).
    if name in ("Catalog", "load_catalog"):
        from icepark import catalog

        return getattr(catalog, name)
    if name == "Schema":
        from icepark.spec.schema import Schema

        return Schema
    if name == "Table":
        from icepark.table import Table

        return Table
    raise AttributeError(f"module 'icepark' has no attribute {name!r}")
