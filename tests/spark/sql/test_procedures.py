"""CALL through ``run_extension``, judged by the Java reference engine: Java builds two equal
tables in one warehouse (same statements, same files), runs each procedure on its table, and
icepark runs the same CALL on the twin; the outputs have Java's columns and the same values
(snapshot ids compared by their place in each table's history), the tables end with the same
refs, and Java reads icepark's table afterwards. Bad calls raise typed errors naming the
procedure or argument and listing the valid ones."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from refengine import RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.errors import ValidationError
from icepark.spark.sql.errors import (
    ProcedureArgumentError,
    SqlParseError,
    UnknownProcedureError,
)
from icepark.spark.sql.extensions import PROCEDURES, parse_extension, run_extension
from icepark.table import Table

pytestmark = [pytest.mark.spark, pytest.mark.interop]

CREATE = (
    "CREATE TABLE {t} (id bigint, category string) USING iceberg PARTITIONED BY (category) "
    "TBLPROPERTIES ('format-version'='2', 'write.wap.enabled'='true', "
    "'write.delete.mode'='merge-on-read')"
)


def _insert(t: str, start: int) -> str:
    rows = ", ".join(f"({i}, 'c{i % 2}')" for i in range(start, start + 4))
    return f"INSERT INTO {t} VALUES {rows}"


def _setup(t: str) -> list[str]:
    return [
        CREATE.format(t=t),
        _insert(t, 0),
        _insert(t, 10),
        _insert(t, 20),
        "SET spark.wap.id = w1",
        _insert(t, 30),
        "RESET spark.wap.id",
    ]


# each CALL with {t} the table, {s0}.. its snapshots (history order), {ts1} just after s1
CALLS: list[str] = [
    "CALL {cat}.system.ancestors_of('{t}')",
    "CALL {cat}.system.rollback_to_snapshot('{t}', {s0})",
    "CALL {cat}.system.set_current_snapshot(table => '{t}', snapshot_id => {s2})",
    "CALL {cat}.system.rollback_to_timestamp(table => '{t}', timestamp => TIMESTAMP '{ts1}')",
    "CALL {cat}.system.cherrypick_snapshot('{t}', {s2})",
    "CALL {cat}.system.publish_changes(wap_id => 'w1', table => '{t}')",
    "CALL {cat}.system.fast_forward('{t}', 'audit', 'main')",
    "CALL {cat}.system.set_current_snapshot(table => '{t}', ref => 'v1')",
    "CALL {cat}.system.ancestors_of(table => '{t}', snapshot_id => {s2})",
    "CALL {cat}.system.rewrite_manifests('{t}')",
    "CALL {cat}.system.rewrite_data_files(table => '{t}', options => map('min-input-files', '2'))",
    "CALL {cat}.system.rewrite_data_files(table => '{t}', strategy => 'sort', sort_order => "
    "'id DESC NULLS LAST', where => 'id >= 10', options => map('rewrite-all', 'true'))",
    "CALL {cat}.system.expire_snapshots(table => '{t}', older_than => TIMESTAMP '2100-01-01 00:00:00',"
    " retain_last => 2)",
    "CALL {cat}.system.ancestors_of('{t}')",
]
# between the calls Java's branch and tag are made by ALTER TABLE (same for both tables)
BEFORE = {
    "CALL {cat}.system.fast_forward('{t}', 'audit', 'main')": [
        "ALTER TABLE {t} CREATE BRANCH audit AS OF VERSION {s0}",
        "ALTER TABLE {t} CREATE TAG v1 AS OF VERSION {s1}",
    ],
    "CALL {cat}.system.rewrite_manifests('{t}')": [
        "CALL {cat}.system.set_current_snapshot('{t}', {s3})"
    ],
}
# sizes of files icepark wrote itself (the earlier rewrite's) are its own
OWN_SIZES = {"rewritten_bytes_count"}
SORT_CALL = CALLS[-3]
SNAPSHOT_COLUMNS = {
    "snapshot_id",
    "previous_snapshot_id",
    "current_snapshot_id",
    "source_snapshot_id",
    "previous_ref",
    "updated_ref",
}


def _snapshots(table: Table) -> list[Any]:
    return sorted(table.snapshots(), key=lambda s: s.sequence_number)


def _values(table: Table) -> dict[str, str]:
    snaps = _snapshots(table)
    values = {f"s{i}": str(s.snapshot_id) for i, s in enumerate(snaps)}
    after = dt.datetime.fromtimestamp((snaps[1].timestamp_ms + 1) / 1000, dt.UTC)
    values["ts1"] = after.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return values


def _statements(call: str, t: str, cat: str, values: dict[str, str]) -> list[str]:
    return [s.format(t=t, cat=cat, **values) for s in [*BEFORE.get(call, []), call]]


def _normalized(
    columns: list[str], rows: list[list[Any]], ids: list[int], times: list[int]
) -> list[list[Any]]:
    """Rows with snapshot ids as ``#<place in history>`` and their timestamps likewise."""
    out = []
    for row in rows:
        new = []
        for name, value in zip(columns, row, strict=True):
            if name in SNAPSHOT_COLUMNS and value is not None:
                value = f"#{ids.index(int(value))}" if int(value) in ids else f"?{value}"
            elif name == "timestamp":
                value = f"t{times.index(int(value))}"
            new.append(value)
        out.append(new)
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, refspark: RefEngine, spark: Any) -> Any:
    warehouse = tmp_path_factory.mktemp("procs") / "wh"
    cat = refspark.catalog_for(warehouse)
    java, ours = f"{cat}.db.j", f"{cat}.db.p"
    refspark.request([f"CREATE NAMESPACE IF NOT EXISTS {cat}.db", *_setup(java), *_setup(ours)])
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    j_values = _values(catalog.load_table("db.j"))
    p_values = _values(catalog.load_table("db.p"))
    theirs: list[dict[str, Any]] = []
    seen: dict[str, dict[int, Any]] = {"j": {}, "p": {}}
    mine: list[tuple[list[str], list[list[Any]], Any]] = []
    for call in CALLS:
        theirs.append(refspark.request(_statements(call, java, cat, j_values))[-1])
        result = None
        for statement in _statements(call, ours, cat, p_values):
            parsed = parse_extension(statement)
            assert parsed is not None, statement
            result = run_extension(spark, parsed, catalog, cat)
        assert result is not None
        mine.append((result.columns, [list(r) for r in result.collect()], result.schema))
        for name in ("j", "p"):  # every snapshot either table had, expired ones included
            for snap in catalog.load_table(f"db.{name}").snapshots():
                seen[name][snap.snapshot_id] = snap
    return catalog, cat, theirs, mine, seen


