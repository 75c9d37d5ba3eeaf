"""A client for the reference engine (Apache Iceberg 1.10.2 on Spark 3.5, ../shared).

One long-lived ``refspark.py --serve`` process per test session answers JSON requests.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ICEPARK_SHARED", ROOT.parent / "shared"))
REF_SCRIPT = SHARED / "reference-iceberg" / "refspark.py"
REF_VENV = Path(os.environ.get("ICEPARK_REF_VENV", ROOT / ".venv-ref"))


class ReferenceError_(AssertionError):
    """The reference engine refused a statement."""


class RefEngine:
    def __init__(self) -> None:
        python = REF_VENV / "bin" / "python"
        self.log_path = ROOT / ".services-refspark.log"  # the JVM's log (its stderr)
        self._stderr = open(self.log_path, "w")
        # a classic session of its own, whatever pyspark mode this process is in
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")
        }
        self._proc = subprocess.Popen(
            [str(python), str(REF_SCRIPT), "--serve"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        self._lock = threading.Lock()
        self._catalogs: dict[str, str] = {}

    def catalog_for(self, warehouse: str | Path) -> str:
        """A Hadoop catalog over ``warehouse`` with a name of its own (Spark caches catalogs
        by name, so one name must never point at two warehouses)."""
        path = str(Path(warehouse).resolve())
        if path not in self._catalogs:
            self._catalogs[path] = f"ref{len(self._catalogs)}"
            self.request([], catalogs={self._catalogs[path]: path})
        return self._catalogs[path]

    def request(
        self,
        sql: list[str],
        catalogs: dict[str, str] | None = None,
        views: dict[str, str] | None = None,
        conf: dict[str, str] | None = None,
        check: bool = True,
    ) -> list[dict[str, Any]]:
        """Runs ``sql`` in order; a failing statement raises, or with ``check=False`` stays
        in its result as ``{"sql": ..., "error": ...}`` while the rest go on."""
        req = {"sql": sql, "catalogs": catalogs or {}, "views": views or {}, "conf": conf or {}}
        with self._lock:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(json.dumps(req) + "\n")
            self._proc.stdin.flush()
            while True:
                line = self._proc.stdout.readline()
                if not line:
                    raise RuntimeError("reference engine exited; see .services-refspark.log")
                line = line.strip()
                if line.startswith("{"):
                    break
        answer = json.loads(line)
        if "error" in answer:
            raise ReferenceError_(answer["error"])
        for result in answer["results"] if check else ():
            if "error" in result:
                raise ReferenceError_(f"{result['sql']}: {result['error']}")
        return list(answer["results"])

    def sql(
        self,
        statement: str,
        catalogs: dict[str, str] | None = None,
        views: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        (result,) = self.request([statement], catalogs, views)
        if "error" in result:
            raise ReferenceError_(f"{statement}: {result['error']}")
        return result

    def rows(self, statement: str, **kw: Any) -> list[list[Any]]:
        return list(self.sql(statement, **kw)["rows"])

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        self._stderr.close()


def available() -> bool:
    return REF_SCRIPT.is_file() and (REF_VENV / ".reference-iceberg-ready").is_file()
