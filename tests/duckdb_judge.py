"""DuckDB 1.5.5 and its Iceberg extension as a judge: the wheels of the dev extra (``duckdb``,
``duckdb-extension-iceberg`` and the ``avro`` and ``httpfs`` extensions it needs) hold each
extension as a ``.duckdb_extension`` file, installed from there (``INSTALL '<file>'``) into a
folder of the test run, so nothing is downloaded and ``~/.duckdb`` is left alone.

:func:`connect` gives a connection with the three loaded, :func:`shared` the one connection of
this test process (the test modules attach their servers to it under names of their own);
:func:`missing` says why DuckDB cannot judge here (a test skips with that reason), or None.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["EXTENSIONS", "missing", "connect", "shared", "attach", "rows"]

# avro and httpfs first: loading iceberg would otherwise try to download them
EXTENSIONS = ("avro", "httpfs", "iceberg")


def _extension_file(name: str) -> Path | None:
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob(f"{name}.duckdb_extension"))
        if found:
            return found[0]
    return None


def missing() -> str | None:
    """Why DuckDB cannot judge on this machine, or None when it can."""
    if importlib.util.find_spec("duckdb") is None:
        return "duckdb is not installed (the dev extra pins duckdb==1.5.5)"
    for name in EXTENSIONS:
        if _extension_file(name) is None:
            return f"the wheel duckdb-extension-{name} (its .duckdb_extension file) is missing"
    return None


def connect(extension_dir: Path | None = None) -> Any:
    """An in-memory DuckDB with the extensions installed into ``extension_dir`` and loaded,
    as a user does it; without a folder each is loaded straight from its file (a second
    faster, for a short-lived process). Never downloads (automatic installs are off)."""
    import duckdb

    config = {"autoinstall_known_extensions": False}
    if extension_dir is not None:
        config["extension_directory"] = str(extension_dir)
    con = duckdb.connect(config=config)
    for name in EXTENSIONS:
        if extension_dir is not None:
            con.execute(f"INSTALL '{_extension_file(name)}'")
    for name in EXTENSIONS:
        con.execute(
            f"LOAD {name}" if extension_dir is not None else f"LOAD '{_extension_file(name)}'"
        )
    return con


@functools.cache
def shared() -> Any:
    """One connection per test process (loading the extensions takes seconds), its extension
    folder removed at exit."""
    folder = Path(tempfile.mkdtemp(prefix="icepark-duckdb-"))
    atexit.register(shutil.rmtree, folder, True)
    return connect(folder)


def attach(con: Any, alias: str, endpoint: str, secret: str | None = None) -> None:
    """``ATTACH`` the REST catalog at ``endpoint`` as ``alias`` (with an iceberg ``secret``
    for OAuth2, else without authorization)."""
    auth = f"SECRET {secret}" if secret else "AUTHORIZATION_TYPE 'none'"
    con.execute(f"ATTACH 'wh' AS {alias} (TYPE iceberg, ENDPOINT '{endpoint}', {auth})")


def rows(con: Any, query: str) -> list[dict[str, Any]]:
    """The query's rows as dicts (Arrow's Python values, as icepark's scans give them)."""
    result = con.execute(query).arrow()
    table = result.read_all() if hasattr(result, "read_all") else result
    out: list[dict[str, Any]] = table.to_pylist()
    return out
