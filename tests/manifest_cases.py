"""Random manifests for the tests of the manifest readers: data and delete files of format
versions 1 to 3 with partition values of many types, metrics, inherited and explicit snapshot
ids, sequence numbers and first row ids, written by icepark's manifest writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from icepark.io import PyArrowFileIO
from icepark.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
)
from icepark.manifest.columnar import ManifestBytes
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import parse_transform
from icepark.spec.types import (
    DateType,
    DecimalType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
    UUIDType,
)

FILEIO = PyArrowFileIO()
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "ts", TimestamptzType()),
    NestedField(4, "price", DecimalType(9, 2)),
    NestedField(5, "u", UUIDType()),
)
SPEC = PartitionSpec(
    3,
    (
        PartitionField(2, 1000, parse_transform("identity"), "name"),
        PartitionField(3, 1001, parse_transform("day"), "ts_day"),
        PartitionField(4, 1002, parse_transform("identity"), "price"),
        PartitionField(5, 1003, parse_transform("identity"), "u"),
        PartitionField(1, 1004, parse_transform("bucket[4]"), "id_bucket"),
    ),
)
# the table's partition type: one field of another spec, one of SPEC missing
PTYPE = StructType(
    NestedField(1000, "name", StringType()),
    NestedField(1001, "ts_day", DateType()),
    NestedField(1002, "price", DecimalType(9, 2)),
    NestedField(1003, "u", UUIDType()),
    NestedField(1005, "other", LongType()),
)

PARTITIONS = st.tuples(
    st.none() | st.text(max_size=5),
    st.none() | st.integers(-1000, 30000),
    st.none() | st.decimals(-9999999, 9999999, places=2, allow_nan=False, allow_infinity=False),
    st.none() | st.uuids(),
    st.none() | st.integers(0, 3),
)
COUNTS = st.none() | st.dictionaries(st.integers(1, 200), st.integers(0, 2**40), max_size=6)
BOUNDS = st.none() | st.dictionaries(st.integers(1, 200), st.binary(max_size=70), max_size=6)


@st.composite
def data_file(draw: st.DrawFn, version: int, deletes: bool, n: int) -> DataFile:
    content = (
        draw(st.sampled_from([FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES]))
        if deletes
        else FileContent.DATA
    )
    return DataFile(
        content=content,
        file_path=f"s3://b/data/{n}-{'p' * draw(st.integers(0, 150))}.parquet",
        file_format=FileFormat.PARQUET,
        partition=draw(PARTITIONS),
        record_count=draw(st.integers(0, 10**6)),
        file_size_in_bytes=draw(st.integers(1, 10**10)),
        column_sizes=draw(COUNTS),
        value_counts=draw(COUNTS),
        null_value_counts=draw(COUNTS),
        nan_value_counts=draw(COUNTS),
        lower_bounds=draw(BOUNDS),
        upper_bounds=draw(BOUNDS),
        key_metadata=draw(st.none() | st.binary(max_size=8)),
        split_offsets=draw(st.none() | st.lists(st.integers(0, 2**40), max_size=3)),
        equality_ids=(
            draw(st.lists(st.integers(1, 5), min_size=1, max_size=2))
            if content == FileContent.EQUALITY_DELETES
            else None
        ),
        sort_order_id=draw(st.none() | st.integers(0, 3)),
        first_row_id=draw(st.none() | st.integers(0, 100))
        if version >= 3 and not deletes
        else None,
        referenced_data_file=(
            draw(st.none() | st.just("s3://b/data/x.parquet"))
            if content == FileContent.POSITION_DELETES and version >= 2
            else None
        ),
        spec_id=SPEC.spec_id,
    )


def write(
    tmp_path: Path, name: str, version: int, deletes: bool, codec: str, entries: list[Any]
) -> ManifestBytes:
    location = str(tmp_path / name)
    content = ManifestContent.DELETES if deletes else ManifestContent.DATA
    with write_manifest(
        FILEIO.new_output(location),
        SPEC,
        SCHEMA,
        format_version=version,
        snapshot_id=None if version > 1 else 42,
        content=content,
        codec=codec,
        overwrite=True,
    ) as writer:
        for status, explicit, f in entries:
            # added entries may inherit their snapshot and sequence numbers; others may not
            explicit = explicit or status != ManifestEntryStatus.ADDED
            seq = 3 if explicit and version > 1 else None
            snapshot = 17 if explicit else None
            if version == 1:
                snapshot = 42
            writer.write_entry(ManifestEntry(ManifestEntryStatus(status), snapshot, seq, seq, f))
    manifest: ManifestFile = writer.to_manifest_file().replace(
        added_snapshot_id=99,
        sequence_number=5 if version > 1 else None,
        first_row_id=1000 if version >= 3 and not deletes else None,
    )
    return ManifestBytes(location, Path(location).read_bytes(), manifest)


ENTRIES = st.tuples(st.sampled_from([0, 1, 1, 2]), st.booleans())
"""(status, whether an added entry writes its snapshot and sequence numbers) of an entry."""
