"""The file access interfaces: a :class:`FileIO` hands out :class:`InputFile` and
:class:`OutputFile` objects for locations given as strings; an :class:`OutputStream` is
published when closed and discarded when aborted.

:class:`~icepark.io.pyarrow_fileio.PyArrowFileIO`, the default implementation (local files and
S3), and :func:`~icepark.io.pyarrow_fileio.load_file_io`, which picks the implementation from
properties, are in :mod:`icepark.io.pyarrow_fileio`.

Creating a file without ``overwrite`` must never replace an existing one. A stream used as a
context manager is published when the block ends normally and discarded when it raises.
Missing files raise :class:`~icepark.errors.NoSuchFileError`, files that exist already raise
:class:`~icepark.errors.FileAlreadyExistsError`, both naming the location.
"""

from __future__ import annotations

import contextlib
import io
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, BinaryIO

__all__ = [
    "FileIO",
    "InputFile",
    "OutputFile",
    "OutputStream",
    "FileEntry",
]


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file found by :meth:`FileIO.list_prefix` (slotted: a listing may hold millions)."""

    location: str
    size: int
    last_modified_ms: int | None = None


class OutputStream(io.BufferedIOBase, ABC):
    """A writable binary stream whose bytes become visible only when it is closed.

    ``close()`` publishes the file (and may raise :class:`FileAlreadyExistsError`);
    ``abort()`` throws the bytes away. Used as a context manager it publishes on a normal exit
    and aborts when the block raises. A stream dropped without being closed is aborted.
    """

    def __init__(self, location: str) -> None:
        super().__init__()
        self.location = location
        self._position = 0

    # -- what subclasses provide ------------------------------------------------------------
    @abstractmethod
    def _write(self, data: memoryview) -> None:
        """Append the bytes to the pending file."""

    @abstractmethod
    def _publish(self) -> None:
        """Make the written bytes visible at the location."""

    @abstractmethod
    def _discard(self) -> None:
        """Throw the pending bytes away; must not raise for the common cases."""

    def _flush(self) -> None:
        """Push buffered bytes down (optional)."""

    # -- io API -----------------------------------------------------------------------------
    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def write(self, data: Any, /) -> int:
        if self.closed:
            raise ValueError(f"write to a closed stream: {self.location}")
        view = memoryview(data).cast("B")
        self._write(view)
        self._position += len(view)
        return len(view)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        if self.closed:
            raise ValueError(f"flush of a closed stream: {self.location}")
        self._flush()

    def close(self) -> None:
        """Publish the file at its location; a no-op when closed already."""
        if self.closed:
            return
        try:
            self._publish()
        except BaseException:
            with contextlib.suppress(Exception):
                self._discard()
            raise
        finally:
            super().close()

    def abort(self) -> None:
        """Discard what was written; the location is left as it was."""
        if self.closed:
            return
        try:
            self._discard()
        finally:
            super().close()

    def __enter__(self) -> OutputStream:
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

    def __del__(self) -> None:
        # Never publish a stream that nobody closed: its content may be incomplete.
        with contextlib.suppress(Exception):
            self.abort()


class InputFile(ABC):
    """A file to read, which need not exist when this object is made."""

    def __init__(self, location: str) -> None:
        self.location = location

    @abstractmethod
    def exists(self) -> bool:
        """True if a file (not a folder) exists at the location."""

    @abstractmethod
    def length(self) -> int:
        """The file's size in bytes; :class:`NoSuchFileError` if it does not exist."""

    @abstractmethod
    def open(self) -> BinaryIO:
        """A seekable binary stream over the file; :class:`NoSuchFileError` if missing."""

    def read_bytes(self) -> bytes:
        """The whole content of the file."""
        with self.open() as stream:
            return bytes(stream.read())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"


class OutputFile(ABC):
    """A file to write, which need not exist when this object is made."""

    def __init__(self, location: str) -> None:
        self.location = location

    @abstractmethod
    def exists(self) -> bool:
        """True if a file (not a folder) exists at the location."""

    @abstractmethod
    def create(self, overwrite: bool = False) -> OutputStream:
        """A stream whose bytes are published at the location when it is closed.

        Without ``overwrite`` this raises :class:`FileAlreadyExistsError` if the file exists,
        at once or when the stream is closed (if another writer got there first).
        """

    @abstractmethod
    def to_input_file(self) -> InputFile:
        """An :class:`InputFile` for the same location."""

    def write_bytes(self, data: bytes | bytearray | memoryview, overwrite: bool = False) -> None:
        """Create the file with this content (see :meth:`create`)."""
        with self.create(overwrite=overwrite) as stream:
            stream.write(data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"


class FileIO(ABC):
    """Access to table files by location; subclasses take a ``properties`` mapping."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self.properties: dict[str, str] = dict(properties or {})

    @abstractmethod
    def new_input(self, location: str, length: int | None = None) -> InputFile:
        """An input file; ``length``, if known, is trusted by :meth:`InputFile.length`."""

    @abstractmethod
    def new_output(self, location: str) -> OutputFile:
        """An output file."""

    @abstractmethod
    def delete(self, location: str) -> None:
        """Delete one file; :class:`NoSuchFileError` if it does not exist."""

    def delete_quietly(self, location: str) -> None:
        """Delete one file, ignoring any failure: cleanup after a failed write or commit,
        where the first error is the one to report and a file left over is an orphan."""
        try:
            self.delete(location)
        except Exception:
            pass

    @abstractmethod
    def list_prefix(self, location: str) -> list[FileEntry]:
        """Every file under the folder ``location`` (recursively); empty if there is none."""

    def iter_prefix(self, location: str) -> Iterator[FileEntry]:
        """The files :meth:`list_prefix` gives, in no set order and, where the storage
        allows, a part at a time (a local folder one folder at a time), so that a listing of
        millions of files need not be held twice while it is being made."""
        yield from self.list_prefix(location)

    @abstractmethod
    def delete_prefix(self, location: str) -> None:
        """Delete the folder ``location`` and everything in it; a no-op if it does not exist."""

    def exists(self, location: str) -> bool:
        """True if a file (not a folder) exists at the location."""
        return self.new_input(location).exists()

    def check_access(self, location: str) -> None:
        """Raise :class:`~icepark.errors.StorageError` when the storage holding
        ``location`` cannot be used at all (e.g. a missing bucket, refused credentials);
        a cheap request, for checking once before a job starts. Does nothing by default."""
        return None

    def filesystem(self, location: str) -> tuple[Any, str]:
        """The ``pyarrow.fs.FileSystem`` holding ``location`` and the path it uses for it.

        For code that works with pyarrow directly (folders, datasets, Parquet): the path is an
        absolute local path, or ``bucket/key`` on S3. FileIOs not built on pyarrow refuse.
        """
        raise NotImplementedError(f"{type(self).__name__} has no pyarrow file system")
