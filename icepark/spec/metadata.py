"""Table metadata: the immutable model of a ``*.metadata.json`` file, and its JSON reader/writer.

The reader follows Java's ``TableMetadataParser`` (field order of the checks included, so that
the first reported problem is the one Java reports) and the spec's Appendix C; the writer emits
exactly the fields Java writes for the metadata's format version. Every problem raises
:class:`~icepark.errors.InvalidMetadataError` (or its subclass
:class:`~icepark.errors.UnsupportedFormatVersionError`); lower-level errors are wrapped.

Metadata is changed only through :class:`icepark.spec.builder.MetadataBuilder`.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from icepark.errors import (
    InvalidMetadataError,
    InvalidSchemaError,
    UnsupportedFormatVersionError,
    ValidationError,
)
from icepark.spec import _jsonutil as js
from icepark.spec import properties as P
from icepark.spec.gzip_json import GZIP_MAGIC, gunzip_metadata
from icepark.spec.name_mapping import NameMapping, name_mapping_from_json
from icepark.spec.partitioning import (
    INITIAL_SPEC_ID,
    PARTITION_DATA_ID_START,
    PartitionSpec,
    partition_spec_from_json,
    partition_spec_to_json,
)
from icepark.spec.schema import Schema, schema_from_json, schema_to_json
from icepark.spec.snapshots import (
    MAIN_BRANCH,
    MetadataLogEntry,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    StatisticsFile,
)
from icepark.spec.sorting import UNSORTED_ORDER, SortOrder, sort_order_from_json, sort_order_to_json

__all__ = [
    "SUPPORTED_FORMAT_VERSION",
    "DEFAULT_FORMAT_VERSION",
    "MIN_FORMAT_VERSION_ROW_LINEAGE",
    "TableMetadata",
    "table_metadata_from_json",
    "table_metadata_from_dict",
    "table_metadata_to_json",
    "table_metadata_to_dict",
    "defer_snapshots",
]

SUPPORTED_FORMAT_VERSION = 3
DEFAULT_FORMAT_VERSION = 2
MIN_FORMAT_VERSION_ROW_LINEAGE = 3


def _strip_trailing_slash(location: str) -> str:
    """Drop trailing slashes, as Java's ``LocationUtil.stripTrailingSlash`` (keeps ``s3://``)."""
    while location.endswith("/") and not location.endswith("://"):
        location = location[:-1]
    return location


_KNOWN = "_snapshots_known"
_LOADER = "_snapshots_loader"
_LOADING = threading.Lock()


