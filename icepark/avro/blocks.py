"""Low-level access to an Avro object container file: its blocks, and stepping over values.

Decoding every record of a big file with fastavro builds a dict per record, per nested record
and per array item. A caller that needs only a few values of each record (a manifest reader
pruning entries by their metrics) can instead walk the decompressed blocks
(:func:`read_avro_blocks`) with a scanner (:mod:`icepark.avro.scanner`):
:func:`compile_skipper` turns a writer schema into a function that steps over one value
without building anything, and :func:`read_long` decodes the values that are needed. The
records that turn out to be interesting are then decoded by fastavro from a small container
file holding only their blocks (:meth:`AvroBlocks.container`).

Data files are read block by block instead (:func:`read_avro_header`, then
:func:`iter_avro_blocks`), with memory bounded by a block, and decoded column by column by
:mod:`icepark.avro.decoder`.

Anything unexpected (an unknown codec, a schema this scanner does not handle, a block that
does not decode) raises :class:`UnsupportedAvroError` or
:class:`~icepark.errors.InvalidAvroFileError`; callers fall back to the plain reader, which
produces the precise error for a corrupt file.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import fastavro

from icepark.avro.codecs import decompress_block, decompress_parts, file_budget
from icepark.avro.file import (
    _HEADER_SCHEMA,
    _metadata_strings,
    _read_header,
    _writer_schema,
    read_exactly,
    read_long,
    write_long,
)
from icepark.avro.schema import named_avro_types, strip_logical_types
from icepark.errors import InvalidAvroFileError

__all__ = [
    "AvroBlock",
    "AvroBlocks",
    "AvroHeader",
    "iter_avro_blocks",
    "read_avro_header",
    "parse_schema_text",
    "Skipper",
    "UnsupportedAvroError",
    "compile_skipper",
    "read_avro_blocks",
    "read_long",
    "resolve_named",
    "skip_varints",
    "varints",
    "VARINT",
]

Skipper = Callable[[bytes, int], int]
"""Steps over one encoded value: ``skip(data, pos)`` is the position after it."""


class UnsupportedAvroError(Exception):
    """The fast path cannot handle this file; use the plain reader instead."""


def _skip_varint(data: bytes, pos: int) -> int:
    while data[pos] & 0x80:
        pos += 1
    return pos + 1


def _skip_nothing(data: bytes, pos: int) -> int:
    return pos


def _skip_boolean(data: bytes, pos: int) -> int:
    return pos + 1


def _skip_float(data: bytes, pos: int) -> int:
    return pos + 4


def _skip_double(data: bytes, pos: int) -> int:
    return pos + 8


def _skip_bytes(data: bytes, pos: int) -> int:
    n, pos = read_long(data, pos)
    if n < 0:
        raise InvalidAvroFileError("negative length")
    return pos + n


_PRIMITIVE_SKIPPERS: dict[str, Skipper] = {
    "null": _skip_nothing,
    "boolean": _skip_boolean,
    "int": _skip_varint,
    "long": _skip_varint,
    "float": _skip_float,
    "double": _skip_double,
    "bytes": _skip_bytes,
    "string": _skip_bytes,
}


def resolve_named(avro: Any, named: Mapping[str, Any]) -> Any:
    """``avro`` with a reference to a named type (or a ``{"type": <schema>}`` wrapper)
    replaced by the definition."""
    while True:
        if isinstance(avro, str):
            if avro in _PRIMITIVE_SKIPPERS:
                return avro
            found = named.get(avro) or named.get(avro.rsplit(".", 1)[-1])
            if found is None:
                raise UnsupportedAvroError(f"unknown Avro type {avro!r}")
            return found
        if isinstance(avro, dict):
            kind = avro.get("type")
            if isinstance(kind, str) and (kind in _COMPLEX or kind in _PRIMITIVE_SKIPPERS):
                return avro
            avro = kind
            continue
        return avro


_COMPLEX = frozenset({"record", "fixed", "enum", "array", "map"})


VARINT = rb"[\x80-\xff]*+[\x00-\x7f]"
"""A regular expression matching one encoded int or long."""


@lru_cache(maxsize=256)
def varints(n: int) -> re.Pattern[bytes]:
    """A compiled pattern matching ``n`` encoded ints or longs in a row."""
    return re.compile(b"(?:" + VARINT + b"){%d}" % n)


def skip_varints(data: bytes, pos: int, n: int) -> int:
    """The position after ``n`` encoded ints or longs at ``pos``."""
    m = varints(n).match(data, pos)
    if m is None:
        raise InvalidAvroFileError("truncated block")
    return m.end()


def _varint_width(avro: Any, named: Mapping[str, Any]) -> int | None:
    """How many ints or longs a value of ``avro`` always is, or None when it is not only that."""
    avro = resolve_named(avro, named)
    kind = avro.get("type") if isinstance(avro, dict) else avro
    if kind in ("int", "long", "enum"):
        return 1
    if kind == "record" and isinstance(avro, dict):
        total = 0
        for f in avro.get("fields", []):
            width = _varint_width(f["type"], named)
            if width is None:
                return None
            total += width
        return total
    return None


def _skip_varint_blocks(width: int) -> Skipper:
    """Skips an array of items that are ``width`` ints or longs each, block by block."""

    def skip_slow(data: bytes, pos: int) -> int:
        while True:
            n, pos = read_long(data, pos)
            if n == 0:
                return pos
            if n < 0:
                size, pos = read_long(data, pos)
                pos += size
            else:
                pos = skip_varints(data, pos, n * width)

    matchers: list[Callable[[bytes, int], re.Match[bytes] | None] | None] = [None] * 64

    def skip(data: bytes, pos: int) -> int:
        b = data[pos]
        if b == 0:
            return pos + 1
        if b < 0x80 and not b & 1:  # one block of fewer than 64 items, the usual case
            match = matchers[b >> 1]
            if match is None:
                match = matchers[b >> 1] = varints((b >> 1) * width).match
            m = match(data, pos + 1)
            if m is not None:
                end = m.end()
                if data[end] == 0:
                    return end + 1
        return skip_slow(data, pos)

    return skip


def _skip_blocks(item: Skipper) -> Skipper:
    """Skips an array or a map (blocks of items, each map item a string key and a value)."""

    def skip(data: bytes, pos: int) -> int:
        while True:
            n, pos = read_long(data, pos)
            if n == 0:
                return pos
            if n < 0:  # a block with its size in bytes: jump over it
                size, pos = read_long(data, pos)
                pos += size
                continue
            for _ in range(n):
                pos = item(data, pos)

    return skip


def compile_skipper(avro: Any, named: Mapping[str, Any]) -> Skipper:
    """A function stepping over one value of (writer) schema ``avro``."""
    avro = resolve_named(avro, named)
    if isinstance(avro, str):
        return _PRIMITIVE_SKIPPERS[avro]
    if isinstance(avro, list):
        branches = [compile_skipper(b, named) for b in avro]

        def skip_union(data: bytes, pos: int) -> int:
            i, pos = read_long(data, pos)
            return branches[i](data, pos)

        return skip_union
    if not isinstance(avro, dict):
        raise UnsupportedAvroError(f"unexpected Avro schema {avro!r}")
    kind = avro.get("type")
    if kind in _PRIMITIVE_SKIPPERS:
        return _PRIMITIVE_SKIPPERS[kind]
    if kind == "fixed":
        size = int(avro["size"])
        return lambda data, pos: pos + size
    if kind == "enum":
        return _skip_varint
    if kind == "array":
        width = _varint_width(avro["items"], named)
        if width:
            return _skip_varint_blocks(width)
        return _skip_blocks(compile_skipper(avro["items"], named))
    if kind == "map":
        value = compile_skipper(avro["values"], named)
        return _skip_blocks(lambda data, pos: value(data, _skip_bytes(data, pos)))
    if kind == "record":
        fields = [compile_skipper(f["type"], named) for f in avro.get("fields", [])]
        if not fields:
            return _skip_nothing

        def skip_record(data: bytes, pos: int) -> int:
            for f in fields:
                pos = f(data, pos)
            return pos

        return skip_record
    raise UnsupportedAvroError(f"unexpected Avro type {kind!r}")


@dataclass(frozen=True)
class _Block:
    count: int
    data: bytes  # decompressed records


@dataclass(frozen=True)
class AvroBlocks:
    """An Avro file's blocks decompressed, with what is needed to decode any of them: the
    records of every block one after another in :attr:`parts` (one buffer per block, or one
    buffer for them all when they were inflated at once), and each block's record count and
    where its records end (in the parts laid end to end) in :attr:`spans`.

    ``writer_schema`` and ``named`` are shared by every file with the same schema text:
    treat them as read-only."""

    location: str
    writer_schema: Any
    named: dict[str, Any]
    metadata: dict[str, str]
    raw_header: dict[str, Any]  # as read
    parts: tuple[bytes, ...]
    spans: tuple[tuple[int, int], ...]  # (record count, end in data) of each block

    @cached_property
    def data(self) -> bytes:
        """The records of every block in one buffer (joined when first asked for, if the
        blocks were decompressed one at a time)."""
        return self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)

    @property
    def count(self) -> int:
        """How many records the blocks hold."""
        return sum(count for count, _ in self.spans)

    @cached_property
    def blocks(self) -> tuple[_Block, ...]:
        """Each block: its record count and its records (the block's own part, or copied
        out of the one buffer when first asked for)."""
        if len(self.parts) == len(self.spans):
            return tuple(_Block(c, p) for (c, _), p in zip(self.spans, self.parts, strict=True))
        start = 0
        out = []
        for count, end in self.spans:
            out.append(_Block(count, self.data[start:end]))
            start = end
        return tuple(out)

    @property
    def nbytes(self) -> int:
        """The bytes of the decompressed records held: :attr:`parts`, and the copies that
        :attr:`data` or :attr:`blocks` made of them once asked for."""
        held = sum(len(p) for p in self.parts)
        copies = 0
        if "data" in self.__dict__ and len(self.parts) > 1:
            copies += 1
        if "blocks" in self.__dict__ and len(self.parts) == 1 and len(self.spans) > 1:
            copies += 1
        return held * (1 + copies)

    def block_data(self) -> Sequence[tuple[int, bytes]]:
        """Each block's record count and decompressed records."""
        return [(b.count, b.data) for b in self.blocks]

    def records(self) -> tuple[bytes, int]:
        """Every block's decompressed records in one buffer, and how many records it holds."""
        return self.data, self.count

    @cached_property
    def plain_header(self) -> bytes:
        """The header to put before uncompressed blocks for fastavro (the ``null`` codec,
        logical types stripped)."""
        meta = dict(self.raw_header["meta"])
        meta["avro.schema"] = json.dumps(strip_logical_types(self.writer_schema)).encode("utf-8")
        meta["avro.codec"] = b"null"
        out = io.BytesIO()
        fastavro.schemaless_writer(out, _HEADER_SCHEMA, {**self.raw_header, "meta": meta})
        return out.getvalue()

    def records_container(self, records: Sequence[bytes]) -> bytes:
        """A container file of one uncompressed block holding the given encoded records
        (slices of the blocks' decompressed data), for fastavro to decode only those."""
        body = b"".join(records)
        sync: bytes = self.raw_header["sync"]
        return self.plain_header + write_long(len(records)) + write_long(len(body)) + body + sync


