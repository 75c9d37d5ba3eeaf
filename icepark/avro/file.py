"""Avro object container files: writing records and reading them back, with clear errors.

Thin wrappers over fastavro that

* write to an :class:`~icepark.io.fileio.OutputFile` incrementally and report the file length;
* read from an :class:`~icepark.io.fileio.InputFile` with logical types left raw (see
  :mod:`icepark.avro.schema`), returning the writer schema and the key/value metadata too;
* turn every decoding problem (not an Avro file, truncated, unknown codec, corrupt block) into
  :class:`~icepark.errors.InvalidAvroFileError` naming the file.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast

import fastavro
import fastavro.write
from zlib_ng import zlib_ng

from icepark.avro.codecs import decompress_block, file_budget
from icepark.avro.schema import strip_logical_types
from icepark.errors import IceparkError, InvalidAvroFileError, ValidationError

__all__ = [
    "AvroBlockWriter",
    "AvroContents",
    "AvroFileWriter",
    "normalize_codec",
    "read_avro_file",
    "read_avro_metadata",
    "read_long",
    "write_long",
    "FASTAVRO_CODECS",
    "WRITE_CODECS",
]

_CODEC_ALIASES = {
    "null": "null",
    "none": "null",
    "uncompressed": "null",
    "deflate": "deflate",
    "gzip": "deflate",
    "zstandard": "zstandard",
    "zstd": "zstandard",
    "snappy": "snappy",
}


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a missing parent package
        return False


def _available_codecs() -> frozenset[str]:
    codecs = {"null", "deflate"}
    # fastavro's own optional codecs, usable only with the libraries it looks for
    if _has_module("backports.zstd") or _has_module("compression.zstd"):
        codecs.add("zstandard")
    if _has_module("cramjam"):
        codecs.add("snappy")
    return frozenset(codecs)


FASTAVRO_CODECS = _available_codecs()
"""Codecs fastavro handles here: ``null`` and ``deflate`` always, ``zstandard`` and
``snappy`` when the libraries fastavro uses for them are installed."""

WRITE_CODECS = frozenset({"null", "deflate", "zstandard", "snappy"})
"""Codecs usable for writing: those fastavro lacks are compressed by :class:`AvroBlockWriter`
(``zstandard`` through the ``zstandard`` package, ``snappy`` through pyarrow). Reading handles
them all too."""


def normalize_codec(codec: str) -> str:
    """The Avro codec name for ``codec`` (Java's ``gzip`` is deflate, ``zstd`` zstandard)."""
    name = _CODEC_ALIASES.get(codec.strip().lower())
    if name is None or name not in WRITE_CODECS:
        raise ValidationError(
            f"Unsupported Avro codec {codec!r}: use one of {sorted(WRITE_CODECS)}"
        )
    return name


class _CountingStream(io.RawIOBase):
    """Counts the bytes fastavro writes through to the real stream."""

    def __init__(self, target: Any) -> None:
        super().__init__()
        self._target = target
        self.count = 0

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False

    def write(self, data: Any, /) -> int:
        view = memoryview(data).cast("B")
        self._target.write(view)
        self.count += len(view)
        return len(view)

    def flush(self) -> None:
        flush = getattr(self._target, "flush", None)
        if flush is not None:
            flush()


_BLOCK_BYTES = 64_000  # Avro's default sync interval


@dataclass(frozen=True)
class _EncodedBlock:
    """Records already encoded, in the shape ``fastavro``'s ``Writer.write_block`` takes
    (that of its ``block_reader``'s blocks)."""

    num_records: int
    bytes_: io.BytesIO


class AvroFileWriter:
    """Writes records to a new Avro file; ``close()`` publishes it and returns its length.

    Used as a context manager it closes on a normal exit and aborts (writes nothing) when the
    block raises.
    """

    def __init__(
        self,
        output_file: Any,
        avro_schema: dict[str, Any],
        metadata: Mapping[str, str],
        codec: str = "deflate",
        overwrite: bool = False,
    ) -> None:
        self.location: str = output_file.location
        codec_name = normalize_codec(codec)
        parsed = fastavro.parse_schema(avro_schema)
        self._closed = False
        self.length: int | None = None
        self._blocks: AvroBlockWriter | None = None
        self._encoded: list[bytes] = []  # records given encoded, not yet in a block
        self._encoded_count = 0
        self._encoded_size = 0
        if codec_name not in FASTAVRO_CODECS:  # records encoded by fastavro, blocks by us
            self._parsed = parsed
            self._buffer = io.BytesIO()
            self._count = 0
            self._blocks = AvroBlockWriter(
                output_file, avro_schema, codec_name, None, metadata, overwrite=overwrite
            )
            return
        self._stream = output_file.create(overwrite=overwrite)
        self._counter = _CountingStream(self._stream)
        try:
            self._writer = fastavro.write.Writer(
                cast(Any, self._counter), parsed, codec=codec_name, metadata=dict(metadata)
            )
        except BaseException:
            self._abort_stream()
            raise

    def _write_block(self) -> None:
        assert self._blocks is not None
        if self._count:
            self._blocks.write_block(self._count, self._buffer.getvalue())
        self._buffer = io.BytesIO()
        self._count = 0

    def write_encoded(self, count: int, data: bytes) -> None:
        """Append ``count`` records already encoded in the file's schema (``data``: their
        bytes one after another, as a block holds them), e.g. copied from a file of the same
        schema; they go into blocks of about Avro's usual size with the records around
        them, in order. Nothing checks that the bytes decode: that is the caller's part."""
        if self._closed:
            raise ValidationError(f"Cannot write to a closed Avro file: {self.location}")
        try:
            if self._blocks is not None:
                self._buffer.write(data)
                self._count += count
                if self._buffer.tell() >= _BLOCK_BYTES:
                    self._write_block()
                return
            self._encoded.append(data)
            self._encoded_count += count
            self._encoded_size += len(data)
            if self._encoded_size >= _BLOCK_BYTES:
                self._write_encoded()
        except BaseException:
            self.abort()
            raise

    def _write_encoded(self) -> None:
        """The records given encoded as a block of their own (after fastavro's pending
        records, which ``write_block`` writes first)."""
        if self._encoded_count:
            block = _EncodedBlock(self._encoded_count, io.BytesIO(b"".join(self._encoded)))
            self._writer.write_block(block)
        self._encoded = []
        self._encoded_count = self._encoded_size = 0

    def write(self, record: dict[str, Any]) -> None:
        """Append one record. A record that cannot be encoded aborts the whole file (a
        half-encoded record would corrupt it), so the writer cannot be used after that."""
        if self._closed:
            raise ValidationError(f"Cannot write to a closed Avro file: {self.location}")
        try:
            if self._encoded:
                self._write_encoded()
            if self._blocks is not None:
                fastavro.schemaless_writer(self._buffer, self._parsed, record)
                self._count += 1
                if self._buffer.tell() >= _BLOCK_BYTES:
                    self._write_block()
            else:
                self._writer.write(record)
        except BaseException as exc:
            self.abort()
            if isinstance(exc, IceparkError) or not isinstance(exc, Exception):
                raise
            raise ValidationError(
                f"Cannot write record to {self.location} (nothing was written): {exc}"
            ) from exc

    def close(self) -> int:
        """Flush, publish the file and return its length in bytes."""
        if self._closed:
            assert self.length is not None
            return self.length
        if self._blocks is not None:
            try:
                self._write_block()
                self.length = self._blocks.close()
            except BaseException:
                self.abort()
                raise
            self._closed = True
            return self.length
        try:
            self._write_encoded()
            self._writer.flush()
        except BaseException:
            self.abort()
            raise
        self._closed = True
        self._stream.close()
        self.length = self._counter.count
        return self.length

    def abort(self) -> None:
        """Throw away what was written; nothing appears at the location."""
        if self._closed:
            return
        self._closed = True
        if self._blocks is not None:
            self._blocks.abort()
        else:
            self._abort_stream()

    def _abort_stream(self) -> None:
        abort = getattr(self._stream, "abort", None)
        if abort is not None:
            abort()
        else:  # a plain stream: nothing better than closing it
            self._stream.close()

    def __enter__(self) -> AvroFileWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


@dataclass(frozen=True)
class AvroContents:
    """A whole Avro file: writer schema, key/value metadata and the raw records."""

    location: str
    writer_schema: Any
    metadata: dict[str, str]
    records: list[dict[str, Any]]


def _problem(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, EOFError | StopIteration) or not text:
        return "the file is truncated or empty" + (f" ({text})" if text else "")
    if "codec" in text.lower():
        return f"unsupported compression codec ({text})"
    return f"the file is truncated or corrupt ({type(exc).__name__}: {text})"


def _invalid(location: str, exc: BaseException) -> InvalidAvroFileError:
    return InvalidAvroFileError(f"Cannot read Avro file {location}: {_problem(exc)}")


def _metadata_strings(raw: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, bytes | bytearray):
            out[key] = bytes(value).decode("utf-8", errors="replace")
        else:
            out[key] = str(value)
    return out


_HEADER_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "org.apache.avro.file.Header",
        "fields": [
            {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
            {"name": "meta", "type": {"type": "map", "values": "bytes"}},
            {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
        ],
    }
)
_MAGIC = b"Obj\x01"


_READ_CHUNK = 1 << 20


def read_exactly(stream: Any, size: int) -> bytes:
    """``size`` bytes of ``stream`` (fewer at its end), read a chunk at a time: a length
    taken from a corrupt file then costs no more memory than the file holds (a stream's
    ``read(n)`` may allocate ``n`` bytes before it finds the end)."""
    if size <= _READ_CHUNK:
        return bytes(stream.read(size))
    parts = []
    while size > 0:
        part = stream.read(min(size, _READ_CHUNK))
        if not part:
            break
        parts.append(bytes(part))
        size -= len(part)
    return b"".join(parts)


class _ChunkedReads:
    """A stream whose reads go through :func:`read_exactly` (for fastavro, which reads the
    lengths the header states)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def read(self, n: int = -1) -> bytes:
        return bytes(self._stream.read()) if n is None or n < 0 else read_exactly(self._stream, n)


def _read_header(location: str, stream: Any) -> dict[str, Any]:
    chunked: Any = _ChunkedReads(stream)
    try:
        header = cast(dict[str, Any], fastavro.schemaless_reader(chunked, _HEADER_SCHEMA, None))
    except Exception as exc:
        raise InvalidAvroFileError(
            f"Cannot read Avro file {location}: not an Avro file or truncated header ({exc})"
        ) from exc
    if not isinstance(header, dict) or header.get("magic") != _MAGIC:
        raise InvalidAvroFileError(
            f"Cannot read Avro file {location}: not an Avro file (bad magic)"
        )
    return header


def _writer_schema(location: str, meta: Mapping[str, bytes]) -> Any:
    raw = meta.get("avro.schema")
    if raw is None:
        raise InvalidAvroFileError(f"Cannot read Avro file {location}: no avro.schema in header")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise InvalidAvroFileError(
            f"Cannot read Avro file {location}: bad avro.schema ({exc})"
        ) from exc


def read_long(data: bytes, pos: int) -> tuple[int, int]:
    """The Avro (zig-zag varint) int or long at ``pos`` and the position after it. A varint
    longer than a long's 10 bytes is corruption (``ValueError``; an unbounded one would build
    an ever larger int, quadratic in its length); past the end is an ``IndexError``."""
    b = data[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    n = b & 0x7F
    shift = 7
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return (n >> 1) ^ -(n & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("an Avro long longer than 10 bytes")


def write_long(value: int) -> bytes:
    """The Avro encoding of an int or long (zig-zag, then a varint)."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _decompress_blocks(location: str, blocks: bytes, sync: bytes, codec: str) -> bytes:
    """The blocks of a compressed file, decompressed (within :func:`file_budget` of the
    file's size), for fastavro to read as a file with codec ``null``."""
    out = bytearray()
    budget = file_budget(len(blocks))
    pos = 0
    try:
        while pos < len(blocks):
            count, pos = read_long(blocks, pos)
            size, pos = read_long(blocks, pos)
            if size < 0 or pos + size + len(sync) > len(blocks):
                raise EOFError("block runs past the end of the file")
            raw = decompress_block(codec, blocks[pos : pos + size], budget)
            budget -= len(raw)
            pos += size
            if blocks[pos : pos + len(sync)] != sync:
                raise ValueError("expected sync marker not found")
            pos += len(sync)
            out += write_long(count) + write_long(len(raw)) + raw + sync
    except (EOFError, ValueError, IndexError) as exc:
        raise _invalid(location, exc) from exc
    return bytes(out)


