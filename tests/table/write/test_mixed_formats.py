"""One table holding Parquet, Avro and ORC data files (the format changed by property between
commits, per append, and an ORC file committed through the API): scans, filters, deletes in
both modes (position deletes in Avro too), upserts (equality deletes in Avro), time travel,
and ``icepark files`` showing each file's format."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from orc_files import write_orc

from icepark.catalog import Catalog, FileSystemCatalog
from icepark.cli.main import cli
from icepark.manifest import FileContent, FileFormat
from icepark.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("point", pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])),
        pa.field("tags", pa.list_(pa.string())),
    ]
)


def _rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": list(ids),
            "category": [["a", "b", None][i % 3] for i in ids],
            "point": [None if i % 5 == 0 else {"x": i * 1.0, "y": -i * 1.0} for i in ids],
            "tags": [[f"t{i}"] * (i % 3) for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = FileSystemCatalog("fs", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _live(table: Table) -> list[tuple[FileContent, FileFormat]]:
    task_files = []
    for t in table.scan().plan_files():
        task_files.append((t.file.content, t.file.file_format))
        task_files += [(d.content, d.file_format) for d in t.delete_files]
    return sorted(set(task_files))


def _ids(table: Table, **scan: object) -> list[int]:
    return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())  # type: ignore[arg-type]


def _mixed(catalog: Catalog, tmp_path: Path, mode: str) -> tuple[Table, list[int]]:
    table = catalog.create_table(
        "db.mixed",
        SCHEMA,
        partition_by=["category"],
        properties={"format-version": "2", "write.delete.mode": mode, "write.update.mode": mode},
    )
    table.append(_rows(range(0, 30)))  # Parquet
    snapshots = [table.current_snapshot().snapshot_id]  # type: ignore[union-attr]
    table.set_properties({"write.format.default": "avro"})
    table.append(_rows(range(30, 60)))  # Avro, by property
    table.append(_rows(range(60, 75)), file_format="parquet")  # Parquet, per write
    # an ORC file written elsewhere (with Java's iceberg.id attributes), committed by the API
    schema = table.schema()
    orc_rows = _rows(range(75, 90)).to_pylist()
    df = write_orc(tmp_path / "extra.orc", schema, [r for r in orc_rows if r["category"] == "a"])
    spec = table.spec()
    df = df.replace(partition=("a",), spec_id=spec.spec_id)
    with table.transaction() as tx:
        tx.append_files([df])
    snapshots.append(table.current_snapshot().snapshot_id)  # type: ignore[union-attr]
    expected = [*range(0, 75), *[r["id"] for r in orc_rows if r["category"] == "a"]]
    return table, expected


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_scan_filter_delete_and_time_travel(catalog: Catalog, tmp_path: Path, mode: str) -> None:
    table, expected = _mixed(catalog, tmp_path, mode)
    formats = {f for c, f in _live(table) if c == FileContent.DATA}
    assert formats == {FileFormat.PARQUET, FileFormat.AVRO, FileFormat.ORC}
    assert _ids(table) == sorted(expected)
    full = table.scan().to_arrow().sort_by("id")
    assert full.select(["id", "category", "point", "tags"]).to_pylist() == [
        r for r in _rows(range(0, 90)).to_pylist() if r["id"] in set(expected)
    ]
    # filters over every format, on nested fields too
    assert _ids(table, filter="category = 'b' and id >= 20") == [
        i for i in expected if i % 3 == 1 and i >= 20
    ]
    assert _ids(table, filter="point.x > 70") == [i for i in expected if i > 70 and i % 5]
    before = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    # delete rows from files of every format (and whole files of one partition)
    table.delete("id in (3, 33, 63, 76, 79) or category is null")
    gone = {3, 33, 63, 76, 79} | {i for i in expected if i % 3 == 2}
    assert _ids(table) == sorted(set(expected) - gone)
    if mode == "merge-on-read":
        deletes = {f for c, f in _live(table) if c == FileContent.POSITION_DELETES}
        assert deletes == {FileFormat.AVRO}  # write.delete.format.default follows the format
    # time travel to before the delete, and to the Parquet-only first snapshot
    assert _ids(table, snapshot_id=before) == sorted(expected)
    first = table.snapshots()[0].snapshot_id
    assert _ids(table, snapshot_id=first) == list(range(0, 30))


def test_changes_write_avro_equality_deletes(catalog: Catalog, tmp_path: Path) -> None:
    table, expected = _mixed(catalog, tmp_path, "merge-on-read")
    table.set_properties({"write.format.default": "parquet", "write.delete.format.default": "avro"})
    # rows of the Parquet and Avro files (equality deletes apply within a partition)
    changed = _rows(range(28, 34)).set_column(3, "tags", pa.array([["new"]] * 6))
    table.apply_changes(changed.append_column("_op", pa.array(["U"] * 6)), on=["id"])
    live = _live(table)
    assert (FileContent.EQUALITY_DELETES, FileFormat.AVRO) in live
    rows = table.scan().to_arrow().to_pylist()
    assert sorted(r["id"] for r in rows) == sorted(set(expected) | set(range(28, 34)))
    assert {r["id"]: r["tags"] for r in rows if 28 <= r["id"] < 34} == {
        key: ["new"] for key in range(28, 34)
    }


def test_orc_tables_written_by_icepark(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.o",
        SCHEMA,
        partition_by=["category"],
        properties={"write.format.default": "orc", "write.delete.mode": "merge-on-read"},
    )
    table.append(_rows(range(0, 40)))
    table.append(_rows(range(40, 50)), file_format="avro")
    table.delete("id < 5")
    assert _live(table) == [
        (FileContent.DATA, FileFormat.AVRO),
        (FileContent.DATA, FileFormat.ORC),
        (FileContent.POSITION_DELETES, FileFormat.ORC),
    ]
    got = table.scan().to_arrow().sort_by("id").to_pylist()
    assert got == _rows(range(5, 50)).to_pylist()
    assert _ids(table, filter="point.y < -40 and category = 'b'") == [43, 46, 49]
    orc_files = [t.file for t in table.scan().plan_files() if t.file.file_format == "ORC"]
    assert all(f.value_counts and f.lower_bounds for f in orc_files)


def test_cli_files_shows_formats(catalog: Catalog, tmp_path: Path) -> None:
    table, _ = _mixed(catalog, tmp_path, "merge-on-read")
    table.delete("id = 31")
    args = ["--type", "filesystem", "--warehouse", str(tmp_path / "wh")]
    result = CliRunner().invoke(cli, [*args, "files", "db.mixed", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    by_format: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (r["content"], r["file_format"])
        by_format[key] = by_format.get(key, 0) + r["record_count"]
    assert by_format[("position deletes", "AVRO")] == 1
    assert {k[1] for k in by_format if k[0] == "data"} == {"PARQUET", "AVRO", "ORC"}
    assert sum(v for k, v in by_format.items() if k[0] == "data") == sum(
        f.file.record_count for f in table.scan().plan_files()
    )
    text = CliRunner().invoke(cli, [*args, "files", "db.mixed"], catch_exceptions=False)
    assert text.exit_code == 0 and "AVRO" in text.stdout and "ORC" in text.stdout
    # icepark avro dumps an Avro data file of the table
    avro_file = next(
        r["file_path"] for r in rows if r["file_format"] == "AVRO" and r["content"] == "data"
    )
    dumped = CliRunner().invoke(cli, ["avro", avro_file], catch_exceptions=False)
    records = [json.loads(line) for line in dumped.stdout.splitlines()]
    assert records and {"id", "category", "point", "tags"} <= set(records[0])
