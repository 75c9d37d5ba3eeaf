#!/usr/bin/env bash
# The venv of a Spark Connect client without a JVM: pyspark-client (the Connect client alone:
# no jars, no Py4J; it cannot share a venv with pyspark) and icepark from this checkout
# (editable, so the tests run the current code), for tests/spark/connect/test_connect_client.py.
# Made once; `make client-venv` makes it again when pyproject.toml changes.
set -euo pipefail
venv=${1:-.venv-client}
python=${2:-python3}
root=$(cd "$(dirname "$0")/.." && pwd)
test -x "$venv/bin/python" || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
"$venv/bin/python" -m pip install -q -e "$root[spark-client]"
# the point of this venv: pyspark is the Connect client only
"$venv/bin/python" - <<'PY'
import importlib.util
import os

import pyspark

assert importlib.util.find_spec("py4j") is None, "py4j is installed: this is not pyspark-client"
jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
assert not os.path.isdir(jars), f"{jars} exists: this is not pyspark-client"
print("Spark Connect client without a JVM:", pyspark.__version__)
PY
touch "$venv/.icepark-client"