class _Snapshots:
    """The ``snapshots`` field of :class:`TableMetadata`: a tuple, unless the metadata was
    loaded with only the snapshots its refs name (a REST catalog's ``snapshot-loading-mode``
    ``refs``, see :func:`defer_snapshots`); then reading the whole list loads the rest first,
    as Java's snapshots supplier does."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return ()  # the dataclass default
        if _LOADER in obj.__dict__:
            obj._load_snapshots()
        return obj.__dict__[_KNOWN]

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[_KNOWN] = tuple(value)


@dataclass(frozen=True, kw_only=True)
class TableMetadata:
    """An immutable table metadata document.

    ``current_snapshot_id`` is None when the table has no current snapshot (files write -1).
    ``refs`` always holds ``main`` when there is a current snapshot. ``next_row_id`` is set
    for v3 tables only. ``properties`` and ``refs`` are plain dicts: treat them as read-only.
    """

    format_version: int
    table_uuid: str
    location: str
    last_sequence_number: int = 0
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    properties: dict[str, str] = field(default_factory=dict, hash=False)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = _Snapshots()  # type: ignore[assignment]
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    sort_orders: tuple[SortOrder, ...] = (UNSORTED_ORDER,)
    default_sort_order_id: int = UNSORTED_ORDER.order_id
    refs: dict[str, SnapshotRef] = field(default_factory=dict, hash=False)
    statistics: tuple[StatisticsFile, ...] = ()
    partition_statistics: tuple[PartitionStatisticsFile, ...] = ()
    next_row_id: int | None = None

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name in (
            "schemas",
            "partition_specs",
            "snapshots",
            "snapshot_log",
            "metadata_log",
            "sort_orders",
            "statistics",
            "partition_statistics",
        ):
            put(name, tuple(getattr(self, name)))
        put("properties", dict(self.properties))
        put("location", _strip_trailing_slash(self.location))
        if self.current_snapshot_id is not None and self.current_snapshot_id < 0:
            put("current_snapshot_id", None)
        if self.format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE:
            if self.next_row_id is None:
                put("next_row_id", 0)
        else:
            put("next_row_id", None)
        refs = dict(self.refs)
        if self.current_snapshot_id is not None and MAIN_BRANCH not in refs:
            refs[MAIN_BRANCH] = SnapshotRef(self.current_snapshot_id)
        put("refs", refs)
        self._validate()

    def _validate(self) -> None:
        v = self.format_version
        if v > SUPPORTED_FORMAT_VERSION:
            raise UnsupportedFormatVersionError(
                f"Unsupported format version: v{v} (supported: v{SUPPORTED_FORMAT_VERSION})"
            )
        if v < 1:
            raise InvalidMetadataError(f"Invalid format version: {v}")
        if v == 1 and self.last_sequence_number != 0:
            raise InvalidMetadataError(
                f"Sequence number must be 0 in v1: {self.last_sequence_number}"
            )
        _check_unique("schema", [s.schema_id for s in self.schemas])
        _check_unique("partition spec", [s.spec_id for s in self.partition_specs])
        _check_unique("sort order", [o.order_id for o in self.sort_orders])
        _check_unique("snapshot", [s.snapshot_id for s in self.snapshots])
        if self.current_schema_id not in self._schemas_by_id:
            raise InvalidMetadataError(
                f"Cannot find schema with current-schema-id={self.current_schema_id} from schemas"
            )
        if self.default_spec_id not in self._specs_by_id:
            raise InvalidMetadataError(
                f"Cannot find partition spec with default-spec-id={self.default_spec_id} "
                "from partition-specs"
            )
        if self.default_sort_order_id not in self._sort_orders_by_id:
            raise InvalidMetadataError(
                f"Cannot find sort order with default-sort-order-id={self.default_sort_order_id} "
                "from sort-orders"
            )
        if self.last_sequence_number < 0:
            raise InvalidMetadataError(
                f"Invalid last sequence number {self.last_sequence_number}: must be >= 0"
            )
        for snap in self.snapshots:
            if snap.sequence_number < 0:
                raise InvalidMetadataError(
                    f"Invalid snapshot {snap.snapshot_id} with negative sequence number "
                    f"{snap.sequence_number}"
                )
            if snap.sequence_number > self.last_sequence_number:
                raise InvalidMetadataError(
                    f"Invalid snapshot with sequence number {snap.sequence_number} greater than "
                    f"last sequence number {self.last_sequence_number}"
                )
        current = self.current_snapshot_id
        if current is not None and current not in self._snapshots_by_id:
            raise InvalidMetadataError(
                f"Cannot find current snapshot {self.current_snapshot_id} in snapshots"
            )
        for name, ref in self.refs.items():
            if ref.snapshot_id not in self._snapshots_by_id:
                raise InvalidMetadataError(
                    f"Snapshot for reference {name} ({ref.snapshot_id}) does not exist in the "
                    "existing snapshots list"
                )
        main = self.refs.get(MAIN_BRANCH)
        if main is not None:
            if not main.is_branch:
                raise InvalidMetadataError("Reference main must be a branch, not a tag")
            if self.current_snapshot_id is None:
                raise InvalidMetadataError(
                    f"Current snapshot is not set, but main branch exists: {main.snapshot_id}"
                )
            if main.snapshot_id != self.current_snapshot_id:
                raise InvalidMetadataError(
                    "Current snapshot ID does not match main branch "
                    f"({self.current_snapshot_id} != {main.snapshot_id})"
                )

    # -- indexes -----------------------------------------------------------------------------

    @cached_property
    def _schemas_by_id(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.schemas}

    @cached_property
    def _specs_by_id(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.partition_specs}

    @cached_property
    def _sort_orders_by_id(self) -> dict[int, SortOrder]:
        return {o.order_id: o for o in self.sort_orders}

    @cached_property
    def _snapshots_by_id(self) -> dict[int, Snapshot]:
        # the snapshots known now: with deferred snapshots, those of the refs until loaded
        return {s.snapshot_id: s for s in self.__dict__[_KNOWN]}

    def _snapshot(self, snapshot_id: int) -> Snapshot | None:
        found = self._snapshots_by_id.get(snapshot_id)
        if found is None and _LOADER in self.__dict__:
            self._load_snapshots()
            found = self._snapshots_by_id.get(snapshot_id)
        return found

    def _load_snapshots(self) -> None:
        """Replace the refs' snapshots by the whole list (deferred snapshots only); snapshots
        newer than this metadata (a commit since) are left out, as Java leaves them out."""
        with _LOADING:  # one load, whichever thread asks first (web page handlers share it)
            loader = self.__dict__.get(_LOADER)
            if loader is None:
                return
            self._take_snapshots(tuple(loader()))

    def _take_snapshots(self, loaded: tuple[Snapshot, ...]) -> None:
        if self.format_version > 1:
            loaded = tuple(s for s in loaded if s.sequence_number <= self.last_sequence_number)
        ids = {s.snapshot_id for s in loaded}
        kept = tuple(s for s in self.__dict__[_KNOWN] if s.snapshot_id not in ids)
        self.__dict__[_KNOWN] = loaded + kept
        self.__dict__.pop("_snapshots_by_id", None)
        self.__dict__.pop(_LOADER, None)

    def __repr__(self) -> str:
        # short, and never loading a deferred snapshot list to print it
        held = len(self.__dict__[_KNOWN])
        return (
            f"TableMetadata(format_version={self.format_version}, location={self.location!r}, "
            f"table_uuid={self.table_uuid!r}, current_snapshot_id={self.current_snapshot_id}, "
            f"snapshots={held}{' held, more deferred' if self.snapshots_deferred else ''})"
        )

    @property
    def snapshots_deferred(self) -> bool:
        """True while only the snapshots the refs name are loaded (:func:`defer_snapshots`)."""
        return _LOADER in self.__dict__

    def __getstate__(self) -> dict[str, Any]:
        # a pickled copy (a Spark task's) keeps the snapshots known, not the loader (it holds
        # a catalog's HTTP session); tasks never walk the history
        return {k: v for k, v in self.__dict__.items() if k != _LOADER}

    # -- accessors ---------------------------------------------------------------------------

    def schema(self) -> Schema:
        """The current schema."""
        return self._schemas_by_id[self.current_schema_id]

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return self._schemas_by_id.get(schema_id)

    def schemas_by_id(self) -> dict[int, Schema]:
        return dict(self._schemas_by_id)

    def spec(self) -> PartitionSpec:
        """The default partition spec."""
        return self._specs_by_id[self.default_spec_id]

    def spec_by_id(self, spec_id: int) -> PartitionSpec | None:
        return self._specs_by_id.get(spec_id)

    def specs(self) -> dict[int, PartitionSpec]:
        """All partition specs by id."""
        return dict(self._specs_by_id)

    def name_mapping(self) -> NameMapping | None:
        """The table's ``schema.name-mapping.default`` (None when it has none): how columns of
        data files without field ids are matched to the schema."""
        return self._name_mapping

    @cached_property
    def _name_mapping(self) -> NameMapping | None:
        text = self.properties.get(P.DEFAULT_NAME_MAPPING.name)
        try:
            return name_mapping_from_json(text) if text else None
        except InvalidSchemaError as exc:
            raise InvalidSchemaError(
                f"Invalid table property {P.DEFAULT_NAME_MAPPING.name}: {exc}"
            ) from exc

    def sort_order(self) -> SortOrder:
        """The default sort order."""
        return self._sort_orders_by_id[self.default_sort_order_id]

    def sort_order_by_id(self, order_id: int) -> SortOrder | None:
        return self._sort_orders_by_id.get(order_id)

    def current_snapshot(self) -> Snapshot | None:
        if self.current_snapshot_id is None:
            return None
        return self._snapshots_by_id.get(self.current_snapshot_id)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return self._snapshot(snapshot_id)

    def ref(self, name: str) -> SnapshotRef | None:
        return self.refs.get(name)

    def snapshot_by_name(self, name: str) -> Snapshot | None:
        """The snapshot a branch or tag points at, or None if there is no such ref."""
        ref = self.refs.get(name)
        return None if ref is None else self._snapshots_by_id.get(ref.snapshot_id)

    def branch_head(self, branch: str) -> Snapshot | None:
        """The snapshot a write to ``branch`` builds on: the branch's head, or the current
        snapshot while no ref of that name exists (the write then creates the branch from it),
        as Java's ``SnapshotUtil.latestSnapshot``."""
        if branch not in self.refs:
            return self.current_snapshot()
        return self.snapshot_by_name(branch)

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot | None:
        """The snapshot that was current (on main) at ``timestamp_ms``, from the snapshot log."""
        found: int | None = None
        for entry in self.snapshot_log:
            if entry.timestamp_ms <= timestamp_ms:
                found = entry.snapshot_id
        return None if found is None else self._snapshot(found)

    def ancestors_of(self, snapshot_id: int | None) -> list[Snapshot]:
        """The snapshot and its ancestors, newest first, as far as they are still known."""
        out: list[Snapshot] = []
        seen: set[int] = set()
        current = None if snapshot_id is None else self._snapshot(snapshot_id)
        while current is not None and current.snapshot_id not in seen:
            out.append(current)
            seen.add(current.snapshot_id)
            parent = current.parent_snapshot_id
            current = None if parent is None else self._snapshot(parent)
        return out

    def property(self, name: str, default: str | None = None) -> str | None:
        return self.properties.get(name, default)

    def next_sequence_number(self) -> int:
        """The sequence number the next snapshot gets (always 0 in v1)."""
        return self.last_sequence_number + 1 if self.format_version > 1 else 0

    def statistics_for(self, snapshot_id: int) -> StatisticsFile | None:
        return next((s for s in self.statistics if s.snapshot_id == snapshot_id), None)

    def partition_statistics_for(self, snapshot_id: int) -> PartitionStatisticsFile | None:
        return next((s for s in self.partition_statistics if s.snapshot_id == snapshot_id), None)


