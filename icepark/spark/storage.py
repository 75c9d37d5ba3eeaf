"""How Spark reaches a table's files: Spark's own Hadoop file systems, or icepark's FileIO in
Python tasks. One decision, :func:`choose_storage_path`, that every Spark operation consults
before it plans a job (reads, writes, row-level changes; compaction and anything else that
reads with :func:`icepark.spark.read.reader.read_tasks` and writes with
:func:`icepark.spark.write.writer.write_files` inherits it).

Flow, on the driver, for the locations a job will touch (the table location, its data
location, the data files it reads)::

    every bucket checked once per process (FileIO.check_access: a HeadBucket; a missing
    bucket, refused credentials or an endpoint that does not answer raise StorageError
    naming the bucket and endpoint before any Spark job starts)
    -> local files: "native"
    -> object storage: Spark is asked once per Spark application and scheme whether it has a
       Hadoop FileSystem for the scheme (``s3://`` is asked as ``s3a://``, the name Spark's
       Hadoop gives S3): on a classic session the JVM's ``FileSystem.getFileSystemClass``;
       on a Spark Connect session, which has no JVM here, Spark SQL's ``try_reflect`` loads the
       scheme's class on the server (``spark.hadoop.fs.<scheme>.impl`` or Hadoop's default
       for the scheme; a scheme without either is not taken for native)
       * found (the user added hadoop-aws): "native"; the session gets ``fs.s3a.bucket.<b>.*``
         settings derived from the catalog's ``s3.*`` properties (:func:`s3a_settings`)
         wherever neither that key nor its global ``fs.s3a.*`` form is set already (in the
         session's conf, also as ``spark.hadoop.*``; on a classic session also in the Hadoop
         configuration; a Connect client cannot read credential settings, which Spark
         redacts, so there the catalog's credentials are set whatever the session has), set
         in the session's conf, never in the JVM's Hadoop configuration;
       * not found (the pip pyspark: no S3A, and no Maven to add it): "python". Spark tasks
         run icepark's Arrow reader and writer, which reach storage with pyarrow's S3 file
         system; the FileIO travels pickled in each task with the catalog's properties
         (endpoint, region, path style, keys, session token, retries), so executors read
         and write the bytes themselves, never through the driver.

Both paths give the same rows and the same file metrics; the native one is faster where Spark
can prune columns (see :mod:`icepark.spark.read.reader`). The answers are logged at info level;
a missing file system is an answer, never a Py4J stack trace.

For new operations: call ``choose_storage_path(spark, table.io, locations)`` and use
icepark's FileIO (in tasks) when it says ``"python"``; or read with ``read_tasks`` and write
with ``write_files``, which do.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pyspark.sql import SparkSession

from icepark.io import (
    S3_ACCESS_KEY_ID,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_RETRY_NUM_RETRIES,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
    FileIO,
)
from icepark.spark.paths import to_spark_location
from icepark.spark.runtime import is_connect, server_key

__all__ = [
    "StoragePath",
    "choose_storage_path",
    "check_storage",
    "spark_has_filesystem",
    "s3a_settings",
    "configure_s3a",
]

StoragePath = Literal["native", "python"]

_LOG = logging.getLogger(__name__)
_LOCAL = frozenset({"", "file"})
_S3A = "s3a"
_S3A_PREFIX = "fs.s3a."
_TEMPORARY_CREDENTIALS = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
_SIMPLE_CREDENTIALS = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"

# what Spark redacts by default (spark.redaction.regex): values a Connect client cannot read
_REDACTED = re.compile(r"(?i)secret|password|token|access[.]?key")
_lock = threading.Lock()
_schemes: dict[tuple[Any, str], bool] = {}  # (Spark application, scheme) -> has a file system
# Hadoop's own file system classes of the schemes object stores use (core-default.xml and
# the connectors' service files), for a Connect session to look up on its server
_HADOOP_CLASSES = {
    "s3a": "org.apache.hadoop.fs.s3a.S3AFileSystem",
    "gs": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
    "abfs": "org.apache.hadoop.fs.azurebfs.AzureBlobFileSystem",
    "abfss": "org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem",
    "wasb": "org.apache.hadoop.fs.azure.NativeAzureFileSystem",
    "wasbs": "org.apache.hadoop.fs.azure.NativeAzureFileSystem$Secure",
    "hdfs": "org.apache.hadoop.hdfs.DistributedFileSystem",
}
_checked: set[tuple[str, ...]] = set()  # buckets known to answer, per endpoint and key


def _split(location: str) -> tuple[str, str]:
    """(Spark's scheme, authority) of a location; ``("", "")`` for a bare local path."""
    spark_location = to_spark_location(location)
    scheme, sep, rest = spark_location.partition("://")
    if not sep:
        head, colon, _ = spark_location.partition(":")
        return (head.lower(), "") if colon and len(head) > 1 else ("", "")
    return scheme.lower(), rest.split("/", 1)[0]


def spark_has_filesystem(spark: SparkSession, scheme: str) -> bool:
    """Whether Spark has a Hadoop file system for ``scheme``; asked once per Spark
    application and scheme, answered from memory after that."""
    key = (server_key(spark), scheme)
    with _lock:
        if key in _schemes:
            return _schemes[key]
    found: str | None = None
    try:
        found = (
            _connect_filesystem(spark, scheme)
            if is_connect(spark)
            else _jvm_filesystem(spark, scheme)
        )
    except Exception as exc:  # Py4JJavaError / a Connect error: no such class
        first = str(exc).strip().splitlines()
        detail = next((line for line in first if "Exception" in line), first[0] if first else "")
        _LOG.info(
            "Spark has no Hadoop file system for %s:// (%s): icepark reads and writes "
            "files there in Python tasks through its own FileIO (pyarrow)",
            scheme,
            detail.strip()[:200] or type(exc).__name__,
        )
    else:
        if found is None:
            _LOG.info(
                "Spark names no Hadoop file system class for %s://: icepark reads and writes "
                "files there in Python tasks through its own FileIO (pyarrow)",
                scheme,
            )
        else:
            _LOG.info("Spark reads and writes %s:// natively with %s", scheme, found)
    with _lock:
        _schemes[key] = found is not None
    return found is not None


def _jvm_filesystem(spark: SparkSession, scheme: str) -> str:
    jvm: Any = spark._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    return str(jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, conf).getName())


