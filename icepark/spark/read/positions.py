"""Dropping the rows that position deletes and deletion vectors delete, on Spark's native
Parquet path.

The driver knows every deleted position (it read the delete files, each once). Two ways to
drop those rows from a scan of the data files:

**A bitmap filter** (:func:`bitmap_filter`), used when it is small enough. Each data file
with deletes gets a slot in a few small array literals, found from the row's
``_metadata.file_size`` (a shift, an xor and a mask, chosen so that those files' slots
differ) and confirmed by ``_metadata.file_size`` and ``_metadata.file_path``. The slot says
where the file's words start in one array of longs, a bit a row from the word of the first
deleted position to that of the last. A row is dropped when its ``_metadata.row_index`` bit
is set. It is all arithmetic and array lookups in Spark's generated code; a row of a file
without deletes costs a few bit operations and one lookup.

**A broadcast anti join**, otherwise. The key is one long, ``xxhash64(file path) ^ row
index``, when it is provably unique for the files read; else the pair (file path, row index).

The bitmap needs each file's size in its manifest to be its size on storage (the spec says
so). That is checked for the files with deletes before it is used; where it does not hold,
the join is used, which matches by path.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from icepark.io import FileIO
from icepark.planning.planner import FileScanTask
from icepark.spark.paths import spark_reported_path

__all__ = [
    "DeletedPositions",
    "MAX_BITMAP_BYTES",
    "bitmap_filter",
    "drop_deleted",
    "slot_of",
]

_log = logging.getLogger(__name__)

DELETED_PATH, DELETED_POS = "__icepark_fp__", "__icepark_pos__"  # file path, row index
# The bitmap filter's limits: its bytes (a bit a row, from the first to the last deleted
# position of each file) and the number of files with deletes. Beyond either, the anti join
# is used.
MAX_BITMAP_BYTES = 2 << 20  # ~5 MB of JSON in the plan; 16M rows spanned
MAX_BITMAP_FILES = 256
_STAT_THREADS = 16  # sizes are looked up in parallel (one request each on object stores)


@dataclass(frozen=True)
class DeletedPositions:
    """Positions deleted by position deletes and DVs: one sorted int64 array per data file,
    by the file's path as Spark reports it (``_metadata.file_path``)."""

    positions: dict[str, np.ndarray]

    @property
    def count(self) -> int:
        return sum(len(p) for p in self.positions.values())

    def pairs(self) -> pa.Table:
        """(path, position) rows."""
        paths = list(self.positions)
        counts = [len(p) for p in self.positions.values()]
        indices = pa.array(np.repeat(np.arange(len(paths), dtype=np.int32), counts))
        path_column = pa.DictionaryArray.from_arrays(indices, pa.array(paths, pa.string()))
        return pa.table(
            {
                DELETED_PATH: path_column.cast(pa.string()),
                DELETED_POS: pa.array(np.concatenate(list(self.positions.values())), pa.int64()),
            }
        )


def drop_deleted(
    spark: SparkSession,
    df: DataFrame,
    deleted: DeletedPositions,
    tasks: Sequence[FileScanTask],
    io: FileIO,
) -> DataFrame:
    """``df`` (a scan of the tasks' files that still shows ``_metadata``) without the
    deleted rows."""
    if len(deleted.positions) <= MAX_BITMAP_FILES:
        sizes = _checked_sizes(deleted, tasks, io)
        condition = bitmap_filter(deleted, sizes) if sizes is not None else None
        if condition is not None:
            return df.filter(F.expr(condition))
    return _anti_join(spark, df, deleted, tasks)


def _checked_sizes(
    deleted: DeletedPositions, tasks: Sequence[FileScanTask], io: FileIO
) -> dict[str, int] | None:
    """The manifest size of each file with deletes, by Spark path; None when one differs
    from the file's size on storage (the bitmap filter finds files by size)."""
    files = {spark_reported_path(t.file.file_path): t.file for t in tasks}
    files = {path: f for path, f in files.items() if path in deleted.positions}
    with ThreadPoolExecutor(max_workers=_STAT_THREADS) as pool:
        lengths = pool.map(lambda f: io.new_input(f.file_path).length(), files.values())
    for f, actual in zip(files.values(), lengths):
        if actual != f.file_size_in_bytes:
            _log.warning(
                "%s is %d bytes but its manifest says %d; deletes are applied by a join",
                f.file_path,
                actual,
                f.file_size_in_bytes,
            )
            return None
    return {path: f.file_size_in_bytes for path, f in files.items()}


_MAX_SLOT_BITS = 16


def slot_of(size: int, shift: int, bits: int) -> int:
    """A file's slot: ``(size ^ (size >> shift)) & (2^bits - 1)`` (cheaper than a modulo in
    Spark's generated code, where it is computed several times a row)."""
    return (size ^ (size >> shift)) & ((1 << bits) - 1)


def _slot_hash(sizes: np.ndarray) -> tuple[int, int] | None:
    """The smallest ``bits`` and a ``shift`` for which :func:`slot_of` gives the sizes
    different slots; None when there is none (equal sizes, or more than 2^16 slots needed)."""
    n = len(sizes)
    if len(np.unique(sizes)) < n:
        return None
    shifts = np.arange(1, 49, dtype=np.int64)
    mixed = sizes[None, :] ^ (sizes[None, :] >> shifts[:, None])
    for bits in range(max(n - 1, 1).bit_length(), _MAX_SLOT_BITS + 1):
        slots = np.sort(mixed & ((1 << bits) - 1), axis=1)
        ok = np.all(slots[:, 1:] != slots[:, :-1], axis=1)
        if ok.any():
            return int(shifts[int(np.argmax(ok))]), bits
    return None


