"""Reading Parquet data files through evolved schemas: projection by field id, defaults,
promotion, nested types, name mapping, partition constants, metadata columns and filters."""

from __future__ import annotations

import datetime
import math
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.arrow.reader import read_data_file
from icepark.arrow.schema import schema_to_arrow
from icepark.errors import (
    InvalidSchemaError,
    NoSuchFileError,
    UnsupportedOperationError,
)
from icepark.expressions import Expression, bind, col
from icepark.io.pyarrow_fileio import PyArrowFileIO
from icepark.spec.manifests import DataFile, FileContent
from icepark.spec.metadata_columns import (
    FILE_PATH_FIELD,
    IS_DELETED_FIELD,
    PARTITION_FIELD_ID,
    POS_FIELD,
    SPEC_ID_FIELD,
    metadata_column,
    partition_field,
)
from icepark.spec.name_mapping import NameMapping, name_mapping_from_json
from icepark.spec.partitioning import PartitionSpec, build_partition_spec
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    UUIDType,
)

IO = PyArrowFileIO()


def _write(
    path: Path,
    schema: Schema,
    rows: list[dict[str, Any]],
    *,
    row_group_size: int | None = None,
    with_ids: bool = True,
    partition: tuple[Any, ...] = (),
    spec_id: int = 0,
) -> DataFile:
    table = pa.Table.from_pylist(rows, schema=schema_to_arrow(schema, include_field_ids=with_ids))
    pq.write_table(table, path, row_group_size=row_group_size)
    return DataFile(
        content=FileContent.DATA,
        file_path=str(path),
        file_format="PARQUET",
        partition=partition,
        record_count=len(rows),
        file_size_in_bytes=path.stat().st_size,
        spec_id=spec_id,
    )


def _read(
    data_file: DataFile,
    projected: Schema,
    table_schema: Schema | None = None,
    *,
    spec: PartitionSpec | None = None,
    row_filter: Expression | None = None,
    name_mapping: NameMapping | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    table_schema = table_schema or projected
    bound = bind(table_schema, row_filter) if row_filter is not None else None
    batches = list(
        read_data_file(
            IO,
            data_file,
            projected_schema=projected,
            table_schema=table_schema,
            partition_spec=spec,
            row_filter=bound,
            name_mapping=name_mapping,
            **kwargs,
        )
    )
    expected = schema_to_arrow(projected)
    if kwargs.get("include_positions") and projected.field_or_none(POS_FIELD.field_id) is None:
        expected = schema_to_arrow(Schema(*projected.fields, POS_FIELD))
    for batch in batches:
        _assert_schema(batch, expected)
    return [row for b in batches for row in b.to_pylist()]


def _assert_schema(batch: pa.RecordBatch, expected: pa.Schema) -> None:
    assert batch.schema.equals(expected, check_metadata=True), (batch.schema, expected)
    for column, field in zip(batch.columns, expected):
        assert column.type.equals(field.type, check_metadata=True)
    batch.validate(full=True)


# -- projection by id --------------------------------------------------------------------------

BASE = Schema(
    NestedField(1, "a", IntegerType()),
    NestedField(2, "b", StringType()),
    NestedField(3, "c", DoubleType()),
)
BASE_ROWS = [{"a": i, "b": f"s{i}", "c": i / 2} for i in range(5)]


def test_rename_reorder_drop_and_add(tmp_path: Path) -> None:
    # the spec's example: read 1: a, 2: b, 3: c as 3: measurement, 2: name, 4: a
    df = _write(tmp_path / "f.parquet", BASE, BASE_ROWS)
    projected = Schema(
        NestedField(3, "measurement", DoubleType()),
        NestedField(2, "name", StringType()),
        NestedField(4, "a", IntegerType()),
    )
    assert _read(df, projected) == [
        {"measurement": i / 2, "name": f"s{i}", "a": None} for i in range(5)
    ]


def test_added_columns_read_initial_defaults(tmp_path: Path) -> None:
    df = _write(tmp_path / "f.parquet", BASE, BASE_ROWS)
    u = uuid.UUID(int=7)
    projected = Schema(
        NestedField(1, "a", IntegerType()),
        NestedField(5, "req", LongType(), required=True, initial_default=42),
        NestedField(6, "s", StringType(), initial_default="x"),
        NestedField(7, "d", DateType(), initial_default=19000),
        NestedField(8, "ts", TimestampType(), initial_default=1_000_001),
        NestedField(9, "dec", DecimalType(9, 2), initial_default=Decimal("1.50")),
        NestedField(10, "u", UUIDType(), initial_default=u),
        NestedField(11, "none", StringType()),
    )
    rows = _read(df, projected)
    assert rows[0] == {
        "a": 0,
        "req": 42,
        "s": "x",
        "d": datetime.date(1970, 1, 1) + datetime.timedelta(days=19000),
        "ts": datetime.datetime(1970, 1, 1, 0, 0, 1, 1),
        "dec": Decimal("1.50"),
        "u": u,
        "none": None,
    }
    assert len(rows) == 5


def test_missing_required_field_without_default_fails(tmp_path: Path) -> None:
    df = _write(tmp_path / "f.parquet", BASE, BASE_ROWS)
    projected = Schema(NestedField(1, "a", IntegerType()), NestedField(9, "r", LongType(), True))
    with pytest.raises(InvalidSchemaError, match=r"Missing required field 'r'.*f\.parquet"):
        _read(df, projected)


def test_type_promotion(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "i", IntegerType()),
        NestedField(2, "f", FloatType()),
        NestedField(3, "dec", DecimalType(9, 2)),
        NestedField(4, "d", DateType()),
    )
    rows = [
        {"i": 1, "f": 1.5, "dec": Decimal("1234567.89"), "d": datetime.date(2024, 1, 2)},
        {"i": None, "f": None, "dec": None, "d": None},
    ]
    df = _write(tmp_path / "f.parquet", schema, rows)
    promoted = Schema(
        NestedField(1, "i", LongType()),
        NestedField(2, "f", DoubleType()),
        NestedField(3, "dec", DecimalType(12, 2)),
        NestedField(4, "d", TimestampType()),
    )
    assert _read(df, promoted) == [
        {"i": 1, "f": 1.5, "dec": Decimal("1234567.89"), "d": datetime.datetime(2024, 1, 2)},
        {"i": None, "f": None, "dec": None, "d": None},
    ]
    assert _read(df, promoted, row_filter=col("i") >= 1) == _read(df, promoted)[:1]
    assert len(_read(df, promoted, row_filter=col("dec") > Decimal("1234567.88"))) == 1


