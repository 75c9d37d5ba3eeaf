"""icepark on Spark with executors in JVMs of their own (``local-cluster[2,1,1024]``): nothing
may depend on driver-only state but the catalog. One cluster session (``cluster_runner.py``,
in a subprocess: a process has one Spark context, and the shared ``local[2]`` one may run
beside it) serves every test here: the scenarios of ``s3_scenarios.py`` (which
``test_spark_s3.py`` runs on ``local[2]`` only when this file is switched off), judged by a
model of the operations, icepark's one-machine read and PyIceberg, plus the native and python
paths on local files.

Runs in every ``make test``; ``ICEPARK_SPARK_CLUSTER=0`` skips it."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import s3_checks as checks

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(
        os.environ.get("ICEPARK_SPARK_CLUSTER") == "0", reason="ICEPARK_SPARK_CLUSTER=0"
    ),
]

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "cluster_runner.py"
START_TIMEOUT_S = 300
SCENARIO_TIMEOUT_S = 600


class Cluster:
    """The runner subprocess: ``run(scenario, **kwargs)`` returns the scenario's result."""

    def __init__(self, log: Path) -> None:
        self.log = log
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(HERE), str(HERE.parent), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
        env["PYSPARK_PYTHON"] = sys.executable
        env.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        self._stderr = open(log, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(RUNNER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            text=True,
        )
        self._selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)
        line = self._line(START_TIMEOUT_S)
        if line.strip() != "READY":
            self.close()
            raise RuntimeError(f"the cluster did not start ({line!r}):\n{self._log_tail()}")

    def _log_tail(self) -> str:
        self._stderr.flush()
        return self.log.read_text(errors="replace")[-4000:]

    def _line(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                raise TimeoutError(
                    f"no answer from the cluster in {timeout} s:\n{self._log_tail()}"
                )
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the cluster runner exited:\n{self._log_tail()}")
            return line

    def run(self, scenario: str, **kwargs: Any) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"scenario": scenario, "kwargs": kwargs}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self._line(SCENARIO_TIMEOUT_S)
            if line.startswith("RESULT "):
                answer = json.loads(line[len("RESULT ") :])
                if "error" in answer:
                    raise AssertionError(f"{scenario} failed on the cluster:\n{answer['error']}")
                return answer["ok"]

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._stderr.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    pytest.importorskip("pyspark")
    runner = Cluster(tmp_path_factory.mktemp("cluster") / "spark.log")
    try:
        yield runner
    finally:
        runner.close()


@pytest.fixture
def props(tmp_path: Path, s3_endpoint: dict[str, str]) -> dict[str, str]:
    return checks.catalog_props(tmp_path, s3_endpoint)


def test_local_files_native_paths_and_merge_on_read(cluster: Cluster, tmp_path: Path) -> None:
    result = cluster.run("local_pipeline", warehouse=str(tmp_path / "wh"))
    assert result["paths"] == ["native", "native"]
    assert result["filtered"] == 125 and result["source"] == 1000
    # ids 0..499 twice (create, then the data source's append); deletes of id < 100 (both
    # copies), update of id >= 490 (both) to n9, merge of 450..549: matched rows (450..499,
    # twice) become 'm', 500..549 are inserted as 'm'
    expected = {f"n{k}": 2 * len([i for i in range(100, 450) if i % 4 == k]) for k in range(4)}
    expected["m"] = 2 * 50 + 50
    assert result["counts"] == expected
    assert result["delete_files"] > 0


@pytest.mark.s3
def test_s3_write_modes_and_pruned_read(cluster: Cluster, props: dict[str, str]) -> None:
    out = cluster.run("write_modes", props=props, name="db.w")
    assert out["decisions"] == {"read": "python", "write": "python"}
    checks.check_table(props, "db.w", out["rows"], checks.expected_write_modes())
    assert out["pruned"] == [
        r for r in checks.expected_write_modes() if r[1] == "n0" and r[0] < 150
    ]
    assert 0 < out["planned"] < out["files"]
    assert out["operations"] == ["append", "append", "overwrite", "overwrite"]


@pytest.mark.s3
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_s3_row_level(cluster: Cluster, props: dict[str, str], mode: str) -> None:
    out = cluster.run("row_level", props=props, name="db.r", mode=mode)
    checks.check_table(props, "db.r", out["rows"], checks.expected_row_level())
    assert (out["delete_files"] > 0) == (mode == "merge-on-read")
    assert len(out["operations"]) == 5


@pytest.mark.s3
def test_s3_data_source_and_orphans(cluster: Cluster, props: dict[str, str]) -> None:
    out = cluster.run("source", props=props, name="db.s")
    checks.check_table(props, "db.s", out["rows"], checks.expected_source())
    out = cluster.run("orphans", props=props, name="db.o")
    assert out["dry_run"] == out["deleted"] == out["strays"] and out["left"] == []
    checks.check_table(props, "db.o", out["rows"], checks.model_rows(0, 60))


@pytest.mark.s3
def test_s3_streaming_and_compaction(
    cluster: Cluster, props: dict[str, str], tmp_path: Path
) -> None:
    out = cluster.run("upkeep", props=props, name="db.u", checkpoint=str(tmp_path / "chk"))
    checks.check_upkeep(props, "db.u", out)
