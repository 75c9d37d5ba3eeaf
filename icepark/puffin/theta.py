"""Apache DataSketches theta sketches as Iceberg's ``apache-datasketches-theta-v1`` blobs
(the NDV statistics Java's ``compute_table_stats`` writes).

Java feeds each non-null value's single-value serialization (Iceberg's binary form) to an
``UpdateSketch`` (nominal entries 4096, seed 9001) and stores the compact sketch. A theta
sketch is a K-minimum-values sketch: it keeps the smallest 63-bit hashes (MurmurHash3 x64-128
of the bytes with the seed, first half shifted right by one) below theta. The Python
``datasketches`` package cannot hash raw bytes (its ``update`` takes int, float or str and
re-encodes them), so the hashes are computed here with ``mmh3``, exactly as Java's
``UpdateSketch.update(ByteBuffer)``, kept as sorted arrays that merge by union
(:func:`merge_hashes`), and serialized in the compact sketch format (serial version 3,
ordered); ``datasketches`` then reads the bytes back as the check that they are a valid
sketch and gives the estimate.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import mmh3
import numpy as np

__all__ = [
    "THETA_BLOB_TYPE",
    "NDV_PROPERTY",
    "DEFAULT_SEED",
    "DEFAULT_NOMINAL_ENTRIES",
    "hash_values",
    "merge_hashes",
    "compact_sketch",
    "sketch_estimate",
]

THETA_BLOB_TYPE = "apache-datasketches-theta-v1"
NDV_PROPERTY = "ndv"
DEFAULT_SEED = 9001
DEFAULT_NOMINAL_ENTRIES = 4096

_MAX_THETA = (1 << 63) - 1
_SERIAL_VERSION = 3
_COMPACT_FAMILY = 3
_READ_ONLY, _EMPTY, _COMPACT, _ORDERED = 2, 4, 8, 16


def _seed_hash(seed: int) -> int:
    """DataSketches' 16-bit seed hash: MurmurHash3 of the seed as one long, seed 0."""
    h1, _ = mmh3.hash64(struct.pack("<q", seed), 0, signed=False)
    return int(h1) & 0xFFFF


def hash_values(values: Iterable[bytes], seed: int = DEFAULT_SEED) -> np.ndarray:
    """The theta hashes (63-bit, non-zero) of serialized values, sorted and distinct; empty
    values are skipped, as DataSketches rejects them."""
    hashes = [mmh3.hash64(v, seed, signed=False)[0] >> 1 for v in values if v]
    out = np.unique(np.array(hashes, dtype=np.uint64))
    return out[out != 0]


def merge_hashes(
    parts: Iterable[np.ndarray], nominal_entries: int = DEFAULT_NOMINAL_ENTRIES
) -> np.ndarray:
    """The union of hash sets, cut to the ``nominal_entries + 1`` smallest: enough for
    :func:`compact_sketch` (the extra one is the estimation-mode theta)."""
    arrays = [np.asarray(p, dtype=np.uint64) for p in parts]
    merged = np.unique(np.concatenate(arrays)) if arrays else np.array([], dtype=np.uint64)
    return merged[: nominal_entries + 1]


def compact_sketch(
    hashes: np.ndarray,
    nominal_entries: int = DEFAULT_NOMINAL_ENTRIES,
    seed: int = DEFAULT_SEED,
) -> bytes:
    """The serialized compact, ordered theta sketch of sorted distinct ``hashes``: all of
    them when there are at most ``nominal_entries`` (exact), otherwise the smallest
    ``nominal_entries`` with theta the next one (estimation)."""
    hashes = np.sort(np.asarray(hashes, dtype=np.uint64))
    seed_hash = _seed_hash(seed)
    flags = _READ_ONLY | _COMPACT | _ORDERED
    if len(hashes) == 0:
        return struct.pack(
            "<BBBBBBH", 1, _SERIAL_VERSION, _COMPACT_FAMILY, 0, 0, flags | _EMPTY, seed_hash
        )
    # bytes 3-4 (lg sizes) are unused in a compact sketch (zero); bytes 12-15 hold the
    # sampling probability p, 1.0 as Java's DataSketches writes it (the C++ library: zero)
    if len(hashes) <= nominal_entries:
        head = struct.pack(
            "<BBBBBBHif",
            2,
            _SERIAL_VERSION,
            _COMPACT_FAMILY,
            0,
            0,
            flags,
            seed_hash,
            len(hashes),
            1.0,
        )
        return head + hashes.astype("<u8").tobytes()
    kept, theta = hashes[:nominal_entries], int(hashes[nominal_entries])
    head = struct.pack(
        "<BBBBBBHifq",
        3,
        _SERIAL_VERSION,
        _COMPACT_FAMILY,
        0,
        0,
        flags,
        seed_hash,
        len(kept),
        1.0,
        theta,
    )
    return head + kept.astype("<u8").tobytes()


def sketch_estimate(data: bytes, seed: int = DEFAULT_SEED) -> float:
    """The distinct-count estimate of a serialized sketch, read by Apache DataSketches
    (which also checks the bytes: a malformed sketch raises there)."""
    from datasketches import compact_theta_sketch

    return float(compact_theta_sketch.deserialize(data, seed).get_estimate())
