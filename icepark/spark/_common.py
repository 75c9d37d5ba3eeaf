"""Helpers shared by the Spark read and write paths: finding tables, paths as Spark sees
them, and the session settings icepark relies on."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from icepark.io import FileIO
from icepark.manifest import DataFile
from icepark.spec.metadata import TableMetadata
from icepark.table import Table
from icepark.table.write.data_files import write_arrow

__all__ = [
    "CATALOG_OPTION_KEYS",
    "resolve_table",
    "catalog_from_options",
    "to_spark_location",
    "spark_reported_path",
    "temporary_conf",
    "write_task_files",
]

#: data source options that are catalog properties (``catalog`` names the catalog itself)
CATALOG_OPTION_KEYS = ("uri", "warehouse", "type")
_CATALOG_PREFIX = "catalog."


def catalog_from_options(options: Mapping[str, str]) -> Any:
    """``load_catalog`` with the catalog given by options: ``catalog`` (a name), ``uri``,
    ``warehouse``, ``type`` and any ``catalog.<property>``."""
    from icepark.catalog import load_catalog

    props: dict[str, str] = {}
    lowered = {k.lower(): v for k, v in options.items()}
    for key in CATALOG_OPTION_KEYS:
        if key in lowered:
            props[key] = lowered[key]
    for key, value in options.items():
        if key.lower().startswith(_CATALOG_PREFIX):
            props[key[len(_CATALOG_PREFIX) :]] = value
    return load_catalog(lowered.get("catalog"), properties=props)


def resolve_table(table: Table | str, catalog: Any = None) -> Table:
    """An icepark Table, or a name loaded from ``catalog`` (a Catalog, a catalog name or a
    mapping of catalog properties) or else ``icepark.load_catalog()``."""
    if isinstance(table, Table):
        return table
    if catalog is None or isinstance(catalog, str):
        from icepark.catalog import load_catalog

        catalog = load_catalog(catalog)
    elif isinstance(catalog, Mapping):
        catalog = catalog_from_options(
            {f"{_CATALOG_PREFIX}{k}": str(v) for k, v in catalog.items()}
        )
    loaded: Table = catalog.load_table(table)
    return loaded


def to_spark_location(location: str) -> str:
    """A table file location as Spark's Hadoop file systems name it (``s3://`` is ``s3a://``)."""
    if location.startswith("s3://"):
        return "s3a://" + location[len("s3://") :]
    return location


# Characters Java's java.net.URI keeps as they are in a path; every other ASCII character is
# percent-encoded (UTF-8), non-ASCII characters are kept.
_URI_PATH_SAFE = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-!.~'()*,;:$&+=@/"
)


def _encode_path(path: str) -> str:
    out = []
    for ch in path:
        if ch in _URI_PATH_SAFE or ord(ch) > 127:
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode()))
    return "".join(out)


def spark_reported_path(location: str) -> str:
    """The ``_metadata.file_path`` Spark reports for a file read from ``location``: a URI,
    ``file:/abs/path`` for local files, percent-encoded as ``java.net.URI`` does."""
    location = to_spark_location(location)
    if location.startswith("file:"):
        rest = location[len("file:") :]
        if rest.startswith("//"):
            rest = rest[2:]
            rest = rest[rest.index("/") :] if "/" in rest else "/"
        return "file:" + _encode_path(rest)
    if "://" not in location:
        return "file:" + _encode_path(location)
    scheme, rest = location.split("://", 1)
    authority, _, path = rest.partition("/")
    return f"{scheme}://{authority}/" + _encode_path(path)


@contextlib.contextmanager
def temporary_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Session settings changed for the duration of a block (for eager actions only)."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in previous.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def write_task_files(
    io: FileIO, metadata: TableMetadata, batches: Iterable[pa.RecordBatch], write_uuid: str
) -> list[DataFile]:
    """In a Spark task: write its batches as data files of the table (icepark's Arrow
    writer), named by the write uuid, the task's partition id and attempt number."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return write_arrow(
        io,
        metadata,
        batches,
        context.partitionId() if context is not None else 0,
        write_uuid=write_uuid,
        attempt_id=context.attemptNumber() if context is not None else 0,
    )
