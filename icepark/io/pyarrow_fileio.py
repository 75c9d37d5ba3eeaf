"""Reading and writing table files (metadata, manifests, data) wherever they live.

:class:`PyArrowFileIO`, the default :class:`~icepark.io.fileio.FileIO`, is built on
``pyarrow.fs`` and picks the filesystem from the location's scheme:

* bare paths (``/abs/path``, relative paths are made absolute), ``file:/abs/path`` (as Java
  writes them), ``file:///abs/path`` and ``file://localhost/abs/path``: the local filesystem;
* ``s3://bucket/key``, ``s3a://`` and ``s3n://``: Amazon S3 or an S3-compatible store.

Creating a file without ``overwrite`` must never replace an existing one:

* locally it is atomic and race-free: the bytes go to a hidden temporary file in the target's
  folder, which is then hard-linked to the target name (``link`` fails if the name exists) and
  unlinked. Of any number of concurrent creators exactly one wins, and a reader never sees a
  partly written file. ``overwrite=True`` publishes with an atomic ``rename`` instead.
* on S3 a plain PUT cannot be made conditional here, so it is best effort: the object's
  existence is checked when the stream is created and again just before the upload. Two writers
  racing within that window can both "succeed" (the last one wins). What makes commits safe on
  S3 is the catalog's compare-and-swap of the metadata pointer, not the file system. The bytes
  are spooled (memory, then a local temporary file) and uploaded on ``close()``, so an aborted
  write leaves nothing behind.

A stream used as a context manager is published when the block ends normally and discarded when
it raises. Missing files raise :class:`~icepark.errors.NoSuchFileError`, files that exist already
raise :class:`~icepark.errors.FileAlreadyExistsError`, both naming the location.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import tempfile
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any, BinaryIO
from urllib.parse import urlsplit

from icepark.errors import (
    CatalogConfigError,
    FileAlreadyExistsError,
    NoSuchFileError,
    StorageError,
    ValidationError,
)
from icepark.io.fileio import FileEntry, FileIO, InputFile, OutputFile, OutputStream
from icepark.io.s3 import describe_endpoint, s3_options, storage_error

__all__ = [
    "IO_IMPL",
    "LOCAL_FSYNC",
    "LOCAL_SCHEMES",
    "S3_SCHEMES",
    "PyArrowFileIO",
    "is_local_location",
    "is_partial_write",
    "translate_errors",
    "load_file_io",
]

IO_IMPL = "io-impl"
"""Property naming the FileIO class to use, as ``package.module.ClassName``."""
_PY_IO_IMPL = "py-io-impl"  # PyIceberg's name for the same property, accepted too

LOCAL_FSYNC = "local.fsync"
"""``true`` to fsync local files before publishing them (durability across power loss)."""

LOCAL_SCHEMES = frozenset({"", "file"})
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})

_COPY_CHUNK = 8 * 1024 * 1024
_SPOOL_IN_MEMORY = 16 * 1024 * 1024


# ------------------------------------------------------------------------------------------------
# Locations


@dataclass(frozen=True)
class _Location:
    """A location split into the filesystem it lives on and the path that filesystem uses."""

    original: str
    scheme: str  # "file" or "s3"
    netloc: str  # the bucket for S3, "" locally
    path: str  # absolute local path, or "bucket/key" for S3
    prefix: str  # what to put before a filesystem path to get a location in the same style


def _parse_location(location: str) -> _Location:
    if not isinstance(location, str) or not location:
        raise ValidationError(f"a file location must be a non-empty string, not {location!r}")
    scheme, rest = _split_scheme(location)
    if scheme in LOCAL_SCHEMES:
        if scheme == "":
            path, prefix = rest, ""
        elif rest.startswith("//"):
            authority, _, tail = rest[2:].partition("/")
            if authority not in ("", "localhost"):
                raise ValidationError(f"file location with a remote host: {location}")
            path, prefix = "/" + tail, "file://" + authority
        else:
            path, prefix = rest, "file:"
        if not path:
            raise ValidationError(f"file location without a path: {location}")
        path = os.path.abspath(path)  # also drops a trailing slash
        return _Location(location, "file", "", path, prefix)
    if scheme in S3_SCHEMES:
        parts = urlsplit(location)
        bucket = parts.netloc
        if not bucket:
            raise ValidationError(f"S3 location without a bucket: {location}")
        key = location[len(scheme) + 3 + len(bucket) :].lstrip("/")
        path = f"{bucket}/{key}" if key else bucket
        return _Location(location, "s3", bucket, path.rstrip("/"), f"{scheme}://")
    raise ValidationError(
        f"unsupported file system scheme {scheme!r} in location {location!r} "
        f"(supported: local paths, file:, {', '.join(sorted(s + ':' for s in S3_SCHEMES))})"
    )


def _split_scheme(location: str) -> tuple[str, str]:
    head, sep, rest = location.partition(":")
    # A one-letter "scheme" is a Windows drive letter, not a scheme.
    if sep and len(head) > 1 and head.replace("+", "").replace("-", "").isalnum():
        return head.lower(), rest
    return "", location


def is_local_location(location: str) -> bool:
    """Whether ``location`` names a file on this machine (no scheme, or ``file:``)."""
    return _split_scheme(location)[0] in LOCAL_SCHEMES


@contextlib.contextmanager
def translate_errors(location: str, fileio: FileIO | None = None) -> Iterator[None]:
    """Turn the file system's not-found / exists errors into icepark's, naming the location;
    on S3, refused and failed requests become :class:`StorageError` naming the bucket and
    the endpoint (``fileio`` gives the endpoint); a local refusal with an errno (full disk, no
    permission) a StorageError keeping it. Anything else passes unchanged. The one
    translation of storage errors, for writes and for reads (:mod:`icepark.arrow.read_errors`)."""
    try:
        yield
    except (NoSuchFileError, FileAlreadyExistsError, StorageError):
        raise
    except FileNotFoundError:
        raise NoSuchFileError(f"file not found: {location}") from None
    except FileExistsError:
        raise FileAlreadyExistsError(f"file already exists: {location}") from None
    except OSError as exc:
        loc = _parse_location(location)
        if loc.scheme in S3_SCHEMES:
            props = fileio.properties if fileio is not None else {}
            translated = storage_error(exc, location, loc.netloc, props)
            if translated is not None:
                raise translated from exc
        if _looks_missing(exc):
            raise NoSuchFileError(f"file not found: {location}") from None
        if loc.scheme in LOCAL_SCHEMES and exc.errno is not None:
            raise _local_error(exc, location) from exc
        raise


def _local_error(exc: OSError, location: str) -> StorageError:
    """A local file system's refusal (full disk, no permission, read-only, too many open
    files...) as a StorageError naming the file; ``errno`` is the system's."""
    reason = exc.strerror or os.strerror(exc.errno or 0)
    error = StorageError(f"{reason} (errno {exc.errno}): {location}")
    error.errno = exc.errno
    return error