def _check_unique(what: str, ids: list[int]) -> None:
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise InvalidMetadataError(f"Duplicate {what} ids in table metadata: {dupes}")


# -- reading ---------------------------------------------------------------------------------


_PARSED_SNAPSHOTS: dict[object, tuple[Any, Snapshot]] = {}
_PARSED_SNAPSHOTS_MAX = 100_000


def _parse_snapshot(obj: Any) -> Snapshot:
    """``Snapshot.from_json``, reusing the snapshot parsed from an equal JSON object before.

    A table's metadata file repeats every snapshot of its history, and a busy writer re-reads
    it after each commit that beat it: snapshots are immutable, so one parse per snapshot is
    enough (the JSON object is compared whole, so a reused value is always the same value).
    """
    key = obj.get("snapshot-id") if isinstance(obj, dict) else None
    found = _PARSED_SNAPSHOTS.get(key)
    if found is not None and found[0] == obj:
        return found[1]
    snapshot = Snapshot.from_json(obj)
    if len(_PARSED_SNAPSHOTS) >= _PARSED_SNAPSHOTS_MAX:
        _PARSED_SNAPSHOTS.clear()
    _PARSED_SNAPSHOTS[key] = (obj, snapshot)
    return snapshot


def table_metadata_from_json(text: str | bytes | bytearray | memoryview) -> TableMetadata:
    """Parse a metadata file's content; gzip-compressed bytes are detected and decompressed."""
    if isinstance(text, bytearray | memoryview):
        text = bytes(text)
    if isinstance(text, bytes):
        if text[:2] == GZIP_MAGIC:
            text = gunzip_metadata(text, "table metadata")
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidMetadataError(f"Table metadata is not valid UTF-8: {exc}") from exc
    if not isinstance(text, str):
        raise InvalidMetadataError(f"Cannot parse table metadata from {type(text).__name__}")
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvalidMetadataError(f"Cannot parse table metadata JSON: {exc}") from exc
    return table_metadata_from_dict(obj)


