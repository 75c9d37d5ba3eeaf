"""``CALL system.compute_table_stats`` judged by the Java reference engine: on twin tables Java
built alike, Java's procedure and icepark's write statistics files whose blobs have the same
type, fields, snapshot, ``ndv`` and the very same sketch bytes (each file read back by
icepark's Puffin reader and by Apache DataSketches); Java loads icepark's statistics and its
cost-based planner plans both tables alike."""

from __future__ import annotations

import re
import struct
from typing import Any

import pytest
from refengine import RefEngine

from icepark.catalog import FileSystemCatalog
from icepark.puffin.file import read_puffin, read_puffin_blob
from icepark.puffin.theta import compact_sketch, hash_values, sketch_estimate
from icepark.spark.sql.extensions import parse_extension, run_extension
from icepark.table import Table

pytestmark = [pytest.mark.spark, pytest.mark.interop]

CREATE = """CREATE TABLE {t} (id bigint, n int, s string, d double, f float, day date,
    ts timestamp, amount decimal(10, 2), flag boolean, raw binary, tags array<string>)
    USING iceberg TBLPROPERTIES ('format-version'='2')"""
INSERT = """INSERT INTO {t} SELECT id, CAST(id % 7 AS INT), concat('s', id % 13), id / 4.0D,
    CAST(id % 5 AS FLOAT), date_add(DATE '2024-01-01', CAST(id % 3 AS INT)),
    timestamp_micros(1704067200000000 + (id % 11) * 1000), CAST(id % 17 AS DECIMAL(10, 2)) / 4,
    id % 2 = 0, CAST(concat('b', id % 9) AS BINARY), array('x')
    FROM range({start}, {end})"""


def _blobs(table: Table) -> dict[int, tuple[Any, bytes]]:
    """The table's statistics file for its current snapshot: blob metadata and sketch bytes
    by field id."""
    current = table.current_snapshot()
    assert current is not None
    (stats,) = [s for s in table.metadata.statistics if s.snapshot_id == current.snapshot_id]
    io = table.io
    puffin = read_puffin(io.new_input(stats.statistics_path))
    assert puffin.footer_size == stats.file_footer_size_in_bytes
    out = {}
    for blob in puffin.blobs:
        data = read_puffin_blob(
            io.new_input(stats.statistics_path), blob.offset, blob.length, blob.compression_codec
        )
        (field_id,) = blob.fields
        out[field_id] = (blob, data)
    return out


def test_compute_table_stats_as_java(spark: Any, refspark: RefEngine, tmp_path: Any) -> None:
    warehouse = tmp_path / "wh"
    cat = refspark.catalog_for(warehouse)
    java, ours = f"{cat}.db.j", f"{cat}.db.p"
    setup = [f"CREATE NAMESPACE IF NOT EXISTS {cat}.db"]
    for t in (java, ours):
        setup += [
            CREATE.format(t=t),
            INSERT.format(t=t, start=0, end=300),
            f"INSERT INTO {t} VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
            "NULL)",
        ]
    answers = refspark.request([*setup, f"CALL {cat}.system.compute_table_stats('{java}')"])
    catalog = FileSystemCatalog("fs", warehouse=str(warehouse))
    parsed = parse_extension(f"CALL {cat}.system.compute_table_stats(table => 'db.p')")
    assert parsed is not None
    result = run_extension(spark, parsed, catalog, cat)
    (row,) = result.collect()
    assert result.columns == answers[-1]["columns"] == ["statistics_file"]
    j_table, p_table = catalog.load_table("db.j"), catalog.load_table("db.p")
    assert row[0] == p_table.metadata.statistics[0].statistics_path
    # in the table's metadata folder, where Java writes it (Java spells file:/// as file:/)
    java_folder = answers[-1]["rows"][0][0].rsplit("/", 1)[0].replace("/db/j/", "/db/p/")
    assert row[0].startswith("file:")
    assert row[0].rsplit("/", 1)[0].replace("file:///", "file:/") == java_folder
    theirs, mine = _blobs(j_table), _blobs(p_table)
    # every top-level primitive column, none for the list
    assert sorted(mine) == sorted(theirs) == list(range(1, 11))
    p_seq = p_table.current_snapshot().sequence_number  # type: ignore[union-attr]
    for field_id, (blob, data) in theirs.items():
        my_blob, my_data = mine[field_id]
        assert my_blob.type == blob.type == "apache-datasketches-theta-v1"
        assert my_blob.compression_codec == blob.compression_codec == "zstd"
        assert my_blob.properties == blob.properties, field_id
        assert my_blob.sequence_number == p_seq
        assert my_data == data, field_id  # the same sketch, byte for byte
        assert sketch_estimate(my_data) == float(blob.properties["ndv"])
    assert {f: int(b.properties["ndv"]) for f, (b, _) in mine.items()} == {
        1: 300,
        2: 7,
        3: 13,
        4: 300,
        5: 5,
        6: 3,
        7: 11,
        8: 17,
        9: 2,
        10: 9,
    }
    # Java loads icepark's statistics: its cost-based planner reads their distinct counts
    refspark.sql(f"REFRESH TABLE {ours}")
    plans = refspark.request(
        [f"EXPLAIN COST SELECT n, s FROM {t} WHERE n > 1" for t in (java, ours)],
        conf={"spark.sql.cbo.enabled": "true"},
    )
    rows = refspark.request([f"SELECT count(*) FROM {t}" for t in (java, ours)])
    refspark.request([], conf={"spark.sql.cbo.enabled": "false"})

    def plan(answer: dict[str, Any], name: str) -> str:
        return re.sub(r"#\d+", "#", str(answer["rows"])).replace(f"db.{name}", "db.T")

    assert plan(plans[0], "j") == plan(plans[1], "p")
    assert rows[0]["rows"] == rows[1]["rows"] == [[301]]


