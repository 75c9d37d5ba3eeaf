"""One load-test client process (:mod:`tests.rest.test_rest_load`): connects to a REST catalog
server with PyIceberg's or icepark's ``RestCatalog``, loads the table once, waits for the
common start time, then appends ``--appends`` single-row batches tagged ``(process, i)``.

    python -m tests.rest.load_clients ENGINE URI TABLE PROCESS APPENDS START

Prints one JSON line: the ``i`` of each append that returned, and the errors of those that
raised (type and message), so the test can tell a lost append from a duplicated one.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

SCHEMA = pa.schema([("process", pa.int64()), ("i", pa.int64())])


def _batch(process: int, i: int) -> pa.Table:
    return pa.table({"process": [process], "i": [i]}, schema=SCHEMA)


def _appender(engine: str, uri: str, table: str) -> Callable[[pa.Table], Any]:
    if engine == "pyiceberg":
        from pyiceberg.catalog import load_catalog

        py_table = load_catalog(f"load-{engine}", type="rest", uri=uri).load_table(table)
        return py_table.append
    import icepark

    ice_table = icepark.load_catalog(type="rest", uri=uri).load_table(table)
    return ice_table.append


def main(argv: list[str]) -> None:
    engine, uri, table, process, appends, start = argv
    append = _appender(engine, uri, table)
    while time.time() < float(start):  # every client starts appending at the same moment
        time.sleep(0.005)
    landed: list[int] = []
    errors: list[str] = []
    for i in range(int(appends)):
        try:
            append(_batch(int(process), i))
            landed.append(i)
        except Exception as exc:  # reported: the test fails on any
            errors.append(f"{i}: {type(exc).__name__}: {str(exc)[:200]}")
    print(json.dumps({"landed": landed, "errors": errors}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
