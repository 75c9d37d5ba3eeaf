"""Manifest entries decoded by the compiled Avro path equal what the object reader gives.

For random data and delete files in manifests of format versions 1 to 3 (random statuses,
codecs, partition values of many types, metrics, inherited and explicit sequence numbers and
first row ids), each entry of :func:`read_entry_columns` (with its lazily decoded data file)
equals the entry :func:`~icepark.manifest.read_manifest` gives, field by field, both ways,
hashed and pickled; the arrays a planner reads (statuses, counts, bounds, partitions) agree
with the same entries; mutated files give a typed error naming the file, never a crash or a
different answer.
"""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from manifest_cases import ENTRIES, FILEIO, SPEC, data_file, write

from icepark.avro.blocks import UnsupportedAvroError
from icepark.avro.compiled import kernel_available
from icepark.errors import InvalidAvroFileError
from icepark.manifest import DataFile, ManifestEntryStatus, read_manifest
from icepark.manifest.entry_columns import LazyDataFile, read_entry_columns

pytestmark = pytest.mark.skipif(not kernel_available(), reason="numba is not importable")


def _manifest(tmp_path: Path, data: st.DataObject, version: int, deletes: bool, codec: str):
    entries = [
        (*data.draw(ENTRIES), data.draw(data_file(version, deletes, i)))
        for i in range(data.draw(st.integers(0, 12)))
    ]
    return write(tmp_path, "m.avro", version, deletes, codec, entries)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    version=st.sampled_from([1, 2, 3]),
    deletes=st.booleans(),
    codec=st.sampled_from(["deflate", "null", "zstd"]),
    data=st.data(),
)
def test_same_entries_as_the_object_reader(
    tmp_path: Path, version: int, deletes: bool, codec: str, data: st.DataObject
) -> None:
    m = _manifest(tmp_path, data, version, deletes and version > 1, codec)
    expected = read_manifest(FILEIO.new_input(m.location), m.manifest, spec=SPEC)
    # all of every entry, or what planning reads (with some columns' metrics or none)
    metrics_of = data.draw(st.none() | st.frozensets(st.sampled_from(_ids(expected))))
    columns = read_entry_columns(m.location, m.data, m.manifest, SPEC, metrics_of=metrics_of)
    assert columns.complete == (metrics_of is None)
    assert columns.count == len(expected)
    for i, e in enumerate(expected):
        got = columns.entry(i)
        assert isinstance(got.data_file, LazyDataFile)
        assert got == e and e == got
        assert got.data_file == e.data_file and e.data_file == got.data_file
        assert hash(got.data_file) == hash(e.data_file)
        assert columns.data_file(i) == e.data_file
        plain = pickle.loads(pickle.dumps(got.data_file))
        assert type(plain) is DataFile and plain == e.data_file
        assert got.data_file.replace(record_count=7) == e.data_file.replace(record_count=7)
    assert columns.live.tolist() == [e.status != ManifestEntryStatus.DELETED for e in expected]
    assert columns.record_count.tolist() == [e.data_file.record_count for e in expected]
    distinct, which = columns.partitions()
    assert [distinct[k] for k in which.tolist()] == [e.data_file.partition for e in expected]
    assert len(set(distinct)) == len(distinct)
    # one column's metrics, as a planner reads them
    # (a planning decode has the metrics of the columns it was asked for only)
    fid = data.draw(
        st.sampled_from(sorted(_ids(expected) if metrics_of is None else metrics_of or {1}))
    )
    if metrics_of is not None and fid not in metrics_of:
        return
    for map_id, name in (
        (109, "value_counts"),
        (110, "null_value_counts"),
        (137, "nan_value_counts"),
    ):
        want = [(getattr(e.data_file, name) or {}).get(fid) for e in expected]
        values, has = columns.metric_counts(map_id, fid)
        assert [v if h else None for v, h in zip(values.tolist(), has.tolist())] == want
    for map_id, name in ((125, "lower_bounds"), (128, "upper_bounds")):
        at, lengths = columns.metric_bounds(map_id, fid)
        got_bounds = [
            None if n < 0 else columns.raw[a : a + n] for a, n in zip(at.tolist(), lengths.tolist())
        ]
        assert got_bounds == [(getattr(e.data_file, name) or {}).get(fid) for e in expected]


def _ids(entries: list) -> list[int]:
    ids = {1}
    for e in entries:
        for name in ("value_counts", "null_value_counts", "lower_bounds", "upper_bounds"):
            ids.update(getattr(e.data_file, name) or {})
    return sorted(ids)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_mutated_manifests_give_typed_errors_or_the_same_entries(
    tmp_path: Path, data: st.DataObject, seed: int
) -> None:
    m = _manifest(tmp_path, data, 2, False, "null")
    rng = random.Random(seed)
    raw = bytearray(m.data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(raw))
        choice = rng.random()
        if choice < 0.5:
            raw[at] = rng.randrange(256)
        elif choice < 0.75:
            del raw[at : at + rng.randint(1, 8)]
        else:
            raw[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    mutated = tmp_path / "mutated.avro"
    mutated.write_bytes(bytes(raw))
    # whole entries, or what a plan reads: with no metrics the maps are stepped over unread
    metrics_of = data.draw(st.sampled_from([None, frozenset(), frozenset({1})]))
    try:
        expected = read_manifest(FILEIO.new_input(str(mutated)), m.manifest, spec=SPEC)
    except Exception:  # the object reader may fail untyped on some; the compiled path may not
        expected = None
    try:
        columns = read_entry_columns(
            str(mutated), bytes(raw), m.manifest, SPEC, metrics_of=metrics_of
        )
        got = [columns.entry(i) for i in range(columns.count)]
        got = [e.replace(data_file=e.data_file.materialize()) for e in got]
    except InvalidAvroFileError as exc:
        assert str(mutated) in str(exc)
        return
    except UnsupportedAvroError:
        return
    if expected is not None:
        assert got == expected


def test_a_truncated_block_names_the_file(tmp_path: Path) -> None:
    files = [(1, False, _plain(i)) for i in range(50)]
    m = write(tmp_path, "m.avro", 2, False, "null", files)
    cut = m.data[: len(m.data) - 40] + m.data[-16:]
    with pytest.raises(InvalidAvroFileError, match=r"m\.avro"):
        read_entry_columns(m.location, cut, m.manifest, SPEC)


def test_the_item_table_grows_past_its_first_size(tmp_path: Path) -> None:
    # maps of many items in a small file: more items than a quarter of the bytes
    many = {k: 1 for k in range(1, 400)}
    files = [
        (1, False, _plain(i).replace(value_counts=many, null_value_counts=many)) for i in range(5)
    ]
    m = write(tmp_path, "m.avro", 2, False, "deflate", files)
    columns = read_entry_columns(m.location, m.data, m.manifest, SPEC)
    assert [columns.entry(i).data_file.value_counts for i in range(5)] == [many] * 5


def _plain(i: int) -> DataFile:
    from icepark.manifest import FileContent, FileFormat

    return DataFile(
        FileContent.DATA,
        f"/d/{i}.parquet",
        FileFormat.PARQUET,
        ("a", 19000 + i, None, None, i % 4),
        10 + i,
        100,
        value_counts={1: 10},
        lower_bounds={1: b"\x01" * 8},
        spec_id=SPEC.spec_id,
    )
