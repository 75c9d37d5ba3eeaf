"""``table.add_files(paths)``: register existing Parquet files without rewriting them.

Java's ``add_files`` procedure (``SparkTableUtil.importSparkTable``). How it flows:

1. **Find the files** (:func:`find_files`): each path is a Parquet file or a folder searched
   recursively (files and folders starting with ``_`` or ``.`` are skipped, as Hive and Spark
   do). Hive-style folders between a given folder and its files (``category=a/day=2024-01-05``)
   give partition values: a segment whose key is a partition field's name (or, for an
   identity field, its source column's) is parsed as that field's human string
   (``__HIVE_DEFAULT_PARTITION__`` is null).
2. **A name mapping** (``schema.name-mapping.default``): files written without Iceberg field
   ids are read by column name through it. The table's own mapping is used when it has one;
   otherwise one is made from the current schema
   (:func:`~icepark.spec.name_mapping.create_name_mapping`) and committed with the files when
   one of them lacks field ids (Java's procedure always commits it; files with ids do not
   need it, and icepark's Spark reads take a slower path for tables with a mapping).
3. **Describe each file from its footer** (:func:`describe_file`): every column must map to a
   table column of the same type or one it may be promoted to, every required column must be
   present (or be an identity partition source given by the path); partition values not given
   by the path come from the column statistics where the transform gives one value for the
   file's min and max (identity, truncate, bucket, temporal transforms), and a path value is
   checked against the statistics when the file has the column; metrics come from the footer
   (:func:`~icepark.arrow.footer.data_file_from_footer`).
4. **Commit** one ``append`` snapshot (:class:`AddFilesAction`). With
   ``check_duplicate_files`` (the default) a file the branch already references, or given
   twice, fails the commit, also when a concurrent commit added it.

Bad input raises :class:`~icepark.errors.ValidationError` naming the file (and column), and
nothing is committed. The files are never deleted, whatever fails: they are the caller's.
"""

from __future__ import annotations

import datetime as dt
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.arrow.footer import data_file_from_footer
from icepark.arrow.metrics import MetricsConfig
from icepark.arrow.schema import apply_name_mapping, arrow_to_schema, field_id_of
from icepark.errors import InvalidSchemaError, ValidationError
from icepark.io import FileIO
from icepark.manifest import DataFile, ManifestContent
from icepark.planning.walk import changes_since, live_entries
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.spec.name_mapping import NameMapping, create_name_mapping, name_mapping_to_json
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema, walk_fields
from icepark.spec.schema_update import is_promotion_allowed
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)
from icepark.spec.updates import SetPropertiesUpdate
from icepark.spec.values import from_json
from icepark.table.transaction import Transaction
from icepark.table.write.operations import Action, MetadataAction, Staged
from icepark.table.write.producers import SnapshotProducer

if TYPE_CHECKING:
    from icepark.table.interface import TableLike

__all__ = [
    "AddFilesAction",
    "AddFilesResult",
    "Describe",
    "FoundFile",
    "add_files",
    "commit_added_files",
    "describe_file",
    "find_files",
    "name_mapping_for",
    "partition_values_from_path",
]

_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

Describe = Callable[[TableMetadata, list["FoundFile"], NameMapping], list[tuple[DataFile, bool]]]
"""Reads the footers of found files (e.g. in Spark tasks): each file's entry, and whether the
file lacks field ids (so that the table needs the name mapping)."""


@dataclass(frozen=True)
class AddFilesResult:
    """Java's ``add_files`` procedure columns."""

    added_files_count: int = 0
    changed_partition_count: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class FoundFile:
    """A file to add: its location, size and the partition values its path gives (by
    partition field id)."""

    location: str
    size: int
    path_values: dict[int, Any] = field(default_factory=dict)


# -- finding files -----------------------------------------------------------------------------


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def find_files(
    io: FileIO, spec: PartitionSpec, schema: Schema, paths: Iterable[str]
) -> list[FoundFile]:
    """The Parquet files under ``paths`` with the partition values of their folders."""
    found: list[FoundFile] = []
    for given in paths:
        root = _absolute(given.rstrip("/"))
        single = io.new_input(root)
        if single.exists():
            found.append(FoundFile(root, single.length(), {}))
            continue
        entries = io.list_prefix(root)
        if not entries:
            raise ValidationError(f"Cannot add files: {given} does not exist or is empty")
        for e in entries:
            rel = _relative(root, e.location)
            parts = rel.split("/")
            if any(_hidden(p) for p in parts) or not parts[-1].endswith(".parquet"):
                continue
            values = partition_values_from_path(spec, schema, parts[:-1], e.location)
            found.append(FoundFile(e.location, e.size, values))
    return found


