"""Scan planning: pruning across specs, splits at row-group offsets, bin packing."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import SqlCatalog
from icepark.manifest import DataFile, FileContent, FileFormat
from icepark.planning.delete_index import DeleteFileIndex
from icepark.planning.planner import FileScanTask, SplitOptions, plan_tasks
from icepark.spec.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from icepark.spec.transforms import IdentityTransform
from icepark.table import Table


@pytest.fixture
def table(tmp_path: Path) -> Table:
    catalog = SqlCatalog("p", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string())])
    return catalog.create_table(
        "db.t",
        schema,
        partition_by=["g"],
        properties={
            "write.parquet.row-group-size-bytes": "4096",
            "write.metadata.metrics.default": "full",
        },
    )


def _data(n: int, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "g": pa.array(["x" if i % 2 else "y" for i in range(n)]),
        }
    )


def test_splits_cover_every_row_once(table: Table) -> None:
    data = _data(20000)
    table.append(pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=500)))
    tasks = table.scan().plan_files()
    assert all(len(t.file.split_offsets or []) > 1 for t in tasks)
    combined = table.scan(
        options={"read.split.target-size": "8192", "read.split.open-file-cost": "1"}
    ).plan_tasks()
    pieces = [t for c in combined for t in c.tasks]
    assert len(pieces) > len(tasks)
    scan = table.scan()
    ids: list[int] = []
    for piece in pieces:
        for batch in scan.read_task(piece):
            ids.extend(batch.column("id").to_pylist())
    assert sorted(ids) == list(range(20000))


def test_bin_packing_respects_target_and_lookback() -> None:
    files = [
        DataFile(FileContent.DATA, f"/f{i}", FileFormat.PARQUET, (), 10, size, spec_id=0)
        for i, size in enumerate([10, 60, 30, 90, 20, 50, 40])
    ]
    combined = plan_tasks([FileScanTask(f) for f in files], SplitOptions(100, 10, 1))
    assert sorted(p.file.file_path for c in combined for p in c.tasks) == sorted(
        f.file_path for f in files
    )
    assert all(c.size <= 100 for c in combined)
    assert len(combined) == 4  # first fit: [10 60 30] [90] [20 50] [40]
    one_bin_open = plan_tasks([FileScanTask(f) for f in files], SplitOptions(100, 1, 1))
    assert len(one_bin_open) >= len(combined)
    heavy = plan_tasks([FileScanTask(f) for f in files], SplitOptions(100, 10, 60))
    assert all(len(c.tasks) == 1 for c in heavy)


def test_pruning_across_partition_specs(table: Table) -> None:
    table.append(_data(100))
    from icepark.spec.builder import MetadataBuilder
    from icepark.spec.updates import AddPartitionSpecUpdate, SetDefaultSpecUpdate

    spec = PartitionSpec(1, (PartitionField(1, 1001, IdentityTransform(), "id"),))
    table.commit([], [AddPartitionSpecUpdate(spec), SetDefaultSpecUpdate(-1)])
    assert MetadataBuilder(table.metadata).build() is table.metadata
    table.append(_data(4, start=1000))
    scan = table.scan(filter="id = 1002")
    tasks = scan.plan_files()
    assert [t.file.partition for t in tasks] == [(1002,)]
    assert scan.to_arrow().column("id").to_pylist() == [1002]
    assert table.scan(filter="g = 'x'").count() == 52
    assert table.scan(filter="g = 'x' and id >= 1000").count() == 2


def test_count_uses_metadata_when_it_can(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    table.append(_data(1000))
    scan = table.scan(filter="g = 'x'")
    assert all(str(t.residual) == "true" for t in scan.plan_files())

    def no_reads(*_: object, **__: object) -> None:
        raise AssertionError("count() read a data file")

    monkeypatch.setattr(type(scan), "read_task", no_reads)
    assert table.scan(filter="g = 'x'").count() == 500
    assert table.scan().count() == 1000


def test_delete_index_rules() -> None:
    spec = PartitionSpec(0, (PartitionField(1, 1000, IdentityTransform(), "g"),))
    index = DeleteFileIndex({0: spec, 1: UNPARTITIONED.__class__(1, ())})
    data = DataFile(FileContent.DATA, "/d", FileFormat.PARQUET, ("x",), 10, 100, spec_id=0)
    pos = DataFile(FileContent.POSITION_DELETES, "/p", FileFormat.PARQUET, ("x",), 1, 10, spec_id=0)
    pos_other = DataFile(
        FileContent.POSITION_DELETES, "/q", FileFormat.PARQUET, ("y",), 1, 10, spec_id=0
    )
    eq = DataFile(FileContent.EQUALITY_DELETES, "/e", FileFormat.PARQUET, ("x",), 1, 10, spec_id=0)
    eq_global = DataFile(
        FileContent.EQUALITY_DELETES, "/eg", FileFormat.PARQUET, (), 1, 10, spec_id=1
    )
    index.add(pos, 5)
    index.add(pos_other, 5)
    index.add(eq, 5)
    index.add(eq_global, 6)
    assert {f.file_path for f in index.for_data_file(data, 5)} == {"/p", "/eg"}
    assert {f.file_path for f in index.for_data_file(data, 4)} == {"/p", "/e", "/eg"}
    assert index.for_data_file(data, 7) == []


def test_adjust_split_size_as_java() -> None:
    from icepark.planning.planner import adjust_split_size

    mb = 1024 * 1024
    # enough splits for every slot: unchanged
    assert adjust_split_size(1000 * mb, 4, 128 * mb) == 128 * mb
    # a small scan: one split per slot, but not below 16 MB
    assert adjust_split_size(100 * mb, 4, 128 * mb) == 25 * mb
    assert adjust_split_size(10 * mb, 4, 128 * mb) == 16 * mb
    # a configured size below 16 MB is a floor of its own
    assert adjust_split_size(10 * mb, 4, 1 * mb) == 1 * mb
    assert adjust_split_size(2 * mb, 4, 1 * mb) == 1 * mb