def test_incompatible_type_fails(tmp_path: Path) -> None:
    df = _write(tmp_path / "f.parquet", BASE, BASE_ROWS)
    projected = Schema(NestedField(2, "b", LongType()))
    with pytest.raises(InvalidSchemaError, match=r"Cannot read column 'b'.*as long"):
        _read(df, projected)


# -- nested types ------------------------------------------------------------------------------

NESTED = Schema(
    NestedField(1, "id", IntegerType(), required=True),
    NestedField(
        2,
        "point",
        StructType(NestedField(3, "x", FloatType()), NestedField(4, "y", FloatType())),
    ),
    NestedField(
        5,
        "items",
        ListType(
            6, StructType(NestedField(7, "p", IntegerType()), NestedField(8, "q", StringType()))
        ),
    ),
    NestedField(
        9,
        "attrs",
        MapType(10, StringType(), 11, StructType(NestedField(12, "v", IntegerType())), False),
    ),
)
NESTED_ROWS = [
    {
        "id": 0,
        "point": {"x": 1.0, "y": 2.0},
        "items": [{"p": 1, "q": "a"}, {"p": 2, "q": None}],
        "attrs": [("k", {"v": 1})],
    },
    {"id": 1, "point": None, "items": None, "attrs": None},
    {"id": 2, "point": {"x": None, "y": 3.5}, "items": [], "attrs": [("a", None), ("b", {"v": 3})]},
]


def test_nested_struct_field_added_renamed_and_dropped(tmp_path: Path) -> None:
    df = _write(tmp_path / "f.parquet", NESTED, NESTED_ROWS)
    projected = Schema(
        NestedField(
            2,
            "pt",
            StructType(
                NestedField(4, "lat", DoubleType()),
                NestedField(13, "z", IntegerType(), initial_default=0),
                NestedField(14, "w", StringType()),
            ),
        ),
        NestedField(1, "id", LongType(), required=True),
    )
    assert _read(df, projected) == [
        {"pt": {"lat": 2.0, "z": 0, "w": None}, "id": 0},
        {"pt": None, "id": 1},
        {"pt": {"lat": 3.5, "z": 0, "w": None}, "id": 2},
    ]


