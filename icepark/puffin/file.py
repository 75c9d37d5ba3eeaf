"""Puffin files (format/puffin-spec.md): blobs followed by a JSON footer.

Layout: ``Magic Blob1 ... BlobN Footer`` with ``Footer = Magic FooterPayload
FooterPayloadSize Flags Magic``; ``Magic`` is ``PFA1``, ``FooterPayloadSize`` a 4-byte
little-endian length and ``Flags`` four bytes of bit flags (byte 0 bit 0: the footer payload
is LZ4-compressed; other bits are reserved and ignored on read). The footer payload is UTF-8
JSON ``{"blobs": [...], "properties": {...}}``.

Blob compression: ``zstd`` (through the ``zstandard`` package) and none. LZ4 (footer or
blob) is refused with a clear error: no LZ4 frame codec is a dependency of icepark.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icepark.avro.codecs import decompress_block, file_budget
from icepark.errors import UnsupportedOperationError, ValidationError
from icepark.io.fileio import FileIO, InputFile, OutputFile

__all__ = [
    "MAGIC",
    "DELETION_VECTOR_V1",
    "BlobMetadata",
    "PuffinFile",
    "PuffinWriter",
    "read_puffin",
    "read_puffin_blob",
    "parse_footer",
    "write_puffin",
]

MAGIC = b"PFA1"
DELETION_VECTOR_V1 = "deletion-vector-v1"
_FOOTER_STRUCT_LENGTH = 12  # payload size (4) + flags (4) + magic (4)
_FLAG_COMPRESSED = 0x01
_CODECS = ("zstd", "lz4")
_TAIL_READ = 64 * 1024


@dataclass(frozen=True)
class BlobMetadata:
    """One blob as the footer describes it."""

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "fields": list(self.fields),
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "offset": self.offset,
            "length": self.length,
        }
        if self.compression_codec is not None:
            out["compression-codec"] = self.compression_codec
        if self.properties:
            out["properties"] = dict(self.properties)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], location: str) -> BlobMetadata:
        try:
            return cls(
                type=str(obj["type"]),
                fields=tuple(int(f) for f in obj["fields"]),
                snapshot_id=int(obj["snapshot-id"]),
                sequence_number=int(obj["sequence-number"]),
                offset=int(obj["offset"]),
                length=int(obj["length"]),
                compression_codec=obj.get("compression-codec"),
                properties={str(k): str(v) for k, v in (obj.get("properties") or {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValidationError(
                f"Invalid Puffin blob metadata in {location}: {obj!r} ({e})"[:1000]
            ) from None


@dataclass(frozen=True)
class PuffinFile:
    """A Puffin file's footer: its blobs' metadata and the file properties."""

    location: str
    blobs: tuple[BlobMetadata, ...]
    properties: dict[str, str]
    footer_size: int


def _compress(codec: str | None, data: bytes) -> bytes:
    if codec is None:
        return data
    if codec == "zstd":
        import zstandard

        return bytes(zstandard.ZstdCompressor().compress(data))
    if codec == "lz4":
        raise UnsupportedOperationError("Puffin lz4 compression is not supported (no LZ4 codec)")
    raise ValidationError(f"Unknown Puffin compression codec: {codec!r}")


def _decompress(codec: str | None, data: bytes, location: str) -> bytes:
    if codec is None:
        return data
    if codec == "zstd":
        try:  # bounded, as Avro blocks are: a few bytes may claim gigabytes
            return decompress_block("zstandard", data, file_budget(len(data)))
        except ValueError as e:
            raise ValidationError(f"Cannot decompress zstd blob in {location}: {e}") from None
    if codec == "lz4":
        raise UnsupportedOperationError(
            f"Cannot read {location}: Puffin lz4 compression is not supported (no LZ4 codec)"
        )
    raise ValidationError(f"Unknown Puffin compression codec {codec!r} in {location}")


def parse_footer(data: bytes, location: str) -> PuffinFile:
    """The footer of the Puffin file whose bytes (or whose tail holding the footer) are ``data``."""
    n = len(data)
    if n < len(MAGIC) + _FOOTER_STRUCT_LENGTH or data[-4:] != MAGIC:
        raise ValidationError(f"Not a Puffin file (bad trailing magic): {location}")
    payload_size, flags = struct.unpack_from("<iI", data, n - _FOOTER_STRUCT_LENGTH)
    footer_start = n - _FOOTER_STRUCT_LENGTH - payload_size - len(MAGIC)
    if payload_size < 0 or footer_start < 0:
        raise ValidationError(f"Invalid Puffin footer payload size {payload_size} in {location}")
    if data[footer_start : footer_start + 4] != MAGIC:
        raise ValidationError(f"Not a Puffin file (bad footer magic): {location}")
    payload = data[footer_start + 4 : footer_start + 4 + payload_size]
    if flags & _FLAG_COMPRESSED:
        raise UnsupportedOperationError(
            f"Cannot read {location}: its footer is LZ4-compressed, which is not supported"
        )
    try:
        obj = json.loads(payload.decode("utf-8"))
        blobs = tuple(BlobMetadata.from_json(b, location) for b in obj["blobs"])
        props = {str(k): str(v) for k, v in (obj.get("properties") or {}).items()}
    except (
        UnicodeDecodeError,
        json.JSONDecodeError,
        KeyError,
        TypeError,
        AttributeError,  # "properties" not an object
        RecursionError,  # JSON nested too deeply
    ) as e:
        raise ValidationError(f"Invalid Puffin footer in {location}: {e}") from None
    return PuffinFile(location, blobs, props, payload_size + _FOOTER_STRUCT_LENGTH + len(MAGIC))


def read_puffin(input_file: InputFile) -> PuffinFile:
    """Read and check the footer (and the leading magic) of a Puffin file; reads the head
    and the tail of the file only."""
    location = input_file.location
    size = input_file.length()
    if size < 2 * len(MAGIC) + _FOOTER_STRUCT_LENGTH:
        raise ValidationError(f"Not a Puffin file (too short: {size} bytes): {location}")
    with input_file.open() as f:
        head = f.read(4)
        if head != MAGIC:
            raise ValidationError(f"Not a Puffin file (bad leading magic): {location}")
        want = min(size - 4, _TAIL_READ)
        f.seek(size - want)
        tail = f.read(want)
        if len(tail) >= _FOOTER_STRUCT_LENGTH:
            (payload_size,) = struct.unpack_from("<i", tail, len(tail) - _FOOTER_STRUCT_LENGTH)
            need = payload_size + _FOOTER_STRUCT_LENGTH + len(MAGIC)
            if len(tail) < need <= size - 4:
                f.seek(size - need)
                tail = f.read(need)
    return parse_footer(tail, location)


def read_puffin_blob(
    input_file: InputFile, offset: int, length: int, codec: str | None = None
) -> bytes:
    """The (decompressed) bytes of the blob at ``offset``/``length`` of a Puffin file."""
    if offset < 0 or length < 0 or offset + length > input_file.length():
        # checked before reading: a stream's read(length) allocates length bytes first
        raise ValidationError(
            f"Invalid Puffin blob in {input_file.location}: {length} bytes at {offset} lie "
            "outside the file"
        )
    with input_file.open() as f:
        f.seek(offset)
        data = f.read(length)
    if len(data) != length:
        raise ValidationError(
            f"Truncated Puffin blob in {input_file.location}: wanted {length} bytes at {offset}"
        )
    return _decompress(codec, data, input_file.location)


class PuffinWriter:
    """Build a Puffin file in memory, then write it: ``add(...)`` blobs, ``finish(output)``."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self._parts: list[bytes] = [MAGIC]
        self._size = len(MAGIC)
        self._blobs: list[BlobMetadata] = []
        self._properties = dict(properties or {})

    def add(
        self,
        blob_type: str,
        data: bytes,
        *,
        fields: Sequence[int] = (),
        snapshot_id: int = -1,
        sequence_number: int = -1,
        compression_codec: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> BlobMetadata:
        """Append one blob; returns its metadata (offset and length in the file)."""
        if compression_codec is not None and compression_codec not in _CODECS:
            raise ValidationError(f"Unknown Puffin compression codec: {compression_codec!r}")
        stored = _compress(compression_codec, data)
        meta = BlobMetadata(
            blob_type,
            tuple(fields),
            snapshot_id,
            sequence_number,
            self._size,
            len(stored),
            compression_codec,
            dict(properties or {}),
        )
        self._parts.append(stored)
        self._size += len(stored)
        self._blobs.append(meta)
        return meta

    @property
    def blobs(self) -> tuple[BlobMetadata, ...]:
        return tuple(self._blobs)

    def to_bytes(self) -> bytes:
        footer: dict[str, Any] = {"blobs": [b.to_json() for b in self._blobs]}
        if self._properties:
            footer["properties"] = self._properties
        payload = json.dumps(footer, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        tail = MAGIC + payload + struct.pack("<iI", len(payload), 0) + MAGIC
        return b"".join([*self._parts, tail])

    def finish(self, output: OutputFile) -> int:
        """Write the file; returns its size in bytes."""
        data = self.to_bytes()
        output.write_bytes(data)
        return len(data)


def write_puffin(io: FileIO, location: str, writer: PuffinWriter) -> int:
    """Write ``writer``'s file at ``location``; returns its size."""
    return writer.finish(io.new_output(location))