def read_avro_file(input_file: Any) -> AvroContents:
    """Read every record of an Avro file, with logical types left raw.

    fastavro applies logical types by the *writer* schema, so the header is rewritten with the
    logical types stripped before the blocks are decoded (the blocks do not change).
    """
    location: str = input_file.location
    data = input_file.read_bytes()
    stream = io.BytesIO(data)
    header = _read_header(location, stream)
    writer_schema = _writer_schema(location, header["meta"])
    meta = dict(header["meta"])
    meta["avro.schema"] = json.dumps(strip_logical_types(writer_schema)).encode("utf-8")
    blocks = data[stream.tell() :]
    codec = bytes(meta.get("avro.codec", b"null")).decode("utf-8", errors="replace")
    if codec != "null":  # decompressed here, within bounds (fastavro's inflate has none)
        blocks = _decompress_blocks(location, blocks, header["sync"], codec)
        meta["avro.codec"] = b"null"
    new_header = io.BytesIO()
    fastavro.schemaless_writer(new_header, _HEADER_SCHEMA, {**header, "meta": meta})
    rewritten = new_header.getvalue() + blocks
    try:
        records = cast(list[dict[str, Any]], list(fastavro.reader(io.BytesIO(rewritten))))
    except IceparkError:
        raise
    except Exception as exc:
        raise _invalid(location, exc) from exc
    return AvroContents(location, writer_schema, _metadata_strings(header["meta"]), records)


