"""What a data file read raises when the file or the storage fails: one translation for every
format's reader (:func:`~icepark.arrow.reader.read_data_file`) and for the Parquet footers
``add_files`` reads (:func:`~icepark.arrow.footer.data_file_from_footer`).

A corrupt or truncated file (Arrow's C++ readers raise ``ArrowException`` or an ``OSError``
without errno; a footer whose names are not UTF-8 a ``UnicodeDecodeError``) is a
ValidationError naming the file; what the storage says (a missing file, a refused read with
its errno, a failed S3 request) is translated by the FileIO's one translation.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from icepark.errors import IceparkError, ValidationError
from icepark.io import FileIO
from icepark.io.pyarrow_fileio import translate_errors
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
    at ``location``: the storage's errors as :func:`~icepark.io.pyarrow_fileio.translate_errors`
    makes them (a missing file, a refused read, a failed S3 request), anything else a
    ValidationError (a corrupt file)."""
    try:
        with translate_errors(location, io):
            raise exc
    except IceparkError as translated:
        return translated
    except Exception:  # not the storage's: the file itself is bad
        pass
    reason = f"{type(exc).__name__}: {str(exc).strip()}"
    return ValidationError(f"Cannot read {what} {location}: {reason}")