def _connect_filesystem(spark: SparkSession, scheme: str) -> str | None:
    """The server's file system class for ``scheme``, None when it cannot load it."""
    name = _conf_value(spark, f"fs.{scheme}.impl") or _HADOOP_CLASSES.get(scheme)
    if name is None:
        return None
    quoted = "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"
    row = spark.sql(f"SELECT try_reflect('java.lang.Class', 'forName', {quoted}) AS c").first()
    return name if row is not None and row[0] else None


def _conf_value(spark: SparkSession, key: str) -> str | None:
    """A Hadoop setting as the session's conf holds it: as itself (session settings reach
    the Hadoop configuration of its jobs) or as ``spark.hadoop.<key>``."""
    for name in (key, f"spark.hadoop.{key}"):
        value = spark.conf.get(name, None)
        if value is not None:
            return str(value)
    return None


def check_storage(io: FileIO, locations: Iterable[str]) -> None:
    """Check, once per process, that the storage of each bucket the locations name can be
    used (:meth:`FileIO.check_access`); raises :class:`~icepark.errors.StorageError` naming
    the bucket and endpoint when it cannot."""
    props = io.properties
    seen: set[tuple[str, str]] = set()
    for location in locations:
        scheme, bucket = _split(location)
        if scheme in _LOCAL or (scheme, bucket) in seen:
            continue
        seen.add((scheme, bucket))
        key = (
            type(io).__qualname__,
            scheme,
            bucket,
            props.get(S3_ENDPOINT, ""),
            props.get(S3_ACCESS_KEY_ID, ""),
            str(hash((props.get(S3_SECRET_ACCESS_KEY), props.get(S3_SESSION_TOKEN)))),
        )
        with _lock:
            if key in _checked:
                continue
        io.check_access(location)
        with _lock:
            _checked.add(key)


