"""Snapshots, refs, logs and statistics files: JSON shapes, round trips and errors."""

from __future__ import annotations

from typing import Any

import pytest

from icepark.errors import InvalidMetadataError, ValidationError
from icepark.spec.snapshots import (
    MAIN_BRANCH,
    BlobMetadata,
    MetadataLogEntry,
    Operation,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
    StatisticsFile,
    Summary,
)


def test_main_branch_name() -> None:
    assert MAIN_BRANCH == "main"


def test_summary_json_is_flat_with_operation() -> None:
    s = Summary(Operation.OVERWRITE, {"added-records": "10", "operation": "ignored"})
    assert s.to_json() == {"operation": "overwrite", "added-records": "10"}
    assert Summary.from_json(s.to_json()) == s
    assert s["operation"] == "overwrite"
    assert s["added-records"] == "10"
    assert dict(s) == s.to_json()
    assert len(s) == 2
    assert hash(s) == hash(Summary(Operation.OVERWRITE, {"added-records": "10"}))


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"added-records": "1"}, "operation"),
        ({"operation": "merge"}, "Invalid snapshot operation"),
        ({"operation": "append", "n": 1}, "Cannot parse to a string value: n"),
        ([], "Cannot parse summary from non-object"),
    ],
)
def test_summary_errors(obj: Any, message: str) -> None:
    with pytest.raises(InvalidMetadataError, match=message):
        Summary.from_json(obj)


def test_snapshot_json_matches_java_shape() -> None:
    snap = Snapshot(
        snapshot_id=2,
        parent_snapshot_id=1,
        sequence_number=5,
        timestamp_ms=1000,
        manifest_list="s3://a/snap-2.avro",
        summary=Summary(Operation.APPEND, {"k": "v"}),
        schema_id=3,
        first_row_id=100,
        added_rows=7,
        key_id="key-1",
    )
    assert snap.to_json() == {
        "sequence-number": 5,
        "snapshot-id": 2,
        "parent-snapshot-id": 1,
        "timestamp-ms": 1000,
        "summary": {"operation": "append", "k": "v"},
        "manifest-list": "s3://a/snap-2.avro",
        "schema-id": 3,
        "first-row-id": 100,
        "added-rows": 7,
        "key-id": "key-1",
    }
    assert Snapshot.from_json(snap.to_json()) == snap
    assert snap.operation is Operation.APPEND


def test_snapshot_minimal_and_sequence_zero_omitted() -> None:
    snap = Snapshot(1, None, 0, 5)
    assert snap.to_json() == {"snapshot-id": 1, "timestamp-ms": 5}
    back = Snapshot.from_json(snap.to_json())
    assert back == snap
    assert back.sequence_number == 0
    assert back.operation is None


def test_snapshot_v1_legacy_manifests() -> None:
    obj = {"snapshot-id": 1, "timestamp-ms": 5, "manifests": ["a.avro", "b.avro"]}
    snap = Snapshot.from_json(obj)
    assert snap.manifests == ("a.avro", "b.avro")
    assert snap.manifest_list is None
    assert snap.to_json() == obj
    # with a manifest list, the legacy list is ignored
    both = Snapshot.from_json({**obj, "manifest-list": "list.avro"})
    assert both.manifests is None and both.manifest_list == "list.avro"


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"timestamp-ms": 5}, "Cannot parse missing long: snapshot-id"),
        ({"snapshot-id": 1}, "Cannot parse missing long: timestamp-ms"),
        ({"snapshot-id": "1", "timestamp-ms": 5}, "Cannot parse to a long value: snapshot-id"),
        ({"snapshot-id": True, "timestamp-ms": 5}, "snapshot-id"),
        ({"snapshot-id": 2**63, "timestamp-ms": 5}, "snapshot-id"),
        ({"snapshot-id": 1, "timestamp-ms": 5, "manifest-list": 3}, "manifest-list"),
        ({"snapshot-id": 1, "timestamp-ms": 5, "manifests": "a"}, "manifests"),
        ({"snapshot-id": 1, "timestamp-ms": 5, "schema-id": 2**40}, "schema-id"),
        ("nope", "Cannot parse snapshot from non-object"),
    ],
)
def test_snapshot_errors(obj: Any, message: str) -> None:
    with pytest.raises(InvalidMetadataError, match=message):
        Snapshot.from_json(obj)


