"""Manifest entries as Arrow columns: the rows of Java's ``entries`` metadata table.

:func:`read_entries_columnar` turns the bytes of manifests into one Arrow table with the
columns ``status``, ``snapshot_id``, ``sequence_number``, ``file_sequence_number`` and
``data_file`` (Java's ``ManifestEntry.getSchema``: the ``data_file`` struct has every field of
every format version, ``spec_id`` included, and the caller's ``partition`` struct), with the
same inheritance from the manifest list as :func:`~icepark.manifest.reader.read_manifest`
(snapshot ids, sequence numbers of added entries, v3 first row ids), applied to whole columns.

How it flows: manifests that share a writer schema and format version are decoded together
by one :class:`~icepark.avro.columnar.ColumnarDecoder` (a few hundred entries per manifest
would otherwise pay the per-column cost many times); fields are then found by field id (or
Java's names for old writers), as :class:`~icepark.manifest.reader.EntryDecoder` finds them;
``partition`` values are matched to the caller's partition fields by partition field id (by
spec position for writers that wrote no ids) and converted from their Avro form (a date's
int, a decimal's bytes) to the caller's Arrow types. A manifest the columnar decoder cannot
read (a codec it lacks, a schema shape it does not handle) is decoded by fastavro instead,
into the same Arrow shape, so the result never depends on the path taken.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.avro.arrow_nulls import null_array
from icepark.avro.blocks import AvroBlocks, UnsupportedAvroError, read_avro_blocks
from icepark.avro.columnar import ColumnarDecoder, avro_arrow_type
from icepark.avro.compiled import (
    COMPILED_MIN_RECORDS,
    compile_program,
    decode_records,
    kernel_available,
)
from icepark.avro.compiled_arrow import slots_to_arrow
from icepark.avro.file import read_avro_file
from icepark.errors import IceparkError, InvalidAvroFileError
from icepark.io.threads import io_map
from icepark.manifest.reader import MALFORMED, EntryDecoder
from icepark.manifest.schemas import PARTITION_FIELD_ID
from icepark.spec.conversions import unscaled_to_decimal
from icepark.spec.manifests import FileContent, ManifestContent, ManifestEntryStatus, ManifestFile
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.types import DecimalType, StructType, UUIDType

__all__ = ["ManifestBytes", "read_entries_columnar"]

_FALLBACK = (UnsupportedAvroError, pa.ArrowException, *MALFORMED)

# data_file fields of the result taken as decoded (by field id), with a cast where needed
_PLAIN = {
    "file_path": 100,
    "record_count": 103,
    "file_size_in_bytes": 104,
    "key_metadata": 131,
    "split_offsets": 132,
    "equality_ids": 135,
    "sort_order_id": 140,
    "first_row_id": 142,
    "referenced_data_file": 143,
    "content_offset": 144,
    "content_size_in_bytes": 145,
}
_MAPS = {
    "column_sizes": 108,
    "value_counts": 109,
    "null_value_counts": 110,
    "nan_value_counts": 137,
    "lower_bounds": 125,
    "upper_bounds": 128,
}


@dataclass(frozen=True)
class ManifestBytes:
    """A manifest's bytes with its entry in the manifest list (None: nothing inherited)."""

    location: str
    data: bytes
    manifest: ManifestFile | None = None


@dataclass
class _Decoded:
    """One manifest's header facts and where its rows are in its group's columns."""

    source: ManifestBytes
    decoder: EntryDecoder
    rows: int


class _BytesInput:
    def __init__(self, location: str, data: bytes) -> None:
        self.location = location
        self._data = data

    def read_bytes(self) -> bytes:
        return self._data


_DECODERS: dict[str, ColumnarDecoder] = {}


def _columnar(schema_key: str, writer_schema: Any, named: dict[str, Any]) -> ColumnarDecoder:
    found = _DECODERS.get(schema_key)
    if found is None:
        if len(_DECODERS) > 64:
            _DECODERS.clear()
        found = _DECODERS[schema_key] = ColumnarDecoder(writer_schema, named)
    return found