def _history(snapshots: Any) -> tuple[list[int], list[int]]:
    snaps = sorted(snapshots, key=lambda s: s.sequence_number)
    return [s.snapshot_id for s in snaps], [s.timestamp_ms for s in snaps]


def test_procedure_outputs_as_java(run: Any) -> None:
    _, _, theirs, mine, seen = run
    j_ids, j_times = _history(seen["j"].values())
    p_ids, p_times = _history(seen["p"].values())
    for call, java, (columns, rows, _) in zip(CALLS, theirs, mine, strict=True):
        assert columns == java["columns"], call
        expected = _normalized(java["columns"], java["rows"], j_ids, j_times)
        got = _normalized(columns, rows, p_ids, p_times)
        if call == SORT_CALL:
            keep = [i for i, c in enumerate(columns) if c not in OWN_SIZES]
            expected = [[r[i] for i in keep] for r in expected]
            got = [[r[i] for i in keep] for r in got]
            assert got[0][0] > 0, "the sort rewrite rewrote nothing"
        assert got == expected, call


def test_procedure_output_types(run: Any) -> None:
    from pyspark.sql import types as T

    _, _, _, mine, _ = run
    by_name = {c.split("(")[0].split(".")[-1]: i for i, c in enumerate(CALLS)}
    rollback = mine[by_name["rollback_to_snapshot"]][2]
    assert rollback == T.StructType(
        [
            T.StructField("previous_snapshot_id", T.LongType(), False),
            T.StructField("current_snapshot_id", T.LongType(), False),
        ]
    )
    rewrite = mine[by_name["rewrite_data_files"]][2]
    assert [(f.name, f.dataType, f.nullable) for f in rewrite.fields][:3] == [
        ("rewritten_data_files_count", T.IntegerType(), False),
        ("added_data_files_count", T.IntegerType(), False),
        ("rewritten_bytes_count", T.LongType(), False),
    ]
    expire = mine[by_name["expire_snapshots"]][2]
    assert all(f.dataType == T.LongType() and f.nullable for f in expire.fields)