def table_metadata_from_dict(obj: Any) -> TableMetadata:
    """Build table metadata from a parsed JSON object (a dict)."""
    try:
        return _parse(obj)
    except InvalidMetadataError:
        raise
    except ValidationError as exc:
        raise InvalidMetadataError(str(exc)) from exc
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
        raise InvalidMetadataError(
            f"Cannot parse table metadata: {type(exc).__name__}: {exc}"
        ) from exc


def _parse(node: Any) -> TableMetadata:
    if not isinstance(node, Mapping):
        raise InvalidMetadataError(f"Cannot parse metadata from a non-object: {js.short(node)}")
    version = js.get_int(node, "format-version")
    if version > SUPPORTED_FORMAT_VERSION:
        raise UnsupportedFormatVersionError(f"Cannot read unsupported version {version}")
    if version < 1:
        raise InvalidMetadataError(f"Cannot read invalid format version {version}")

    table_uuid = js.get_str_or_none(node, "table-uuid")
    if table_uuid is None:
        if version > 1:
            raise InvalidMetadataError(f"UUID is required in format v{version}")
        # optional in v1: give the table an identity (it is kept once the metadata is rewritten)
        table_uuid = str(uuid.uuid4())
    location = js.get_str(node, "location")
    last_sequence_number = js.get_long(node, "last-sequence-number") if version > 1 else 0
    last_column_id = js.get_int(node, "last-column-id")

    schemas, current_schema_id = _parse_schemas(node, version)
    specs, default_spec_id = _parse_specs(node, version)
    last_partition_id = js.get_int_or_none(node, "last-partition-id")
    if last_partition_id is None:
        if version > 1:
            raise InvalidMetadataError(f"last-partition-id must exist in format v{version}")
        last_partition_id = max(
            (s.last_assigned_field_id for s in specs), default=PARTITION_DATA_ID_START - 1
        )
    sort_orders, default_sort_order_id = _parse_sort_orders(node, version)

    properties = js.get_string_map(node, "properties") if node.get("properties") is not None else {}
    current_snapshot_id = js.get_long_or_none(node, "current-snapshot-id")
    if current_snapshot_id == -1:
        current_snapshot_id = None
    last_updated_ms = js.get_long(node, "last-updated-ms")

    refs: dict[str, SnapshotRef] = {}
    if node.get("refs") is not None:
        for name, ref_json in js.get_object(node, "refs").items():
            refs[str(name)] = SnapshotRef.from_json(ref_json)

    def items(key: str) -> list[Any]:
        return js.get_list(node, key) if node.get(key) is not None else []

    snapshots = tuple(_parse_snapshot(s) for s in items("snapshots"))
    statistics = tuple(StatisticsFile.from_json(s) for s in items("statistics"))
    partition_statistics = tuple(
        PartitionStatisticsFile.from_json(s) for s in items("partition-statistics")
    )
    snapshot_log = tuple(SnapshotLogEntry.from_json(e) for e in items("snapshot-log"))
    metadata_log = tuple(MetadataLogEntry.from_json(e) for e in items("metadata-log"))
    next_row_id = None
    if version >= MIN_FORMAT_VERSION_ROW_LINEAGE:
        next_row_id = js.get_long_or_none(node, "next-row-id") or 0

    return TableMetadata(
        format_version=version,
        table_uuid=table_uuid,
        location=location,
        last_sequence_number=last_sequence_number,
        last_updated_ms=last_updated_ms,
        last_column_id=last_column_id,
        schemas=schemas,
        current_schema_id=current_schema_id,
        partition_specs=specs,
        default_spec_id=default_spec_id,
        last_partition_id=last_partition_id,
        properties=properties,
        current_snapshot_id=current_snapshot_id,
        snapshots=snapshots,
        snapshot_log=snapshot_log,
        metadata_log=metadata_log,
        sort_orders=sort_orders,
        default_sort_order_id=default_sort_order_id,
        refs=refs,
        statistics=statistics,
        partition_statistics=partition_statistics,
        next_row_id=next_row_id,
    )