def test_list_of_struct_and_map_evolution(tmp_path: Path) -> None:
    df = _write(tmp_path / "f.parquet", NESTED, NESTED_ROWS)
    projected = Schema(
        NestedField(
            5,
            "things",
            ListType(
                6,
                StructType(
                    NestedField(8, "label", StringType()),
                    NestedField(7, "p", LongType()),
                    NestedField(15, "new", IntegerType(), initial_default=9),
                ),
            ),
        ),
        NestedField(
            9,
            "attrs",
            MapType(
                10,
                StringType(),
                11,
                StructType(NestedField(12, "v", LongType()), NestedField(16, "n", StringType())),
            ),
        ),
    )
    assert _read(df, projected) == [
        {
            "things": [{"label": "a", "p": 1, "new": 9}, {"label": None, "p": 2, "new": 9}],
            "attrs": [("k", {"v": 1, "n": None})],
        },
        {"things": None, "attrs": None},
        {"things": [], "attrs": [("a", None), ("b", {"v": 3, "n": None})]},
    ]


def test_whole_nested_columns_and_filters_on_nested_fields(tmp_path: Path) -> None:
    df = _write(tmp_path / "f.parquet", NESTED, NESTED_ROWS, row_group_size=1)
    assert _read(df, NESTED) == NESTED_ROWS
    only_x = Schema(NestedField(2, "point", StructType(NestedField(3, "x", FloatType()))))
    rows = _read(df, only_x, NESTED, row_filter=col("point.y") > 2.5)
    assert rows == [{"point": {"x": None}}]
    rows = _read(df, only_x, NESTED, row_filter=col("point.x").is_null())
    assert rows == [{"point": None}, {"point": {"x": None}}]


# -- name mapping ------------------------------------------------------------------------------


def test_file_without_ids_reads_through_name_mapping(tmp_path: Path) -> None:
    df = _write(tmp_path / "noids.parquet", NESTED, NESTED_ROWS, with_ids=False)
    mapping = name_mapping_from_json(
        """[{"field-id": 1, "names": ["id"]},
            {"field-id": 2, "names": ["point"], "fields": [
                {"field-id": 3, "names": ["x"]}, {"field-id": 4, "names": ["y"]}]},
            {"field-id": 5, "names": ["items"], "fields": [
                {"field-id": 6, "names": ["element"], "fields": [
                    {"field-id": 7, "names": ["p"]}, {"field-id": 8, "names": ["q"]}]}]},
            {"field-id": 9, "names": ["attrs"], "fields": [
                {"field-id": 10, "names": ["key"]},
                {"field-id": 11, "names": ["value"], "fields": [
                    {"field-id": 12, "names": ["v"]}]}]}]"""
    )
    assert _read(df, NESTED, name_mapping=mapping) == NESTED_ROWS
    renamed = Schema(NestedField(1, "ident", LongType(), required=True))
    assert _read(df, renamed, name_mapping=mapping, row_filter=col("ident") > 0) == [
        {"ident": 1},
        {"ident": 2},
    ]


def test_file_without_ids_and_without_mapping_fails(tmp_path: Path) -> None:
    df = _write(tmp_path / "noids.parquet", BASE, BASE_ROWS, with_ids=False)
    with pytest.raises(InvalidSchemaError, match=r"noids\.parquet has no field ids"):
        _read(df, BASE)


def test_unmapped_columns_read_as_missing(tmp_path: Path) -> None:
    df = _write(tmp_path / "noids.parquet", BASE, BASE_ROWS, with_ids=False)
    mapping = name_mapping_from_json('[{"field-id": 1, "names": ["a"]}]')
    projected = Schema(NestedField(1, "a", IntegerType()), NestedField(2, "b", StringType()))
    assert _read(df, projected, name_mapping=mapping)[1] == {"a": 1, "b": None}


# -- partition constants and metadata columns --------------------------------------------------

PART_SCHEMA = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "cat", StringType()),
    NestedField(3, "day", DateType()),
)


