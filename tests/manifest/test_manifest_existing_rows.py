"""``ManifestWriter.existing_rows``: entries of manifests decoded into arrays carried over
with their data file records copied as stored, judged against the object path.

For random manifests of format versions 1 to 3 (data and delete files, codecs, partition
values of many types, metrics, inherited and explicit snapshot ids, sequence numbers and first
row ids, see ``manifest_cases``), entries picked from one to three of them in any order are
written twice: by ``existing_rows`` (records copied) and entry by entry through
``existing`` (each entry an object, encoded by fastavro). The two manifests hold the same
bytes once decompressed, the same counts, partition summaries and lowest sequence number, and
read back as the picked entries with status EXISTING. Manifests whose ``data_file`` schema
is not the writer's (another format version, a partition field of another type) are carried
over as objects, in the same order among the copied ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from manifest_cases import ENTRIES, FILEIO, SCHEMA, SPEC, data_file, write

from icepark.avro.blocks import read_avro_blocks
from icepark.avro.compiled import kernel_available
from icepark.errors import ValidationError
from icepark.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    read_manifest,
    write_manifest,
)
from icepark.manifest.entry_columns import EntryColumns, read_entry_columns
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import parse_transform
from icepark.spec.types import IntegerType, LongType, NestedField, StringType

pytestmark = pytest.mark.skipif(not kernel_available(), reason="numba is not importable")

SNAPSHOT = 777


def _writer(
    path: Path,
    version: int,
    content: ManifestContent,
    codec: str = "deflate",
    spec: PartitionSpec = SPEC,
    schema: Schema = SCHEMA,
) -> ManifestWriter:
    return write_manifest(
        FILEIO.new_output(str(path)),
        spec,
        schema,
        format_version=version,
        snapshot_id=SNAPSHOT,
        content=content,
        codec=codec,
        overwrite=True,
    )


def _records(path: Path) -> bytes:
    """The manifest's records, decompressed, one after another."""
    raw, _ = read_avro_blocks(str(path), path.read_bytes()).records()
    return bytes(raw)


def _written(writer: ManifestWriter, path: Path) -> tuple[bytes, ManifestFile]:
    m = writer.to_manifest_file()
    return _records(path), m.replace(manifest_path="", manifest_length=0)


def _both(
    tmp_path: Path,
    sources: list[EntryColumns],
    picks: list[tuple[int, int]],
    version: int,
    content: ManifestContent,
    codec: str = "deflate",
    copying: list[bool] | None = None,
    **kw: Any,
) -> tuple[tuple[bytes, ManifestFile], tuple[bytes, ManifestFile]]:
    """``picks`` written by existing_rows and entry by entry: (records, manifest) each;
    whether each source's records are copied goes to ``copying``."""
    copying = [] if copying is None else copying
    which = np.array([w for w, _ in picks], dtype=np.int64)
    rows = np.array([r for _, r in picks], dtype=np.int64)
    copied, objects = tmp_path / "copied.avro", tmp_path / "objects.avro"
    with _writer(copied, version, content, codec, **kw) as writer:
        copying.extend(writer.can_copy(c) for c in sources)
        writer.existing_rows(sources, which, rows)
    a = _written(writer, copied)
    with _writer(objects, version, content, codec, **kw) as writer:
        for w, r in picks:
            writer.existing(sources[w].entry(r))
    return a, _written(writer, objects)


def _columns(m: Any) -> EntryColumns:
    return read_entry_columns(m.location, m.data, m.manifest, metrics_of=frozenset())


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    version=st.sampled_from([1, 2, 3]),
    deletes=st.booleans(),
    codec=st.sampled_from(["deflate", "null", "zstd"]),
    data=st.data(),
)
def test_copied_records_are_what_the_object_path_writes(
    tmp_path: Path, version: int, deletes: bool, codec: str, data: st.DataObject
) -> None:
    deletes = deletes and version > 1
    sources = []
    for s in range(data.draw(st.integers(1, 3))):
        entries = [
            (*data.draw(ENTRIES), data.draw(data_file(version, deletes, i)))
            for i in range(data.draw(st.integers(1, 10)))
        ]
        sources.append(_columns(write(tmp_path, f"s{s}.avro", version, deletes, codec, entries)))
    every = [(w, r) for w, c in enumerate(sources) for r in range(c.count)]
    picks = data.draw(st.lists(st.sampled_from(every), max_size=25))
    content = ManifestContent.DELETES if deletes else ManifestContent.DATA
    copying: list[bool] = []
    copied, objects = _both(tmp_path, sources, picks, version, content, codec, copying)
    assert copying == [True] * len(sources)  # the same schema: every record copied
    assert copied == objects
    expected = [sources[w].entry(r).replace(status=ManifestEntryStatus.EXISTING) for w, r in picks]
    got = read_manifest(FILEIO.new_input(str(tmp_path / "copied.avro")))
    if version == 3:  # an inherited first row id is written into the copied record
        inherited = [e.data_file.first_row_id for e in expected]
        assert [e.data_file.first_row_id for e in got] == inherited
    assert got == expected


def _file(path: str, partition: tuple[Any, ...], **kw: Any) -> DataFile:
    return DataFile(
        content=kw.pop("content", FileContent.DATA),
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=kw.pop("record_count", 10),
        file_size_in_bytes=100,
        value_counts={1: 10},
        lower_bounds={1: b"\x01\x00\x00\x00"},
        **kw,
    )