def _parse_schemas(node: Mapping[str, Any], version: int) -> tuple[tuple[Schema, ...], int]:
    if node.get("schemas") is not None:
        schema_list = js.get_list(node, "schemas")
        current_schema_id = js.get_int(node, "current-schema-id")
        schemas = tuple(schema_from_json(s) for s in schema_list)
        if all(s.schema_id != current_schema_id for s in schemas):
            raise InvalidMetadataError(
                f"Cannot find schema with current-schema-id={current_schema_id} from schemas"
            )
        return schemas, current_schema_id
    if version > 1:
        raise InvalidMetadataError(f"schemas must exist in format v{version}")
    if node.get("schema") is None:
        raise InvalidMetadataError("schemas or schema must exist in format v1")
    schema = schema_from_json(node["schema"])
    return (schema,), schema.schema_id


def _parse_specs(node: Mapping[str, Any], version: int) -> tuple[tuple[PartitionSpec, ...], int]:
    if node.get("partition-specs") is not None:
        spec_list = js.get_list(node, "partition-specs")
        default_spec_id = js.get_int(node, "default-spec-id")
        return tuple(partition_spec_from_json(s) for s in spec_list), default_spec_id
    if version > 1:
        raise InvalidMetadataError(f"partition-specs must exist in format v{version}")
    legacy = node.get("partition-spec")
    if not isinstance(legacy, list):
        raise InvalidMetadataError(
            f"Cannot parse partition spec fields from non-array: {js.short(legacy)}"
        )
    spec = partition_spec_from_json(legacy, legacy_next_id=PARTITION_DATA_ID_START)
    return (spec,), INITIAL_SPEC_ID