@lru_cache(maxsize=64)
def _schema(text: bytes) -> tuple[Any, dict[str, Any]]:
    writer_schema = _writer_schema("", {"avro.schema": text})
    return writer_schema, named_avro_types(writer_schema)


def parse_schema_text(text: bytes) -> tuple[Any, dict[str, Any]]:
    """The writer schema of a file whose header holds schema ``text``, and its named types
    (parsed once per text: treat both as read-only, as :class:`AvroBlocks`' own)."""
    return _schema(bytes(text))


def read_avro_blocks(location: str, data: bytes, *, compiled: bool = False) -> AvroBlocks:
    """Split the bytes of an Avro file into decompressed blocks (with ``compiled``, inflated
    by compiled code: see :func:`~icepark.avro.codecs.decompress_parts`)."""
    stream = io.BytesIO(data)
    header = _read_header(location, stream)
    text = header["meta"].get("avro.schema")
    try:
        writer_schema, named = _schema(bytes(text)) if text is not None else (None, {})
    except InvalidAvroFileError:
        writer_schema = _writer_schema(location, header["meta"])  # the error, naming the file
    if writer_schema is None:
        writer_schema = _writer_schema(location, header["meta"])
    codec = bytes(header["meta"].get("avro.codec", b"null")).decode("utf-8", errors="replace")
    sync: bytes = header["sync"]
    pos = stream.tell()
    counts: list[int] = []
    payloads: list[tuple[int, int]] = []
    try:
        while pos < len(data):
            count, pos = read_long(data, pos)
            size, pos = read_long(data, pos)
            end = pos + size
            if count < 0 or size < 0 or data[end : end + 16] != sync:
                raise InvalidAvroFileError(f"Cannot read Avro file {location}: corrupt block")
            counts.append(count)
            payloads.append((pos, end))
            pos = end + 16
        parts, ends = decompress_parts(
            codec, data, payloads, file_budget(len(data)), compiled=compiled
        )
    except InvalidAvroFileError:
        raise
    except (IndexError, ValueError) as exc:
        raise InvalidAvroFileError(
            f"Cannot read Avro file {location}: corrupt block ({exc})"
        ) from exc
    metadata = _metadata_strings(header["meta"])
    return AvroBlocks(
        location,
        writer_schema,
        named,
        metadata,
        header,
        tuple(parts),
        tuple(zip(counts, ends, strict=True)),
    )


