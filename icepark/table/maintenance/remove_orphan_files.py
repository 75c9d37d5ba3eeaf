"""Removing orphan files: files under a table's location that none of its metadata references
(Java's ``DeleteOrphanFilesSparkAction`` and the ``remove_orphan_files`` procedure).

How it flows:

1. **Check the arguments** (:func:`orphan_options`): ``older_than`` (default: 3 days ago)
   must not be in the future, and must be at least 24 hours ago unless ``allow_recent``
   (a write in flight has files no metadata references yet: they look orphaned); ``location``
   (default: the table's) must be inside the table location; ``gc.enabled`` must be true.
2. **List** the location recursively through the table's FileIO (:func:`list_candidates`):
   files last modified before ``older_than``, skipping hidden paths as Java's
   ``FileSystemWalker`` does (a file or folder below the location whose name starts with
   ``_`` or ``.``, unless it is a partition folder ``<field>=...`` of a partition field whose
   name starts so).
3. **Compare** with every file the table references
   (:func:`icepark.planning.reachable.referenced_files` with the metadata files: metadata
   JSON files current and logged, the version hint, manifest lists, manifests, data and delete
   files of every snapshot, statistics files). Paths are compared as Java's ``FileURI``: by
   path, with schemes and authorities mapped through ``equal_schemes`` (``s3a`` and ``s3n``
   are ``s3`` by default) and ``equal_authorities``; a local path without a scheme is
   ``file``. A listed file whose path is referenced only under another scheme or authority
   is a *prefix mismatch*: ``prefix_mismatch_mode="error"`` (the default) refuses to go on
   and names the conflicting schemes and authorities, ``"ignore"`` keeps the file,
   ``"delete"`` deletes it.
4. **Delete** the orphans in parallel (:mod:`icepark.table.maintenance.file_cleanup`; a failed
   delete is logged and reported, never raised), or, with ``dry_run``, only report them.

:mod:`icepark.spark.maintenance.remove_orphan_files` does steps 2 and 3 on Spark for tables
with millions of files.
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

from icepark.errors import ValidationError
from icepark.io import FileIO
from icepark.io.fileio import FileEntry
from icepark.io.pyarrow_fileio import is_partial_write
from icepark.planning.reachable import referenced_files
from icepark.spec import properties as P
from icepark.spec.metadata import TableMetadata
from icepark.table.interface import TableLike
from icepark.table.maintenance.file_cleanup import delete_files
from icepark.table.scan import to_epoch_ms

__all__ = [
    "DEFAULT_OLDER_THAN_MS",
    "EQUAL_SCHEMES_DEFAULT",
    "MIN_OLDER_THAN_MS",
    "FileURI",
    "OrphanOptions",
    "PrefixMismatchError",
    "PrefixMismatchMode",
    "RemoveOrphanFilesResult",
    "ValidFiles",
    "find_orphans",
    "hidden_path_filter",
    "list_candidates",
    "orphan_options",
    "remove_orphan_files",
    "to_file_uri",
    "valid_file_uris",
]

PrefixMismatchMode = Literal["error", "ignore", "delete"]
_MODES = ("error", "ignore", "delete")

EQUAL_SCHEMES_DEFAULT: Mapping[str, str] = {"s3n": "s3", "s3a": "s3"}
DEFAULT_OLDER_THAN_MS = 3 * 24 * 3600 * 1000
MIN_OLDER_THAN_MS = 24 * 3600 * 1000

Progress = Callable[[int, int], None]


class PrefixMismatchError(ValidationError):
    """Listed files match referenced ones except for their scheme or authority."""


# -- file URIs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileURI:
    """A location split as Java's ``FileURI``: scheme and authority (after the equivalences)
    and path; ``uri`` is the location as given."""

    scheme: str | None
    authority: str | None
    path: str
    uri: str


def _flatten(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """``{"s3a,s3n": "s3"}`` -> ``{"s3a": "s3", "s3n": "s3"}`` (as Java's ``flattenMap``)."""
    out: dict[str, str] = {}
    for keys, value in (mapping or {}).items():
        for key in keys.split(","):
            if key.strip():
                out[key.strip()] = value.strip()
    return out


def _collapse(path: str) -> str:
    while "//" in path:
        path = path.replace("//", "/")
    return path


def to_file_uri(
    location: str,
    equal_schemes: Mapping[str, str] = EQUAL_SCHEMES_DEFAULT,
    equal_authorities: Mapping[str, str] | None = None,
) -> FileURI:
    """``location`` as a :class:`FileURI`; a path without a scheme is a local ``file``."""
    if location[:1] == "/" and "//" not in location:  # a plain local path (most listed ones)
        return FileURI(equal_schemes.get("file", "file"), None, location, location)
    head, sep, rest = location.partition(":")
    if sep and len(head) > 1 and head.replace("+", "").replace("-", "").replace(".", "").isalnum():
        scheme: str | None = head.lower()
    else:
        scheme, rest = "file", location
    authority: str | None = None
    if rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        rest = slash + tail
    authority = authority or None
    if scheme is not None:
        scheme = equal_schemes.get(scheme, scheme)
    if authority is not None and equal_authorities:
        authority = equal_authorities.get(authority, authority)
    return FileURI(scheme, authority, _collapse(rest) or "/", location)


def _component_matches(valid: str | None, actual: str | None) -> bool:
    return not valid or (actual is not None and valid.lower() == actual.lower())


def _matches(valid: FileURI, actual: FileURI) -> bool:
    return _component_matches(valid.scheme, actual.scheme) and _component_matches(
        valid.authority, actual.authority
    )


# -- options ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class OrphanOptions:
    """The checked arguments of an orphan removal."""

    older_than_ms: int
    location: str
    equal_schemes: dict[str, str]
    equal_authorities: dict[str, str]
    prefix_mismatch_mode: PrefixMismatchMode
    partition_names: frozenset[str]


def _inside(location: str, root: str) -> bool:
    loc, top = to_file_uri(location), to_file_uri(root)
    if not _matches(top, loc) and not _matches(loc, top):
        return False
    parent = top.path.rstrip("/")
    return loc.path.rstrip("/") == parent or loc.path.startswith(parent + "/")


def orphan_options(
    table: TableLike,
    older_than: int | dt.datetime | dt.date | None = None,
    location: str | None = None,
    equal_schemes: Mapping[str, str] | None = None,
    equal_authorities: Mapping[str, str] | None = None,
    prefix_mismatch_mode: str = "error",
    allow_recent: bool = False,
    now_ms: int | None = None,
) -> OrphanOptions:
    """Check the arguments of an orphan removal (see the module docstring)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if not P.GC_ENABLED.get(table.metadata.properties):
        raise ValidationError(
            f"Cannot delete orphan files of table {table.name}: GC is disabled "
            f"({P.GC_ENABLED.name}=false; deleting files may corrupt other tables)"
        )
    cutoff = now - DEFAULT_OLDER_THAN_MS if older_than is None else to_epoch_ms(older_than)
    shown = dt.datetime.fromtimestamp(cutoff / 1000, dt.UTC).isoformat()
    if cutoff > now:
        raise ValidationError(
            f"Cannot remove orphan files of table {table.name}: older_than {shown} is in the future"
        )
    if now - cutoff < MIN_OLDER_THAN_MS and not allow_recent:
        raise ValidationError(
            f"Cannot remove orphan files of table {table.name} with older_than {shown}, less "
            "than 24 hours ago: files of writes in progress would look orphaned (pass "
            "allow_recent=True if no write can be running)"
        )
    mode = str(prefix_mismatch_mode).lower()
    if mode not in _MODES:
        raise ValidationError(
            f"Invalid prefix_mismatch_mode {prefix_mismatch_mode!r}: use one of {', '.join(_MODES)}"
        )
    root = table.metadata.location
    where = root if location is None else location
    if not _inside(where, root):
        raise ValidationError(
            f"Cannot remove orphan files in {where}: it is outside the location of table "
            f"{table.name} ({root})"
        )
    names = frozenset(
        f"{f.name}="
        for spec in table.metadata.partition_specs
        for f in spec.fields
        if f.name.startswith(("_", "."))
    )
    return OrphanOptions(
        cutoff,
        where.rstrip("/"),
        {**EQUAL_SCHEMES_DEFAULT, **_flatten(equal_schemes)},
        _flatten(equal_authorities),
        mode,  # type: ignore[arg-type]
        names,
    )


# -- listing ---------------------------------------------------------------------------------


def hidden_path_filter(partition_names: Iterable[str]) -> Callable[[str], bool]:
    """A predicate on a path relative to the listed folder: True when hidden (a component
    starting with ``_`` or ``.`` that is not a partition folder of such a field). The
    temporary file of a local write that never finished (its writer was killed) is not
    hidden: it is an orphan like any other file nothing references."""
    names = tuple(partition_names)

    def hidden(relative: str) -> bool:
        parts = relative.split("/")
        for index, part in enumerate(parts):
            if part.startswith(("_", ".")) and not (names and part.startswith(names)):
                if index == len(parts) - 1 and is_partial_write(part):
                    continue
                return True
        return False

    return hidden


def list_candidates(
    io: FileIO, location: str, older_than_ms: int, partition_names: Iterable[str] = ()
) -> list[FileEntry]:
    """Files under ``location`` last modified before ``older_than_ms``, hidden ones left out."""
    hidden = hidden_path_filter(partition_names)
    prefix = location.rstrip("/") + "/"
    root = to_file_uri(prefix).path
    out = []
    for entry in io.list_prefix(location):
        path = to_file_uri(entry.location).path
        relative = path[len(root) :] if path.startswith(root) else path
        if hidden(relative):
            continue
        if entry.last_modified_ms is None or entry.last_modified_ms < older_than_ms:
            out.append(entry)
    return out


# -- comparing -------------------------------------------------------------------------------


class ValidFiles(Mapping[str, list[FileURI]]):
    """Referenced locations by path, as :class:`FileURI` lists made when looked up: a
    million referenced files hold one dictionary entry each (the location itself, which is
    its own path when it has no scheme), not a million parsed URIs."""

    def __init__(self, options: OrphanOptions) -> None:
        self._schemes = options.equal_schemes
        self._authorities = options.equal_authorities
        self._by_path: dict[str, str | list[str]] = {}

    def add(self, location: str) -> None:
        head = location[:1]
        if head == "/" and "//" not in location:
            path = location  # a plain local path: its own path, nothing to parse
        else:
            path = to_file_uri(location, self._schemes, self._authorities).path
        held = self._by_path.get(path)
        if held is None:
            self._by_path[path] = location
        elif isinstance(held, list):
            held.append(location)
        elif held != location:
            self._by_path[path] = [held, location]

    def holds(self, path: str, location: str) -> bool:
        """Is ``location`` (with ``path``) referenced as written (so its scheme and
        authority match)?"""
        held = self._by_path.get(path)
        return held == location or (isinstance(held, list) and location in held)

    def __getitem__(self, path: str) -> list[FileURI]:
        held = self._by_path[path]
        locations = held if isinstance(held, list) else [held]
        return [to_file_uri(x, self._schemes, self._authorities) for x in locations]

    def __contains__(self, path: object) -> bool:
        return path in self._by_path

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_path)

    def __len__(self) -> int:
        return len(self._by_path)


def valid_file_uris(
    table: TableLike, options: OrphanOptions, metadata: TableMetadata | None = None
) -> ValidFiles:
    """Every file the table references, by path (see the module docstring)."""
    md = table.metadata if metadata is None else metadata
    found = referenced_files(table.io, md, metadata_location=table.metadata_location, sizes=False)
    out = ValidFiles(options)
    for kind in (
        found.content_files,
        found.manifests,
        found.manifest_lists,
        found.statistics,
        found.metadata_files,
    ):
        for location in kind:
            out.add(location)
    return out


def find_orphans(
    actual: Iterable[str],
    valid: Mapping[str, Sequence[FileURI]],
    options: OrphanOptions,
) -> list[str]:
    """The listed locations no valid file matches (see prefix mismatches in the module
    docstring); raises :class:`PrefixMismatchError` in ``error`` mode."""
    orphans: list[str] = []
    conflicts: set[tuple[str, str]] = set()
    fast = isinstance(valid, ValidFiles)
    for location in actual:
        uri = to_file_uri(location, options.equal_schemes, options.equal_authorities)
        if fast and valid.holds(uri.path, location):  # type: ignore[attr-defined]
            continue
        candidates = valid.get(uri.path)
        if not candidates:
            orphans.append(location)
            continue
        if any(_matches(v, uri) for v in candidates):
            continue
        if options.prefix_mismatch_mode == "delete":
            orphans.append(location)
            continue
        for v in candidates:
            if not _component_matches(v.scheme, uri.scheme):
                conflicts.add((str(v.scheme), str(uri.scheme)))
            if not _component_matches(v.authority, uri.authority):
                conflicts.add((str(v.authority), str(uri.authority)))
    if conflicts and options.prefix_mismatch_mode == "error":
        raise PrefixMismatchError(
            "Unable to determine whether certain files are orphan: metadata references files "
            "that match listed files except for authority/scheme. Say which are equal with "
            "equal_schemes and equal_authorities, or set prefix_mismatch_mode to 'ignore' "
            "(keep them) or 'delete' (only if they are certainly different). Conflicting "
            "(referenced, listed) authorities/schemes: "
            + ", ".join(f"({a}, {b})" for a, b in sorted(conflicts))
        )
    return sorted(orphans)


# -- the operation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RemoveOrphanFilesResult(Sequence[str]):
    """The orphans found; as a sequence, the paths deleted (on a dry run, the orphans)."""

    orphan_file_locations: tuple[str, ...]
    deleted: tuple[str, ...] = ()
    failed: dict[str, str] = field(default_factory=dict)
    orphan_bytes: int = 0
    dry_run: bool = False

    @property
    def _paths(self) -> tuple[str, ...]:
        return self.orphan_file_locations if self.dry_run else self.deleted

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._paths[index]

    def __len__(self) -> int:
        return len(self._paths)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def to_dict(self) -> dict[str, object]:
        return {
            "orphan_file_locations": list(self.orphan_file_locations),
            "deleted": list(self.deleted),
            "failed": dict(self.failed),
            "orphan_bytes": self.orphan_bytes,
            "dry_run": self.dry_run,
        }


def delete_orphans(
    table: TableLike,
    orphans: Sequence[str],
    sizes: Mapping[str, int],
    dry_run: bool,
    progress: Progress | None = None,
) -> RemoveOrphanFilesResult:
    """Delete ``orphans`` (unless ``dry_run``) and report."""
    total_bytes = sum(sizes.get(p, 0) for p in orphans)
    if dry_run or not orphans:
        return RemoveOrphanFilesResult(tuple(orphans), (), {}, total_bytes, dry_run)
    counter = itertools.count(1)
    lock = threading.Lock()

    def tick(path: str, ok: bool) -> None:
        if progress is not None:
            with lock:
                progress(next(counter), len(orphans))

    outcome = delete_files(table.io, orphans, kind="orphan", on_done=tick)
    deleted = set(outcome.deleted)
    return RemoveOrphanFilesResult(
        tuple(orphans),
        tuple(p for p in orphans if p in deleted),
        outcome.failed,
        total_bytes,
        False,
    )


def remove_orphan_files(
    table: TableLike,
    older_than: int | dt.datetime | dt.date | None = None,
    location: str | None = None,
    dry_run: bool = False,
    equal_schemes: Mapping[str, str] | None = None,
    equal_authorities: Mapping[str, str] | None = None,
    prefix_mismatch_mode: str = "error",
    *,
    allow_recent: bool = False,
    progress: Progress | None = None,
) -> RemoveOrphanFilesResult:
    """Delete the files under the table's location (or ``location`` inside it) that no
    metadata file, snapshot, manifest or ref references and that are older than
    ``older_than`` (default: 3 days ago; less than 24 hours ago is refused unless
    ``allow_recent``, as an in-flight write's files look orphaned). ``equal_schemes`` and
    ``equal_authorities`` extend Java's equivalences (``s3a``/``s3n`` = ``s3``);
    ``prefix_mismatch_mode`` is ``error``, ``ignore`` or ``delete``. ``dry_run`` only lists
    them. On Spark, ``icepark.spark.remove_orphan_files`` lists in parallel. See the module
    docstring for how it flows."""
    options = orphan_options(
        table,
        older_than,
        location,
        equal_schemes,
        equal_authorities,
        prefix_mismatch_mode,
        allow_recent,
    )
    listed = list_candidates(
        table.io, options.location, options.older_than_ms, options.partition_names
    )
    # the metadata as it is after the listing (a commit in between may reference a listed
    # file), not as it was when the table was loaded
    table.refresh()
    valid = valid_file_uris(table, options)
    orphans = find_orphans((e.location for e in listed), valid, options)
    del valid
    doomed = set(orphans)
    sizes = {e.location: e.size for e in listed if e.location in doomed}
    return delete_orphans(table, orphans, sizes, dry_run, progress)
