"""Table file locations as Spark's file systems name them and as Spark reports them back in
``_metadata.file_path``."""

from __future__ import annotations

__all__ = ["spark_reported_path", "to_spark_location"]


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
