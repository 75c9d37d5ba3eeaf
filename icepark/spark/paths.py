"""Table file locations as Spark's file systems name them and as Spark reports them back in
``_metadata.file_path``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["parquet_files", "spark_reported_path", "to_spark_location"]


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


_SEPARATOR = "\n"
_FEW = 8  # below this many paths, py4j's list conversion is as cheap


def parquet_files(reader: Any, spark: Any, locations: Sequence[str]) -> Any:
    """``reader.parquet(*locations)``, the paths handed to the JVM as one string split there.

    py4j turns a Python list into a Java one element by element, a round trip per path: for
    10,000 files 0.2-0.4 s of the ~2 s it took to make the DataFrame. Falls back to
    ``reader.parquet`` where a path holds the separator or the classic reader's internals
    (``_jreader``, ``_df``) are not there."""
    if len(locations) < _FEW or type(spark).__module__.startswith("pyspark.sql.connect"):
        return reader.parquet(*locations)  # a Connect session sends the list in its plan
    jreader = getattr(reader, "_jreader", None)
    to_frame = getattr(reader, "_df", None)
    jvm = getattr(spark, "_jvm", None)
    if (
        len(locations) < _FEW
        or jreader is None
        or to_frame is None
        or jvm is None
        or any(_SEPARATOR in p for p in locations)
    ):
        return reader.parquet(*locations)
    regex = jvm.java.util.regex.Pattern
    paths = regex.compile(regex.quote(_SEPARATOR)).split(_SEPARATOR.join(locations))
    return to_frame(jreader.parquet(paths))  # the String[] form of Scala's varargs parquet