def test_identity_partition_values_fill_missing_columns(tmp_path: Path) -> None:
    spec = build_partition_spec(PART_SCHEMA, ["cat", "bucket(4, id)", "day"], spec_id=1)
    file_schema = Schema(NestedField(1, "id", LongType()))  # a Hive-style file
    df = _write(
        tmp_path / "f.parquet",
        file_schema,
        [{"id": i} for i in range(3)],
        partition=("x", 2, 19000),
        spec_id=1,
    )
    rows = _read(df, PART_SCHEMA, spec=spec)
    day = datetime.date(1970, 1, 1) + datetime.timedelta(days=19000)
    assert rows == [{"id": i, "cat": "x", "day": day} for i in range(3)]
    assert len(_read(df, PART_SCHEMA, spec=spec, row_filter=col("cat") == "x")) == 3
    assert _read(df, PART_SCHEMA, spec=spec, row_filter=col("cat") != "x") == []
    assert len(_read(df, PART_SCHEMA, spec=spec, row_filter=col("day") == 19000)) == 3


def test_columns_in_the_file_win_over_partition_values(tmp_path: Path) -> None:
    spec = build_partition_spec(PART_SCHEMA, ["cat"])
    rows = [{"id": 1, "cat": "in-file", "day": None}]
    df = _write(tmp_path / "f.parquet", PART_SCHEMA, rows, partition=("other",))
    assert _read(df, PART_SCHEMA, spec=spec) == rows


def test_metadata_columns(tmp_path: Path) -> None:
    spec = build_partition_spec(PART_SCHEMA, ["cat", "bucket(4, id)"], spec_id=3)
    df = _write(
        tmp_path / "f.parquet",
        PART_SCHEMA,
        [{"id": i, "cat": "x", "day": None} for i in range(4)],
        partition=("x", 1),
        spec_id=3,
    )
    # _partition typed as the union of all specs: field 1002 is not in this file's spec
    ptype = StructType(
        *spec.partition_type(PART_SCHEMA).fields, NestedField(1002, "day", DateType())
    )
    projected = Schema(
        FILE_PATH_FIELD,
        NestedField(1, "id", LongType()),
        POS_FIELD,
        SPEC_ID_FIELD,
        partition_field(ptype),
        IS_DELETED_FIELD,
    )
    rows = _read(df, projected, PART_SCHEMA, spec=spec)
    assert rows == [
        {
            "_file": str(tmp_path / "f.parquet"),
            "id": i,
            "_pos": i,
            "_spec_id": 3,
            "_partition": {"cat": "x", "id_bucket": 1, "day": None},
            "_deleted": False,
        }
        for i in range(4)
    ]
    assert metadata_column("_pos") == POS_FIELD
    assert metadata_column("_partition", ptype) == partition_field(ptype)
    assert partition_field(ptype).field_id == PARTITION_FIELD_ID == 2147483642
    assert [f.field_id for f in (FILE_PATH_FIELD, POS_FIELD, IS_DELETED_FIELD, SPEC_ID_FIELD)] == [
        2147483646,
        2147483645,
        2147483644,
        2147483643,
    ]


