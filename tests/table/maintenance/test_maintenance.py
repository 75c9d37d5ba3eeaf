"""rewrite_manifests and add_files on one machine; PyIceberg reads the results."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.catalog import Catalog, SqlCatalog
from icepark.errors import ValidationError
from icepark.manifest import ManifestContent, ManifestFile
from icepark.planning.walk import manifests_of, read_entries
from icepark.spec import properties as P
from icepark.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("day", pa.date32()),
        pa.field("value", pa.int64()),
    ]
)


def _rows(ids: range | list[int]) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "category": pa.array([["a", "b", "c"][i % 3] for i in ids]),
            "day": pa.array([19723 + i % 4 for i in ids], pa.date32()),
            "value": pa.array([i * 10 for i in ids], pa.int64()),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _pyiceberg_ids(table: Table) -> list[int]:
    from pyiceberg.table import StaticTable

    static = StaticTable.from_metadata(table.metadata_location)
    return sorted(static.scan().to_arrow().column("id").to_pylist())


def _ids(table: Table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


# -- rewrite_manifests ---------------------------------------------------------------------------


def test_rewrite_manifests_regroups_by_partition_keeping_entries(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["category"],
        properties={"commit.manifest-merge.enabled": "false", "format-version": "2"},
    )
    for i in range(8):
        table.append(_rows(range(i * 9, i * 9 + 9)))
    table.delete("id = 4")  # merge-on-read off: a copy-on-write rewrite of one file
    head = table.current_snapshot()
    before = {
        e.data_file.file_path: (e.snapshot_id, e.sequence_number, e.file_sequence_number)
        for _, es in read_entries(table.io, manifests_of(table.io, head, ManifestContent.DATA))
        for e in es
    }
    assert len(manifests_of(table.io, head, ManifestContent.DATA)) > 8
    result = table.rewrite_manifests()
    assert result.rewritten_manifests_count > 8
    assert result.added_manifests_count == 1
    snap = table.current_snapshot()
    assert snap is not None and snap.operation.value == "replace"
    assert snap.summary["manifests-created"] == "1"
    assert snap.summary["manifests-replaced"] == str(result.rewritten_manifests_count)
    assert snap.summary["total-data-files"] == head.summary["total-data-files"]  # type: ignore[union-attr]
    (manifest,) = manifests_of(table.io, snap, ManifestContent.DATA)
    after = {
        e.data_file.file_path: (e.snapshot_id, e.sequence_number, e.file_sequence_number)
        for _, es in read_entries(table.io, [manifest], live_only=False)
        for e in es
    }
    assert after == before
    assert _ids(table) == [i for i in range(72) if i != 4]
    assert _pyiceberg_ids(table) == _ids(table)
    # nothing to do now: no commit
    assert table.rewrite_manifests().rewritten_manifests_count == 0
    assert table.current_snapshot() == snap


def test_rewrite_manifests_of_a_branch_leaves_main_alone(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", SCHEMA, properties={"commit.manifest-merge.enabled": "false"}
    )
    for i in range(3):
        table.append(_rows(range(i * 9, i * 9 + 9)))
    head = table.current_snapshot()
    assert head is not None
    table.create_branch("b", head.snapshot_id)
    assert table.rewrite_manifests(branch="nope").rewritten_manifests_count == 0
    result = table.rewrite_manifests(branch="b")
    assert (result.rewritten_manifests_count, result.added_manifests_count) == (3, 1)
    assert table.current_snapshot() == head
    rewritten = table.metadata.snapshot_by_name("b")
    assert rewritten is not None and rewritten.parent_snapshot_id == head.snapshot_id
    assert len(manifests_of(table.io, rewritten, ManifestContent.DATA)) == 1
    assert sorted(table.scan(snapshot_id=rewritten.snapshot_id).to_arrow()["id"].to_pylist()) == (
        _ids(table)
    )


def test_rewrite_manifests_splits_at_the_target_size_and_clusters(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["category", "day"],
        properties={"commit.manifest-merge.enabled": "false", "format-version": "2"},
    )
    for i in range(12):
        table.append(_rows(range(i * 12, i * 12 + 12)))
    total = sum(m.manifest_length for m in manifests_of(table.io, table.current_snapshot()))
    table.set_properties({P.MANIFEST_TARGET_SIZE_BYTES.name: str(total // 3 + 1)})
    with pytest.raises(ValidationError, match="nope"):
        table.rewrite_manifests(cluster_by=["nope"])
    result = table.rewrite_manifests(cluster_by=["category"])
    assert result.added_manifests_count == 3
    manifests = manifests_of(table.io, table.current_snapshot(), ManifestContent.DATA)
    categories = [
        {e.data_file.partition[0] for e in es} for _, es in read_entries(table.io, manifests)
    ]
    assert sorted(min(c) for c in categories) == ["a", "b", "c"]
    assert all(len(c) == 1 for c in categories)  # one category per manifest
    assert _ids(table) == list(range(144))
    assert _pyiceberg_ids(table) == list(range(144))
    with pytest.raises(ValidationError, match="spec id 9"):
        table.rewrite_manifests(spec_id=9)


# -- add_files -----------------------------------------------------------------------------------


def _hive_folder(root: Path, with_ids: bool = False) -> pa.Table:
    """category=x/ folders of Parquet files without the category column (as Hive writes)."""
    data = _rows(range(30))
    for category in ("a", "b", "c"):
        part = data.filter(pa.compute.equal(data.column("category"), category))
        folder = root / f"category={category}"
        folder.mkdir(parents=True)
        for n in range(2):
            chunk = part.slice(n * 5, 5).drop_columns(["category"])
            pq.write_table(chunk, folder / f"part-{n}.parquet")
    (root / "_SUCCESS").write_text("")
    return data


def test_add_files_from_a_hive_folder(catalog: Catalog, tmp_path: Path) -> None:
    data = _hive_folder(tmp_path / "hive")
    table = catalog.create_table(
        "db.t", SCHEMA, partition_by=["category"], properties={"format-version": "2"}
    )
    result = table.add_files(str(tmp_path / "hive"))
    assert result.added_files_count == 6
    assert result.changed_partition_count == 3
    assert table.metadata.name_mapping() is not None  # written for files without field ids
    tasks = table.scan().plan_files()
    assert sorted(t.file.partition for t in tasks) == [("a",)] * 2 + [("b",)] * 2 + [("c",)] * 2
    got = table.scan().to_arrow().sort_by("id")
    assert got.column("category").to_pylist() == data.column("category").to_pylist()
    assert got.column("day").to_pylist() == data.column("day").to_pylist()
    assert table.scan(filter="category = 'b'").count() == 10
    assert table.scan(filter="id < 3").count() == 3  # metrics from the footers prune
    assert len(table.scan(filter="id > 1000").plan_files()) == 0
    assert _pyiceberg_ids(table) == list(range(30))
    snapshots = len(table.snapshots())
    # the same files again: refused, nothing committed
    with pytest.raises(ValidationError, match="already referenced"):
        table.add_files(str(tmp_path / "hive" / "category=a"))
    assert len(catalog.load_table("db.t").snapshots()) == snapshots
    # the table registered elsewhere reads the same
    other = SqlCatalog("o", uri=f"sqlite:///{tmp_path}/o.db", warehouse=str(tmp_path / "o"))
    other.create_namespace("x")
    registered = other.register_table("x.copy", table.metadata_location)
    assert _ids(registered) == list(range(30))


def test_add_files_relative_paths(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder or file given relative to the working directory: the folders' partition
    values are found (they were lost) and the locations registered are absolute."""
    _hive_folder(tmp_path / "hive")
    monkeypatch.chdir(tmp_path)
    table = catalog.create_table("db.t", SCHEMA, partition_by=["category"])
    assert table.add_files("hive").added_files_count == 6
    tasks = table.scan().plan_files()
    assert sorted(t.file.partition for t in tasks) == [("a",)] * 2 + [("b",)] * 2 + [("c",)] * 2
    assert all(t.file.file_path.startswith(f"{tmp_path}/hive/") for t in tasks)
    assert table.scan(filter="category = 'b'").count() == 10
    plain = catalog.create_table("db.plain", SCHEMA.remove(SCHEMA.get_field_index("category")))
    assert plain.add_files("hive/category=b/part-0.parquet").added_files_count == 1
    (task,) = plain.scan().plan_files()
    assert task.file.file_path == f"{tmp_path}/hive/category=b/part-0.parquet"
    assert plain.scan().count() == 5


