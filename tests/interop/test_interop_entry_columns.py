"""Manifests the reference engine writes, decoded into arrays by the compiled path, give the
entries the object reader gives, and plans of them made from arrays give the same tasks.

Java writes a v2 and a v3 table with several types, two partition specs, merge-on-read
deletes (position deletes, deletion vectors) and an overwrite: every entry of every manifest
of every snapshot (data and delete manifests, deleted and existing entries included) is
equal both ways, and plans for a few filters agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from refengine import RefEngine

import icepark.planning.walk as walk
from icepark.avro.compiled import kernel_available
from icepark.catalog import FileSystemCatalog
from icepark.manifest import read_manifest
from icepark.manifest.entry_columns import read_entry_columns
from icepark.planning.walk import unique_manifests

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(not kernel_available(), reason="numba is not importable"),
]


@pytest.mark.parametrize("version", [2, 3])
def test_java_manifests_decode_the_same(
    refspark: RefEngine, tmp_path: Path, version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = tmp_path / "wh"
    c = refspark.catalog_for(warehouse)
    t = f"{c}.db.m{version}"
    refspark.request(
        [
            f"CREATE NAMESPACE IF NOT EXISTS {c}.db",
            f"CREATE TABLE {t} (id bigint NOT NULL, name string, price decimal(9,2),"
            " ts timestamp, f float, b boolean, d date) USING iceberg PARTITIONED BY (days(ts))"
            f" TBLPROPERTIES ('format-version'='{version}', 'write.delete.mode'='merge-on-read',"
            " 'write.update.mode'='merge-on-read')",
            f"INSERT INTO {t} SELECT id, concat('n', id % 7), CAST(id AS decimal(9,2)) / 4,"
            " TIMESTAMP '2024-01-01 00:00:00' + make_interval(0,0,0,id % 5,0,0,0),"
            " CAST(id AS float) / 3, id % 2 = 0, DATE '2024-02-01' + CAST(id % 9 AS int)"
            " FROM range(0, 300)",
            f"DELETE FROM {t} WHERE id % 11 = 0",
            f"ALTER TABLE {t} ADD PARTITION FIELD bucket(4, id)",
            f"INSERT INTO {t} SELECT id, null, null, TIMESTAMP '2024-01-03 00:00:00', null,"
            " null, null FROM range(300, 400)",
            f"UPDATE {t} SET name = 'u' WHERE id BETWEEN 100 AND 120",
            f"INSERT OVERWRITE {t} SELECT * FROM {t} WHERE id >= 350",
        ]
    )
    table = FileSystemCatalog("fs", warehouse=str(warehouse)).load_table(f"db.m{version}")
    manifests = unique_manifests(table.io, table.snapshots())
    assert len(manifests) >= 6
    entries = 0
    for m in manifests:
        data = table.io.new_input(m.manifest_path).read_bytes()
        columns = read_entry_columns(m.manifest_path, data, m)
        expected = read_manifest(table.io.new_input(m.manifest_path), m)
        assert [columns.entry(i) for i in range(columns.count)] == expected, m.manifest_path
        entries += len(expected)
    assert entries > 20
    filters = [None, "id = 377", "ts < '2024-01-03 00:00:00'", "name = 'u'", "price > 80"]
    plans = {f: list(table.scan(filter=f).plan_files()) for f in filters}
    monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
    for f in filters:
        assert list(table.scan(filter=f).plan_files()) == plans[f], f