def test_positions_stay_file_positions_when_row_groups_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "v", StringType()))
    rows = [{"id": i, "v": f"v{i}"} for i in range(100)]
    df = _write(tmp_path / "f.parquet", schema, rows, row_group_size=10)
    read_groups: list[list[int]] = []
    original = pq.ParquetFile.iter_batches

    def spy(self: pq.ParquetFile, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        read_groups.append(list(kwargs["row_groups"]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    projected = Schema(NestedField(2, "v", StringType()), POS_FIELD)
    row_filter = ((col("id") >= 35) & (col("id") < 47)) | (col("id") == 93)
    got = _read(df, projected, schema, row_filter=row_filter, batch_size=4)
    wanted = [*range(35, 47), 93]
    assert got == [{"v": f"v{i}", "_pos": i} for i in wanted]
    assert read_groups == [[3, 4], [9]]
    # include_positions adds _pos at the end
    got = _read(
        df,
        Schema(NestedField(2, "v", StringType())),
        schema,
        row_filter=col("id") > 97,
        include_positions=True,
    )
    assert got == [{"v": "v98", "_pos": 98}, {"v": "v99", "_pos": 99}]


def test_splits_read_each_row_group_once(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType()))
    df = _write(tmp_path / "f.parquet", schema, [{"id": i} for i in range(50)], row_group_size=10)
    md = pq.ParquetFile(df.file_path).metadata
    offsets = [md.row_group(i).column(0).data_page_offset for i in range(md.num_row_groups)]
    offsets = [
        min(o, md.row_group(i).column(0).dictionary_page_offset or o) for i, o in enumerate(offsets)
    ]
    cut = offsets[2]
    first = _read(df, Schema(POS_FIELD), schema, start=0, length=cut)
    second = _read(df, Schema(POS_FIELD), schema, start=cut, length=df.file_size_in_bytes - cut)
    assert [r["_pos"] for r in first] == list(range(20))
    assert [r["_pos"] for r in second] == list(range(20, 50))


@pytest.mark.parametrize("limit", [0, 1 << 30], ids=["buffered", "pre-buffered"])
def test_large_local_files_read_buffered_or_pre_buffered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    """A local file above the small-file size is read through buffered streams when the
    chosen column chunks are larger than the pre-buffer limit, else pre-buffered: the same
    rows either way, with splits, filters and positions."""
    import icepark.arrow.reader as reader

    monkeypatch.setattr(reader, "_SMALL_FILE_BYTES", 0)
    monkeypatch.setattr(reader, "_PRE_BUFFER_BYTES", limit)
    monkeypatch.setattr(reader, "_BUFFER_SIZE", 256)  # many refills of each column's stream
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "v", StringType()))
    rows = [{"id": i, "v": f"value {i:05d} " * (i % 7)} for i in range(3000)]
    df = _write(tmp_path / "f.parquet", schema, rows, row_group_size=700)
    opened: list[bool] = []
    original = pq.ParquetFile.__init__

    def spy(self: pq.ParquetFile, source: Any, **kwargs: Any) -> None:
        opened.append(kwargs.get("pre_buffer", True))
        original(self, source, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "__init__", spy)
    assert _read(df, schema, batch_size=500) == rows
    assert opened[-1] is (limit > 0)
    got = _read(df, schema, row_filter=col("id") >= 2990, include_positions=True)
    assert got == [{**rows[i], "_pos": i} for i in range(2990, 3000)]
    start = pq.ParquetFile(df.file_path).metadata.row_group(2).column(0)
    cut = start.dictionary_page_offset or start.data_page_offset  # row groups 0-1, then 2-4
    first = _read(df, Schema(NestedField(2, "v", StringType())), schema, start=0, length=cut)
    rest = _read(df, schema, start=cut, length=df.file_size_in_bytes - cut)
    assert [r["v"] for r in first] + [r["v"] for r in rest] == [r["v"] for r in rows]


# -- filters -----------------------------------------------------------------------------------

FILTER_SCHEMA = Schema(
    NestedField(1, "i", IntegerType()),
    NestedField(2, "d", DoubleType()),
    NestedField(3, "s", StringType()),
)
_VALUES_I = [1, None, 5, 7, 5, -3, None, 100]
_VALUES_D = [1.0, float("nan"), None, 2.5, 2.5, float("nan"), -1.0, 0.0]
_VALUES_S = ["ab", "b", None, "abc", "", "ba", "a", None]
FILTER_ROWS = [{"i": i, "d": d, "s": s} for i, d, s in zip(_VALUES_I, _VALUES_D, _VALUES_S)]


def _python(op: str, v: Any, lit: Any) -> bool:
    if op == "is_null":
        return v is None
    if op == "not_null":
        return v is not None
    nan = isinstance(v, float) and math.isnan(v)
    if op == "is_nan":
        return nan
    if op == "not_nan":
        return not nan
    if v is None:
        return False
    if nan:
        return op in ("not_eq", "not_in")
    return {
        "eq": lambda: v == lit,
        "not_eq": lambda: v != lit,
        "lt": lambda: v < lit,
        "lt_eq": lambda: v <= lit,
        "gt": lambda: v > lit,
        "gt_eq": lambda: v >= lit,
        "in": lambda: v in lit,
        "not_in": lambda: v not in lit,
        "starts_with": lambda: v.startswith(lit),
        "not_starts_with": lambda: not v.startswith(lit),
    }[op]()


def _predicate(name: str, op: str, lit: Any) -> Expression:
    c = col(name)
    return {
        "eq": lambda: c == lit,
        "not_eq": lambda: c != lit,
        "lt": lambda: c < lit,
        "lt_eq": lambda: c <= lit,
        "gt": lambda: c > lit,
        "gt_eq": lambda: c >= lit,
        "in": lambda: c.isin(lit),
        "not_in": lambda: c.not_in(lit),
        "is_null": c.is_null,
        "not_null": c.not_null,
        "is_nan": c.is_nan,
        "not_nan": c.not_nan,
        "starts_with": lambda: c.starts_with(lit),
        "not_starts_with": lambda: c.not_starts_with(lit),
    }[op]()


