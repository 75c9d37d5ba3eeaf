"""One Spark SQL script, two catalogs, one JVM: the reference engine (Iceberg 1.10.2 on Spark
3.5) runs the same statements on a catalog served by icepark (Java's ``RESTCatalog`` over the
JDK's HTTP client, with OAuth2, against :func:`icepark.rest.create_app` on an icepark SQL
catalog) and on its own Hadoop catalog, and every statement must succeed on both and answer
the same.

The script: CREATE TABLE partitioned by ``days(ts), bucket(4, id)``; INSERT; MERGE INTO
(matched update and delete, not matched insert); UPDATE; DELETE; tags and branches (create,
retention, drop, create-or-replace), writes to a branch by name and by ``spark.wap.branch``,
a staged write by ``spark.wap.id`` published by ``publish_changes``, ``fast_forward``, reads
``VERSION AS OF`` a tag and a branch; ALTER TABLE add, rename and widen columns (int to bigint,
float to double), nested struct, list and map columns and a field added inside a struct, a
column moved, add and drop partition fields, write order, set and unset properties; the
``snapshots``, ``refs``, ``files``, ``partitions``, ``manifests`` and ``history`` metadata
tables; ``rewrite_manifests``, ``rewrite_data_files`` and
``expire_snapshots``; CTAS and CREATE OR REPLACE TABLE AS SELECT (staged creates through the
server); a table of format 1 (a partition field dropped, then upgraded to format 3 and
written); a merge-on-read table of format 3 (deletion vectors) with DELETE, UPDATE and MERGE;
CREATE VIEW, SELECT from it, SHOW VIEWS, DROP VIEW; ``register_table`` of the final
metadata file and DROP TABLE without purge; DROP TABLE ... PURGE.

Compared exactly, after normalising only what must differ between two catalogs (snapshot ids,
replaced by their order of first appearance; wall-clock times; file and manifest paths): the
rows of every statement, and the final tables' metadata (schemas, partition specs, sort orders,
properties, snapshots with parents, sequence numbers, summaries (file sizes included) and row
lineage, snapshot and metadata logs, refs). Then icepark reads the served tables twice (its SQL
catalog on the backing store, and its own REST client through the server) and gets the rows
Java's queries got: main, the branch, the tag, the merge-on-read table, the replaced table.
Finally both sides drop everything and no data file is left.

Left out or changed on the Hadoop side, and why:

- Views: Iceberg's ``HadoopCatalog`` is no ``ViewCatalog``. On the reference side the view
  statements run in an ``InMemoryCatalog`` (which is one) over the Hadoop catalog's table.
- ``ALTER TABLE ... RENAME TO``: ``HadoopCatalog`` cannot rename tables (test_java_client.py
  and the PyIceberg tests cover renames through the server).
- Statements that take a snapshot id or a timestamp (``rollback_to_snapshot``,
  ``VERSION AS OF <id>``): the ids differ by nature; tags stand in for them.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from icepark.catalog.base import Catalog
from icepark.rest import Principals, create_app
from icepark.rest.catalog import RestCatalog
from tests.rest.conftest import serving

pytestmark = pytest.mark.interop
_names = itertools.count()

# ``{c}`` is the catalog of the tables, ``{v}`` the catalog of the views; rows of statements
# marked ``ANY_ORDER`` are compared as multisets (metadata tables have no defined order).
ANY_ORDER = "-- any order\n"
T = "{c}.db.t"
U = "{c}.db.u"
S = "{c}.db.s"
G = "{c}.db.g"
READ_G = f"SELECT * FROM {G} ORDER BY id"
READ_S = f"SELECT * FROM {S} ORDER BY id"
READ_MOR = f"SELECT * FROM {U} ORDER BY id"
READ_MAIN = f"SELECT * FROM {T} ORDER BY id, ts"
READ_DEV = f"SELECT id, category, note FROM {T} VERSION AS OF 'dev' ORDER BY id"
READ_TAG = f"SELECT id, ts, kind, n, price FROM {T} VERSION AS OF 'v1' ORDER BY id, ts"
SCRIPT: list[str] = [
    "CREATE NAMESPACE {c}.db",
    f"CREATE TABLE {T} (id bigint, ts timestamp, kind string, n int, price float) "
    "USING iceberg PARTITIONED BY (days(ts), bucket(4, id)) "
    "TBLPROPERTIES ('format-version' = '2')",
    f"INSERT INTO {T} VALUES "
    "(1, TIMESTAMP '2024-01-01 10:00:00', 'a', 10, 1.5), "
    "(2, TIMESTAMP '2024-01-01 11:00:00', 'b', 20, 2.5), "
    "(3, TIMESTAMP '2024-01-02 12:00:00', 'a', 30, 3.5), "
    "(4, TIMESTAMP '2024-01-03 13:00:00', 'c', 40, 4.5)",
    f"INSERT INTO {T} VALUES (5, TIMESTAMP '2024-01-03 14:00:00', 'b', 50, 5.5)",
    f"MERGE INTO {T} t USING (SELECT * FROM VALUES "
    "(1, 'upd'), (2, 'del'), (9, 'new') AS s(id, op)) s ON t.id = s.id "
    "WHEN MATCHED AND s.op = 'del' THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET t.kind = s.op, t.n = t.n + 1 "
    "WHEN NOT MATCHED THEN INSERT (id, ts, kind, n, price) "
    "VALUES (s.id, TIMESTAMP '2024-01-04 09:00:00', s.op, 90, 9.5)",
    f"SELECT * FROM {T} ORDER BY id",
    f"UPDATE {T} SET price = price * 2 WHERE kind = 'a'",
    f"DELETE FROM {T} WHERE id = 4",
    f"SELECT * FROM {T} ORDER BY id",
    f"ALTER TABLE {T} CREATE TAG v1",
    f"ALTER TABLE {T} ADD COLUMN note string",
    f"ALTER TABLE {T} RENAME COLUMN kind TO category",
    f"ALTER TABLE {T} ALTER COLUMN n TYPE bigint",
    f"ALTER TABLE {T} ALTER COLUMN price TYPE double",
    f"ALTER TABLE {T} ADD PARTITION FIELD truncate(2, category)",
    f"ALTER TABLE {T} DROP PARTITION FIELD bucket(4, id)",
    f"INSERT INTO {T} VALUES (10, TIMESTAMP '2024-01-05 08:00:00', 'zz', 100, 10.25, 'late')",
    f"DESCRIBE TABLE {T}",
    f"ALTER TABLE {T} CREATE BRANCH dev",
    f"INSERT INTO {T}.branch_dev VALUES (11, TIMESTAMP '2024-01-06 08:00:00', 'd', 110, 11.0, 'dev')",
    # write-audit-publish: a session's writes go to the branch the session names
    f"ALTER TABLE {T} SET TBLPROPERTIES ('write.wap.enabled' = 'true')",
    "SET spark.wap.branch = dev",
    f"INSERT INTO {T} VALUES (12, TIMESTAMP '2024-01-06 09:00:00', 'w', 120, 12.0, 'wap')",
    f"SELECT id FROM {T} ORDER BY id",
    "RESET spark.wap.branch",
    READ_DEV,
    f"SELECT id, note FROM {T} ORDER BY id",
    "CALL {c}.system.fast_forward('db.t', 'main', 'dev')",
    # write-audit-publish by id: a staged snapshot on no branch, then cherry-picked to main
    "SET spark.wap.id = w1",
    f"INSERT INTO {T} VALUES (13, TIMESTAMP '2024-01-07 09:00:00', 'st', 130, 13.0, 'staged')",
    "RESET spark.wap.id",
    f"SELECT count(*) FROM {T}",
    "CALL {c}.system.publish_changes('db.t', 'w1')",
    f"SELECT count(*) FROM {T}",
    # nested types, added inside a struct, columns moved
    f"ALTER TABLE {T} ADD COLUMNS (info struct<a: int, b: string>, tags array<string>, "
    "attrs map<string, int>)",
    f"ALTER TABLE {T} ADD COLUMN info.c double",
    f"ALTER TABLE {T} ALTER COLUMN note AFTER id",
    f"INSERT INTO {T} (id, ts, category, n, price, note, info, tags, attrs) VALUES "
    "(14, TIMESTAMP '2024-01-08 10:00:00', 'nest', 140, 14.0, 'x', "
    "named_struct('a', 1, 'b', 'q', 'c', 0.5), array('p', 'q'), map('k', 7))",
    f"SELECT snapshot_id, parent_id, operation, summary FROM {T}.snapshots ORDER BY committed_at",
    ANY_ORDER + f"SELECT name, type, max_reference_age_in_ms, min_snapshots_to_keep, "
    f"max_snapshot_age_in_ms, snapshot_id FROM {T}.refs",
    ANY_ORDER + f"SELECT * FROM {T}.files",
    ANY_ORDER + f"SELECT * FROM {T}.partitions",
    ANY_ORDER + "SELECT content, partition_spec_id, added_snapshot_id, added_data_files_count, "
    "existing_data_files_count, deleted_data_files_count, added_delete_files_count, "
    f"existing_delete_files_count, deleted_delete_files_count, partition_summaries FROM {T}.manifests",
    f"SELECT snapshot_id, parent_id, is_current_ancestor FROM {T}.history ORDER BY made_current_at",
    f"ALTER TABLE {T} WRITE ORDERED BY id DESC NULLS LAST",
    f"ALTER TABLE {T} SET TBLPROPERTIES ('team' = 'etl', 'gone' = 'soon')",
    f"ALTER TABLE {T} UNSET TBLPROPERTIES ('gone')",
    f"ALTER TABLE {T} CREATE TAG tmp RETAIN 7 DAYS",
    f"ALTER TABLE {T} DROP TAG tmp",
    f"ALTER TABLE {T} CREATE OR REPLACE BRANCH audit RETAIN 3 DAYS WITH SNAPSHOT RETENTION 2 SNAPSHOTS",
    "CALL {c}.system.rewrite_manifests('db.t')",
    "CALL {c}.system.rewrite_data_files(table => 'db.t', options => map('min-input-files', '2'))",
    "CALL {c}.system.expire_snapshots(table => 'db.t', "
    "older_than => TIMESTAMP '2100-01-01 00:00:00', retain_last => 1)",
    ANY_ORDER + f"SELECT snapshot_id, operation FROM {T}.snapshots",
    READ_TAG,
    "CREATE VIEW {v}.db.cheap AS SELECT id, category, price FROM {c}.db.t WHERE price < 10",
    "SELECT * FROM {v}.db.cheap ORDER BY id",
    "SHOW VIEWS IN {v}.db",
    READ_MAIN,
    # create and replace as staged transactions
    f"CREATE TABLE {S} USING iceberg PARTITIONED BY (category) AS SELECT id, category FROM {T}",
    f"CREATE OR REPLACE TABLE {S} USING iceberg AS SELECT id, n FROM {T} WHERE id < 5",
    READ_S,
    f"SELECT operation, summary['total-records'] FROM {S}.snapshots ORDER BY committed_at",
    # format 1: a dropped partition field becomes void; upgraded to 3 (row lineage from then on)
    f"CREATE TABLE {G} (id bigint, kind string) USING iceberg PARTITIONED BY (kind) "
    "TBLPROPERTIES ('format-version' = '1')",
    f"INSERT INTO {G} VALUES (1, 'a'), (2, 'b')",
    f"ALTER TABLE {G} DROP PARTITION FIELD kind",
    f"ALTER TABLE {G} ADD PARTITION FIELD bucket(2, id)",
    f"ALTER TABLE {G} SET TBLPROPERTIES ('format-version' = '3')",
    f"INSERT INTO {G} VALUES (3, 'c')",
    f"DELETE FROM {G} WHERE id = 1",
    READ_G,
    # merge-on-read on format 3: deletion vectors written by Java, committed through the server
    f"CREATE TABLE {U} (id bigint, v string) USING iceberg PARTITIONED BY (bucket(2, id)) "
    "TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read', "
    "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')",
    f"INSERT INTO {U} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')",
    f"DELETE FROM {U} WHERE id = 2",
    f"UPDATE {U} SET v = 'z' WHERE id = 3",
    f"MERGE INTO {U} u USING (SELECT * FROM VALUES (1, 'm'), (5, 'n') AS s(id, v)) s "
    "ON u.id = s.id WHEN MATCHED THEN UPDATE SET u.v = s.v WHEN NOT MATCHED THEN INSERT *",
    READ_MOR,
    ANY_ORDER + f"SELECT content, file_format, spec_id, partition, record_count FROM {U}.files",
    "SELECT operation, summary['added-delete-files'], summary['added-position-deletes'], "
    "summary['removed-position-deletes'], summary['total-records'], "
    f"summary['total-position-deletes'] FROM {U}.snapshots ORDER BY committed_at",
]
# what icepark reads afterwards: the table and the scan that should give Java's rows
READS: dict[str, tuple[str, dict[str, Any]]] = {
    READ_MAIN: ("db.t", {}),
    READ_DEV: ("db.t", {"ref": "dev"}),
    READ_TAG: ("db.t", {"ref": "v1"}),
    READ_MOR: ("db.u", {}),
    READ_S: ("db.s", {}),
    READ_G: ("db.g", {}),
}
TEARDOWN: list[str] = [
    "DROP VIEW {v}.db.cheap",
    "SHOW VIEWS IN {v}.db",
    f"DROP TABLE {T} PURGE",
    f"DROP TABLE {U} PURGE",
    f"DROP TABLE {S} PURGE",
    f"DROP TABLE {G} PURGE",
    "SHOW TABLES IN {c}.db",
]

# columns whose values differ between any two catalogs
_SNAPSHOT_COLUMNS = {
    "snapshot_id",
    "parent_id",
    "last_updated_snapshot_id",
    "added_snapshot_id",
    "source_snapshot_id",
    "current_snapshot_id",
    "previous_ref",
    "updated_ref",
}
_WALL_CLOCK_COLUMNS = {"committed_at", "made_current_at", "last_updated_at"}
_PATH_COLUMNS = {"file_path", "manifest_list", "path"}


class _Normaliser:
    def __init__(self) -> None:
        self.snapshots: dict[int, str] = {}

    def snapshot(self, value: Any) -> Any:
        if value is None:
            return None
        return self.snapshots.setdefault(int(value), f"S{len(self.snapshots)}")

    def rows(self, result: dict[str, Any]) -> Any:
        if "error" in result:
            return {"error": result["error"]}
        out = []
        for row in result["rows"]:
            new = []
            for column, value in zip(result["columns"], row, strict=True):
                if column in _SNAPSHOT_COLUMNS:
                    value = self.snapshot(value)
                elif column in _WALL_CLOCK_COLUMNS:
                    value = "<time>" if value is not None else None
                elif column in _PATH_COLUMNS:
                    value = "<path>"
                new.append(value)
            out.append(new)
        if result["sql"].startswith(ANY_ORDER):
            out.sort(key=repr)
        return out


def _render(statements: list[str], c: str, v: str) -> list[str]:
    return [s.format(c=c, v=v) for s in statements]


def _table_metadata(meta: dict[str, Any], norm: _Normaliser) -> dict[str, Any]:
    """The parts of a table's metadata JSON two catalogs must agree on."""
    ids = {s["snapshot-id"]: s for s in meta.get("snapshots", [])}
    order = sorted(ids.values(), key=lambda s: (s.get("sequence-number", 0), s["timestamp-ms"]))
    for snapshot in order:
        norm.snapshot(snapshot["snapshot-id"])
    return {
        "format-version": meta["format-version"],
        "schemas": meta["schemas"],
        "current-schema-id": meta["current-schema-id"],
        "last-column-id": meta["last-column-id"],
        "partition-specs": meta["partition-specs"],
        "default-spec-id": meta["default-spec-id"],
        "last-partition-id": meta["last-partition-id"],
        "sort-orders": meta["sort-orders"],
        "default-sort-order-id": meta["default-sort-order-id"],
        "properties": meta.get("properties", {}),
        "last-sequence-number": meta.get("last-sequence-number"),
        "current-snapshot-id": norm.snapshot(meta.get("current-snapshot-id")),
        "snapshots": [
            {
                "id": norm.snapshot(s["snapshot-id"]),
                "parent": norm.snapshot(s.get("parent-snapshot-id")),
                "sequence-number": s.get("sequence-number"),
                "schema-id": s.get("schema-id"),
                "summary": s["summary"],
                # format 3's row lineage: the server assigns the first row ids
                "first-row-id": s.get("first-row-id"),
                "added-rows": s.get("added-rows"),
            }
            for s in order
        ],
        "next-row-id": meta.get("next-row-id"),
        "snapshot-log": [norm.snapshot(e["snapshot-id"]) for e in meta.get("snapshot-log", [])],
        "metadata-log": len(meta.get("metadata-log", [])),
        "statistics": meta.get("statistics", []),
        "partition-statistics": meta.get("partition-statistics", []),
        "refs": {
            name: {**ref, "snapshot-id": norm.snapshot(ref["snapshot-id"])}
            for name, ref in meta.get("refs", {}).items()
        },
    }


