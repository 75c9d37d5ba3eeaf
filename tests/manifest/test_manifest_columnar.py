"""Manifest entries read column-wise equal the entries the object reader gives.

For random data and delete files in manifests of format versions 1 to 3 (random statuses,
codecs, partition values of many types, metrics, inherited and explicit sequence numbers and
first row ids), every field of :func:`read_entries_columnar`'s rows equals the same field of
:func:`~icepark.manifest.read_manifest`'s entries, with the inheritance applied; several
manifests read together come back in their order; the fastavro fallback gives the same rows.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from manifest_cases import ENTRIES, FILEIO, PTYPE, SPEC
from manifest_cases import data_file as _file
from manifest_cases import write as _write

import icepark.manifest.columnar as columnar
from icepark.arrow.schema import type_to_arrow
from icepark.avro.blocks import UnsupportedAvroError
from icepark.avro.compiled import kernel_available
from icepark.manifest import DataFile, FileContent, FileFormat, read_manifest
from icepark.manifest.columnar import ManifestBytes, read_entries_columnar
from icepark.table.inspect.arrow_values import internal_to_arrow
from icepark.table.inspect.schemas import data_file_struct

STRUCT = data_file_struct(PTYPE)
ARROW = type_to_arrow(STRUCT, include_field_ids=False)


def _expected(m: ManifestBytes) -> list[dict[str, Any]]:
    rows = []
    for e in read_manifest(FILEIO.new_input(m.location), m.manifest, spec=SPEC):
        f = e.data_file
        partition = dict(zip([pf.field_id for pf in SPEC.fields], f.partition, strict=True))
        values = {}
        for pf, arrow_field in zip(PTYPE.fields, ARROW.field("partition").type):
            value = partition.get(pf.field_id)
            values[pf.name] = internal_to_arrow([value], pf.field_type, arrow_field.type)[0].as_py()
        rows.append(
            {
                "status": int(e.status),
                "snapshot_id": e.snapshot_id,
                "sequence_number": e.sequence_number,
                "file_sequence_number": e.file_sequence_number,
                "data_file": {
                    "content": int(f.content),
                    "file_path": f.file_path,
                    "file_format": str(f.file_format),
                    "spec_id": f.spec_id,
                    "partition": values,
                    "record_count": f.record_count,
                    "file_size_in_bytes": f.file_size_in_bytes,
                    "column_sizes": f.column_sizes,
                    "value_counts": f.value_counts,
                    "null_value_counts": f.null_value_counts,
                    "nan_value_counts": f.nan_value_counts,
                    "lower_bounds": f.lower_bounds,
                    "upper_bounds": f.upper_bounds,
                    "key_metadata": f.key_metadata,
                    "split_offsets": None if f.split_offsets is None else list(f.split_offsets),
                    "equality_ids": None if f.equality_ids is None else list(f.equality_ids),
                    "sort_order_id": f.sort_order_id,
                    "first_row_id": f.first_row_id,
                    "referenced_data_file": f.referenced_data_file,
                    "content_offset": f.content_offset,
                    "content_size_in_bytes": f.content_size_in_bytes,
                },
            }
        )
    return rows


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    out = table.to_pylist()
    for row in out:
        f = row["data_file"]
        for name in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts"):
            f[name] = None if f[name] is None else dict(f[name])
        for name in ("lower_bounds", "upper_bounds"):
            f[name] = None if f[name] is None else dict(f[name])
    return out


def _read(manifests: list[ManifestBytes], live_only: bool = False) -> pa.Table:
    return read_entries_columnar(
        manifests, ARROW, STRUCT, {SPEC.spec_id: SPEC}, live_only=live_only
    )


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    version=st.sampled_from([1, 2, 3]),
    deletes=st.booleans(),
    codec=st.sampled_from(["deflate", "null"]),
    data=st.data(),
)
def test_same_entries_as_the_object_reader(
    tmp_path: Path, version: int, deletes: bool, codec: str, data: st.DataObject
) -> None:
    deletes = deletes and version > 1
    manifests = []
    for k in range(data.draw(st.integers(1, 3))):
        entries = [
            (*data.draw(ENTRIES), data.draw(_file(version, deletes, i)))
            for i in range(data.draw(st.integers(0, 8)))
        ]
        manifests.append(_write(tmp_path, f"m{k}.avro", version, deletes, codec, entries))
    expected = [row for m in manifests for row in _expected(m)]
    live = [row for row in expected if row["status"] != 2]
    # the numpy decoder (small reads), then the compiled one (reads of huge tables)
    for smallest in (columnar.COMPILED_MIN_RECORDS, 0):
        if smallest == 0 and not kernel_available():
            continue
        saved, columnar.COMPILED_MIN_RECORDS = columnar.COMPILED_MIN_RECORDS, smallest
        fallback = columnar._read_one_fastavro
        if smallest == 0:  # the compiled decoder must not have given up
            columnar._read_one_fastavro = _no_fallback  # type: ignore[assignment]
        try:
            assert _rows(_read(manifests)) == expected
            assert _rows(_read(manifests, live_only=True)) == live
        finally:
            columnar.COMPILED_MIN_RECORDS = saved
            columnar._read_one_fastavro = fallback


def _no_fallback(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the compiled decoder fell back to fastavro")


def test_fallback_reads_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = [
        (1, False, DataFile(FileContent.DATA, f"/d/{i}.parquet", FileFormat.PARQUET,
                            ("a", 19000 + i, Decimal("1.25"), uuid.UUID(int=i), i % 4),
                            10 + i, 100, lower_bounds={1: b"\x01"}, first_row_id=None,
                            spec_id=SPEC.spec_id))
        for i in range(5)
    ]  # fmt: skip
    manifests = [_write(tmp_path, "m.avro", 3, False, "deflate", files)]
    fast = _rows(_read(manifests))

    def refuse(*_: Any, **__: Any) -> Any:
        raise UnsupportedAvroError("refused for the test")

    monkeypatch.setattr(columnar.ColumnarDecoder, "decode", refuse)
    assert _rows(_read(manifests)) == fast == [r for m in manifests for r in _expected(m)]
    assert [r["data_file"]["first_row_id"] for r in fast] == [1000, 1010, 1021, 1033, 1046]
    assert fast[0]["data_file"]["partition"]["ts_day"] == dt.date(2022, 1, 8)
    assert fast[0]["data_file"]["partition"]["other"] is None


@pytest.mark.parametrize("compiled", [False, True])
def test_metric_maps_with_the_same_keys_share_them(tmp_path: Path, compiled: bool) -> None:
    """Maps whose offsets and keys are equal share one copy (the metric maps of a table's
    files mostly have the same columns); a map with other keys keeps its own; every value
    stays as the object reader reads it, deleted entries dropped or not."""
    if compiled and not kernel_available():
        pytest.skip("no compiled decoder here")
    keys = {1: 10, 2: 20, 3: 30}
    files = [
        (status, False, DataFile(FileContent.DATA, f"/d/{i}.parquet", FileFormat.PARQUET,
                                 ("a", 19000, None, None, 1), 10 + i, 100,
                                 column_sizes={k: v + i for k, v in keys.items()},
                                 value_counts={k: v * i for k, v in keys.items()},
                                 null_value_counts=dict.fromkeys(keys, i),
                                 nan_value_counts={2: i},
                                 lower_bounds={k: bytes([i % 256, k]) for k in keys},
                                 upper_bounds={k: bytes([k] * (i % 7)) for k in keys},
                                 spec_id=SPEC.spec_id))
        for i, status in zip(range(300), [1, 1, 2] * 100, strict=True)
    ]  # fmt: skip
    manifests = [_write(tmp_path, "m.avro", 2, False, "deflate", files)]
    saved = columnar.COMPILED_MIN_RECORDS
    columnar.COMPILED_MIN_RECORDS = 0 if compiled else 10**9
    try:
        every = _read(manifests)
        live = _read(manifests, live_only=True)
    finally:
        columnar.COMPILED_MIN_RECORDS = saved
    expected = [r for m in manifests for r in _expected(m)]
    assert _rows(every) == expected
    assert _rows(live) == [r for r in expected if r["status"] != 2]
    data_file = every.column("data_file").chunk(0)

    def key_buffer(name: str) -> int:
        return int(data_file.field(name).keys.buffers()[1].address)

    shared = {key_buffer(n) for n in ("column_sizes", "value_counts", "null_value_counts")}
    shared |= {key_buffer("lower_bounds"), key_buffer("upper_bounds")}
    assert len(shared) == 1
    assert key_buffer("nan_value_counts") not in shared
