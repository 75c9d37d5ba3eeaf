"""Planning on Spark (``read.data-planning-mode`` / ``read.delete-planning-mode``): manifests
read and judged in Spark tasks give the tasks of the driver's plan.

A table of 5,400 data files over 6 data manifests (5,000 of them entries added by metadata
only, each with its own id bounds), two partition specs, position and equality deletes:
planned locally and in Spark tasks of the test session, for a filter on metrics and one on
the partition and a column without metrics, the tasks are equal (files, delete files, residuals, sequence
numbers). A small table of real files reads the same rows through ``ispark.read`` and
``ispark.sql`` either way; bad modes are errors naming them.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark import spark as ispark
from icepark.errors import ValidationError
from icepark.spec.conversions import to_bytes
from icepark.spec.types import LongType

pytestmark = pytest.mark.spark

planning = importlib.import_module("icepark.spark.read.planning")
DATA, DELETES = planning.DATA_PLANNING_MODE_CONF, planning.DELETE_PLANNING_MODE_CONF


def _rows(first: int, n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(first, first + n), pa.int64()),
            "part": pa.array([i % 4 for i in range(first, first + n)], pa.int32()),
            "name": [f"n{i % 7}" for i in range(first, first + n)],
        }
    )


def _table(catalog: Any, name: str) -> Any:
    return catalog.create_table(
        name,
        _rows(0, 1).schema,
        partition_by=["part"],
        properties={
            "format-version": "2",
            "write.delete.mode": "merge-on-read",
            "commit.manifest-merge.enabled": "false",
        },
    )


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from icepark.catalog import load_catalog

    warehouse = tmp_path_factory.mktemp("planning")
    catalog = load_catalog("planning", type="filesystem", warehouse=str(warehouse))
    catalog.create_namespace("db")
    table = _table(catalog, "db.many")
    for start in range(0, 400, 100):
        table.append(_rows(start, 100))
    table.delete("id = 3 or id = 250")  # position deletes
    gone = _rows(10, 2).append_column("_op", pa.array(["D", "D"]))
    table.apply_changes(gone, on=["id"])  # equality deletes
    base = next(t.file for t in table.scan().plan_files())
    made = 0

    def copies(n: int, spec_id: int, partition: Any) -> list[Any]:
        nonlocal made
        out = []
        for i in range(n):
            low = 1_000_000 + made * 100
            out.append(
                base.replace(
                    file_path=base.file_path.replace(".parquet", f"-copy{made}.parquet"),
                    partition=partition(i),
                    spec_id=spec_id,
                    lower_bounds={1: to_bytes(LongType(), low)},
                    upper_bounds={1: to_bytes(LongType(), low + 99)},
                )
            )
            made += 1
        return out

    for _ in range(3):
        with table.transaction() as tx:
            tx.append_files(copies(1_000, 0, lambda i: (i % 4,)))
    with table.update_spec() as u:
        u.add_field("bucket(4, id)")
    spec_id = table.refresh().spec().spec_id
    for _ in range(2):
        with table.transaction() as tx:
            tx.append_files(copies(1_000, spec_id, lambda i: (i % 4, i % 3)))
    return table.refresh()


@pytest.fixture
def distributed(spark: Any) -> Any:
    spark.conf.set(DATA, "distributed")
    yield spark
    spark.conf.unset(DATA)
    spark.conf.unset(DELETES)


def _runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    runs: list[str] = []
    real = planning.SparkRunner.run

    def run(self: Any, work: Any, inputs: Any, what: str) -> Any:
        runs.append(what)
        return real(self, work, inputs, what)

    monkeypatch.setattr(planning.SparkRunner, "run", run)
    return runs


def test_tasks_planned_in_spark_equal_the_drivers(
    distributed: Any, many_files: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _runs(monkeypatch)
    texts = ["id >= 1200000 and id < 1300050", "part = 2 and name = 'n5'"]
    for i, text in enumerate(texts):
        # deletes too for the first (each remote side is a Spark job of its own)
        distributed.conf.set(DELETES, "distributed" if i == 0 else "local")
        scan = many_files.scan(filter=text)
        local = list(scan.plan_files())
        got = list(planning.plan_scan(distributed, scan))
        assert got == local, text
        assert [(t.delete_files, t.residual, t.data_sequence_number) for t in got] == [
            (t.delete_files, t.residual, t.data_sequence_number) for t in local
        ], text
    assert runs == ["deletes", "data", "data"]
    everything = list(many_files.scan().plan_files())
    assert len(everything) == 5_000 + 4 * 4 and len({t.spec_id for t in everything}) == 2
    kinds = {d.content for t in everything for d in t.delete_files}
    assert len(kinds) == 2  # position and equality deletes attached
    pruned = list(many_files.scan(filter="id >= 1200000 and id < 1300050").plan_files())
    assert 1_000 < len(pruned) < 1_100  # by metrics


def _spill_folders(table: Any) -> list[Path]:
    return sorted(Path(table.location.removeprefix("file:")).glob("metadata/planning-*"))


def test_big_results_come_back_through_storage_then_leave_nothing(
    distributed: Any, many_files: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts too big to collect are written by the tasks under the table's metadata folder
    and read back from there (or, where that folder cannot be written, through Spark's
    storage): the same tasks either way, and no folder left, even by a plan read halfway."""
    monkeypatch.setattr(planning, "COLLECT_BYTES", 0)  # every result is big
    distributed.conf.set(DELETES, "distributed")
    local = list(many_files.scan().plan_files())
    plan = iter(planning.plan_scan(distributed, many_files.scan()))
    got = [next(plan)]
    (folder,) = _spill_folders(many_files)  # the parts wait there while they are read
    assert sorted(p.name for p in folder.iterdir())[0].endswith(".part")
    got += list(plan)
    assert got == local
    assert [(t.delete_files, t.residual) for t in got] == [
        (t.delete_files, t.residual) for t in local
    ]
    assert _spill_folders(many_files) == []
    halfway = iter(planning.plan_scan(distributed, many_files.scan()))
    next(halfway)
    assert len(_spill_folders(many_files)) == 1
    halfway.close()
    assert _spill_folders(many_files) == []
    monkeypatch.setattr(planning, "_writable", lambda io, folder: False)
    assert list(planning.plan_scan(distributed, many_files.scan())) == local
    assert _spill_folders(many_files) == []


