#!/usr/bin/env bash
# A plain install works: build the wheel, install it without extras into a fresh venv, then
# run the CLI and a one-machine create/append/scan there (no Spark, no dev tools).
set -euo pipefail
python=${1:-python3}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/icepark-plain-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$python" -m pip wheel -q --no-deps -w "$work/dist" "$root" >/dev/null
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
"$work/venv/bin/python" -m pip install -q "$work"/dist/icepark-*.whl
cd "$work"
"$work/venv/bin/icepark" --version
"$work/venv/bin/python" - <<'PY'
import pyarrow as pa
import icepark

catalog = icepark.load_catalog(uri="sqlite:///catalog.db", warehouse="wh")
catalog.create_namespace("db")
table = catalog.create_table(
    "db.t", icepark.schema(("id", "long", True), ("name", "string")), partition_by=["bucket(2, id)"]
)
table.append(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}))
table.delete("id = 2")
rows = table.scan(filter="id >= 1").to_arrow().sort_by("id").to_pylist()
assert rows == [{"id": 1, "name": "a"}, {"id": 3, "name": "c"}], rows
try:
    import icepark.spark  # noqa: F401
except ImportError as e:
    assert "icepark[spark]" in str(e), e
else:
    raise AssertionError("pyspark is installed in a plain install")
print("plain install: ok")
PY
"$work/venv/bin/icepark" --uri sqlite:///catalog.db --warehouse wh scan db.t --json
