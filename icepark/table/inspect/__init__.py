"""Metadata tables: a table's snapshots, files, manifests, partitions and deletes as Arrow.

``table.inspect`` (an :class:`InspectTable`) has one method per metadata table Java has,
each returning a :class:`pyarrow.Table` with Java's columns (names, types, nesting,
nullability; see :mod:`icepark.table.inspect.schemas`)::

    table.inspect.snapshots()                 # snapshots, history, refs, metadata_log_entries
    table.inspect.files(snapshot_id=None)     # entries, files, data_files, delete_files
    table.inspect.manifests(ref="audit")      # manifests, partitions, position_deletes
    table.inspect.all_files()                 # all_entries, all_files, all_data_files,
                                              # all_delete_files, all_manifests
    table.inspect.table("partitions")         # any of them by name

Time travel (``snapshot_id``, or ``ref`` / ``as_of`` by keyword) applies where Java allows
it: the entries and files tables, ``manifests``, ``partitions`` and ``position_deletes`` read
that snapshot. The ``all_`` tables cover every snapshot and refuse one
(:class:`~icepark.errors.UnsupportedOperationError`), as Java does; ``snapshots``,
``history``, ``refs`` and ``metadata_log_entries`` check that the snapshot exists and list
the whole table anyway, as Java does. An unknown snapshot, ref or time raises
:class:`~icepark.errors.ValidationError`, an unknown table name
:class:`~icepark.errors.NoSuchTableError`, each naming it.

Modules, one per family: :mod:`~icepark.table.inspect.files` (entries and files, read from
manifests column-wise), :mod:`~icepark.table.inspect.snapshots` (from the metadata alone),
:mod:`~icepark.table.inspect.manifests`, :mod:`~icepark.table.inspect.partitions`,
:mod:`~icepark.table.inspect.position_deletes`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icepark.errors import NoSuchTableError, UnsupportedOperationError
from icepark.manifest import ManifestContent, ManifestFile
from icepark.spec.schema import Schema
from icepark.table.inspect import files as _files
from icepark.table.inspect import schemas as _schemas
from icepark.table.inspect.context import InspectContext
from icepark.table.inspect.manifests import all_manifests_table, manifests_table
from icepark.table.inspect.partitions import partitions_table
from icepark.table.inspect.position_deletes import position_deletes_table
from icepark.table.inspect.snapshots import (
    history_table,
    metadata_log_entries_table,
    refs_table,
    snapshots_table,
)
from icepark.table.interface import TableLike

__all__ = [
    "METADATA_TABLES",
    "InspectContext",
    "InspectTable",
    "MetadataTableKind",
    "check_time_travel",
    "metadata_batches",
    "metadata_table",
    "metadata_table_schema",
]

Timestamp = int | dt.datetime | dt.date


@dataclass(frozen=True)
class MetadataTableKind:
    """How a metadata table takes a snapshot: ``"snapshot"`` (reads the one asked for),
    ``"ignored"`` (lists everything; the snapshot must exist) or ``"refused"``."""

    name: str
    time_travel: str


METADATA_TABLES: dict[str, MetadataTableKind] = {
    k.name: k
    for k in (
        MetadataTableKind("entries", "snapshot"),
        MetadataTableKind("files", "snapshot"),
        MetadataTableKind("data_files", "snapshot"),
        MetadataTableKind("delete_files", "snapshot"),
        MetadataTableKind("history", "ignored"),
        MetadataTableKind("metadata_log_entries", "ignored"),
        MetadataTableKind("snapshots", "ignored"),
        MetadataTableKind("refs", "ignored"),
        MetadataTableKind("manifests", "snapshot"),
        MetadataTableKind("partitions", "snapshot"),
        MetadataTableKind("all_data_files", "refused"),
        MetadataTableKind("all_delete_files", "refused"),
        MetadataTableKind("all_files", "refused"),
        MetadataTableKind("all_manifests", "refused"),
        MetadataTableKind("all_entries", "refused"),
        MetadataTableKind("position_deletes", "snapshot"),
    )
}
"""The sixteen metadata tables, in Java's ``MetadataTableType`` order."""


def _kind(ctx: InspectContext, name: str) -> MetadataTableKind:
    kind = METADATA_TABLES.get(name.lower())
    if kind is None:
        raise NoSuchTableError(
            f"Unknown metadata table {name!r} of table {ctx.name}: "
            f"use one of {', '.join(METADATA_TABLES)}"
        )
    return kind


def _manifests_for(
    ctx: InspectContext, content: ManifestContent | None, every: bool, **at: Any
) -> list[ManifestFile]:
    if every:
        return _files.reachable_manifests(ctx, content)
    return _files.snapshot_manifests(ctx, ctx.snapshot(**at), content)


def _files_of(content: ManifestContent | None, every: bool) -> Callable[..., pa.Table]:
    def build(ctx: InspectContext, **at: Any) -> pa.Table:
        return _files.files_table(ctx, _manifests_for(ctx, content, every, **at))

    return build


