"""Reading only the manifest entries whose column metrics may match a filter.

Decoding every entry of a big manifest (fastavro dicts, then :class:`DataFile` objects) costs
far more than judging the entries: a point query on a 10,000-file table keeps one of them.
:func:`read_manifest_pruned` first scans the decompressed Avro blocks itself, decoding of each
entry only its status, content, record count, first row id and the metric map items of the
wanted field ids (:mod:`icepark.avro.scanner`; the fields around the file path with one
pattern match per entry, :mod:`icepark.avro.pattern_run`), and asks ``might_match`` about those
(:class:`EntryStats`, which has the attributes of :class:`DataFile` that metrics evaluators
read). Only the records of the entries that pass are then decoded by fastavro (cut out of
their blocks where the scanner saw them start and end), and only they become
:class:`ManifestEntry` objects, with the same inheritance as
:func:`~icepark.manifest.reader.read_manifest` (row ids count the files skipped before them).

Whatever the scanner does not handle (another codec, an unusual schema, a corrupt file)
falls back to :func:`~icepark.manifest.reader.read_manifest` and judges the full data files,
so the result never depends on the path taken.

Scanned manifests are kept in a small process-wide cache (manifests are immutable), so that
planning the same snapshot again only re-judges the scanned values and takes the entries it
decoded before from there (a filtered query over a small table is mostly this); the file is
still read and a cached scan used only for the very same bytes.
"""

from __future__ import annotations

import gc
import io
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import fastavro