def read_avro_metadata(input_file: Any) -> dict[str, str]:
    """The key/value metadata of an Avro file's header (``avro.schema``, ``avro.codec``, ...)."""
    location: str = input_file.location
    with input_file.open() as stream:
        header = _read_header(location, stream)
    return _metadata_strings(header["meta"])


class AvroBlockWriter:
    """Writes an Avro container file from blocks of records already encoded (see
    :mod:`icepark.arrow.avro_writer`): the header (``avro.schema``, ``avro.codec`` and the
    given metadata, a random sync marker), then each block compressed with ``codec``
    (``null``, ``deflate``, ``zstandard`` or ``snappy``) at ``level`` (None: the codec's
    library default). :attr:`position` is
    the number of bytes written so far; ``close()`` publishes the file, ``abort()`` leaves
    nothing behind."""

    def __init__(
        self,
        output_file: Any,
        avro_schema: Mapping[str, Any],
        codec: str,
        level: int | None,
        metadata: Mapping[str, str],
        *,
        overwrite: bool = False,
    ) -> None:
        self.location: str = output_file.location
        if codec not in WRITE_CODECS:
            raise ValidationError(f"Unsupported Avro codec {codec!r}")
        self._codec = codec
        self._level = level
        self._sync = os.urandom(16)
        meta = {key: value.encode("utf-8") for key, value in metadata.items()}
        meta["avro.schema"] = json.dumps(avro_schema).encode("utf-8")
        meta["avro.codec"] = codec.encode("utf-8")
        header = io.BytesIO()
        fastavro.schemaless_writer(
            header, _HEADER_SCHEMA, {"magic": _MAGIC, "meta": meta, "sync": self._sync}
        )
        self._stream = output_file.create(overwrite=overwrite)
        self._closed = False
        self.position = 0
        try:
            self._write(header.getvalue())
        except BaseException:
            self.abort()
            raise

    def _write(self, data: bytes) -> None:
        self._stream.write(data)
        self.position += len(data)

    def _compress(self, data: bytes) -> bytes:
        if self._codec == "deflate":
            level = -1 if self._level is None else self._level
            packer = zlib_ng.compressobj(level, zlib_ng.DEFLATED, -15)
            return packer.compress(data) + packer.flush()
        if self._codec == "zstandard":
            import zstandard

            level = 3 if self._level is None else self._level
            return bytes(zstandard.ZstdCompressor(level=level).compress(data))
        if self._codec == "snappy":
            import pyarrow as pa

            packed = pa.compress(data, codec="snappy", asbytes=True)
            return bytes(packed) + zlib.crc32(data).to_bytes(4, "big")
        return data

    def write_block(self, count: int, data: bytes) -> None:
        """Append a block of ``count`` encoded records."""
        if self._closed:
            raise ValidationError(f"Cannot write to a closed Avro file: {self.location}")
        payload = self._compress(data)
        self._write(write_long(count) + write_long(len(payload)) + payload + self._sync)

    def close(self) -> int:
        """Publish the file; its length in bytes."""
        if not self._closed:
            self._closed = True
            self._stream.close()
        return self.position

    def abort(self) -> None:
        """Throw away what was written; nothing appears at the location."""
        if self._closed:
            return
        self._closed = True
        abort = getattr(self._stream, "abort", None)
        if abort is not None:
            abort()
        else:
            self._stream.close()