def test_sketch_matches_datasketches_and_estimates() -> None:
    datasketches = pytest.importorskip("datasketches")
    values = list(range(-1000, 2000))
    ours = compact_sketch(hash_values(struct.pack("<q", v) for v in values))
    reference = datasketches.update_theta_sketch(12, 1.0, 9001)
    for v in values:
        reference.update(v)  # DataSketches hashes an int64 as its 8 little-endian bytes
    theirs = reference.compact(True).serialize()
    # equal but for p (bytes 12-15): 1.0 as Java writes it, where the C++ library writes 0
    assert ours[:12] == theirs[:12] and ours[16:] == theirs[16:]
    many = compact_sketch(hash_values(struct.pack("<q", v) for v in range(50_000)))
    assert abs(sketch_estimate(many) - 50_000) < 0.05 * 50_000  # estimation mode, ~1.6% error


def test_no_snapshot_no_file_and_bad_columns(spark: Any, catalog: Any) -> None:
    from icepark import schema
    from icepark.errors import ValidationError

    table = catalog.create_table("db.empty", schema(("id", "long", True)))
    parsed = parse_extension("CALL system.compute_table_stats('db.empty')")
    assert parsed is not None
    assert [tuple(r) for r in run_extension(spark, parsed, catalog, "fs").collect()] == [(None,)]
    assert table.refresh().metadata.statistics == ()
    import pyarrow as pa

    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    parsed = parse_extension("CALL system.compute_table_stats('db.empty', columns => array('x'))")
    assert parsed is not None
    with pytest.raises(ValidationError, match="x"):
        run_extension(spark, parsed, catalog, "fs")
    assert table.refresh().metadata.statistics == ()


def test_a_failed_commit_leaves_no_statistics_file(
    spark: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit that fails (a conflict) leaves no statistics file behind; one whose outcome
    is unknown keeps it (the commit may have landed and reference it)."""
    from pathlib import Path

    import pyarrow as pa

    from icepark import schema
    from icepark.errors import CommitFailedError, CommitStateUnknownError
    from icepark.spark import compute_table_stats

    table = catalog.create_table("db.conflict", schema(("id", "long", True)))
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    folder = Path(table.metadata_location.rsplit("/", 1)[0].removeprefix("file:"))
    for error, left in ((CommitFailedError, 0), (CommitStateUnknownError, 1)):

        def fail(*args: Any, error: type[Exception] = error, **kwargs: Any) -> None:
            raise error("refused by the test")

        monkeypatch.setattr(table, "commit", fail)
        with pytest.raises(error):
            compute_table_stats(spark, table, catalog=catalog)
        assert len(list(folder.glob("*.stats"))) == left
    assert catalog.load_table("db.conflict").metadata.statistics == ()
