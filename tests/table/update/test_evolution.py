"""Schema, partition spec and sort order evolution through the public Table API."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.catalog import Catalog, SqlCatalog
from icepark.errors import CommitFailedError, ValidationError
from icepark.spec.name_mapping import (
    create_name_mapping,
    name_mapping_from_json,
    name_mapping_to_json,
)
from icepark.spec.types import ListType, LongType, StructType


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


SEED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("age", pa.int32()),
        pa.field("dt", pa.date32()),
    ]
)


def _seed_rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "name": [f"n{i}" for i in ids],
            "age": pa.array([20 + i for i in ids], pa.int32()),
            "dt": [dt.date(2024, 1, 1 + i % 3) for i in ids],
        },
        schema=SEED,
    )


def _sorted_rows(t: pa.Table) -> list[dict[str, object]]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def test_seed_scenario(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED)
    table.append(_seed_rows(range(3)))
    with table.update_schema() as u:
        u.delete_column("name")
    after_drop = pa.table(
        {
            "id": pa.array([3, 4], pa.int64()),
            "age": pa.array([30, 31], pa.int32()),
            "dt": [dt.date(2024, 2, 1), dt.date(2024, 2, 2)],
        }
    )
    table.append(after_drop)
    with table.update_schema() as u:
        u.add_column("new_col", "string", after="id")
    assert [f.name for f in table.schema().fields] == ["id", "new_col", "age", "dt"]
    rows = _sorted_rows(table.scan().to_arrow())
    assert [r["new_col"] for r in rows] == [None] * 5
    assert [r["age"] for r in rows] == [20, 21, 22, 30, 31]
    assert rows[0] == {"id": 0, "new_col": None, "age": 20, "dt": dt.date(2024, 1, 1)}
    # a new column reusing the dropped column's name never sees the old data
    with table.update_schema() as u:
        u.add_column("name", "string")
    name_field = table.schema().find_field("name")
    assert name_field.field_id == 6  # ids 1-4, new_col 5, name 6: never reused
    rows = _sorted_rows(table.scan().to_arrow())
    assert [r["name"] for r in rows] == [None] * 5
    assert list(rows[0]) == ["id", "new_col", "age", "dt", "name"]
    # the old snapshot still reads with its own schema (name as it was)
    first = table.snapshots()[0].snapshot_id
    old = table.scan(snapshot_id=first).to_arrow()
    assert old.column_names == ["id", "name", "age", "dt"]
    assert sorted(old.column("name").to_pylist()) == ["n0", "n1", "n2"]
    current = table.scan(snapshot_id=first, use_snapshot_schema=False).to_arrow()
    assert current.column_names == ["id", "new_col", "age", "dt", "name"]
    assert current.column("name").to_pylist() == [None] * 3


def test_seed_scenario_v3_initial_default(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED, properties={"format-version": "3"})
    table.append(_seed_rows(range(3)))
    with table.update_schema() as u:
        u.delete_column("name")
        u.add_column("new_col", "long", default=7, after="id")
    table.append(
        pa.table(
            {
                "id": pa.array([9], pa.int64()),
                "new_col": pa.array([1], pa.int64()),
                "age": pa.array([1], pa.int32()),
                "dt": [dt.date(2024, 1, 1)],
            }
        )
    )
    rows = _sorted_rows(table.scan().to_arrow())
    assert [r["new_col"] for r in rows] == [7, 7, 7, 1]
    f = table.schema().find_field("new_col")
    assert f.initial_default == 7 and f.write_default == 7


def test_required_column_needs_default(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED)
    with pytest.raises(ValidationError, match=r"required column without a default.*x"):
        table.update_schema().add_column("x", "int", required=True)
    with pytest.raises(ValidationError, match="defaults need format v3"):
        table.update_schema().add_column("x", "int", default=1)
    with table.update_schema(allow_incompatible_changes=True) as u:
        u.add_column("x", "int", required=True)
    assert table.schema().find_field("x").required


def test_commit_only_on_clean_exit(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED)
    before = table.metadata_location
    with pytest.raises(RuntimeError), table.update_schema() as u:
        u.add_column("x", "int")
        raise RuntimeError("boom")
    assert table.metadata_location == before
    assert "x" not in table.schema().column_names()
    u2 = table.update_schema()
    u2.add_column("y", "int")
    assert "y" not in table.schema().column_names()
    u2.commit()
    assert "y" in table.schema().column_names()
    with pytest.raises(ValidationError, match="already finished"):
        u2.commit()


def test_refusals_name_the_column(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED, partition_by=["dt"], sort_by=["age"])
    u = table.update_schema()
    cases = [
        (lambda: u.update_column("name", "int"), "Cannot change column type: name"),
        (lambda: u.update_column("age", "string"), "Cannot change column type: age"),
        (lambda: u.update_column("age", "double"), "Cannot change column type: age"),
        (lambda: u.delete_column("dt"), "Cannot delete column dt: used by partition field"),
        (lambda: u.delete_column("age"), "Cannot delete column age: used by the current sort"),
        (lambda: u.delete_column("nope"), "missing column: nope"),
        (lambda: u.rename_column("nope", "x"), "missing column: nope"),
        (lambda: u.add_column("name", "int"), "name already exists: name"),
        (lambda: u.add_column("name.x", "int"), "non-struct column name"),
        (lambda: u.rename_column("name", "age"), "Duplicate field names.*age"),
        (lambda: u.move_after("id", "nope"), "missing column: nope"),
        (lambda: u.move_before("id", "id"), "itself"),
        (lambda: u.update_column("name", required=True), "optional -> required"),
    ]
    for call, message in cases:
        with pytest.raises(ValidationError, match=message):
            call()
    assert u.apply().same_structure(table.schema())  # nothing refused was recorded


def test_identifier_fields(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED)
    with table.update_schema() as u:
        u.set_identifier_fields("id")
    assert table.schema().identifier_field_names == ["id"]
    with pytest.raises(ValidationError, match="Cannot delete identifier field id"):
        table.update_schema().delete_column("id")
    with pytest.raises(ValidationError, match="identifier"):
        table.update_schema().make_column_optional("id")
    with pytest.raises(ValidationError, match="not a required field"):
        table.update_schema().set_identifier_fields("name")
    with table.update_schema() as u:
        u.set_identifier_fields()
        u.delete_column("id")
    assert table.schema().identifier_field_ids == ()


def test_nested_add_rename_move_and_widen(catalog: Catalog) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int32(), nullable=False),
            pa.field(
                "loc", pa.struct([pa.field("lat", pa.float32()), pa.field("lon", pa.float32())])
            ),
            pa.field("pts", pa.list_(pa.struct([pa.field("x", pa.int32())]))),
            pa.field("price", pa.decimal128(9, 2)),
        ]
    )
    table = catalog.create_table("db.t", schema)
    old = pa.table(
        {
            "id": pa.array([1], pa.int32()),
            "loc": pa.array([{"lat": 1.5, "lon": 2.5}], schema.field("loc").type),
            "pts": pa.array([[{"x": 3}]], schema.field("pts").type),
            "price": pa.array([None], pa.decimal128(9, 2)),
        },
        schema=schema,
    )
    table.append(old)
    with table.update_schema() as u:
        u.add_column("loc.alt", "double", before="loc.lat")
        u.add_column(("pts", "y"), "long")
        u.rename_column("loc.lon", "lng")
        u.update_column("id", "long")
        u.update_column("loc.lat", "double")
        u.update_column("price", "decimal(12,2)")
        u.move_first("price")
        u.add_column("tags", ListType(0, LongType(), False))
    s = table.schema()
    assert [f.name for f in s.fields] == ["price", "id", "loc", "pts", "tags"]
    loc = s.find_field("loc").field_type
    assert isinstance(loc, StructType) and [f.name for f in loc.fields] == ["alt", "lat", "lng"]
    assert s.find_field("id").field_type == LongType()
    assert table.metadata.last_column_id == max(s.field_ids())
    row = table.scan().to_arrow().to_pylist()[0]
    assert row["id"] == 1 and row["loc"] == {"alt": None, "lat": 1.5, "lng": 2.5}
    assert row["pts"] == [{"x": 3, "y": None}] and row["tags"] is None
    with pytest.raises(ValidationError, match="different struct"):
        table.update_schema().move_after("loc.lat", "id")


def test_add_column_takes_the_schema_helpers_nested_types(catalog: Catalog) -> None:
    """``icepark.types.struct``/``list_of``/``map_of`` work in ``add_column`` as in
    ``icepark.schema`` (they were taken, then failed to serialise at commit)."""
    from icepark.types import list_of, map_of, struct

    table = catalog.create_table("db.t", SEED)
    with table.update_schema() as u:
        u.add_column("address", struct(("city", "string"), ("zip", "string", True)))
        u.add_column("tags", list_of("string"))
        u.add_column("attrs", map_of("string", "long"))
    loaded = catalog.load_table("db.t").schema()
    address = loaded.find_field("address").field_type
    assert isinstance(address, StructType)
    assert [(f.field_id, f.name, f.required) for f in address.fields] == [
        (6, "city", False),
        (7, "zip", True),
    ]
    assert isinstance(loaded.find_field("tags").field_type, ListType)
    assert loaded.highest_field_id == 12
    with pytest.raises(ValidationError, match="Not a type"), table.update_schema() as u:
        u.add_column("bad", 42)
    assert catalog.load_table("db.t").schema().highest_field_id == 12


def test_delete_then_readd_same_name_in_one_update(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED)
    table.append(_seed_rows(range(2)))
    with table.update_schema() as u:
        u.delete_column("age")
        u.add_column("age", "string")
    assert table.schema().find_field("age").field_id == 5
    assert table.scan().to_arrow().column("age").to_pylist() == [None, None]


def test_union_by_name(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED)
    wider = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("age", pa.int64()),
            pa.field("extra", pa.struct([pa.field("a", pa.string())])),
        ]
    )
    with table.update_schema() as u:
        u.union_by_name(wider)
    s = table.schema()
    assert s.column_names()[:4] == ["id", "name", "age", "dt"]
    assert s.find_field("age").field_type == LongType()
    assert not s.find_field("id").required
    assert s.find_field("extra.a").field_id == 6
    with pytest.raises(ValidationError, match="Cannot change column type: name"):
        table.update_schema().union_by_name(pa.schema([pa.field("name", pa.int32())]))


def test_name_mapping_kept_in_step(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED)
    mapping = create_name_mapping(table.schema())
    table.set_properties({"schema.name-mapping.default": name_mapping_to_json(mapping)})
    with table.update_schema() as u:
        u.rename_column("name", "full_name")
        u.add_column("x", "int")
    updated = name_mapping_from_json(table.properties["schema.name-mapping.default"])
    assert updated.find("full_name") is not None and updated.find("name") is not None
    found = updated.find("x")
    assert found is not None and found.field_id == 5


def test_concurrent_schema_change_retries_on_fresh_schema(catalog: Catalog) -> None:
    t1 = catalog.create_table("db.t", SEED)
    t2 = catalog.load_table("db.t")
    with t2.update_schema() as u:
        u.add_column("b", "int")
    with t1.update_schema() as u:  # based on the stale schema: conflict, then re-applied
        u.add_column("a", "int")
    final = catalog.load_table("db.t").schema()
    assert final.find_field("b").field_id == 5 and final.find_field("a").field_id == 6
    # a retry that no longer applies fails validation
    t3 = catalog.load_table("db.t")
    t4 = catalog.load_table("db.t")
    with t4.update_schema() as u:
        u.add_column("c", "int")
    with pytest.raises(ValidationError, match="name already exists: c"), t3.update_schema() as u:
        u.add_column("c", "long")
    # with retries off, a change landing between staging and the swap is a commit conflict
    t5 = catalog.load_table("db.t")
    t5.set_properties({"commit.retry.num-retries": "0"})
    swap = catalog._swap_metadata_location  # type: ignore[attr-defined]
    raced: list[bool] = []

    def race(*args: object) -> None:
        if not raced:
            raced.append(True)
            catalog.load_table("db.t").update_schema().add_column("d", "int").commit()
        swap(*args)

    catalog._swap_metadata_location = race  # type: ignore[attr-defined]
    try:
        with pytest.raises(CommitFailedError):
            t5.update_schema().add_column("e", "int").commit()
    finally:
        del catalog._swap_metadata_location  # type: ignore[attr-defined]
    names = [f.name for f in catalog.load_table("db.t").schema().fields]
    assert "d" in names and "e" not in names


def test_time_travel_reads_with_snapshot_schema(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED)
    table.append(_seed_rows(range(2)))
    first = table.snapshots()[0].snapshot_id
    with table.update_schema() as u:
        u.rename_column("age", "years")
        u.update_column("age", "long")
    table.append(
        pa.table(
            {
                "id": pa.array([5], pa.int64()),
                "name": ["x"],
                "years": pa.array([50], pa.int64()),
                "dt": [dt.date(2024, 1, 1)],
            }
        )
    )
    old = table.scan(snapshot_id=first).to_arrow()
    assert old.column_names == ["id", "name", "age", "dt"]
    assert old.schema.field("age").type == pa.int32()
    new_view = table.scan(snapshot_id=first, use_snapshot_schema=False).to_arrow()
    assert new_view.schema.field("years").type == pa.int64()
    assert sorted(new_view.column("years").to_pylist()) == [20, 21]
    assert sorted(table.scan().to_arrow().column("years").to_pylist()) == [20, 21, 50]


# -- partition specs -----------------------------------------------------------------------


def test_spec_evolution_v2(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED, partition_by=["dt"])
    table.append(_seed_rows(range(6)))
    with table.update_spec() as u:
        u.add_field("bucket(4, id)")
        u.remove_field("dt")
    spec = table.spec()
    assert spec.spec_id == 1
    assert [(f.name, str(f.transform), f.field_id) for f in spec.fields] == [
        ("id_bucket_4", "bucket[4]", 1001)
    ]
    table.append(_seed_rows(range(6, 12)))
    with table.update_spec() as u:
        u.add_field("dt")  # re-added: reuses the id from spec 0
        u.rename_field("id_bucket_4", "b")
    assert [(f.name, f.field_id) for f in table.spec().fields] == [("b", 1001), ("dt", 1000)]
    assert table.metadata.last_partition_id == 1001
    table.append(_seed_rows(range(12, 15)))
    assert table.scan().count() == 15
    # each file is pruned by its own spec
    tasks = table.scan(filter="dt = '2024-01-02'").plan_files()
    by_spec = {t.spec_id for t in tasks}
    assert by_spec == {0, 1, 2}
    rows = table.scan(filter="dt = '2024-01-02'").to_arrow()
    assert sorted(rows.column("id").to_pylist()) == [i for i in range(15) if i % 3 == 1]
    spec0_files = [t for t in tasks if t.spec_id == 0]
    assert len(spec0_files) == 1  # the other two dt partitions of spec 0 were pruned
    # going back to an identical spec reuses it
    with table.update_spec() as u:
        u.remove_field("b")
    assert table.spec().spec_id == 0
    with table.update_spec() as u:
        u.add_field("id", "bucket[4]", "b")
    assert [(f.name, f.field_id) for f in table.spec().fields] == [("dt", 1000), ("b", 1001)]
    assert table.spec().spec_id == 3 and table.metadata.last_partition_id == 1001


def test_spec_evolution_v1_voids_removed_fields(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", SEED, partition_by=["dt"], properties={"format-version": "1"}
    )
    table.append(_seed_rows(range(3)))
    with table.update_spec() as u:
        u.remove_field("dt")
        u.add_field("id", "bucket[2]")
    fields = [(f.name, str(f.transform), f.field_id) for f in table.spec().fields]
    assert fields == [("dt", "void", 1000), ("id_bucket_2", "bucket[2]", 1001)]
    table.append(_seed_rows(range(3, 6)))
    with table.update_spec() as u:
        u.add_field("dt")
    fields = [(f.name, str(f.transform), f.field_id) for f in table.spec().fields]
    assert fields == [
        ("dt_1000", "void", 1000),
        ("id_bucket_2", "bucket[2]", 1001),
        ("dt", "identity", 1002),
    ]
    table.append(_seed_rows(range(6, 9)))
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(9))


def test_spec_refusals(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED, partition_by=["dt"])
    u = table.update_spec()
    with pytest.raises(ValidationError, match="duplicate partition field"):
        u.add_field("dt")
    with pytest.raises(ValidationError, match=r"Cannot find source column.*nope"):
        u.add_field("nope")
    with pytest.raises(ValidationError, match="Cannot find partition field to remove: nope"):
        u.remove_field("nope")
    with pytest.raises(ValidationError, match="does not accept"):
        u.add_field("name", "day")
    u.add_field("id", "bucket[2]")
    with pytest.raises(ValidationError, match="already added"):
        u.add_field("bucket(2, id)", name="other")
    with pytest.raises(ValidationError, match="conflicts with a schema column"):
        u.add_field("age", "bucket[2]", name="name")
    with pytest.raises(ValidationError, match="redundant"):
        table.update_spec().add_field("day(dt)").add_field("month(dt)")
    assert table.spec().spec_id == 0  # nothing committed


def test_spec_concurrent_change_conflicts_and_retries(catalog: Catalog) -> None:
    t1 = catalog.create_table("db.t", SEED)
    t2 = catalog.load_table("db.t")
    with t2.update_spec() as u:
        u.add_field("dt")
    with t1.update_spec() as u:
        u.add_field("bucket(4, id)")
    spec = catalog.load_table("db.t").spec()
    assert [(f.name, f.field_id) for f in spec.fields] == [("dt", 1000), ("id_bucket_4", 1001)]


# -- sort orders ---------------------------------------------------------------------------


def test_replace_sort_order_and_writes_follow(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED)
    table.replace_sort_order("age desc nulls last", "id")
    order = table.sort_order()
    assert order.order_id == 1 and str(order.fields[0].direction.value) == "desc"
    table.append(_seed_rows(range(5)))
    task = table.scan().plan_files()[0]
    assert task.file.sort_order_id == 1
    ages = pq.read_table(task.file.file_path.removeprefix("file://")).column("age").to_pylist()
    assert ages == sorted(ages, reverse=True)
    with table.update_sort_order() as u:
        u.asc("dt")
        u.desc("bucket(4, id)", nulls_last=False)
    assert table.sort_order().order_id == 2
    assert [str(f.transform) for f in table.sort_order().fields] == ["identity", "bucket[4]"]
    with pytest.raises(ValidationError, match="nope"):
        table.replace_sort_order("nope")
    with table.update_sort_order():
        pass
    assert table.sort_order().is_unsorted
    table.replace_sort_order("id")
    assert table.replace_sort_order() is table and table.sort_order().is_unsorted


# -- properties ----------------------------------------------------------------------------

_OPS = st.lists(
    st.tuples(st.sampled_from(["add", "rename", "drop"]), st.integers(0, 50)), max_size=12
)


@settings(max_examples=20)
@given(ops=_OPS)
def test_random_evolution_keeps_ids_unique_and_old_data_readable(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]]
) -> None:
    root = tmp_path_factory.mktemp("h")
    cat = SqlCatalog("h", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    cat.create_namespace("db")
    table = cat.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False)]))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    ever: set[int] = {1}
    counter = 0
    for op, n in ops:
        names = [f.name for f in table.schema().fields if f.name != "id"]
        with table.update_schema() as u:
            if op == "add" or not names:
                counter += 1
                name = f"c{n % 4}"  # often a dropped column's name
                u.add_column(name if name not in names else f"{name}_{counter}", "int")
            elif op == "rename":
                u.rename_column(names[n % len(names)], f"r{counter}_{n}")
                counter += 1
            else:
                u.delete_column(names[n % len(names)])
        schema = table.schema()
        new_ids = schema.field_ids() - ever
        assert all(i > max(ever) for i in new_ids)  # fresh ids are never reused
        ever |= new_ids
        assert table.metadata.last_column_id == max(ever)
        out = table.scan().to_arrow()
        assert sorted(out.column("id").to_pylist()) == [1, 2]
        for name in out.column_names:
            if name != "id":
                assert out.column(name).null_count == 2  # no old data leaks into new columns


def test_drop_column_of_an_old_spec(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED, partition_by=["dt"])
    table.append(_seed_rows(range(3)))
    with pytest.raises(ValidationError, match="Cannot delete column dt: used by partition field"):
        table.update_schema().delete_column("dt")
    with table.update_spec() as u:
        u.remove_field("dt")
    with table.update_schema() as u:
        u.delete_column("dt")
    table.append(_seed_rows(range(3, 5)).drop_columns(["dt"]))
    out = table.scan(filter="id >= 1").to_arrow()
    assert out.column_names == ["id", "name", "age"]
    assert sorted(out.column("id").to_pylist()) == [1, 2, 3, 4]


def test_explicit_commit_inside_block_commits_once(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SEED)
    with table.update_schema() as u:
        u.add_column("x", "int")
        u.commit()
    assert len(table.metadata.schemas) == 2
    with table.update_spec() as s:
        s.add_field("dt").commit()
    assert table.spec().spec_id == 1
