"""``CALL system.migrate`` / ``icepark.spark.migrate_table``: a Spark Parquet table replaced by
an Iceberg table of the same name over the same files, judged by the reference engine.

Java migrates the same source tables (made the same way) in a session whose ``spark_catalog``
is Iceberg's ``SparkSessionCatalog``; both sides leave the same Spark tables behind (the
backup, or none with ``drop_backup``), and the migrated tables have the same properties,
schema, partitioning and files, and Java reads icepark's. Failing anywhere leaves the source
as it was, under its own name."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from icepark import spark as ispark
from icepark.catalog import FileSystemCatalog, SqlCatalog
from icepark.errors import TableAlreadyExistsError, ValidationError
from icepark.table import Table
from tests import refengine

pytestmark = [pytest.mark.spark, pytest.mark.interop]

ROWS = "(1, 'a', 'x'), (2, 'b', 'y'), (3, NULL, 'x'), (4, 'd', NULL)"


def _source(name: str, location: Path, props: str = "") -> list[str]:
    return [
        f"CREATE TABLE spark_catalog.default.{name} (id bigint, name string, cat string)"
        f" USING parquet PARTITIONED BY (cat) LOCATION '{location}'"
        + (f" TBLPROPERTIES ({props})" if props else ""),
        f"INSERT INTO spark_catalog.default.{name} VALUES {ROWS}",
    ]


def _statements(where: Path) -> list[str]:
    """The sources and the two migrations, the same on both engines."""
    return [
        *_source("mig_one", where / "one", "'team' = 'etl'"),
        *_source("mig_two", where / "two"),
        "CALL spark_catalog.system.migrate('default.mig_one')",
        "CALL spark_catalog.system.migrate(table => 'default.mig_two', drop_backup => true,"
        " properties => map('owner', 'me'))",
    ]


@pytest.fixture(scope="module")
def java_migrated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Java's counts, Spark tables left and migrated tables (a session of its own: Java's
    ``migrate`` needs ``SparkSessionCatalog`` as ``spark_catalog``, here over a JDBC catalog
    in an embedded Derby database, which takes tables at any location)."""
    if not refengine.available():
        pytest.skip("reference engine not installed (make reference)")
    where = tmp_path_factory.mktemp("java_migrate")
    conf = {
        "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
        "spark.sql.catalog.spark_catalog.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
        "spark.sql.catalog.spark_catalog.uri": f"jdbc:derby:{where / 'derby'};create=true",
        "spark.sql.catalog.spark_catalog.warehouse": str(where / "iceberg"),
        "spark.sql.warehouse.dir": str(where / "spark"),
    }
    sql = [*_statements(where), "SHOW TABLES IN spark_catalog.default"]
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_LOCAL_REMOTE")}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    done = subprocess.run(
        [str(refengine.REF_VENV / "bin" / "python"), str(refengine.REF_SCRIPT)]
        + [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]
        + [a for s in sql for a in ("--sql", s)],
        capture_output=True, text=True, cwd=where, env=env, timeout=600,
    )  # fmt: skip
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, results or done.stderr[-3000:]
    return {
        "counts": [r["rows"][0][0] for r in results[-3:-1]],
        "tables": sorted(r[1] for r in results[-1]["rows"]),
        "one": _latest(where / "one"),
        "two": _latest(where / "two"),
    }


def _latest(location: Path) -> Table:
    """The migrated table at ``location``, from its newest metadata file."""
    return Table.from_metadata(str(max((location / "metadata").glob("*.metadata.json"))))


def _rows(rows: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in rows), key=repr)


def _shape(table: Table) -> Any:
    """Schema, partitioning and files (as partition folders) of a migrated table."""
    files = sorted(p.rsplit("/", 2)[-2] for p in table.inspect.files()["file_path"].to_pylist())
    return (
        [(f.name, str(f.field_type), f.required) for f in table.schema().fields],
        [(str(f.transform), f.name) for f in table.spec().fields],
        files,
    )


def _spark_tables(spark: Any) -> list[str]:
    return sorted(
        r[1] for r in spark.sql("SHOW TABLES IN spark_catalog.default").collect()
        if r[1].startswith("mig_")
    )  # fmt: skip


