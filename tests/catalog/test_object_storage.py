"""Catalogs on object storage (a moto S3 server): the SQL catalog commits there; the
file-system catalog, whose commit needs an atomic create, refuses to write tables there unless
the user promises a single writer (``filesystem.single-writer=true``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from services import create_bucket

from icepark.catalog import load_catalog
from icepark.catalog.filesystem import SINGLE_WRITER
from icepark.errors import CatalogConfigError

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
ROWS = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})


def _fs_props(s3: dict[str, str], bucket: str, **extra: str) -> dict[str, str]:
    return {"type": "filesystem", "warehouse": f"s3://{bucket}/wh", **s3, **extra}


def test_filesystem_catalog_refuses_to_commit_on_s3(s3_endpoint: dict[str, str]) -> None:
    bucket = create_bucket(s3_endpoint)
    catalog = load_catalog("fs", properties=_fs_props(s3_endpoint, bucket))
    catalog.create_namespace("db")  # folders only: no commit
    with pytest.raises(CatalogConfigError) as error:
        catalog.create_table("db.t", SCHEMA)
    message = str(error.value)
    assert "db.t" in message and f"s3://{bucket}/wh" in message
    assert "SQL catalog" in message and "REST" in message and f"{SINGLE_WRITER}=true" in message
    # nothing was written
    assert catalog.io.list_prefix(f"s3://{bucket}/wh/db/t") == []

    # with the promise of a single writer it works, and another catalog can read the table
    # but not commit to it
    single = load_catalog(
        "fs", properties=_fs_props(s3_endpoint, bucket, **{SINGLE_WRITER: "true"})
    )
    table = single.create_table("db.t", SCHEMA)
    table.append(ROWS)
    assert table.scan().to_arrow().sort_by("id") == ROWS
    reader = catalog.load_table("db.t")
    assert reader.scan().count() == 3
    with pytest.raises(CatalogConfigError, match="cannot be made atomic"):
        reader.append(ROWS)
    with pytest.raises(CatalogConfigError):
        catalog.register_table("db.copy", table.metadata_location)
    reader.refresh()
    assert reader.scan().count() == 3 and len(reader.snapshots()) == 1
    # a failed commit leaves no data files behind
    data = [e for e in single.io.list_prefix(table.location + "/data")]
    assert len(data) == 1


def test_filesystem_catalog_on_local_disk_needs_no_promise(tmp_path: Path) -> None:
    catalog = load_catalog("fs", type="filesystem", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA).append(ROWS)
    assert catalog.load_table("db.t").scan().count() == 3


def test_sql_catalog_commits_on_s3(tmp_path: Path, s3_endpoint: dict[str, str]) -> None:
    bucket = create_bucket(s3_endpoint)
    props = {"uri": f"sqlite:///{tmp_path}/c.db", "warehouse": f"s3://{bucket}/wh", **s3_endpoint}
    catalog = load_catalog("sql", properties=props)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA, partition_by=["name"])
    table.append(ROWS)
    table.delete("id = 2")
    assert catalog.load_table("db.t").scan().to_arrow().sort_by("id").column("id").to_pylist() == [
        1,
        3,
    ]
    assert table.location.startswith(f"s3://{bucket}/wh/db/t")