def read_entries_columnar(
    manifests: Sequence[ManifestBytes],
    data_file_type: pa.StructType,
    data_file_struct: StructType,
    specs: Mapping[int, PartitionSpec],
    *,
    live_only: bool = False,
    compiled: bool | None = None,
) -> pa.Table:
    """The entries of ``manifests`` (in their order, each manifest's in file order) as a
    table of ``status``, ``snapshot_id``, ``sequence_number``, ``file_sequence_number`` and
    ``data_file`` of Arrow type ``data_file_type`` (the Arrow form of the Iceberg struct
    ``data_file_struct``, whose ``partition`` field, if any, says which partition fields to
    give). Deleted entries are left out with ``live_only``. Errors name the manifest.

    ``compiled`` chooses the decoder: the compiled one (True), the numpy one (False), or by
    the number of records (None: compiled from
    :data:`~icepark.avro.compiled.COMPILED_MIN_RECORDS` on, where it can run)."""
    groups: dict[tuple[str, str], list[tuple[int, Any]]] = {}
    for index, m in enumerate(manifests):
        try:
            blocks = read_avro_blocks(m.location, m.data)
        except UnsupportedAvroError:
            blocks = None
        except IceparkError:
            raise
        except Exception as exc:
            raise InvalidAvroFileError(f"Cannot read manifest {m.location}: {exc}") from exc
        if blocks is None:
            groups.setdefault(("fastavro", m.location), []).append((index, None))
            continue
        key = (blocks.metadata.get("avro.schema", ""), blocks.metadata.get("format-version", ""))
        groups.setdefault(key, []).append((index, blocks))
    parts: list[_Part] = []
    for members in groups.values():
        parts += _read_group(
            manifests, members, data_file_type, data_file_struct, specs, live_only, compiled
        )
    if not parts:
        return _empty(data_file_type)
    if len(parts) == 1:
        return parts[0].table
    # back into the order of the manifests given
    order = np.concatenate([np.repeat(np.array(p.indexes, dtype=np.int64), p.rows) for p in parts])
    combined = pa.concat_tables([p.table for p in parts])
    return combined.take(pa.array(np.argsort(order, kind="stable")))


@dataclass
class _Part:
    """The rows of some manifests (``indexes`` into the manifests given, ``rows`` each)."""

    indexes: list[int]
    table: pa.Table
    rows: np.ndarray


def _empty(data_file_type: pa.StructType) -> pa.Table:
    return pa.table(
        {
            "status": pa.array([], pa.int32()),
            "snapshot_id": pa.array([], pa.int64()),
            "sequence_number": pa.array([], pa.int64()),
            "file_sequence_number": pa.array([], pa.int64()),
            "data_file": pa.nulls(0, data_file_type),
        }
    )


def _read_group(
    manifests: Sequence[ManifestBytes],
    members: list[tuple[int, Any]],
    data_file_type: pa.StructType,
    data_file_struct: StructType,
    specs: Mapping[int, PartitionSpec],
    live_only: bool,
    compiled: bool | None = None,
) -> list[_Part]:
    """Decode a group of manifests of one writer schema together; a group that the columnar
    decoder refuses is read manifest by manifest with fastavro."""
    first = members[0][1]
    if first is not None:
        try:
            schema_text = first.metadata.get("avro.schema", "")
            raw = _compiled(first, [ab for _, ab in members], compiled)
            if raw is None:
                decoder = _columnar(schema_text, first.writer_schema, first.named)
                raw = decoder.decode([b for _, ab in members for b in ab.block_data()])
            decoded = [
                _Decoded(
                    manifests[i],
                    _entry_decoder(manifests[i], ab.writer_schema, ab.metadata, specs, ab.named),
                    ab.count,
                )
                for i, ab in members
            ]
            table, rows = _convert(raw, decoded, data_file_type, data_file_struct, live_only)
            return [_Part([i for i, _ in members], table, rows)]
        except _FALLBACK:
            pass
    out = []
    for i, _ in members:
        table, rows = _read_one_fastavro(
            manifests[i], data_file_type, data_file_struct, specs, live_only
        )
        out.append(_Part([i], table, rows))
    return out


