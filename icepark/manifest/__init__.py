"""Manifests and manifest lists: the Avro metadata files that track a table's files."""

from icepark.manifest.manifest import (
    ManifestWriter,
    read_manifest,
    read_manifest_metadata,
    write_manifest,
)
from icepark.manifest.manifest_list import (
    WrittenManifestList,
    read_manifest_list,
    write_manifest_list,
)
from icepark.manifest.schemas import (
    DATA_FILE_FIELDS,
    DEFAULT_BLOCK_SIZE,
    MANIFEST_LIST_FIELDS,
    data_file_type,
    manifest_entry_avro_schema,
    manifest_entry_schema,
    manifest_list_avro_schema,
    manifest_list_schema,
)
from icepark.spec.manifests import (
    UNASSIGNED_SEQUENCE_NUMBER,
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)

__all__ = [
    "DATA_FILE_FIELDS",
    "DEFAULT_BLOCK_SIZE",
    "MANIFEST_LIST_FIELDS",
    "UNASSIGNED_SEQUENCE_NUMBER",
    "DataFile",
    "FileContent",
    "FileFormat",
    "ManifestContent",
    "ManifestEntry",
    "ManifestEntryStatus",
    "ManifestFile",
    "ManifestWriter",
    "PartitionFieldSummary",
    "WrittenManifestList",
    "data_file_type",
    "manifest_entry_avro_schema",
    "manifest_entry_schema",
    "manifest_list_avro_schema",
    "manifest_list_schema",
    "read_manifest",
    "read_manifest_list",
    "read_manifest_metadata",
    "write_manifest",
    "write_manifest_list",
]
