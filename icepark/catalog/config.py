"""Finding the catalog: arguments, then environment, then ``~/.icepark.yaml``, then defaults.

With nothing configured, ``load_catalog()`` is the embedded default: a SQLite catalog at
``./warehouse/catalog.db`` with its warehouse in ``./warehouse``.

``~/.icepark.yaml`` (or the file named by ``ICEPARK_CONFIG``) may hold flat properties for
the default catalog, or named catalogs::

    default-catalog: lake
    catalogs:
      lake:
        uri: postgresql://user@db/iceberg
        warehouse: s3://bucket/warehouse
        s3.endpoint: http://127.0.0.1:9000
      scratch:
        type: filesystem
        warehouse: /data/scratch
      service:
        type: rest
        uri: https://catalog.example.com
        credential: client-id:client-secret
        warehouse: lake

A ``uri`` starting with ``http://`` or ``https://`` means a REST catalog; its ``warehouse`` is
passed to the server as is. ``ICEPARK_CATALOG_CREDENTIAL`` and ``ICEPARK_CATALOG_TOKEN`` give
a REST catalog's ``credential`` and ``token``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from icepark.catalog.base import Catalog
from icepark.errors import CatalogConfigError
from icepark.io import is_local_location

__all__ = ["load_catalog", "catalog_properties", "DEFAULT_WAREHOUSE", "ENV_URI", "ENV_WAREHOUSE"]

DEFAULT_WAREHOUSE = "warehouse"
DEFAULT_CATALOG_NAME = "default"
ENV_URI = "ICEPARK_CATALOG_URI"
ENV_WAREHOUSE = "ICEPARK_WAREHOUSE"
ENV_TYPE = "ICEPARK_CATALOG_TYPE"
ENV_NAME = "ICEPARK_CATALOG"
ENV_CONFIG = "ICEPARK_CONFIG"
ENV_CREDENTIAL = "ICEPARK_CATALOG_CREDENTIAL"
ENV_TOKEN = "ICEPARK_CATALOG_TOKEN"

_SQL_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "mariadb")


def _config_path() -> Path:
    return Path(os.environ.get(ENV_CONFIG) or Path.home() / ".icepark.yaml")


def _config_file() -> dict[str, Any]:
    path = _config_path()
    if not path.is_file():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise CatalogConfigError(f"Cannot read catalog configuration {path}: {exc}") from exc
    if not isinstance(loaded, dict):
        raise CatalogConfigError(f"Catalog configuration {path} must be a mapping")
    return loaded


def _absolute(location: str) -> str:
    if location.startswith("file:"):
        location = location[len("file:") :].lstrip("/")
        location = "/" + location
    return str(Path(location).expanduser().resolve()) if is_local_location(location) else location


def catalog_properties(name: str | None = None, **overrides: Any) -> tuple[str, dict[str, str]]:
    """The name and merged properties of the catalog :func:`load_catalog` would open, without
    opening it (nothing is connected or created). Properties come from
    ``~/.icepark.yaml`` (or ``ICEPARK_CONFIG``), then the environment
    (``ICEPARK_CATALOG_URI``, ``ICEPARK_WAREHOUSE``, ``ICEPARK_CATALOG_TYPE``), then
    ``overrides``; then the defaults fill in: the type told from the ``uri``, a local
    warehouse made absolute (``./warehouse`` by default) and, for a SQL catalog without a
    ``uri``, ``sqlite:///<warehouse>/catalog.db``.

    Args:
        name: a catalog of the configuration file (default: ``ICEPARK_CATALOG``, the file's
            ``default-catalog``, else ``default``).
        **overrides: properties over the configured ones (``uri``, ``warehouse``,
            ``type``...); None values are left out.

    Returns:
        ``(name, properties)``, every property a string.

    Raises:
        CatalogConfigError: the configuration file does not parse or is not a mapping, it
            names no such catalog, or the type cannot be told from the ``uri``.
    """
    config = _config_file()
    name = name or os.environ.get(ENV_NAME) or config.get("default-catalog") or DEFAULT_CATALOG_NAME
    props: dict[str, str] = {}
    named = config.get("catalogs") or {}
    given = {k: str(v) for k, v in overrides.items() if v is not None}
    if name in named:
        props.update({k: str(v) for k, v in (named[name] or {}).items()})
    elif name == (config.get("default-catalog") or DEFAULT_CATALOG_NAME):
        props.update(
            {k: str(v) for k, v in config.items() if k not in ("catalogs", "default-catalog")}
        )
    elif named:
        raise CatalogConfigError(f"No catalog named {name!r} in the configuration: {sorted(named)}")
    elif not ({"uri", "warehouse", "type"} & set(given)) and not any(
        os.environ.get(env) for env in (ENV_URI, ENV_WAREHOUSE, ENV_TYPE)
    ):
        # a name the configuration does not have, and nothing saying where the catalog is:
        # a typo would otherwise open a new, empty catalog of that name in ./warehouse
        raise CatalogConfigError(
            f"No catalog named {name!r}: the configuration ({_config_path()}) "
            + ("names no catalogs" if _config_path().is_file() else "does not exist")
            + "; give its uri, warehouse or type, or configure it"
        )
    for env, key in ((ENV_URI, "uri"), (ENV_WAREHOUSE, "warehouse"), (ENV_TYPE, "type")):
        if os.environ.get(env):
            props[key] = os.environ[env]
    props.update(given)
    for env, key in ((ENV_CREDENTIAL, "credential"), (ENV_TOKEN, "token")):
        if os.environ.get(env) and key not in overrides:
            props[key] = os.environ[env]
    kind = props.get("type", "").lower()
    if not kind:
        uri = props.get("uri", "")
        scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
        kind = "sql" if not uri or scheme in _SQL_SCHEMES else ""
        kind = "rest" if scheme in ("http", "https") else kind
        if not kind:
            raise CatalogConfigError(f"Cannot tell the catalog type from uri {uri!r}; set 'type'")
        props["type"] = kind
    if kind == "rest":
        # a REST catalog's warehouse is the server's to interpret (often a name, not a path)
        return name, props
    warehouse = props.get("warehouse")
    if not warehouse:
        warehouse = DEFAULT_WAREHOUSE
    props["warehouse"] = _absolute(warehouse)
    if kind == "sql" and not props.get("uri"):
        base = (
            props["warehouse"]
            if is_local_location(props["warehouse"])
            else _absolute(DEFAULT_WAREHOUSE)
        )
        props["uri"] = f"sqlite:///{base}/catalog.db"
    return name, props


def load_catalog(name: str | None = None, **properties: Any) -> Catalog:
    """Open a catalog: ``load_catalog()`` is the embedded SQLite default in ``./warehouse``.

    Args:
        name: a catalog of ``~/.icepark.yaml`` (default: ``ICEPARK_CATALOG``, the file's
            ``default-catalog``, else ``default``).
        properties: catalog properties over the configured ones (``uri``, ``warehouse``,
            ``type``, ...; ``properties={"s3.endpoint": ...}`` for names that are not
            identifiers). The environment (``ICEPARK_CATALOG_URI``, ``ICEPARK_WAREHOUSE``,
            ``ICEPARK_CATALOG_TYPE``) comes between the file and these.

    Returns:
        A ``SqlCatalog``, ``FileSystemCatalog`` or ``RestCatalog``.

    Raises:
        CatalogConfigError: the configuration file does not parse, names no such catalog,
            or the type cannot be told.
    """
    extra = properties.pop("properties", None) or {}
    name, props = catalog_properties(name, **{**extra, **properties})
    kind = props["type"].lower()
    if kind == "sql":
        from icepark.catalog.sql import SqlCatalog

        return SqlCatalog(name, props)
    if kind in ("filesystem", "hadoop", "file"):
        from icepark.catalog.filesystem import FileSystemCatalog

        return FileSystemCatalog(name, props)
    if kind == "rest":
        from icepark.rest.catalog import RestCatalog

        return RestCatalog(name, props)
    raise CatalogConfigError(f"Unknown catalog type {kind!r} (use sql, filesystem or rest)")
