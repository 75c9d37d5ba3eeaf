"""File access for table files: local paths and S3, chosen by the location's scheme."""

from __future__ import annotations

from icepark.io.fileio import FileEntry, FileIO, InputFile, OutputFile, OutputStream
from icepark.io.pyarrow_fileio import (
    IO_IMPL,
    LOCAL_FSYNC,
    LOCAL_SCHEMES,
    S3_SCHEMES,
    PyArrowFileIO,
    is_local_location,
    load_file_io,
)
from icepark.io.s3 import (
    S3_ACCESS_KEY_ID,
    S3_CONNECT_TIMEOUT,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_REQUEST_TIMEOUT,
    S3_RETRY_NUM_RETRIES,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
)

__all__ = [
    "FileIO",
    "InputFile",
    "OutputFile",
    "OutputStream",
    "FileEntry",
    "PyArrowFileIO",
    "is_local_location",
    "load_file_io",
    "IO_IMPL",
    "S3_ENDPOINT",
    "S3_ACCESS_KEY_ID",
    "S3_SECRET_ACCESS_KEY",
    "S3_SESSION_TOKEN",
    "S3_REGION",
    "S3_PATH_STYLE_ACCESS",
    "S3_CONNECT_TIMEOUT",
    "S3_REQUEST_TIMEOUT",
    "S3_RETRY_NUM_RETRIES",
    "LOCAL_FSYNC",
    "LOCAL_SCHEMES",
    "S3_SCHEMES",
]
