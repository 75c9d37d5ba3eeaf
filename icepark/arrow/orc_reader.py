"""ORC data files as Arrow record batches of their own columns (used by
:mod:`icepark.arrow.reader`, which projects them to the table's schema).

pyarrow's ORC reader gives the attributes of the ORC type tree as Arrow field metadata.
Iceberg writers (Java's ``ORCSchemaUtil``) put each field's id in an ``iceberg.id``
attribute, and mark the types ORC lacks: ``iceberg.long-type=TIME`` (a ``time`` stored as
microseconds in a ``bigint``), ``iceberg.binary-type=UUID`` / ``FIXED`` with
``iceberg.length`` (a ``uuid`` or ``fixed(L)`` stored as ``binary``), and timestamps are
``timestamp`` (without zone) or ``timestamp with local time zone`` (with zone), read by
pyarrow in nanoseconds and cast to microseconds by the projection. :class:`OrcDataFile`
gives the file's columns as Arrow fields carrying ``PARQUET:field_id`` (the ids, or those of
the table's name mapping for a file written without them; a file with neither raises
:class:`~icepark.errors.InvalidSchemaError` naming the file and a field), with those marked
types restored, and reads the selected columns stripe by stripe.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.orc as orc

from icepark.arrow.schema import FIELD_ID_KEY, apply_name_mapping
from icepark.errors import InvalidSchemaError, NoSuchFileError, ValidationError
from icepark.io.fileio import FileIO
from icepark.spec.name_mapping import NameMapping

__all__ = [
    "ICEBERG_ID_ATTRIBUTE",
    "ICEBERG_REQUIRED_ATTRIBUTE",
    "ICEBERG_BINARY_TYPE_ATTRIBUTE",
    "ICEBERG_LONG_TYPE_ATTRIBUTE",
    "ICEBERG_LENGTH_ATTRIBUTE",
    "OrcDataFile",
]

ICEBERG_ID_ATTRIBUTE = b"iceberg.id"
ICEBERG_REQUIRED_ATTRIBUTE = b"iceberg.required"
ICEBERG_BINARY_TYPE_ATTRIBUTE = b"iceberg.binary-type"
ICEBERG_LONG_TYPE_ATTRIBUTE = b"iceberg.long-type"
ICEBERG_LENGTH_ATTRIBUTE = b"iceberg.length"


def _children(t: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(t):
        return list(t)
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_field]
    return []


def _has_ids(fields: Sequence[pa.Field]) -> bool:
    return any(
        ICEBERG_ID_ATTRIBUTE in (f.metadata or {}) or _has_ids(_children(f.type)) for f in fields
    )


def _marked_type(f: pa.Field) -> pa.DataType | None:
    """The Iceberg-marked type of a primitive ORC field, or None when it is plain."""
    meta = f.metadata or {}
    if pa.types.is_int64(f.type) and meta.get(ICEBERG_LONG_TYPE_ATTRIBUTE) == b"TIME":
        return pa.time64("us")
    binary = meta.get(ICEBERG_BINARY_TYPE_ATTRIBUTE)
    if pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type):
        if binary == b"UUID":
            return pa.uuid()
        if binary == b"FIXED" and ICEBERG_LENGTH_ATTRIBUTE in meta:
            return pa.binary(int(meta[ICEBERG_LENGTH_ATTRIBUTE]))
    return None


def _with_ids(f: pa.Field) -> pa.Field:
    """``f`` with ``PARQUET:field_id`` from ``iceberg.id`` and marked types restored."""
    t = f.type
    if pa.types.is_struct(t):
        t = pa.struct([_with_ids(c) for c in t])
    elif pa.types.is_map(t):
        t = pa.map_(_with_ids(t.key_field).with_nullable(False), _with_ids(t.item_field))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        t = pa.list_(_with_ids(t.value_field))
    else:
        t = _marked_type(f) or t
    meta = dict(f.metadata or {})
    if ICEBERG_ID_ATTRIBUTE in meta:
        meta[FIELD_ID_KEY] = meta[ICEBERG_ID_ATTRIBUTE]
    return pa.field(f.name, t, nullable=True, metadata=meta or None)


def _first_leaf(fields: Sequence[pa.Field]) -> str:
    return fields[0].name if fields else "<none>"


def _convert(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """A column as read by pyarrow converted to its restored type."""
    if arr.type.equals(target):
        return arr
    if pa.types.is_struct(target):
        children = [_convert(arr.field(i), target.field(i).type) for i in range(target.num_fields)]
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_list(target):
        offsets = arr.offsets
        values = _convert(arr.values, target.value_type)
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if pa.types.is_map(target):
        mask = arr.is_null() if arr.null_count else None
        keys = _convert(arr.keys, target.key_type)
        items = _convert(arr.items, target.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=mask)
    if isinstance(target, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(target, arr.cast(target.storage_type))
    if pa.types.is_time64(target):
        return arr.view(target)
    return arr.cast(target)


class OrcDataFile:
    """An open ORC data file: its schema with ids and its selected columns in batches.

    Use as a context manager (closes the file)."""

    def __init__(self, io: FileIO, location: str, name_mapping: NameMapping | None) -> None:
        self.location = location
        try:
            self._stream = io.new_input(location).open()
        except FileNotFoundError as e:
            raise NoSuchFileError(f"Data file not found: {location}") from e
        try:
            try:
                self._file = orc.ORCFile(self._stream)
            except (pa.ArrowException, OSError) as e:
                raise ValidationError(f"Cannot read ORC file {location}: {e}") from e
            raw = self._file.schema
            if not _has_ids(list(raw)):
                if name_mapping is None:
                    raise InvalidSchemaError(
                        f"Data file {location} has no field ids (first field "
                        f"{_first_leaf(list(raw))!r}) and no name mapping was given to read it "
                        "(set the table property schema.name-mapping.default)"
                    )
                raw = apply_name_mapping(raw, name_mapping)
            self.arrow_schema = pa.schema([_with_ids(f) for f in raw])
        except BaseException:
            self._stream.close()
            raise

    def __enter__(self) -> OrcDataFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()

    def _stripes(
        self, start: int, end: int | None, split_offsets: Sequence[int] | None
    ) -> list[int]:
        count = self._file.nstripes
        if start <= 0 and end is None:
            return list(range(count))
        if split_offsets is None or len(split_offsets) != count:
            raise ValidationError(
                f"Cannot read a split of ORC file {self.location}: its stripe offsets are "
                "unknown (the manifest has no split offsets for it)"
            )
        return [i for i, o in enumerate(split_offsets) if o >= start and (end is None or o < end)]

    def batches(
        self,
        columns: list[str],
        batch_size: int,
        start: int = 0,
        end: int | None = None,
        split_offsets: Sequence[int] | None = None,
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        """The given columns (dotted paths into structs) of the stripes starting in
        ``[start, end)``, each batch with the file position of its first row."""
        wanted = set(self._stripes(start, end, split_offsets))
        targets = {f.name: f for f in self.arrow_schema}
        row = 0
        for i in range(self._file.nstripes):
            if i not in wanted:
                row += self._file.read_stripe(i, columns=[]).num_rows
                continue
            try:
                stripe = self._file.read_stripe(i, columns=columns)
            except (pa.ArrowException, OSError) as e:
                raise ValidationError(
                    f"Cannot read stripe {i} of ORC file {self.location}: {e}"
                ) from e
            batch = _restore(stripe, targets)
            for offset in range(0, batch.num_rows, batch_size):
                yield row + offset, batch.slice(offset, batch_size)
            row += batch.num_rows


def _prune(target: pa.DataType, actual: pa.DataType) -> pa.DataType:
    """``target`` pruned to the struct fields ``actual`` (as read) has."""
    if pa.types.is_struct(target) and pa.types.is_struct(actual):
        names = {actual.field(i).name for i in range(actual.num_fields)}
        return pa.struct(
            [
                f.with_type(_prune(f.type, actual.field(f.name).type))
                for f in target
                if f.name in names
            ]
        )
    return target


def _restore(batch: pa.RecordBatch, targets: dict[str, pa.Field]) -> pa.RecordBatch:
    arrays, fields = [], []
    for name, arr in zip(batch.schema.names, batch.columns):
        target = targets[name]
        t = _prune(target.type, arr.type)
        arrays.append(_convert(arr, t))
        fields.append(target.with_type(t))
    if not arrays:
        return batch
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))