def test_snapshot_ref_json() -> None:
    branch = SnapshotRef(5, SnapshotRefType.BRANCH, 2, 1000, 2000)
    assert branch.to_json() == {
        "snapshot-id": 5,
        "type": "branch",
        "min-snapshots-to-keep": 2,
        "max-snapshot-age-ms": 1000,
        "max-ref-age-ms": 2000,
    }
    assert SnapshotRef.from_json(branch.to_json()) == branch
    tag = SnapshotRef(5, SnapshotRefType.TAG, max_ref_age_ms=10)
    assert tag.to_json() == {"snapshot-id": 5, "type": "tag", "max-ref-age-ms": 10}
    assert SnapshotRef.from_json(tag.to_json()) == tag
    assert tag.is_tag and not tag.is_branch
    assert SnapshotRef.from_json({"snapshot-id": 1, "type": "BRANCH"}).is_branch


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": SnapshotRefType.TAG, "min_snapshots_to_keep": 1}, "Tags do not support"),
        ({"type": SnapshotRefType.TAG, "max_snapshot_age_ms": 1}, "Tags do not support"),
        ({"min_snapshots_to_keep": 0}, "Min snapshots to keep must be greater than 0"),
        ({"max_snapshot_age_ms": 0}, "Max snapshot age must be greater than 0"),
        ({"max_ref_age_ms": -1}, "Max reference age must be greater than 0"),
    ],
)
def test_snapshot_ref_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SnapshotRef(1, **kwargs)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"snapshot-id": 1, "type": "label"}, "Invalid snapshot ref type: label"),
        ({"snapshot-id": 1}, "Cannot parse missing string: type"),
        ({"type": "tag"}, "Cannot parse missing long: snapshot-id"),
        ({"snapshot-id": 1, "type": "tag", "min-snapshots-to-keep": 1}, "Tags do not support"),
    ],
)
def test_snapshot_ref_errors(obj: Any, message: str) -> None:
    with pytest.raises(InvalidMetadataError, match=message):
        SnapshotRef.from_json(obj)


def test_log_entries() -> None:
    s = SnapshotLogEntry(7, 100)
    assert s.to_json() == {"timestamp-ms": 100, "snapshot-id": 7}
    assert SnapshotLogEntry.from_json(s.to_json()) == s
    m = MetadataLogEntry("s3://t/metadata/v1.metadata.json", 100)
    assert m.to_json() == {"timestamp-ms": 100, "metadata-file": "s3://t/metadata/v1.metadata.json"}
    assert MetadataLogEntry.from_json(m.to_json()) == m
    with pytest.raises(InvalidMetadataError, match="metadata-file"):
        MetadataLogEntry.from_json({"timestamp-ms": 1})
    with pytest.raises(InvalidMetadataError, match="timestamp-ms"):
        SnapshotLogEntry.from_json({"snapshot-id": 1})


def test_statistics_file_json() -> None:
    blob = BlobMetadata("apache-datasketches-theta-v1", 3, 4, (1, 2), {"ndv": "12"})
    sf = StatisticsFile(3, "s3://a/stats.puffin", 413, 42, None, (blob,))
    assert sf.to_json() == {
        "snapshot-id": 3,
        "statistics-path": "s3://a/stats.puffin",
        "file-size-in-bytes": 413,
        "file-footer-size-in-bytes": 42,
        "blob-metadata": [
            {
                "type": "apache-datasketches-theta-v1",
                "snapshot-id": 3,
                "sequence-number": 4,
                "fields": [1, 2],
                "properties": {"ndv": "12"},
            }
        ],
    }
    assert StatisticsFile.from_json(sf.to_json()) == sf
    with_key = StatisticsFile(3, "p", 1, 1, "a2V5", ())
    assert with_key.to_json()["key-metadata"] == "a2V5"
    assert StatisticsFile.from_json(with_key.to_json()) == with_key
    # blob properties are optional and empty ones are not written
    bare = BlobMetadata("ndv", 1, 1, [1])
    assert "properties" not in bare.to_json()
    assert BlobMetadata.from_json(bare.to_json()) == bare


def test_statistics_errors() -> None:
    good = StatisticsFile(3, "p", 1, 1).to_json()
    for key in (
        "snapshot-id",
        "statistics-path",
        "file-size-in-bytes",
        "file-footer-size-in-bytes",
        "blob-metadata",
    ):
        broken = {k: v for k, v in good.items() if k != key}
        with pytest.raises(InvalidMetadataError, match=key):
            StatisticsFile.from_json(broken)
    with pytest.raises(InvalidMetadataError, match="fields"):
        BlobMetadata.from_json(
            {"type": "t", "snapshot-id": 1, "sequence-number": 1, "fields": ["a"]}
        )


def test_partition_statistics_file_json() -> None:
    p = PartitionStatisticsFile(3, "s3://a/ps.parquet", 43)
    assert p.to_json() == {
        "snapshot-id": 3,
        "statistics-path": "s3://a/ps.parquet",
        "file-size-in-bytes": 43,
    }
    assert PartitionStatisticsFile.from_json(p.to_json()) == p
    with pytest.raises(InvalidMetadataError, match="file-size-in-bytes"):
        PartitionStatisticsFile.from_json({"snapshot-id": 3, "statistics-path": "x"})