def test_tables_end_alike_and_java_reads_ours(run: Any, refspark: RefEngine) -> None:
    catalog, cat, _, _, _ = run
    tables = [catalog.load_table(f"db.{n}") for n in ("j", "p")]
    described = []
    for table in tables:
        ids, _ = _history(table.snapshots())
        refs = {
            n: (r.type.value, ids.index(r.snapshot_id) if r.snapshot_id in ids else None)
            for n, r in table.refs().items()
        }
        operations = [s.operation.value for s in _snapshots(table)]
        described.append((refs, operations, len(ids)))
    assert described[0] == described[1]
    refspark.sql(f"REFRESH TABLE {cat}.db.p")
    rows = refspark.request([f"SELECT * FROM {cat}.db.{n} ORDER BY id" for n in ("j", "p")])
    assert rows[0]["rows"] == rows[1]["rows"] and len(rows[1]["rows"]) == 16


# -- bad calls -------------------------------------------------------------------------------


@pytest.fixture
def table(catalog: Any) -> Table:
    from icepark import schema

    created: Table = catalog.create_table("db.e", schema(("id", "long", True)))
    return created


@pytest.mark.parametrize(
    ("statement", "error", "named"),
    [
        ("CALL system.nope('db.e')", UnknownProcedureError, "system.rollback_to_snapshot"),
        ("CALL system.migrate('db.e')", ValidationError, "session catalog"),
        ("CALL other.rollback_to_snapshot('db.e', 1)", UnknownProcedureError, "other"),
        (
            "CALL fs.system.rollback_to_snapshot(table => 'db.e', snap => 1)",
            ProcedureArgumentError,
            "snap",
        ),
        ("CALL system.rollback_to_snapshot('db.e')", ProcedureArgumentError, "snapshot_id"),
        (
            "CALL fs.system.rollback_to_snapshot('db.e', snapshot_id => 1)",
            ProcedureArgumentError,
            "mixed",
        ),
        ("CALL system.ancestors_of('db.e', 1, 2)", ProcedureArgumentError, "Too many"),
        (
            "CALL system.add_files(table => 'db.e', source_table => '`parquet`.`/nope`', "
            "partition_filter => map('id', '1'))",
            ValidationError,
            "unpartitioned",
        ),
        (
            "CALL system.remove_orphan_files(table => 'db.e', older_than => "
            "TIMESTAMP '2100-01-01 00:00:00')",
            ValidationError,
            "future",
        ),
        (
            "CALL system.remove_orphan_files(table => 'db.e', older_than => now())",
            SqlParseError,
            "constant",
        ),
        (
            "CALL system.create_changelog_view('db.e', map('a', 'b'))",
            ProcedureArgumentError,
            "changelog_view",
        ),
        ("CALL system.rollback_to_snapshot('db.e', 'x')", ProcedureArgumentError, "snapshot_id"),
        # Java's types: no string for a long, an int or a timestamp, no long for an int
        (
            "CALL system.ancestors_of('db.e', '1')",
            ProcedureArgumentError,
            "cannot cast StringType to LongType",
        ),
        (
            "CALL system.expire_snapshots(table => 'db.e', older_than => '2021-01-01 00:00:00')",
            ProcedureArgumentError,
            "cannot cast StringType to TimestampType",
        ),
        (
            "CALL system.expire_snapshots(table => 'db.e', retain_last => 10000000000)",
            ProcedureArgumentError,
            "cannot cast LongType to IntegerType",
        ),
        (
            "CALL system.rewrite_manifests('db.e', 'true')",
            ProcedureArgumentError,
            "cannot cast StringType to BooleanType",
        ),
        (
            "CALL fs.system.expire_snapshots(table => 'db.e', table => 'db.e')",
            ProcedureArgumentError,
            "Duplicate",
        ),
        (
            "CALL fs.system.expire_snapshots(table => 'db.e', retain_last => 0)",
            ProcedureArgumentError,
            "retain_last",
        ),
        ("CALL system.set_current_snapshot('db.e')", ProcedureArgumentError, "snapshot_id"),
        (
            "CALL system.rewrite_table_path('db.e', '/nowhere', '/elsewhere')",
            ValidationError,
            "does not start with /nowhere/",
        ),
        ("CALL system.rewrite_table_path('db.e', '/nowhere')", ProcedureArgumentError, "target"),
        (
            "CALL system.rewrite_table_path('db.e', '/a', '/b', end_version => 'v9.metadata.json')",
            ValidationError,
            "v9.metadata.json",
        ),
        ("CALL system.rollback_to_snapshot('db.e', 42)", Exception, "42"),
        ("CALL system.rollback_to_snapshot('db.nope', 42)", Exception, "nope"),
    ],
)
def test_bad_calls(
    spark: Any, catalog: Any, table: Table, statement: str, error: type, named: str
) -> None:
    before = table.refresh().metadata
    with pytest.raises(error) as caught:
        parsed = parse_extension(statement)
        assert parsed is not None
        run_extension(spark, parsed, catalog, "fs")
    assert named in str(caught.value)
    if isinstance(caught.value, ProcedureArgumentError):
        assert caught.value.valid  # the procedure's parameters are listed
    assert table.refresh().metadata == before