_NEGATED = {
    "eq": "not_eq",
    "not_eq": "eq",
    "lt": "gt_eq",
    "lt_eq": "gt",
    "gt": "lt_eq",
    "gt_eq": "lt",
    "in": "not_in",
    "not_in": "in",
    "is_null": "not_null",
    "not_null": "is_null",
    "is_nan": "not_nan",
    "not_nan": "is_nan",
    "starts_with": "not_starts_with",
    "not_starts_with": "starts_with",
}

_FILTER_CASES = [
    *[("i", op, 5) for op in ("eq", "not_eq", "lt", "lt_eq", "gt", "gt_eq")],
    ("i", "in", frozenset({5, 100})),
    ("i", "not_in", frozenset({5, 100})),
    ("i", "is_null", None),
    ("i", "not_null", None),
    *[("d", op, 2.5) for op in ("eq", "not_eq", "lt", "lt_eq", "gt", "gt_eq")],
    ("d", "in", frozenset({2.5, 0.0})),
    ("d", "not_in", frozenset({2.5, 0.0})),
    ("d", "is_nan", None),
    ("d", "not_nan", None),
    ("d", "is_null", None),
    *[("s", op, "ab") for op in ("eq", "not_eq", "lt", "gt_eq", "starts_with", "not_starts_with")],
    ("s", "starts_with", ""),
    ("s", "not_in", frozenset({"a", "b"})),
]


def _case_id(value: object) -> str:
    # sets print in hash order, which differs between pytest-xdist workers
    if isinstance(value, frozenset):
        return "{" + ",".join(sorted(map(repr, value))) + "}"
    return str(value)


@pytest.mark.parametrize(("name", "op", "lit"), _FILTER_CASES, ids=_case_id)
@pytest.mark.parametrize("row_group_size", [1, 2, 8])
def test_filter_matches_python_evaluation(
    tmp_path: Path, name: str, op: str, lit: Any, row_group_size: int
) -> None:
    df = _write(tmp_path / "f.parquet", FILTER_SCHEMA, FILTER_ROWS, row_group_size=row_group_size)
    projected = Schema(POS_FIELD)
    for negate in (False, True):
        expr = _predicate(name, op, lit)
        got = [
            r["_pos"]
            for r in _read(df, projected, FILTER_SCHEMA, row_filter=~expr if negate else expr)
        ]
        wanted_op = _NEGATED[op] if negate else op
        wanted = [i for i, r in enumerate(FILTER_ROWS) if _python(wanted_op, r[name], lit)]
        assert got == wanted, (op, negate)


def test_filter_on_columns_the_file_lacks(tmp_path: Path) -> None:
    df = _write(tmp_path / "f.parquet", BASE, BASE_ROWS, row_group_size=2)
    table = Schema(
        *BASE.fields,
        NestedField(5, "with_default", IntegerType(), initial_default=3),
        NestedField(6, "plain", IntegerType()),
    )
    projected = Schema(NestedField(1, "a", IntegerType()))
    assert len(_read(df, projected, table, row_filter=col("with_default") == 3)) == 5
    assert _read(df, projected, table, row_filter=col("with_default") > 3) == []
    assert _read(df, projected, table, row_filter=col("plain") == 1) == []
    assert _read(df, projected, table, row_filter=col("plain") != 1) == []
    assert len(_read(df, projected, table, row_filter=col("plain").is_null())) == 5
    rows = _read(df, projected, table, row_filter=col("plain").is_null() & (col("a") > 2))
    assert rows == [{"a": 3}, {"a": 4}]


def test_uuid_filter_and_projection(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "u", UUIDType()), NestedField(2, "n", IntegerType()))
    values = [uuid.UUID(int=n) for n in (1, 2**100, 2**127 + 1)]
    rows = [{"u": v.bytes, "n": i} for i, v in enumerate(values)]
    df = _write(tmp_path / "f.parquet", schema, rows, row_group_size=1)
    assert [r["u"] for r in _read(df, schema)] == values
    assert _read(df, schema, row_filter=col("u") == values[1]) == [{"u": values[1], "n": 1}]
    assert len(_read(df, schema, row_filter=col("u") > values[0])) == 2


# -- files -------------------------------------------------------------------------------------