def _parse_sort_orders(node: Mapping[str, Any], version: int) -> tuple[tuple[SortOrder, ...], int]:
    if node.get("sort-orders") is not None:
        order_list = js.get_list(node, "sort-orders")
        default_id = js.get_int(node, "default-sort-order-id")
        return tuple(sort_order_from_json(o) for o in order_list), default_id
    if version > 1:
        raise InvalidMetadataError(f"sort-orders must exist in format v{version}")
    return (UNSORTED_ORDER,), UNSORTED_ORDER.order_id


# -- writing ---------------------------------------------------------------------------------


def defer_snapshots(
    metadata: TableMetadata, loader: Callable[[], Sequence[Snapshot]]
) -> TableMetadata:
    """``metadata`` (holding only the snapshots its refs name, as a REST catalog answers with
    ``snapshots=refs``) made to load the whole list from ``loader`` the first time something
    reads it or asks for a snapshot it does not hold: the history, time travel, expiry, a
    metadata update. Refs and the current snapshot resolve without loading. Returns
    ``metadata`` itself, which must be new (not yet shared)."""
    metadata.__dict__[_LOADER] = loader
    return metadata


def table_metadata_to_dict(md: TableMetadata, *, _snapshots: Any = None) -> dict[str, Any]:
    """The JSON object Java writes for this metadata (fields for its format version only)."""
    v = md.format_version
    out: dict[str, Any] = {
        "format-version": v,
        "table-uuid": md.table_uuid,
        "location": md.location,
    }
    if v > 1:
        out["last-sequence-number"] = md.last_sequence_number
    out["last-updated-ms"] = md.last_updated_ms
    out["last-column-id"] = md.last_column_id
    if v == 1:
        out["schema"] = schema_to_json(md.schema())
    out["current-schema-id"] = md.current_schema_id
    out["schemas"] = [schema_to_json(s) for s in md.schemas]
    if v == 1:
        out["partition-spec"] = partition_spec_to_json(md.spec())["fields"]
    out["default-spec-id"] = md.default_spec_id
    out["partition-specs"] = [partition_spec_to_json(s) for s in md.partition_specs]
    out["last-partition-id"] = md.last_partition_id
    out["default-sort-order-id"] = md.default_sort_order_id
    out["sort-orders"] = [sort_order_to_json(o) for o in md.sort_orders]
    out["properties"] = dict(md.properties)
    out["current-snapshot-id"] = -1 if md.current_snapshot_id is None else md.current_snapshot_id
    out["refs"] = {name: ref.to_json() for name, ref in md.refs.items()}
    out["snapshots"] = [s.to_json() for s in md.snapshots] if _snapshots is None else _snapshots
    out["statistics"] = [s.to_json() for s in md.statistics]
    out["partition-statistics"] = [s.to_json() for s in md.partition_statistics]
    out["snapshot-log"] = [e.to_json() for e in md.snapshot_log]
    out["metadata-log"] = [e.to_json() for e in md.metadata_log]
    if v >= MIN_FORMAT_VERSION_ROW_LINEAGE:
        out["next-row-id"] = md.next_row_id if md.next_row_id is not None else 0
    return out