def _compiled(
    first: AvroBlocks, members: Sequence[AvroBlocks], compiled: bool | None
) -> pa.StructArray | None:
    """The records of ``members`` (files of one writer schema) decoded by the compiled path
    (:mod:`icepark.avro.compiled`), a file at a time on the shared threads, when
    ``compiled`` (or, when it is None, they hold at least
    :data:`~icepark.avro.compiled.COMPILED_MIN_RECORDS` records) and it can run here; None
    otherwise (the numpy decoder starts faster on small files)."""
    if compiled is None:
        compiled = sum(ab.count for ab in members) >= COMPILED_MIN_RECORDS
    if not compiled or not kernel_available():
        return None
    program = compile_program(first.writer_schema, first.named)

    def decode(at: int) -> pa.StructArray:
        ab = members[at]
        raw, count = ab.records()
        slots = decode_records(ab.location, program, np.frombuffer(raw, np.uint8), count)
        return slots_to_arrow(first.writer_schema, first.named, program, slots)

    arrays = list(io_map(decode, range(len(members)), (os.cpu_count() or 2) + 1))
    return pa.concat_arrays(arrays) if len(arrays) != 1 else arrays[0]


def _entry_decoder(
    m: ManifestBytes,
    writer_schema: Any,
    metadata: dict[str, str],
    specs: Mapping[int, PartitionSpec],
    named: dict[str, Any] | None = None,
) -> EntryDecoder:
    spec = specs.get(m.manifest.partition_spec_id) if m.manifest is not None else None
    return EntryDecoder(m.location, writer_schema, metadata, m.manifest, spec, named)


def _read_one_fastavro(
    m: ManifestBytes,
    data_file_type: pa.StructType,
    data_file_struct: StructType,
    specs: Mapping[int, PartitionSpec],
    live_only: bool,
) -> tuple[pa.Table, np.ndarray]:
    contents = read_avro_file(_BytesInput(m.location, m.data))
    decoder = _entry_decoder(m, contents.writer_schema, contents.metadata, specs)
    try:
        arrow_type = avro_arrow_type(contents.writer_schema, decoder.named)
        raw = pa.array(contents.records, type=arrow_type)
        decoded = [_Decoded(m, decoder, len(contents.records))]
        return _convert(raw, decoded, data_file_type, data_file_struct, live_only)
    except InvalidAvroFileError:
        raise
    except (UnsupportedAvroError, pa.ArrowException, *MALFORMED) as exc:
        raise InvalidAvroFileError(f"Invalid manifest {m.location}: {exc}") from exc


# -- raw Avro columns to entries ---------------------------------------------------------------