def test_missing_and_unsupported_files(tmp_path: Path) -> None:
    df = DataFile(FileContent.DATA, str(tmp_path / "nope.parquet"), "PARQUET", (), 1, 1)
    with pytest.raises(NoSuchFileError, match=r"nope\.parquet"):
        _read(df, BASE)
    for fmt in ("AVRO", "ORC"):
        with pytest.raises(NoSuchFileError, match=r"nope\.parquet"):
            _read(df.replace(file_format=fmt), BASE)
    with pytest.raises(UnsupportedOperationError, match="Parquet, Avro and ORC"):
        _read(df.replace(file_format="PUFFIN"), BASE)


def test_file_io_without_a_pyarrow_filesystem(tmp_path: Path) -> None:
    class StreamOnlyIO(PyArrowFileIO):
        def filesystem(self, location: str) -> tuple[Any, str]:
            raise NotImplementedError

    df = _write(tmp_path / "f.parquet", BASE, BASE_ROWS, row_group_size=2)
    batches = read_data_file(
        StreamOnlyIO(),
        df,
        projected_schema=BASE,
        table_schema=BASE,
        partition_spec=None,
        row_filter=bind(BASE, col("a") >= 3),
        name_mapping=None,
    )
    assert [r for b in batches for r in b.to_pylist()] == BASE_ROWS[3:]


def test_a_refused_read_is_a_storage_error_not_a_corrupt_file(tmp_path: Path) -> None:
    """The system refusing a read (no permission, an I/O error) says so, naming the file and
    keeping errno; a corrupt file is a ValidationError."""
    import errno

    from icepark.errors import StorageError, ValidationError

    class RefusingIO(PyArrowFileIO):
        def filesystem(self, location: str) -> tuple[Any, str]:
            class Refusing:
                def open_input_file(self, path: str) -> Any:
                    raise PermissionError(errno.EACCES, "Permission denied", path)

            return Refusing(), location

    df = _write(tmp_path / "f.parquet", BASE, BASE_ROWS)
    args = {"projected_schema": BASE, "table_schema": BASE, "partition_spec": None}
    with pytest.raises(StorageError, match=r"errno 13.*f\.parquet") as raised:
        list(read_data_file(RefusingIO(), df, row_filter=None, name_mapping=None, **args))
    assert raised.value.errno == errno.EACCES
    (tmp_path / "g.parquet").write_bytes(b"PAR1 not a parquet file PAR1")
    broken = df.replace(file_path=str(tmp_path / "g.parquet"))
    with pytest.raises(ValidationError, match=r"g\.parquet"):
        list(read_data_file(IO, broken, row_filter=None, name_mapping=None, **args))


def test_batches_are_bounded_and_streamed(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType()))
    df = _write(
        tmp_path / "f.parquet", schema, [{"id": i} for i in range(1000)], row_group_size=300
    )
    batches = read_data_file(
        IO,
        df,
        projected_schema=schema,
        table_schema=schema,
        partition_spec=None,
        row_filter=None,
        name_mapping=None,
        batch_size=128,
    )
    sizes = [b.num_rows for b in batches]
    assert sum(sizes) == 1000 and max(sizes) <= 128


# -- conformance files -------------------------------------------------------------------------

ENCODINGS = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "conformance"
    / "apache-iceberg"
    / "parquet"
    / "src"
    / "testFixtures"
    / "resources"
    / "encodings"
)
DATA_MAPPING = name_mapping_from_json('[{"field-id": 1, "names": ["data"]}]')


def _conformance(name: str, field_type: Any) -> list[Any]:
    path = ENCODINGS / name
    if not path.is_file():
        pytest.skip(f"conformance file {name} is absent")
    df = DataFile(FileContent.DATA, str(path), "PARQUET", (), 1000, path.stat().st_size)
    schema = Schema(NestedField(1, "data", field_type))
    return [r["data"] for r in _read(df, schema, name_mapping=DATA_MAPPING)]


@pytest.mark.parametrize("encoding", ["PLAIN", "DELTA_BINARY_PACKED"])
def test_conformance_int32(encoding: str) -> None:
    values = _conformance(f"{encoding}/int32.parquet", IntegerType())
    assert len(values) == 1000
    assert sum(values) == 5018431
    assert values[:5] == [7270, 860, 5390, 5191, 5734]
    assert values[-1] == 7790