from icepark.avro.blocks import (
    AvroBlocks,
    UnsupportedAvroError,
    read_avro_blocks,
    resolve_named,
)
from icepark.avro.pattern_run import START, KeyedBytes, pattern_run
from icepark.avro.scanner import LONG, Reader, Run, compile_scanner
from icepark.errors import InvalidAvroFileError
from icepark.lru import LruCache
from icepark.manifest.metric_maps import count_map_reader, metric_map_reader
from icepark.manifest.reader import EntryDecoder, read_manifest
from icepark.spec.manifests import (
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from icepark.spec.partitioning import PartitionSpec

__all__ = ["EntryStats", "FetchedManifest", "fetch_manifest", "read_manifest_pruned"]

_FALLBACK_ERRORS = (
    UnsupportedAvroError,
    InvalidAvroFileError,
    IndexError,
    ValueError,
    KeyError,
    TypeError,
)
"""What makes the fast path give up; the plain reader then reports a corrupt file precisely."""

# data_file field ids the scanner decodes
_RECORD_COUNT, _CONTENT, _FIRST_ROW_ID = 103, 134, 142
_COUNT_MAPS = {109: "value_counts", 110: "null_value_counts", 137: "nan_value_counts"}
_BOUND_MAPS = {125: "lower_bounds", 128: "upper_bounds"}
_FILE_PATH = 100


class EntryStats:
    """The metrics of one entry's data file, limited to some field ids.

    Has the :class:`~icepark.spec.manifests.DataFile` attributes that the metrics evaluators
    read; a map is ``None`` when the entry has none, and holds only the wanted field ids.
    The count maps are decoded from the block when first read: an evaluator that rules a
    file out by its bounds never pays for them.
    """

    __slots__ = ("_at", "_data", "_read", "lower_bounds", "record_count", "upper_bounds")

    def __init__(
        self,
        record_count: int,
        data: bytes,
        counts_at: tuple[int | None, int | None, int | None],
        read_counts: Reader,
        lower_bounds: dict[int, bytes] | None,
        upper_bounds: dict[int, bytes] | None,
    ) -> None:
        self.record_count = record_count
        self.lower_bounds = lower_bounds
        self.upper_bounds = upper_bounds
        self._data = data
        self._at = counts_at  # where the value, null and NaN count maps start in ``data``
        self._read = read_counts

    def _counts(self, which: int) -> dict[int, int] | None:
        pos = self._at[which]
        return None if pos is None else cast(dict[int, int], self._read(self._data, pos)[0])

    @property
    def value_counts(self) -> dict[int, int] | None:
        return self._counts(0)

    @property
    def null_value_counts(self) -> dict[int, int] | None:
        return self._counts(1)

    @property
    def nan_value_counts(self) -> dict[int, int] | None:
        return self._counts(2)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a manifest is scanned. The scan keeps a
    tuple and two dicts an entry, none in a reference cycle; their allocations alone set the
    collector off dozens of times, once over every object the process holds (~10 ms of a
    65 ms first plan of 10,000 entries). Left as it is when something else turned it off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _runs(
    fields: list[dict[str, Any]],
    named: dict[str, Any],
    wanted: dict[int, tuple[int, Any]],
    breaks: set[int],
) -> dict[int, Run]:
    """Pattern runs (:func:`~icepark.avro.pattern_run.pattern_run`) over the consecutive
    ``fields`` between the ``breaks``, keyed by ``id()`` of their first field."""
    runs: dict[int, Run] = {}
    start = 0
    for end in range(len(fields) + 1):
        if end < len(fields) and id(fields[end]) not in breaks:
            continue
        if end - start >= 2:
            run = pattern_run(fields[start:end], named, wanted)
            if run is not None:
                runs[id(fields[start])] = run
        start = end + 1
    return runs


@dataclass(frozen=True)
class _Candidate:
    block: int
    start: int  # where its record starts in the block's data
    end: int  # and ends
    rows_before: int  # record counts of earlier files that inherit row ids


class _Scanner:
    """Scans the entries of a manifest into tuples of what pruning needs (see the slots),
    compiled for one writer schema and set of wanted field ids."""

    # slots of the scanned values (and the record's start in its block)
    _STATUS, _FILE, _COUNT, _KIND, _ROW_ID, _VALUES, _NULLS, _NANS, _LOWER, _UPPER = range(10)
    _START = 10

    def __init__(self, blocks: AvroBlocks, decoder: EntryDecoder, field_ids: frozenset[int]):
        named = blocks.named
        file_fields = decoder.file_fields
        wanted: dict[int, tuple[int, Any]] = {
            id(decoder.top_fields[0]): (self._STATUS, LONG),
            id(decoder.top_fields[2]): (self._FILE, {}),
        }
        for fid, slot in (
            (_RECORD_COUNT, self._COUNT),
            (_CONTENT, self._KIND),  # not in v1
            (_FIRST_ROW_ID, self._ROW_ID),  # v3 only
        ):
            if fid in file_fields:
                wanted[id(file_fields[fid])] = (slot, LONG)
        # the same fields as read by a pattern run (one match an entry) where it fits them
        in_runs = {key: want for key, want in wanted.items() if want[1] == LONG}
        bounds = KeyedBytes(field_ids)
        maps = zip(
            (*_COUNT_MAPS, *_BOUND_MAPS),
            (self._VALUES, self._NULLS, self._NANS, self._LOWER, self._UPPER),
            ("long", "long", "long", "bytes", "bytes"),
            (START, START, START, bounds, bounds),
            strict=True,
        )
        for fid, slot, kind, in_run in maps:
            if fid in file_fields:
                wanted[id(file_fields[fid])] = (slot, self._maps(named, field_ids, kind))
                in_runs[id(file_fields[fid])] = (slot, in_run)
        top = resolve_named(blocks.writer_schema, named)
        file_record = resolve_named(decoder.top_fields[2]["type"], named)
        breaks = {id(decoder.top_fields[2])}
        if _FILE_PATH in file_fields:  # every file has its own: no pattern would fit them
            breaks.add(id(file_fields[_FILE_PATH]))
        runs = {
            **_runs(top.get("fields", []), named, in_runs, breaks),
            **_runs(file_record.get("fields", []), named, in_runs, breaks),
        }
        self._scan = compile_scanner(top, named, wanted, 11, start_slot=self._START, runs=runs)

    @staticmethod
    def _maps(named: dict[str, Any], ids: frozenset[int], kind: str) -> Callable[[Any], Reader]:
        return lambda avro: metric_map_reader(avro, named, ids, kind)

    def records(self, blocks: AvroBlocks) -> list[list[tuple[Any, ...]]]:
        """The scanned values of every entry, block by block; each ends with where the
        entry's record starts in its block."""
        out = []
        for b, (count, data) in enumerate(blocks.block_data()):
            records, end = self._scan(data, count)
            if end != len(data):
                raise InvalidAvroFileError(f"block {b} of {blocks.location} has trailing bytes")
            out.append(records)
        return out


def _select(
    scanned: list[list[tuple[Any, ...]]],
    blocks: AvroBlocks,
    field_ids: frozenset[int],
    might_match: Callable[[EntryStats], bool],
    live_only: bool,
    count_rows: bool,
    added_only: bool = False,
) -> list[_Candidate]:
    """The entries that ``might_match`` (and are live, with ``live_only``; added, with
    ``added_only``)."""
    read_counts = count_map_reader(field_ids)
    out: list[_Candidate] = []
    rows = 0
    deleted, added = ManifestEntryStatus.DELETED, ManifestEntryStatus.ADDED
    data_content = FileContent.DATA
    for b, (records, block) in enumerate(zip(scanned, blocks.blocks, strict=True)):
        data = block.data
        for i, (status, file, n, kind, row_id, vc, nc, nanc, lo, hi, start) in enumerate(records):
            if file is None or n is None or status is None:
                raise UnsupportedAvroError("entry without a status or record count")
            rows_before = rows
            if count_rows and status != deleted and row_id is None and (kind or 0) == data_content:
                rows += n
            if (live_only and status == deleted) or (added_only and status != added):
                continue
            if might_match(EntryStats(n, data, (vc, nc, nanc), read_counts, lo, hi)):
                end = records[i + 1][-1] if i + 1 < len(records) else len(data)
                out.append(_Candidate(b, start, end, rows_before))
    return out


@dataclass
class _Scanned:
    """A manifest split into blocks, and its entries scanned for some sets of field ids."""

    raw: bytes  # the file
    blocks: AvroBlocks
    records: dict[frozenset[int], list[list[tuple[Any, ...]]]]
    entries: dict[tuple[Any, ...], ManifestEntry] = field(default_factory=dict)
    """Entries decoded already, inheritance applied, by what they inherit and where their
    records start (:func:`_decode`)."""
    decoded_bytes: int = 0
    """The Avro bytes of the records behind :attr:`entries`."""

    def weight(self) -> int:
        """About how many bytes this takes: the file, its decompressed blocks, ~1 KB per
        scanned entry and ten times the Avro bytes of each decoded one (its ``DataFile``, metric
        maps and all: 3.7 KB from 380 bytes on a table of 7 columns, growing with the
        columns as its record does)."""
        data = self.blocks.nbytes
        # a copy of the values: another thread may be adding a scan of other field ids
        entries = sum(len(r) for scan in list(self.records.values()) for r in scan)
        return len(self.raw) + data + 1024 * entries + 10 * self.decoded_bytes


# Recently scanned manifests by path and length (manifests never change once written), up to
# 64 MB as weighed; and compiled scanners by writer schema and field ids.
_MANIFESTS: LruCache[tuple[str, int], _Scanned] = LruCache(64 * 1024 * 1024, _Scanned.weight)
_SCANNERS: LruCache[tuple[str, frozenset[int]], _Scanner] = LruCache(256)


def _scanner(blocks: AvroBlocks, decoder: EntryDecoder, field_ids: frozenset[int]) -> _Scanner:
    key = (blocks.metadata.get("avro.schema", ""), field_ids)
    return _SCANNERS.get_or_compute(key, lambda: _Scanner(blocks, decoder, field_ids))


def _kept(key: tuple[str, int] | None) -> _Scanned | None:
    return None if key is None else _MANIFESTS.get(key)


def clear_cache() -> None:
    """Forget the manifests and scanners kept by :func:`read_manifest_pruned`."""
    _MANIFESTS.clear()
    _SCANNERS.clear()


def read_manifest_pruned(
    input_file: Any,
    manifest: ManifestFile | None,
    field_ids: Collection[int],
    might_match: Callable[[Any], bool],
    *,
    spec: PartitionSpec | None = None,
    live_only: bool = True,
    added_only: bool = False,
    fetched: FetchedManifest | None = None,
) -> list[ManifestEntry]:
    """The entries of a manifest whose data file ``might_match``, as
    ``[e for e in read_manifest(...) if might_match(e.data_file)]`` (live entries only with
    ``live_only``, entries with status ADDED only with ``added_only``) but without building
    the others.

    ``might_match`` is given an :class:`EntryStats` (or, on the fallback path, the full
    :class:`DataFile`) and may only read its record count and the metrics of ``field_ids``.
    With ``manifest``, the scanned manifest and the entries decoded from it are kept in a
    process-wide cache (by path and length, up to 64 MB: decompressed blocks, scanned values
    and entries) so that planning it again skips scanning and decoding them;
    the file is still read, and the cached scan used only when its bytes are the same.
    ``fetched`` is the file when it was read already (:func:`fetch_manifest`).
    """
    location: str = input_file.location
    ids = frozenset(field_ids)
    key = None if manifest is None else (manifest.manifest_path, manifest.manifest_length)
    try:
        raw = input_file.read_bytes() if fetched is None else fetched.data
        scanned = _kept(key)
        if scanned is None or scanned.raw != raw:  # a file rewritten in place is not reused
            split = None if fetched is None else fetched.blocks
            blocks = read_avro_blocks(location, raw) if split is None else split
            scanned = _Scanned(raw, blocks, {})
        blocks = scanned.blocks
        decoder = EntryDecoder(location, blocks.writer_schema, blocks.metadata, manifest, spec)
        records = scanned.records.get(ids)
        if records is None:
            with _collector_paused():
                records = _scanner(blocks, decoder, ids).records(blocks)
            scanned.records[ids] = records
            if key is not None:
                _MANIFESTS.put(key, scanned)
        count_rows = (
            manifest is not None
            and manifest.content == ManifestContent.DATA
            and manifest.first_row_id is not None
        )
        candidates = _select(records, blocks, ids, might_match, live_only, count_rows, added_only)
        known = scanned.decoded_bytes
        entries = _decode(blocks, decoder, candidates, scanned, spec)
        if key is not None and scanned.decoded_bytes != known:
            _MANIFESTS.put(key, scanned)  # weighed again, with the entries decoded now
        return entries
    except _FALLBACK_ERRORS:
        entries = read_manifest(input_file, manifest, spec=spec)
        return [
            e
            for e in entries
            if (e.is_live or not live_only)
            and (e.status == ManifestEntryStatus.ADDED or not added_only)
            and might_match(e.data_file)
        ]


@dataclass(frozen=True)
class FetchedManifest:
    """A manifest's bytes, and its blocks decompressed (None when they were scanned already
    or do not split)."""

    data: bytes
    blocks: AvroBlocks | None


def fetch_manifest(input_file: Any, manifest: ManifestFile | None = None) -> FetchedManifest:
    """Reads a manifest and decompresses its blocks, unless the same bytes were scanned
    already (kept by :func:`read_manifest_pruned` under ``manifest``). On a pool thread this
    overlaps reading and decompressing (neither holds the GIL for long) with another thread
    scanning the manifests before it; :func:`read_manifest_pruned` then takes it as
    ``fetched`` (and reports any error in the file)."""
    data: bytes = input_file.read_bytes()
    key = None if manifest is None else (manifest.manifest_path, manifest.manifest_length)
    scanned = _kept(key)
    if scanned is not None and scanned.raw == data:
        return FetchedManifest(data, None)
    try:
        blocks: AvroBlocks | None = read_avro_blocks(input_file.location, data)
    except Exception:  # read_manifest_pruned splits it again and reports the error
        blocks = None
    return FetchedManifest(data, blocks)


def _decode(
    blocks: AvroBlocks,
    decoder: EntryDecoder,
    candidates: list[_Candidate],
    scanned: _Scanned,
    spec: PartitionSpec | None,
) -> list[ManifestEntry]:
    """The candidates' entries: those decoded before as kept in ``scanned``, the others
    decoded by fastavro (their records only, in a container of one block holding them, not
    the whole blocks they are in) and kept there."""
    if not candidates:
        return []
    inherits = (decoder.manifest, spec)  # all that entries inherit, and how they decode
    decoded = scanned.entries
    keys = [(inherits, c.block, c.start) for c in candidates]
    missing = [c for c, k in zip(candidates, keys, strict=True) if k not in decoded]
    if missing:
        for c, entry in zip(missing, _decode_records(blocks, decoder, missing), strict=True):
            decoded[(inherits, c.block, c.start)] = entry
        scanned.decoded_bytes += sum(c.end - c.start for c in missing)
    return [decoded[k] for k in keys]


def _decode_records(
    blocks: AvroBlocks, decoder: EntryDecoder, candidates: list[_Candidate]
) -> list[ManifestEntry]:
    chosen = [blocks.blocks[c.block].data[c.start : c.end] for c in candidates]
    try:
        reader = fastavro.reader(io.BytesIO(blocks.records_container(chosen)))
        records = cast(list[dict[str, Any]], list(reader))
    except Exception as exc:
        raise InvalidAvroFileError(f"Cannot read Avro file {blocks.location}: {exc}") from exc
    if len(records) != len(candidates):
        raise InvalidAvroFileError(f"Cannot read Avro file {blocks.location}: records differ")
    start_row_id = None if decoder.manifest is None else decoder.manifest.first_row_id
    out = []
    for c, record in zip(candidates, records, strict=True):
        inherit = decoder.inheritance()
        if inherit.next_row_id is not None and start_row_id is not None:
            inherit.next_row_id = start_row_id + c.rows_before
        out.append(inherit.apply(decoder.entry(record)))
    return out