def test_unknown_procedure_lists_them_all(spark: Any, catalog: Any) -> None:
    parsed = parse_extension("CALL fs.system.expire_snapshot('db.t')")
    assert parsed is not None
    with pytest.raises(UnknownProcedureError) as caught:
        run_extension(spark, parsed, catalog, "fs")
    assert caught.value.valid == [f"system.{n}" for n in sorted(PROCEDURES)]


def test_bad_table_argument_is_a_parse_error(spark: Any, catalog: Any, table: Table) -> None:
    parsed = parse_extension("CALL system.ancestors_of('db.`e')")
    assert parsed is not None
    with pytest.raises(SqlParseError):
        run_extension(spark, parsed, catalog, "fs")


def test_register_table_and_changelog(spark: Any, catalog: Any, tmp_path: Path) -> None:
    from icepark import schema

    t = catalog.create_table("db.src", schema(("id", "long", True), ("v", "string")))
    import pyarrow as pa

    for start in (0, 10):
        t.append(pa.table({"id": pa.array([start, start + 1], pa.int64()), "v": ["a", "b"]}))
    t.delete("id = 1")
    parsed = parse_extension(f"CALL fs.system.register_table('db.copy', '{t.metadata_location}')")
    assert parsed is not None
    out = run_extension(spark, parsed, catalog, "fs").collect()
    current = t.refresh().current_snapshot()
    assert current is not None and current.summary is not None
    assert [tuple(r) for r in out] == [
        (
            current.snapshot_id,
            int(current.summary["total-records"]),
            int(current.summary["total-data-files"]),
        )
    ]
    assert catalog.load_table("db.copy").current_snapshot() == current
    parsed = parse_extension(
        "CALL fs.system.create_changelog_view(table => 'db.src', changelog_view => 'src_log')"
    )
    assert parsed is not None
    (row,) = run_extension(spark, parsed, catalog, "fs").collect()
    assert row[0] == "src_log"
    changes = spark.sql(
        "SELECT id, _change_type, _change_ordinal FROM src_log ORDER BY _change_ordinal, id"
    ).collect()
    assert [tuple(r) for r in changes] == [
        (0, "INSERT", 0),
        (1, "INSERT", 0),
        (10, "INSERT", 1),
        (11, "INSERT", 1),
        (1, "DELETE", 2),
    ]