def _looks_missing(exc: OSError) -> bool:
    text = str(exc)
    return any(
        marker in text
        for marker in ("Path does not exist", "NoSuchKey", "NoSuchBucket", "does not exist")
    )


def _is_true(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("true", "1", "yes", "on")


# ------------------------------------------------------------------------------------------------
# pyarrow implementation


class _PyArrowInputFile(InputFile):
    def __init__(self, fileio: PyArrowFileIO, location: str, length: int | None) -> None:
        super().__init__(location)
        self._io = fileio
        self._loc = _parse_location(location)
        self._length = length

    def _info(self) -> Any:
        fs = self._io._filesystem(self._loc)
        with translate_errors(self.location, self._io):
            return fs.get_file_info(self._loc.path)

    def exists(self) -> bool:
        from pyarrow.fs import FileType

        return bool(self._info().type == FileType.File)

    def length(self) -> int:
        if self._length is None:
            from pyarrow.fs import FileType

            info = self._info()
            if info.type == FileType.NotFound:
                raise NoSuchFileError(f"file not found: {self.location}")
            if info.type != FileType.File:
                raise NoSuchFileError(f"not a file: {self.location}")
            self._length = int(info.size)
        return self._length

    def open(self) -> BinaryIO:
        fs = self._io._filesystem(self._loc)
        with translate_errors(self.location, self._io):
            if self._loc.scheme == "file" and os.path.isdir(self._loc.path):
                raise NoSuchFileError(f"not a file: {self.location}")
            stream: BinaryIO = fs.open_input_file(self._loc.path)
        return stream


class _PyArrowOutputFile(OutputFile):
    def __init__(self, fileio: PyArrowFileIO, location: str) -> None:
        super().__init__(location)
        self._io = fileio
        self._loc = _parse_location(location)

    def exists(self) -> bool:
        return self.to_input_file().exists()

    def create(self, overwrite: bool = False) -> OutputStream:
        if not overwrite and self.exists():
            raise FileAlreadyExistsError(f"file already exists: {self.location}")
        if self._loc.scheme == "file":
            fsync = _is_true(self._io.properties.get(LOCAL_FSYNC))
            return _LocalAtomicStream(self.location, self._loc.path, overwrite, fsync)
        return _SpooledUploadStream(self._io, self._loc, overwrite)

    def to_input_file(self) -> InputFile:
        return _PyArrowInputFile(self._io, self.location, None)


_PARTIAL_WRITE = re.compile(r"\..+\.[0-9a-f]{32}\.tmp")


def _partial_write_name(name: str) -> str:
    return f".{name}.{uuid.uuid4().hex}.tmp"


def is_partial_write(name: str) -> bool:
    """Whether a file name is that of a local write that never finished (the temporary file
    a process killed mid-write leaves beside its target); orphan removal takes them."""
    return _PARTIAL_WRITE.fullmatch(name) is not None


class _LocalAtomicStream(OutputStream):
    """Writes a hidden temporary file next to the target, then links or renames it in place."""

    def __init__(self, location: str, target: str, overwrite: bool, fsync: bool) -> None:
        super().__init__(location)
        self._target = target
        self._overwrite = overwrite
        self._fsync = fsync
        folder, name = os.path.split(target)
        self._temp = os.path.join(folder, _partial_write_name(name))
        self._file: IO[bytes] | None = None
        with translate_errors(location):
            os.makedirs(folder, exist_ok=True)
            self._file = open(self._temp, "xb")

    def _write(self, data: memoryview) -> None:
        assert self._file is not None
        with translate_errors(self.location):
            self._file.write(data)

    def _flush(self) -> None:
        if self._file is not None:
            with translate_errors(self.location):
                self._file.flush()

    def _close_temp(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            file.close()

    def _publish(self) -> None:
        with translate_errors(self.location):
            self._publish_temp()

    def _publish_temp(self) -> None:
        assert self._file is not None
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())
        self._close_temp()
        try:
            if self._overwrite:
                os.replace(self._temp, self._target)
                return
            try:
                os.link(self._temp, self._target)
            except FileExistsError:
                raise FileAlreadyExistsError(f"file already exists: {self.location}") from None
            except OSError:
                # No hard links on this file system: fall back to O_EXCL + copy. Still exactly
                # one winner, but a reader could see the file while it is being copied.
                self._copy_exclusive()
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._temp)

    def _copy_exclusive(self) -> None:
        try:
            fd = os.open(self._target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            raise FileAlreadyExistsError(f"file already exists: {self.location}") from None
        with os.fdopen(fd, "wb") as out, open(self._temp, "rb") as src:
            while chunk := src.read(_COPY_CHUNK):
                out.write(chunk)
            out.flush()
            if self._fsync:
                os.fsync(out.fileno())

    def _discard(self) -> None:
        self._close_temp()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._temp)