def _absolute(path: str) -> str:
    """A local path made absolute (a data file's location must be, and the folders between a
    given folder and its files must be found in listed locations, which are absolute)."""
    if "://" in path or path.startswith("file:"):
        return path
    return os.path.abspath(path)


def _relative(root: str, location: str) -> str:
    marker = root.split("://", 1)[-1].lstrip("/")
    rest = location.split("://", 1)[-1].lstrip("/")
    if rest.startswith(marker):
        return rest[len(marker) :].lstrip("/")
    return posixpath.basename(location)


def _field_keys(spec: PartitionSpec, schema: Schema) -> dict[str, PartitionField]:
    keys: dict[str, PartitionField] = {}
    for pf in spec.fields:
        keys[pf.name.lower()] = pf
        if pf.transform.is_identity:
            source = schema.find_column_name(pf.source_id)
            if source is not None:
                keys.setdefault(source.lower(), pf)
    return keys


def partition_values_from_path(
    spec: PartitionSpec, schema: Schema, folders: Sequence[str], location: str
) -> dict[int, Any]:
    """Partition values (by partition field id) from ``key=value`` folders."""
    keys = _field_keys(spec, schema)
    types = {f.field_id: f.field_type for f in spec.partition_type(schema).fields}
    out: dict[int, Any] = {}
    for folder in folders:
        key, sep, raw = folder.partition("=")
        pf = keys.get(unquote(key).lower()) if sep else None
        if pf is None:
            continue
        text = unquote(raw)
        try:
            out[pf.field_id] = _parse_human(pf, types[pf.field_id], text)
        except (ValueError, ValidationError) as exc:
            raise ValidationError(
                f"Cannot add file {location}: folder {folder!r} is not a value of partition "
                f"field {pf.name} ({exc})"
            ) from None
    return out


_HOUR = re.compile(r"^(\d{4,})-(\d{2})-(\d{2})-(\d{2})$")
_MONTH = re.compile(r"^(\d{4,})-(\d{2})$")


def _parse_human(pf: PartitionField, t: IcebergType, text: str) -> Any:
    """A partition value from the human string Java writes into paths."""
    if text in (_HIVE_NULL, "null"):
        return None
    name = str(pf.transform)
    epoch = dt.date(1970, 1, 1)
    if name == "year":
        return int(text) - 1970
    if name == "month":
        m = _MONTH.match(text)
        if not m:
            raise ValueError("expected YYYY-MM")
        return (int(m.group(1)) - 1970) * 12 + int(m.group(2)) - 1
    if name == "day":
        return (dt.date.fromisoformat(text) - epoch).days
    if name == "hour":
        m = _HOUR.match(text)
        if not m:
            raise ValueError("expected YYYY-MM-DD-HH")
        day = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        return (day - epoch).days * 24 + int(m.group(4))
    if isinstance(t, IntegerType | LongType):
        return int(text)
    if isinstance(t, FloatType | DoubleType):
        return float(text)
    if isinstance(t, BooleanType):
        if text.lower() not in ("true", "false"):
            raise ValueError("expected true or false")
        return text.lower() == "true"
    if isinstance(t, DecimalType):
        return Decimal(text)
    if isinstance(t, TimestampType | TimestamptzType | DateType):
        text = text.replace(" ", "T")
        if isinstance(t, TimestamptzType) and not re.search(r"(Z|[+-]\d{2}:\d{2})$", text):
            text += "+00:00"
    return from_json(text, t)


# -- name mapping ------------------------------------------------------------------------------


def name_mapping_for(metadata: TableMetadata) -> tuple[NameMapping, bool]:
    """The mapping files without field ids are read through, and whether it must be
    committed (the table has none yet)."""
    existing = metadata.name_mapping()
    if existing is not None:
        return existing, False
    return create_name_mapping(metadata.schema()), True


# -- describing a file -------------------------------------------------------------------------


def _read_footer(io: FileIO, location: str) -> pq.FileMetaData:
    try:
        with io.new_input(location).open() as stream:
            return pq.ParquetFile(stream).metadata
    except (OSError, pa.ArrowInvalid) as exc:
        raise ValidationError(
            f"Cannot add file {location}: not a readable Parquet file ({exc})"
        ) from None


def _int96_columns(md: pq.FileMetaData) -> set[str]:
    return {
        md.schema.column(i).path
        for i in range(md.num_columns)
        if md.schema.column(i).physical_type == "INT96"
    }