def _hadoop_metadata_file(warehouse: Path, table: str) -> Path:
    folder = warehouse / "db" / table / "metadata"
    return folder / f"v{(folder / 'version-hint.text').read_text().strip()}.metadata.json"


def _hadoop_metadata(warehouse: Path, table: str) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(_hadoop_metadata_file(warehouse, table).read_text())
    return meta


def _unwrap(value: Any) -> Any:
    """An Arrow value as the reference engine prints it (naive ISO times: the session is UTC)."""
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None).isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dict):  # a struct: Java's rows print a Row as its values
        return [_unwrap(v) for v in value.values()]
    if isinstance(value, list) and value and all(isinstance(x, tuple) for x in value):
        return {k: _unwrap(v) for k, v in value}  # a map
    if isinstance(value, list):
        return [_unwrap(x) for x in value]
    return value


def _icepark_rows(table: Any, columns: list[str], **scan: Any) -> list[list[Any]]:
    arrow = table.scan(**scan).to_arrow().sort_by("id")
    return [[_unwrap(row[c]) for c in columns] for row in arrow.to_pylist()]


def _parquet_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.parquet")) if folder.exists() else []


def test_same_script_same_answers(refspark: Any, catalog: Catalog, tmp_path: Path) -> None:
    secret = {"client-id": "spark", "client-secret": "p4r1ty", "grants": {"*": "admin"}}
    principals = Principals.from_dict({"principals": [secret]})
    hadoop = tmp_path / "hadoop"
    hadoop.mkdir()
    ref = refspark.catalog_for(hadoop)
    n = next(_names)
    rc, refv = f"rcp{n}", f"refv{n}"  # Spark caches catalogs by name: one name per server
    conf = {
        f"spark.sql.catalog.{refv}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{refv}.catalog-impl": "org.apache.iceberg.inmemory.InMemoryCatalog",
        f"spark.sql.catalog.{refv}.warehouse": f"file://{tmp_path / 'views'}",
    }
    with serving(create_app(catalog, auth=principals)) as url:
        base = f"spark.sql.catalog.{rc}"
        conf |= {
            base: "org.apache.iceberg.spark.SparkCatalog",
            f"{base}.catalog-impl": "org.apache.iceberg.rest.JdkRestCatalog",
            f"{base}.uri": url,
            f"{base}.credential": "spark:p4r1ty",
            f"{base}.cache-enabled": "false",
        }
        expected = refspark.request(
            [f"CREATE NAMESPACE {refv}.db", *_render(SCRIPT, ref, refv)], conf=conf, check=False
        )[1:]
        got = refspark.request(_render(SCRIPT, rc, rc), check=False)
        failed = [r for r in expected + got if "error" in r]
        assert not failed, "\n".join(f"{r['sql']}: {r['error']}" for r in failed)

        # the final tables first: their snapshots get S0, S1, ... in sequence-number order
        ref_norm, rc_norm = _Normaliser(), _Normaliser()
        for name in ("t", "u", "s", "g"):
            ref_meta = _table_metadata(_hadoop_metadata(hadoop, name), ref_norm)
            table = catalog.load_table(("db", name))
            served = json.loads(Path(table.metadata_location.removeprefix("file:")).read_text())
            assert _table_metadata(served, rc_norm) == ref_meta, name

        mismatches = []
        for template, e, g in zip(SCRIPT, expected, got, strict=True):
            e_rows, g_rows = ref_norm.rows(e), rc_norm.rows(g)
            if e_rows != g_rows:
                mismatches.append(f"{template}\n  hadoop: {e_rows}\n  rest:   {g_rows}")
        assert not mismatches, "\n".join(mismatches)

        # icepark reads the served table (its catalog on the backing store, its REST client)
        # and gets the rows Java's queries got (main, a branch, a tag, deletion vectors, a
        # replaced table, an upgraded table)
        client = RestCatalog("parity", {"uri": url, "credential": "spark:p4r1ty"})
        for reader in (catalog, client):
            for statement, (name, scan) in READS.items():
                java = got[SCRIPT.index(statement)]
                ours = _icepark_rows(reader.load_table(name), java["columns"], **scan)
                assert ours == java["rows"], (type(reader).__name__, statement)

        # register_table: the served table's current metadata file under a second name
        hadoop_file = _hadoop_metadata_file(hadoop, "t")
        register = [
            "CALL {c}.system.register_table(table => 'db.reg', metadata_file => '{m}')",
            "SELECT count(*), max(id) FROM {c}.db.reg",
            "DROP TABLE {c}.db.reg",
            "SELECT count(*) FROM {c}.db.t",  # dropped without purge: the files stay
        ]
        ref_reg = refspark.request(
            [r.format(c=ref, m=f"file://{hadoop_file}") for r in register], check=False
        )
        rc_reg = refspark.request(
            [r.format(c=rc, m=catalog.load_table("db.t").metadata_location) for r in register],
            check=False,
        )
        failed = [r for r in ref_reg + rc_reg if "error" in r]
        assert not failed, "\n".join(f"{r['sql']}: {r['error']}" for r in failed)
        assert [ref_norm.rows(r) for r in ref_reg] == [rc_norm.rows(r) for r in rc_reg]
        ref_teardown = refspark.request(_render(TEARDOWN, ref, refv), check=False)
        rc_teardown = refspark.request(_render(TEARDOWN, rc, rc), check=False)
        failed = [r for r in ref_teardown + rc_teardown if "error" in r]
        assert not failed, "\n".join(f"{r['sql']}: {r['error']}" for r in failed)
        assert [ref_norm.rows(r) for r in ref_teardown] == [rc_norm.rows(r) for r in rc_teardown]
        assert catalog.list_tables("db") == [] and not catalog.view_exists("db.cheap")
        # PURGE: no data file left behind on either side
        assert _parquet_files(hadoop / "db") == []
        assert _parquet_files(Path(table.metadata.location.removeprefix("file:")).parent) == []
