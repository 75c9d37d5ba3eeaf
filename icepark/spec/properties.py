"""Table properties: every name icepark reads, its default and how its value is parsed.

The one place property names are typed out, as Java's ``TableProperties``. Read a property
with its definition, never with a string::

    from icepark.spec import properties as P

    retries = P.COMMIT_NUM_RETRIES.get(metadata.properties)      # int, default 4
    mode = P.row_level_mode(metadata.properties, "delete")       # write.delete.mode

A value that does not parse raises :class:`~icepark.errors.ValidationError` naming the
property and the value. :data:`ALL` maps each name to its definition (the README's table of
properties is checked against it); :data:`PREFIXES` lists the families of names that end in a
column name (``write.metadata.metrics.column.<col>``).

Defaults are Java's (Iceberg 1.10) unless the docstring of the definition says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from icepark.errors import ValidationError

__all__ = [
    "AVRO_COMPRESSION",
    "AVRO_COMPRESSION_LEVEL",
    "COMMIT_MAX_RETRY_WAIT_MS",
    "COMMIT_MIN_RETRY_WAIT_MS",
    "COMMIT_NUM_RETRIES",
    "COMMIT_TOTAL_RETRY_TIME_MS",
    "COPY_ON_WRITE",
    "DEFAULT_FILE_FORMAT",
    "DEFAULT_NAME_MAPPING",
    "DATA_PLANNING_MODE",
    "DEFAULT_WRITE_METRICS_MODE",
    "DELETE_DEFAULT_FILE_FORMAT",
    "DELETE_ISOLATION_LEVEL",
    "DELETE_MODE",
    "DELETE_PLANNING_MODE",
    "DELETE_TARGET_FILE_SIZE_BYTES",
    "FORMAT_VERSION",
    "GC_ENABLED",
    "MANIFEST_COMPRESSION",
    "MANIFEST_MERGE_ENABLED",
    "MANIFEST_MIN_MERGE_COUNT",
    "MANIFEST_TARGET_SIZE_BYTES",
    "MAX_REF_AGE_MS",
    "MAX_SNAPSHOT_AGE_MS",
    "MERGE_ISOLATION_LEVEL",
    "MERGE_MODE",
    "MERGE_ON_READ",
    "METADATA_COMPRESSION",
    "METADATA_DELETE_AFTER_COMMIT_ENABLED",
    "METADATA_PREVIOUS_VERSIONS_MAX",
    "METRICS_MAX_INFERRED_COLUMN_DEFAULTS",
    "METRICS_MODE_COLUMN_CONF_PREFIX",
    "MIN_SNAPSHOTS_TO_KEEP",
    "ORC_COMPRESSION",
    "ORC_STRIPE_SIZE_BYTES",
    "PARQUET_COMPRESSION",
    "PARQUET_COMPRESSION_LEVEL",
    "PARQUET_DICT_SIZE_BYTES",
    "PARQUET_PAGE_ROW_LIMIT",
    "PARQUET_PAGE_SIZE_BYTES",
    "PARQUET_ROW_GROUP_SIZE_BYTES",
    "PLANNING_MODES",
    "Property",
    "RESERVED",
    "SERIALIZABLE",
    "SNAPSHOT",
    "SPARK_WRITE_PARTITIONED_FANOUT_ENABLED",
    "ADAPTIVE_SPLIT_SIZE_ENABLED",
    "SPLIT_LOOKBACK",
    "SPLIT_OPEN_FILE_COST",
    "SPLIT_SIZE",
    "TableProperty",
    "UPDATE_ISOLATION_LEVEL",
    "UPDATE_MODE",
    "WRITE_AUDIT_PUBLISH_ENABLED",
    "WRITE_DATA_LOCATION",
    "WRITE_DISTRIBUTION_MODE",
    "WRITE_FOLDER_STORAGE_LOCATION",
    "WRITE_METADATA_LOCATION",
    "WRITE_TARGET_FILE_SIZE_BYTES",
    "avro_codec",
    "data_folder",
    "metadata_folder",
    "parse_bool",
    "row_level_isolation",
    "row_level_mode",
]

T = TypeVar("T")


def parse_bool(raw: str) -> bool:
    """``true``/``false`` in any case (Java's ``Boolean.parseBoolean`` accepts only these
    as true; anything else is refused here rather than read as false)."""
    value = raw.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise ValueError(f"expected true or false, got {raw!r}")


def _int(raw: str) -> int:
    return int(raw.strip())


def _str(raw: str) -> str:
    return raw.strip()


def _lower(raw: str) -> str:
    return raw.strip().lower()


def _optional_int(raw: str) -> int | None:
    return int(raw.strip()) if raw.strip() else None


@dataclass(frozen=True)
class Property(Generic[T]):
    """One table property: its name, default and parser."""

    name: str
    default: T
    parse: Callable[[str], T]
    doc: str
    choices: tuple[str, ...] = ()

    def get(self, properties: Mapping[str, str], default: T | None = None) -> T:
        """The value in ``properties`` (``default``, else the property's own default, when
        absent); :class:`ValidationError` names the property and value when it is invalid."""
        raw = properties.get(self.name)
        if raw is None:
            return self.default if default is None else default
        try:
            value = self.parse(raw)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"Invalid table property {self.name}={raw!r}: {exc}") from None
        if self.choices and value not in self.choices:
            raise ValidationError(
                f"Invalid table property {self.name}={raw!r}: use one of {', '.join(self.choices)}"
            )
        return value

    def raw(self, properties: Mapping[str, str]) -> str | None:
        """The value as stored, or None."""
        return properties.get(self.name)


TableProperty = Property  # Java's spelling


ALL: dict[str, Property[object]] = {}


def _p(
    name: str,
    default: T,
    parse: Callable[[str], T],
    doc: str,
    choices: tuple[str, ...] = (),
) -> Property[T]:
    prop = Property(name, default, parse, doc, choices)
    ALL[name] = prop  # type: ignore[assignment]
    return prop


# -- format and identity -----------------------------------------------------------------------

FORMAT_VERSION = _p("format-version", 2, _int, "Format version of a new table (1, 2 or 3).")
RESERVED = frozenset(
    {
        "format-version",
        "uuid",
        "snapshot-count",
        "current-snapshot-id",
        "current-snapshot-summary",
        "current-snapshot-timestamp-ms",
        "current-schema",
        "default-partition-spec",
        "default-sort-order",
    }
)
"""Properties that describe metadata rather than configure the table; never stored."""

# -- commits -----------------------------------------------------------------------------------

COMMIT_NUM_RETRIES = _p(
    "commit.retry.num-retries",
    4,
    _int,
    "Retries of a commit whose operation must re-validate on the fresh metadata "
    "(overwrites, row-level changes). Appends retry until the total timeout.",
)
COMMIT_MIN_RETRY_WAIT_MS = _p("commit.retry.min-wait-ms", 100, _int, "Least wait between retries.")
COMMIT_MAX_RETRY_WAIT_MS = _p("commit.retry.max-wait-ms", 60_000, _int, "Most wait per retry.")
COMMIT_TOTAL_RETRY_TIME_MS = _p(
    "commit.retry.total-timeout-ms", 1_800_000, _int, "Time after which a commit stops retrying."
)
MANIFEST_TARGET_SIZE_BYTES = _p(
    "commit.manifest.target-size-bytes", 8 * 1024 * 1024, _int, "Target size of merged manifests."
)
MANIFEST_MIN_MERGE_COUNT = _p(
    "commit.manifest.min-count-to-merge",
    100,
    _int,
    "Manifests of a spec before a merge append merges them.",
)
MANIFEST_MERGE_ENABLED = _p(
    "commit.manifest-merge.enabled", True, parse_bool, "Whether appends merge manifests."
)

# -- metadata files ----------------------------------------------------------------------------

METADATA_COMPRESSION = _p(
    "write.metadata.compression-codec",
    "none",
    _lower,
    "Compression of metadata JSON files: none or gzip.",
    ("none", "gzip"),
)
METADATA_PREVIOUS_VERSIONS_MAX = _p(
    "write.metadata.previous-versions-max",
    100,
    _int,
    "Previous metadata files kept in the metadata log.",
)
METADATA_DELETE_AFTER_COMMIT_ENABLED = _p(
    "write.metadata.delete-after-commit.enabled",
    False,
    parse_bool,
    "Delete metadata files that drop out of the metadata log after each commit.",
)
WRITE_METADATA_LOCATION = _p(
    "write.metadata.path", "", _str, "Folder of metadata files (default <location>/metadata)."
)
WRITE_DATA_LOCATION = _p(
    "write.data.path", "", _str, "Folder of data files (default <location>/data)."
)
WRITE_FOLDER_STORAGE_LOCATION = _p(
    "write.folder-storage.path", "", _str, "Deprecated name of write.data.path."
)
AVRO_COMPRESSION = _p(
    "write.avro.compression-codec",
    "gzip",
    _lower,
    "Compression of Avro files (Avro data files, and manifests and manifest lists unless "
    "write.manifest.compression-codec is set): gzip (deflate), zstd, snappy or uncompressed.",
)
MANIFEST_COMPRESSION = _p(
    "write.manifest.compression-codec",
    "",
    _lower,
    "Compression of manifests and manifest lists (newer Java; default: the Avro codec).",
)
AVRO_COMPRESSION_LEVEL = _p(
    "write.avro.compression-level", None, _optional_int, "Compression level of Avro files."
)

# -- data files --------------------------------------------------------------------------------

DEFAULT_FILE_FORMAT = _p(
    "write.format.default",
    "parquet",
    _lower,
    "File format of new data files.",
    ("parquet", "avro", "orc"),
)
DELETE_DEFAULT_FILE_FORMAT = _p(
    "write.delete.format.default",
    "",
    _lower,
    "File format of new delete files (default: write.format.default).",
)
WRITE_TARGET_FILE_SIZE_BYTES = _p(
    "write.target-file-size-bytes", 536_870_912, _int, "Target size of data files."
)
DELETE_TARGET_FILE_SIZE_BYTES = _p(
    "write.delete.target-file-size-bytes", 67_108_864, _int, "Target size of delete files."
)
PARQUET_ROW_GROUP_SIZE_BYTES = _p(
    "write.parquet.row-group-size-bytes", 134_217_728, _int, "Parquet row group size."
)
PARQUET_PAGE_SIZE_BYTES = _p(
    "write.parquet.page-size-bytes", 1_048_576, _int, "Parquet data page size."
)
PARQUET_PAGE_ROW_LIMIT = _p("write.parquet.page-row-limit", 20_000, _int, "Rows per page.")
PARQUET_DICT_SIZE_BYTES = _p(
    "write.parquet.dict-size-bytes", 2_097_152, _int, "Parquet dictionary page size limit."
)
PARQUET_COMPRESSION = _p(
    "write.parquet.compression-codec",
    "zstd",
    _lower,
    "Parquet compression: zstd, snappy, gzip, lz4, brotli or uncompressed/none.",
)
PARQUET_COMPRESSION_LEVEL = _p(
    "write.parquet.compression-level", None, _optional_int, "Parquet compression level."
)
ORC_COMPRESSION = _p("write.orc.compression-codec", "zlib", _lower, "ORC compression.")
ORC_STRIPE_SIZE_BYTES = _p("write.orc.stripe-size-bytes", 67_108_864, _int, "ORC stripe size.")
DEFAULT_WRITE_METRICS_MODE = _p(
    "write.metadata.metrics.default",
    "truncate(16)",
    _lower,
    "Metrics kept for columns: none, counts, truncate(N) or full.",
)
METRICS_MAX_INFERRED_COLUMN_DEFAULTS = _p(
    "write.metadata.metrics.max-inferred-column-defaults",
    100,
    _int,
    "Columns beyond which only counts are kept by default.",
)
METRICS_MODE_COLUMN_CONF_PREFIX = "write.metadata.metrics.column."
WRITE_DISTRIBUTION_MODE = _p(
    "write.distribution-mode",
    "",
    _lower,
    "How Spark distributes rows before writing: none, hash or range (default: hash for "
    "partitioned tables, none otherwise).",
)
SPARK_WRITE_PARTITIONED_FANOUT_ENABLED = _p(
    "write.spark.fanout.enabled",
    False,
    parse_bool,
    "Keep a file open per partition instead of sorting each task's rows by partition. Spark "
    "writes on a table without a sort order treat it as true when it is not set, as Java's "
    "do; false sorts.",
)
WRITE_AUDIT_PUBLISH_ENABLED = _p(
    "write.wap.enabled",
    False,
    parse_bool,
    "Write-audit-publish: writes with a wap.id are staged, not made current.",
)
DEFAULT_NAME_MAPPING = _p(
    "schema.name-mapping.default",
    "",
    _str,
    "Name mapping (JSON) for data files without field ids.",
)

# -- reads -------------------------------------------------------------------------------------

READ_AHEAD_FILES = _p(
    "read.read-ahead.files",
    2,
    _int,
    "icepark: data files a one-machine scan reads at once (1 reads them one after another); "
    "memory grows with it.",
)
SPLIT_SIZE = _p("read.split.target-size", 134_217_728, _int, "Target size of a read split.")
SPLIT_LOOKBACK = _p("read.split.planning-lookback", 10, _int, "Open bins when packing splits.")
SPLIT_OPEN_FILE_COST = _p(
    "read.split.open-file-cost", 4_194_304, _int, "Least weight of a file in a split."
)
ADAPTIVE_SPLIT_SIZE_ENABLED = _p(
    "read.split.adaptive-size.enabled",
    True,
    parse_bool,
    "Lower the split size of a small Spark scan so that every core gets a split.",
)

PLANNING_MODES = ("auto", "local", "distributed")
DATA_PLANNING_MODE = _p(
    "read.data-planning-mode",
    "auto",
    _lower,
    "Where a Spark scan reads its data manifests: local (the driver), distributed (Spark "
    "tasks) or auto (distributed when the cluster has more cores than the driver and the "
    "manifests are big enough to pay for a job).",
    PLANNING_MODES,
)
DELETE_PLANNING_MODE = _p(
    "read.delete-planning-mode",
    "auto",
    _lower,
    "Where a Spark scan reads its delete manifests: local, distributed or auto (as "
    "read.data-planning-mode).",
    PLANNING_MODES,
)

# -- row-level changes -------------------------------------------------------------------------

COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"
SERIALIZABLE = "serializable"
SNAPSHOT = "snapshot"
_MODES = (COPY_ON_WRITE, MERGE_ON_READ)
_LEVELS = (SERIALIZABLE, SNAPSHOT)

DELETE_MODE = _p("write.delete.mode", COPY_ON_WRITE, _lower, "Mode of deletes.", _MODES)
UPDATE_MODE = _p("write.update.mode", COPY_ON_WRITE, _lower, "Mode of updates.", _MODES)
MERGE_MODE = _p("write.merge.mode", COPY_ON_WRITE, _lower, "Mode of merges.", _MODES)
DELETE_ISOLATION_LEVEL = _p(
    "write.delete.isolation-level", SERIALIZABLE, _lower, "Isolation of deletes.", _LEVELS
)
UPDATE_ISOLATION_LEVEL = _p(
    "write.update.isolation-level", SERIALIZABLE, _lower, "Isolation of updates.", _LEVELS
)
MERGE_ISOLATION_LEVEL = _p(
    "write.merge.isolation-level", SERIALIZABLE, _lower, "Isolation of merges.", _LEVELS
)

# -- snapshot retention ------------------------------------------------------------------------

GC_ENABLED = _p(
    "gc.enabled",
    True,
    parse_bool,
    "Whether expiry and orphan removal may delete files of this table.",
)
MAX_SNAPSHOT_AGE_MS = _p(
    "history.expire.max-snapshot-age-ms",
    5 * 24 * 60 * 60 * 1000,
    _int,
    "Age past which snapshots are expired (unless kept by min-snapshots-to-keep or a ref).",
)
MIN_SNAPSHOTS_TO_KEEP = _p(
    "history.expire.min-snapshots-to-keep",
    1,
    _int,
    "Snapshots of each branch kept by expiry, whatever their age.",
)
MAX_REF_AGE_MS = _p(
    "history.expire.max-ref-age-ms",
    2**63 - 1,
    _int,
    "Age past which branches and tags (other than main) are removed by expiry.",
)

PREFIXES: tuple[str, ...] = (METRICS_MODE_COLUMN_CONF_PREFIX,)

_OPERATIONS = ("delete", "update", "merge")


def _check_operation(operation: str) -> None:
    if operation not in _OPERATIONS:
        raise ValueError(f"unknown row-level operation {operation!r}")


def row_level_mode(properties: Mapping[str, str], operation: str) -> str:
    """``write.<operation>.mode`` (``delete``, ``update`` or ``merge``): copy-on-write (the
    default, as in Java) or merge-on-read."""
    _check_operation(operation)
    return {"delete": DELETE_MODE, "update": UPDATE_MODE, "merge": MERGE_MODE}[operation].get(
        properties
    )


def row_level_isolation(properties: Mapping[str, str], operation: str) -> str:
    """``write.<operation>.isolation-level``: serializable (the default) or snapshot."""
    _check_operation(operation)
    prop = {
        "delete": DELETE_ISOLATION_LEVEL,
        "update": UPDATE_ISOLATION_LEVEL,
        "merge": MERGE_ISOLATION_LEVEL,
    }[operation]
    return prop.get(properties)


isolation_level = row_level_isolation


def metadata_folder(location: str, properties: Mapping[str, str]) -> str:
    """Where metadata files go: ``write.metadata.path``, else ``<location>/metadata``."""
    folder = WRITE_METADATA_LOCATION.get(properties) or location.rstrip("/") + "/metadata"
    return folder.rstrip("/")


def data_folder(location: str, properties: Mapping[str, str]) -> str:
    """Where data files go: ``write.data.path`` (or its deprecated name), else
    ``<location>/data``."""
    folder = (
        WRITE_DATA_LOCATION.get(properties)
        or WRITE_FOLDER_STORAGE_LOCATION.get(properties)
        or location.rstrip("/") + "/data"
    )
    return folder.rstrip("/")


def avro_codec(properties: Mapping[str, str], manifest: bool = False) -> str:
    """``write.avro.compression-codec`` (with ``manifest``, ``write.manifest.compression-codec``
    first) as an Avro container codec name: gzip is Avro's ``deflate``, uncompressed is
    ``null``."""
    codec = (MANIFEST_COMPRESSION.get(properties) if manifest else "") or AVRO_COMPRESSION.get(
        properties
    )
    return {"gzip": "deflate", "uncompressed": "null", "none": "null"}.get(codec, codec)