def test_conformance_string_with_nulls() -> None:
    values = _conformance("PLAIN/string_with_nulls.parquet", StringType())
    assert len(values) == 1000
    assert values.count(None) == 200
    assert values[:5] == [None, "sssssss", "qqqqqqqqq", "ppppppp", "sssss"]
    assert values[-1] == "zzzzzzz"


def test_empty_projection_keeps_row_counts(tmp_path: Path) -> None:
    df = _write(tmp_path / "f.parquet", BASE, BASE_ROWS, row_group_size=2)
    batches = list(
        read_data_file(
            IO,
            df,
            projected_schema=Schema(),
            table_schema=BASE,
            partition_spec=None,
            row_filter=bind(BASE, col("a") > 0),
            name_mapping=None,
        )
    )
    assert sum(b.num_rows for b in batches) == 4
    assert all(b.num_columns == 0 for b in batches)


def test_filter_on_nested_field_added_later(tmp_path: Path) -> None:
    df = _write(tmp_path / "f.parquet", NESTED, NESTED_ROWS)
    point = StructType(
        NestedField(3, "x", FloatType()),
        NestedField(4, "y", FloatType()),
        NestedField(13, "z", IntegerType(), initial_default=5),
    )
    table = Schema(NESTED.fields[0], NestedField(2, "point", point))
    projected = Schema(NESTED.fields[0])
    assert _read(df, projected, table, row_filter=col("point.z") == 5) == [{"id": 0}, {"id": 2}]
    assert _read(df, projected, table, row_filter=col("point.z").is_null()) == [{"id": 1}]


def test_files_of_the_icepark_writer_read_back(tmp_path: Path) -> None:
    writer = pytest.importorskip("icepark.arrow.writer")
    from icepark.spec.sorting import UNSORTED_ORDER

    spec = build_partition_spec(PART_SCHEMA, ["cat"])
    rows = [{"id": i, "cat": "ab"[i % 2], "day": None} for i in range(20)]
    files = writer.write_data_files(
        IO,
        table_location=str(tmp_path / "t"),
        schema=PART_SCHEMA,
        spec=spec,
        sort_order=UNSORTED_ORDER,
        properties={},
        data=pa.Table.from_pylist(rows, schema=schema_to_arrow(PART_SCHEMA)),
    )
    projected = Schema(NestedField(1, "id", LongType()), NestedField(2, "cat", StringType()))
    got = [
        row
        for df in files
        for row in _read(df, projected, PART_SCHEMA, spec=spec, row_filter=col("id") >= 10)
    ]
    wanted = [{"id": r["id"], "cat": r["cat"]} for r in rows if r["id"] >= 10]
    assert sorted(got, key=lambda r: r["id"]) == wanted


def test_files_of_one_schema_keep_their_own_constants(tmp_path: Path) -> None:
    """The plan of one file schema is reused (icepark.arrow.file_layout), but not the values
    taken from each file's partition: at the top level and inside a struct."""
    table_schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "cat", StringType()),
        NestedField(
            3, "s", StructType(NestedField(4, "a", LongType()), NestedField(5, "b", StringType()))
        ),
    )
    spec = build_partition_spec(table_schema, ["cat", "s.b"], spec_id=1)
    file_schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(3, "s", StructType(NestedField(4, "a", LongType()))),
    )
    files = [
        _write(
            tmp_path / f"f{i}.parquet",
            file_schema,
            [{"id": i, "s": {"a": 10 * i}}],
            partition=(f"cat{i}", f"b{i}"),
            spec_id=1,
        )
        for i in range(4)
    ]
    for i, df in enumerate(files):
        assert _read(df, table_schema, spec=spec) == [
            {"id": i, "cat": f"cat{i}", "s": {"a": 10 * i, "b": f"b{i}"}}
        ]


def test_same_names_other_field_ids_are_another_layout(tmp_path: Path) -> None:
    projected = Schema(NestedField(1, "x", LongType()), NestedField(2, "y", LongType()))
    straight = _write(tmp_path / "a.parquet", projected, [{"x": 1, "y": 2}])
    swapped_schema = Schema(NestedField(2, "x", LongType()), NestedField(1, "y", LongType()))
    swapped = _write(tmp_path / "b.parquet", swapped_schema, [{"x": 1, "y": 2}])
    assert _read(straight, projected) == [{"x": 1, "y": 2}]
    assert _read(swapped, projected) == [{"x": 2, "y": 1}]  # matched by id, not by name
    assert _read(straight, projected) == [{"x": 1, "y": 2}]