def test_big_results_through_storage_on_spark_connect(
    connect_spark: Any, many_files: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(planning, "COLLECT_BYTES", 0)  # every result is big
    connect_spark.conf.set(DATA, "distributed")
    try:
        got = list(planning.plan_scan(connect_spark, many_files.scan(filter="part = 1")))
    finally:
        connect_spark.conf.unset(DATA)
    assert got == list(many_files.scan(filter="part = 1").plan_files())
    assert _spill_folders(many_files) == []


def test_reads_and_queries_the_same_rows(
    spark: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(catalog, "db.small")
    for start in range(0, 300, 100):
        table.append(_rows(start, 100))
    table.delete("id < 5")
    table.set_properties(
        {"read.data-planning-mode": "distributed", "read.delete-planning-mode": "distributed"}
    )
    runs = _runs(monkeypatch)
    got = sorted(r.id for r in ispark.read(spark, table.refresh(), filter="id > 2").collect())
    assert got == list(range(5, 300)) and runs == ["deletes", "data"]
    query = "SELECT id FROM db.small WHERE part = 1 AND id < 50"
    got = sorted(r.id for r in ispark.sql(spark, query, catalog=catalog).collect())
    assert got == [i for i in range(5, 50) if i % 4 == 1] and len(runs) == 4
    table.set_properties({"read.data-planning-mode": "LOCAL", "read.delete-planning-mode": "local"})
    assert sorted(r.id for r in ispark.read(spark, table.refresh()).collect()) == list(
        range(5, 300)
    )
    assert len(runs) == 4  # planned on the driver


def test_bad_modes_are_errors_naming_them(spark: Any, catalog: Any) -> None:
    table = _table(catalog, "db.bad")
    table.append(_rows(0, 10))
    table.set_properties({"read.data-planning-mode": "sideways"})
    with pytest.raises(ValidationError, match=re.escape("read.data-planning-mode='sideways'")):
        ispark.read(spark, table.refresh())
    table.set_properties({"read.data-planning-mode": "auto"})
    spark.conf.set(DELETES, "everywhere")
    try:
        with pytest.raises(ValidationError, match=re.escape(f"{DELETES}='everywhere'")):
            ispark.read(spark, table.refresh())
    finally:
        spark.conf.unset(DELETES)


def test_a_failed_probe_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe's write made the folder, then its delete failed (as a store that lets one
    write but not delete would): the parts go through Spark and no empty folder is left."""
    from icepark.io import load_file_io

    io = load_file_io({}, str(tmp_path))
    folder = str(tmp_path / "metadata" / "planning-x")
    assert planning._writable(io, folder)  # a writable folder: the probe leaves nothing
    assert not (tmp_path / "metadata" / "planning-x" / "probe").exists()

    def refused(location: str) -> None:
        raise PermissionError(f"cannot delete {location}")

    monkeypatch.setattr(io, "delete", refused)
    assert not planning._writable(io, folder)
    assert list((tmp_path / "metadata").glob("planning-*/*")) == []
    assert not (tmp_path / "metadata" / "planning-x").exists()
