"""Table properties: one definition per name, parsed and checked; the README and the site
name only these."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from icepark.errors import ValidationError
from icepark.spec import properties as P

ROOT = Path(__file__).resolve().parents[2]
_PROPERTY = re.compile(
    r"`((?:write|read|commit|history|gc|schema)\.[a-z0-9.<>-]+|format-version)(?:=[^`]*)?`"
)


def _documented(text: str) -> set[str]:
    # (a module such as `history.py` is not a property)
    return {m.group(1) for m in _PROPERTY.finditer(text) if not m.group(1).endswith(".py")}


def test_every_property_the_docs_name_is_defined() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    names = set().union(*(_documented(p.read_text()) for p in pages))
    assert len(names) >= 15, "the guides name table properties"  # (the reference is generated)
    unknown = []
    for name in sorted(names):
        if name in P.ALL or any(name.startswith(prefix) for prefix in P.PREFIXES):
            continue
        if "<" in name:  # a family such as write.<op>.mode: every member must be defined
            family = re.compile("^" + re.sub(r"<[^>]+>", "[a-z]+", name.replace(".", r"\.")) + "$")
            if any(family.match(n) for n in P.ALL):
                continue
        unknown.append(name)
    assert unknown == []


def test_defaults_and_parsing() -> None:
    assert P.COMMIT_NUM_RETRIES.get({}) == 4
    assert P.COMMIT_NUM_RETRIES.get({"commit.retry.num-retries": " 7 "}) == 7
    assert P.MANIFEST_MERGE_ENABLED.get({"commit.manifest-merge.enabled": "FALSE"}) is False
    assert P.MAX_SNAPSHOT_AGE_MS.get({}) == 5 * 24 * 3600 * 1000
    assert P.row_level_mode({"write.delete.mode": "Merge-On-Read"}, "delete") == "merge-on-read"
    assert P.row_level_isolation({}, "merge") == "serializable"
    assert P.metadata_folder("s3://b/t/", {}) == "s3://b/t/metadata"
    assert P.data_folder("s3://b/t", {"write.folder-storage.path": "s3://x/"}) == "s3://x"
    assert P.avro_codec({}) == "deflate"
    assert P.avro_codec({"write.avro.compression-codec": "uncompressed"}) == "null"
    assert P.avro_codec({"write.manifest.compression-codec": "zstd"}, manifest=True) == "zstd"


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        (P.COMMIT_NUM_RETRIES, "four"),
        (P.MANIFEST_MERGE_ENABLED, "yes"),
        (P.DELETE_MODE, "merge-on-write"),
        (P.METADATA_COMPRESSION, "lz4"),
    ],
)
def test_bad_values_name_the_property_and_value(prop: P.Property[object], value: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(f"{prop.name}={value!r}")):
        prop.get({prop.name: value})


def test_names_are_unique_and_documented() -> None:
    for name, prop in P.ALL.items():
        assert prop.name == name
        assert prop.doc.strip(), name
