"""What the global options give every command: the catalog (opened lazily) and output mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from icepark.catalog.base import Catalog

__all__ = ["CliContext", "pass_cli"]


@dataclass
class CliContext:
    """The global options; the catalog is opened on first use, so file commands need none."""

    catalog_name: str | None = None
    uri: str | None = None
    warehouse: str | None = None
    catalog_type: str | None = None
    credential: str | None = field(default=None, repr=False)
    json_output: bool = False
    _catalog: Catalog | None = field(default=None, repr=False)

    def catalog(self) -> Catalog:
        if self._catalog is None:
            from icepark.catalog.config import load_catalog

            self._catalog = load_catalog(
                self.catalog_name,
                uri=self.uri,
                warehouse=self.warehouse,
                type=self.catalog_type,
                credential=self.credential,
            )
        return self._catalog

    def io_properties(self, location: str) -> dict[str, str]:
        """FileIO properties for reading ``location``: the catalog's (``s3.*``) when remote."""
        if "://" not in location or location.startswith("file:"):
            return {}
        from icepark.catalog.config import catalog_properties

        _, props = catalog_properties(
            self.catalog_name, uri=self.uri, warehouse=self.warehouse, type=self.catalog_type
        )
        return props

    def wants_json(self, local_flag: bool) -> bool:
        return self.json_output or local_flag


pass_cli = click.make_pass_decorator(CliContext, ensure=True)
