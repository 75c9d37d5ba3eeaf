"""What a data file read raises when the file or the storage fails: one translation for every
format's reader (:func:`~icepark.arrow.reader.read_data_file`) and for the Parquet footers
``add_files`` reads (:func:`~icepark.arrow.footer.data_file_from_footer`).

A corrupt or truncated file (Arrow's C++ readers raise ``ArrowException`` or an ``OSError``
without errno; a footer whose names are not UTF-8 a ``UnicodeDecodeError``) is a
ValidationError naming the file; a missing file a NoSuchFileError; the system refusing the
read (errno set: no permission, too many open files, an I/O error) a StorageError keeping
errno; a failed S3 request the StorageError of :func:`icepark.io.s3.storage_error`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from icepark.errors import IceparkError, NoSuchFileError, StorageError, ValidationError
from icepark.io import FileIO
from icepark.io.s3 import storage_error
from icepark.spec.manifests import DataFile

__all__ = ["typed_read_errors", "unreadable"]


def typed_read_errors(
    io: FileIO, data_file: DataFile, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``batches``, with the errors of reading ``data_file`` made icepark's (see above)."""
    try:
        yield from batches
    except IceparkError:
        raise
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        what = f"{data_file.file_format.value} data file"
        raise unreadable(io, data_file.file_path, what, exc) from exc


def unreadable(io: FileIO, location: str, what: str, exc: Exception) -> IceparkError:
    """The icepark error for ``exc``, raised while reading ``what`` (``"PARQUET data file"``)
    at ``location``."""
    scheme, _, rest = location.partition("://")
    if isinstance(exc, OSError) and scheme in ("s3", "s3a", "s3n"):
        translated = storage_error(exc, location, rest.split("/", 1)[0], io.properties)
        if translated is not None:
            return translated
    if isinstance(exc, FileNotFoundError):
        return NoSuchFileError(f"{what[:1].upper()}{what[1:]} not found: {location}")
    if isinstance(exc, OSError) and exc.errno is not None:
        error = StorageError(
            f"Cannot read {what} {location}: {exc.strerror or exc} (errno {exc.errno})"
        )
        error.errno = exc.errno
        return error
    reason = f"{type(exc).__name__}: {str(exc).strip()}"
    return ValidationError(f"Cannot read {what} {location}: {reason}")