def test_empty_changelog_view_reads_nothing(
    spark: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa

    from icepark import schema
    from icepark.table.incremental.changelog import ChangelogScan

    t = catalog.create_table(("db", "we`ird"), schema(("id", "long", True)))
    t.append(pa.table({"id": pa.array([1], pa.int64())}))

    def no_read(self: Any) -> Any:
        raise AssertionError("an empty changelog view read the changelog")

    monkeypatch.setattr(ChangelogScan, "to_arrow", no_read)
    parsed = parse_extension(
        "CALL fs.system.create_changelog_view(table => 'db.`we``ird`', "
        "options => map('end-timestamp', '1'))"
    )
    assert parsed is not None
    (row,) = run_extension(spark, parsed, catalog, "fs").collect()
    assert row[0] == "`we``ird_changes`"  # the default name, its back quote doubled
    view = spark.table(row[0])
    assert view.columns == ["id", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert view.count() == 0


def test_compute_partition_stats_registers_the_file(any_spark: Any, catalog: Any) -> None:
    """``CALL system.compute_partition_stats``: Java's output column, the file registered
    for the snapshot (its rows judged against Java's in
    tests/table/maintenance/test_partition_stats.py), no row for a table without snapshots."""
    import pyarrow as pa

    from icepark import spark as ispark

    parted = catalog.create_table(
        "db.ps", pa.schema([("id", pa.int64()), ("c", pa.string())]), partition_by=["c"]
    )
    empty = ispark.sql(any_spark, "CALL system.compute_partition_stats('db.ps')", catalog)
    assert empty.columns == ["partition_statistics_file"] and empty.collect() == []
    parted.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "c": ["a", "b", "a"]}))
    parted = catalog.load_table("db.ps")
    snapshot_id = parted.metadata.current_snapshot_id
    call = f"CALL system.compute_partition_stats(table => 'db.ps', snapshot_id => {snapshot_id})"
    (row,) = ispark.sql(any_spark, call, catalog).collect()
    (registered,) = catalog.load_table("db.ps").metadata.partition_statistics
    assert row[0] == registered.statistics_path and registered.snapshot_id == snapshot_id


def test_rewrite_table_path_stages_a_copy(any_spark: Any, catalog: Any, tmp_path: Path) -> None:
    """``CALL system.rewrite_table_path``: Java's output columns, the end version's name and
    the file list, whose files once copied make a table that reads as the original (judged
    against Java in tests/table/maintenance/test_rewrite_table_path.py); with a start version
    only the versions after it are listed. Nothing of the table changes."""
    import shutil

    import pyarrow as pa

    from icepark import spark as ispark

    table = catalog.create_table("db.rtp", pa.schema([("id", pa.int64())]))
    for ids in ([1, 2], [3]):
        table.append(pa.table({"id": pa.array(ids, pa.int64())}))
    table = catalog.load_table("db.rtp")
    before = table.metadata_location
    target, stage = tmp_path / "copy", tmp_path / "stage"
    call = (
        f"CALL system.rewrite_table_path(table => 'db.rtp', source_prefix => '{table.location}',"
        f" target_prefix => '{target}', staging_location => '{stage}'{{}})"
    )
    result = ispark.sql(any_spark, call.format(""), catalog)
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in result.schema] == [
        ("latest_version", "string", True),
        ("file_list_location", "string", True),
    ]
    ((latest, file_list),) = result.collect()
    assert latest == Path(before).name and file_list == f"{stage}/file-list"
    for line in Path(file_list).read_text().splitlines():
        source, copy = line.split(",")
        Path(copy).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, copy)
    copied = Table.from_metadata(f"{target}/metadata/{latest}")
    assert sorted(copied.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert catalog.load_table("db.rtp").metadata_location == before

    previous = Path(table.metadata.metadata_log[-1].metadata_file).name
    start = f", start_version => '{previous}'"
    ((again, file_list),) = ispark.sql(any_spark, call.format(start), catalog).collect()
    versions = [
        line for line in Path(file_list).read_text().splitlines() if ".metadata.json" in line
    ]
    assert again == latest and versions == [f"{stage}/metadata/{latest},{target}/metadata/{latest}"]
