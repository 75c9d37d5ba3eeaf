"""The ``replace`` commit (RewriteFilesAction) and the engine-neutral compaction driver, on one
machine: sequence numbers, validation against concurrent commits, cleanup of written files,
dangling deletes, partial progress."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.catalog import Catalog, SqlCatalog
from icepark.errors import ValidationError
from icepark.expressions import parse_filter
from icepark.manifest import DataFile, FileContent
from icepark.planning.planner import FileScanTask
from icepark.spec.builder import MetadataBuilder
from icepark.spec.metadata import TableMetadata
from icepark.spec.updates import SetDefaultSpecUpdate
from icepark.table import Table
from icepark.table.maintenance.rewrite_data_files import RewriteDataFiles
from icepark.table.maintenance.rewrite_planner import RewriteFileGroup
from icepark.table.scan import DataScan
from icepark.table.write.data_files import write_arrow
from icepark.table.write.rewrite_files import RewriteFilesAction

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("value", pa.int64()),
    ]
)


def _rows(ids: range | list[int]) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "category": pa.array([["a", "b"][i % 2] for i in ids]),
            "value": pa.array([i * 10 for i in ids], pa.int64()),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _table(catalog: Catalog, version: int = 2, partitioned: bool = True, **props: str) -> Table:
    properties = {
        "format-version": str(version),
        "write.delete.mode": "merge-on-read",
        "commit.retry.min-wait-ms": "1",
        **props,
    }
    return catalog.create_table(
        "db.t", SCHEMA, partition_by=["category"] if partitioned else [], properties=properties
    )


def _ids(table: Table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def _rewrite_task(
    table: Table, metadata: TableMetadata, tasks: list[FileScanTask]
) -> list[DataFile]:
    """What an engine does for a group: read the tasks with their deletes, write new files."""
    scan = DataScan(table.io, metadata, use_snapshot_schema=False)
    batches = [b for t in tasks for b in scan.read_task(t)]
    data = pa.Table.from_batches(batches, schema=batches[0].schema) if batches else None
    if data is None or not data.num_rows:
        return []
    return write_arrow(table.io, metadata, data.select([f.name for f in SCHEMA]))


def _runner(
    table: Table, metadata: TableMetadata, calls: list[RewriteFileGroup] | None = None
) -> Any:
    def run(group: RewriteFileGroup) -> list[DataFile]:
        if calls is not None:
            calls.append(group)
        target = metadata
        if group.output_spec_id != metadata.default_spec_id:
            target = (
                MetadataBuilder(metadata).apply(SetDefaultSpecUpdate(group.output_spec_id)).build()
            )
        return _rewrite_task(table, target, group.tasks)

    return run


def _files(table: Table) -> list[str]:
    return sorted(t.file.file_path for t in table.scan().plan_files())


def _exists(table: Table, files: list[DataFile]) -> list[bool]:
    return [table.io.new_input(f.file_path).exists() for f in files]


def test_replace_keeps_the_starting_sequence_number(catalog: Catalog) -> None:
    table = _table(catalog, partitioned=False)
    for i in range(3):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    start = table.current_snapshot()
    assert start is not None
    tasks = table.scan().plan_files()
    added = _rewrite_task(table, table.metadata, tasks)
    action = RewriteFilesAction(
        table.io,
        rewritten_data_files=[t.file for t in tasks],
        added_data_files=added,
        starting_snapshot_id=start.snapshot_id,
        data_sequence_number=start.sequence_number,
    )
    with table.transaction() as tx:
        tx.add_action(action)
    snap = table.current_snapshot()
    assert snap is not None and snap.operation.value == "replace"
    assert snap.summary["deleted-data-files"] == "3"
    assert snap.summary["added-data-files"] == "1"
    assert _ids(table) == list(range(30))
    (task,) = table.scan().plan_files()
    assert task.data_sequence_number == start.sequence_number
    assert snap.sequence_number == start.sequence_number + 1


def test_a_concurrent_append_goes_through(catalog: Catalog) -> None:
    table = _table(catalog, partitioned=False)
    for i in range(3):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    start = table.current_snapshot()
    assert start is not None
    tasks = table.scan().plan_files()
    added = _rewrite_task(table, table.metadata, tasks)
    other = catalog.load_table("db.t")
    other.append(_rows(range(100, 105)))
    action = RewriteFilesAction(
        table.io,
        rewritten_data_files=[t.file for t in tasks],
        added_data_files=added,
        starting_snapshot_id=start.snapshot_id,
        data_sequence_number=start.sequence_number,
    )
    with table.transaction() as tx:
        tx.add_action(action)
    assert _ids(table) == [*range(30), *range(100, 105)]
    assert len(_files(table)) == 2


@pytest.mark.parametrize("version", [2, 3])
def test_a_concurrent_delete_on_a_rewritten_file_fails_it_and_is_kept(
    catalog: Catalog, version: int
) -> None:
    table = _table(catalog, version, partitioned=False)
    for i in range(3):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    start = table.current_snapshot()
    assert start is not None
    tasks = table.scan().plan_files()
    added = _rewrite_task(table, table.metadata, tasks)
    catalog.load_table("db.t").delete("id = 5")  # merge-on-read: a delete file for file 1
    action = RewriteFilesAction(
        table.io,
        rewritten_data_files=[t.file for t in tasks],
        added_data_files=added,
        starting_snapshot_id=start.snapshot_id,
        data_sequence_number=start.sequence_number,
    )
    tx = table.transaction()
    tx.add_action(action)
    with pytest.raises(ValidationError, match="found new delete for replaced data file"):
        tx.commit_transaction()
    table.refresh()
    assert _ids(table) == [i for i in range(30) if i != 5]
    assert _exists(table, added) == [False] * len(added)


def test_a_concurrent_removal_of_a_rewritten_file_fails_it(catalog: Catalog) -> None:
    table = _table(catalog, partitioned=False)
    for i in range(3):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    start = table.current_snapshot()
    assert start is not None
    tasks = table.scan().plan_files()
    added = _rewrite_task(table, table.metadata, tasks)
    catalog.load_table("db.t").delete("id < 10")  # drops a whole file
    action = RewriteFilesAction(
        table.io,
        rewritten_data_files=[t.file for t in tasks],
        added_data_files=added,
        starting_snapshot_id=start.snapshot_id,
    )
    tx = table.transaction()
    tx.add_action(action)
    with pytest.raises(ValidationError, match="missing required files to delete"):
        tx.commit_transaction()
    assert _ids(table.refresh()) == list(range(10, 30))
    assert _exists(table, added) == [False]


def test_a_concurrent_equality_delete_applies_to_the_rewritten_rows(catalog: Catalog) -> None:
    table = _table(catalog, partitioned=False, **{"identifier-field-ids": ""})
    for i in range(3):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    start = table.current_snapshot()
    assert start is not None
    tasks = table.scan().plan_files()
    added = _rewrite_task(table, table.metadata, tasks)
    changes = _rows([7]).append_column("_op", pa.array(["D"]))
    catalog.load_table("db.t").apply_changes(changes, on=["id"])
    action = RewriteFilesAction(
        table.io,
        rewritten_data_files=[t.file for t in tasks],
        added_data_files=added,
        starting_snapshot_id=start.snapshot_id,
        data_sequence_number=start.sequence_number,
    )
    with table.transaction() as tx:  # equality deletes still apply: no conflict
        tx.add_action(action)
    assert _ids(table) == [i for i in range(30) if i != 7]


def test_preconditions_are_java_s(catalog: Catalog) -> None:
    table = _table(catalog)
    with pytest.raises(ValidationError, match="cannot be empty"):
        RewriteFilesAction(table.io)
    f = DataFile(FileContent.DATA, "x.parquet", "PARQUET", ("a",), 1, 1)
    with pytest.raises(ValidationError, match="no data file to be rewritten"):
        RewriteFilesAction(
            table.io,
            added_data_files=[f],
            replaced_delete_files=[f.replace(content=FileContent.POSITION_DELETES)],
        )


# -- the driver -----------------------------------------------------------------------------------


def test_binpack_compacts_each_partition_and_drops_dangling_deletes(catalog: Catalog) -> None:
    table = _table(catalog)
    for i in range(6):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    table.delete("id in (3, 10, 17, 24, 31, 38, 45, 52, 59)")
    before = _ids(table)
    deletes = {d.file_path for t in table.scan().plan_files() for d in t.delete_files}
    assert deletes
    result = RewriteDataFiles(table, _runner(table, table.metadata)).execute()
    assert result.rewritten_data_files_count == 12
    assert result.added_data_files_count == 2
    assert result.removed_delete_files_count == len(deletes)
    assert _ids(table) == before
    tasks = table.scan().plan_files()
    assert len(tasks) == 2 and not any(t.delete_files for t in tasks)
    assert table.current_snapshot().operation.value == "replace"  # type: ignore[union-attr]


def test_unknown_option_names_it(catalog: Catalog) -> None:
    table = _table(catalog)
    table.append(_rows(range(10)))
    with pytest.raises(ValidationError, match="target-file-size"):
        RewriteDataFiles(table, _runner(table, table.metadata), options={"target-file-size": "1"})
    with pytest.raises(ValidationError, match="min-input-files"):
        RewriteDataFiles(
            table, _runner(table, table.metadata), options={"min-input-files": "0"}
        ).execute()


def test_partial_progress_fails_only_the_conflicting_group(catalog: Catalog) -> None:
    table = _table(catalog)
    for i in range(6):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    metadata = table.metadata
    written: list[RewriteFileGroup] = []

    def runner(group: RewriteFileGroup) -> list[DataFile]:
        files = _runner(table, metadata)(group)
        written.append(group)
        if group.info.partition[1] == ("a",):
            catalog.load_table("db.t").delete("id = 2")  # in partition a, while rewriting
        return files

    result = RewriteDataFiles(
        table,
        runner,
        options={"partial-progress.enabled": "true", "max-concurrent-file-group-rewrites": "1"},
    ).execute()
    assert result.failed_data_files_count == 6
    assert result.rewritten_data_files_count == 6
    table.refresh()
    assert _ids(table) == [i for i in range(60) if i != 2]
    by_partition: dict[object, int] = {}
    for t in table.scan().plan_files():
        by_partition[t.file.partition] = by_partition.get(t.file.partition, 0) + 1
    assert by_partition == {("a",): 6, ("b",): 1}
    failed = next(g for g in written if g.info.partition[1] == ("a",))
    assert failed.added_files == [] or not any(_exists(table, failed.added_files))


def test_without_partial_progress_a_conflict_fails_everything_and_cleans_up(
    catalog: Catalog,
) -> None:
    table = _table(catalog)
    for i in range(6):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    metadata = table.metadata
    written: list[DataFile] = []

    def runner(group: RewriteFileGroup) -> list[DataFile]:
        files = _runner(table, metadata)(group)
        written.extend(files)
        if group.info.partition[1] == ("a",):
            catalog.load_table("db.t").delete("id = 2")
        return files

    files_before = None
    with pytest.raises(ValidationError, match=r"partial-progress\.enabled"):
        files_before = _files(table)
        RewriteDataFiles(table, runner).execute()
    table.refresh()
    assert _ids(table) == [i for i in range(60) if i != 2]
    assert files_before is not None and _files(table) == files_before
    assert written and not any(_exists(table, written))


def test_output_spec_id_and_files_of_an_older_spec(catalog: Catalog) -> None:
    table = _table(catalog, partitioned=False)
    for i in range(3):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    with table.update_spec() as u:
        u.add_field("category")
    table.refresh()
    for i in range(3, 5):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    result = RewriteDataFiles(
        table, _runner(table, table.metadata), options={"rewrite-all": "true"}
    ).execute()
    assert result.rewritten_data_files_count == 3 + 4
    tasks = table.scan().plan_files()
    assert {t.spec_id for t in tasks} == {table.metadata.default_spec_id}
    # each partition's group becomes a file; the older spec's group is split by partition
    assert sorted(t.file.partition for t in tasks) == [("a",), ("a",), ("b",), ("b",)]
    assert _ids(table) == list(range(50))
    with pytest.raises(ValidationError, match="output-spec-id"):
        RewriteDataFiles(
            table, _runner(table, table.metadata), options={"output-spec-id": "7"}
        ).execute()


# -- property: whatever fails, nothing referenced is deleted and no row changes ----------------


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    fail_groups=st.sets(st.sampled_from(["a", "b"])),
    conflict=st.sampled_from([None, "a", "b"]),
    partial=st.booleans(),
)
def test_a_failing_rewrite_never_loses_a_row_or_a_referenced_file(
    tmp_path_factory: pytest.TempPathFactory,
    fail_groups: set[str],
    conflict: str | None,
    partial: bool,
) -> None:
    root = tmp_path_factory.mktemp("prop")
    catalog = SqlCatalog("p", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    table = _table(catalog)
    for i in range(4):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    table.delete("id in (1, 2, 13)")
    metadata = table.metadata
    expected = [i for i in range(40) if i not in (1, 2, 13)]
    conflict_id = {"a": 20, "b": 21}
    injected: list[int] = []

    def runner(group: RewriteFileGroup) -> list[DataFile]:
        files = _runner(table, metadata)(group)
        category = group.info.partition[1][0]
        if category in fail_groups:
            for f in files:
                table.io.delete(f.file_path)
            raise RuntimeError(f"group {category} failed")
        if conflict == category:
            try:
                catalog.load_table("db.t").delete(f"id = {conflict_id[category]}")
            except BaseException:
                for f in files:  # a runner that fails leaves nothing behind
                    table.io.delete(f.file_path)
                raise
            injected.append(conflict_id[category])
        return files

    options = {"min-input-files": "2", "partial-progress.enabled": str(partial).lower()}
    try:
        RewriteDataFiles(table, runner, options=options).execute()
    except (RuntimeError, ValidationError):
        pass
    table = catalog.load_table("db.t")
    for deleted in injected:
        expected.remove(deleted)
    assert _ids(table) == expected
    for task in table.scan().plan_files():
        for f in (task.file, *task.delete_files):
            assert table.io.new_input(f.file_path).exists(), f.file_path
    referenced = {t.file.file_path for t in table.scan().plan_files()}
    on_disk = {
        e.location
        for e in table.io.list_prefix(f"{table.location}/data")
        if "deletes" not in e.location
    }
    written_by_history = {
        t.file.file_path
        for s in table.snapshots()
        for t in table.scan(snapshot_id=s.snapshot_id).plan_files()
    }
    assert referenced <= on_disk
    assert on_disk <= written_by_history  # files of failed groups were deleted


def test_a_delete_planned_before_a_compaction_commits_after_it(catalog: Catalog) -> None:
    """A ``replace`` adds no rows: a serializable delete is not in conflict with it (Java
    validates added files of ``append`` and ``overwrite`` snapshots only)."""
    table = _table(catalog)
    for i in range(6):
        table.append(_rows(range(i * 10, i * 10 + 10)))
    stale = catalog.load_table("db.t")  # plans the delete against the snapshot before
    result = RewriteDataFiles(
        table,
        _runner(table, table.metadata),
        where=parse_filter("category = 'a'"),
        options={"min-input-files": "2"},
    ).execute()
    assert result.added_data_files_count == 1
    stale.delete("id = 21")  # in partition b: its files were not rewritten
    table.refresh()
    assert [s.operation.value for s in table.snapshots()][-2:] == ["replace", "delete"]
    assert _ids(table) == [i for i in range(60) if i != 21]
