"""A manifest's entries as arrays, decoded by compiled code: what planning a huge table reads.

:func:`read_entry_columns` decompresses a manifest (:func:`~icepark.avro.blocks.read_avro_blocks`,
with its limits on what a block may inflate to) and runs the compiled Avro interpreter over
all its records at once (:mod:`icepark.avro.compiled`). The result, :class:`EntryColumns`,
holds positions and integers, not Python objects; what a planner asks of it comes out as
numpy arrays for every entry at once:

* :attr:`EntryColumns.status`, :meth:`~EntryColumns.sequence_numbers` and the other entry
  fields, with the inheritance of :func:`~icepark.manifest.reader.read_manifest` (snapshot ids,
  sequence numbers of added entries, v3 first row ids) applied to whole arrays;
* :meth:`~EntryColumns.partitions`: each distinct partition tuple once, and which one each
  entry has (so a partition filter is judged once per partition, not once per file);
* :meth:`~EntryColumns.metric_counts` and :meth:`~EntryColumns.metric_bounds`: one column's
  value, null and NaN counts and its bounds, for every entry.

Only the entries a planner keeps become objects (:meth:`~EntryColumns.entry`), and their data
files are :class:`LazyDataFile`: each field is decoded from the arrays when first read, so a
plan of a million files does not build a million sets of metric maps nobody reads. A lazy
file equals, hashes and pickles as the :class:`~icepark.spec.manifests.DataFile` that
:func:`~icepark.manifest.reader.read_manifest` gives for the same entry.

The fields are found by id through :class:`~icepark.manifest.reader.EntryDecoder`, which
also checks their Avro types, so a manifest reads the same here as there.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from functools import cached_property
from typing import Any

import numpy as np

from icepark.avro.blocks import parse_schema_text, read_avro_blocks, resolve_named
from icepark.avro.compiled import ABSENT, MARK, NULL, Path, Program, Slots, compile_program
from icepark.avro.compiled import decode_records as _decode_records
from icepark.avro.schema import expanded_avro, from_avro_value
from icepark.errors import InvalidAvroFileError
from icepark.lru import LruCache
from icepark.manifest.reader import MALFORMED, EntryDecoder
from icepark.manifest.schemas import PARTITION_FIELD_ID
from icepark.spec.manifests import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.types import IcebergType

__all__ = [
    "EntryColumns",
    "EntryOrigin",
    "LazyDataFile",
    "decode_entry_columns",
    "read_entry_columns",
]

# data_file fields by id
_CONTENT, _PATH, _FORMAT, _COUNT, _SIZE = 134, 100, 101, 103, 104
_KEY_METADATA, _SPLITS, _EQUALITY, _SORT, _ROW_ID = 131, 132, 135, 140, 142
_REFERENCED, _OFFSET, _CONTENT_SIZE = 143, 144, 145
_MAPS = {
    "column_sizes": 108,
    "value_counts": 109,
    "null_value_counts": 110,
    "nan_value_counts": 137,
    "lower_bounds": 125,
    "upper_bounds": 128,
}
_BYTES_MAPS = frozenset((125, 128))
_INTS = {
    "record_count": _COUNT,
    "file_size_in_bytes": _SIZE,
    "sort_order_id": _SORT,
    "content_offset": _OFFSET,
    "content_size_in_bytes": _CONTENT_SIZE,
}
_METRIC_MAPS = (109, 110, 137, 125, 128)
_PLANNING_FIELDS = (
    _CONTENT,
    _PATH,
    _FORMAT,
    PARTITION_FIELD_ID,
    _COUNT,
    _SIZE,
    _ROW_ID,
    _REFERENCED,
    _OFFSET,
    _CONTENT_SIZE,
)
"""The data file fields planning decodes (with the metric maps of the filter's columns)."""
_FROM_RECORD = frozenset(("key_metadata", "split_offsets", "equality_ids", "sort_order_id", *_MAPS))
"""The data file fields a planning decode leaves to the entry's own record."""
_LISTED = frozenset(
    (
        "file_path",
        "file_format",
        "partition",
        "record_count",
        "file_size_in_bytes",
        "content",
        "first_row_id",
        "referenced_data_file",
        "content_offset",
        "content_size_in_bytes",
    )
)
"""The data file fields read from per-manifest lists (:meth:`EntryColumns.listed`)."""
_NO_KEYS = np.zeros(0, dtype=np.int64)
_DELETED = int(ManifestEntryStatus.DELETED)
_ADDED = int(ManifestEntryStatus.ADDED)

# compiled programs by the schema text of the file (a table's manifests share a few)
_PROGRAMS: LruCache[tuple[bytes, bool | None], Program] = LruCache(64)


def read_entry_columns(
    location: str,
    data: bytes,
    manifest: ManifestFile | None = None,
    spec: PartitionSpec | None = None,
    *,
    metrics_of: Collection[int] | None = None,
) -> EntryColumns:
    """The entries of the manifest whose bytes are ``data``, decoded into arrays.

    Everything is decoded, unless ``metrics_of`` is given: then only what planning reads (the
    entry's status, snapshot and sequence numbers, the file's content, path, format, partition,
    counts, row id and delete-vector fields) and the metrics of the columns ``metrics_of``
    names; the rest of an entry (its other metrics, split offsets, ...) is decoded when first
    read, from that entry's record alone.

    Raises :class:`~icepark.avro.blocks.UnsupportedAvroError` for a file the compiled path
    does not handle (the caller reads it another way) and
    :class:`~icepark.errors.InvalidAvroFileError` naming ``location`` for one that is not a
    readable manifest."""
    blocks = read_avro_blocks(location, data, compiled=True)
    text = bytes(blocks.raw_header["meta"].get("avro.schema", b""))
    origin = EntryOrigin(
        location,
        text,
        blocks.metadata,
        manifest,
        spec,
        None if metrics_of is None else frozenset(metrics_of),
    )
    raw, count = blocks.records()
    return decode_entry_columns(origin, raw, count, blocks.writer_schema, blocks.named)


@dataclass(frozen=True)
class EntryOrigin:
    """What the records of a manifest are decoded with: the file's location, its Avro schema
    (the text in its header) and key/value metadata, the manifest as its list describes it,
    the partition spec when given, and the columns whose metrics are decoded (None: a
    complete decode). Small and picklable: records decoded in one process can be decoded
    again in another (:mod:`icepark.manifest.kept_entries`)."""

    location: str
    schema_text: bytes
    metadata: dict[str, str]
    manifest: ManifestFile | None = None
    spec: PartitionSpec | None = None
    metrics_of: frozenset[int] | None = None


def decode_entry_columns(
    origin: EntryOrigin,
    raw: bytes,
    count: int,
    writer_schema: Any = None,
    named: dict[str, Any] | None = None,
    inherited: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> EntryColumns:
    """The ``count`` records in ``raw`` (uncompressed, one after another) of the manifest
    ``origin`` describes, decoded into arrays (see :func:`read_entry_columns`). The writer
    schema is parsed from ``origin`` unless given; ``inherited`` gives the entries' values
    after inheritance (:attr:`EntryColumns.inherited`) when the records are not the whole
    manifest (inheritance of first row ids counts the entries before)."""
    location = origin.location
    if writer_schema is None or named is None:
        writer_schema, named = parse_schema_text(origin.schema_text)
    try:
        decoder = EntryDecoder(
            location, writer_schema, origin.metadata, origin.manifest, origin.spec, named
        )
    except InvalidAvroFileError:
        raise
    except MALFORMED as exc:
        raise InvalidAvroFileError(f"Invalid manifest {location}: {exc}") from exc
    text = origin.schema_text
    full = _program(text, writer_schema, named, decoder, None)
    metrics_of = origin.metrics_of
    if metrics_of is None:
        program, wanted = full, _NO_KEYS
    else:
        program = _program(text, writer_schema, named, decoder, bool(metrics_of))
        wanted = np.array(sorted(metrics_of), dtype=np.int64)
    buf = np.frombuffer(raw, dtype=np.uint8)
    slots = _decode_records(location, program, buf, count, wanted)
    # records decoded again elsewhere (``inherited`` given) were checked where first decoded
    return EntryColumns(
        location,
        decoder,
        program,
        full,
        raw,
        slots,
        inherited is None,
        origin=origin,
        inherited=inherited,
    )


def _program(
    text: bytes,
    writer_schema: Any,
    named: dict[str, Any],
    decoder: EntryDecoder,
    metrics: bool | None,
) -> Program:
    """The compiled program of a schema: everything (``metrics`` None), or what planning
    reads, with the metric maps (keyed: only the wanted columns' items are stored) when
    ``metrics``."""
    key = (text, metrics)

    def build() -> Program:
        marked = _marked_paths(writer_schema, named, decoder)
        if metrics is None:
            return compile_program(writer_schema, named, marked=marked)
        keep, keyed = _planning_paths(decoder, metrics)
        return compile_program(writer_schema, named, keep, keyed, marked)

    return _PROGRAMS.get_or_compute(key, build)


def _marked_paths(
    writer_schema: Any, named: dict[str, Any], decoder: EntryDecoder
) -> Callable[[Path], bool]:
    """Where the program marks each record's values (:data:`~icepark.avro.compiled.MARK`):
    the ``data_file`` record, the top-level field after it (where the record ends) and its
    ``first_row_id``, so that a rewrite can copy a data file's record as it is stored
    (:meth:`EntryColumns.data_file_records`)."""
    df = decoder.top_names[2]
    top = [f.get("name") for f in resolve_named(writer_schema, named).get("fields", [])]
    after = top[top.index(df) + 1 :] if df in top else []
    marks = {(df,), *(((after[0],),) if after else ())}
    if _ROW_ID in decoder.file_names:
        marks.add((df, decoder.file_names[_ROW_ID]))
    return marks.__contains__


def _planning_paths(
    decoder: EntryDecoder, metrics: bool
) -> tuple[Callable[[Path], bool], Callable[[Path], bool]]:
    top = {decoder.top_names[fid] for fid in (0, 1, 3, 4) if fid in decoder.top_names}
    df = decoder.top_names[2]
    names = decoder.file_names
    plain = {names[fid] for fid in _PLANNING_FIELDS if fid in names}
    maps = {names[fid] for fid in _METRIC_MAPS if fid in names} if metrics else set()

    def keep(path: Path) -> bool:
        if len(path) == 1:
            return path[0] in top
        if path[0] != df or len(path) < 2:
            return False
        return path[1] in plain or path[1] in maps

    def keyed(path: Path) -> bool:
        return len(path) == 4 and path[0] == df and path[1] in maps and path[3] == "key"

    return keep, keyed


class EntryColumns:
    """The entries of one manifest as arrays (see the module's docstring)."""

    def __init__(
        self,
        location: str,
        decoder: EntryDecoder,
        program: Program,
        full: Program,
        raw: bytes,
        slots: Slots,
        check: bool = True,
        *,
        origin: EntryOrigin | None = None,
        inherited: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.location = location
        self.origin = origin
        if inherited is not None:
            self.__dict__["_inherited"] = inherited
        self.decoder = decoder
        self.program = program
        self._full_program = full
        self.count = slots.count
        self.slots = slots
        self._raw = raw
        self._lists: dict[str, list[Any]] = {}
        self._data_file = decoder.top_names[2]
        self._partition_fields: list[tuple[Path, IcebergType] | None] = []
        part = decoder.file_names.get(PARTITION_FIELD_ID)
        for found in decoder.partitions.fields:
            if found is None or part is None:
                self._partition_fields.append(None)
            else:
                self._partition_fields.append(((self._data_file, part, found[0]), found[1]))
        if not check:
            return
        try:
            self._check()
        except InvalidAvroFileError:
            raise
        except MALFORMED as exc:
            raise self._fail(str(exc)) from exc

    @property
    def complete(self) -> bool:
        """Was every field of every entry decoded (not only what planning reads)?"""
        return self.program is self._full_program

    def record(self, row: int) -> EntryColumns:
        """Entry ``row`` alone, decoded whole (from its record's bytes)."""
        if self.complete:
            return self
        start, end = int(self.slots.starts[row]), int(self.slots.starts[row + 1])
        raw = self._raw[start:end]
        slots = _decode_records(
            self.location, self._full_program, np.frombuffer(raw, dtype=np.uint8), 1
        )
        return EntryColumns(
            self.location, self.decoder, self._full_program, self._full_program, raw, slots, False
        )

    # -- raw slots -----------------------------------------------------------------------------

    def _top(self, fid: int) -> Path | None:
        name = self.decoder.top_names.get(fid)
        return None if name is None else (name,)

    def _file(self, fid: int) -> Path | None:
        name = self.decoder.file_names.get(fid)
        return None if name is None else (self._data_file, name)

    def _column(self, path: Path | None) -> tuple[np.ndarray, np.ndarray] | None:
        slot = None if path is None else self.program.slots.get(path)
        if slot is None:
            return None
        return self.slots.vals[:, slot], self.slots.lens[:, slot]

    def _ints(self, path: Path | None) -> tuple[np.ndarray, np.ndarray]:
        """An int or long field of every entry, and which entries have it null or not."""
        found = self._column(path)
        if found is None:
            return np.zeros(self.count, dtype=np.int64), np.ones(self.count, dtype=bool)
        vals, lens = found
        return vals, lens < -1

    def _fail(self, what: str) -> InvalidAvroFileError:
        return InvalidAvroFileError(f"Invalid manifest entry in {self.location}: {what}")

    def _check(self) -> None:
        """What :func:`~icepark.manifest.reader.read_manifest` refuses, refused here too."""
        status, missing = self._ints(self._top(0))
        if missing.any() or not np.isin(status, (0, 1, 2)).all():
            raise self._fail(f"status {self._first_bad(status, missing, (0, 1, 2))}")
        content, missing = self._ints(self._file(_CONTENT))
        if not np.isin(content[~missing], (0, 1, 2)).all():
            raise self._fail(f"content {self._first_bad(content, missing, (0, 1, 2))}")
        for fid in (_COUNT, _SIZE):
            if self._ints(self._file(fid))[1].any():
                raise self._fail(f"field {self.decoder.file_names[fid]!r} is null")
        paths = self._column(self._file(_PATH))
        if paths is not None and (paths[1] < 0).any():
            raise self._fail("a file_path is null")
        for fmt in self._distinct_strings(self._file(_FORMAT)):
            FileFormat.parse(fmt)

    @staticmethod
    def _first_bad(values: np.ndarray, missing: np.ndarray, allowed: tuple[int, ...]) -> str:
        bad = missing | ~np.isin(values, allowed)
        i = int(np.flatnonzero(bad)[0])
        return "null" if missing[i] else str(int(values[i]))

    def _distinct_strings(self, path: Path | None) -> list[str]:
        found = self._column(path)
        if found is None:
            return []
        vals, lens = found
        distinct, _ = self._distinct_bytes(vals, lens)
        return [self._text(b) for b in distinct if b is not None]

    def _distinct_bytes(
        self, vals: np.ndarray, lens: np.ndarray
    ) -> tuple[list[bytes | None], np.ndarray]:
        """The distinct values of a bytes or string column (None: null or absent), and for
        each entry the index of its value among them; compared a length at a time, by a
        64-bit hash of each value, checked against the values themselves."""
        codes = np.zeros(len(vals), dtype=np.int64)
        distinct: list[bytes | None] = []
        raw = np.frombuffer(self._raw, dtype=np.uint8)
        one = len(lens) > 0 and lens.min() == lens.max()  # one length: no sort to find it
        for n in [int(lens[0])] if one else np.unique(lens).tolist():
            mine = np.arange(len(lens)) if one else np.flatnonzero(lens == n)
            if n < 0:
                codes[mine] = len(distinct)
                distinct.append(None)
                continue
            matrix = raw[vals[mine, None] + np.arange(n)]
            if (matrix == matrix[0]).all():  # one value (a manifest's file format, mostly)
                codes[mine] = len(distinct)
                distinct.append(bytes(matrix[0]))
                continue
            hashes = np.zeros(len(mine), dtype=np.uint64)
            with np.errstate(over="ignore"):
                for k in range(n):
                    hashes = hashes * np.uint64(1_000_003) + matrix[:, k]
            _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
            inverse = inverse.reshape(-1)
            if not (matrix[first][inverse] == matrix).all():  # a collision: by the values
                seen: dict[bytes, int] = {}
                inverse = np.array([seen.setdefault(bytes(r), len(seen)) for r in matrix])
                first = np.array([inverse.tolist().index(k) for k in range(len(seen))])
            codes[mine] = len(distinct) + inverse
            distinct.extend(bytes(matrix[i]) for i in first.tolist())
        return distinct, codes

    def _text(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._fail(f"a string is not UTF-8 ({exc.reason})") from None

    # -- what every entry has -------------------------------------------------------------------

    @cached_property
    def status(self) -> np.ndarray:
        """Each entry's status (0 existing, 1 added, 2 deleted)."""
        return self._ints(self._top(0))[0]

    @cached_property
    def live(self) -> np.ndarray:
        """Which entries are live (added or existing)."""
        return self.status != _DELETED

    @cached_property
    def content(self) -> np.ndarray:
        """Each entry's file content (0 data, 1 position deletes, 2 equality deletes)."""
        content, missing = self._ints(self._file(_CONTENT))
        return np.where(missing, 0, content)

    @cached_property
    def record_count(self) -> np.ndarray:
        return self._ints(self._file(_COUNT))[0]

    @cached_property
    def file_size_in_bytes(self) -> np.ndarray:
        return self._ints(self._file(_SIZE))[0]

    @cached_property
    def _inherited(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(snapshot ids, sequence numbers, file sequence numbers, first row ids) after
        inheritance, as int64 with -1 for null (Java's InheritableMetadataFactory)."""
        manifest = self.decoder.manifest
        snapshot, snapshot_null = self._ints(self._top(1))
        snapshot = np.where(snapshot_null, -1, snapshot)
        if manifest is not None and manifest.added_snapshot_id is not None:
            snapshot = np.where(snapshot_null, manifest.added_snapshot_id, snapshot)
        seq_value = None if manifest is None else manifest.sequence_number
        if seq_value is not None and seq_value < 0:
            seq_value = None
        if seq_value is None and self.decoder.v1:
            seq_value = 0
        inherits = None
        if seq_value is not None:
            inherits = np.ones(self.count, dtype=bool)
            if seq_value != 0:
                inherits = self.status == _ADDED
        out = [snapshot]
        for fid in (3, 4):
            values, null = self._ints(self._top(fid))
            values = np.where(null, -1, values)
            if inherits is not None and seq_value is not None:
                values = np.where(null & inherits, seq_value, values)
            out.append(values)
        row_ids, null = self._ints(self._file(_ROW_ID))
        row_ids = np.where(null, -1, row_ids)
        if (
            manifest is not None
            and manifest.content == ManifestContent.DATA
            and manifest.first_row_id is not None
        ):
            takes = null & (self.content == int(FileContent.DATA)) & self.live
            counts = np.where(takes, self.record_count, 0)
            before = np.cumsum(counts) - counts
            row_ids = np.where(takes, manifest.first_row_id + before, row_ids)
        out.append(row_ids)
        return out[0], out[1], out[2], out[3]

    @property
    def inherited(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every entry's snapshot id, data and file sequence numbers and first row id after
        inheritance (int64, -1 for null)."""
        return self._inherited

    @property
    def snapshot_ids(self) -> np.ndarray:
        """Each entry's snapshot id after inheritance (-1: null)."""
        return self._inherited[0]

    @property
    def sequence_numbers(self) -> np.ndarray:
        """Each entry's data sequence number after inheritance (-1: null)."""
        return self._inherited[1]

    @property
    def file_sequence_numbers(self) -> np.ndarray:
        """Each entry's file sequence number after inheritance (-1: null)."""
        return self._inherited[2]

    @property
    def spec_id(self) -> int:
        """The id of the partition spec of every entry."""
        return int(self.decoder.spec_id)

    # -- partitions -----------------------------------------------------------------------------

    @cached_property
    def _partition_keys(self) -> np.ndarray:
        """One int64 row per entry identifying its partition tuple (equal rows: equal tuples)."""
        columns: list[np.ndarray] = []
        for found in self._partition_fields:
            column = None if found is None else self._column(found[0])
            if column is None:
                continue
            vals, lens = column
            if self.program.kinds[found[0]] in ("bytes", "string", "fixed"):  # type: ignore[index]
                vals = self._distinct_bytes(vals, lens)[1]
            columns.append(np.where(lens == NULL, 0, vals))
            columns.append((lens == NULL).astype(np.int64))
        if not columns:
            return np.zeros((self.count, 1), dtype=np.int64)
        return np.stack(columns, axis=1)

    @cached_property
    def _partition_groups(self) -> tuple[list[tuple[Any, ...]], np.ndarray]:
        keys = self._partition_keys
        if self.count == 0:
            return [], np.zeros(0, dtype=np.int64)
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        return [self.partition(int(i)) for i in first], inverse.reshape(-1)

    def partitions(self) -> tuple[list[tuple[Any, ...]], np.ndarray]:
        """Each distinct partition tuple of the entries, and for each entry the index of its
        tuple in that list."""
        return self._partition_groups

    def partition(self, row: int) -> tuple[Any, ...]:
        """Entry ``row``'s partition tuple, in spec order, in the internal representation."""
        return tuple(
            None if found is None else self._value(found[0], found[1], row)
            for found in self._partition_fields
        )

    def _raw_value(self, path: Path, row: int) -> Any:
        """The value at ``path`` of entry ``row`` as fastavro would decode it (logical types
        stripped), None when null or absent."""
        slot = self.program.slots[path]
        v = int(self.slots.vals[row, slot])
        n = int(self.slots.lens[row, slot])
        if n in (NULL, ABSENT):
            return None
        return self._decode_raw(self.program.kinds[path], v, n)

    def _decode_raw(self, kind: str, v: int, n: int) -> Any:
        if kind in ("int", "long", "enum"):
            return v
        raw = self._raw[v : v + n]
        if kind == "string":
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise self._fail(f"a string is not UTF-8 ({exc.reason})") from None
        if kind == "float":
            return struct.unpack("<f", raw)[0]
        if kind == "double":
            return struct.unpack("<d", raw)[0]
        if kind == "boolean":
            return raw != b"\x00"
        return raw

    def _value(self, path: Path, t: IcebergType, row: int) -> Any:
        try:
            return from_avro_value(t, self._raw_value(path, row))
        except MALFORMED as exc:
            raise self._fail(str(exc)) from exc

    # -- metrics --------------------------------------------------------------------------------

    def _row_range(self, rows: np.ndarray, row: int) -> tuple[int, int]:
        """Where the values of entry ``row`` are in an item column of records ``rows``."""
        return (
            int(np.searchsorted(rows, row, side="left")),
            int(np.searchsorted(rows, row, side="right")),
        )

    def _map_paths(self, fid: int) -> tuple[int, int] | None:
        """The item slots of the keys and values of map field ``fid``."""
        path = self._file(fid)
        if path is None:
            return None
        items = self.program.item_slots
        for key, value in (
            ((*path, "[]", "key"), (*path, "[]", "value")),
            ((*path, "{key}"), (*path, "{}")),
        ):
            if key in items and value in items:
                return items[key], items[value]
        return None

    def _map_values(self, fid: int, field_id: int) -> tuple[np.ndarray, np.ndarray]:
        """For every entry, the value under key ``field_id`` in map ``fid``: (the entries that
        have one, the value's index in the map's value column)."""
        found = self._map_paths(fid)
        has = np.zeros(self.count, dtype=bool)
        at = np.zeros(self.count, dtype=np.int64)
        if found is None:
            return has, at
        key_slot, value_slot = found
        keys, key_lens, key_rows = self.slots.items(key_slot)
        values_lens = self.slots.items(value_slot)[1]
        if len(keys) != len(values_lens):  # each item is a key and a value
            raise self._fail(f"map {fid} has {len(keys)} keys and {len(values_lens)} values")
        if self.program.kinds[self._key_path(fid)] == "string":
            matching = np.flatnonzero(self._string_keys_equal(keys, key_lens, field_id))
        else:
            matching = np.flatnonzero(keys == field_id)
        rows = key_rows[matching]
        has[rows] = values_lens[matching] != NULL
        at[rows] = matching
        return has, at

    def _key_path(self, fid: int) -> Path:
        path = self._file(fid)
        assert path is not None
        items = self.program.item_slots
        key = (*path, "[]", "key")
        return key if key in items else (*path, "{key}")

    def _string_keys_equal(
        self, keys: np.ndarray, lengths: np.ndarray, field_id: int
    ) -> np.ndarray:
        want = str(field_id)
        return np.fromiter(
            (
                self._raw[v : v + n].decode("utf-8", "replace") == want
                for v, n in zip(keys.tolist(), lengths.tolist(), strict=True)
            ),
            dtype=bool,
            count=len(keys),
        )

    def metric_counts(self, fid: int, field_id: int) -> tuple[np.ndarray, np.ndarray]:
        """One column's count from map ``fid`` (value 109, null 110 or NaN 137 counts) for
        every entry: (the counts, which entries have one)."""
        has, at = self._map_values(fid, field_id)
        out = np.zeros(self.count, dtype=np.int64)
        found = self._map_paths(fid)
        if found is not None:
            out[has] = self.slots.items(found[1])[0][at[has]]
        return out, has

    def metric_bounds(self, fid: int, field_id: int) -> tuple[np.ndarray, np.ndarray]:
        """One column's bound from map ``fid`` (lower 125, upper 128) for every entry: the
        positions and lengths of its bytes in :attr:`raw` (length -1: none)."""
        has, at = self._map_values(fid, field_id)
        positions = np.zeros(self.count, dtype=np.int64)
        lengths = np.full(self.count, -1, dtype=np.int64)
        found = self._map_paths(fid)
        if found is not None:
            values, value_lens, _ = self.slots.items(found[1])
            positions[has] = values[at[has]]
            lengths[has] = value_lens[at[has]]
        return positions, lengths

    @property
    def raw(self) -> bytes:
        """The decompressed records, which :meth:`metric_bounds` points into."""
        return self._raw

    def _mark(self, path: Path) -> np.ndarray | None:
        slot = self.program.slots.get((*path, MARK))
        return None if slot is None else self.slots.vals[:, slot]

    def data_file_records(self) -> tuple[np.ndarray, np.ndarray]:
        """Where each entry's ``data_file`` record is in :attr:`raw`, as stored: (starts,
        ends), so that it can be copied into a manifest of the same ``data_file`` schema."""
        starts = self._mark((self._data_file,))
        assert starts is not None  # every program marks it (_marked_paths)
        ends = self._after_data_file
        return starts, (self.slots.starts[1:] if ends is None else ends)

    @cached_property
    def _after_data_file(self) -> np.ndarray | None:
        for path, slot in self.program.slots.items():
            if len(path) == 2 and path[1] == MARK and path[0] != self._data_file:
                return self.slots.vals[:, slot]
        return None

    def stored_first_row_ids(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Where each entry's ``first_row_id`` starts in :attr:`raw` (the union's branch),
        and which entries have it stored as null (before inheritance); None when the data
        files have no such field."""
        path = self._file(_ROW_ID)
        starts = None if path is None else self._mark(path)
        if starts is None:
            return None
        return starts, self._ints(path)[1]

    @cached_property
    def data_file_avro(self) -> Any:
        """The writer's Avro schema of the ``data_file`` record, expanded
        (:func:`~icepark.avro.schema.expanded_avro`): records stored in it may be copied into
        a manifest whose ``data_file`` schema expands to the same."""
        return expanded_avro(self.decoder.top_fields[2]["type"], self.decoder.named)

    # -- entries --------------------------------------------------------------------------------

    def entry(self, row: int) -> ManifestEntry:
        """Entry ``row`` with inheritance applied; its data file decodes lazily."""
        snapshot, seq, file_seq = (int(a[row]) for a in self._inherited[:3])
        return ManifestEntry(
            ManifestEntryStatus(int(self.status[row])),
            None if snapshot == -1 else snapshot,
            None if seq == -1 else seq,
            None if file_seq == -1 else file_seq,
            LazyDataFile(self, row),
        )

    def file_field(self, name: str, row: int) -> Any:
        """Field ``name`` of entry ``row``'s data file, as :class:`DataFile` holds it."""
        if name in _LISTED:
            return self.listed(name)[row]
        if name in _FROM_RECORD and not self.complete:
            return self.record(row).file_field(name, 0)
        if name == "partition":
            return self.partition(row)
        if name == "spec_id":
            return self.spec_id
        if name == "content":
            return FileContent(int(self.content[row]))
        if name == "first_row_id":
            value = int(self._inherited[3][row])
            return None if value == -1 else value
        if name in _MAPS:
            return self._map(_MAPS[name], row)
        fid = _FIELD_IDS[name]
        path = self._file(fid)
        if path is None or path not in self.program.slots:
            return None
        if name in ("split_offsets", "equality_ids"):
            return self._list(path, row)
        value = self._raw_value(path, row)
        if name == "file_format":
            return FileFormat.parse(value)
        return value

    def listed(self, name: str) -> list[Any]:
        """Field ``name`` of every entry's data file as a Python list, made on first use (a
        plan reads the paths, sizes and counts of every file it keeps: one list per field is
        cheaper than one lookup per file)."""
        found = self._lists.get(name)
        if found is None:
            found = self._lists[name] = self._make_list(name)
        return found

    def _make_list(self, name: str) -> list[Any]:
        if name == "partition":
            tuples, which = self.partitions()
            return [tuples[k] for k in which.tolist()]
        if name == "content":
            kinds = [FileContent(k) for k in range(3)]
            return [kinds[k] for k in self.content.tolist()]
        if name == "first_row_id":
            return [None if v == -1 else v for v in self._inherited[3].tolist()]
        path = self._file(_FIELD_IDS[name])
        found = self._column(path)
        if found is None:
            return [None] * self.count
        vals, lens = found
        if name == "file_format":
            names, codes = self._distinct_bytes(vals, lens)
            formats = [None if b is None else FileFormat.parse(self._text(b)) for b in names]
            return [formats[k] for k in codes.tolist()]
        if name in ("file_path", "referenced_data_file"):
            raw = self._raw
            try:
                return [
                    None if n < 0 else raw[v : v + n].decode("utf-8")
                    for v, n in zip(vals.tolist(), lens.tolist(), strict=True)
                ]
            except UnicodeDecodeError as exc:
                raise self._fail(f"a {name} is not UTF-8 ({exc.reason})") from None
        nulls = lens < -1
        if not nulls.any():
            return vals.tolist()  # (the sizes of a whole plan: a loop in C)
        return [None if n else v for v, n in zip(vals.tolist(), nulls.tolist(), strict=True)]

    def _list(self, path: Path, row: int) -> tuple[int, ...] | None:
        count = int(self.slots.lens[row, self.program.slots[path]])
        if count in (NULL, ABSENT):
            return None
        item = self.program.item_slots.get((*path, "[]"))
        if item is None:
            return ()
        values, _, rows = self.slots.items(item)
        lo, hi = self._row_range(rows, row)
        return tuple(values[lo:hi].tolist())

    def _map(self, fid: int, row: int) -> dict[int, Any] | None:
        path = self._file(fid)
        if path is None or path not in self.program.slots:
            return None
        if int(self.slots.lens[row, self.program.slots[path]]) in (NULL, ABSENT):
            return None
        found = self._map_paths(fid)
        if found is None:
            return None
        key_slot, value_slot = found
        key_kind = self.program.kinds[self._key_path(fid)]
        value_path = next(p for p, s in self.program.item_slots.items() if s == value_slot)
        value_kind = self.program.kinds[value_path]
        keys, key_lens, rows = self.slots.items(key_slot)
        values, value_lens, _ = self.slots.items(value_slot)
        lo, hi = self._row_range(rows, row)
        out: dict[int, Any] = {}
        pairs = zip(
            keys[lo:hi].tolist(),
            key_lens[lo:hi].tolist(),
            values[lo:hi].tolist(),
            value_lens[lo:hi].tolist(),
            strict=True,
        )
        for k, kn, v, n in pairs:
            key = int(self._decode_raw(key_kind, k, kn)) if key_kind == "string" else k
            if fid in _BYTES_MAPS:
                out[key] = self._raw[v : v + n]
            else:
                out[key] = None if n == NULL else self._decode_raw(value_kind, v, n)
        return out

    def data_file(self, row: int) -> DataFile:
        """Entry ``row``'s data file, decoded whole."""
        return DataFile.from_normalized({name: self.file_field(name, row) for name in _NAMES})

    def record_fields(self, row: int) -> dict[str, Any]:
        """The fields of entry ``row``'s data file that planning does not decode (its metric
        maps, split offsets, ...), decoded together from the entry's record."""
        whole = self.record(row)
        at = 0 if whole is not self else row
        return {name: whole.file_field(name, at) for name in _FROM_RECORD}


_NAMES = tuple(f.name for f in dataclass_fields(DataFile))
_FIELD_IDS: Mapping[str, int] = {
    "file_path": _PATH,
    "file_format": _FORMAT,
    "key_metadata": _KEY_METADATA,
    "split_offsets": _SPLITS,
    "equality_ids": _EQUALITY,
    "referenced_data_file": _REFERENCED,
    **_INTS,
}


class _LazyField:
    """A :class:`LazyDataFile` field: decoded from the entry's arrays on first read, then
    kept in the instance (this descriptor defines no ``__set__``, so the kept value wins)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        d = obj.__dict__
        if self.name in _FROM_RECORD:
            d.update(d["_source"].record_fields(d["_row"]))
            return d[self.name]
        value = d["_source"].file_field(self.name, d["_row"])
        d[self.name] = value
        return value


class LazyDataFile(DataFile):
    """A :class:`DataFile` whose fields are decoded from :class:`EntryColumns` when first
    read. Equal to, hashed and pickled as the plain :class:`DataFile` of the same entry."""

    def __init__(self, source: EntryColumns, row: int) -> None:
        d = self.__dict__
        d["_source"] = source
        d["_row"] = row

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DataFile):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in _NAMES)

    __hash__ = DataFile.__hash__

    def __repr__(self) -> str:
        return repr(self.materialize())

    def materialize(self) -> DataFile:
        """The plain :class:`DataFile` (every field decoded)."""
        return DataFile.from_normalized({n: getattr(self, n) for n in _NAMES})

    def __reduce__(self) -> tuple[Any, ...]:
        return (DataFile.from_normalized, ({n: getattr(self, n) for n in _NAMES},))

    def replace(self, **changes: Any) -> DataFile:
        return self.materialize().replace(**changes)

    def without_stats(self) -> DataFile:
        return self.materialize().without_stats()


for _name in _NAMES:
    setattr(LazyDataFile, _name, _LazyField(_name))
del _name


def lazy_data_files(source: EntryColumns, rows: Iterable[int]) -> Iterator[LazyDataFile]:
    """``LazyDataFile(source, row)`` for each of ``rows``, as they are asked for, without a
    call to ``__init__`` per file (a plan of a million files makes a million of them). The
    file size, which every consumer of a plan reads (splitting, bin packing, Spark's
    partitions), is set at once: a dict store here is far cheaper than a lazy field's first
    read."""
    new, cls = object.__new__, LazyDataFile
    sizes = source.listed("file_size_in_bytes")
    for row in rows:
        f = new(cls)
        d = f.__dict__
        d["_source"] = source
        d["_row"] = row
        d["file_size_in_bytes"] = sizes[row]
        yield f
