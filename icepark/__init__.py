"""icepark: the Apache Iceberg table format in Python, with its data pipeline on Spark.

Everything a user needs is here, without deep imports::

    import icepark

    catalog = icepark.load_catalog()                      # SQLite + ./warehouse by default
    table = catalog.create_table(
        "db.events",
        icepark.schema(("id", "long", True), ("ts", "timestamptz"), ("name", "string")),
        partition_by=["day(ts)"],
    )
    table.append(arrow_table)
    table.scan(filter=icepark.col("id") > 5).to_arrow()

    try:
        catalog.load_table("db.nope")
    except icepark.NoSuchTableError as e:
        ...

* :func:`load_catalog`, :class:`Catalog`, :class:`Table`;
* :func:`schema`, :class:`Schema`, :class:`NestedField` and the types in :mod:`icepark.types`;
* :func:`col` and :func:`parse_filter` for row filters (a filter string works everywhere too);
* the errors (:class:`IceparkError` and its subclasses, also in :mod:`icepark.errors`);
* Spark: :mod:`icepark.spark` (``pip install 'icepark[spark]'``).

``import icepark`` stays cheap: pyarrow, SQLAlchemy and the table machinery load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icepark import errors, types
from icepark.errors import (
    CatalogConfigError,
    CommitFailedError,
    CommitStateUnknownError,
    IceparkError,
    InvalidSchemaError,
    InvalidValueError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchFileError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    UnsupportedOperationError,
    ValidationError,
)
from icepark.expressions import col, parse_filter
from icepark.spec.schema import Schema
from icepark.spec.types import NestedField
from icepark.types import schema

__version__ = "0.1.0"

__all__ = [
    "Catalog",
    "CatalogConfigError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "IceparkError",
    "InvalidSchemaError",
    "InvalidValueError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NestedField",
    "NoSuchFileError",
    "NoSuchNamespaceError",
    "NoSuchTableError",
    "Schema",
    "Table",
    "TableAlreadyExistsError",
    "UnsupportedOperationError",
    "ValidationError",
    "__version__",
    "col",
    "errors",
    "load_catalog",
    "parse_filter",
    "schema",
    "types",
]

if TYPE_CHECKING:
    from icepark.catalog import Catalog, load_catalog
    from icepark.table import Table


def __getattr__(name: str) -> Any:
    # Imported on first use so that ``import icepark`` stays cheap (pyarrow, SQLAlchemy).
    if name in ("Catalog", "load_catalog"):
        from icepark import catalog

        return getattr(catalog, name)
    if name == "Table":
        from icepark.table import Table

        return Table
    raise AttributeError(f"module 'icepark' has no attribute {name!r}")
