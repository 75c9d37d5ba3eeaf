"""Compaction on Spark, judged by the Java reference engine: after each rewrite it reads the
same rows, its ``files`` table has the expected files and its ``snapshots`` table one
``replace`` snapshot per commit; concurrent commits; bad input; Java's own compaction read
by icepark."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from refengine import RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.errors import ValidationError
from icepark.manifest import FileFormat
from icepark.spark import (
    delete,
    read,
    rewrite_data_files,
    rewrite_position_delete_files,
    write,
)
from icepark.spark.types import spark_schema_to_arrow
from icepark.spec.conversions import from_bytes
from icepark.spec.types import LongType
from icepark.spec.updates import UpgradeFormatVersionUpdate
from icepark.table import Table

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SOURCE = """
    SELECT id, concat('c', CAST(id % 2 AS STRING)) AS category,
           timestamp_micros(1704067200000000 + id * 600000000) AS ts, id * 10 AS value
    FROM range({start}, {end})
"""
ROWS = "SELECT id, category, unix_micros(ts), value FROM {t}"


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "wh"


@pytest.fixture
def fs_catalog(warehouse: Path) -> FileSystemCatalog:
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    catalog.create_namespace("db")
    return catalog


def _table(
    spark: Any,
    catalog: FileSystemCatalog,
    appends: int = 6,
    rows: int = 20,
    partition_by: tuple[str, ...] = ("category",),
    version: int = 2,
    name: str = "t",
) -> Table:
    schema = spark_schema_to_arrow(spark.sql(SOURCE.format(start=0, end=1)).schema)
    table = catalog.create_table(
        f"db.{name}",
        schema,
        partition_by=list(partition_by),
        properties={
            "format-version": str(version),
            "write.delete.mode": "merge-on-read",
            "commit.retry.min-wait-ms": "1",
        },
    )
    for i in range(appends):
        write(spark.sql(SOURCE.format(start=i * rows, end=(i + 1) * rows)), table)
    return catalog.load_table(f"db.{name}")


def _ref(refspark: RefEngine, warehouse: Path, name: str = "t") -> str:
    table = f"{refspark.catalog_for(warehouse)}.db.{name}"
    refspark.sql(f"REFRESH TABLE {table}")
    return table


def _theirs(refspark: RefEngine, table: str, sql: str = ROWS) -> list[list[Any]]:
    return sorted(refspark.rows(sql.format(t=table)))


def _ours(spark: Any, table: Table) -> list[list[Any]]:
    read(spark, table).createOrReplaceTempView("compaction_ours")
    return sorted([list(r) for r in spark.sql(ROWS.format(t="compaction_ours")).collect()])


def _count(refspark: RefEngine, sql: str) -> int:
    return int(refspark.rows(sql)[0][0])


def _operations(refspark: RefEngine, table: str) -> list[str]:
    rows = refspark.rows(f"SELECT operation FROM {table}.snapshots ORDER BY committed_at")
    return [r[0] for r in rows]


@pytest.mark.parametrize("read_path", ["native", "python"])
@pytest.mark.parametrize("version", [2, 3])
def test_binpack_with_deletes(
    spark: Any,
    refspark: RefEngine,
    warehouse: Path,
    fs_catalog: FileSystemCatalog,
    version: int,
    read_path: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from icepark.spark.maintenance import rewrite_data_files as rewrite_data_files_action

    # groups of small files are read in Python tasks; 0 makes every group read natively
    small = 0 if read_path == "native" else 1 << 40
    monkeypatch.setattr(rewrite_data_files_action, "SMALL_FILE_BYTES", small)
    table = _table(spark, fs_catalog, version=version)
    delete(spark, table, "id >= 10 and id < 14")
    delete(spark, fs_catalog.load_table("db.t"), "id = 70 or id = 71")
    table = fs_catalog.load_table("db.t")
    ref = _ref(refspark, warehouse)
    before = _theirs(refspark, ref)
    assert len(before) == 120 - 6
    assert _count(refspark, f"SELECT count(*) FROM {ref}.delete_files") > 0
    operations = _operations(refspark, ref)

    result = rewrite_data_files(spark, table, options={"min-input-files": "2"})

    assert result.rewritten_data_files_count == 12
    assert result.added_data_files_count == 2
    assert result.removed_delete_files_count > 0
    assert result.failed_data_files_count == 0
    ref = _ref(refspark, warehouse)
    assert _theirs(refspark, ref) == before
    assert _count(refspark, f"SELECT count(*) FROM {ref}.files WHERE content = 0") == 2
    assert _count(refspark, f"SELECT count(*) FROM {ref}.delete_files") == 0
    assert _operations(refspark, ref) == [*operations, "replace"]
    df = result.to_df(spark)
    assert df.columns == [
        "rewritten_data_files_count",
        "added_data_files_count",
        "rewritten_bytes_count",
        "failed_data_files_count",
        "removed_delete_files_count",
    ]
    assert df.collect()[0][0] == 12
    # nothing left to do: no commit
    again = rewrite_data_files(
        spark, fs_catalog.load_table("db.t"), options={"min-input-files": "2"}
    )
    assert again.rewritten_data_files_count == 0
    assert _operations(refspark, _ref(refspark, warehouse)) == [*operations, "replace"]


def test_sort_and_zorder(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog
) -> None:
    table = _table(spark, fs_catalog, appends=4, rows=50, partition_by=())
    ref = _ref(refspark, warehouse)
    before = _theirs(refspark, ref)
    size = sum(t.file.file_size_in_bytes for t in table.scan().plan_files())
    # three output files: their id ranges must not overlap, in descending order
    options = {"rewrite-all": "true", "target-file-size-bytes": str(size // 3 + 1)}
    files = len(table.scan().plan_files())
    result = rewrite_data_files(spark, table, "sort", "id desc nulls last, ts", options=options)
    assert result.rewritten_data_files_count == files
    table = fs_catalog.load_table("db.t")
    ranges = sorted(
        (
            from_bytes(LongType(), t.file.lower_bounds[1]),  # type: ignore[index]
            from_bytes(LongType(), t.file.upper_bounds[1]),  # type: ignore[index]
        )
        for t in table.scan().plan_files()
    )
    assert len(ranges) == result.added_data_files_count >= 2
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))
    ref = _ref(refspark, warehouse)
    assert _theirs(refspark, ref) == before
    files = _count(refspark, f"SELECT count(*) FROM {ref}.files")
    assert files == result.added_data_files_count

    result = rewrite_data_files(
        spark, table, "sort", "zorder(id, ts)", options={"rewrite-all": "true"}
    )
    assert result.added_data_files_count == 1
    ref = _ref(refspark, warehouse)
    assert _theirs(refspark, ref) == before
    assert _count(refspark, f"SELECT count(*) FROM {ref}.files") == 1
    assert _operations(refspark, ref)[-2:] == ["replace", "replace"]


def test_table_sort_order_and_two_partition_specs(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog
) -> None:
    table = _table(spark, fs_catalog, appends=3, partition_by=())
    table.replace_sort_order("id desc")
    with table.update_spec() as u:
        u.add_field("category")
    table = fs_catalog.load_table("db.t")
    for i in range(3, 5):
        write(spark.sql(SOURCE.format(start=i * 20, end=(i + 1) * 20)), table)
    table = fs_catalog.load_table("db.t")
    ref = _ref(refspark, warehouse)
    before = _theirs(refspark, ref)
    files = len(table.scan().plan_files())
    result = rewrite_data_files(spark, table, "sort", options={"rewrite-all": "true"})
    assert result.rewritten_data_files_count == files
    assert result.added_data_files_count == 4  # c0 and c1 of each group of a spec
    ref = _ref(refspark, warehouse)
    assert _theirs(refspark, ref) == before
    specs = refspark.rows(f"SELECT DISTINCT spec_id, partition.category FROM {ref}.files")
    assert sorted(specs) == [[1, "c0"], [1, "c1"]]
    order_ids = {r[0] for r in refspark.rows(f"SELECT sort_order_id FROM {ref}.files")}
    assert order_ids == {fs_catalog.load_table("db.t").sort_order().order_id}


def test_rewrite_on_a_branch(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog
) -> None:
    table = _table(spark, fs_catalog, appends=3)
    table.create_branch("b")
    table = fs_catalog.load_table("db.t")
    write(spark.sql(SOURCE.format(start=100, end=120)), table, branch="b")
    table = fs_catalog.load_table("db.t")
    main_before = table.current_snapshot()
    ref = _ref(refspark, warehouse)
    branch_rows = f"SELECT id, category, unix_micros(ts), value FROM {ref} VERSION AS OF 'b'"
    before = sorted(refspark.rows(branch_rows))
    result = rewrite_data_files(spark, table, options={"min-input-files": "2"}, branch="b")
    assert result.rewritten_data_files_count == 8
    table = fs_catalog.load_table("db.t")
    assert table.current_snapshot() == main_before
    ref = _ref(refspark, warehouse)
    assert sorted(refspark.rows(branch_rows)) == before
    branch_files = f"SELECT count(DISTINCT _file) FROM {ref} VERSION AS OF 'b'"
    assert _count(refspark, branch_files) == 2
    head = table.metadata.snapshot_by_name("b")
    assert head is not None and head.operation.value == "replace"


def test_reference_compaction_reads_the_same_in_icepark(
    spark: Any, refspark: RefEngine, warehouse: Path
) -> None:
    c = refspark.catalog_for(warehouse)
    t = f"{c}.db.j"
    refspark.request(
        [
            f"CREATE TABLE {t} (id bigint, category string, value bigint) USING iceberg "
            "PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', "
            "'write.delete.mode'='merge-on-read')",
            *[
                f"INSERT INTO {t} SELECT id, concat('c', CAST(id % 2 AS STRING)), id * 10 "
                f"FROM range({i * 10}, {(i + 1) * 10})"
                for i in range(5)
            ],
            f"DELETE FROM {t} WHERE id = 3 OR id = 24",
        ]
    )
    out = refspark.rows(
        f"CALL {c}.system.rewrite_data_files(table => 'db.j', "
        "options => map('min-input-files', '2'))"
    )
    assert out[0][0] == 10  # rewritten_data_files_count
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    table = catalog.load_table("db.j")
    ours = sorted([list(r) for r in read(spark, table).collect()])
    theirs = sorted(refspark.rows(f"SELECT id, category, value FROM {t}"))
    assert ours == theirs and len(ours) == 48


# -- concurrency ------------------------------------------------------------------------------------


def _racing(catalog: FileSystemCatalog, action: Any) -> Any:
    """A progress listener that commits ``action(table)`` once, when the first group is
    written (before anything is committed)."""
    done: list[bool] = []

    def listener(event: str, group: Any, plan: Any) -> None:
        if event == "written" and not done:
            done.append(True)
            action(catalog.load_table("db.t"))

    return listener


def test_a_rewrite_racing_an_append_both_land(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog
) -> None:
    table = _table(spark, fs_catalog)
    extra = spark.sql(SOURCE.format(start=500, end=510))
    listener = _racing(fs_catalog, lambda t: write(extra, t))
    result = rewrite_data_files(spark, table, options={"min-input-files": "2"}, progress=listener)
    assert result.rewritten_data_files_count == 12
    ref = _ref(refspark, warehouse)
    ids = [r[0] for r in refspark.rows(f"SELECT id FROM {ref}")]
    assert sorted(ids) == [*range(120), *range(500, 510)]
    assert _operations(refspark, ref)[-2:] == ["append", "replace"]


def test_a_delete_racing_a_rewrite_fails_its_group_and_is_kept(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog
) -> None:
    table = _table(spark, fs_catalog)
    racing = _racing(fs_catalog, lambda t: delete(spark, t, "id = 0 or id = 2"))
    result = rewrite_data_files(
        spark,
        table,
        options={
            "min-input-files": "2",
            "partial-progress.enabled": "true",
            "max-concurrent-file-group-rewrites": "1",
        },
        progress=racing,
    )
    # ids 0 and 2 are in partition c0: its group conflicts, c1's commits
    assert result.failed_data_files_count == 6
    assert result.rewritten_data_files_count == 6
    ref = _ref(refspark, warehouse)
    ids = sorted(r[0] for r in refspark.rows(f"SELECT id FROM {ref}"))
    assert ids == [i for i in range(120) if i not in (0, 2)]
    assert _count(refspark, f"SELECT count(*) FROM {ref}.files WHERE content = 0") == 7
    assert _operations(refspark, ref)[-2:] == ["delete", "replace"]
    # without partial progress the whole rewrite fails and leaves the table as it was
    table = fs_catalog.load_table("db.t")
    data = Path(table.location.removeprefix("file:")) / "data"

    def on_disk() -> set[str]:
        return {str(p) for p in data.rglob("*.parquet") if "deletes" not in p.name}

    files_before = on_disk()
    racing = _racing(fs_catalog, lambda t: delete(spark, t, "id = 4 or id = 6"))
    with pytest.raises(ValidationError, match="new delete for replaced data file"):
        rewrite_data_files(spark, table, options={"min-input-files": "2"}, progress=racing)
    table = fs_catalog.load_table("db.t")
    assert table.current_snapshot().operation.value == "delete"  # type: ignore[union-attr]
    assert on_disk() == files_before  # the failed rewrite's files were deleted
    ids = sorted(r[0] for r in refspark.rows(f"SELECT id FROM {_ref(refspark, warehouse)}"))
    assert ids == [i for i in range(120) if i not in (0, 2, 4, 6)]


def test_a_rewrite_racing_a_rewrite(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog
) -> None:
    table = _table(spark, fs_catalog)
    racing = _racing(
        fs_catalog,
        lambda t: rewrite_data_files(spark, t, options={"min-input-files": "2"}),
    )
    with pytest.raises(ValidationError, match="missing required files"):
        rewrite_data_files(spark, table, options={"min-input-files": "2"}, progress=racing)
    ref = _ref(refspark, warehouse)
    assert sorted(r[0] for r in refspark.rows(f"SELECT id FROM {ref}")) == list(range(120))
    assert _count(refspark, f"SELECT count(*) FROM {ref}.files") == 2
    assert _operations(refspark, ref)[-1] == "replace"
    assert _operations(refspark, ref).count("replace") == 1


# -- bad input ------------------------------------------------------------------------------------


def test_bad_input_names_the_option_or_column(spark: Any, fs_catalog: FileSystemCatalog) -> None:
    table = _table(spark, fs_catalog, appends=2)
    location = table.metadata_location
    with pytest.raises(ValidationError, match="'shuffle'"):
        rewrite_data_files(spark, table, strategy="shuffle")
    with pytest.raises(ValidationError, match="min-input-file"):
        rewrite_data_files(spark, table, options={"min-input-file": "2"})
    with pytest.raises(ValidationError, match="'nope'"):
        rewrite_data_files(spark, table, "sort", "nope desc")
    with pytest.raises(ValidationError, match="'nope'"):
        rewrite_data_files(spark, table, "sort", "zorder(id, nope)")
    with pytest.raises(ValidationError, match="target-file-size-bytes"):
        rewrite_data_files(spark, table, options={"target-file-size-bytes": "0"})
    with pytest.raises(ValidationError, match="delete-ratio-threshold"):
        rewrite_data_files(spark, table, options={"delete-ratio-threshold": "2"})
    with pytest.raises(ValidationError, match="sort order"):
        rewrite_data_files(spark, table, "sort")  # the table has none
    with pytest.raises(ValidationError, match="shuffle-partitions-per-file"):
        rewrite_data_files(spark, table, options={"shuffle-partitions-per-file": "2"})
    assert fs_catalog.load_table("db.t").metadata_location == location


# -- position deletes -----------------------------------------------------------------------------


def test_rewrite_position_delete_files_v2(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog
) -> None:
    table = _table(spark, fs_catalog, appends=3)
    for where in ("id = 2 or id = 3", "id = 22 or id = 23", "id = 44 or id = 45"):
        delete(spark, fs_catalog.load_table("db.t"), where)
    table = fs_catalog.load_table("db.t")
    ref = _ref(refspark, warehouse)
    before = _theirs(refspark, ref)
    assert _count(refspark, f"SELECT count(*) FROM {ref}.delete_files") == 6
    result = rewrite_position_delete_files(spark, table, options={"rewrite-all": "true"})
    assert result.rewritten_delete_files_count == 6
    assert result.added_delete_files_count == 2
    assert result.added_bytes_count > 0
    ref = _ref(refspark, warehouse)
    assert _theirs(refspark, ref) == before
    assert _count(refspark, f"SELECT count(*) FROM {ref}.delete_files") == 2
    assert _operations(refspark, ref)[-1] == "replace"
    # deletes of data files that are gone are dropped: remove partition c0's data files
    table = fs_catalog.load_table("db.t")
    table.delete("category = 'c0'")
    result = rewrite_position_delete_files(
        spark, fs_catalog.load_table("db.t"), options={"rewrite-all": "true"}
    )
    assert result.rewritten_delete_files_count == 2
    assert result.added_delete_files_count == 1
    ref = _ref(refspark, warehouse)
    assert _count(refspark, f"SELECT count(*) FROM {ref}.delete_files") == 1
    assert sorted(r[0] for r in refspark.rows(f"SELECT id FROM {ref}")) == [
        i for i in range(1, 60, 2) if i not in (3, 23, 45)
    ]


def test_rewrite_position_delete_files_v3_makes_one_dv_per_file(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog
) -> None:
    table = _table(spark, fs_catalog, appends=2)
    delete(spark, table, "id = 2 or id = 3")  # v2 position delete files
    table = fs_catalog.load_table("db.t")
    with table.transaction() as tx:
        tx.update(UpgradeFormatVersionUpdate(3))
    table = fs_catalog.load_table("db.t")
    assert table.format_version == 3
    delete(spark, table, "id = 4 or id = 25")  # DVs, merged with the position deletes
    table = fs_catalog.load_table("db.t")
    ref = _ref(refspark, warehouse)
    before = _theirs(refspark, ref)
    formats = sorted(r[0] for r in refspark.rows(f"SELECT file_format FROM {ref}.delete_files"))
    assert "PARQUET" in formats and "PUFFIN" in formats
    result = rewrite_position_delete_files(spark, table)
    assert result.added_delete_files_count == 3  # one DV per data file with deletes
    ref = _ref(refspark, warehouse)
    assert _theirs(refspark, ref) == before
    formats = [r[0] for r in refspark.rows(f"SELECT file_format FROM {ref}.delete_files")]
    assert formats == ["PUFFIN"] * 3
    tasks = fs_catalog.load_table("db.t").scan().plan_files()
    assert all(
        len(t.delete_files) <= 1 and all(d.file_format == FileFormat.PUFFIN for d in t.delete_files)
        for t in tasks
    )


def test_remove_dangling_deletes(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog
) -> None:
    table = _table(spark, fs_catalog, appends=3)
    delete(spark, table, "id = 2 or id = 3")
    fs_catalog.load_table("db.t").delete("category = 'c1'")  # c1's delete file now dangles
    table = fs_catalog.load_table("db.t")
    result = rewrite_data_files(
        spark, table, options={"min-input-files": "2", "remove-dangling-deletes": "true"}
    )
    assert result.rewritten_data_files_count == 3
    assert result.removed_delete_files_count == 2  # c0's with its files, c1's dangling
    ref = _ref(refspark, warehouse)
    assert _count(refspark, f"SELECT count(*) FROM {ref}.delete_files") == 0
    assert _operations(refspark, ref)[-2:] == ["replace", "replace"]
    assert sorted(r[0] for r in refspark.rows(f"SELECT id FROM {ref}")) == [
        i for i in range(0, 60, 2) if i != 2
    ]


# -- manifests and existing files -----------------------------------------------------------------


def test_rewrite_manifests_read_by_the_reference(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog
) -> None:
    table = _table(spark, fs_catalog, appends=5)
    table.set_properties({"commit.manifest-merge.enabled": "false"})
    for i in range(5, 8):
        write(
            spark.sql(SOURCE.format(start=i * 20, end=(i + 1) * 20)), fs_catalog.load_table("db.t")
        )
    table = fs_catalog.load_table("db.t")
    ref = _ref(refspark, warehouse)
    entries = (
        f"SELECT data_file.file_path, snapshot_id, sequence_number, file_sequence_number "
        f"FROM {ref}.entries"
    )
    before_entries = sorted(refspark.rows(entries))
    before = _theirs(refspark, ref)
    assert _count(refspark, f"SELECT count(*) FROM {ref}.manifests") > 1
    result = table.rewrite_manifests()
    assert result.added_manifests_count == 1
    ref = _ref(refspark, warehouse)
    assert _count(refspark, f"SELECT count(*) FROM {ref}.manifests") == 1
    assert sorted(refspark.rows(entries)) == before_entries
    assert _theirs(refspark, ref) == before
    assert _operations(refspark, ref)[-1] == "replace"


def test_add_files_of_a_spark_written_hive_folder(
    spark: Any, refspark: RefEngine, warehouse: Path, fs_catalog: FileSystemCatalog, tmp_path: Path
) -> None:
    from icepark.spark import add_files

    source = spark.sql(SOURCE.format(start=0, end=40))
    folder = tmp_path / "hive"
    source.repartition(2).write.partitionBy("category").parquet(str(folder))  # no field ids
    schema = spark_schema_to_arrow(source.schema)
    table = fs_catalog.create_table("db.t", schema, partition_by=["category"])
    result = add_files(spark, table, str(folder))
    parquet_files = [p for p in folder.rglob("*.parquet")]
    assert result.added_files_count == len(parquet_files)
    assert result.changed_partition_count == 2
    ref = _ref(refspark, warehouse)
    source.createOrReplaceTempView("hive_source")
    expected = sorted([list(r) for r in spark.sql(ROWS.format(t="hive_source")).collect()])
    assert _theirs(refspark, ref) == expected
    assert _ours(spark, fs_catalog.load_table("db.t")) == expected
    assert _count(refspark, f"SELECT count(*) FROM {ref}.files") == len(parquet_files)
    assert _count(refspark, f"SELECT count(*) FROM {ref} WHERE category = 'c1'") == 20
    with pytest.raises(ValidationError, match="already referenced"):
        add_files(spark, fs_catalog.load_table("db.t"), str(folder))