def test_add_files_partition_values_from_statistics(catalog: Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_by=["day(day)", "truncate(1, category)"])
    for category in ("a", "b"):
        rows = _rows(range(40)).filter(pa.compute.equal(pa.compute.field("category"), category))
        for day in (19723, 19724):
            part = rows.filter(
                pa.compute.equal(pa.compute.field("day"), pa.scalar(day, pa.date32()))
            )
            pq.write_table(part, tmp_path / f"{category}-{day}.parquet")
    result = table.add_files([str(tmp_path / "a-19723.parquet"), str(tmp_path / "b-19724.parquet")])
    assert result.added_files_count == 2
    partitions = sorted(t.file.partition for t in table.scan().plan_files())
    assert partitions == [(19723, "a"), (19724, "b")]
    # a file holding two partitions cannot be added: its partition is unknown
    pq.write_table(_rows(range(8)), tmp_path / "mixed.parquet")
    with pytest.raises(ValidationError, match=r"mixed\.parquet"):
        table.add_files(str(tmp_path / "mixed.parquet"))


def test_add_files_refuses_files_that_do_not_fit(catalog: Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    table.append(_rows(range(3)))
    location = table.metadata_location
    wrong_type = _rows(range(3)).set_column(3, "value", pa.array(["x", "y", "z"]))
    pq.write_table(wrong_type, tmp_path / "wrong-type.parquet")
    with pytest.raises(ValidationError, match=r"wrong-type\.parquet.*'value'"):
        table.add_files(str(tmp_path / "wrong-type.parquet"))
    extra = _rows(range(3)).append_column("other", pa.array([1, 2, 3]))
    pq.write_table(extra, tmp_path / "extra.parquet")
    with pytest.raises(ValidationError, match=r"extra\.parquet.*'other'"):
        table.add_files(str(tmp_path / "extra.parquet"))
    no_id = _rows(range(3)).drop_columns(["id"])
    pq.write_table(no_id, tmp_path / "no-id.parquet")
    with pytest.raises(ValidationError, match=r"no-id\.parquet.*'id'"):
        table.add_files(str(tmp_path / "no-id.parquet"))
    (tmp_path / "not-parquet.parquet").write_text("hello")
    with pytest.raises(ValidationError, match=r"not-parquet\.parquet"):
        table.add_files(str(tmp_path / "not-parquet.parquet"))
    with pytest.raises(ValidationError, match="does not exist"):
        table.add_files(str(tmp_path / "missing.parquet"))
    assert catalog.load_table("db.t").metadata_location == location
    # promoted types fit: an int column for a long one
    narrow = _rows(range(3, 6)).set_column(3, "value", pa.array([1, 2, 3], pa.int32()))
    pq.write_table(narrow, tmp_path / "narrow.parquet")
    table.add_files(str(tmp_path / "narrow.parquet"))
    assert _ids(table) == list(range(6))
    assert sorted(table.scan().to_arrow().column("value").to_pylist()) == [0, 1, 2, 3, 10, 20]


def test_add_files_with_field_ids_needs_no_name_mapping(catalog: Catalog) -> None:
    source = catalog.create_table("db.s", SCHEMA, partition_by=["category"])
    source.append(_rows(range(12)))
    files = [t.file.file_path for t in source.scan().plan_files()]
    table = catalog.create_table("db.t", SCHEMA, partition_by=["category"])
    assert table.add_files(files).added_files_count == 3
    assert table.metadata.name_mapping() is None
    assert _ids(table) == list(range(12))
    assert sorted(t.file.partition for t in table.scan().plan_files()) == [("a",), ("b",), ("c",)]


def test_rewrite_manifests_by_arrays_writes_what_entry_by_entry_writes(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A huge table's rewrite (manifests decoded into arrays, entries made objects while
    written) writes the same manifests, entry for entry, as the entry-by-entry rewrite."""
    import icepark.planning.walk as walk

    def rewritten(name: str, **options: object) -> list[list[object]]:
        table = catalog.create_table(
            name,
            SCHEMA,
            partition_by=["category", "day"],
            properties={"commit.manifest-merge.enabled": "false", "format-version": "2"},
        )
        for i in range(12):
            table.append(_rows(range(i * 12, i * 12 + 12)))
        table.delete("id = 4")
        total = sum(m.manifest_length for m in manifests_of(table.io, table.current_snapshot()))
        table.set_properties({P.MANIFEST_TARGET_SIZE_BYTES.name: str(total // 3 + 1)})
        assert table.rewrite_manifests(**options).added_manifests_count >= 2  # type: ignore[arg-type]
        manifests = manifests_of(table.io, table.current_snapshot(), ManifestContent.DATA)
        return [
            [
                (
                    e.status,
                    e.sequence_number,
                    e.file_sequence_number,
                    e.data_file.replace(file_path=e.data_file.file_path.rsplit("/", 1)[1][:5]),
                )
                for e in es
            ]
            for _, es in read_entries(table.io, manifests, live_only=False)
        ]

    for options in ({}, {"cluster_by": ["day"]}):
        by_entries = rewritten(f"db.e{len(options)}", **options)
        monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
        by_columns = rewritten(f"db.c{len(options)}", **options)
        monkeypatch.undo()
        assert by_columns == by_entries


def _records(table: Table, m: ManifestFile) -> bytes:
    """A manifest's records, decompressed, one after another."""
    from icepark.avro.blocks import read_avro_blocks

    data = table.io.new_input(m.manifest_path).read_bytes()
    return bytes(read_avro_blocks(m.manifest_path, data).records()[0])


def _facts(m: ManifestFile) -> ManifestFile:
    """What a manifest list says of a manifest, less where it is and what the commit that
    made it gives it (snapshot id, sequence number, v3 first row id)."""
    return m.replace(
        manifest_path="",
        manifest_length=0,
        added_snapshot_id=0,
        sequence_number=0,
        first_row_id=None,
    )


@pytest.mark.parametrize("version", [1, 2, 3])
def test_rewrite_manifests_copying_records_writes_what_objects_write(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """A huge table's rewrite copies each entry's data file record as stored
    (ManifestWriter.existing_rows); on two branches of one table, rewritten once so and once
    with every entry made an object, the new manifests hold the same bytes (decompressed),
    counts and summaries, for each of two partition specs; the plans are unchanged."""
    from icepark.avro.compiled import kernel_available
    from icepark.manifest import ManifestWriter
    from icepark.table.maintenance.rewrite_manifests import rewrite_manifests

    if not kernel_available():
        pytest.skip("numba is not importable")
    import icepark.planning.walk as walk

    props = {"commit.manifest-merge.enabled": "false", "format-version": str(version)}
    if version >= 2:
        props["write.delete.mode"] = "merge-on-read"
    table = catalog.create_table("db.t", SCHEMA, partition_by=["category"], properties=props)
    for i in range(4):
        table.append(_rows(range(i * 9, i * 9 + 9)))
    with table.update_spec() as u:
        u.add_field("day")
    for i in range(4, 8):
        table.append(_rows(range(i * 9, i * 9 + 9)))
    table.delete("id = 4 or id = 50")
    head = table.current_snapshot()
    assert head is not None
    plan = sorted(t.file.file_path for t in table.scan().plan_files())
    copying: list[bool] = []
    can_copy = ManifestWriter.can_copy

    def spy(self: ManifestWriter, columns: object) -> bool:
        copying.append(can_copy(self, columns))  # type: ignore[arg-type]
        return copying[-1]

    monkeypatch.setattr(walk, "COLUMNS_MIN_ENTRIES", 0)
    written: dict[str, list[tuple[bytes, ManifestFile]]] = {}
    for spec_id in (0, 1):
        for way in ("copied", "objects"):
            branch = f"{way}{spec_id}"
            table.create_branch(branch, head.snapshot_id)
            if way == "objects":
                monkeypatch.setattr(ManifestWriter, "can_copy", lambda self, columns: False)
            else:
                monkeypatch.setattr(ManifestWriter, "can_copy", spy)
            result = rewrite_manifests(table, spec_id=spec_id, branch=branch)
            assert result.rewritten_manifests_count >= 4
            snap = table.metadata.snapshot_by_name(branch)
            new = [
                m for m in manifests_of(table.io, snap) if m.added_snapshot_id == snap.snapshot_id
            ]
            assert new and all(m.partition_spec_id == spec_id for m in new)
            written[branch] = [(_records(table, m), _facts(m)) for m in new]
            tasks = table.scan(snapshot_id=snap.snapshot_id).plan_files()
            assert sorted(t.file.file_path for t in tasks) == plan
        assert written[f"copied{spec_id}"] == written[f"objects{spec_id}"]
    assert copying and all(copying)  # every manifest's records were copied