def s3a_settings(properties: Mapping[str, str], bucket: str) -> dict[str, str]:
    """The Hadoop S3A settings of ``bucket`` (``fs.s3a.bucket.<bucket>.*``) that the
    catalog's ``s3.*`` properties imply: endpoint, path-style access, static or temporary
    credentials, region and, if given, retries. Only what the properties say (credentials
    from the driver's environment are not copied: executors look them up themselves)."""
    out: dict[str, str] = {}
    endpoint = properties.get(S3_ENDPOINT)
    if endpoint:
        endpoint = endpoint.rstrip("/")
        out["endpoint"] = endpoint
        if endpoint.lower().startswith("http://"):
            out["connection.ssl.enabled"] = "false"
        style = properties.get(S3_PATH_STYLE_ACCESS)
        out["path.style.access"] = (
            "true" if style is None or style.strip().lower() == "true" else "false"
        )
    elif properties.get(S3_PATH_STYLE_ACCESS):
        style = properties[S3_PATH_STYLE_ACCESS].strip().lower()
        out["path.style.access"] = "true" if style == "true" else "false"
    access_key = properties.get(S3_ACCESS_KEY_ID)
    secret_key = properties.get(S3_SECRET_ACCESS_KEY)
    if access_key and secret_key:
        out["access.key"] = access_key
        out["secret.key"] = secret_key
        token = properties.get(S3_SESSION_TOKEN)
        if token:
            out["session.token"] = token
            out["aws.credentials.provider"] = _TEMPORARY_CREDENTIALS
        else:
            out["aws.credentials.provider"] = _SIMPLE_CREDENTIALS
    region = properties.get(S3_REGION) or properties.get("client.region")
    if region:
        out["endpoint.region"] = region
    retries = properties.get(S3_RETRY_NUM_RETRIES)
    if retries:
        out["retry.limit"] = retries.strip()
    return {f"{_S3A_PREFIX}bucket.{bucket}.{key}": value for key, value in out.items()}


def configure_s3a(
    spark: SparkSession, properties: Mapping[str, str], buckets: Iterable[str]
) -> dict[str, str]:
    """Set the session's S3A settings for ``buckets`` from the catalog's properties
    (:func:`s3a_settings`) where neither the bucket's key nor the global ``fs.s3a.*`` key is
    set already (in the session's conf, also as ``spark.hadoop.*``; on a classic session
    also in the Hadoop configuration); returns what was set. Settings go into the session's
    conf only."""
    if is_connect(spark):

        def is_set(name: str) -> bool:
            # a Connect server hides credential settings from clients (Spark's redaction):
            # whether one is set cannot be known, and the catalog's own are set then
            return not _REDACTED.search(name) and _conf_value(spark, name) is not None

    else:
        conf = spark._jsparkSession.sessionState().newHadoopConf()

        def is_set(name: str) -> bool:
            return conf.get(name) is not None  # the session's settings are in it too

    applied: dict[str, str] = {}
    for bucket in sorted(set(buckets)):
        prefix = f"{_S3A_PREFIX}bucket.{bucket}."
        for key, value in s3a_settings(properties, bucket).items():
            option = key[len(prefix) :]
            if is_set(key) or is_set(_S3A_PREFIX + option):
                continue
            spark.conf.set(key, value)
            applied[key] = value
    if applied:
        shown = sorted(k for k in applied if not k.endswith(("key", "token")))
        _LOG.info("S3A settings derived from the catalog's s3.* properties: %s", shown)
    return applied


def choose_storage_path(
    spark: SparkSession, io: FileIO, locations: Iterable[str]
) -> tuple[StoragePath, str]:
    """``("native" | "python", why)``: whether Spark's own file systems can read and write
    every one of ``locations`` (the files a job touches), checking each bucket first (see
    the module docstring)."""
    firsts: dict[tuple[str, str], str] = {}
    for location in locations:
        firsts.setdefault(_split(location), location)
    remote = {target: loc for target, loc in firsts.items() if target[0] not in _LOCAL}
    if not remote:
        return "native", "local files"
    check_storage(io, remote.values())
    schemes = sorted({scheme for scheme, _ in remote})
    missing = [scheme for scheme in schemes if not spark_has_filesystem(spark, scheme)]
    if missing:
        names = ", ".join(f"{s}://" for s in missing)
        return "python", (
            f"Spark has no Hadoop file system for {names} (for S3 it needs hadoop-aws): "
            "icepark's reader and writer run in Python tasks through its FileIO"
        )
    s3a_buckets = [bucket for scheme, bucket in remote if scheme == _S3A]
    if s3a_buckets:
        configure_s3a(spark, io.properties, s3a_buckets)
    return "native", f"Spark's Hadoop file systems for {', '.join(s + '://' for s in schemes)}"