def _array(values: list[int] | list[str], element: str) -> str:
    """An array literal in Spark SQL, which Spark's optimizer folds into a constant: numbers
    as JSON; strings as hex-encoded JSON (nothing to escape in any string literal mode)."""
    text = json.dumps(values, separators=(",", ":"))
    if element == "string":
        return f"from_json(decode(unhex('{text.encode().hex()}'), 'UTF-8'), 'array<string>')"
    return f"from_json('{text}', 'array<{element}>')"


def bitmap_filter(deleted: DeletedPositions, sizes: dict[str, int]) -> str | None:
    """The bitmap filter for ``deleted`` (``sizes``: the manifest size of each file with
    deletes): a Spark SQL condition over ``_metadata``, true for the rows kept. None when
    the bitmap would be too large or no slot hash separates the sizes."""
    paths = list(deleted.positions)
    if len(paths) > MAX_BITMAP_FILES:
        return None
    if any(deleted.positions[p][0] < 0 for p in paths):  # no row has such a position
        return None
    firsts = [int(deleted.positions[p][0]) >> 6 for p in paths]
    lasts = [int(deleted.positions[p][-1]) >> 6 for p in paths]
    if 8 * sum(b - a + 1 for a, b in zip(firsts, lasts)) > MAX_BITMAP_BYTES:
        return None
    found = _slot_hash(np.array([sizes[p] for p in paths], dtype=np.int64))
    if found is None:
        return None
    shift, bits = found
    m = 1 << bits
    # per slot: the file's size and path, its first word, its number of words, and where its
    # words start in the bitmap
    slot_size, slot_path = [-1] * m, [""] * m
    slot_first, slot_words, slot_base = [0] * m, [0] * m, [0] * m
    chunks: list[np.ndarray] = []
    base = 0
    for path, first, last in zip(paths, firsts, lasts):
        pos = deleted.positions[path]
        words = np.zeros(last - first + 1, dtype=np.uint64)
        np.bitwise_or.at(words, (pos >> 6) - first, np.uint64(1) << (pos & 63).astype(np.uint64))
        i = slot_of(sizes[path], shift, bits)
        slot_size[i], slot_path[i], slot_first[i] = sizes[path], path, first
        slot_words[i], slot_base[i] = len(words), base
        chunks.append(words.view(np.int64))
        base += len(words)
    bitmap = _array(np.concatenate(chunks).tolist(), "bigint")
    size = "_metadata.file_size"
    slot = f"cast(({size} ^ ({size} >> {shift})) & {m - 1} AS INT)"
    word = f"((_metadata.row_index >> 6) - get({_array(slot_first, 'bigint')}, {slot}))"
    at = f"cast(get({_array(slot_base, 'bigint')}, {slot}) + {word} AS INT)"
    # cheapest first: most rows fail the size or the bit; the path is compared last
    deleted_row = " AND ".join(
        [
            f"get({_array(slot_size, 'bigint')}, {slot}) = {size}",
            f"{word} >= 0 AND {word} < get({_array(slot_words, 'bigint')}, {slot})",
            f"shiftright(get({bitmap}, {at}), cast(_metadata.row_index & 63 AS INT)) & 1 = 1",
            f"get({_array(slot_path, 'string')}, {slot}) = _metadata.file_path",
        ]
    )
    return f"NOT coalesce({deleted_row}, false)"


def _blocks_differ(hashes: list[int], bits: int) -> bool:
    """Whether the hashes differ above their low ``bits`` bits."""
    blocks = np.array(hashes, dtype=np.int64) >> bits
    return len(np.unique(blocks)) == len(blocks)


def _anti_join(
    spark: SparkSession, df: DataFrame, deleted: DeletedPositions, tasks: Sequence[FileScanTask]
) -> DataFrame:
    """A broadcast anti join on one long key, ``xxhash64(file path) ^ row index``, when that
    key is provably unique for the files read (every row index of a file is below its record
    count, so each file's keys stay within a block of ``2^k`` values; the blocks of all files
    read must differ). The deleted rows' keys are then made on the driver, 8 bytes a row.
    Otherwise the join is on the pair (file path, row index), which is exact but slower."""
    added = [c for c in (DELETED_PATH, DELETED_POS) if c not in df.columns]
    meta = {DELETED_PATH: "_metadata.file_path", DELETED_POS: "_metadata.row_index"}
    df = df.withColumns({c: F.col(meta[c]) for c in added})
    counts: dict[str, int] = {}
    for t in tasks:
        counts[spark_reported_path(t.file.file_path)] = t.file.record_count
    bits = max(max(counts.values(), default=1), 1).bit_length()
    files = spark.createDataFrame(
        pa.table({"p": list(counts)}, schema=pa.schema([("p", pa.string())]))
    )
    found = files.select("p", F.xxhash64("p").alias("h")).toArrow()
    hashes = dict(zip(found.column("p").to_pylist(), found.column("h").to_pylist()))
    if not _blocks_differ(list(hashes.values()), bits):
        gone = F.broadcast(spark.createDataFrame(deleted.pairs()))
        return df.join(gone, [DELETED_PATH, DELETED_POS], "left_anti").drop(*added)
    key = "__icepark_deleted_key__"
    keys = np.concatenate(
        [np.int64(hashes[path]) ^ pos.astype(np.int64) for path, pos in deleted.positions.items()]
    )
    gone = F.broadcast(spark.createDataFrame(pa.table({key: pa.array(keys, pa.int64())})))
    probe = F.xxhash64(F.col(DELETED_PATH)).bitwiseXOR(F.col(DELETED_POS))
    return df.withColumn(key, probe).join(gone, [key], "left_anti").drop(key, *added)