def _entries_of(every: bool) -> Callable[..., pa.Table]:
    def build(ctx: InspectContext, **at: Any) -> pa.Table:
        return _files.entries_table(ctx, _manifests_for(ctx, None, every, **at))

    return build


# the tables listed a part of the manifests at a time: (entries or files, content, every)
_STREAMED: dict[str, tuple[bool, ManifestContent | None, bool]] = {
    "entries": (True, None, False),
    "files": (False, None, False),
    "data_files": (False, ManifestContent.DATA, False),
    "delete_files": (False, ManifestContent.DELETES, False),
    "all_entries": (True, None, True),
    "all_files": (False, None, True),
    "all_data_files": (False, ManifestContent.DATA, True),
    "all_delete_files": (False, ManifestContent.DELETES, True),
}


def metadata_batches(
    ctx: InspectContext,
    name: str,
    snapshot_id: int | None = None,
    *,
    ref: str | None = None,
    as_of: Timestamp | None = None,
) -> Iterator[pa.RecordBatch]:
    """Metadata table ``name`` as record batches. The entries and files tables (and their
    ``all_`` forms) are read a part of their manifests at a time, so memory stays bounded
    by a part whatever the table's size; the others are built whole, then cut."""
    kind = _kind(ctx, name)
    check_time_travel(ctx, kind.name, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    streamed = _STREAMED.get(kind.name)
    if streamed is None:
        yield from metadata_table(ctx, kind.name, snapshot_id, ref=ref, as_of=as_of).to_batches()
        return
    entries, content, every = streamed
    at = {} if every else {"snapshot_id": snapshot_id, "ref": ref, "as_of": as_of}
    manifests = _manifests_for(ctx, content, every, **at)
    batches = _files.entries_batches if entries else _files.files_batches
    yield from batches(ctx, manifests)


_BUILDERS: dict[str, Callable[..., pa.Table]] = {
    "entries": _entries_of(False),
    "files": _files_of(None, False),
    "data_files": _files_of(ManifestContent.DATA, False),
    "delete_files": _files_of(ManifestContent.DELETES, False),
    "history": lambda ctx: history_table(ctx),
    "metadata_log_entries": lambda ctx: metadata_log_entries_table(ctx),
    "snapshots": lambda ctx: snapshots_table(ctx),
    "refs": lambda ctx: refs_table(ctx),
    "manifests": lambda ctx, **at: manifests_table(ctx, **at),
    "partitions": lambda ctx, **at: partitions_table(ctx, **at),
    "all_data_files": _files_of(ManifestContent.DATA, True),
    "all_delete_files": _files_of(ManifestContent.DELETES, True),
    "all_files": _files_of(None, True),
    "all_manifests": lambda ctx: all_manifests_table(ctx),
    "all_entries": _entries_of(True),
    "position_deletes": lambda ctx, **at: position_deletes_table(ctx, **at),
}


def metadata_table(
    ctx: InspectContext,
    name: str,
    snapshot_id: int | None = None,
    *,
    ref: str | None = None,
    as_of: Timestamp | None = None,
) -> pa.Table:
    """Metadata table ``name`` of the table ``ctx`` describes, at a snapshot where Java
    allows one (see the module docstring)."""
    kind = _kind(ctx, name)
    build = _BUILDERS[kind.name]
    if kind.time_travel == "snapshot":
        return build(ctx, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    check_time_travel(ctx, name, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    return build(ctx)


def check_time_travel(
    ctx: InspectContext,
    name: str,
    snapshot_id: int | None = None,
    *,
    ref: str | None = None,
    as_of: Timestamp | None = None,
) -> None:
    """Raise what reading metadata table ``name`` at a snapshot would raise: an unknown
    table, snapshot, ref or time, or a snapshot given to an ``all_`` table."""
    kind = _kind(ctx, name)
    if snapshot_id is None and ref is None and as_of is None:
        return
    if kind.time_travel == "refused":
        raise UnsupportedOperationError(
            f"Cannot select a snapshot in metadata table {ctx.name}.{kind.name}: "
            "it covers every snapshot of the table"
        )
    ctx.snapshot(snapshot_id, as_of, ref)  # must exist, as in Java


def metadata_table_schema(ctx: InspectContext, name: str) -> Schema:
    """The Iceberg schema of metadata table ``name`` (Java's field ids, names and docs)."""
    kind = _kind(ctx, name)
    md = ctx.metadata
    static = {
        "history": _schemas.HISTORY_SCHEMA,
        "metadata_log_entries": _schemas.METADATA_LOG_ENTRIES_SCHEMA,
        "snapshots": _schemas.SNAPSHOTS_SCHEMA,
        "refs": _schemas.REFS_SCHEMA,
        "manifests": _schemas.MANIFESTS_SCHEMA,
        "all_manifests": _schemas.ALL_MANIFESTS_SCHEMA,
    }
    if kind.name in static:
        return static[kind.name]
    if kind.name in ("entries", "all_entries"):
        return _schemas.entries_schema(md)
    if kind.name == "partitions":
        return _schemas.partitions_schema(md)
    if kind.name == "position_deletes":
        return _schemas.position_deletes_schema(md)
    return _schemas.files_schema(md)


class InspectTable:
    """``table.inspect``: the metadata tables of one table as loaded (see the module
    docstring). Each call reads the table's current metadata object, so a
    ``table.refresh()`` between calls shows new commits."""

    def __init__(self, table: TableLike) -> None:
        self._table = table

    @property
    def _ctx(self) -> InspectContext:
        t = self._table
        return InspectContext(t.io, t.metadata, t.metadata_location, t.name)

    def table(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        ref: str | None = None,
        as_of: Timestamp | None = None,
    ) -> pa.Table:
        """Metadata table ``name`` (``"files"``, ``"snapshots"``, ...)."""
        return metadata_table(self._ctx, name, snapshot_id, ref=ref, as_of=as_of)

    def schema(self, name: str) -> Schema:
        """The Iceberg schema of metadata table ``name``."""
        return metadata_table_schema(self._ctx, name)

    def batches(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        ref: str | None = None,
        as_of: Any = None,
    ) -> Iterator[pa.RecordBatch]:
        """Metadata table ``name`` (as :meth:`table`) as a stream of record batches: the
        entries and files tables (and their ``all_`` forms) are read a part of their
        manifests at a time, so listing the files of a table of a million files stays in
        bounded memory (``for batch in table.inspect.batches("files"): ...``)."""
        return metadata_batches(self._ctx, name, snapshot_id, ref=ref, as_of=as_of)

    def _get(self, name: str, snapshot_id: int | None, ref: str | None, as_of: Any) -> pa.Table:
        return metadata_table(self._ctx, name, snapshot_id, ref=ref, as_of=as_of)

    # -- read from manifests, at a snapshot -------------------------------------------------

    def entries(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """Every manifest entry of the snapshot (added, existing, deleted), with
        ``readable_metrics``."""
        return self._get("entries", snapshot_id, ref, as_of)

    def files(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """The snapshot's live data and delete files, with ``readable_metrics``."""
        return self._get("files", snapshot_id, ref, as_of)

    def data_files(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """The snapshot's live data files."""
        return self._get("data_files", snapshot_id, ref, as_of)

    def delete_files(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """The snapshot's live delete files (position, equality, deletion vectors)."""
        return self._get("delete_files", snapshot_id, ref, as_of)

    def manifests(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """The snapshot's manifests with file counts and partition summaries."""
        return self._get("manifests", snapshot_id, ref, as_of)

    def partitions(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """Per partition: record, file and delete counts and the last update."""
        return self._get("partitions", snapshot_id, ref, as_of)

    def position_deletes(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """A row per position deleted by the snapshot's position deletes and DVs."""
        return self._get("position_deletes", snapshot_id, ref, as_of)

    # -- from the metadata alone (a snapshot is checked, then ignored) ----------------------

    def snapshots(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """Every snapshot: commit time, parent, operation, manifest list and summary."""
        return self._get("snapshots", snapshot_id, ref, as_of)

    def history(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """The snapshot log: when each snapshot became current on main."""
        return self._get("history", snapshot_id, ref, as_of)

    def refs(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """Branches and tags with their retention settings."""
        return self._get("refs", snapshot_id, ref, as_of)

    def metadata_log_entries(
        self, snapshot_id: int | None = None, *, ref: str | None = None, as_of: Any = None
    ) -> pa.Table:
        """Every metadata file of the log and the current one, with the snapshot then."""
        return self._get("metadata_log_entries", snapshot_id, ref, as_of)

    # -- every snapshot (a snapshot is refused) ---------------------------------------------

    def all_entries(self, snapshot_id: int | None = None) -> pa.Table:
        """The entries of every manifest of every snapshot (each manifest once)."""
        return self._get("all_entries", snapshot_id, None, None)

    def all_files(self, snapshot_id: int | None = None) -> pa.Table:
        """The live files of every manifest of every snapshot (duplicates possible)."""
        return self._get("all_files", snapshot_id, None, None)

    def all_data_files(self, snapshot_id: int | None = None) -> pa.Table:
        """The live data files of every data manifest of every snapshot."""
        return self._get("all_data_files", snapshot_id, None, None)

    def all_delete_files(self, snapshot_id: int | None = None) -> pa.Table:
        """The live delete files of every delete manifest of every snapshot."""
        return self._get("all_delete_files", snapshot_id, None, None)

    def all_manifests(self, snapshot_id: int | None = None) -> pa.Table:
        """Every snapshot's manifests, a row per snapshot and manifest."""
        return self._get("all_manifests", snapshot_id, None, None)