class _SpooledUploadStream(OutputStream):
    """Spools the bytes locally and uploads them on close (S3 has no atomic create-if-absent)."""

    def __init__(self, fileio: PyArrowFileIO, loc: _Location, overwrite: bool) -> None:
        super().__init__(loc.original)
        self._io = fileio
        self._loc = loc
        self._overwrite = overwrite
        self._spool: IO[bytes] | None = tempfile.SpooledTemporaryFile(
            max_size=_SPOOL_IN_MEMORY, prefix="icepark-upload-"
        )

    def _write(self, data: memoryview) -> None:
        assert self._spool is not None
        self._spool.write(data)

    def _publish(self) -> None:
        assert self._spool is not None
        spool = self._spool
        fs = self._io._filesystem(self._loc)
        if not self._overwrite:
            # Best effort only: another writer may still slip in between this check and the PUT.
            from pyarrow.fs import FileType

            with translate_errors(self.location, self._io):
                if fs.get_file_info(self._loc.path).type != FileType.NotFound:
                    raise FileAlreadyExistsError(f"file already exists: {self.location}")
        spool.seek(0)
        with (
            translate_errors(self.location, self._io),
            fs.open_output_stream(self._loc.path, compression=None) as out,
        ):
            while chunk := spool.read(_COPY_CHUNK):
                out.write(chunk)
        self._discard()

    def _discard(self) -> None:
        if self._spool is not None:
            spool, self._spool = self._spool, None
            spool.close()


