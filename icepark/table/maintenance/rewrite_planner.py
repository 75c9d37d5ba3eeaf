"""Planning a rewrite: which files to rewrite, in which groups, into how many files.

Java's ``SizeBasedFileRewritePlanner`` with ``BinPackRewriteFilePlanner`` (data files) and
``BinPackRewritePositionDeletePlanner`` (position delete files), options and defaults
included. How a plan is made:

1. The files of the starting snapshot that may hold rows matching the filter are grouped by
   partition (files of an older spec than the table's all go into one group: their rows may
   belong to several partitions of the current spec).
2. Unless ``rewrite-all``, a file is a candidate when its size is outside
   [``min-file-size-bytes``, ``max-file-size-bytes``] (75% and 180% of
   ``target-file-size-bytes`` by default), or (data files) it has at least
   ``delete-file-threshold`` delete files, or at least ``delete-ratio-threshold`` of its rows
   deleted by file-scoped deletes.
3. Each partition's candidates are packed in order into groups of at most
   ``max-file-group-size-bytes`` (100 GB); a group is kept when it has enough files
   (``min-input-files``, 5, and more than one), more than a target size of content, more
   than the maximum size of content, or a file with too many deletes.
4. Each group gets its expected number of output files (the remainder is spread over the
   others when that keeps them within 10% of the target), the split size that reads one
   output file per split, and the largest size a written file may reach (halfway between
   the target and the maximum). Groups are ordered by ``rewrite-job-order``.

Options are validated as Java does: an unknown option, or a value out of range, raises
:class:`~icepark.errors.ValidationError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from icepark.errors import ValidationError
from icepark.expressions import AlwaysTrue, BooleanExpression
from icepark.io import FileIO
from icepark.manifest import DataFile, FileContent
from icepark.planning.planner import FileScanTask, plan_files
from icepark.spec import properties as P
from icepark.spec.conversions import from_bytes
from icepark.spec.metadata import TableMetadata
from icepark.spec.metadata_columns import DELETE_FILE_PATH_FIELD_ID
from icepark.spec.snapshots import Snapshot
from icepark.spec.types import StringType

__all__ = [
    "DEFAULT_MAX_FILE_GROUP_SIZE_BYTES",
    "FileGroupInfo",
    "FileRewritePlan",
    "PartitionKey",
    "RewriteFileGroup",
    "RewriteOptions",
    "SizeThresholds",
    "job_order",
    "order_groups",
    "output_spec_id",
    "pack_groups",
    "plan_data_file_groups",
    "referenced_data_file",
    "JOB_ORDERS",
]

# -- options -----------------------------------------------------------------------------------

TARGET_FILE_SIZE_BYTES = "target-file-size-bytes"
MIN_FILE_SIZE_BYTES = "min-file-size-bytes"
MAX_FILE_SIZE_BYTES = "max-file-size-bytes"
MIN_INPUT_FILES = "min-input-files"
REWRITE_ALL = "rewrite-all"
MAX_FILE_GROUP_SIZE_BYTES = "max-file-group-size-bytes"
DELETE_FILE_THRESHOLD = "delete-file-threshold"
DELETE_RATIO_THRESHOLD = "delete-ratio-threshold"
REWRITE_JOB_ORDER = "rewrite-job-order"
MAX_FILES_TO_REWRITE = "max-files-to-rewrite"
OUTPUT_SPEC_ID = "output-spec-id"
COMPRESSION_FACTOR = "compression-factor"

SIZE_OPTIONS = frozenset(
    {
        TARGET_FILE_SIZE_BYTES,
        MIN_FILE_SIZE_BYTES,
        MAX_FILE_SIZE_BYTES,
        MIN_INPUT_FILES,
        REWRITE_ALL,
        MAX_FILE_GROUP_SIZE_BYTES,
    }
)
DATA_PLANNER_OPTIONS = SIZE_OPTIONS | {
    DELETE_FILE_THRESHOLD,
    DELETE_RATIO_THRESHOLD,
    REWRITE_JOB_ORDER,
    MAX_FILES_TO_REWRITE,
    OUTPUT_SPEC_ID,
}
SHUFFLING_PLANNER_OPTIONS = DATA_PLANNER_OPTIONS | {COMPRESSION_FACTOR}
POSITION_DELETE_PLANNER_OPTIONS = SIZE_OPTIONS | {REWRITE_JOB_ORDER}

DEFAULT_MAX_FILE_GROUP_SIZE_BYTES = 100 * 1024 * 1024 * 1024
_MIN_RATIO, _MAX_RATIO = 0.75, 1.80
_MIN_INPUT_FILES = 5
_DELETE_RATIO_THRESHOLD = 0.3
_SPLIT_OVERHEAD = 5 * 1024
JOB_ORDERS = ("bytes-asc", "bytes-desc", "files-asc", "files-desc", "none")

T = TypeVar("T")


class RewriteOptions:
    """A procedure's options (``{"target-file-size-bytes": "1000", ...}``), read by name.

    Unknown names are refused up front (:meth:`check_known`); each value is parsed when read,
    and a value that does not parse or is out of range raises :class:`ValidationError` naming
    the option."""

    def __init__(self, options: Mapping[str, Any] | None, what: str) -> None:
        self.values = {str(k): str(v) for k, v in (options or {}).items()}
        self.what = what

    def check_known(self, valid: Iterable[str]) -> None:
        unknown = sorted(set(self.values) - set(valid))
        if unknown:
            raise ValidationError(
                f"Cannot use options {unknown}, they are not supported by {self.what} "
                f"(valid options: {', '.join(sorted(valid))})"
            )

    def get(self, name: str, default: T, parse: Callable[[str], T]) -> T:
        raw = self.values.get(name)
        if raw is None:
            return default
        try:
            return parse(raw.strip())
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"Invalid value for option {name!r}: {raw!r} ({exc})") from None

    def integer(self, name: str, default: int) -> int:
        return self.get(name, default, int)

    def number(self, name: str, default: float) -> float:
        return self.get(name, default, float)

    def flag(self, name: str, default: bool) -> bool:
        return self.get(name, default, P.parse_bool)

    def text(self, name: str, default: str) -> str:
        return self.get(name, default, str)

    def optional_integer(self, name: str) -> int | None:
        return self.get(name, None, int)

    def require(self, ok: bool, name: str, message: str) -> None:
        if not ok:
            value = self.values.get(name)
            shown = f" is set to {value}" if value is not None else ""
            raise ValidationError(f"Invalid option {name!r}{shown}: {message}")


# -- sizes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SizeThresholds:
    """Target, minimum and maximum file sizes, and what a group's size implies."""

    target: int
    min: int
    max: int
    min_input_files: int = _MIN_INPUT_FILES
    rewrite_all: bool = False
    max_group_size: int = DEFAULT_MAX_FILE_GROUP_SIZE_BYTES

    @classmethod
    def from_options(cls, options: RewriteOptions, default_target: int) -> SizeThresholds:
        target = options.integer(TARGET_FILE_SIZE_BYTES, default_target)
        low = options.integer(MIN_FILE_SIZE_BYTES, int(target * _MIN_RATIO))
        high = options.integer(MAX_FILE_SIZE_BYTES, int(target * _MAX_RATIO))
        options.require(target > 0, TARGET_FILE_SIZE_BYTES, "must be > 0")
        options.require(low >= 0, MIN_FILE_SIZE_BYTES, "must be >= 0")
        options.require(
            target > low,
            MIN_FILE_SIZE_BYTES,
            f"'{TARGET_FILE_SIZE_BYTES}' ({target}) must be > '{MIN_FILE_SIZE_BYTES}' ({low}), "
            "all new files would be smaller than the min threshold",
        )
        options.require(
            target < high,
            MAX_FILE_SIZE_BYTES,
            f"'{TARGET_FILE_SIZE_BYTES}' ({target}) must be < '{MAX_FILE_SIZE_BYTES}' ({high}), "
            "all new files would be larger than the max threshold",
        )
        min_inputs = options.integer(MIN_INPUT_FILES, _MIN_INPUT_FILES)
        options.require(min_inputs > 0, MIN_INPUT_FILES, "must be > 0")
        group = options.integer(MAX_FILE_GROUP_SIZE_BYTES, DEFAULT_MAX_FILE_GROUP_SIZE_BYTES)
        options.require(group > 0, MAX_FILE_GROUP_SIZE_BYTES, "must be > 0")
        return cls(target, low, high, min_inputs, options.flag(REWRITE_ALL, False), group)

    def outside_range(self, size: int) -> bool:
        return size < self.min or size > self.max

    @property
    def write_max_file_size(self) -> int:
        """The size a written file may reach: the target plus half of (max - target)."""
        return int(self.target + (self.max - self.target) * 0.5)

    def expected_output_files(self, input_size: int) -> int:
        """Files to write for ``input_size`` bytes: the remainder gets a file of its own when
        it is big enough, or when spreading it would make files over 10% too large."""
        if input_size < self.target:
            return 1
        with_remainder = -(-input_size // self.target)
        without_remainder = input_size // self.target
        average = input_size // without_remainder
        if input_size % self.target > self.min:
            return with_remainder
        if average < min(1.1 * self.target, float(self.write_max_file_size)):
            return without_remainder
        return with_remainder

    def input_split_size(self, input_size: int, expected_files: int) -> int:
        """The read split size that makes one output file per split."""
        estimated = input_size // expected_files + _SPLIT_OVERHEAD
        if estimated < self.target:
            return self.target
        return min(estimated, self.write_max_file_size)

    def enough_input_files(self, count: int) -> bool:
        return count > 1 and count >= self.min_input_files

    def enough_content(self, count: int, size: int) -> bool:
        return count > 1 and size > self.target

    def too_much_content(self, size: int) -> bool:
        return size > self.max


def pack_groups(items: Sequence[T], weight: Callable[[T], int], target: int) -> list[list[T]]:
    """Java's ``BinPacking.ListPacker(target, lookback 1, largestBinFirst false)``: items in
    order, a new group whenever the next item does not fit in the open one."""
    groups: list[list[T]] = []
    current: list[T] = []
    filled = 0
    for item in items:
        w = weight(item)
        if current and filled + w > target:
            groups.append(current)
            current, filled = [], 0
        current.append(item)
        filled += w
    if current:
        groups.append(current)
    return groups


PartitionKey = tuple[int, tuple[Any, ...]]
"""A group's partition: (spec id, partition tuple); (-1, ()) for files of older specs."""

_OTHER_SPECS: PartitionKey = (-1, ())


@dataclass(frozen=True)
class FileGroupInfo:
    """Java's ``FileGroupInfo``: the group's number overall and within its partition."""

    global_index: int
    partition_index: int
    partition: PartitionKey


# -- data files --------------------------------------------------------------------------------


def referenced_data_file(f: DataFile) -> str | None:
    """The one data file a delete file applies to, if it is file-scoped (a DV, or a position
    delete file whose ``file_path`` bounds are equal), as Java's ``ContentFileUtil``."""
    if f.content != FileContent.POSITION_DELETES:
        return None
    if f.referenced_data_file is not None:
        return f.referenced_data_file
    lower = (f.lower_bounds or {}).get(DELETE_FILE_PATH_FIELD_ID)
    upper = (f.upper_bounds or {}).get(DELETE_FILE_PATH_FIELD_ID)
    if lower is not None and lower == upper:
        return str(from_bytes(StringType(), lower))
    return None


@dataclass
class RewriteFileGroup:
    """Data files rewritten together into ``expected_output_files`` files of
    ``output_spec_id`` (Java's ``RewriteFileGroup``)."""

    info: FileGroupInfo
    tasks: list[FileScanTask]
    output_spec_id: int
    max_output_file_size: int
    input_split_size: int
    expected_output_files: int
    added_files: list[DataFile] = field(default_factory=list)

    @property
    def rewritten_files(self) -> list[DataFile]:
        return [t.file for t in self.tasks]

    @property
    def input_file_count(self) -> int:
        return len(self.tasks)

    @property
    def input_size(self) -> int:
        return sum(t.file.file_size_in_bytes for t in self.tasks)

    @property
    def dangling_dvs(self) -> list[DataFile]:
        """The deletion vectors of the rewritten files (removed with them)."""
        seen: dict[tuple[str, int | None], DataFile] = {}
        for t in self.tasks:
            for d in t.delete_files:
                if d.referenced_data_file is not None and d.content_offset is not None:
                    seen.setdefault((d.file_path, d.content_offset), d)
        return list(seen.values())

    @property
    def input_record_count(self) -> int:
        return sum(t.file.record_count for t in self.tasks)

    def describe(self, total: int) -> str:
        _, partition = self.info.partition
        where = f", partition {partition}" if partition else ""
        return (
            f"file group {self.info.global_index}/{total}{where}: {self.input_file_count} files, "
            f"{self.input_size:,} bytes"
        )


@dataclass(frozen=True)
class FileRewritePlan:
    """Java's ``FileRewritePlan``: the groups to rewrite, in order, and how many each
    partition has."""

    groups: list[Any]
    groups_in_partition: dict[PartitionKey, int]

    @property
    def total_group_count(self) -> int:
        return sum(self.groups_in_partition.values())


def order_groups(groups: list[Any], order: str) -> list[Any]:
    if order == "bytes-asc":
        return sorted(groups, key=lambda g: g.input_size)
    if order == "bytes-desc":
        return sorted(groups, key=lambda g: -g.input_size)
    if order == "files-asc":
        return sorted(groups, key=lambda g: g.input_file_count)
    if order == "files-desc":
        return sorted(groups, key=lambda g: -g.input_file_count)
    return groups


def job_order(options: RewriteOptions) -> str:
    order = options.text(REWRITE_JOB_ORDER, "none").lower()
    options.require(order in JOB_ORDERS, REWRITE_JOB_ORDER, f"use one of {', '.join(JOB_ORDERS)}")
    return order


def output_spec_id(options: RewriteOptions, metadata: TableMetadata) -> int:
    spec_id = options.integer(OUTPUT_SPEC_ID, metadata.default_spec_id)
    options.require(
        metadata.spec_by_id(spec_id) is not None,
        OUTPUT_SPEC_ID,
        f"the table {metadata.location} has no partition spec with id {spec_id}",
    )
    return spec_id


def plan_data_file_groups(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    options: RewriteOptions,
    row_filter: BooleanExpression | None = None,
    *,
    case_sensitive: bool = True,
    compression_factor: float | None = None,
) -> FileRewritePlan:
    """Java's ``BinPackRewriteFilePlanner.plan`` (``compression_factor``: the shuffling
    planner's, for sort and z-order rewrites)."""
    sizes = SizeThresholds.from_options(
        options, P.WRITE_TARGET_FILE_SIZE_BYTES.get(metadata.properties)
    )
    delete_files = options.integer(DELETE_FILE_THRESHOLD, 2**31 - 1)
    options.require(delete_files >= 0, DELETE_FILE_THRESHOLD, "must be >= 0")
    ratio = options.number(DELETE_RATIO_THRESHOLD, _DELETE_RATIO_THRESHOLD)
    options.require(0 < ratio <= 1, DELETE_RATIO_THRESHOLD, "must be > 0 and <= 1")
    max_files = options.optional_integer(MAX_FILES_TO_REWRITE)
    options.require(max_files is None or max_files > 0, MAX_FILES_TO_REWRITE, "must be > 0")
    order = job_order(options)
    out_spec = output_spec_id(options, metadata)
    factor = 1.0 if compression_factor is None else compression_factor
    options.require(factor > 0, COMPRESSION_FACTOR, "must be > 0")

    def too_many_deletes(t: FileScanTask) -> bool:
        return len(t.delete_files) >= delete_files

    def too_high_delete_ratio(t: FileScanTask) -> bool:
        if not t.delete_files or not t.file.record_count:
            return False
        known = sum(d.record_count for d in t.delete_files if referenced_data_file(d))
        return min(known, t.file.record_count) / t.file.record_count >= ratio

    def candidate(t: FileScanTask) -> bool:
        size = t.file.file_size_in_bytes
        return sizes.outside_range(size) or too_many_deletes(t) or too_high_delete_ratio(t)

    def keep(group: list[FileScanTask]) -> bool:
        size = sum(t.file.file_size_in_bytes for t in group)
        return (
            sizes.enough_input_files(len(group))
            or sizes.enough_content(len(group), size)
            or sizes.too_much_content(size)
            or any(too_many_deletes(t) or too_high_delete_ratio(t) for t in group)
        )

    tasks = plan_files(
        io,
        metadata,
        snapshot,
        row_filter if row_filter is not None else AlwaysTrue(),
        None,
        case_sensitive,
    )
    by_partition: dict[PartitionKey, list[FileScanTask]] = {}
    for t in tasks:
        key = (t.spec_id, tuple(t.file.partition))
        if t.spec_id != metadata.default_spec_id:
            key = _OTHER_SPECS
        by_partition.setdefault(key, []).append(t)

    groups: list[RewriteFileGroup] = []
    in_partition: dict[PartitionKey, int] = {}
    rewriting = 0
    for key, part_tasks in by_partition.items():
        chosen = part_tasks if sizes.rewrite_all else [t for t in part_tasks if candidate(t)]
        packed = pack_groups(chosen, lambda t: t.file.file_size_in_bytes, sizes.max_group_size)
        if not sizes.rewrite_all:
            packed = [g for g in packed if keep(g)]
        if not packed:
            continue
        in_partition[key] = len(packed)
        for number, group in enumerate(packed, 1):
            size = sum(t.file.file_size_in_bytes for t in group)
            if max_files is not None:
                if rewriting >= max_files:
                    break
                group = group[: max_files - rewriting]
            rewriting += len(group)
            expected = max(1, sizes.expected_output_files(int(size * factor)))
            groups.append(
                RewriteFileGroup(
                    FileGroupInfo(len(groups) + 1, number, key),
                    [_whole(t) for t in group],
                    out_spec,
                    sizes.write_max_file_size,
                    sizes.input_split_size(size, sizes.expected_output_files(size)),
                    expected,
                )
            )
    return FileRewritePlan(order_groups(groups, order), in_partition)


def _whole(task: FileScanTask) -> FileScanTask:
    """The task without its residual (a rewrite reads every row: Java's ignoreResiduals)."""
    if isinstance(task.residual, AlwaysTrue):
        return task
    return FileScanTask(
        task.file,
        task.delete_files,
        AlwaysTrue(),
        task.spec_id,
        task.data_sequence_number,
        task.start,
        task.length,
    )