_SNAPSHOT_TEXT: dict[int, tuple[Snapshot, str]] = {}
# a value no real property can hold (a fresh uuid between NULs), and its JSON text
_SNAPSHOTS_PLACEHOLDER = f"\x00snapshots-{uuid.uuid4().hex}\x00"
_SNAPSHOTS_PLACEHOLDER_JSON = json.dumps(_SNAPSHOTS_PLACEHOLDER, ensure_ascii=False)


def _snapshot_text(snapshot: Snapshot) -> str:
    """A snapshot as compact JSON, kept for the next metadata file (which repeats it)."""
    found = _SNAPSHOT_TEXT.get(snapshot.snapshot_id)
    if found is not None and (found[0] is snapshot or found[0] == snapshot):
        return found[1]
    text = json.dumps(
        snapshot.to_json(), separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    if len(_SNAPSHOT_TEXT) >= _PARSED_SNAPSHOTS_MAX:
        _SNAPSHOT_TEXT.clear()
    _SNAPSHOT_TEXT[snapshot.snapshot_id] = (snapshot, text)
    return text


def table_metadata_to_json(md: TableMetadata, *, indent: int | None = None) -> str:
    """The metadata as JSON text (compact unless ``indent`` is given)."""
    separators = (",", ":") if indent is None else (",", ": ")
    if indent is not None:
        return json.dumps(
            table_metadata_to_dict(md),
            indent=indent,
            separators=separators,
            ensure_ascii=False,
            allow_nan=False,
        )
    # the history is most of a big table's metadata and never changes: its snapshots'
    # text is made once and spliced in
    out = table_metadata_to_dict(md, _snapshots=_SNAPSHOTS_PLACEHOLDER)
    text = json.dumps(out, separators=separators, ensure_ascii=False, allow_nan=False)
    snapshots = "[" + ",".join(_snapshot_text(s) for s in md.snapshots) + "]"
    return text.replace(_SNAPSHOTS_PLACEHOLDER_JSON, snapshots, 1)
