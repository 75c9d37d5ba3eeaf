"""``snapshot-loading-mode=refs`` against icepark's server: a table loads with only the
snapshots its refs name, and the rest of its history loads (one more GET, without
``snapshots=refs``) the first time something needs it: time travel, the history, a metadata
table, expiry. Expiry through such a table
deletes exactly what it deletes through a fully loaded one: never a file an unloaded
snapshot still references."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pyarrow as pa
import pytest

from icepark.catalog.base import Catalog
from icepark.rest import create_app
from icepark.rest.catalog import RestCatalog
from icepark.spec.metadata import TableMetadata
from tests.rest.conftest import serving

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def url(catalog: Catalog) -> Iterator[str]:
    catalog.create_namespace("db")
    with serving(create_app(catalog)) as served:
        yield served


def _catalog(url: str, **props: str) -> RestCatalog:
    return RestCatalog("rc", {"uri": url, **props})


def _refs(url: str) -> RestCatalog:
    return _catalog(url, **{"snapshot-loading-mode": "refs"})


def _held(metadata: TableMetadata) -> int:
    """How many snapshots ``metadata`` holds now, without loading more (a pickled copy keeps
    what is held and never loads)."""
    return len(pickle.loads(pickle.dumps(metadata)).snapshots)


def _history(url: str) -> list[int]:
    table = _catalog(url).create_table("db.t", SCHEMA)
    for start in range(0, 50, 10):
        table.append(_rows(start, 10))
    table.create_tag("first", table.metadata.snapshots[0].snapshot_id)
    return [s.snapshot_id for s in table.refresh().metadata.snapshots]


def test_history_loads_on_first_use(url: str) -> None:
    ids = _history(url)
    table = _refs(url).load_table("db.t")
    metadata = table.metadata
    assert metadata.snapshots_deferred and _held(metadata) == 2  # main's and the tag's
    # refs resolve from what was loaded: main and the tag
    assert table.scan().to_arrow().num_rows == 50
    assert table.scan(ref="first").to_arrow().num_rows == 10
    assert metadata.snapshots_deferred and _held(metadata) == 2
    copy = pickle.loads(pickle.dumps(metadata))  # a Spark task's copy: no loader, no HTTP
    assert not copy.snapshots_deferred and len(copy.snapshots) == 2
    # time travel to a snapshot no ref names: the history loads, then it is all there
    assert table.scan(snapshot_id=ids[2]).to_arrow().num_rows == 30
    assert not metadata.snapshots_deferred and _held(metadata) == 5
    assert [s.snapshot_id for s in metadata.snapshots] == ids
    assert [s.snapshot_id for s in metadata.ancestors_of(ids[-1])] == ids[::-1]
    assert table.inspect.snapshots().num_rows == 5


def test_the_whole_list_loads_when_read(url: str) -> None:
    ids = _history(url)
    table = _refs(url).load_table("db.t")
    assert [s.snapshot_id for s in table.metadata.ancestors_of(ids[-1])] == ids[::-1]
    table = _refs(url).load_table("db.t")
    assert table.inspect.snapshots().num_rows == 5
    table = _refs(url).load_table("db.t")
    assert len(table.metadata.snapshots) == 5


def test_expiry_through_a_refs_loaded_table(url: str) -> None:
    """Everything older than now, but retain_last=2: keeps the last two and the tagged first snapshot: the tag's data file
    and the files of the kept snapshots stay; only what the two expired snapshots alone
    reached goes. The table reads the same through a fully loaded client."""
    ids = _history(url)
    full = _catalog(url).load_table("db.t")
    referenced_before = {f["file_path"] for f in full.inspect.all_files().to_pylist()}
    table = _refs(url).load_table("db.t")
    now_ms = table.metadata.last_updated_ms + 1
    result = table.expire_snapshots(older_than=now_ms, retain_last=2)
    after = _catalog(url).load_table("db.t")
    assert [s.snapshot_id for s in after.metadata.snapshots] == [ids[0], ids[3], ids[4]]
    io = after.io
    for f in after.inspect.all_files().to_pylist():
        assert io.new_input(f["file_path"]).exists(), f["file_path"]
    assert after.scan(ref="first").to_arrow().num_rows == 10
    assert after.scan().to_arrow().num_rows == 50
    # appends only: every data file stays referenced (the current snapshot holds them all)
    assert {f["file_path"] for f in after.inspect.all_files().to_pylist()} == referenced_before
    assert result.deleted_data_files_count == 0