def _source(
    tmp_path: Path,
    name: str,
    version: int,
    spec: PartitionSpec,
    schema: Schema,
    files: list[DataFile],
    **manifest: Any,
) -> EntryColumns:
    path = tmp_path / name
    with write_manifest(
        FILEIO.new_output(str(path)), spec, schema, format_version=version, snapshot_id=5
    ) as writer:
        for f in files:
            writer.add(f)
    m = writer.to_manifest_file().replace(**manifest)
    return read_entry_columns(str(path), path.read_bytes(), m, metrics_of=frozenset())


INT_SCHEMA = Schema(NestedField(1, "id", IntegerType(), True), NestedField(2, "s", StringType()))
LONG_SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
BY_ID = PartitionSpec(0, (PartitionField(1, 1000, parse_transform("identity"), "id"),))


def test_other_schemas_are_written_as_objects_in_order(tmp_path: Path) -> None:
    """A v1 manifest and one written while the partition column was an int (before its
    promotion to long) do not share the writer's data_file schema: their entries are
    written as objects, between the copied ones, in the order given."""
    files = [_file(f"f{i}", (i,)) for i in range(4)]
    sources = [
        _source(tmp_path, "v2.avro", 2, BY_ID, LONG_SCHEMA, files[:2], sequence_number=3),
        _source(tmp_path, "v1.avro", 1, BY_ID, LONG_SCHEMA, files[2:3]),
        _source(tmp_path, "int.avro", 2, BY_ID, INT_SCHEMA, files[3:], sequence_number=4),
    ]
    writer = _writer(tmp_path / "probe.avro", 2, ManifestContent.DATA, spec=BY_ID)
    assert [writer.can_copy(c) for c in sources] == [True, False, False]
    writer.abort()
    picks = [(0, 1), (1, 0), (0, 0), (2, 0), (0, 1)]
    copied, objects = _both(
        tmp_path, sources, picks, 2, ManifestContent.DATA, spec=BY_ID, schema=LONG_SCHEMA
    )
    assert copied == objects
    entries = read_manifest(FILEIO.new_input(str(tmp_path / "copied.avro")))
    assert [(e.data_file.file_path, e.data_file.partition) for e in entries] == [
        ("f1", (1,)), ("f2", (2,)), ("f0", (0,)), ("f3", (3,)), ("f1", (1,))
    ]  # fmt: skip
    assert [e.sequence_number for e in entries] == [3, 0, 3, 4, 3]  # v1: inherits 0


def test_inherited_first_row_ids_are_written_in(tmp_path: Path) -> None:
    """v3: added data files whose first row id the manifest list assigns get it written
    into their copied records; a file with an id of its own keeps it."""
    files = [
        _file("a", (1,), record_count=10),
        _file("b", (1,), record_count=7, first_row_id=500),
        _file("c", (2,), record_count=5),
    ]
    source = _source(
        tmp_path, "s.avro", 3, BY_ID, LONG_SCHEMA, files, sequence_number=2, first_row_id=40
    )
    copying: list[bool] = []
    copied, objects = _both(
        tmp_path, [source], [(0, 2), (0, 0), (0, 1)], 3, ManifestContent.DATA,
        copying=copying, spec=BY_ID, schema=LONG_SCHEMA,
    )  # fmt: skip
    assert copying == [True]
    assert copied == objects
    entries = read_manifest(FILEIO.new_input(str(tmp_path / "copied.avro")))
    # the nulls take the manifest's first row id plus the rows of the nulls before them
    assert [e.data_file.first_row_id for e in entries] == [50, 40, 500]
    assert copied[1].existing_files_count == 3 and copied[1].existing_rows_count == 22
    assert copied[1].min_sequence_number == 2


def test_wrong_content_names_the_file_and_writes_nothing(tmp_path: Path) -> None:
    source = _source(tmp_path, "s.avro", 2, BY_ID, LONG_SCHEMA, [_file("data-1", (1,))])
    target = tmp_path / "deletes.avro"
    with pytest.raises(ValidationError, match="Cannot add DATA file to a delete manifest: data-1"):
        with _writer(target, 2, ManifestContent.DELETES, spec=BY_ID, schema=LONG_SCHEMA) as w:
            w.existing_rows([source], np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
    assert not target.exists()


def test_null_sequence_number_is_refused(tmp_path: Path) -> None:
    """An added entry whose sequence number nothing assigns (no manifest list entry) cannot
    be carried over as EXISTING, copied or not."""
    path = tmp_path / "s.avro"
    with write_manifest(
        FILEIO.new_output(str(path)), BY_ID, LONG_SCHEMA, format_version=2, snapshot_id=None
    ) as writer:
        writer.write_entry(
            ManifestEntry(ManifestEntryStatus.ADDED, None, None, None, _file("x", (1,)))
        )
    source = read_entry_columns(str(path), path.read_bytes(), metrics_of=frozenset())
    target = tmp_path / "t.avro"
    with pytest.raises(ValidationError, match="null sequence number: x"):
        with _writer(target, 2, ManifestContent.DATA, spec=BY_ID, schema=LONG_SCHEMA) as w:
            w.existing_rows([source], np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
    assert not target.exists()