class PyArrowFileIO(FileIO):
    """A FileIO on ``pyarrow.fs``: the local file system and S3 (see the module docstring).

    S3 settings come from the ``s3.*`` properties (see :mod:`icepark.io.s3`: endpoint,
    region, path-style access, static or temporary credentials, timeouts and
    ``s3.retry.num-retries``); the missing ones fall back to the ``AWS_*`` environment, then
    to the AWS SDK's own lookup. Requests that fail (throttled, refused, unreachable) raise
    :class:`~icepark.errors.StorageError` naming the bucket and endpoint. File systems are
    made once per (scheme, bucket) and shared by threads.
    """

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        super().__init__(properties)
        self._lock = threading.Lock()
        self._filesystems: dict[tuple[str, str], Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"properties": self.properties}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["properties"])  # type: ignore[misc]

    # -- FileIO -----------------------------------------------------------------------------
    def new_input(self, location: str, length: int | None = None) -> InputFile:
        return _PyArrowInputFile(self, location, length)

    def new_output(self, location: str) -> OutputFile:
        return _PyArrowOutputFile(self, location)

    def delete(self, location: str) -> None:
        loc = _parse_location(location)
        fs = self._filesystem(loc)
        with translate_errors(location, self):
            if loc.scheme == "file" and os.path.isdir(loc.path):
                raise NoSuchFileError(f"not a file: {location}")
            fs.delete_file(loc.path)

    def list_prefix(self, location: str) -> list[FileEntry]:
        from pyarrow.fs import FileSelector, FileType

        loc = _parse_location(location)
        fs = self._filesystem(loc)
        selector = FileSelector(loc.path, recursive=True, allow_not_found=True)
        with translate_errors(location, self):
            infos = fs.get_file_info(selector)
        entries = []
        for info in infos:
            if info.type != FileType.File:
                continue
            mtime_ns = info.mtime_ns
            entries.append(
                FileEntry(
                    location=loc.prefix + info.path,
                    size=int(info.size),
                    last_modified_ms=None if mtime_ns is None else mtime_ns // 1_000_000,
                )
            )
        entries.sort(key=lambda e: e.location)
        return entries

    def iter_prefix(self, location: str) -> Iterator[FileEntry]:
        """A local folder's files a folder at a time (one listing per folder: a million
        files are never all described at once); other storage as :meth:`list_prefix`."""
        from pyarrow.fs import FileSelector, FileType

        loc = _parse_location(location)
        if loc.scheme != "file":
            yield from self.list_prefix(location)
            return
        fs = self._filesystem(loc)
        folders = [loc.path]
        while folders:
            selector = FileSelector(folders.pop(), recursive=False, allow_not_found=True)
            with translate_errors(location, self):
                infos = fs.get_file_info(selector)
            for info in infos:
                if info.type == FileType.Directory:
                    folders.append(info.path)
                elif info.type == FileType.File:
                    mtime_ns = info.mtime_ns
                    yield FileEntry(
                        location=loc.prefix + info.path,
                        size=int(info.size),
                        last_modified_ms=None if mtime_ns is None else mtime_ns // 1_000_000,
                    )

    def delete_prefix(self, location: str) -> None:
        loc = _parse_location(location)
        fs = self._filesystem(loc)
        if loc.scheme == "file" and os.path.dirname(loc.path) == loc.path:
            raise ValidationError(f"refusing to delete the root folder: {location}")
        with translate_errors(location, self):
            try:
                if loc.scheme == "s3" and "/" not in loc.path:
                    # A bare bucket: empty it, never delete the bucket itself.
                    fs.delete_dir_contents(loc.path, missing_dir_ok=True)
                else:
                    fs.delete_dir(loc.path)
            except FileNotFoundError:
                return
            except NotADirectoryError as exc:
                raise NoSuchFileError(f"not a folder: {location}") from exc

    # -- file systems -----------------------------------------------------------------------
    def filesystem(self, location: str) -> tuple[Any, str]:
        """The ``pyarrow.fs`` file system holding ``location`` and the path it uses for it
        (for callers that need folders, such as the file-system catalog)."""
        loc = _parse_location(location)
        return self._filesystem(loc), loc.path

    def _filesystem(self, loc: _Location) -> Any:
        key = (loc.scheme, loc.netloc)
        with self._lock:
            fs = self._filesystems.get(key)
            if fs is None:
                fs = self._make_filesystem(loc.scheme)
                self._filesystems[key] = fs
            return fs

    def _make_filesystem(self, scheme: str) -> Any:
        from pyarrow import fs as pafs

        if scheme == "file":
            return pafs.LocalFileSystem()
        if scheme == "s3":
            return pafs.S3FileSystem(**self._s3_options())
        raise ValidationError(f"unsupported file system scheme {scheme!r}")  # pragma: no cover

    def _s3_options(self) -> dict[str, Any]:
        return s3_options(self.properties)

    def check_access(self, location: str) -> None:
        """On S3, ask once whether the location's bucket exists and these credentials may
        use it (a ``HeadBucket``); :class:`StorageError` names the bucket and endpoint when
        not. Local locations are not checked."""
        loc = _parse_location(location)
        if loc.scheme != "s3":
            return
        from pyarrow.fs import FileType

        fs = self._filesystem(loc)
        with translate_errors(location, self):
            info = fs.get_file_info(loc.netloc)
        if info.type == FileType.NotFound:
            raise StorageError(
                f"S3 bucket {loc.netloc!r} does not exist at "
                f"{describe_endpoint(self.properties)} ({location})"
            )


# ------------------------------------------------------------------------------------------------
# Factory


def load_file_io(
    properties: Mapping[str, str] | None = None, location: str | None = None
) -> FileIO:
    """The FileIO for these (catalog or table) properties and, optionally, a table location.

    ``io-impl`` (or PyIceberg's ``py-io-impl``) names the class to use as
    ``package.module.ClassName``; it is made as ``Class(properties)``. Otherwise this is a
    :class:`PyArrowFileIO`, which must support the location's scheme when one is given.
    """
    props = dict(properties or {})
    impl = props.get(IO_IMPL) or props.get(_PY_IO_IMPL)
    if impl:
        module_name, _, class_name = impl.rpartition(".")
        if not module_name:
            raise CatalogConfigError(f"{IO_IMPL} must be a dotted class path, not {impl!r}")
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            raise CatalogConfigError(f"cannot load FileIO class {impl!r}: {exc}") from exc
        if not (isinstance(cls, type) and issubclass(cls, FileIO)):
            raise CatalogConfigError(f"{impl!r} is not a FileIO class")
        fileio: FileIO = cls(props)
        return fileio
    if location is not None:
        _parse_location(location)  # raises ValidationError for an unsupported scheme
    return PyArrowFileIO(props)