def _per_row(values: Sequence[int | None], rows: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    """A value per manifest repeated over its rows (None: null)."""
    known = np.array([0 if v is None else v for v in values], dtype=np.int64)
    missing = np.array([v is None for v in values], dtype=bool)
    return pa.array(np.repeat(known, rows), arrow_type, mask=np.repeat(missing, rows))


def _child(struct: pa.StructArray | None, name: str | None) -> pa.Array | None:
    if struct is None or name is None:
        return None
    return struct.field(name)


def _convert(
    raw: pa.StructArray,
    decoded: list[_Decoded],
    data_file_type: pa.StructType,
    data_file_struct: StructType,
    live_only: bool,
) -> tuple[pa.Table, np.ndarray]:
    """Entries in the result's shape from the raw records of ``decoded`` manifests (in
    order), with inheritance applied and deleted entries dropped with ``live_only``."""
    first = decoded[0].decoder
    n = len(raw)
    rows = np.array([d.rows for d in decoded], dtype=np.int64)
    if int(rows.sum()) != n:
        raise UnsupportedAvroError("record counts do not add up")
    top = first.top_names
    status = _child(raw, top.get(0))
    if status is None:
        raise UnsupportedAvroError("no status field")
    status = status.cast(pa.int32())
    file_struct = _child(raw, top.get(2))
    if not isinstance(file_struct, pa.StructArray):
        raise UnsupportedAvroError("no data_file record")
    names = first.file_names

    def field(field_id: int) -> pa.Array | None:
        return _child(file_struct, names.get(field_id))

    # -- inheritance (Java's InheritableMetadataFactory, as manifest.reader._Inheritance) --
    snapshots = [
        None if d.source.manifest is None else d.source.manifest.added_snapshot_id for d in decoded
    ]
    sequences: list[int | None] = []
    for d in decoded:
        m = d.source.manifest
        seq = None if m is None else m.sequence_number
        if seq is not None and seq < 0:
            seq = None
        if seq is None and d.decoder.v1:
            seq = 0
        sequences.append(seq)
    snapshot_id = _child(raw, top.get(1))
    snapshot_id = (
        _per_row(snapshots, rows, pa.int64())
        if snapshot_id is None
        else pc.coalesce(snapshot_id.cast(pa.int64()), _per_row(snapshots, rows, pa.int64()))
    )
    inherited_seq = _per_row(sequences, rows, pa.int64())
    may_inherit = pc.and_(
        pc.is_valid(inherited_seq),
        pc.or_(pc.equal(inherited_seq, 0), pc.equal(status, int(ManifestEntryStatus.ADDED))),
    )
    seq_columns = []
    for field_id in (3, 4):
        found = _child(raw, top.get(field_id))
        column = null_array(n, pa.int64()) if found is None else found.cast(pa.int64())
        fill = pc.and_(pc.is_null(column), may_inherit)
        seq_columns.append(pc.if_else(fill, inherited_seq, column))

    content = field(134)
    content = (
        pa.array(np.zeros(n, dtype=np.int32))
        if content is None
        else pc.fill_null(content.cast(pa.int32()), 0)
    )
    record_count = field(103)
    if record_count is None:
        raise UnsupportedAvroError("no record_count")
    first_row_id = _first_row_ids(field(142), decoded, rows, status, content, record_count)

    children: dict[str, pa.Array] = {"content": content, "first_row_id": first_row_id}
    file_format = field(101)
    if file_format is None:
        raise UnsupportedAvroError("no file_format")
    children["file_format"] = pc.utf8_upper(file_format.cast(pa.string()))
    children["spec_id"] = _per_row([d.decoder.spec_id for d in decoded], rows, pa.int32())
    for name, field_id in _PLAIN.items():
        if name not in children:
            found = field(field_id)
            if found is not None:
                children[name] = found
    maps = {name: field(field_id) for name, field_id in _MAPS.items()}
    children.update(_sharing_keys({k: _to_map(v) for k, v in maps.items() if v is not None}))
    partition_field = data_file_struct.field(PARTITION_FIELD_ID)
    if partition_field is not None:
        children["partition"] = _partition(
            field(PARTITION_FIELD_ID), decoded, partition_field.field_type, data_file_type, n
        )
    arrays = []
    for f in data_file_type:
        found = children.get(f.name)
        if found is None or (n and found.null_count == n):  # a field no entry has
            arrays.append(null_array(n, f.type))
        elif not found.type.equals(f.type):
            arrays.append(found.cast(f.type))
        else:
            arrays.append(found)
    data_file = pa.StructArray.from_arrays(arrays, fields=list(data_file_type))
    table = pa.table(
        {
            "status": status,
            "snapshot_id": snapshot_id,
            "sequence_number": seq_columns[0],
            "file_sequence_number": seq_columns[1],
            "data_file": data_file,
        }
    )
    deleted = pc.equal(status, int(ManifestEntryStatus.DELETED)) if live_only else None
    if deleted is not None and pc.any(deleted).as_py():  # no copy when nothing is deleted
        live = pc.invert(deleted)
        keep = live.to_numpy(zero_copy_only=False)
        owner = np.repeat(np.arange(len(decoded)), rows)
        rows = np.bincount(owner[keep], minlength=len(decoded))
        table = table.filter(live)
    return table, rows


def _first_row_ids(
    column: pa.Array | None,
    decoded: list[_Decoded],
    rows: np.ndarray,
    status: pa.Array,
    content: pa.Array,
    record_count: pa.Array,
) -> pa.Array:
    """v3 row lineage: live data files without a first row id take their manifest's
    ``first_row_id`` plus the record counts of the files before them that had none."""
    n = int(rows.sum())
    existing = null_array(n, pa.int64()) if column is None else column.cast(pa.int64())
    bases: list[int | None] = []
    for d in decoded:
        m = d.source.manifest
        ok = m is not None and m.content == ManifestContent.DATA and m.first_row_id is not None
        bases.append(m.first_row_id if ok and m is not None else None)
    if all(b is None for b in bases):
        return existing
    base = _per_row(bases, rows, pa.int64())
    eligible = pc.and_(
        pc.and_(pc.is_null(existing), pc.is_valid(base)),
        pc.and_(
            pc.equal(content, int(FileContent.DATA)),
            pc.not_equal(status, int(ManifestEntryStatus.DELETED)),
        ),
    )
    chosen = eligible.to_numpy(zero_copy_only=False)
    counts = record_count.cast(pa.int64()).to_numpy(zero_copy_only=False)
    inc = np.where(chosen, counts, 0)
    before = np.cumsum(inc) - inc  # over all rows, exclusive
    starts = np.zeros(len(rows), dtype=np.int64)
    starts[1:] = np.cumsum(rows)[:-1]
    segment_base = before[np.minimum(starts, max(n - 1, 0))] if n else before
    owner = np.repeat(np.arange(len(rows)), rows)
    offset = before - segment_base[owner]
    assigned = pc.add(base, pa.array(offset))
    return pc.if_else(eligible, assigned, existing)


def _to_map(column: pa.Array) -> pa.Array:
    """An Iceberg int-keyed map (an Avro array of key/value records) as an Arrow map."""
    if isinstance(column, pa.MapArray):
        return column
    if not isinstance(column, pa.ListArray):
        raise UnsupportedAvroError(f"a metrics map of type {column.type}")
    items = column.values
    if not isinstance(items, pa.StructArray):
        raise UnsupportedAvroError(f"a metrics map of type {column.type}")
    mask = column.is_null() if column.null_count else None
    return pa.MapArray.from_arrays(
        column.offsets, items.field("key"), items.field("value"), mask=mask
    )


def _sharing_keys(maps: dict[str, pa.MapArray]) -> dict[str, pa.MapArray]:
    """``maps`` with one copy of the offsets and keys they have in common: a table's files
    mostly keep metrics for the same columns in every map, so the column sizes, value and
    null counts and both bounds of a file have the same keys (sharing them saved 95 MB of
    the files table of a million files)."""
    out: dict[str, pa.MapArray] = {}
    kept: list[pa.MapArray] = []
    for name, column in maps.items():
        for other in kept:
            if (
                column.offset == other.offset == 0
                and len(column) == len(other)
                and column.null_count == other.null_count == 0
                and column.offsets.equals(other.offsets)
                and column.keys.equals(other.keys)
            ):
                column = pa.MapArray.from_arrays(other.offsets, other.keys, column.items)
                break
        else:
            kept.append(column)
        out[name] = column
    return out


def _partition(
    raw: pa.Array | None,
    decoded: list[_Decoded],
    partition_type: Any,
    data_file_type: pa.StructType,
    n: int,
) -> pa.Array:
    """The caller's partition struct, each field found by partition field id."""
    target = data_file_type.field("partition").type
    mapping = decoded[0].decoder.partitions.names_by_id
    if any(d.decoder.partitions.names_by_id != mapping for d in decoded[1:]):
        raise UnsupportedAvroError("manifests of one schema map partition fields differently")
    arrays = []
    for f, arrow_field in zip(partition_type.fields, target):
        name = mapping.get(f.field_id)
        found = None if raw is None or name is None else raw.field(name)
        arrays.append(_partition_value(found, f.field_type, arrow_field.type, n))
    return pa.StructArray.from_arrays(arrays, fields=list(target))


def _partition_value(column: pa.Array | None, t: Any, arrow_type: pa.DataType, n: int) -> pa.Array:
    if column is None:
        return pa.nulls(n, arrow_type)
    if isinstance(t, DecimalType):
        values = [
            None
            if b is None
            else unscaled_to_decimal(int.from_bytes(b, "big", signed=True), t.scale)
            for b in column.to_pylist()
        ]
        return pa.array(values, arrow_type)
    if isinstance(t, UUIDType):
        storage = column.cast(pa.binary(16))
        return pa.ExtensionArray.from_storage(arrow_type, storage)
    return column.cast(arrow_type)