def _types_fit(file_type: IcebergType, table_type: IcebergType, int96: bool) -> bool:
    if file_type == table_type or is_promotion_allowed(file_type, table_type):
        return True
    if int96:  # legacy timestamps read as nanoseconds, stored by Iceberg as micros
        return isinstance(file_type, TimestampNanoType | TimestamptzNanoType) and isinstance(
            table_type, TimestampType | TimestamptzType
        )
    return file_type.is_nested and type(file_type) is type(table_type)


def _check_fits(
    location: str,
    md: pq.FileMetaData,
    schema: Schema,
    spec: PartitionSpec,
    mapping: NameMapping,
    path_values: Mapping[int, Any],
) -> set[int]:
    """Check that the file's columns fit the table schema; the field ids it holds."""
    with_ids = apply_name_mapping(md.schema.to_arrow_schema(), mapping)

    def unmapped(f: pa.Field, prefix: str) -> str | None:
        name = f"{prefix}{f.name}"
        if field_id_of(f) is None:
            return name
        if pa.types.is_struct(f.type):
            for i in range(f.type.num_fields):
                found = unmapped(f.type.field(i), name + ".")
                if found:
                    return found
        return None

    for f in with_ids:
        missing = unmapped(f, "")
        if missing:
            raise ValidationError(
                f"Cannot add file {location}: its column {missing!r} is not in the table schema"
            )
    try:
        file_schema = arrow_to_schema(with_ids)
    except InvalidSchemaError as exc:
        raise ValidationError(f"Cannot add file {location}: {exc}") from None
    int96 = _int96_columns(md)
    held: set[int] = set()
    for path, f in walk_fields(file_schema.as_struct()):
        target = schema.field_or_none(f.field_id)
        if target is None:
            raise ValidationError(
                f"Cannot add file {location}: its column {path!r} (field id {f.field_id}) is "
                f"not in the table schema"
            )
        if not _types_fit(f.field_type, target.field_type, path in int96):
            raise ValidationError(
                f"Cannot add file {location}: its column {path!r} is {f.field_type}, the "
                f"table's {schema.find_column_name(target.field_id)!r} is {target.field_type}"
            )
        held.add(f.field_id)
    from_path = {
        pf.source_id
        for pf in spec.fields
        if pf.transform.is_identity and pf.field_id in path_values
    }
    for top in schema.fields:
        if top.required and top.field_id not in held and top.field_id not in from_path:
            raise ValidationError(
                f"Cannot add file {location}: it lacks required column {top.name!r}"
            )
    return held


def describe_file(
    io: FileIO, metadata: TableMetadata, found: FoundFile, mapping: NameMapping
) -> tuple[DataFile, bool]:
    """The data file entry of ``found`` (see the module docstring, step 3), and whether the
    file lacks field ids."""
    schema, spec = metadata.schema(), metadata.spec()
    md = _read_footer(io, found.location)
    lacks_ids = any(field_id_of(f) is None for f in md.schema.to_arrow_schema())
    held = _check_fits(found.location, md, schema, spec, mapping, found.path_values)
    # values the file can show are computed from its statistics and checked against the path
    given = {
        pf.field_id: found.path_values[pf.field_id]
        for pf in spec.fields
        if pf.field_id in found.path_values and pf.source_id not in held
    }
    missing = [
        schema.find_column_name(pf.source_id)
        for pf in spec.fields
        if pf.field_id not in found.path_values
        and pf.source_id not in held
        and not pf.transform.is_void
    ]
    if missing:
        raise ValidationError(
            f"Cannot add file {found.location}: no partition value for column {missing[0]!r} "
            f"(neither in the file nor in a key=value folder)"
        )
    config = MetricsConfig.from_properties(metadata.properties, schema, metadata.sort_order())
    try:
        data_file = data_file_from_footer(
            io,
            found.location,
            found.size,
            schema=schema,
            spec=spec,
            sort_order=None,
            config=config,
            name_mapping=mapping,
            partition_values=given,
        )
    except ValidationError as exc:
        message = str(exc)
        if found.location not in message:
            message = f"{found.location}: {message}"
        raise ValidationError(f"Cannot add file: {message}") from None
    for i, pf in enumerate(spec.fields):
        if pf.field_id in found.path_values and pf.field_id not in given:
            from_path = found.path_values[pf.field_id]
            if data_file.partition[i] != from_path:
                raise ValidationError(
                    f"Cannot add file {found.location}: its rows have {pf.name}="
                    f"{data_file.partition[i]!r}, its folder says {from_path!r}"
                )
    return data_file, lacks_ids


# -- committing --------------------------------------------------------------------------------


