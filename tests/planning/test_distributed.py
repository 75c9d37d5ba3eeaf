"""Planning with manifests read elsewhere gives the tasks of a local plan.

The remote side here is a runner in this process that pickles the work, its inputs and every
part both ways and splits the manifests over two "tasks", as Spark does
(:mod:`icepark.spark.read.planning` is the Spark runner; tests/spark/read/test_spark_planning.py
runs it). On the table of test_columns_plan (two specs, position and equality deletes, DVs in
v3): 12 random filters and time travel, data and deletes planned remotely, by arrays (v2:
manifests mostly kept sent back as row numbers, the others as records) and entry by entry
(v3); ``auto`` by its rule; bad modes named.
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from filter_cases import random_filter

import icepark.planning.distributed as distributed
import icepark.planning.walk as walk
from icepark.avro.compiled import kernel_available
from icepark.errors import ValidationError
from icepark.manifest import ManifestFile
from icepark.manifest.entry_columns import LazyDataFile
from icepark.planning.distributed import KeptRows, RemotePlanning, plans_remotely
from icepark.table import Table

pytestmark = pytest.mark.skipif(not kernel_available(), reason="numba is not importable")


class InProcess:
    """A :class:`~icepark.planning.distributed.ManifestRunner` in this process."""

    def __init__(self, parallelism: int = 8) -> None:
        self.parallelism = parallelism
        self.runs: list[tuple[str, int]] = []
        self.parts: set[str] = set()  # the kinds of part sent back

    def run(self, work: Any, inputs: Sequence[Any], what: str) -> Iterator[Any]:
        self.runs.append((what, len(inputs)))
        work = pickle.loads(pickle.dumps(work))
        half = (len(inputs) + 1) // 2
        for group in (inputs[:half], inputs[half:]):
            seen = -1
            for k, part in work(pickle.loads(pickle.dumps(list(group)))):
                assert k >= seen  # inputs in order
                seen = k
                self.parts.add(_kind(part))
                yield pickle.loads(pickle.dumps(part))


def _kind(part: Any) -> str:
    if isinstance(part, KeptRows):
        return "every live row" if part.rows is None else "some rows"
    return type(part).__name__


def _plan(table: Table, text: str | None, remote: RemotePlanning | None, **scan: Any) -> list[Any]:
    return list(table.scan(filter=text, **scan).plan_files(remote))


def test_remote_plans_equal_local_plans(
    evolved_table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_columns = evolved_table.format_version == 2  # v3 (DVs): entry by entry
    rng = random.Random(35)
    texts: list[str | None] = [None, "id = 650", "s like 'ap%'", "tz is null"]
    texts += [random_filter(rng)[0] for _ in range(12)]
    oldest = min(evolved_table.snapshots(), key=lambda s: s.sequence_number).snapshot_id
    if by_columns:
        monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
    runner = InProcess()
    remote = RemotePlanning(runner, "distributed", "distributed")
    for text in texts:
        local = _plan(evolved_table, text, None)
        got = _plan(evolved_table, text, remote)
        assert got == local, text
        for a, b in zip(got, local, strict=True):
            assert (a.delete_files, a.residual, a.data_sequence_number, a.spec_id) == (
                b.delete_files,
                b.residual,
                b.data_sequence_number,
                b.spec_id,
            )
        if by_columns and got:
            assert isinstance(got[0].file, LazyDataFile)
    assert _plan(evolved_table, "id > 100", remote, snapshot_id=oldest) == _plan(
        evolved_table, "id > 100", None, snapshot_id=oldest
    )
    whats = {what for what, _ in runner.runs}
    assert whats == {"data", "deletes"}
    if by_columns:  # manifests mostly kept come back as row numbers, the others as records
        assert {"every live row", "some rows", "KeptEntries"} <= runner.parts, runner.parts
    everything = _plan(evolved_table, None, None)
    assert any(t.delete_files for t in everything)
    assert len({t.spec_id for t in everything}) == 2


def test_modes_choose_where_each_side_is_read(evolved_table: Table) -> None:
    runner = InProcess()
    local = _plan(evolved_table, "i > 0", None)
    assert _plan(evolved_table, "i > 0", RemotePlanning(runner, "local", "distributed")) == local
    assert [w for w, _ in runner.runs] == ["deletes"]
    runner.runs.clear()
    assert _plan(evolved_table, "i > 0", RemotePlanning(runner, "distributed", "local")) == local
    assert [w for w, _ in runner.runs] == ["data"]
    runner.runs.clear()
    # auto on this table: far below the size that pays for a job
    assert _plan(evolved_table, "i > 0", RemotePlanning(runner, "auto", "AUTO")) == local
    assert runner.runs == []


def _manifests(n: int, size: int) -> list[ManifestFile]:
    return [ManifestFile(f"m{i}.avro", size, 0) for i in range(n)]


def test_auto_reads_remotely_only_when_it_pays(monkeypatch: pytest.MonkeyPatch) -> None:
    per_core = distributed.AUTO_MIN_BYTES_PER_CORE
    big = _manifests(10, per_core)  # 10 cores' worth of manifests
    assert plans_remotely("auto", big, 16, local_parallelism=2)
    assert not plans_remotely("auto", big, 2, local_parallelism=2)  # no more cores than here
    assert not plans_remotely("auto", big[:4], 16, local_parallelism=2)  # too few manifests
    small = _manifests(10, per_core // 10)  # one core's worth in all
    assert not plans_remotely("auto", small, 16, local_parallelism=2)
    assert plans_remotely("auto", small, 16, local_parallelism=1) is False  # 10 manifests, 1 core
    assert plans_remotely("distributed", small[:1], 1, local_parallelism=8)
    assert not plans_remotely("distributed", [], 16)
    assert not plans_remotely("local", big, 16, local_parallelism=2)
    # a threshold met by the table's manifests: auto reads them remotely
    monkeypatch.setattr(distributed, "AUTO_MIN_BYTES_PER_CORE", 1)
    assert plans_remotely("auto", small, 16, local_parallelism=2)


def test_auto_plans_remotely_at_the_threshold(
    evolved_table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(distributed, "AUTO_MIN_BYTES_PER_CORE", 1)
    runner = InProcess(parallelism=64)
    remote = RemotePlanning(runner, "auto", "auto", local_parallelism=1)
    assert _plan(evolved_table, "id >= 300", remote) == _plan(evolved_table, "id >= 300", None)
    assert runner.runs[-1][0] == "data" and runner.runs[-1][1] > 2
    runner.runs.clear()
    remote = RemotePlanning(runner, "auto", "auto", local_parallelism=64)  # as many cores here
    assert _plan(evolved_table, "id >= 300", remote) == _plan(evolved_table, "id >= 300", None)
    assert runner.runs == []


@pytest.mark.parametrize("field", ["data_mode", "delete_mode"])
def test_a_bad_mode_names_the_property_and_value(field: str) -> None:
    name = "read.data-planning-mode" if field == "data_mode" else "read.delete-planning-mode"
    with pytest.raises(ValidationError, match=f"{name}='everywhere'"):
        RemotePlanning(InProcess(), **{field: "everywhere"})
