"""The file group planner: Java's size arithmetic and options (SizeBasedFileRewritePlanner,
BinPackRewriteFilePlanner)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.manifest import DataFile, FileContent
from icepark.spec.conversions import to_bytes
from icepark.spec.metadata_columns import DELETE_FILE_PATH_FIELD_ID
from icepark.spec.types import StringType
from icepark.table.maintenance.rewrite_planner import (
    RewriteOptions,
    SizeThresholds,
    pack_groups,
    referenced_data_file,
)

MB = 1024 * 1024


def _sizes(target: int = 100 * MB, **options: str) -> SizeThresholds:
    return SizeThresholds.from_options(
        RewriteOptions({"target-file-size-bytes": str(target), **options}, "test"), 512 * MB
    )


def test_defaults_are_java_s() -> None:
    sizes = SizeThresholds.from_options(RewriteOptions({}, "test"), 512 * MB)
    assert (sizes.target, sizes.min, sizes.max) == (
        512 * MB,
        int(512 * MB * 0.75),
        int(512 * MB * 1.8),
    )
    assert sizes.min_input_files == 5 and not sizes.rewrite_all
    assert sizes.max_group_size == 100 * 1024 * MB
    assert sizes.write_max_file_size == int(512 * MB + (sizes.max - 512 * MB) * 0.5)


def test_expected_output_files_rounds_as_java() -> None:
    sizes = _sizes()
    assert sizes.expected_output_files(10 * MB) == 1
    # 10.1 targets: the 0.1 remainder is spread (files stay within 10% of the target)
    assert sizes.expected_output_files(1010 * MB) == 10
    # a remainder larger than the minimum file size gets a file of its own
    assert sizes.expected_output_files(1080 * MB) == 11
    # 1.5 targets: spreading would make 150% files, so the remainder is kept
    assert sizes.expected_output_files(150 * MB) == 2
    assert sizes.input_split_size(1010 * MB, 10) == 101 * MB + 5 * 1024
    assert sizes.input_split_size(50 * MB, 1) == 100 * MB


@given(st.lists(st.integers(1, 300), max_size=40), st.integers(1, 500))
def test_pack_keeps_order_and_respects_the_target(weights: list[int], target: int) -> None:
    groups = pack_groups(weights, lambda w: w, target)
    assert [w for g in groups for w in g] == weights
    for g in groups:
        assert sum(g) <= target or len(g) == 1


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"target-file-size-bytes": "0"}, "target-file-size-bytes"),
        ({"min-file-size-bytes": str(200 * MB)}, "min-file-size-bytes"),
        ({"max-file-size-bytes": str(50 * MB)}, "max-file-size-bytes"),
        ({"min-input-files": "0"}, "min-input-files"),
        ({"max-file-group-size-bytes": "-1"}, "max-file-group-size-bytes"),
        ({"min-input-files": "many"}, "min-input-files"),
        ({"rewrite-all": "yes"}, "rewrite-all"),
    ],
)
def test_bad_values_name_the_option(options: dict[str, str], named: str) -> None:
    with pytest.raises(ValidationError, match=named):
        _sizes(**options)


def test_unknown_options_are_named() -> None:
    with pytest.raises(ValidationError, match="min-inputs"):
        RewriteOptions({"min-inputs": "1"}, "test").check_known({"min-input-files"})


def test_file_scoped_deletes() -> None:
    dv = DataFile(
        FileContent.POSITION_DELETES, "d.puffin", "PUFFIN", (), 3, 10, referenced_data_file="a"
    )
    assert referenced_data_file(dv) == "a"
    bound = to_bytes(StringType(), "s3://b/data/x.parquet")
    one = DataFile(
        FileContent.POSITION_DELETES,
        "p.parquet",
        "PARQUET",
        (),
        3,
        10,
        lower_bounds={DELETE_FILE_PATH_FIELD_ID: bound},
        upper_bounds={DELETE_FILE_PATH_FIELD_ID: bound},
    )
    assert referenced_data_file(one) == "s3://b/data/x.parquet"
    assert referenced_data_file(one.replace(upper_bounds={DELETE_FILE_PATH_FIELD_ID: b"z"})) is None