@dataclass
class AddFilesAction(Action):
    """Append existing files (never deleted by this action, whatever fails)."""

    io: FileIO
    files: Sequence[DataFile]
    check_duplicate_files: bool = True
    branch: str = MAIN_BRANCH
    revalidates = True
    _checked: tuple[int | None] | None = None

    def stage(self, base: TableMetadata, start: TableMetadata) -> Staged:
        if self.check_duplicate_files:
            self._check_duplicates(base, start)
        return self._stage_snapshot(
            base,
            lambda: SnapshotProducer(
                self.io, Operation.APPEND, added_files=self.files, branch=self.branch, merge=True
            ),
        )

    def _check_duplicates(self, base: TableMetadata, start: TableMetadata) -> None:
        seen: set[str] = set()
        for f in self.files:
            if f.file_path in seen:
                raise ValidationError(f"Cannot add files: {f.file_path} is given twice")
            seen.add(f.file_path)
        head = base.snapshot_by_name(self.branch)
        head_id = head.snapshot_id if head else None
        if self._checked is None or head is None:
            found = _referenced(self.io, base, self.branch, seen)
        elif self._checked[0] == head_id:
            found = []
        else:  # a retry: only what was committed since the last check
            found = [
                c.entry.data_file.file_path
                for c in changes_since(
                    self.io, base, head_id, self._checked[0], content=ManifestContent.DATA
                )
                if c.entry.data_file.file_path in seen
            ]
        if found:
            raise ValidationError(
                f"Cannot add files that are already referenced by table {base.location}: "
                f"{', '.join(sorted(found)[:5])}"
            )
        self._checked = (head_id,)


def _referenced(io: FileIO, metadata: TableMetadata, branch: str, paths: set[str]) -> list[str]:
    head = metadata.snapshot_by_name(branch)
    return [
        e.data_file.file_path
        for _, entries in live_entries(io, metadata, head, None, ManifestContent.DATA)
        for e in entries
        if e.data_file.file_path in paths
    ]


def commit_added_files(
    table: TableLike,
    files: Sequence[DataFile],
    mapping: NameMapping | None,
    *,
    check_duplicate_files: bool = True,
    branch: str = MAIN_BRANCH,
) -> AddFilesResult:
    """Commit ``files`` (and ``mapping`` as the table's name mapping when given)."""
    if not files:
        return AddFilesResult()
    tx = Transaction(table)
    if mapping is not None:
        tx.add_action(
            MetadataAction(
                [SetPropertiesUpdate({P.DEFAULT_NAME_MAPPING.name: name_mapping_to_json(mapping)})]
            )
        )
    tx.add_action(AddFilesAction(table.io, files, check_duplicate_files, branch))
    tx.commit_transaction()
    partitions = {(f.spec_id, tuple(f.partition)) for f in files}
    return AddFilesResult(len(files), len(partitions))


def add_files(
    table: TableLike,
    paths: str | Iterable[str],
    check_duplicate_files: bool = True,
    *,
    branch: str = MAIN_BRANCH,
    describe: Describe | None = None,
    found: Sequence[FoundFile] | None = None,
) -> AddFilesResult:
    """Register the Parquet files under ``paths`` (files or folders) in ``table`` as one
    ``append`` snapshot; see the module docstring. ``describe`` reads the footers (default: 8
    threads here; Spark passes its own); ``found`` gives the files instead of ``paths``."""
    metadata = table.metadata
    listed = [paths] if isinstance(paths, str) else list(paths)
    if found is None:
        found = find_files(table.io, metadata.spec(), metadata.schema(), listed)
    found = list(found)
    if not found:
        raise ValidationError(
            f"Cannot add files to table {table.name}: no Parquet file in {listed}"
        )
    mapping, new_mapping = name_mapping_for(metadata)
    if check_duplicate_files:
        seen: set[str] = set()
        for f in found:
            if f.location in seen:
                raise ValidationError(f"Cannot add files: {f.location} is given twice")
            seen.add(f.location)
        dup = _referenced(table.io, metadata, branch, seen)
        if dup:
            raise ValidationError(
                f"Cannot add files that are already referenced by table {table.name}: "
                f"{', '.join(sorted(dup)[:5])}"
            )
    if describe is None:
        with ThreadPoolExecutor(max_workers=8) as pool:
            described = list(
                pool.map(lambda f: describe_file(table.io, metadata, f, mapping), found)
            )
    else:
        described = describe(metadata, found, mapping)
    files = [f for f, _ in described]
    needs_mapping = new_mapping and any(lacks for _, lacks in described)
    return commit_added_files(
        table,
        files,
        mapping if needs_mapping else None,
        check_duplicate_files=check_duplicate_files,
        branch=branch,
    )
