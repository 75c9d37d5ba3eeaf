"""Cold start: ``import icepark`` is cheap, and planning and reading a table import neither
pandas nor Spark (pandas comes with the spark extra; pyarrow imports it whenever it converts
Python values, so icepark builds no Arrow value at import time)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

_SCRIPT = """
import sys
import icepark
assert "pyarrow" not in sys.modules and "sqlalchemy" not in sys.modules, "import icepark is heavy"
import pyarrow as pa
catalog = icepark.load_catalog(uri=f"sqlite:///{sys.argv[1]}/c.db", warehouse=f"{sys.argv[1]}/wh")
table = catalog.load_table("db.t")
assert len(table.scan(filter="id = 7").plan_files()) == 1
assert table.scan().to_arrow().num_rows == 100
assert table.scan(columns=["id"]).count() == 100
heavy = sorted(m for m in ("pandas", "pyspark", "pyarrow.dataset") if m in sys.modules)
print("HEAVY", heavy)
"""


def test_planning_and_reading_import_no_pandas(tmp_path: Path) -> None:
    import pyarrow as pa

    import icepark

    catalog = icepark.load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        icepark.schema(("id", "long", True), ("v", "string")),
        partition_by=["bucket(4, id)"],
    )
    table.append(pa.table({"id": list(range(100)), "v": [str(i) for i in range(100)]}))
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SCRIPT), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout
