"""Server-side scan planning (the REST spec's ``planTableScan``) against local planning.

    python -m bench.rest_planning [--warehouse DIR] [--runs N] [--point N]

``bench.many`` of the standard tables (10,000 small files over 20 commits; built here with
the reference engine when DIR has none: ``make_tables.py DIR 0 10000 20``) is served by
icepark's REST server (uvicorn on 127.0.0.1 in a process of its own, a file-system catalog
behind it) and planned:

* **point query**: ``scan(filter="id = N").plan_files()`` through a ``RestCatalog`` with
  ``rest.scan-planning.enabled=true`` (one ``POST .../plan``, the server plans and answers
  with the tasks) against the same call on the table loaded directly (local planning);
* **every file**: ``scan().plan_files()`` the same two ways (10,000 tasks: the server keeps
  the plan and the client fetches its pages of 1,000 tasks with ``POST .../tasks``).

Both ways run in this process with imports done and the page cache warm; each figure is the
median of ``runs`` after a warm-up, and the two plans are checked to hold the same files.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ICEPARK_SHARED", ROOT.parent / "shared"))
REF_PYTHON = Path(os.environ.get("ICEPARK_REF_VENV", ROOT / ".venv-ref")) / "bin" / "python"
MAKE_TABLES = SHARED / "bench-tables" / "make_tables.py"


def _median(fn: Callable[[], Any], runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


_SERVE = """
import sys, uvicorn
from icepark.catalog import load_catalog
from icepark.rest import create_app
catalog = load_catalog("bench", type="filesystem", warehouse=sys.argv[1])
uvicorn.run(create_app(catalog), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning",
            access_log=False)
"""


@contextmanager
def _serving(warehouse: Path) -> Iterator[str]:
    """icepark's REST server over ``warehouse`` in a process of its own (as deployed: the
    client's decoding and the server's planning do not share a GIL)."""
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE, str(warehouse), str(port)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{uri}/healthz").read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the REST server did not start") from None
                time.sleep(0.1)
        yield uri
    finally:
        proc.terminate()
        proc.wait(10)


def _ensure_many(warehouse: Path) -> None:
    if (warehouse / "bench" / "many" / "metadata").is_dir():
        return
    print(f"building bench.many in {warehouse} with the reference engine ...", flush=True)
    subprocess.run(
        [str(REF_PYTHON), str(MAKE_TABLES), str(warehouse), "0", "10000", "20"], check=True
    )


def measure(warehouse: Path, runs: int, point: int) -> dict[str, Any]:
    from icepark.catalog import load_catalog
    from icepark.rest.catalog import RestCatalog

    catalog = load_catalog("bench", type="filesystem", warehouse=str(warehouse))
    local = catalog.load_table("bench.many")
    out: dict[str, Any] = {}
    with _serving(warehouse) as uri:
        rest = RestCatalog("rest", {"uri": uri, "rest.scan-planning.enabled": "true"})
        remote = rest.load_table("bench.many")
        assert remote.scan_planner is not None
        for name, filter in (
            (f"point query (id = {point})", f"id = {point}"),
            ("every file", None),
        ):
            mine = sorted(t.file.file_path for t in remote.scan(filter=filter).plan_files())
            theirs = sorted(t.file.file_path for t in local.scan(filter=filter).plan_files())
            if mine != theirs:
                raise SystemExit(f"{name}: the server planned other files than local planning")
            out[name] = {
                "files planned": len(mine),
                "server-side (s)": _median(
                    lambda f=filter: remote.scan(filter=f).plan_files(), runs
                ),
                "local (s)": _median(lambda f=filter: local.scan(filter=f).plan_files(), runs),
            }
        rest.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", default="/tmp/icepark-bench-planning/wh")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--point", type=int, default=50007)  # as bench.run: files * 10 // 2 + 7
    args = parser.parse_args(argv)
    warehouse = Path(args.warehouse)
    _ensure_many(warehouse)
    result = measure(warehouse, args.runs, args.point)
    for name, row in result.items():
        ratio = row["server-side (s)"] / row["local (s)"]
        print(
            f"{name:28} files {row['files planned']:6}  server-side {row['server-side (s)']:.3f} s"
            f"  local {row['local (s)']:.3f} s  ratio {ratio:.2f}x"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
