"""Puffin files (format/puffin-spec.md) and the deletion-vector blob they carry."""

from icepark.puffin.dv import (
    DELETION_VECTOR_MAGIC,
    deserialize_deletion_vector,
    deserialize_roaring64,
    serialize_deletion_vector,
    serialize_roaring64,
)
from icepark.puffin.file import (
    DELETION_VECTOR_V1,
    MAGIC,
    BlobMetadata,
    PuffinFile,
    PuffinWriter,
    read_puffin,
    read_puffin_blob,
)

__all__ = [
    "DELETION_VECTOR_MAGIC",
    "DELETION_VECTOR_V1",
    "MAGIC",
    "BlobMetadata",
    "PuffinFile",
    "PuffinWriter",
    "deserialize_deletion_vector",
    "deserialize_roaring64",
    "read_puffin",
    "read_puffin_blob",
    "serialize_deletion_vector",
    "serialize_roaring64",
]