def test_migrate_as_java(
    any_spark: Any, java_migrated: dict[str, Any], refspark: Any, tmp_path: Path
) -> None:
    spark = any_spark
    catalog = SqlCatalog("mig", uri=f"sqlite:///{tmp_path / 'cat.db'}", warehouse=str(tmp_path))
    ours = tmp_path / "ours"
    statements = _statements(ours)
    try:
        for statement in statements[:4]:
            spark.sql(statement)
        src_files = spark.table("spark_catalog.default.mig_one").inputFiles()
        counts = [ispark.sql(spark, call, catalog).collect()[0][0] for call in statements[4:]]
        assert counts == java_migrated["counts"] == [len(src_files), len(src_files)]
        # the same Spark tables left behind: the first's backup, not the second's
        assert _spark_tables(spark) == java_migrated["tables"] == ["mig_one_backup_"]
        for name, extra in (("one", {"team": "etl"}), ("two", {"owner": "me"})):
            mine, theirs = catalog.load_table(f"default.mig_{name}"), java_migrated[name]
            assert mine.location.removeprefix("file:") == str(ours / name)
            for key in ("migrated", *extra):
                assert (
                    mine.properties[key]
                    == theirs.properties[key]
                    == {"migrated": "true", **extra}[key]
                )
            assert "gc.enabled" not in mine.properties  # the migrated table owns the files
            assert json.loads(mine.properties["schema.name-mapping.default"]) == json.loads(
                theirs.properties["schema.name-mapping.default"]
            )
            assert _shape(mine) == _shape(theirs)
            expected = [(1, "a", "x"), (2, "b", "y"), (3, None, "x"), (4, "d", None)]
            assert _rows(ispark.read(spark, mine).collect()) == expected
            # Java reads icepark's table
            java_rows = refspark.rows("SELECT * FROM t", views={"t": mine.metadata_location})
            assert _rows(java_rows) == expected
        # the name now reads the Iceberg table, through SQL as well
        ispark.sql(spark, "DELETE FROM default.mig_one WHERE id = 1", catalog)
        assert len(ispark.sql(spark, "SELECT * FROM default.mig_one", catalog).collect()) == 3
        assert all(Path(f.removeprefix("file:")).exists() for f in src_files)
    finally:
        for name in ("mig_one", "mig_two", "mig_one_backup_", "mig_two_backup_"):
            spark.sql(f"DROP TABLE IF EXISTS spark_catalog.default.{name}")


def test_migrate_refused_or_failing_changes_nothing(any_spark: Any, tmp_path: Path) -> None:
    spark = any_spark
    catalog = SqlCatalog("mig", uri=f"sqlite:///{tmp_path / 'cat.db'}", warehouse=str(tmp_path))
    for statement in _source("mig_src", tmp_path / "src"):
        spark.sql(statement)
    try:
        src_files = spark.table("spark_catalog.default.mig_src").inputFiles()

        def unchanged() -> None:
            assert _spark_tables(spark) == ["mig_src"]
            assert not catalog.table_exists("default.mig_src")
            assert not catalog.namespace_exists("default")
            assert all(Path(f.removeprefix("file:")).exists() for f in src_files)
            assert not (tmp_path / "src" / "metadata").exists() or not any(
                (tmp_path / "src" / "metadata").iterdir()
            )

        # into a file-system catalog
        with pytest.raises(ValidationError, match="file-system catalog"):
            ispark.migrate_table(spark, "default.mig_src",
                                 catalog=FileSystemCatalog("fs", warehouse=str(tmp_path / "fs")))  # fmt: skip
        unchanged()
        # a managed table: Spark moves its files on rename and deletes them with the backup
        spark.sql("CREATE TABLE spark_catalog.default.mig_managed (id bigint) USING parquet")
        with pytest.raises(ValidationError, match="managed table"):
            ispark.sql(spark, "CALL system.migrate('default.mig_managed')", catalog)
        spark.sql("DROP TABLE spark_catalog.default.mig_managed")
        unchanged()
        # a backup of that name exists
        spark.sql("CREATE TABLE spark_catalog.default.mig_taken (id bigint) USING parquet")
        with pytest.raises(TableAlreadyExistsError, match="backup table already exists"):
            ispark.migrate_table(spark, "spark_catalog.default.mig_src", catalog=catalog,
                                 backup_table_name="mig_taken")  # fmt: skip
        spark.sql("DROP TABLE spark_catalog.default.mig_taken")
        unchanged()
        # an Iceberg table is no source
        catalog.create_namespace("db")
        ispark.sql(spark, "CREATE TABLE db.ice (id bigint)", catalog)
        with pytest.raises(ValidationError, match="session catalog"):
            ispark.sql(spark, "CALL system.migrate('db.ice')", catalog)
        catalog.drop_table("db.ice")
        catalog.drop_namespace("db")
        # failing midway (a source whose partitions Spark never recovered lists no file):
        # the new table and namespace are dropped and the source renamed back
        spark.sql(
            "CREATE TABLE spark_catalog.default.mig_bare (id bigint, name string, cat string)"
            f" USING parquet PARTITIONED BY (cat) LOCATION '{tmp_path / 'src'}'"
        )
        with pytest.raises(ValidationError, match="no Parquet file"):
            ispark.sql(spark, "CALL system.migrate(table => 'default.mig_bare')", catalog)
        assert _spark_tables(spark) == ["mig_bare", "mig_src"]
        spark.sql("DROP TABLE spark_catalog.default.mig_bare")
        unchanged()
        # and then it works, the table taking the source's name
        (row,) = ispark.sql(spark, "CALL system.migrate('mig_src')", catalog).collect()
        assert row[0] == len(src_files) and _spark_tables(spark) == ["mig_src_backup_"]
        # a second source of the name the Iceberg table now has
        spark.sql(_source("mig_src", tmp_path / "again")[0])
        with pytest.raises(TableAlreadyExistsError, match="already exists in catalog"):
            ispark.migrate_table(spark, "default.mig_src", catalog=catalog)
    finally:
        for name in ("mig_src", "mig_src_backup_", "mig_bare", "mig_managed", "mig_taken"):
            spark.sql(f"DROP TABLE IF EXISTS spark_catalog.default.{name}")