# -- streaming data files --------------------------------------------------------------------


@dataclass(frozen=True)
class AvroHeader:
    """The header of an Avro container file."""

    location: str
    writer_schema: Any
    metadata: dict[str, str]
    codec: str
    sync: bytes
    length: int  # bytes: the first block starts here


@dataclass(frozen=True)
class AvroBlock:
    """One block of records: where it starts in the file, its record count and the
    decompressed encoded records."""

    offset: int
    count: int
    data: bytes


class _Counting:
    """A read-only view of a stream that counts the bytes read through it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self._stream.read(n)
        self.count += len(data)
        return bytes(data)


_CODECS = frozenset({"null", "deflate", "zstandard", "snappy"})


def read_avro_header(location: str, stream: Any) -> AvroHeader:
    """Read the header of an Avro file from ``stream`` (positioned at the start; left at
    the first block)."""
    counting = _Counting(stream)
    header = _read_header(location, counting)
    writer_schema = _writer_schema(location, header["meta"])
    metadata = _metadata_strings(header["meta"])
    codec = metadata.get("avro.codec", "null") or "null"
    if codec not in _CODECS:
        raise InvalidAvroFileError(
            f"Cannot read Avro file {location}: unsupported compression codec {codec!r}"
        )
    return AvroHeader(location, writer_schema, metadata, codec, header["sync"], counting.count)


def _stream_long(stream: Any) -> tuple[int, int] | None:
    """A zig-zag varint read byte by byte and how many bytes it took; None at the end of the
    stream."""
    n = shift = used = 0
    while True:
        b = stream.read(1)
        if not b:
            if used:
                raise EOFError("end of file inside a block header")
            return None
        used += 1
        n |= (b[0] & 0x7F) << shift
        if b[0] < 0x80:
            return (n >> 1) ^ -(n & 1), used
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def iter_avro_blocks(
    header: AvroHeader, stream: Any, *, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, AvroBlock]]:
    """The blocks of an Avro file whose first byte lies in ``[start, end)`` (all by
    default), each with the file position of its first record (the records of the blocks
    before it). ``stream`` is positioned after the header. A block that is truncated, whose
    sync marker differs from the header's or that does not decompress raises
    :class:`~icepark.errors.InvalidAvroFileError` naming the file and the block's offset."""
    location = header.location
    offset = header.length
    rows = 0
    while end is None or offset < end:
        skip = offset < start
        try:
            first = _stream_long(stream)
            if first is None:
                return
            count, used_count = first
            second = _stream_long(stream)
            if second is None:
                raise EOFError("end of file inside a block header")
            size, used_size = second
            if count < 0 or size < 0:
                raise ValueError(f"negative block count or size ({count}, {size})")
            if skip:
                _skip(stream, size)
                payload = b""
            else:
                payload = read_exactly(stream, size)
                if len(payload) < size:
                    raise EOFError(f"the block holds {len(payload)} of {size} bytes")
            sync = stream.read(16)
        except (EOFError, ValueError) as exc:
            raise InvalidAvroFileError(
                f"Cannot read Avro file {location}: the block at offset {offset} is truncated "
                f"or corrupt ({exc})"
            ) from exc
        if len(sync) < 16:
            raise InvalidAvroFileError(
                f"Cannot read Avro file {location}: the block at offset {offset} is truncated "
                "(no sync marker after it)"
            )
        if sync != header.sync:
            raise InvalidAvroFileError(
                f"Cannot read Avro file {location}: the block at offset {offset} ends with a "
                "wrong sync marker (the file is corrupt)"
            )
        if not skip:
            try:
                data = decompress_block(header.codec, bytes(payload))
            except (ValueError, IndexError) as exc:
                raise InvalidAvroFileError(
                    f"Cannot read Avro file {location}: the block at offset {offset} does not "
                    f"decompress with codec {header.codec} ({exc})"
                ) from exc
            yield rows, AvroBlock(offset, count, data)
        rows += count
        offset += used_count + used_size + size + 16


def _skip(stream: Any, size: int) -> None:
    """Step over ``size`` bytes, seeking when the stream can."""
    seekable = getattr(stream, "seekable", None)
    if seekable is not None and seekable():
        stream.seek(size, 1)
    else:
        stream.read(size)
